#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""memscan.py PID NEEDLE: exit 0 if NEEDLE is nowhere in the process's writable memory, 1 if
it is (and say where), 2 if the memory cannot be read. Used by tests/suites/stack.sh to show that a
waiting login holds no copy of the Redis password."""
import re
import sys

pid, needle = sys.argv[1], sys.argv[2].encode()
found = []
try:
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)\s+\S+\s+\S+\s+\S+\s*(.*)", line)
            if not m or m.group(3)[1] != "w":
                continue
            start, end = int(m.group(1), 16), int(m.group(2), 16)
            # In pieces, overlapping by the needle's length, so that none is missed at a seam.
            step = 1 << 20
            for at in range(start, end, step):
                try:
                    mem.seek(at)
                    chunk = mem.read(min(step + len(needle), end - at))
                except (OSError, ValueError, OverflowError):
                    break
                if needle in chunk:
                    found.append(m.group(4) or "[anon]")
                    break
except OSError as e:
    print(f"memscan: {e}", file=sys.stderr)
    sys.exit(2)
if found:
    print("memscan: found in " + ", ".join(found), file=sys.stderr)
    sys.exit(1)
sys.exit(0)
