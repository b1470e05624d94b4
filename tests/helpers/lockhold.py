#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Holds a file's flock as the suites need it, and prints "holding" once it does.

lockhold.py stop FILE: takes FILE's lock (exclusive) and stops itself there (SIGSTOP), as a
user's su stopped while it held the lock: the holder /proc/locks names is this process.

lockhold.py ring FILE SECONDS: two processes hold FILE's lock (shared) in turn for SECONDS,
20 ms each, each taking it before the other lets it go, so that it is never free: a burst of
short holders that no LOCK_NB poll can slip between. Exits 0 when the run is over."""
import fcntl
import os
import signal
import sys
import time


def stop(path):
    fd = os.open(path, os.O_RDWR)
    # An orphaned process group's SIGHUP and SIGCONT (its shell gone) must not end the hold.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("holding", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
    signal.pause()


def ring_one(path, end, first, inbox, out):
    """One of the two: 'g' tells the other to take the lock, 'a' that it has, 'q' the end."""
    fd = os.open(path, os.O_RDWR)
    if first:
        fcntl.flock(fd, fcntl.LOCK_SH)
        print("holding", flush=True)
    elif os.read(inbox, 1) != b"g":
        return 0
    else:
        fcntl.flock(fd, fcntl.LOCK_SH)
        os.write(out, b"a")
    while True:
        time.sleep(0.02)
        if time.monotonic() >= end:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.write(out, b"q")
            return 0
        os.write(out, b"g")
        if os.read(inbox, 1) != b"a":
            return 1
        fcntl.flock(fd, fcntl.LOCK_UN)
        if os.read(inbox, 1) != b"g":
            return 0
        fcntl.flock(fd, fcntl.LOCK_SH)
        os.write(out, b"a")


def ring(path, seconds):
    end = time.monotonic() + seconds
    inbox = [os.pipe(), os.pipe()]
    pids = []
    for i in (0, 1):
        pid = os.fork()
        if pid == 0:
            os._exit(ring_one(path, end, i == 0, inbox[i][0], inbox[1 - i][1]))
        pids.append(pid)
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    return 0 if statuses == [0, 0] else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "stop":
        stop(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "ring":
        sys.exit(ring(sys.argv[2], float(sys.argv[3])))
    else:
        sys.exit(__doc__)
