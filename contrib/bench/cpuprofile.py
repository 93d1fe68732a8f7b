# SPDX-License-Identifier: BSD-2-Clause
"""Whose CPU a round trip takes on each host: contrib/bench/two-host
--profile N samples both one-vCPU hosts whole (perf record -a -g, 997 Hz)
while N 64 B round trips run on each path, into vm/{a,b}/pf.PATH.data.
This reads them back with perf report (the guests' kallsyms beside them)
and prints, per path and host, the samples per round trip of each
program: the daemon split into its user code and its kernel time (and
that kernel time by system call), the xfer program, rxe and the network
stack's kernel threads, the rest (the harness's shell and the idle
servers' timers, over the whole window, perf's start included).  A sample stands for about a
millisecond of CPU; TCG delivers fewer timer ticks than it should while
interrupts are off, so compare the rows with each other, not with the
round trip's time."""

import collections, os, re, shutil, subprocess

HZ = 997
SYSCALLS = (("epoll_wait", "epoll_wait"), ("writev", "writev (program's socket)"),
            ("readv", "readv (program's socket)"),
            ("ib_uverbs_post_send", "rxe doorbell (post_send)"),
            ("ioctl", "ioctl (CQ re-arm)"), ("ib_uverbs_event_read", "CQ event read"))


def group(comm):
    if comm in ("smcproxyd", "xfer", "swapper"):
        return comm
    if comm.startswith(("kworker", "ksoftirqd")):
        return "kernel threads"
    return "other"


def samples(data, kallsyms):
    """[(comm, [frame, ...]), ...] for each sample, leaf first."""
    cmd = ["perf", "script", "-i", data, "--kallsyms", kallsyms, "-F", "comm,ip,sym"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    res = []
    for blk in out.split("\n\n"):
        lines = blk.strip().split("\n")
        if not lines or not lines[0].strip():
            continue
        frames = []
        for ln in lines[1:]:
            p = ln.split(None, 1)
            frames.append(re.sub(r"\+0x[0-9a-f]+$", "", p[1]) if len(p) > 1 else "?")
        res.append((lines[0].strip(), frames))
    return res


def kernel_frame(f):
    return f.startswith(("do_syscall_64", "entry_SYSCALL", "asm_", "ret_from_fork"))


def host(vmdir, h, path, iters):
    data = os.path.join(vmdir, h, f"pf.{path}.data")
    ks = os.path.join(vmdir, h, "pf.kallsyms")
    if not os.path.exists(data):
        return None
    per = collections.Counter()
    sc = collections.Counter()
    for comm, fr in samples(data, ks):
        g = group(comm)
        if g != "smcproxyd":
            per[g] += 1
            continue
        if not any(kernel_frame(f) for f in fr):
            per["smcproxyd user"] += 1
            continue
        per["smcproxyd kernel"] += 1
        for key, name in SYSCALLS:
            if any(key in f for f in fr):
                sc[name] += 1
                break
        else:
            sc["other kernel"] += 1
    return per, sc


def report(vmdir, paths, iters):
    if not shutil.which("perf"):
        return ["profile: perf not found here"]
    cols = ["smcproxyd user", "smcproxyd kernel", "xfer", "kernel threads", "other"]
    L = [f"Profile (--profile {iters}): samples per 64 B round trip on each host "
         f"(perf record -a -g, {HZ} Hz, one sample about 1 ms of CPU; compare rows, "
         "not with the round trip's time; other: the harness and idle servers over "
         "the whole window)",
         "| path | host | " + " | ".join(cols) + " |",
         "|---|---|" + "---:|" * len(cols)]
    calls = []
    for p in paths:
        for h in ("a", "b"):
            r = host(vmdir, h, p, iters)
            if r is None:
                continue
            per, sc = r
            L.append(f"| {p} | {h} | " +
                     " | ".join(f"{per[c] / iters:.3f}" for c in cols) + " |")
            if sc:
                calls.append(f"{p} {h}: " + ", ".join(
                    f"{k} {v / iters:.3f}" for k, v in sc.most_common()))
    if calls:
        L.append("the daemons' kernel time by system call, samples per round trip:")
        L += ["  " + c for c in calls]
    return L
