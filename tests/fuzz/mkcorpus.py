#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write the seed corpora of the fuzz targets: tests/fuzz/corpus/<target>/.

The messages are laid out here from docs/protocol.md, independently of the
C encoders, so the replay tests also cross-check the documentation: a
seed-ok-* file that stopped decoding, or decoded to something that does
not re-encode byte for byte, fails the replay test.  Seeds named
seed-bad-* are malformed on purpose and must be refused.  The control
requests come from docs/control.md and the configs from conf/ (read from
TOP_SRCDIR); other seed-* names carry no expectation.  Files named
regression-* (crashes contrib/fuzz-run found) are never touched.

    tests/fuzz/mkcorpus.py [TOP_SRCDIR]
"""
import json
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
    rid = bytes(range(1, 17))
    yield "ok-conn-resume", llc(0x83, 0x00, rid + struct.pack(
        ">IIQQ", 0x101, 0x505, 1 << 20, 3 << 20))
    yield "ok-conn-resume-answer", llc(0x83, 0x80, rid + struct.pack(
        ">IIQQ", 0x303, 0x606, 3 << 20, 1 << 20))
    yield "bad-conn-resume-no-id", llc(0x83, 0x00, bytes(16) + struct.pack(
        ">IIQQ", 0x101, 0x505, 0, 0))
    # CONN_ORIGIN: token, ports, addresses; flag 0x01 IPv6
    yield "ok-conn-origin", llc(0x84, 0x00, struct.pack(
        ">IHH", 0x101, 40112, 6380) + bytes([127, 0, 0, 5]) + bytes(12)
        + bytes([127, 0, 0, 1]) + bytes(12))
    yield "ok-conn-origin6", llc(0x84, 0x01, struct.pack(
        ">IHH", 0x101, 40112, 6380) + bytes(15) + b"\1" + bytes(15) + b"\1")
    yield "bad-conn-origin-port", llc(0x84, 0x00, struct.pack(
        ">IHH", 0x101, 0, 6380) + bytes([127, 0, 0, 5]) + bytes(12)
        + bytes([127, 0, 0, 1]) + bytes(12))
    yield "bad-conn-origin-v4-tail", llc(0x84, 0x00, struct.pack(
        ">IHH", 0x101, 40112, 6380) + bytes([127, 0, 0, 5]) + bytes(11)
        + b"\1" + bytes([127, 0, 0, 1]) + bytes(12))
    yield "bad-conn-origin-no-token", llc(0x84, 0x01, struct.pack(
        ">IHH", 0, 40112, 6380) + bytes(15) + b"\1" + bytes(15) + b"\1")
    yield "bad-length", llc(0x07, 0x00, bytes(40))[:43]
    yield "bad-len-field", b"\x07\x2b" + bytes(42)
    yield "bad-type-req-add-link", llc(0x05, 0x00, bytes(40))
    yield "bad-conn-open-name", llc(0x80, 0x00, struct.pack(
        ">IIQBB", 0x101, 0x202, 0x7f0000010000, 2, 0)
        + b"a/b".ljust(22, b"\0"))
    yield "bad-confirm-link-eyec", llc(0x01, 0x00, MAC + GID
                                       + b"\x00\x00\x12\x01LGID\x02\xff"
                                       + bytes(8))


# fuzz_link records (tests/fuzz/fuzz_link.c): op & 7 the kind, op & 8
# sent by b (else a), op >> 4 the sender's n-th active link.
LINK_TYPES = [0x01, 0x02, 0x03, 0x04, 0x06, 0x07, 0x09, 0x80, 0x81, 0x82,
              0x83, 0x05]


def lk_op(kind, by_b=False, link=0):
    return bytes([kind | (8 if by_b else 0) | link << 4])


def lk_llc(msg, fix=True, **kw):
    """An LLC message of llc_msgs(): its table index, with 0x40 the real
    link numbers, QP address and group uid put in where it decodes."""
    i = LINK_TYPES.index(msg[0])
    sel = 0xc0 + i if fix else 0x80 + (i - 8) % 12
    return lk_op(0, **kw) + bytes([sel, msg[3]]) + msg[4:]


def lk_cdc(dseq=1, dprod=0, dcons=0, pf=0, cs=0, how=0, tok=None, **kw):
    r = lk_op(1, **kw) + bytes([how | (1 if tok is not None else 0)])
    r += struct.pack(">hhhBB", dseq, dprod, dcons, pf, cs)
    return r + (bytes([tok]) if tok is not None else b"")


def lk_produce(n, **kw):
    return lk_op(2, **kw) + struct.pack(">H", n)


def lk_consume(n, **kw):
    return lk_op(3, **kw) + struct.pack(">H", n)


def lk_close(how, **kw):
    return lk_op(4, **kw) + bytes([how])


def lk_turns(n):
    return lk_op(5) + bytes([n])


def lk_fault(what, **kw):
    return lk_op(6, **kw) + bytes([what])


def lk_raw(msg, **kw):
    assert len(msg) == 44
    return lk_op(7, **kw) + msg


def link_msgs():
    """Sequences for fuzz_link; the first byte's bit 0 gives both sides a
    second device (and the group its second link).  No expectations: the
    target checks invariants, not outcomes."""
    m = dict(llc_msgs())
    relay = (lk_produce(1000) + lk_turns(8) + lk_consume(1000, by_b=True)
             + lk_produce(20000, by_b=True) + lk_turns(8) + lk_consume(9000)
             + lk_turns(8) + lk_consume(20000) + lk_produce(16384)
             + lk_turns(16) + lk_consume(16384, by_b=True))
    yield "relay", b"\0" + relay
    yield "relay-two-links", b"\1" + relay
    yield "test-link", b"\0" + lk_llc(m["ok-test-link"]) + lk_turns(4) + \
        lk_llc(m["ok-test-link-resp"], by_b=True)
    yield "delete-link-all", b"\0" + lk_produce(500) + lk_llc(
        m["ok-delete-link-all"]) + lk_turns(20) + lk_produce(500)
    yield "delete-link-failover", b"\1" + lk_produce(3000) + lk_llc(
        m["ok-delete-link"], link=1) + lk_turns(20) + lk_produce(3000) + \
        lk_turns(8) + lk_consume(6000, by_b=True)
    yield "delete-link-by-b", b"\1" + lk_llc(
        m["ok-delete-link"], by_b=True) + lk_turns(20) + lk_produce(
        100, by_b=True) + lk_turns(8) + lk_consume(100)
    yield "add-link-unasked", b"\0" + lk_llc(m["ok-add-link"]) + \
        lk_turns(8) + lk_llc(m["ok-add-link-cont"]) + lk_turns(8)
    yield "add-link-by-server", b"\0" + lk_llc(m["ok-add-link"],
                                              by_b=True) + lk_turns(30)
    yield "add-link-reject", b"\1" + lk_llc(m["ok-add-link-reject"]) + \
        lk_turns(8)
    yield "confirm-link-again", b"\0" + lk_llc(
        m["ok-confirm-link"], by_b=True) + lk_turns(8) + lk_llc(
        m["ok-confirm-link-resp"]) + lk_turns(8)
    yield "rkeys", b"\1" + lk_llc(m["ok-confirm-rkey"]) + lk_llc(
        m["ok-confirm-rkey-neg"], by_b=True) + lk_llc(
        m["ok-delete-rkey"]) + lk_llc(m["ok-delete-rkey-neg"]) + lk_turns(8)
    yield "conn-messages", b"\0" + lk_llc(m["ok-conn-open"]) + lk_llc(
        m["ok-conn-accept"], by_b=True) + lk_llc(m["ok-conn-reject"]) + \
        lk_turns(4)
    yield "unknown-llc-type", b"\0" + lk_llc(
        llc(0x05, 0x00, bytes(40)), fix=False) + lk_turns(8)
    yield "cdc-in-window", b"\0" + lk_produce(100) + lk_turns(4) + \
        lk_cdc(dseq=1, dprod=50) + lk_turns(4) + lk_consume(200, by_b=True)
    yield "cdc-past-window", b"\0" + lk_cdc(dprod=-1, how=2 | 0x20) + \
        lk_turns(8)
    yield "cdc-stale", b"\0" + lk_produce(10) + lk_turns(4) + lk_cdc(
        dseq=-1) + lk_cdc(dseq=0) + lk_turns(4)
    yield "cdc-abort", b"\0" + lk_produce(4000, by_b=True) + lk_cdc(
        cs=0x20) + lk_turns(8) + lk_produce(10, by_b=True) + lk_turns(8)
    yield "cdc-done-closed", b"\1" + lk_produce(300) + lk_turns(4) + \
        lk_cdc(cs=0xc0, by_b=True) + lk_turns(4) + lk_consume(300, by_b=True)
    yield "cdc-unknown-token", b"\0" + lk_cdc(tok=0x77) + lk_turns(4)
    yield "cdc-cons-request", b"\0" + lk_produce(16000, by_b=True) + \
        lk_turns(4) + lk_cdc(pf=0x10 | 0x80) + lk_turns(4)
    yield "cdc-validation", b"\1" + lk_produce(500) + lk_cdc(
        pf=0x08, link=1) + lk_turns(8)
    yield "close-both", b"\0" + lk_produce(700) + lk_close(0) + \
        lk_turns(4) + lk_consume(700, by_b=True) + lk_close(1, by_b=True) + \
        lk_turns(8) + lk_close(2) + lk_turns(4)
    yield "fault-drop-link", b"\1" + lk_produce(2000) + lk_fault(
        2, link=1) + lk_turns(30) + lk_produce(2000) + lk_turns(8)
    yield "fault-completion", b"\0" + lk_fault(0) + lk_produce(100) + \
        lk_turns(8) + lk_fault(3, by_b=True) + lk_turns(8)
    yield "fault-conn-gone", b"\0" + lk_produce(100) + lk_fault(
        5, by_b=True) + lk_turns(4) + lk_produce(100) + lk_turns(8)
    yield "raw-cdc", b"\0" + lk_raw(cdc(1, 0x2000, 0, 10, 0, 0)) + \
        lk_turns(4)
    yield "raw-llc-bad", b"\0" + lk_raw(llc(0x07, 0x00, bytes(40))[:43]
                                       + b"\1") + lk_turns(4)


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


def fb_codec_msgs():
    name, export = b"peer-a", b"redis"
    yield "ok-hello", (fb_hdr(1, 44 + len(name) + len(export))
                       + bytes(range(32)) + bytes([1, len(name),
                                                   len(export), 0])
                       + name + export)
    resume = bytes(range(1, 17)) + struct.pack(">QQB", 1 << 20, 7, 1) \
        + bytes(7)
    yield "ok-hello-resume", (fb_hdr(1, 44 + len(name) + len(export) + 40)
                              + bytes(range(32)) + bytes([3, len(name),
                                                          len(export), 0])
                              + name + export + resume)
    origin4 = (struct.pack(">B3xHH", 4, 40112, 6380) + bytes([127, 0, 0, 5])
               + bytes(12) + bytes([127, 0, 0, 1]) + bytes(12))
    origin6 = (struct.pack(">B3xHH", 6, 40112, 6380) + bytes(15) + b"\1"
               + bytes(15) + b"\1")
    for fam, origin in (("4", origin4), ("6", origin6)):
        yield "ok-hello-origin" + fam, (
            fb_hdr(1, 44 + len(name) + len(export) + 40)
            + bytes(range(32)) + bytes([5, len(name), len(export), 0])
            + name + export + origin)
    yield "ok-hello-resume-origin", (
        fb_hdr(1, 44 + len(name) + len(export) + 80)
        + bytes(range(32)) + bytes([7, len(name), len(export), 0])
        + name + export + resume + origin4)
    for what, origin in (("family", b"\5" + origin4[1:]),
                         ("reserved", origin4[:1] + b"\1" + origin4[2:]),
                         ("port", origin4[:4] + bytes(2) + origin4[6:]),
                         ("v4-tail", origin4[:39] + b"\1")):
        yield "bad-hello-origin-" + what, (
            fb_hdr(1, 44 + len(name) + len(export) + 40)
            + bytes(range(32)) + bytes([5, len(name), len(export), 0])
            + name + export + origin)
    yield "ok-resumed", fb_hdr(5, 24) + struct.pack(">QQ", 7, 1 << 20)
    yield "ok-challenge", fb_hdr(2, 72) + b"N" * 32 + b"M" * 32
    yield "ok-proof", fb_hdr(3, 40) + b"P" * 32
    yield "ok-result", fb_hdr(4, 16) + struct.pack(">II", 0, 0)
    yield "ok-result-refused", fb_hdr(4, 16) + struct.pack(">II", 1, 0)
    yield "bad-hello-names", (fb_hdr(1, 44 + 3) + bytes(32)
                              + bytes([0, 2, 2, 0]) + b"abc")
    yield "bad-version", FB_EYE + struct.pack(">BBH", 2, 4, 16) + bytes(8)
    yield "bad-clc-eyecatcher", clc_decline(0x03030002)[:16]



# fuzz_fallback's peer records (tests/fuzz/fuzz_fallback.c), answering A's
# HELLO: op & 7 the kind.
def fb_challenge_ok(n=0x11):
    return bytes([0, n])


def fb_challenge_raw(nonce=b"N" * 32, mac=b"M" * 32):
    return bytes([1]) + nonce + mac


def fb_challenge_reflected(other_hello=False):
    return bytes([2 | (8 if other_hello else 0), 0x22])


def fb_result(code=0, reserved=False):
    return bytes([3 | (8 if reserved else 0), code])


def fb_resumed(drx=0, dfin=0):
    return bytes([4]) + struct.pack(">hh", drx, dfin)


def fb_resumed_raw(rx, fin):
    return bytes([5]) + struct.pack(">QQ", rx, fin)


def fb_raw(data):
    return bytes([6, len(data)]) + data


FB_FLUSH = b"\7"


def fb_msgs():
    """Mode byte 0: one message for the codec.  1: the peer port's answers
    to a fallback connection (flags bit 0: the keyed peer; bit 1: end with
    a reset); 2: to a resume over TCP (always keyed).  seed-ok-* must be
    believed by A, seed-bad-* must not."""
    for name, data in fb_codec_msgs():
        yield name, b"\0" + data
    keyed, plain, reset = b"\1\1", b"\1\0", b"\1\3"
    ch, ok = fb_challenge_ok(), fb_result(0)
    yield "ok-open-keyed", keyed + ch + FB_FLUSH + ok
    yield "ok-open-keyed-at-once", keyed + ch + ok
    yield "ok-open-plain", plain + ok
    yield "bad-open-result-without-challenge", keyed + ok
    yield "bad-open-wrong-mac", keyed + fb_challenge_raw() + ok
    yield "bad-open-reflected-mac", keyed + fb_challenge_reflected() + ok
    yield "bad-open-other-hello", keyed + fb_challenge_reflected(True) + ok
    yield "bad-open-challenge-without-key", plain + ch + ok
    yield "bad-open-refused", keyed + ch + fb_result(4)
    yield "bad-open-two-challenges", keyed + ch + ch + ok
    yield "bad-open-resumed", keyed + ch + fb_resumed() + ok
    yield "bad-open-reserved", keyed + ch + fb_result(0, reserved=True)
    yield "bad-open-garbage", keyed + fb_raw(b"GET / HTTP/1.0\r\n\r\n")
    yield "bad-open-cut", keyed + ch + fb_raw(
        fb_hdr(4, 16) + b"\0\0")
    yield "bad-open-reset", reset + ch + FB_FLUSH
    resume = b"\2\0"
    yield "ok-resume", resume + ch + FB_FLUSH + ok + fb_resumed()
    yield "ok-resume-at-once", resume + ch + ok + fb_resumed()
    # believed (the peer proved its key), then its offsets are refused
    yield "ok-resume-offsets-out-of-range", resume + ch + ok + fb_resumed(
        300, -2)
    yield "ok-resume-raw-offsets", resume + ch + ok + fb_resumed_raw(
        1 << 63, 0xffffffffffffffff)
    yield "bad-resume-resumed-only", resume + fb_resumed()
    yield "bad-resume-result-then-resumed", resume + ok + fb_resumed()
    yield "bad-resume-wrong-mac", resume + fb_challenge_raw() + ok + \
        fb_resumed()
    yield "bad-resume-reflected-mac", resume + fb_challenge_reflected() + \
        ok + fb_resumed()
    yield "bad-resume-resumed-before-result", resume + ch + fb_resumed() + \
        ok
    yield "bad-resume-refused", resume + ch + fb_result(11)
    yield "bad-resume-no-resumed", resume + ch + ok
    yield "bad-resume-second-result", resume + ch + ok + ok + fb_resumed()
    yield "bad-resume-garbage", resume + ch + fb_raw(b"\xe2\xd4\xc3\xc6"
                                                    + bytes(12))
    yield "bad-resume-reset", b"\2\2" + ch + ok


# fuzz_resume's records (tests/fuzz/fuzz_resume.c): peer b's side while
# daemon A's CONN_RESUME waits; op & 7 the kind.
def rs_answer(sel=0, drx=0, dfin=0):
    return bytes([0, sel]) + struct.pack(">hh", drx, dfin)


def rs_answer_raw(rx, fin):
    return bytes([1]) + struct.pack(">QQ", rx, fin)


def rs_reject(sel=0, reason=4):
    return bytes([2, sel, reason])


def rs_drop(req_link=True):
    return bytes([3, 1 if req_link else 0])


def rs_delete(req_link=True, own=False, all_links=False):
    return bytes([4, (1 if req_link else 0) | (2 if own else 0)
                  | (4 if all_links else 0)])


def rs_wait(ms=0, asked=False):
    return bytes([5, 0x80 if asked else ms & 31])


def rs_write(n):
    return bytes([6, n])


RS_END_GROUP = b"\7"


def resume_msgs():
    """The first byte: client bytes (times 8) before the group ends; then
    b's records.  seed-ok-* must resume, seed-bad-* must not (held, lied
    to, refused, or reset).  m1-*: a link of the new group goes while the
    answer is held (finding M1 of issue 29), then b answers on the link
    that is left once A asked again."""
    yield "ok-answer", b"\x10" + rs_answer() + rs_wait(8) + rs_write(4)
    yield "ok-answer-nothing-sent", b"\0" + rs_answer() + rs_wait(8)
    yield "ok-answer-rx-behind", b"\x20" + rs_answer(drx=-100) + \
        rs_wait(8) + rs_write(4)
    yield "ok-answer-twice", b"\x10" + rs_answer() + rs_answer() + \
        rs_wait(8)
    yield "ok-m1-drop", b"\x10" + rs_drop() + rs_wait(asked=True) + \
        rs_answer() + rs_wait(8) + rs_write(2)
    yield "ok-m1-delete-link", b"\x10" + rs_delete(own=True) + \
        rs_wait(asked=True) + rs_answer() + rs_wait(8)
    yield "bad-held", b"\x10" + rs_wait(8)
    yield "bad-wrong-id", b"\x10" + rs_answer(sel=1) + rs_wait(8)
    yield "bad-rx-past-sent", b"\x10" + rs_answer(drx=1) + rs_wait(8)
    yield "bad-fin-past-window", b"\x10" + rs_answer_raw(
        0x80, 1 << 20) + rs_wait(8)
    yield "bad-reject", b"\x10" + rs_reject() + rs_wait(8)
    yield "bad-request-to-client", b"\x10" + rs_answer(sel=0x10) + \
        rs_wait(8)
    yield "bad-m1-drop-held", b"\x10" + rs_drop() + rs_wait(asked=True)
    yield "bad-m1-delete-held", b"\x10" + rs_delete() + rs_wait(asked=True)
    yield "bad-group-ends-held", b"\x10" + RS_END_GROUP + rs_wait(8)


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


SMCD_EYE = b"\xe2\xd4\xc3\xc4"
GID_A = bytes(10) + b"\xff\xff\x0a\x63\x00\x01"
GID_B = bytes(10) + b"\xff\xff\x0a\x63\x00\x02"


def smcr_clc_hdr(mtype, length, b7):
    return CLC_EYE + struct.pack(">BHB", mtype, length, b7)


def smcr_clc_eid(name):
    return name.ljust(32, b" ")


def smcr_clc_proposal(typev1=2, typev2=0, eids=(b"SMCPROXYD-TEST-LAB",),
                  release=1, conns=255, links=2, ipv6=(), ism=(),
                  v2_off=None, eye=CLC_EYE, version=2):
    """docs/protocol.md "PROPOSAL (v2)": typev1/typev2 0 R, 1 D, 2 N, 3 B."""
    v1 = typev1 != 2
    lcl = (b"SYSTEMID" + GID_A + b"\x02\x00\x00\x00\x00\x01" if v1
           else bytes(30))
    prefix = b""
    if v1:
        prefix = struct.pack(">IBxxB", 0x0A630000, 24, len(ipv6))
        prefix += b"".join(p6.ljust(16, b"\0") + bytes([n]) for p6, n in ipv6)
    if v2_off is None:
        v2_off = 28 + len(prefix)
    ext = b""
    if typev2 != 2:
        d = typev2 in (1, 3)
        smcd_off = 32 + 32 * len(eids) if d else 0
        ext = struct.pack(">BBxBxxH", len(eids), len(ism), release << 4,
                          smcd_off)
        ext += GID_A + struct.pack(">BBH", conns, links, 1) + bytes(12)
        ext += b"".join(smcr_clc_eid(e) for e in eids)
        if d:
            ext += smcr_clc_eid(b"IBM-SYSZ-ISMSEID") + bytes(16)
            ext += b"".join(struct.pack(">QH", g, c) for g, c in ism)
    smcd = bytes(10) + struct.pack(">H", v2_off if typev2 != 2 else 0)
    smcd += bytes(28)
    body = lcl + struct.pack(">H", 40 if v1 else 0) + smcd + prefix + ext
    length = 8 + len(body) + 4
    return (eye + struct.pack(">BHB", 1, length,
                              version << 4 | typev2 << 2 | typev1)
            + body + eye)


def smcr_clc_accept(mtype=2, fc=True, gids=(GID_A,), qpn=17, mtu=3, rmbe=2,
                idx=1, token=1, release=1, conns=255, links=2):
    """docs/protocol.md "ACCEPT and CONFIRM (v2)"."""
    body = (b"SYSTEMID" + GID_B + b"\x02\x00\x00\x00\x00\x02"
            + struct.pack(">I", qpn)[1:] + struct.pack(">IBIBB", 0x3B7, idx,
                                                       token, rmbe << 4 | mtu,
                                                       0)
            + struct.pack(">QB", 0xFF11B53884B70000, 0)
            + b"\x39\x4c\x31" + smcr_clc_eid(b"SMCPROXYD-TEST-LAB") + bytes(8))
    if fc:
        body += bytes([0x80, 0x20 | release, 0, 0]) + b"rxe-b".ljust(32)
        body += (struct.pack(">BBHI", conns, links, 1, 0) if release
                 else bytes(8)) + bytes(8)
        if mtype == 3:
            body += bytes([len(gids), 0, 0, 0]) + b"".join(gids)
    return smcr_clc_hdr(mtype, 8 + len(body) + 4, 0x28 if fc else 0x20) + \
        body + CLC_EYE


def smcr_clc_decline(code, version=2, sync=False, os_type=2, length=None):
    body = b"SYSTEMID" + struct.pack(">IB3x", code, os_type << 4)
    if version == 2:
        body += bytes(16)
    if length is None:
        length = 8 + len(body) + 4
    return smcr_clc_hdr(4, length, version << 4 | (8 if sync else 0)) + body + \
        CLC_EYE


def smcr_clc_msgs(top):
    """The CLC messages of the kernel capture, then laid-out ones."""
    fix = os.path.join(top, "tests", "fixtures", "ksmc")
    for f in sorted(os.listdir(fix)):
        if "-clc-" in f and f.endswith(".bin"):
            with open(os.path.join(fix, f), "rb") as fh:
                yield "ok-kernel-" + f[:-4], fh.read()
    yield "ok-proposal", smcr_clc_proposal(typev2=0)
    yield "ok-proposal-release0", smcr_clc_proposal(typev2=0, release=0,
                                                conns=0, links=0)
    yield "ok-proposal-v1-and-both", smcr_clc_proposal(
        typev1=0, typev2=3, eids=(b"A", b"0.B-C"),
        ipv6=((b"\xfd", 64), (b"\xfe", 48)), ism=((1, 2), (3, 4)))
    yield "ok-proposal-smcd-frame", smcr_clc_proposal(typev2=0, eye=SMCD_EYE)
    yield "ok-accept", smcr_clc_accept()
    yield "ok-accept-release0", smcr_clc_accept(release=0)
    yield "ok-accept-reuse", smcr_clc_accept(fc=False, rmbe=15, mtu=5, idx=2)
    yield "ok-confirm", smcr_clc_accept(mtype=3)
    yield "ok-confirm-two-gids", smcr_clc_accept(mtype=3, gids=(GID_A, GID_B))
    yield "ok-confirm-reuse", smcr_clc_accept(mtype=3, fc=False)
    yield "ok-decline", smcr_clc_decline(0x03030000)
    yield "ok-decline-v1-syncerr", smcr_clc_decline(0x04000000, version=1,
                                                sync=True)
    yield "bad-proposal-no-eid", smcr_clc_proposal(typev2=0, eids=())
    yield "bad-proposal-eid", smcr_clc_proposal(typev2=0, eids=(b"lower",))
    yield "bad-proposal-nine-eids", smcr_clc_proposal(typev2=0, eids=(b"E",) * 9)
    yield "bad-proposal-v2-offset", smcr_clc_proposal(typev2=0, v2_off=27)
    yield "bad-proposal-neither", smcr_clc_proposal(typev2=2)
    yield "bad-proposal-maxconns", smcr_clc_proposal(typev2=0, conns=15)
    yield "bad-proposal-maxlinks", smcr_clc_proposal(typev2=0, links=3)
    yield "bad-proposal-version1", smcr_clc_proposal(typev2=0, version=1)
    yield "bad-proposal-truncated", smcr_clc_proposal(typev2=0)[:100]
    yield "bad-accept-mtu", smcr_clc_accept(mtu=6)
    yield "bad-accept-rmbe-idx", smcr_clc_accept(idx=0)
    yield "bad-accept-token", smcr_clc_accept(token=0)
    yield "bad-accept-qpn", smcr_clc_accept(qpn=1)
    yield "bad-accept-fc-short", smcr_clc_accept(fc=False)[:7] + b"\x28" + \
        smcr_clc_accept(fc=False)[8:]
    yield "bad-confirm-three-gids", smcr_clc_accept(mtype=3,
                                                gids=(GID_A,) * 3)
    yield "bad-confirm-no-gid", smcr_clc_accept(mtype=3, gids=())
    yield "bad-decline-code", smcr_clc_decline(0)
    yield "bad-decline-v1-long", smcr_clc_decline(1, version=1, length=44)


def llc2(mtype, flags, payload, length=None):
    """docs/protocol.md "Standard LLC": v2 header, length little endian."""
    if length is None:
        length = 4 + len(payload)
    return struct.pack("<BHB", 0x20 | mtype, length, flags) + payload


def llc2_add_link(flags=0, rkeys=((0x3B7, 0x5AE, 0xFF11B53884B70000),),
                  mtu=3, count=None):
    body = (MAC + bytes(2) + GID_B + b"\x00\x00\x12\x02" + bytes([mtu])
            + b"\xa1\xb0\xbd" + bytes(8))
    if flags & 0x40:
        return llc2(0x02, flags, body)
    ext = b"\x80\x00" + GID_B + bytes(8)
    ext += struct.pack("<H", len(rkeys) if count is None else count)
    ext += b"".join(struct.pack(">IIQ", *t) for t in rkeys)
    return llc2(0x02, flags, body + ext)


def llc2_req_add_link(gids=(GID_A,), flags=0):
    return llc2(0x05, flags, bytes(20) + bytes([len(gids), 0, 0, 0])
                + b"".join(gids))


def llc_v2_msgs(top):
    """The LLC messages of the kernel capture, then laid-out ones."""
    fix = os.path.join(top, "tests", "fixtures", "ksmc")
    for f in sorted(os.listdir(fix)):
        if "-llc-" in f and f.endswith(".bin"):
            with open(os.path.join(fix, f), "rb") as fh:
                yield "ok-kernel-" + f[:-4], fh.read()
    yield "ok-add-link-no-rkey", llc2_add_link(rkeys=())
    yield "ok-add-link-three-rkeys", llc2_add_link(
        rkeys=((1, 2, 3), (4, 5, 6), (7, 8, 9)))
    yield "ok-add-link-accept", llc2_add_link(flags=0x80)
    yield "ok-add-link-reject", llc2_add_link(flags=0xC0)
    # a single-link server's offer without a link (GID and MAC only), and
    # Linux 6.1's refusal of it: the 44 bytes back, the reason's nibble
    # in the length's high byte (300)
    none = MAC + bytes(2) + GID_B + bytes(16)
    yield "ok-add-link-none", llc2(0x02, 0, none)
    yield "ok-add-link-none-refused", llc2(0x02, 0xC0, none, length=300)
    yield "bad-add-link-none-no-gid", llc2(0x02, 0, MAC + bytes(34))
    yield "ok-req-add-link", llc2_req_add_link()
    yield "ok-req-add-link-two", llc2_req_add_link(gids=(GID_A, GID_B))
    yield "ok-req-add-link-resp", llc2_req_add_link(flags=0x80)
    yield "ok-v1-form-test-link", llc(0x07, 0x80, bytes(40))
    yield "ok-v1-form-add-link-reject", llc(0x02, 0xC0, MAC + bytes(34),
                                             rsv=1)
    yield "ok-delete-rkey-failed", llc2(0x09, 0xA0, b"\x02\x01\x00\x00"
                                        + struct.pack(">II", 5, 6)
                                        + bytes(28))
    yield "bad-length-big-endian", struct.pack(">BHB", 0x27, 44, 0) + \
        bytes(40)
    yield "bad-length-short", llc2(0x07, 0, bytes(40), length=43)
    yield "bad-add-link-count", llc2_add_link(count=2)
    yield "bad-add-link-mtu", llc2_add_link(mtu=0)
    yield "bad-add-link-reject-long", llc2(0x02, 0xC0, bytes(68))
    yield "bad-req-add-link-v1", llc(0x05, 0, bytes(20) + b"\x01\x00\x00\x00"
                                     + GID_A)
    yield "bad-req-add-link-none", llc2_req_add_link(gids=())
    yield "bad-add-link-cont-v2", llc2(0x03, 0, bytes(40))
    yield "bad-conn-open", llc(0x80, 0, bytes(40))
    yield "bad-delete-rkey-count", llc2(0x09, 0xA0, b"\x01\x02\x00\x00"
                                        + bytes(36))
    yield "bad-truncated", llc2_add_link()[:60]


def req(cmd, args=None, v=1):
    r = {"v": v, "cmd": cmd}
    if args is not None:
        r["args"] = args
    return json.dumps(r, separators=(",", ":")).encode() + b"\n"


def control_msgs(top):
    """Request lines from docs/control.md.  For this target seed-ok-* hold
    at least one request whose command runs (its answer may still be an
    error, like "no connection 0x1f": there are no workers), seed-bad-*
    only requests that are refused, or blank lines."""
    for cmd in ("version", "stats", "stats reset", "show rules",
                "show peers", "show intercept", "show lgrs", "show links",
                "show conns", "reload", "schema", "help"):
        yield "ok-" + cmd.replace(" ", "-"), req(cmd)
    # no workers here: refused by the command, after the checks
    yield "ok-check", req("check", {"name": "b"})
    yield "ok-check-unknown", req("check", {"name": "nosuch"})
    yield "ok-kill-conn-hex", req("kill conn", {"id": "0x1f"})
    yield "ok-kill-conn-int", req("kill conn", {"id": 31})
    yield "ok-kill-conn-decimal", req("kill conn", {"id": "31"})
    yield "ok-kill-conn-octal", req("kill conn", {"id": "017"})
    yield "ok-kill-conn-max", req("kill conn",
                                  {"id": "0xffffffffffffffff"})
    yield "ok-kill-conn-int-max", req("kill conn",
                                      {"id": 9223372036854775807})
    # parsed and run; the command itself refuses the id
    yield "ok-kill-conn-id-zz", req("kill conn", {"id": "zz"})
    yield "ok-kill-conn-id-negative", req("kill conn", {"id": -1})
    yield "ok-kill-conn-id-minus", req("kill conn", {"id": "-1"})
    yield "ok-kill-conn-id-empty", req("kill conn", {"id": ""})
    yield "ok-kill-conn-id-erange", req("kill conn",
                                        {"id": "0x1ffffffffffffffff"})
    yield "ok-args-empty", req("stats reset", {})
    yield "ok-member-order", b'{"args":{},"cmd":"help","v":1}\n'
    yield "ok-escaped-cmd", b'{"v":1,"cmd":"\\u0076ersion"}\n'
    yield "ok-whitespace", b' \t{ "v" : 1 , "cmd" : "version" } \t\r\n'
    yield "ok-padded", (b'{"v":1,"cmd":"version"' + b" " * 4000
                        + b"}\n")
    yield "ok-no-newline", req("help").rstrip(b"\n")
    yield "ok-pipelined", (req("version") + b"\n   \n"
                           + b'{"v":1,"cmd":"nope"}\r\n'
                           + req("show lgrs").replace(b"\n", b"\r\n")
                           + req("show links") + req("kill conn",
                                                     {"id": 7}))
    yield "ok-every-command", b"".join(
        req(c) for c in ("version", "stats", "stats reset", "show rules",
                         "show peers", "show intercept", "show lgrs",
                         "show links", "show conns", "reload", "schema",
                         "help"))
    yield "bad-blank-lines", b"\n \r\n\t\n\r\n"
    yield "bad-not-json", b"stats\n"
    yield "bad-truncated", b'{"v":1,"cmd":"version"\n'
    yield "bad-trailing-garbage", b'{"v":1,"cmd":"version"}x\n'
    yield "bad-two-objects", b'{"v":1,"cmd":"version"}{"v":1}\n'
    yield "bad-duplicate-key", b'{"v":1,"v":1,"cmd":"stats"}\n'
    yield "bad-duplicate-cmd", b'{"v":1,"cmd":"stats","cmd":"help"}\n'
    yield "bad-array", b"[1,2]\n"
    yield "bad-string", b'"stats"\n'
    yield "bad-number", b"1\n"
    yield "bad-null", b"null\n"
    yield "bad-no-v", b'{"cmd":"stats"}\n'
    yield "bad-v-string", b'{"v":"1","cmd":"stats"}\n'
    yield "bad-v-real", b'{"v":1.0,"cmd":"stats"}\n'
    yield "bad-v-true", b'{"v":true,"cmd":"stats"}\n'
    yield "bad-v-2", req("stats", v=2)
    yield "bad-v-0", req("stats", v=0)
    yield "bad-v-negative", req("stats", v=-1)
    yield "bad-v-int-max", req("stats", v=9223372036854775807)
    yield "bad-v-int-min", req("stats", v=-9223372036854775808)
    yield "bad-v-too-big", b'{"v":99999999999999999999,"cmd":"stats"}\n'
    yield "bad-v-real-overflow", b'{"v":1e400,"cmd":"stats"}\n'
    yield "bad-no-cmd", b'{"v":1}\n'
    yield "bad-cmd-int", b'{"v":1,"cmd":7}\n'
    yield "bad-cmd-null", b'{"v":1,"cmd":null}\n'
    yield "bad-cmd-array", b'{"v":1,"cmd":["version"]}\n'
    yield "bad-cmd-unknown", req("stats please")
    yield "bad-cmd-prefix", req("show")
    yield "bad-cmd-two-spaces", req("show  conns")
    yield "bad-cmd-case", req("VERSION")
    yield "bad-cmd-empty", req("")
    yield "bad-cmd-nul", b'{"v":1,"cmd":"version\\u0000x"}\n'
    yield "bad-cmd-long", req("a" * 3000)
    # the quoted 64 bytes end inside a two-byte character
    yield "bad-cmd-long-utf8-cut", ('{"v":1,"cmd":"' + "a" * 63
                                    + '\u00e9zz"}\n').encode()
    yield "bad-cmd-raw-utf8", ('{"v":1,"cmd":"' + "\u00e9" * 40
                               + '"}\n').encode()
    yield "bad-cmd-invalid-utf8", b'{"v":1,"cmd":"\xff\xfe"}\n'
    yield "bad-cmd-lone-surrogate", b'{"v":1,"cmd":"\\ud800"}\n'
    yield "bad-nul-byte", b'{"v":1,\x00"cmd":"version"}\n'
    yield "bad-extra-member", b'{"v":1,"cmd":"stats","verbose":true}\n'
    yield "bad-extra-member-utf8", ('{"v":1,"cmd":"stats","\u00e9'
                                    + "\u00e9" * 80 + '":1}\n').encode()
    yield "bad-args-array", b'{"v":1,"cmd":"stats","args":[]}\n'
    yield "bad-args-string", b'{"v":1,"cmd":"stats","args":"id"}\n'
    yield "bad-args-null", b'{"v":1,"cmd":"stats","args":null}\n'
    yield "bad-args-unknown", req("stats", {"x": 1})
    yield "bad-kill-no-args", req("kill conn")
    yield "bad-kill-no-id", req("kill conn", {})
    yield "bad-kill-extra-arg", req("kill conn", {"id": 1, "force": True})
    yield "bad-kill-id-bool", req("kill conn", {"id": True})
    yield "bad-kill-id-object", req("kill conn", {"id": {}})
    yield "bad-kill-id-array", req("kill conn", {"id": [1]})
    yield "bad-kill-id-null", req("kill conn", {"id": None})
    yield "bad-kill-id-real", req("kill conn", {"id": 1.5})
    yield "bad-kill-id-too-big", (b'{"v":1,"cmd":"kill conn","args":'
                                  b'{"id":18446744073709551616}}\n')
    yield "bad-deep-nesting", (b'{"v":1,"cmd":"stats","args":{"a":'
                               + b"[" * 300 + b"]" * 300 + b"}}\n")
    yield "bad-long-line", b'{"v":1,"cmd":"' + b"x" * 4000 + b'"}\n'
    yield "bad-pipelined", (b"{\n" + req("nope") + b"[]\n"
                            + req("version", v=2))


def conf_text(s):
    return s.encode()


PEERS = """peers = (
	{ name = "b"; address = "127.0.0.1:7102"; insecure = true; },
	{ name = "c"; address = "[2001:db8::2]:7100"; insecure = true;
	  any_source = true; }
);
"""


def conf_with(body, main='smcproxyd: { name = "a"; };\n'):
    return conf_text(main + body)


def conf_msgs(top):
    """Config texts: the shipped files, then one problem per seed-bad-*.
    seed-ok-* must load.  Key files would be read from their paths, so the
    shipped pair is also given with insecure = true instead."""
    with open(os.path.join(top, "conf", "smcproxyd.conf"), "rb") as f:
        yield "ok-shipped", f.read()
    key = 'key_file = "/etc/smcproxyd/ab.key";'
    for name in ("a", "b"):
        with open(os.path.join(top, "conf", "examples", name + ".conf"),
                  "rb") as f:
            text = f.read()
        # loads only where /etc/smcproxyd/ab.key exists: no expectation
        yield "example-" + name, text
        assert key.encode() in text, name
        yield "ok-example-%s-insecure" % name, text.replace(
            key.encode(), b"insecure = true;")
    yield "ok-name-only", conf_text('smcproxyd: { name = "a"; };\n')
    yield "ok-full", conf_text("""// every section, no key at its default
