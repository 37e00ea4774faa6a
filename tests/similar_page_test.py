#!/usr/bin/env python3
"""The similarity check's page (lab04/grader/similar_page.py, GRADES/similar.html) for a class of thirty
honest students and five disguised copies of one lab (similarity_test.py's first class), as
an instructor sees it: each pair named has its heading and its shared lines side by side, both
labs' line numbers and texts as the labs have them; a line of a student's code that is markup
(`<script>`, `<img onerror=...>`) is shown as text, never run; and in headless Chromium (Debian's
chromium), the page shows the pairs and the lines, with the lines no one else wrote
highlighted (the screenshot has the highlight's colour). Without Chromium, the browser's checks
are left out, with one line that says so; the others run.

usage: similar_page_test.py WORK_DIR
"""
import html.parser
import os
import shutil
import subprocess
import sys

import checklist
import project
import similarity_test

from lab04.grader import similar_page, similarity  # noqa: E402

MARKUP = ('    const std::string note = std::string("<script>document.title = \'run\'</script><img src=x onerror=alert(1)>") '
          '+ std::to_string(T);')


class Page(html.parser.HTMLParser):
    """What the page holds: its headings of pairs, its table rows (each a list of cell texts) and
    the tags that would run something."""

    def __init__(self):
        super().__init__()
        self.pairs, self.rows, self.active, self._cell, self._in = [], [], [], None, None

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "img", "iframe", "object") or any(a.startswith("on") for a, _ in attrs):
            self.active.append(tag)
        if tag == "h2":
            self._in, self._cell = "h2", ""
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._in, self._cell = "td", ""

    def handle_endtag(self, tag):
        if tag == "h2" and self._in == "h2":
            self.pairs.append(self._cell)
            self._in = None
        elif tag in ("td", "th") and self._in == "td":
            self.rows[-1].append(self._cell)
            self._in = None

    def handle_data(self, data):
        if self._in:
            self._cell += data


def with_markup(labs, names):
    """The labs, the ones named given a line of markup after their STEP 6 (the copy's the same)."""
    out = dict(labs)
    for name in names:
        out[name] = out[name].replace("    outs[h] = ", MARKUP + "\n    outs[h] = ", 1)
    return out


def browser():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def main(argv):
    if len(argv) != 1:
        print("similar_page_test: usage: similar_page_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = os.path.abspath(argv[0])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    lesson, keys = similarity_test.template()
    labs, original, copies = similarity_test.with_copies(30, 1, lesson, keys)
    labs = with_markup(labs, [original] + sorted(copies))
    found = similarity_test.weighed(labs, keys)
    text = similar_page.page(found)
    path = os.path.join(work, "similar.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    page = Page()
    page.feed(text)
    checks = [("the page has a heading for each pair named (%d), with both names" % len(found["pairs"]),
               len(page.pairs) == len(found["pairs"]) > 0 and all(
                   p["a"] in h and p["b"] in h for p, h in zip(found["pairs"], page.pairs)), page.pairs[:5])]
    lab_lines = {name: similarity.without_comments(t).split("\n") for name, t in labs.items()}
    rows = [r for r in page.rows if len(r) == 5 and r[0].isdigit()]
    wanted = sum(len(p["shared"]) for p in found["pairs"])
    right = all(lab_lines[p["a"]][int(r[0]) - 1].strip() == r[1] and lab_lines[p["b"]][int(r[2]) - 1].strip() == r[3]
                for p, start in zip(found["pairs"], [sum(len(q["shared"]) for q in found["pairs"][:i])
                                                     for i in range(len(found["pairs"]))])
                for r in rows[start:start + len(p["shared"])])
    checks.append(("each shared line is shown side by side: both line numbers, and both texts as the labs have them, "
                   "comments aside (%d lines)" % wanted, len(rows) == wanted and right, rows[:3]))
    shown = [r for r in rows if "<script>" in r[1]]
    checks.append(("a student's line of markup is shown as text, and the page has no tag that runs anything",
                   not page.active and shown and "&lt;script&gt;" in text, (page.active, shown[:1])))

    chromium = browser()
    if not chromium:
        print("(the page in a browser is not checked here: no chromium; apt-get install chromium, docs/maintaining.md)")
        return checklist.report(checks)
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--hide-scrollbars",
             "--user-data-dir=" + os.path.join(work, "profile")]
    dom = browse(flags + ["--dump-dom", "file://" + path])
    first = found["pairs"][0]
    checks.append(("in headless Chromium the page shows the first pair and its first shared line in both labs",
                   first["a"] in dom.stdout and first["b"] in dom.stdout
                   and html_text(first["shared"][0]["a_text"]) in dom.stdout
                   and html_text(first["shared"][0]["b_text"]) in dom.stdout and "<script>document" not in dom.stdout,
                   dom.stderr[-600:] or dom.stdout[:600]))
    shot = os.path.join(work, "similar.png")
    done = browse(flags + ["--screenshot=" + shot, "--window-size=1200,1600", "file://" + path])
    colours = highlighted(shot) if os.path.exists(shot) else -1
    checks.append(("its screenshot shows the lines no lab outside the pair (or its group) wrote highlighted (%s pixels of the highlight's colour)"
                   % colours, colours > 1000, done.stderr[-600:]))
    return checklist.report(checks)


def browse(command):
    """Chromium run to its end, or stopped after 120 s (a page that opened a dialog never ends)."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(command, None, e.stdout or "", "Chromium did not end in 120 s")


def html_text(text):
    """text as Chromium's --dump-dom writes it in an element: <, > and & escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def highlighted(png):
    """How many pixels of the PNG are the highlight's colour (matplotlib reads the PNG)."""
    import matplotlib.image
    pixels = matplotlib.image.imread(png)
    red, green, blue = (c / 255 for c in similar_page.RARE_COLOUR)
    near = lambda channel, value: abs(pixels[:, :, channel] - value) < 0.02
    return int((near(0, red) & near(1, green) & near(2, blue)).sum())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
