# SPDX-License-Identifier: BSD-3-Clause
# Prints each place that tests/README.md gives for a promise and that its page does not have:
# the first column of a row, in the page of the "## " group it stands in, and the start of an
# entry under "Not checked yet", "- PAGE, PLACE: ...". A place is a section (a man page's .SH
# or .SS, a Markdown heading), then, after ", ", a tag under it (a man page's .TP tag, the bold
# words that open a Markdown paragraph); it ends at its first ": ". Run from the top of the
# tree, with tests/README.md as argument; prints a line too if it finds no place to check.
import re
import sys


def page_file(name):
    """pam_flowslot(8) is man/pam_flowslot.8; a Markdown file is itself."""
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)\(([0-9])\)", name)
    if m:
        return "man/%s.%s" % m.groups()
    return name if name.endswith(".md") else None


def names(tag):
    """The ways a row may name a tag: whole, up to its first comma (`slot.KEY`, a per-host
    schedule), or an option or a metric by its name (refusal= for refusal=error|info)."""
    tag = " ".join(tag.split()).rstrip(".")
    found = {tag, tag.split(", ")[0]}
    m = re.match(r"([^ =\[{(|,]+)([={])", tag)
    if m:
        found.add(m.group(1) + ("=" if m.group(2) == "=" else ""))
    return found


def roff_text(s):
    s = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", s)
    s = s.replace("\\-", "-").replace("\\(lq", '"').replace("\\(rq", '"').replace("\\e", "\\")
    return re.sub(r"\\[:&]", "", s)


def roff_places(text):
    """{section: tags} of a man page; a .SH has the tags of its .SS subsections too."""
    places, sh, ss = {}, None, None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"\.(SH|SS) +(.*)", line)
        if m:
            name = roff_text(m.group(2)).strip().strip('"')
            if m.group(1) == "SH":
                sh, ss = name, None
            else:
                ss = name
            places.setdefault(name, set())
        elif re.match(r"\.TP\b", line) and i + 1 < len(lines):
            tag = lines[i + 1]
            m = re.match(r'\.(BI|BR|IB|IR|RB|RI) +("[^"]*"|[^ ]+)', tag)
            if m:  # a command, or flowslotctl's option, by its name, not its argument
                tag = m.group(2)
            tag = re.sub(r"^\.[BI] +", "", tag)
            for section in (sh, ss):
                if section:
                    places[section] |= names(roff_text(tag).replace('"', ""))
    return places


def md_places(text):
    """{heading: tags} of a Markdown file, code blocks left out; a heading has the tags of
    the headings under it too."""
    places, open_headings, fenced, blank = {}, [], False, True
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = re.match(r"(#{1,6}) +(.*?)[ #]*$", line)
        if m:
            level, name = len(m.group(1)), m.group(2).replace("`", "")
            open_headings = [(l, n) for l, n in open_headings if l < level] + [(level, name)]
            places.setdefault(name, set())
        else:
            m = re.match(r"\*\*(.+?)\*\*", line)
            if m and blank:
                for _, heading in open_headings:
                    places[heading] |= names(m.group(1).replace("`", ""))
        blank = line.strip() == ""
    return places


def unfound(place, places):
    """Why place is not in the page, or None."""
    section, _, tag = place.partition(", ")
    if section not in places:
        return "no section %s" % section
    if tag and tag not in places[section]:
        return "no tag %s under %s" % (tag, section)
    return None


cache = {}


def places_of(page):
    if page not in cache:
        path = page_file(page)
        try:
            text = open(path, encoding="utf-8").read() if path else None
        except OSError:
            text = None
        if text is None:
            cache[page] = None
        else:
            cache[page] = md_places(text) if path.endswith(".md") else roff_places(text)
    return cache[page]


group, checked = None, 0
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if line.startswith("## "):
        group = line[3:].strip()
        continue
    if group == "Not checked yet":
        m = re.match(r"- ([^ ,]+), (.*)", line)
        if not m:
            continue
        page, first = m.group(1), m.group(2)
    else:
        m = re.match(r"\| ([^|]*?) \| (.*) \|$", line)
        if not m or m.group(2) == "checked by":
            continue
        page, first = group, m.group(1)
    checked += 1
    place = first.split(": ", 1)[0]
    places = places_of(page) if page else None
    why = "no page %s" % page if places is None else unfound(place, places)
    if why:
        print('%s "%s" (%s)' % (page, place, why))
if not checked:
    print("no row, no unchecked promise in %s" % sys.argv[1])
