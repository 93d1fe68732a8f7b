# SPDX-License-Identifier: BSD-2-Clause
"""What a build tree was configured with, for the benchmarks' headers;
and strace_calls, the reading of a strace -c summary they share.

A sanitizer build (configure --enable-sanitizers) spends two to three times
the CPU in the daemon's own code, which the kernel paths it is compared
against (ib_write_bw, a TCP fallback, HAProxy) do not pay: its ratios would
measure AddressSanitizer.  The benchmarks refuse such a build unless asked.
"""

import os, re


def flags(bld):
    """(CFLAGS, SAN_CFLAGS) from bld/Makefile; None for what is not there."""
    cflags = san = None
    try:
        for l in open(os.path.join(bld, "Makefile")):
            m = re.match(r"^(CFLAGS|SAN_CFLAGS) = ?(.*)$", l.rstrip("\n"))
            if m and m.group(1) == "CFLAGS":
                cflags = m.group(2).strip()
            elif m:
                san = m.group(2).strip()
    except OSError:
        pass
    return cflags, san


def describe(bld):
    """One line for the header, and whether the build has sanitizers."""
    cflags, san = flags(bld)
    if cflags is None:
        return f"{bld} (no Makefile: flags unknown)", False
    line = f"CFLAGS {cflags or '(none)'}, " + (f"sanitizers ({san})" if san else
                                               "no sanitizers")
    return line, bool(san)


def check(prog, bld, allow):
    """The header line; exit with a hint for a sanitizer build unless allow."""
    line, sanitized = describe(bld)
    if sanitized and not allow:
        raise SystemExit(
            f"{prog}: {bld} is a sanitizer build ({line}); its figures would "
            "measure the sanitizers.  Benchmark a plain build:\n"
            "  mkdir -p build/rel && cd build/rel && ../../configure && make && "
            "make tests/tools/xfer\n"
            "or pass --allow-sanitizers to measure it anyway.")
    return line


def strace_calls(path):
    """{syscall: calls, "total": all} from a strace -c summary, or None."""
    calls = {}
    try:
        for l in open(path):
            f = l.split()
            # % time, seconds, usecs/call, calls, [errors,] syscall
            if len(f) >= 5 and f[3].isdigit() and re.fullmatch(r"[0-9.]+", f[0]):
                calls[f[-1]] = calls.get(f[-1], 0) + int(f[3])
    except (OSError, ValueError):
        return None
    return calls if "total" in calls else None
