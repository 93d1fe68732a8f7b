/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The statistics catalogue, declared once.  STATS_LIST gives every counter
 * and gauge with its unit and description; SESSION_REASONS gives the close
 * reasons, each of which also has a counter ("close_<reason>"), and
 * clc_wire.h's CLC_DECLINES the decline codes, each of which has a counter
 * per direction ("declines_sent_0x03030002", "declines_received_...", and
 * _unknown for a code not listed).  stats.c generates aggregation, reset,
 * JSON and the schema from these lists.
 *
 * Each worker owns one struct stats and is its only writer: updates are a
 * relaxed load and store, never a locked read-modify-write, and readers on
 * other threads see whole 64-bit values.
 */
#ifndef SMCPROXYD_STATS_H
#define SMCPROXYD_STATS_H

#include <stdint.h>

#include "clc_wire.h"

/* X(name, kind, unit, description) */
#define STATS_LIST(X)                                                          \
	X(conns_accepted, COUNTER, "connections",                              \
	  "client connections accepted on rule listeners")                     \
	X(conns_from_peers, COUNTER, "connections",                            \
	  "connections opened by peers for one of our exports")                \
	X(conns_active, GAUGE, "connections", "proxied connections open now")  \
	X(conns_fallback, COUNTER, "connections",                              \
	  "connections carried over TCP fallback")                             \
	X(conns_rdma, COUNTER, "connections",                                  \
	  "connections carried over an RDMA link group")                       \
	X(conns_rdma_nobufs, COUNTER, "connections",                           \
	  "connections that fell back: no registered buffer to be had")        \
	X(peer_buffer_full, COUNTER, "connections",                            \
	  "connections that fell back: their peer's buffer_share was held")    \
	X(conns_window_timeout, COUNTER, "connections",                        \
	  "connections reset: the peer consumed nothing for tcp_user_timeout " \
	  "with bytes waiting")                                                \
	X(conns_early_aborts, COUNTER, "connections",                          \
	  "connections that ended before their relay, after the peer knew "    \
	  "them: the peer was sent an abort")                                  \
	X(peer_lgr_limit, COUNTER, "handshakes",                               \
	  "link groups declined: the peer had max_lgrs with us already")       \
	X(peer_conns_limit, COUNTER, "connections",                            \
	  "peer opens of an export refused: the peer held its max_conns")      \
	X(conns_lgr_waits, COUNTER, "connections",                             \
	  "client connections that waited for a link group being set up")      \
	X(conns_reopened, COUNTER, "connections",                              \
	  "client connections opened again: the link group their CONN_OPEN "   \
	  "went on ended before the answer")                                   \
	X(rdma_buf_bytes, GAUGE, "bytes",                                      \
	  "send rings and RMB elements registered, in use or idle")            \
	X(rdma_buf_bytes_used, GAUGE, "bytes",                                 \
	  "send rings and RMB elements held by connections now")               \
	X(rdma_ring_bytes, GAUGE, "bytes",                                     \
	  "links' registered message rings (TX slots, receive buffers), "      \
	  "counted in rdma.max_buffer_memory")                                 \
	X(link_nobufs, COUNTER, "events",                                      \
	  "links refused: their rings would pass the worker's share of "       \
	  "rdma.max_buffer_memory, or their kernel host's share of it")        \
	X(tx_bytes, COUNTER, "bytes", "bytes sent towards the peer daemon")    \
	X(rx_bytes, COUNTER, "bytes", "bytes received from the peer daemon")   \
	X(tx_cnt, COUNTER, "requests", "send operations towards the peer")     \
	X(rx_cnt, COUNTER, "requests", "receive operations from the peer")     \
	X(buf_full_cnt, COUNTER, "events",                                     \
	  "reads paused because the connection's buffer was full")             \
	X(conns_refused_limit, COUNTER, "connections",                         \
	  "client connections reset because max_conns was reached")            \
	X(proxy_accepted, COUNTER, "connections",                              \
	  "accept_proxy clients whose PROXY header named the client")          \
	X(proxy_local, COUNTER, "connections",                                 \
	  "accept_proxy clients whose PROXY header named none (LOCAL)")        \
	X(proxy_refused, COUNTER, "connections",                               \
	  "accept_proxy clients reset: no PROXY header, a bad one, or late")   \
	X(export_refused_limit, COUNTER, "connections",                        \
	  "peer opens of an export refused because max_conns was reached")     \
	X(accept_pauses, COUNTER, "events",                                    \
	  "accepting paused for a second: out of descriptors or buffers")      \
	X(worker_msgs_dropped, COUNTER, "connections",                         \
	  "connections reset instead of going to another worker: its queue "   \
	  "was full")                                                          \
	X(srv_hshake_err_cnt, COUNTER, "handshakes",                           \
	  "peer handshakes we refused or that failed on the export side")      \
	X(clnt_hshake_err_cnt, COUNTER, "handshakes",                          \
	  "handshakes to a peer that were refused or failed on the rule side") \
	X(auth_failures, COUNTER, "handshakes",                                \
	  "peers that failed authentication")                                  \
	X(auth_rate_limited, COUNTER, "handshakes",                            \
	  "peer connections dropped by the authentication rate limit")         \
	X(preauth_conns, GAUGE, "connections",                                 \
	  "peer connections open now that have not authenticated yet")         \
	X(preauth_peeks, COUNTER, "calls",                                     \
	  "peeks at a peer port stranger's first bytes (MSG_PEEK)")            \
	X(preauth_refused, COUNTER, "connections",                             \
	  "peer connections reset: preauth_per_source full")                   \
	X(preauth_full, COUNTER, "events",                                     \
	  "peer port stopped accepting for 50 ms: preauth_max strangers held") \
	X(preauth_timeouts, COUNTER, "handshakes",                             \
	  "peer connections that did not authenticate in time or were cut "    \
	  "short")                                                             \
	X(preauth_malformed, COUNTER, "handshakes",                            \
	  "peer connections whose handshake was malformed before they "        \
	  "authenticated")                                                     \
	X(export_denied, COUNTER, "handshakes",                                \
	  "peer requests for an export they may not use")                      \
	X(lgr_created, COUNTER, "events",                                      \
	  "link groups set up (CLC and CONFIRM_LINK done), either role")       \
	X(lgr_terminated, COUNTER, "events",                                   \
	  "link groups ended (idle, deleted by the peer, no link left)")       \
	X(link_up, COUNTER, "events", "links that became active")              \
	X(link_down, COUNTER, "events", "active links that went down")         \
	X(conn_failovers, COUNTER, "connections",                              \
	  "connections moved to another link after theirs went down")          \
	X(conn_failover_failed, COUNTER, "connections",                        \
	  "connections that could not move (no keys for the other link)")      \
	X(conns_resuming, GAUGE, "connections",                                \
	  "connections whose link group ended, waiting to resume now")         \
	X(conns_resumed_rdma, COUNTER, "connections",                          \
	  "connections resumed on a new link group from the exact byte")       \
	X(conns_resumed_tcp, COUNTER, "connections",                           \
	  "connections resumed over TCP: RDMA to the peer could not be had")   \
	X(resume_failed_timeout, COUNTER, "connections",                       \
	  "connections reset: not resumed within resume_timeout")              \
	X(resume_failed_refused, COUNTER, "connections",                       \
	  "connections reset: the peer daemon did not know them (restarted)")  \
	X(resume_failed_peer_gone, COUNTER, "connections",                     \
	  "connections reset: the peer daemon is not running or restarted")    \
	X(resume_failed_protocol, COUNTER, "connections",                      \
	  "connections reset: the peer's stream offsets were out of range")    \
	X(resume_failed_auth, COUNTER, "connections",                          \
	  "connections reset: the peer port did not prove the peer's key")     \
	X(resume_failed_limit, COUNTER, "connections",                         \
	  "connections reset: their peer had max_resuming resuming already")   \
	X(resume_retries, COUNTER, "events",                                   \
	  "CONN_RESUMEs unanswered in time, asked again on a later group")     \
	X(clc_declines_sent, COUNTER, "handshakes",                            \
	  "CLC DECLINEs we sent: RDMA refused, peer falls back to TCP")        \
	X(clc_declines_received, COUNTER, "handshakes",                        \
	  "CLC DECLINEs peers sent us: we fall back to TCP")                   \
	X(llc_protocol_errors, COUNTER, "events",                              \
	  "malformed or unexpected LLC messages (each ends its link group)")   \
	X(busy_polls, COUNTER, "events",                                       \
	  "times a worker polled without sleeping after RDMA data-path work")  \
	X(busy_poll_hits, COUNTER, "events",                                   \
	  "busy polls that found work before their budget ran out")            \
	X(busy_poll_time_us, COUNTER, "microseconds",                          \
	  "time workers spent busy polling (CPU that sleeping would not use)") \
	X(smc_conns, COUNTER, "connections",                                   \
	  "connections accepted on exports' smc_listen (kernel SMC-R "         \
	  "clients)")                                                          \
	X(smc_conns_tcp, COUNTER, "connections",                               \
	  "smc_listen connections relayed to their target as TCP")             \
	X(smc_conns_rdma, COUNTER, "connections",                              \
	  "smc_listen connections relayed over SMC-R link groups")             \
	X(smc_lgrs, COUNTER, "events",                                         \
	  "link groups set up with kernel SMC-R peers (first contact)")        \
	X(smc_delete_rkeys, COUNTER, "events",                                 \
	  "LLC DELETE_RKEYs sent to kernel SMC-R peers as connections ended")  \
	X(smc_add_link_rejects, COUNTER, "events",                             \
	  "second links kernel SMC-R servers offered (LLC ADD_LINK, Linux "    \
	  "before 6.6), refused: one link per group with kernel peers")        \
	X(smc_add_link_none, COUNTER, "events",                                \
	  "ADD_LINKs without a link sent to release 0 kernel SMC-R clients "   \
	  "(Linux before 6.6) after first contact: refused at once, where "    \
	  "no offer costs them 3 s")                                           \
	X(smc_add_link_gid_refused, COUNTER, "events",                         \
	  "second links refused because the kernel SMC-R peer named a GID "    \
	  "of a host other than the group's that kernel_smc.allow lacks")      \
	X(smc_lgr_joins, COUNTER, "connections",                               \
	  "connections with kernel SMC-R peers on a link group they had "      \
	  "already (either role)")                                             \
	X(relay_reads, COUNTER, "calls",                                       \
	  "reads of relayed TCP sockets into send rings (RDMA)")               \
	X(autocork_door, COUNTER, "corks",                                     \
	  "times a relayed socket was left unread while its connection's "     \
	  "CDCs were in flight (autocork at the door)")                        \
	X(smc_budget_pending, COUNTER, "handshakes",                           \
	  "kernel SMC-R connections declined MEM (either role): "              \
	  "kernel_smc.max_pending groups were not yet up on the worker")       \
	X(smc_budget_host_pending, COUNTER, "handshakes",                      \
	  "kernel SMC-R connections declined MEM: their host had "             \
	  "kernel_smc.max_pending_per_host groups not yet up")                 \
	X(smc_budget_host_lgrs, COUNTER, "handshakes",                         \
	  "kernel SMC-R connections declined MEM: their host had "             \
	  "kernel_smc.max_lgrs_per_host groups")                               \
	X(smc_budget_host_conns, COUNTER, "handshakes",                        \
	  "kernel SMC-R connections declined MEM: their host had "             \
	  "kernel_smc.max_conns_per_host connections")                         \
	X(smc_budget_host_memory, COUNTER, "handshakes",                       \
	  "kernel SMC-R connections declined MEM: their host held its "        \
	  "kernel_smc.buffer_share_per_host of registered memory")             \
	X(smc_join_foreign, COUNTER, "handshakes",                             \
	  "joins refused: the kernel peer named a link group we have with "    \
	  "another host")                                                      \
	X(smc_opt_echoed, COUNTER, "connections",                              \
	  "smc_listen connections whose SYN carried the SMC-R option, "        \
	  "echoed: a CLC PROPOSAL was owed")                                   \
	X(smc_opt_absent, COUNTER, "connections",                              \
	  "smc_listen connections whose SYN lacked the SMC-R option: "         \
	  "plain TCP")                                                         \
	X(smc_opt_unavailable, COUNTER, "connections",                         \
	  "smc_listen connections taken as plain TCP: the option's BPF "       \
	  "program is not attached")                                           \
	X(smc_rate_limited, COUNTER, "handshakes",                             \
	  "smc_listen PROPOSALs declined CNFERR at once: the client's host "   \
	  "failed too many handshakes (the peer port's rate table)")           \
	X(smc_proposals, COUNTER, "handshakes",                                \
	  "CLC PROPOSALs read from kernel SMC-R clients")                      \
	X(smc_accepts, COUNTER, "handshakes",                                  \
	  "CLC ACCEPTs sent to kernel SMC-R clients (a link group offered)")   \
	X(smc_confirms, COUNTER, "handshakes",                                 \
	  "CLC CONFIRMs received from kernel SMC-R clients")                   \
	X(smc_declines_sent, COUNTER, "handshakes",                            \
	  "standard CLC DECLINEs we sent: the client goes on as TCP")          \
	X(smc_declines_received, COUNTER, "handshakes",                        \
	  "standard CLC DECLINEs kernel SMC-R clients sent us instead of "     \
	  "a PROPOSAL")                                                        \
	X(smc_decline_malformed, COUNTER, "handshakes",                        \
	  "declined: the PROPOSAL did not decode (its own diagnosis code)")    \
	X(smc_out_limited, COUNTER, "handshakes",                              \
	  "target_smc connections declined at once, no PROPOSAL: the "         \
	  "server's host failed too many handshakes")                          \
	X(smc_decline_allow, COUNTER, "handshakes",                            \
	  "declined CNFERR: the client's address is not in "                   \
	  "kernel_smc.allow")                                                  \
	X(smc_decline_mode, COUNTER, "handshakes",                             \
	  "declined MODEUNSUPP: the client offered no SMC-Rv2")                \
	X(smc_decline_eid, COUNTER, "handshakes",                              \
	  "declined NOSMCDEV: none of the client's EIDs is in "                \
	  "kernel_smc.ueids")                                                  \
	X(smc_decline_gid, COUNTER, "handshakes",                              \
	  "declined NOROUTE: the client's RoCE v2 GID is not the address "     \
	  "it connected from")                                                 \
	X(smc_decline_nodev, COUNTER, "handshakes",                            \
	  "declined NOSMCRDEV or MEM: a good PROPOSAL, but no RDMA device "    \
	  "for its address or no buffers left")                                \
	X(smc_clc_malformed, COUNTER, "handshakes",                            \
	  "smc_listen connections reset: no CLC message where the option "     \
	  "promised one")                                                      \
	X(smc_clc_timeouts, COUNTER, "handshakes",                             \
	  "smc_listen connections reset: no PROPOSAL, or no CONFIRM after "    \
	  "our ACCEPT, within 6 s")                                            \
	X(intercept_conns, COUNTER, "connections",                             \
	  "connections the intercept programs took to an intercept rule, "     \
	  "with their original destination")                                   \
	X(intercept_strays, COUNTER, "connections",                            \
	  "connections on an intercept rule's listener that the programs "     \
	  "did not take there: reset")                                         \
	X(smc_out_conns, COUNTER, "connections",                               \
	  "connections of target_smc rules to their kernel SMC-R server")      \
	X(smc_out_tcp, COUNTER, "connections",                                 \
	  "of those, connections relayed as TCP")                              \
	X(smc_out_echoed, COUNTER, "connections",                              \
	  "target_smc connections whose server echoed the SMC-R option: a "    \
	  "PROPOSAL was owed")                                                 \
	X(smc_out_plain, COUNTER, "connections",                               \
	  "target_smc connections whose server did not echo the option: "      \
	  "plain TCP")                                                         \
	X(smc_out_unavailable, COUNTER, "connections",                         \
	  "target_smc connections made without the option: its BPF "           \
	  "program is not attached")                                           \
	X(smc_out_proposals, COUNTER, "handshakes",                            \
	  "CLC PROPOSALs we sent to kernel SMC-R servers")                     \
	X(smc_out_lgrs, COUNTER, "events",                                     \
	  "link groups set up with kernel SMC-R servers (first contact)")      \
	X(smc_out_rdma, COUNTER, "connections",                                \
	  "target_smc connections relayed over SMC-R link groups")             \
	X(smc_out_confirms, COUNTER, "handshakes",                             \
	  "CLC CONFIRMs sent to kernel SMC-R servers")                         \
	X(smc_out_accepts, COUNTER, "handshakes",                              \
	  "CLC ACCEPTs kernel SMC-R servers answered our PROPOSALs with")      \
	X(smc_out_declines_received, COUNTER, "handshakes",                    \
	  "CLC DECLINEs kernel SMC-R servers answered our PROPOSALs with")     \
	X(smc_out_decline_nodev, COUNTER, "handshakes",                        \
	  "declined to a server: no RDMA device or buffers for its ACCEPT, "   \
	  "NOSMCRDEV over IPv6, NOUEID without ueids")                         \
	X(smc_out_decline_sync, COUNTER, "handshakes",                         \
	  "declined SYNCERR: the server's ACCEPT named a link group we do "    \
	  "not have")                                                          \
	X(smc_out_decline_gid, COUNTER, "handshakes",                          \
	  "declined NOROUTE: the server's RoCE v2 GID is not the address we "  \
	  "connected to")                                                      \
	X(smc_out_decline_bad, COUNTER, "handshakes",                          \
	  "declined: the server's ACCEPT did not decode (its own code)")       \
	X(smc_out_malformed, COUNTER, "handshakes",                            \
	  "target_smc connections reset: no CLC ACCEPT or DECLINE where "      \
	  "one was owed")                                                      \
	X(smc_out_timeouts, COUNTER, "handshakes",                             \
	  "target_smc connections reset: no answer to our PROPOSAL within "    \
	  "6 s")                                                               \
	X(monitor_dropped, COUNTER, "connections",                             \
	  "monitor clients dropped: they left 64 KiB of events unread, or "    \
	  "took nothing for 30 s")                                             \
	X(monitor_events_lost, COUNTER, "events",                              \
	  "monitor events lost: more than 1024 waited for the main thread")

