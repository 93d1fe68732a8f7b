#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A target for the PROXY protocol tests (tests/system/191-proxy-protocol.sh,
tests/rxe/057-rdma-check-proxy.sh): listens on 127.0.0.1:PORT and answers
each connection, once its client has sent FIN, with one line: "proxy SRC
DST" for a version 2 PROXY header (PROXY, TCP over IPv4), "bad header ..."
for another one, "plain" for none; then the first 5 bytes that came after
the header.

    proxy_target.py PORT
"""
import socket, struct, sys
SIG = b"\r\n\r\n\0\r\nQUIT\n"
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
def readn(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError("cut after %r" % b)
        b += d
    return b
while True:
    c, _ = s.accept()
    try:
        head = readn(c, 16)
        if head[:12] == SIG:
            ver_cmd, fam, ln = struct.unpack(">BBH", head[12:])
            body = readn(c, ln)
            if ver_cmd != 0x21 or fam != 0x11 or ln != 12:
                out = "bad header %02x %02x %d" % (ver_cmd, fam, ln)
            else:
                src, dst = socket.inet_ntoa(body[:4]), socket.inet_ntoa(body[4:8])
                sp, dp = struct.unpack(">HH", body[8:12])
                out = "proxy %s:%d %s:%d" % (src, sp, dst, dp)
            payload = b""
        else:
            out, payload = "plain", head
        while True:  # the rest, to the client's FIN
            d = c.recv(4096)
            if not d:
                break
            payload += d
        payload = payload[:5]
        c.sendall(("%s %s\n" % (out, payload.decode("ascii", "replace"))).encode())
    except Exception as e:
        c.sendall(("error %s\n" % e).encode())
    c.close()
