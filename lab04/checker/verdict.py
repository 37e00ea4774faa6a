"""verdict.py: the checker's verdict on a lab, from its runs: the report every front end shows.

run_cases() runs the cases one by one through a function the front end gives (the sandbox's
run for check_lab.py, the class runner for the class grader, the watch's own forks for its
verdict) and judges each (compare.judge); after a run that times out, the rest are not run:
each would wait as long. check_lines() and grade_lines() are the report: each case, then the
diagnosis (diagnosis.py); or each STEP with its points (grading.py).
"""
from lab04.checker import cases, compare, diagnosis, grading
from lab04.checker.mistakes import MISTAKES


def run_cases(run_one, texts, on_result=None):
    """(results, texts not run): run_one(case) returns a running.Ran; on_result, when given,
    sees each result as it comes (a report printed as the cases run)."""
    results = []
    for n, text in enumerate(texts):
        result = compare.judge(cases.parse_case(text), run_one(cases.parse_case(text)))
        results.append(result)
        if on_result:
            on_result(result)
        if result.run.timed_out and n + 1 < len(texts):
            return results, texts[n + 1:]
    return results, []


LATER_NOT_JUDGED = "later steps are not judged: they follow from this one"


def case_lines(result, later=True):
    """One case of the report: OK or NOT OK and the case, then what differs, indented; after
    the first differing STEP, that later steps are not judged (unless later is False: the
    watch's verdict, which says less)."""
    said = list(result.judgement.lines)
    if later and result.judgement.later_not_judged:
        said.insert(1, LATER_NOT_JUDGED)
    return ["%s  %s" % ("OK    " if result.judgement.ok else "NOT OK", result.text)] + ["        " + line for line in said]


def fill_notes(results):
    """The note on a future filled with a finite number (compare.fill_note), if any case did."""
    fills = set().union(*(r.judgement.fills for r in results)) if results else set()
    return [compare.fill_note(fills)] if fills else []


def not_run_line(results, not_run):
    return "NOT RUN %s: the lab ran out of time in case %s, and would again" % (" ".join(not_run), results[-1].text)


def wrong_before_blank(result, blank):
    """Whether a case of a starter's went wrong before its first blank (a STEP the student wrote
    printed other numbers, or the run stopped there)."""
    return not result.judgement.ok and (result.run.ended is not None or (result.judgement.step or blank) < blank)


def first_wrong(results):
    """The first case NOT OK to show: in a starter, the first one wrong before the blank (one
    where the run only stopped at the blank says nothing of what was written); else None."""
    blank = compare.first_blank(results)
    wrong = [r for r in results if not r.judgement.ok and (not blank or wrong_before_blank(r, blank))]
    return next(iter(wrong or [r for r in results if not r.judgement.ok]), None)


def starter_line(results, blank):
    """A starter's state in one line: what the STEPs before its first blank did in the cases,
    then the blank; e.g. "STEPs 1 to 3 right in all 6 cases · STEP 4 not written yet: ..."."""
    wrong = [r for r in results if wrong_before_blank(r, blank)]
    written = "STEP 1" if blank == 2 else "STEPs 1 to %d" % (blank - 1)
    if blank == 1:
        said = []
    elif not wrong:
        said = ["%s right in all %d cases" % (written, len(results))]
    else:
        step = min((r.judgement.step for r in wrong if r.judgement.step), default=None)
        said = ["%s wrong in %d of %d cases" % ("STEP %d" % step if step else written, len(wrong), len(results))]
    return " · ".join(said + ["STEP %d not written yet: the run stops there, and the STEPs after it are not "
                              "judged (write it, save, and the verdict follows)" % blank])


def check_lines(results, not_run, explainer=None, source=None):
    """What follows the cases in a check: (lines, passed, what was diagnosed: the known
    mistakes' ids, one or two, or ()). The note on fills, the diagnosis and the steps wrong in themselves
    when a case is NOT OK, then the count."""
    lines = ([not_run_line(results, not_run)] if not_run else []) + fill_notes(results)
    diagnosed = ()
    blank = compare.first_blank(results)
    written_right = blank and not any(wrong_before_blank(r, blank) for r in results)  # (the last line says so)
    if not all(r.judgement.ok for r in results) and not written_right:
        found = diagnosis.diagnose(results, MISTAKES, explainer, source)
        lines += found.lines
        diagnosed = found.mistakes
        wrong = grading.steps_wrong_in_themselves(results)
        if wrong:
            lines.append("wrong in themselves (judged on the lab's own inputs): %s" % ", ".join("STEP %d" % n for n in wrong))
    passed = sum(1 for r in results if r.judgement.ok)
    lines.append(starter_line(results, blank) if blank else count_line(results, not_run))
    return lines, passed == len(results) and not not_run, diagnosed


def count_line(results, not_run):
    """How many cases passed and failed, naming the fewer of the two when some of each did
    ("1 passed (0,1,1,1), 5 failed")."""
    passed = [r.text for r in results if r.judgement.ok]
    failed = [r.text for r in results if not r.judgement.ok]
    fewer = passed if len(passed) <= len(failed) else failed

    def named(texts):
        return " (%s)" % " ".join(texts) if passed and failed and texts is fewer else ""
    return "%d passed%s, %d failed%s%s" % (len(passed), named(passed), len(failed), named(failed),
                                           ", %d not run" % len(not_run) if not_run else "")


def problem_line(result):
    """For a grade: the case's run did not run to its end, in words (None when it did)."""
    return "case %s: the lab %s" % (result.text, result.run.problem) if result.run.problem else None


def grade_lines(results, not_run, points):
    """A grade's report after the cases' problem_line()s: (score, total, grades, parts,
    lines); parts[n] is STEP n's line."""
    lines = [not_run_line(results, not_run)] if not_run else []
    score, total, grades, parts = grading.grade(results, points)
    lines += [parts[n] for n in cases.STEP_NUMBERS] + ["score: %s/%s" % (cases.fmt(score), cases.fmt(total))]
    named = list(dict.fromkeys(g.case for g in grades.values() if g and g.kind in (grading.WRONG, grading.NOT_REACHED)))
    if named:  # the cases a student can run to see what went wrong
        lines += ["to run a case where a STEP went wrong:"] + [
            "  case %s: %sbuild/lab04_attention %s" % (
                text, "LD_PRELOAD=build/lab04_leaky_softmax.so " if cases.parse_case(text).leak else "",
                " ".join(cases.arguments(cases.parse_case(text))))
            for text in named]
    return score, total, grades, parts, lines
