# SPDX-License-Identifier: BSD-3-Clause
# Prints the paragraphs (blank-line separated, as a page renders or Markdown is written) of
# standard input whose parentheses do not balance, each cut to 100 characters.
import re
import sys

for para in re.split(r"\n\s*\n", sys.stdin.read()):
    flat = " ".join(para.split())
    depth = 0
    for ch in flat:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            break
    if depth != 0:
        print(flat[:100])