/* X(id, name, description) */
#define SESSION_REASONS(X)                                                     \
	X(CLIENT_FIN, "client_fin", "client finished sending first")           \
	X(TARGET_FIN, "target_fin", "target finished sending first")           \
	X(CLIENT_RST, "client_rst", "client reset the connection")             \
	X(TARGET_RST, "target_rst", "target reset the connection")             \
	X(PEER_RST, "peer_rst", "the peer daemon's connection was reset")      \
	X(TARGET_REFUSED, "target_refused", "target refused the connection")   \
	X(TARGET_TIMEOUT, "target_timeout", "target did not answer in time")   \
	X(TARGET_UNREACHABLE, "target_unreachable",                            \
	  "target address unreachable")                                        \
	X(PEER_UNREACHABLE, "peer_unreachable",                                \
	  "peer daemon could not be reached")                                  \
	X(PEER_TIMEOUT, "peer_timeout", "peer daemon did not answer in time")  \
	X(EXPORT_DENIED, "export_denied", "peer may not use that export")      \
	X(UNKNOWN_EXPORT, "unknown_export", "no such export at the peer")      \
	X(UNKNOWN_PEER, "unknown_peer", "connection from an unknown peer")     \
	X(AUTH_FAILED, "auth_failed", "peer authentication failed")            \
	X(PROTOCOL_ERROR, "protocol_error", "malformed message from the peer") \
	X(LINK_FAILED, "link_failed", "transport to the peer failed")          \
	X(IDLE_TIMEOUT, "idle_timeout", "no traffic for the idle timeout")     \
	X(ADMIN_KILL, "admin_kill", "killed by an operator")                   \
	X(SHUTDOWN, "shutdown", "daemon shut down")                            \
	X(RESOURCE, "resource", "out of memory or file descriptors")           \
	X(RESUME_FAILED, "resume_failed",                                      \
	  "its link group ended and it could not be resumed")

