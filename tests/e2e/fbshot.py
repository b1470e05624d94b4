#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Screenshots of an Xvfb, each time its screen changes.

fbshot.py FILE DIR STOP PERIOD: FILE is the screen an Xvfb keeps with -fbdir (an XWD image it
draws in place); every PERIOD seconds, while the file STOP does not exist, the screen is read
and, when it changed, written to DIR/<ms>.xwd (<ms>: wall-clock milliseconds when it was read).
The greeter's last line shows for 0.1 to 0.3 s: a shell loop forking cp and md5sum, or
ImageMagick's import, ran too slowly on a loaded machine to catch it."""
import mmap
import os
import sys
import time


def main():
    fb, outdir, stop, period = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    with open(fb, "rb") as f:
        screen = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        last = b""
        while not os.path.exists(stop):
            now = screen[:]
            if now != last:
                name = os.path.join(outdir, "%d.xwd" % (time.time_ns() // 1000000))
                with open(name + ".part", "wb") as out:
                    out.write(now)
                os.rename(name + ".part", name)
                last = now
            time.sleep(period)


if __name__ == "__main__":
    main()
