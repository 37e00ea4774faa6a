"""class_picture.py: the class at a glance, as a picture (GRADES/class.png) beside summary.md:
on the left, how the scores spread (students per score); on the right, for each STEP, how many
students got it right, got it wrong, or never reached it (their lab stopped before it, left it
blank or did not compile). The numbers are given to it (gradebook.py counts them once, for the
picture and for the text that says the same to a screen reader); it draws and writes, nothing
else.

Drawn with Debian's python3-matplotlib, on its Agg canvas (no display), with the same bytes for
the same numbers: the class graded on one machine and merged from shards gives the same file.
Where matplotlib is missing, draw() says so and writes nothing.
"""
import importlib.util
import os
import tempfile

from lab04.checker import files

NAME = "class.png"
COLOURS = {"right": "#1b7837", "wrong": "#c51b7d", "not reached": "#bdbdbd"}  # apart for red-green blindness
HATCHES = {"right": "", "wrong": "//", "not reached": ".."}  # and apart without colour


def available():
    """None when pictures can be drawn here, else why not (one line)."""
    if importlib.util.find_spec("matplotlib") is None:
        return "no picture of the class: Debian's python3-matplotlib is not installed"
    return None


def draw(folder, scores, total, steps):
    """Writes folder/class.png. scores: {score: students}; total: the lab's points; steps:
    [(label, right, wrong, not reached)], one per STEP. Returns the file's name, or None with
    available()'s reason when it cannot draw."""
    if available():
        return None
    home = os.environ.get("HOME", "")
    if "MPLCONFIGDIR" not in os.environ and not (home and os.access(home, os.W_OK)):
        os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="lab04-matplotlib.")  # its font cache, somewhere
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams.update({"svg.hashsalt": "lab04", "font.size": 10, "hatch.linewidth": 0.6})
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1.25]})
    students = sum(scores.values())
    # The spread: one bar per score that someone has, from 0 to the lab's points.
    xs = sorted(scores)
    left.bar(xs, [scores[x] for x in xs], width=max(total, 1) / 40 * 1.6, color="#4575b4")
    left.set_xlim(-0.05 * max(total, 1) - 0.3, total * 1.05 + 0.3)
    left.set_xlabel("score (of %s)" % _fmt(total))
    left.set_ylabel("students")
    left.set_title("How the %d scores spread" % students)
    left.yaxis.get_major_locator().set_params(integer=True)
    for x in xs:
        left.annotate(str(scores[x]), (x, scores[x]), ha="center", va="bottom", fontsize=8)
    # Each STEP: right, wrong, not reached, stacked, the first STEP on top.
    labels = [s[0] for s in steps]
    ys = list(range(len(steps)))[::-1]
    start = [0] * len(steps)
    for i, kind in enumerate(("right", "wrong", "not reached")):
        counts = [s[1 + i] for s in steps]
        right.barh(ys, counts, left=start, color=COLOURS[kind], hatch=HATCHES[kind], edgecolor="white",
                   label=kind)
        for y, x0, n in zip(ys, start, counts):
            if n and n >= max(sum(s[1:]) for s in steps) / 25:
                right.text(x0 + n / 2, y, str(n), ha="center", va="center", fontsize=8,
                           color="white" if kind != "not reached" else "black")
        start = [a + b for a, b in zip(start, counts)]
    right.set_yticks(ys)
    right.set_yticklabels(labels)
    right.set_xlabel("students whose lab was graded")
    right.xaxis.get_major_locator().set_params(integer=True)
    right.set_title("Each STEP: right, wrong or not reached")
    right.legend(loc="lower center", bbox_to_anchor=(0.5, -0.38), ncol=3, frameon=False)
    figure.tight_layout()
    with files.written(os.path.join(folder, NAME), "wb") as f:
        figure.savefig(f, format="png", dpi=100, metadata={"Software": None})
    plt.close(figure)
    return NAME


def _fmt(x):
    return ("%.2f" % x).rstrip("0").rstrip(".")
