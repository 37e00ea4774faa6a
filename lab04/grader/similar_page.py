"""similar_page.py: the pairs the similarity check named, side by side, as a page an instructor
opens in a browser (GRADES/similar.html, written beside summary.md).

For each pair: the two names, how many lines they share, how many of those no one else in the
class wrote, and the chance (similarity.weighed); then a table of the shared lines, each lab's
line number and text side by side, with how many other labs wrote it; the lines no one else
wrote (or only the labs that share all of these lines: a group) are highlighted. Everything a student wrote is escaped: a lab's text is data, never
markup. No script, no link, nothing fetched: the page is one file.

  page(found, title)   the page's HTML, from similarity.look_alike's result
"""
import html

STYLE = """body { font-family: sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; vertical-align: top; text-align: left; }
td.code { font-family: monospace; white-space: pre-wrap; }
td.number { text-align: right; width: 3em; }
tr.rare td { background: #ffd966; }
p.note { color: #555; }"""
RARE_COLOUR = (0xff, 0xd9, 0x66)  # tr.rare's background: a line no lab but the pair's group wrote


def page(found, title="Code that looks alike"):
    """The page for look_alike's result (found), or one that says why there is nothing to show."""
    e = html.escape
    body = ["<h1>%s</h1>" % e(title)]
    if found is None:
        body.append("<p>Not checked (--no-similarity).</p>")
    elif not found.get("checked"):
        body.append("<p>Not checked: %s.</p>" % e(found.get("why", "")))
    elif not found.get("pairs"):
        body.append("<p>No two labs share what students who worked alone would not (%d labs compared).</p>"
                    % found.get("compared", 0))
    else:
        body.append('<p class="note">%d labs compared. Each pair named shares lines that students who worked alone '
                    'would share with a chance below the one given; highlighted, the lines no lab wrote outside the '
                    'pair, or outside its group when three labs or more are named together. A hint to look at the two labs side by side, never a verdict: no grade was changed.</p>'
                    % found.get("compared", 0))
        for p in found["pairs"]:
            body.append('<h2 class="pair">%s and %s%s</h2>' % (
                e(p["a"]), e(p["b"]), " (an earlier term's)" if p.get("earlier") else ""))
            by = "no one else in the class" if p["group"] == 2 else "no one outside its group of %d" % p["group"]
            body.append("<p>Share %d lines, %d of them written by %s (%d%% of %s's own lines, %d%% of %s's); by "
                        "chance, in fewer than 1 class in 10<sup>%.1f</sup>.</p>" % (
                            len(p["shared"]), p["rare"], by, p["a_share"], e(p["a"]), p["b_share"], e(p["b"]),
                            p["evidence"]))
            body.append("<table><tr><th>line</th><th>%s</th><th>line</th><th>%s</th><th>other labs that wrote it</th>"
                        "</tr>" % (e(p["a"]), e(p["b"])))
            for s in p["shared"]:
                body.append('<tr%s><td class="number">%d</td><td class="code">%s</td><td class="number">%d</td>'
                            '<td class="code">%s</td><td class="number">%d</td></tr>' % (
                                ' class="rare"' if s["theirs_alone"] else "", s["a_line"], e(s["a_text"]), s["b_line"],
                                e(s["b_text"]), s["others"]))
            body.append("</table>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title><style>\n%s\n"
            "</style></head><body>\n%s\n</body></html>\n" % (e(title), STYLE, "\n".join(body)))
