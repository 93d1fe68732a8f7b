#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): the SMC-R dialect's first steps
# against Linux's own SMC-R client, before any daemon speaks it.  On b,
# tests/tools/ksmcdecline loads the SMC-R TCP option's BPF program
# (src/bpf/smc_opt.bpf.o) into a cgroup of its own, listens on a marked
# socket, reads the CLC PROPOSAL with the standard codec (src/smcr_clc.c) and
# answers it with a DECLINE it encoded, then echoes bytes as plain TCP.
# On a, a kernel SMC client (socat under smcpreload.so) sends a line:
#   - b saw the SYN-ACK echo the option, and the client's PROPOSAL came
#     (the client only sends one after the echo) and decoded: SMC-Rv2,
#     the lane's EID, a's RoCE GID;
#   - the client took the DECLINE: its kernel counts a fallback, not an
#     SMC-R connection, and the line comes back over the same connection.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools
ksmc_setup

PORT=16540
KD=$abs_top_builddir/tests/tools/ksmcdecline
OBJ=$abs_top_builddir/src/bpf/smc_opt.bpf.o
LINE="standard SMC-R said no, TCP goes on"
fail=0

if [ ! -x "$KD" ] || [ ! -f "$OBJ" ]; then
	echo "SKIP: $KD or $OBJ not built (configure found no clang or libbpf)"
	exit 77
fi

listening() {
	ss -ltn | grep -q ":$PORT "
}

if [ "$RXE_HOST" = b ]; then
	"$KD" -l "$RXE_LINK_IP:$PORT" -o "$OBJ" >"$RXE_OUT/ksmcdecline.log" 2>&1 &
	kd=$!
	rxe_wait 20 listening || rxe_die "ksmcdecline did not listen: $(cat "$RXE_OUT/ksmcdecline.log")"
	rxe_signal b-ready
	rxe_await sent 60 || bad "a did not send"
	wait "$kd"
	rc=$?
	sed 's/^/# ksmcdecline: /' "$RXE_OUT/ksmcdecline.log"
	log=$RXE_OUT/ksmcdecline.log
	if grep -q '^the SYN-ACK echoed the option' "$log"; then
		ok "the BPF program echoed the kernel client's SMC-R option"
	else
		bad "no echo of the option"
	fi
	if grep -q "^PROPOSAL .*v1 2, v2 0, .*RoCE GID ::ffff:$RXE_PEER_IP" "$log" &&
		grep -q "^EID $RXE_KSMC_UEID\$" "$log"; then
		ok "the kernel client's PROPOSAL decoded: SMC-Rv2 only, EID $RXE_KSMC_UEID, GID of $RXE_PEER_IP"
	else
		bad "the PROPOSAL did not come or did not decode"
	fi
	if [ "$rc" = 0 ] && grep -q '^DECLINE NOSMCRDEV' "$log" &&
		grep -q "^echoed $((${#LINE} + 1)) bytes as TCP" "$log"; then
		ok "DECLINE sent, then the line echoed as TCP on the same connection"
	else
		bad "ksmcdecline exit $rc"
	fi
else
	rxe_await b-ready 60 || rxe_die "b did not start ksmcdecline"
	succ=$(ksmc_stat clnt_v2_succ)
	fb=$(ksmc_stat fback_clnt)
	out=$(printf '%s\n' "$LINE" | ksmc timeout 20 socat -t 5 - \
		"TCP:$RXE_PEER_IP:$PORT" 2>"$RXE_OUT/socat.log")
	rxe_signal sent
	if [ "$out" = "$LINE" ]; then
		ok "the kernel SMC client's line came back after the DECLINE"
	else
		bad "the line did not come back: '$out' ($(cat "$RXE_OUT/socat.log"))"
	fi
	s=$(($(ksmc_stat clnt_v2_succ) - succ))
	f=$(($(ksmc_stat fback_clnt) - fb))
	if [ "$s" = 0 ] && [ "$f" = 1 ]; then
		ok "a's kernel counts a fallback, no SMC-R connection (clnt_v2_succ +0, fback_clnt +1)"
	else
		bad "a's kernel: clnt_v2_succ +$s (want 0), fback_clnt +$f (want 1)"
	fi
fi
rxe_barrier end-decline 60 || bad "the hosts are out of step at the end"
exit $fail
