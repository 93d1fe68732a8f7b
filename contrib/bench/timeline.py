# SPDX-License-Identifier: BSD-2-Clause
"""Where a connect's time goes: the packet timeline of contrib/bench/two-host
--timeline N, read from the captures two-host-vm.sh takes on each host
(tcpdump -i any, tl.PATH.pcap: the link, RoCE, the loopback legs).

Each host's capture is cut into connections at the SYN that opens the
path's connection there, and each packet becomes a step: its direction
(a>b, b>a, lo), what it is (SYN, a CLC message by type, data, FIN; a RoCE
SEND by what its payload starts with, an LLC or CDC type; a WRITE) and its
time since that SYN.  Pure ACKs, TCP's and RoCE's, are no step.  The
connections whose steps come in the most common order give each step's
median time since the start and since the step before: the step that
costs is the one whose gap is large, and the kernel-to-kernel path (ksmc)
beside it says what the same step costs without us.  A capture needs no
library: pcap is read here (LINUX_SLL and LINUX_SLL2, as tcpdump -i any
writes them).
"""

import os, re, statistics, struct

ROCE_PORT = 4791
# IB RC opcodes (the BTH's first byte), those a step is made of
OPCODES = {0x00: "SEND first", 0x02: "SEND last", 0x04: "SEND", 0x05: "SEND imm",
           0x06: "WRITE first", 0x08: "WRITE last", 0x0a: "WRITE", 0x0b: "WRITE imm",
           0x0c: "READ", 0x10: "READ resp"}
ACK = 0x11
# the first byte of a SEND's payload: LLC types (SMC-R's and ours,
# docs/protocol.md), the CDC's
SENDS = {0x01: "CONFIRM_LINK", 0x02: "ADD_LINK", 0x03: "ADD_LINK_CONT",
         0x04: "DELETE_LINK", 0x05: "REQ_ADD_LINK", 0x06: "CONFIRM_RKEY",
         0x07: "TEST_LINK", 0x08: "CONFIRM_RKEY_CONT", 0x09: "DELETE_RKEY",
         0x21: "CONFIRM_LINK_V2", 0x22: "ADD_LINK_V2", 0x24: "DELETE_LINK_V2",
         0x26: "CONFIRM_RKEY_V2", 0x29: "DELETE_RKEY_V2",
         0x80: "CONN_OPEN", 0x81: "CONN_ACCEPT", 0x82: "CONN_REJECT",
         0x83: "CONN_RESUME", 0x84: "CONN_ORIGIN", 0xfe: "CDC"}
CLC_EYE = b"\xe2\xd4\xc3\xd9"           # "SMCR" in EBCDIC
CLCS = {1: "CLC PROPOSAL", 2: "CLC ACCEPT", 3: "CLC CONFIRM", 4: "CLC DECLINE"}


def packets(path):
    """(time in s, pkttype, IPv4 packet bytes) of a pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xa1b2c3d4, 0xa1b23c4d):
        e = "<"
    else:
        e = ">"
        magic = struct.unpack(">I", data[:4])[0]
    div = 1e9 if magic == 0xa1b23c4d else 1e6
    link = struct.unpack(e + "I", data[20:24])[0] & 0xffff
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if link == 113:                 # LINUX_SLL
            if len(pkt) < 16:
                continue
            ptype, hatype = struct.unpack(">HH", pkt[:4])
            proto, pkt = struct.unpack(">H", pkt[14:16])[0], pkt[16:]
        elif link == 276:               # LINUX_SLL2
            if len(pkt) < 20:
                continue
            proto, hatype, ptype = (struct.unpack(">H", pkt[:2])[0],
                                    struct.unpack(">H", pkt[8:10])[0], pkt[10])
            pkt = pkt[20:]
        else:
            raise ValueError(f"{path}: link type {link}, not tcpdump -i any's")
        # loopback: each packet twice, going out and coming in
        if proto != 0x0800 or (hatype == 772 and ptype == 4):
            continue
        yield sec + frac / div, pkt


def step(pkt, names):
    """A packet's step: (label, tcp 4-tuple or None, tcp flags) or None."""
    if len(pkt) < 20:
        return None
    ihl = (pkt[0] & 15) * 4
    proto, src, dst = pkt[9], pkt[12:16], pkt[16:20]
    d = f"{names.get(src, 'lo')}>{names.get(dst, 'lo')}"
    if d == "lo>lo":
        d = "lo"
    l4 = pkt[ihl:]
    if proto == 6 and len(l4) >= 20:
        sport, dport = struct.unpack(">HH", l4[:4])
        flags, doff = l4[13], (l4[12] >> 4) * 4
        data = l4[doff:]
        conn = (src, sport, dst, dport)
        what = []
        if flags & 0x02:
            what.append("SYN-ACK" if flags & 0x10 else "SYN")
        if data:
            if data[:4] == CLC_EYE and len(data) > 4:
                what.append(CLCS.get(data[4], f"CLC type {data[4]}"))
            else:
                what.append("data")
        if flags & 0x01:
            what.append("FIN")
        if flags & 0x04:
            what.append("RST")
        if not what:
            return None                 # a pure ACK
        return f"{d} {dport if flags & 0x02 and not flags & 0x10 else ''}".rstrip() \
            + " " + " ".join(what), conn, flags
    if proto == 17 and len(l4) >= 8 + 12:
        dport = struct.unpack(">H", l4[2:4])[0]
        if dport != ROCE_PORT:
            return None
        bth = l4[8:]
        op = bth[0]
        if op == ACK or op not in OPCODES:
            return None
        name = OPCODES[op]
        if name.startswith("SEND"):
            pay = bth[12 + (4 if op == 0x05 else 0):]
            if pay:
                name += " " + SENDS.get(pay[0], f"0x{pay[0]:02x}")
            if pay[:1] == b"\xfe" and len(pay) > 25:
                # the CDC's connection state (smc-r.md 1.3): what closes
                st = [n for b, n in ((0x80, "done"), (0x40, "closed"),
                                     (0x20, "abort")) if pay[25] & b]
                name += " " + "+".join(st) if st else ""
            elif pay[:1] != b"\xfe" and len(pay) > 3 and pay[3] & 0x80:
                name += " resp"          # an LLC response (flag RESP)
        return f"{d} {name}", None, 0
    return None


