# SPDX-License-Identifier: BSD-3-Clause
"""The fault campaign's hang-up server: the far end of each login's client connection.

    hupd.py PORTFILE CONTROL ADDRESS...

Listens on one port (written to PORTFILE) at each ADDRESS (the rhosts the logins come from).
A login connects from its shell before pamtester starts, sends its id and a newline, and
pamtester inherits the socket, whose peer is the login's PAM_RHOST: the module watches it for
a hang-up as it watches sshd's client connection. A line "ID" on the fifo CONTROL closes that
login's connection, as a client that hangs up does. Runs until killed.
"""
import os
import selectors
import socket
import sys


def main():
    portfile, control = sys.argv[1], sys.argv[2]
    addrs = sys.argv[3:]
    sel = selectors.DefaultSelector()
    port = 0
    for a in addrs:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((a, port))
        port = s.getsockname()[1]
        s.listen(256)
        sel.register(s, selectors.EVENT_READ, ("listen", None))
    # O_RDWR: the fifo never reads as closed when a writer goes.
    ctl = os.open(control, os.O_RDWR | os.O_NONBLOCK)
    sel.register(ctl, selectors.EVENT_READ, ("control", None))
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(portfile + ".tmp", portfile)
    conns = {}  # id -> socket
    pending = {}  # socket -> bytes read before its newline
    ctl_buf = b""
    while True:
        for key, _ in sel.select():
            kind, _ = key.data
            if kind == "listen":
                c, _ = key.fileobj.accept()
                pending[c] = b""
                sel.register(c, selectors.EVENT_READ, ("conn", None))
            elif kind == "conn":
                c = key.fileobj
                data = c.recv(256)
                if not data:  # the login ended
                    sel.unregister(c)
                    c.close()
                    pending.pop(c, None)
                    for i in [i for i, s in conns.items() if s is c]:
                        del conns[i]
                    continue
                if c in pending:
                    pending[c] += data
                    if b"\n" in pending[c]:
                        conns[pending.pop(c).split(b"\n")[0].decode()] = c
            else:
                ctl_buf += os.read(ctl, 4096)
                while b"\n" in ctl_buf:
                    line, ctl_buf = ctl_buf.split(b"\n", 1)
                    c = conns.pop(line.decode(), None)
                    if c is None:
                        print("hupd: no connection for %r" % line, flush=True)
                        continue
                    sel.unregister(c)
                    c.close()
                    print("hupd: hung up %s" % line.decode(), flush=True)


if __name__ == "__main__":
    main()
