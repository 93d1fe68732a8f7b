#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write the seed corpora of the fuzz targets: tests/fuzz/corpus/<target>/.

The messages are laid out here from docs/protocol.md, independently of the
C encoders, so the replay tests also cross-check the documentation: a
seed-ok-* file that stopped decoding, or decoded to something that does
not re-encode byte for byte, fails the replay test.  Seeds named
seed-bad-* are malformed on purpose and must be refused.  Files named
regression-* (crashes contrib/fuzz-run found) are never touched.

    tests/fuzz/mkcorpus.py [TOP_SRCDIR]
"""
import os
import struct
import sys

CLC_EYE = b"\xe2\xd4\xc3\xd9"
FB_EYE = b"\xe2\xd4\xc3\xc6"


def clc_hdr(mtype, length, fc=False, version=1):
    return CLC_EYE + struct.pack(">BHB", mtype, length,
                                 version << 4 | (0x08 if fc else 0))


def clc_lcl(sysid, gid, mac, qpn, psn):
    return sysid + gid + mac + qpn.to_bytes(3, "big") + psn.to_bytes(3, "big")


LCL = clc_lcl(b"SYSTEMID", bytes(range(1, 17)), b"\x02\x00\x00\x00\x00\x01",
              0x11, 0x123456)


def clc_proposal(max_conns=255, max_links=2, name=b"node-a", mtu=5,
                 version=1, features=3):
    body = (LCL + struct.pack(">BBBBI", mtu, max_conns, max_links, 0,
                              features)
            + bytes(range(32)) + name.ljust(64, b"\0"))
    return clc_hdr(1, 152, version=version) + body + CLC_EYE


def clc_acc_body(rmbe=2, mtu=5, max_conns=255, max_links=2, token=7,
                 vaddr=0x7f0000000000):
    return LCL + struct.pack(">BBBBIIIQ", rmbe << 4 | mtu, max_conns,
                             max_links, 0, 1, 0x1234, token, vaddr)


def clc_accept(fc=True, **kw):
    return (clc_hdr(2, 136, fc) + clc_acc_body(**kw) + b"N" * 32 + b"M" * 32
            + CLC_EYE)


def clc_confirm(fc=True, **kw):
    return clc_hdr(3, 104, fc) + clc_acc_body(**kw) + b"M" * 32 + CLC_EYE


def clc_decline(code, sync=False):
    return (clc_hdr(4, 28, sync) + b"SYSTEMID" + struct.pack(">I", code)
            + bytes(4) + CLC_EYE)


def llc(mtype, flags, payload, rsv=0):
    assert len(payload) == 40, (mtype, len(payload))
    return struct.pack(">BBBB", mtype, 44, rsv, flags) + payload


GID = bytes(range(0x20, 0x30))
MAC = b"\x02\x00\x00\x00\x00\x02"


def llc_msgs():
    yield "ok-confirm-link", llc(0x01, 0x03, MAC + GID + b"\x00\x00\x12"
                                 + b"\x01" + b"LGID" + b"\x02\xff"
                                 + bytes(8))
    yield "ok-confirm-link-resp", llc(0x01, 0x83, MAC + GID
                                      + b"\x00\x00\x13\x01LGID\x02\x10"
                                      + bytes(8))
    add = MAC + bytes(2) + GID + b"\x00\x00\x14" + b"\x02" + b"\x05" \
        + b"\x00\x10\x00" + bytes(8)
    yield "ok-add-link", llc(0x02, 0x00, add)
    yield "ok-add-link-reject", llc(0x02, 0xc0, add, rsv=1)
    rt = struct.pack(">IIQ", 1, 2, 0x7f0000001000)
    yield "ok-add-link-cont", llc(0x03, 0x00, b"\x02\x01\x00\x00" + rt
                                  + bytes(16) + bytes(4))
    yield "ok-delete-link", llc(0x04, 0x00, b"\x01" + struct.pack(
        ">I", 0x00010000) + bytes(35))
    yield "ok-delete-link-all", llc(0x04, 0x60, b"\x00" + struct.pack(
        ">I", 0x00030000) + bytes(35))
    rtok = struct.pack(">BIQ", 1, 5, 0x7f0000002000) + struct.pack(
        ">BIQ", 2, 6, 0x7f0000003000) + bytes(13)
    yield "ok-confirm-rkey", llc(0x06, 0x00, rtok + b"\0")
    yield "ok-confirm-rkey-neg", llc(0x06, 0xb0, rtok + b"\0")
    yield "ok-test-link", llc(0x07, 0x00, b"0123456789abcdef" + bytes(24))
    yield "ok-test-link-resp", llc(0x07, 0x80, b"0123456789abcdef"
                                   + bytes(24))
    rk = struct.pack(">8I", 9, 10, 0, 0, 0, 0, 0, 0)
    yield "ok-delete-rkey", llc(0x09, 0x00, b"\x02\x00\x00\x00" + rk
                                + bytes(4))
    yield "ok-delete-rkey-neg", llc(0x09, 0xa0, b"\x02\x40\x00\x00" + rk
                                    + bytes(4))
    yield "ok-conn-open", llc(0x80, 0x00, struct.pack(
        ">IIQBB", 0x101, 0x202, 0x7f0000010000, 2, 0)
        + b"redis".ljust(22, b"\0"))
    yield "ok-conn-open-longest", llc(0x80, 0x00, struct.pack(
        ">IIQBB", 0x101, 0x202, 0x7f0000010000, 2, 0) + b"e" * 22)
    yield "ok-conn-accept", llc(0x81, 0x80, struct.pack(
        ">IIIQB", 0x101, 0x303, 0x404, 0x7f0000020000, 4) + bytes(19))
    yield "ok-conn-reject", llc(0x82, 0x80, struct.pack(">II", 0x101, 4)
                                + bytes(32))
    yield "bad-length", llc(0x07, 0x00, bytes(40))[:43]
    yield "bad-len-field", b"\x07\x2b" + bytes(42)
    yield "bad-type-req-add-link", llc(0x05, 0x00, bytes(40))
    yield "bad-conn-open-name", llc(0x80, 0x00, struct.pack(
        ">IIQBB", 0x101, 0x202, 0x7f0000010000, 2, 0)
        + b"a/b".ljust(22, b"\0"))
    yield "bad-confirm-link-eyec", llc(0x01, 0x00, MAC + GID
                                       + b"\x00\x00\x12\x01LGID\x02\xff"
                                       + bytes(8))


def cdc(seq, token, pw, pc, cw, cc, pf=0, cs=0, tail=bytes(18)):
    return (struct.pack(">BBHI", 0xfe, 44, seq, token)
            + struct.pack(">HHI", 0, pw, pc) + struct.pack(">HHI", 0, cw, cc)
            + bytes([pf, cs]) + tail)


def cdc_msgs():
    yield "ok-plain", cdc(1, 0x00004000, 0, 100, 0, 0)
    yield "ok-exact-fill", cdc(2, 0x00003fff, 1, 0, 0, 0, pf=0x80)
    yield "ok-wrap-ffff", cdc(0xffff, 0x0000ffff, 0, 5, 0xffff, 0xfff0)
    yield "ok-past-window", cdc(3, 0x00000fff, 2, 0, 0, 0)
    yield "ok-backwards", cdc(4, 0x00000fff, 0, 0, 0, 10)
    yield "ok-flags", cdc(5, 0x80000010, 0, 0, 0, 0, pf=0xf8, cs=0xe0)
    yield "ok-out-of-range", cdc(6, 0x00000010, 0, 0x20, 0, 0)
    yield "bad-type", b"\xfd" + cdc(1, 1, 0, 0, 0, 0)[1:]
    yield "bad-reserved", cdc(1, 1, 0, 0, 0, 0, tail=b"\x01" + bytes(17))
    yield "bad-token", cdc(1, 0, 0, 0, 0, 0)


def fb_hdr(mtype, length):
    return FB_EYE + struct.pack(">BBH", 1, mtype, length)


def fb_msgs():
    name, export = b"peer-a", b"redis"
    yield "ok-hello", (fb_hdr(1, 44 + len(name) + len(export))
                       + bytes(range(32)) + bytes([1, len(name),
                                                   len(export), 0])
                       + name + export)
    yield "ok-challenge", fb_hdr(2, 72) + b"N" * 32 + b"M" * 32
    yield "ok-proof", fb_hdr(3, 40) + b"P" * 32
    yield "ok-result", fb_hdr(4, 16) + struct.pack(">II", 0, 0)
    yield "ok-result-refused", fb_hdr(4, 16) + struct.pack(">II", 1, 0)
    yield "bad-hello-names", (fb_hdr(1, 44 + 3) + bytes(32)
                              + bytes([0, 2, 2, 0]) + b"abc")
    yield "bad-version", FB_EYE + struct.pack(">BBH", 2, 4, 16) + bytes(8)
    yield "bad-clc-eyecatcher", clc_decline(0x03030002)[:16]


def clc_msgs():
    yield "ok-proposal", clc_proposal()
    yield "ok-proposal-longest-name", clc_proposal(name=b"n" * 63)
    yield "ok-accept", clc_accept()
    yield "ok-accept-reuse", clc_accept(fc=False, rmbe=15, mtu=1)
    yield "ok-confirm", clc_confirm()
    yield "ok-decline", clc_decline(0x03030002)
    yield "ok-decline-syncerr", clc_decline(0x04000000, sync=True)
    yield "bad-version", clc_proposal(version=2)
    yield "bad-maxconns", clc_proposal(max_conns=15)
    yield "bad-maxlinks", clc_proposal(max_links=3)
    yield "bad-mtu", clc_accept(mtu=6)
    yield "bad-name", clc_proposal(name=b"a b")
    yield "bad-eyecatcher", b"\xe2\xd4\xc3\xc4" + clc_decline(1)[4:]
    yield "bad-truncated", clc_accept()[:100]
    yield "bad-type", CLC_EYE + struct.pack(">BHB", 5, 28, 0x10) + bytes(20)


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    for target, gen in (("clc", clc_msgs), ("llc", llc_msgs),
                        ("cdc", cdc_msgs), ("fallback", fb_msgs)):
        d = os.path.join(top, "tests", "fuzz", "corpus", target)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.startswith("seed-"):
                os.unlink(os.path.join(d, f))
        for name, data in gen():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
