"""PrairieLearn's rules for an external grader's results, as its own code applies them (facts
read from PrairieLearn/PrairieLearn: apps/grader-host/src/index.ts reads the file and
apps/prairielearn/src/lib/externalGrader.ts and externalGraderCommon.ts judge it; the rules are
restated here, no code of theirs is copied):

- the job counts only when the entrypoint exited 0 within the timeout; then
  /grade/results/results.json must be at most 1 MiB, decoded as UTF-8 (bad bytes replaced) and
  parsed by JavaScript's JSON.parse: strict JSON, so no NaN or Infinity, and no byte order mark;
- "gradable" defaults to true; a gradable result needs "score", a finite number from 0 to 1
  (outside it the job is an error: PrairieLearn never clamps it);
- "gradable": false needs no score; "format_errors" is then a string or a list of strings
  (PrairieLearn takes none at all; this project's rule asks for the reason);
- pl-external-grader-results shows "tests" of {name, description, points, max_points, message,
  output}, and shows points only when every test has both points and max_points.

problems(data_bytes) returns what PrairieLearn would refuse in a results.json, as lines
(none: it takes it), and the parsed results.
"""
import json
import math

LIMIT = 1024 * 1024


def _strict(text):
    def refuse(name):
        raise ValueError("%s is not JSON" % name)
    return json.loads(text, parse_constant=refuse)


def problems(data):
    found = []
    if len(data) > LIMIT:
        return ["larger than 1 MiB (%d bytes)" % len(data)], None
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        return ["starts with a byte order mark, which JSON.parse refuses"], None
    try:
        results = _strict(text)
    except ValueError as e:
        return ["not strict JSON: %s" % e], None
    if not isinstance(results, dict):
        return ["not a JSON object"], results
    gradable = results.get("gradable", True)
    if not isinstance(gradable, bool):
        found.append("gradable is not true or false: %r" % (gradable,))
    if gradable is not False:
        score = results.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            found.append("a gradable result's score is not a finite number: %r" % (score,))
        elif not 0 <= score <= 1:
            found.append("score %r is out of [0, 1]" % score)
    else:
        errors = results.get("format_errors")
        if not (isinstance(errors, str) or isinstance(errors, list) and errors and all(isinstance(e, str) for e in errors)):
            found.append("a result that is not gradable has no format_errors to show: %r" % (errors,))
    tests = results.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(t, dict) for t in tests):
        found.append("tests is not a list of objects")
    else:
        for t in tests:
            for key in ("name", "description", "message", "output"):
                if key in t and not isinstance(t[key], str):
                    found.append("a test's %s is not text: %r" % (key, t[key]))
            for key in ("points", "max_points"):
                if key in t and (isinstance(t[key], bool) or not isinstance(t[key], (int, float))):
                    found.append("a test's %s is not a number: %r" % (key, t[key]))
        if tests and not all("points" in t and "max_points" in t for t in tests):
            found.append("some test lacks points or max_points: the results panel shows no points")
    for key in ("message", "output"):
        if key in results and not isinstance(results[key], str):
            found.append("%s is not text" % key)
    return found, results