def log_steps(path, who):
    """(time, label) of each line of a daemon's log written with -t
    ("<7>smcproxyd: 1796619389.705123 conn 0x1a ..."), its numbers made
    N so that the same step of two connections has one label."""
    out = []
    try:
        for l in open(path, errors="replace"):
            m = re.match(r"<\d>smcproxyd: (\d+\.\d{6}) (.*)", l)
            if m:
                text = re.sub(r"0x[0-9a-f]+|\d+", "N", m.group(2))[:60]
                out.append((float(m.group(1)), f"{who}: {text}"))
    except OSError:
        pass
    return out


def connections(path, names, start, extra=()):
    """The capture cut at each step start(label) says opens a connection:
    a list of [(seconds since that step, label), ...]; extra: more
    (time, label) steps, a daemon's log, merged in by time."""
    conns, cur, t0 = [], None, None
    steps = []
    for t, pkt in packets(path):
        s = step(pkt, names)
        if s is not None:
            steps.append((t, s[0]))
    if steps:
        steps += [e for e in extra if steps[0][0] <= e[0] <= steps[-1][0]]
    for t, label in sorted(steps):
        if start(label):
            if cur:
                conns.append(cur)
            cur, t0 = [], t
        if cur is not None:
            cur.append((t - t0, label))
    if cur:
        conns.append(cur)
    return conns


def table(conns):
    """Lines: each step (a label and which of its kind in the connection:
    the second CDC a>b) that at least half the connections took, in the
    order of its median time since the start, with that median and the
    gap to the step before (us).  Steps are matched by kind and count,
    not by position, so connections whose LLC and CLC messages interleave
    differently still line up."""
    if not conns:
        return ["  (no connection in the capture)"]
    at = {}
    for c in conns:
        seen = {}
        for t, l in c:
            seen[l] = seen.get(l, 0) + 1
            at.setdefault((l, seen[l]), []).append(t)
    rows = sorted((statistics.median(v) * 1e6, k, len(v)) for k, v in at.items()
                  if len(v) * 2 >= len(conns))
    L = [f"  {len(conns)} connections; the steps at least half of them took, "
         "by median time",
         f"  {'step':<44} {'of':>4} {'since SYN':>10} {'gap':>9}"]
    prev = 0.0
    for t, (label, n), k in rows:
        name = label + (f" #{n}" if n > 1 else "")
        L.append(f"  {name:<44} {k:4d} {t:10.0f} {t - prev:9.0f}")
        prev = t
    return L


# Per path: the port of the connection that starts a connect on each host,
# and the step on host a that ends it (the echo of the first 64 B).
def report(vmdir, ports):
    """The timeline tables for the paths captured in vmdir/{a,b}, as lines.
    ports: path -> (a's start, b's start) (a port a SYN goes to; for b,
    None: b's first step of the path)."""
    names = {}
    for h in ("a", "b"):
        try:
            for l in open(os.path.join(vmdir, h, "vm.txt")):
                f = l.split()
                if len(f) == 2 and f[0] == "link_ip":
                    names[bytes(int(x) for x in f[1].split("."))] = h
        except OSError:
            pass
    L = []
    ports = dict(ports)
    if os.path.exists(os.path.join(vmdir, "b", "tl.exportK-debug.pcap")):
        ports["exportK-debug"] = (None, ports["exportK"][1])
    for p, (pa, pb) in ports.items():
        for h, port in (("a", pa), ("b", pb)):
            if port is None:
                continue
            cap = os.path.join(vmdir, h, f"tl.{p}.pcap")
            if not os.path.exists(cap):
                continue
            L.append(f"{p}, host {h}'s capture, from the SYN to port {port}:")
            try:
                extra = (log_steps(os.path.join(vmdir, "b", "b5.log"), "b5")
                         if p == "exportK-debug" else ())
                conns = connections(cap, names, lambda l, port=port: l.endswith(
                    f" {port} SYN"), extra)
                L += table(conns)
            except (OSError, ValueError) as e:
                L.append(f"  unreadable: {e}")
            L.append("")
    return L