enum session_reason {
#define X(id, name, desc) SESSION_##id,
	SESSION_REASONS(X)
#undef X
		SESSION_NREASONS
};

enum stats_kind { STATS_COUNTER, STATS_GAUGE };

enum stats_id {
#define X(name, kind, unit, desc) STAT_##name,
	STATS_LIST(X)
#undef X
		STAT_CLOSE_BASE,
	/* per decline code, CLC_DECL_NCODES the unlisted ones */
	STAT_DECL_SENT_BASE = STAT_CLOSE_BASE + SESSION_NREASONS,
	STAT_DECL_RECEIVED_BASE = STAT_DECL_SENT_BASE + CLC_DECL_NCODES + 1,
	STAT_N = STAT_DECL_RECEIVED_BASE + CLC_DECL_NCODES + 1
};

struct stats {
	uint64_t v[STAT_N];
} __attribute__((aligned(64)));

/* Single writer: the owning worker.  Never a locked instruction. */
static inline void
stats_add(struct stats *st, enum stats_id id, int64_t n)
{
	uint64_t v = __atomic_load_n(&st->v[id], __ATOMIC_RELAXED);

	__atomic_store_n(&st->v[id], v + (uint64_t)n, __ATOMIC_RELAXED);
}

static inline uint64_t
stats_read(const struct stats *st, enum stats_id id)
{
	return __atomic_load_n(&st->v[id], __ATOMIC_RELAXED);
}

/*
 * Count a DECLINE with code that we sent or received, either dialect
 * (clc.c, smcr.c): the total and the code's own.
 */
static inline void
stats_decline(struct stats *st, uint32_t code, bool sent)
{
	stats_add(st,
		  sent ? STAT_clc_declines_sent : STAT_clc_declines_received,
		  1);
	stats_add(st,
		  (sent ? STAT_DECL_SENT_BASE : STAT_DECL_RECEIVED_BASE) +
			  clc_decline_index(code),
		  1);
}

#define STATS_INC(st, name) stats_add((st), STAT_##name, 1)
#define STATS_DEC(st, name) stats_add((st), STAT_##name, -1)
#define STATS_ADD(st, name, n) stats_add((st), STAT_##name, (n))

#endif /* SMCPROXYD_STATS_H */
