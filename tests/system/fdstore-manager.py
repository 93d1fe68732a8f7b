#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""What a restart needs of systemd's service manager, for the system tests.

A notify socket that keeps the descriptors a daemon sends with FDSTORE=1
under their FDNAME= (one copy of each socket, as systemd keeps them),
closes the ones named by FDSTOREREMOVE=1, and starts the daemon with what
it holds the way systemd does: from descriptor 3 on, with LISTEN_FDS,
LISTEN_PID and LISTEN_FDNAMES, nothing else inherited.

usage: fdstore-manager.py DIR COMMAND...

It reads lines from the FIFO DIR/cmd: "start" starts COMMAND (stdout and
stderr appended to DIR/daemon.log, NOTIFY_SOCKET=DIR/notify.sock), "flush"
closes everything stored (systemd does so when a unit stops without a
restart).  It writes each message it gets as one line to DIR/notify.log
("|" for newlines, then " fds=N" when it carried descriptors); DIR/store,
after each change: one line per stored socket, "NAME PORT"; DIR/pid: the
pid of the daemon it started last; DIR/exits: "PID STATUS" as each ends.
"""
import fcntl
import os
import select
import socket
import sys


def write_file(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def main():
    d, cmd = sys.argv[1], sys.argv[2:]
    notify_path = os.path.join(d, "notify.sock")
    note = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    note.bind(notify_path)
    os.mkfifo(os.path.join(d, "cmd"))
    fifo = os.open(os.path.join(d, "cmd"), os.O_RDWR | os.O_NONBLOCK)
    log = open(os.path.join(d, "notify.log"), "a", buffering=1)
    store = []  # [name, fd, (st_dev, st_ino)]
    pending = b""

    def save():
        lines = []
        for name, fd, _ in store:
            try:
                port = socket.socket(fileno=os.dup(fd))
                p = port.getsockname()[1]
                port.close()
            except OSError:
                p = "?"
            lines.append("%s %s\n" % (name, p))
        write_file(os.path.join(d, "store"), "".join(lines))

    def start():
        log_fd = os.open(os.path.join(d, "daemon.log"),
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        pid = os.fork()
        if pid:
            os.close(log_fd)
            write_file(os.path.join(d, "pid"), "%d\n" % pid)
            return
        try:
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000 + i)
                    for i, (_, fd, _) in enumerate(store)]
            for i, fd in enumerate(high):
                os.dup2(fd, 3 + i, inheritable=True)
            os.closerange(3 + len(store), 65536)
            env = dict(os.environ)
            env["NOTIFY_SOCKET"] = notify_path
            if store:
                env["LISTEN_FDS"] = str(len(store))
                env["LISTEN_PID"] = str(os.getpid())
                env["LISTEN_FDNAMES"] = ":".join(n for n, _, _ in store)
            os.execvpe(cmd[0], cmd, env)
        finally:
            os._exit(127)

    def message():
        msg, fds, _, _ = socket.recv_fds(note, 4096, 16)
        text = msg.decode(errors="replace")
        log.write(text.replace("\n", "|") +
                  (" fds=%d" % len(fds) if fds else "") + "\n")
        fields = dict(line.split("=", 1) for line in text.split("\n")
                      if "=" in line)
        name = fields.get("FDNAME", "stored")
        if fields.get("FDSTORE") == "1":
            for fd in fds:
                st = os.fstat(fd)
                key = (st.st_dev, st.st_ino)
                if any(k == key for _, _, k in store):
                    os.close(fd)
                else:
                    store.append([name, fd, key])
            save()
            return
        for fd in fds:
            os.close(fd)
        if fields.get("FDSTOREREMOVE") == "1":
            for item in [s for s in store if s[0] == name]:
                os.close(item[1])
                store.remove(item)
            save()

    save()
    while True:
        r, _, _ = select.select([note, fifo], [], [], 0.1)
        if note in r:
            message()
        if fifo in r:
            pending += os.read(fifo, 4096)
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line == b"start":
                    start()
                elif line == b"flush":
                    for _, fd, _ in store:
                        os.close(fd)
                    store.clear()
                    save()
        try:
            while True:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                with open(os.path.join(d, "exits"), "a") as f:
                    f.write("%d %d\n" % (pid, os.waitstatus_to_exitcode(
                        status)))
        except ChildProcessError:
            pass


main()
