#!/usr/bin/env python3
"""bench/systems.py: docs/performance.md's section "The watch on each system", one part per
system (Debian 12, 13, testing), each written by a run of bench/run on that system: the watch's
rows differ most from one system to the next (its clang; whether the watch compiles a save
itself), and one machine runs one system.

  bench/systems.py DOC SYSTEM PART [BODY]

PART (a file: bench/run's system.md) becomes SYSTEM's part, in place of the one DOC had; the
other systems' parts are kept as DOC has them. Without BODY, the rest of DOC is kept too (the
section is added at its end if it had none); with BODY (a file: a whole run's document), the
section takes the place of BODY's line "<!-- the watch on each system -->". Writes DOC.
"""
import os
import sys

TITLE = "## The watch on each system"
PLACE = "<!-- the watch on each system -->"
PART = "<!-- system: "
END = "<!-- end of the systems -->"
ABOUT = """`bench/run` writes here the watch's rows of the system it runs on, and, where real Docker
can run, those of the dev container's image (`bench/devcontainer.py`); `bench/run --watch`
measures the system's alone (CI runs it on each fresh Debian). The other parts stay as their
last run left them. Each part is one run on one machine: compare within a part, not across."""


def parts_of(doc):
    """(the document with its section replaced by PLACE, {system: its part's lines})"""
    lines = doc.splitlines()
    if TITLE not in lines:
        return doc, {}
    start = lines.index(TITLE)
    end = lines.index(END, start) if END in lines[start:] else len(lines) - 1
    parts, system = {}, None
    for line in lines[start:end]:
        if line.startswith(PART):
            system = line[len(PART):-len(" -->")]
            parts[system] = []
        elif system is not None:
            parts[system].append(line)
    return "\n".join(lines[:start] + [PLACE] + lines[end + 1:]) + "\n", parts


def section(parts):
    out = [TITLE, "", ABOUT, ""]
    for system in sorted(parts):
        out += [PART + system + " -->"] + [l for l in parts[system]]
        while out[-1] == "":
            out.pop()
        out.append("")
    return "\n".join(out + [END])


def main(argv):
    if len(argv) not in (3, 4) or not all(os.path.isfile(f) for f in argv[2:]):
        print("bench/systems.py: expected DOC SYSTEM PART [BODY], PART and BODY existing files, got: %s"
              % " ".join(argv), file=sys.stderr)
        return 2
    doc_path, system, part = argv[:3]
    doc = open(doc_path).read() if os.path.isfile(doc_path) else ""
    rest, parts = parts_of(doc)
    parts[system] = open(part).read().splitlines()
    if len(argv) == 4:
        rest = open(argv[3]).read()
    if PLACE not in rest.splitlines():
        rest = rest.rstrip("\n") + "\n\n" + PLACE + "\n"
    done = rest.replace(PLACE, section(parts), 1)
    with open(doc_path + ".new", "w") as f:
        f.write(done)
    os.replace(doc_path + ".new", doc_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
