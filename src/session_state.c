// SPDX-License-Identifier: BSD-2-Clause
/*
 * The names of a session's states, the one table that the control
 * socket's connection list and its state filter both use.  Its own file
 * so that control_show.c names states without linking session.c.
 */
#include "smcproxyd.h"

/* The name of state st in the control socket's replies and filters. */
const char *
session_state_name(enum session_state st)
{
	static const char *const names[] = {
		[SESSION_CONNECT_PEER] = "connect_peer",
		[SESSION_HELLO] = "hello",
		[SESSION_HANDSHAKE] = "handshake",
		[SESSION_CONNECT_TARGET] = "connect_target",
		[SESSION_RDMA_WAIT] = "rdma_wait",
		[SESSION_RDMA_OPEN] = "rdma_open",
		/* waits for a group again: outside, it is rdma_wait */
		[SESSION_RDMA_REOPEN] = "rdma_wait",
		[SESSION_RELAY] = "relay",
		[SESSION_RESUMING] = "resuming",
		[SESSION_CLOSED] = "closed",
	};

	return names[st];
}