/* a C comment */
smcproxyd: {
	name = "node-a_1.x";
	control_socket = "/tmp/smcproxyd-fuzz.sock";
	control_mode = 0600;
	control_uid = 1000;
	control_gid = 0x3e8;
	workers = 4;
	log_level = "debug";
	shutdown_timeout = 3600;
	max_conns = 1000000;
};
peer_listen: { address = "[::]:7100"; };
""" + PEERS + """rules = (
	{ name = "redis"; listen = "127.0.0.1:6380"; peer = "b";
	  export = "redis"; idle_timeout = 86400; },
	{ name = "pg"; listen = "[::1]:5433"; peer = "c"; export = "pg"; }
);
exports = (
	{ name = "redis"; target = "127.0.0.1:6379"; peers = [ "b", "c" ];
	  connect_timeout = 300; },
	{ name = "pg"; target = "[::1]:5432"; peers = [ "c" ]; }
);
rdma: {
	devices = [ "mlx5_0", "rxe0" ];
	gid_index = 255;
	max_links = 1;
	max_conns_per_lgr = 16;
	max_send_wr = 2048;
	max_recv_wr = 2;
	sndbuf = 16384;
	rmb = 536870912;
	autocork = false;
	autocork_size = 0;
	inline = false;
	inline_size = 1024;
	slot_wait = "all";
	lgr_idle_timeout = 0;
	test_link_time = 0;
};
""")
    # plain digits are octal too (libconfig 1.5 reads 0660 as 660)
    yield "ok-mode-digits", conf_with("", 'smcproxyd: { name = "a"; '
                                      'control_mode = 660; };\n')
    yield "ok-mode-hex", conf_with("", 'smcproxyd: { name = "a"; '
                                   'control_mode = 0x1b0; };\n')
    yield "ok-mode-string", conf_with("", 'smcproxyd: { name = "a"; '
                                      'control_mode = "0660"; };\n')
    yield "ok-int64", conf_with("", 'smcproxyd: { name = "a"; '
                                'workers = 2L; max_conns = 0x10L; };\n')
    yield "ok-settings-commas", conf_text(
        'smcproxyd = { name = "a", workers = 1 }\n')
    yield "ok-empty-lists", conf_with("peers = ( );\nrules = ( );\n"
                                      "exports = ( );\n")
    yield "ok-string-concat", conf_text(
        'smcproxyd: { name = "no" "de"; };\n')
    yield "ok-escapes", conf_text(
        'smcproxyd: { name = "a"; control_socket = "/tmp/\\x41\\t"; };\n')
    # no expectation: the name comes from the host name
    yield "empty", b""
    yield "bad-syntax", conf_text('smcproxyd: { name = = "a"; };\n')
    yield "bad-unterminated-string", conf_text('smcproxyd: { name = "a')
    yield "bad-unterminated-group", conf_text('smcproxyd: { name = "a";')
    # libconfig 1.5 takes a comment that runs to the end: no expectation
    yield "unterminated-comment", conf_text(
        'smcproxyd: { name = "a"; };\n/* smcproxyd: { };')
    yield "bad-nul-byte", b'smcproxyd: { name = "a\0"; };\n'
    yield "bad-binary", bytes(range(1, 256))
    yield "bad-unknown-key", conf_with("", 'smcproxyd: { name = "a"; '
                                       'wrokers = 2; };\n')
    yield "bad-unknown-section", conf_with("smcproxy: { };\n")
    yield "bad-section-type", conf_with("rdma = ( );\n")
    yield "bad-list-not-groups", conf_with('peers = ( "b" );\n')
    yield "bad-peers-array", conf_with('peers = [ "b" ];\n')
    yield "bad-workers-string", conf_with("", 'smcproxyd: { name = "a"; '
                                          'workers = "1"; };\n')
    yield "bad-workers-range", conf_with("", 'smcproxyd: { name = "a"; '
                                         'workers = 257; };\n')
    yield "bad-workers-negative", conf_with("", 'smcproxyd: { name = "a";'
                                            ' workers = -1; };\n')
    yield "bad-workers-huge", conf_with("", 'smcproxyd: { name = "a"; '
                                        'workers = 99999999999999999999; '
                                        '};\n')
    yield "bad-workers-int64", conf_with("", 'smcproxyd: { name = "a"; '
                                         'workers = 4294967297L; };\n')
    yield "bad-workers-float", conf_with("", 'smcproxyd: { name = "a"; '
                                         'workers = 1.0; };\n')
    yield "bad-workers-group", conf_with("", 'smcproxyd: { name = "a"; '
                                         'workers = { }; };\n')
    yield "bad-mode-range", conf_with("", 'smcproxyd: { name = "a"; '
                                      'control_mode = 01777; };\n')
    yield "bad-mode-digit-8", conf_with("", 'smcproxyd: { name = "a"; '
                                        'control_mode = 0680; };\n')
    yield "bad-mode-string-8", conf_with("", 'smcproxyd: { name = "a"; '
                                         'control_mode = "0680"; };\n')
    yield "bad-mode-string-sign", conf_with("", 'smcproxyd: { name = "a";'
                                            ' control_mode = "-1"; };\n')
    yield "bad-log-level", conf_with("", 'smcproxyd: { name = "a"; '
                                     'log_level = "loud"; };\n')
    yield "bad-name-chars", conf_text('smcproxyd: { name = "a b"; };\n')
    yield "bad-name-long", conf_text('smcproxyd: { name = "%s"; };\n'
                                     % ("n" * 64))
    yield "bad-name-empty", conf_text('smcproxyd: { name = ""; };\n')
    yield "bad-name-utf8", conf_text('smcproxyd: { name = "\u00e9"; };\n')
    yield "bad-control-socket-long", conf_with(
        "", 'smcproxyd: { name = "a"; control_socket = "/%s"; };\n'
        % ("s" * 120))
    yield "bad-control-socket-empty", conf_with(
        "", 'smcproxyd: { name = "a"; control_socket = ""; };\n')
    yield "bad-peer-dup", conf_with(PEERS.replace('"c"', '"b"'))
    yield "bad-peer-no-name", conf_with(
        'peers = ( { address = "127.0.0.1:7102"; insecure = true; } );\n')
    yield "bad-peer-no-key", conf_with(
        'peers = ( { name = "b"; address = "127.0.0.1:7102"; } );\n')
    yield "bad-peer-key-missing", conf_with(
        'peers = ( { name = "b"; address = "127.0.0.1:7102";'
        ' key_file = "no-such-dir/ab.key"; } );\n')
    yield "bad-peer-key-and-insecure", conf_with(
        'peers = ( { name = "b"; address = "127.0.0.1:7102";'
        ' key_file = "/nonexistent/ab.key"; insecure = true; } );\n')
    yield "bad-peer-key-dir", conf_with(
        'peers = ( { name = "b"; address = "127.0.0.1:7102";'
        ' key_file = "/"; } );\n')
    for what, a in (("no-port", "127.0.0.1"), ("port-0", "127.0.0.1:0"),
                    ("port-big", "127.0.0.1:65536"),
                    ("port-sign", "127.0.0.1:+80"),
                    ("hostname", "localhost:7100"),
                    ("unspecified", "0.0.0.0:7100"),
                    ("v6-unbracketed", "::1:7100"),
                    ("v6-unclosed", "[::1:7100"),
                    ("long", "1" * 300 + ":1")):
        yield "bad-peer-addr-" + what, conf_with(
            'peers = ( { name = "b"; address = "%s"; insecure = true; } );\n'
            % a)
    yield "bad-rule-unknown-peer", conf_with(
        PEERS + 'rules = ( { name = "r"; listen = "127.0.0.1:6380";'
        ' peer = "x"; export = "e"; } );\n')
    yield "bad-rule-dup-listen", conf_with(
        PEERS + 'rules = ( { name = "r"; listen = "127.0.0.1:6380";'
        ' peer = "b"; export = "e"; },\n'
        '          { name = "s"; listen = "127.0.0.1:6380";'
        ' peer = "b"; export = "e"; } );\n')
    yield "bad-rule-dup-name", conf_with(
        PEERS + 'rules = ( { name = "r"; listen = "127.0.0.1:6380";'
        ' peer = "b"; export = "e"; },\n'
        '          { name = "r"; listen = "127.0.0.1:6381";'
        ' peer = "b"; export = "e"; } );\n')
    yield "bad-rule-missing-keys", conf_with(PEERS + "rules = ( { } );\n")
    yield "bad-rule-idle-range", conf_with(
        PEERS + 'rules = ( { name = "r"; listen = "127.0.0.1:6380";'
        ' peer = "b"; export = "e"; idle_timeout = 86401; } );\n')
    yield "bad-export-unknown-peer", conf_with(
        PEERS + 'exports = ( { name = "e"; target = "127.0.0.1:6379";'
        ' peers = [ "b", "x", "y" ]; } );\n')
    yield "bad-export-no-peers", conf_with(
        PEERS + 'exports = ( { name = "e"; target = "127.0.0.1:6379";'
        ' peers = [ ]; } );\n')
    yield "bad-export-peers-ints", conf_with(
        PEERS + 'exports = ( { name = "e"; target = "127.0.0.1:6379";'
        ' peers = [ 1, 2 ]; } );\n')
    yield "bad-export-timeout-0", conf_with(
        PEERS + 'exports = ( { name = "e"; target = "127.0.0.1:6379";'
        ' peers = [ "b" ]; connect_timeout = 0; } );\n')
    yield "bad-rdma-pow2", conf_with("rdma: { sndbuf = 65535; "
                                     "rmb = 3; };\n")
    yield "bad-rdma-slot-wait", conf_with('rdma: { slot_wait = "some"; };\n')
    yield "bad-rdma-devices", conf_with("rdma: { devices = \"mlx5_0\"; };\n")
    yield "bad-rdma-ranges", conf_with(
        "rdma: { max_links = 3; max_conns_per_lgr = 15; max_send_wr = 1;"
        " gid_index = -2; inline_size = 1025; };\n")
    yield "bad-many-errors", conf_text(
        'smcproxyd: { name = "a b"; workers = 999; log_level = 1; };\n'
        + PEERS.replace('"c"', '"b"')
        + 'rules = ( { name = "r"; peer = "x"; } );\n'
        + 'exports = ( { name = "e"; peers = [ "q" ]; } );\n'
        + "rdma: { rmb = 1; };\nbogus = 1;\n")
    yield "bad-deep-nesting", conf_with("x = " + "(" * 500 + ")" * 500
                                        + ";\n")
    # skipped by the target: @include reads files
    yield "bad-include", conf_with('@include "/dev/null"\n')


def proxy_msgs():
    """PROXY headers as a load balancer sends them (proxy.c), and not."""
    sig = b"\r\n\r\n\0\r\nQUIT\n"
    v4 = bytes([192, 0, 2, 7, 192, 0, 2, 1]) + struct.pack(">HH", 1234, 80)
    v6 = bytes(15) + b"\x07" + bytes(15) + b"\x01" + struct.pack(">HH", 443, 8443)

    def v2(cmd, fam, body):
        return sig + struct.pack(">BBH", cmd, fam, len(body)) + body
    yield "ok-v2-tcp4", v2(0x21, 0x11, v4) + b"GET / HTTP/1.1\r\n"
    yield "ok-v2-tcp6", v2(0x21, 0x21, v6)
    yield "ok-v2-tlv", v2(0x21, 0x11, v4 + b"\x05\x00\x04abcd")
    yield "ok-v2-local", v2(0x20, 0x00, b"")
    yield "ok-v1-tcp4", b"PROXY TCP4 192.0.2.7 192.0.2.1 56324 443\r\nGET /"
    yield "ok-v1-tcp6", b"PROXY TCP6 2001:db8::7 2001:db8::1 65535 1\r\n"
    yield "ok-v1-unknown", b"PROXY UNKNOWN\r\n"
    yield "bad-v2-udp", v2(0x21, 0x12, v4)
    yield "bad-v2-short6", v2(0x21, 0x21, v4)
    yield "bad-v2-long", sig + b"\x21\x11\xff\xff"
    yield "bad-v2-version", v2(0x11, 0x11, v4)
    yield "bad-v1-port", b"PROXY TCP4 192.0.2.7 192.0.2.1 65536 443\r\n"
    yield "bad-v1-nocrlf", b"PROXY TCP4 " + b"1" * 120
    yield "bad-http", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    for target, gen in (("clc", clc_msgs), ("smcr_clc", lambda: smcr_clc_msgs(top)),
                        ("llc", llc_msgs),
                        ("llc_v2", lambda: llc_v2_msgs(top)),
                        ("cdc", cdc_msgs), ("fallback", fb_msgs),
                        ("control", lambda: control_msgs(top)),
                        ("conf", lambda: conf_msgs(top)),
                        ("link", link_msgs), ("resume", resume_msgs),
                        ("proxy", proxy_msgs)):
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
