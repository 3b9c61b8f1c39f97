/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The "les" generic netlink family: what les.ko and lesctl exchange.
 * docs/pep.md describes the PEP node these messages control.
 *
 * Every command acts on the network namespace of the calling socket.
 * Reading counters and settings is open to all; keys, flows and changes
 * need CAP_NET_ADMIN in that namespace.
 */
#ifndef LES_GENL_H
#define LES_GENL_H

#define LES_GENL_NAME		"les"
#define LES_GENL_VERSION	1

enum les_cmd {
	LES_CMD_UNSPEC,
	LES_CMD_GET_CONFIG,	/* do: the PEP settings and table size */
	LES_CMD_SET_CONFIG,	/* do: change any of the settings given */
	LES_CMD_GET_STATS,	/* do: every counter, by name */
	LES_CMD_GET_KEY,	/* dump: the PEP keys (pep-view SAs) */
	LES_CMD_GET_FLOW,	/* dump: the flow table */
	LES_CMD_FLUSH_FLOWS,	/* do: empty the flow table */
	__LES_CMD_MAX,
};

#define LES_CMD_MAX	(__LES_CMD_MAX - 1)

enum les_attr {
	LES_A_UNSPEC,
	LES_A_HOOK,		/* u8: the netfilter hook is on (1) or off (0) */
	LES_A_MAX_FLOWS,	/* u32: flow table limit, 0 tracks no flow */
	LES_A_IDLE_TIMEOUT,	/* u32: seconds before an idle flow goes */
	LES_A_PEP_MARK,		/* u32: xfrm mark of the PEP keys */
	LES_A_ENCAP_PORT,	/* u16: UDP port of ESP-in-UDP (RFC 3948) */
	LES_A_FLOW_COUNT,	/* u32: flows in the table now */
	LES_A_STAT,		/* nest of LES_STAT_A_*, one per counter */
	LES_A_KEY,		/* nest of LES_KEY_A_* */
	LES_A_FLOW,		/* nest of LES_FLOW_A_* */
	LES_A_PAD,
	LES_A_BACKLOG,		/* u32: header zones that may wait to be opened */
	/* The acceleration engine (docs/accel.md) */
	LES_A_ACCEL,		/* u8: accelerate (1) or only observe (0) */
	LES_A_HOP_IFINDEX,	/* u32: the satellite hop's device, 0 none */
	LES_A_HOP_RATE,		/* u32: kbit/s this PEP sends onto the hop */
	LES_A_FLOW_BUFFER,	/* u32: bytes one direction of a flow may hold */
	LES_A_BUFFER,		/* u32: bytes the namespace may hold */
	LES_A_PEER_BUFFER,	/* u32: bytes the far PEP holds past a window */
	LES_A_HELD,		/* u64: bytes held now (read only) */
	LES_A_ACCEL_FLOWS,	/* u32: flows with engine state now (read only) */
	LES_A_MEM,		/* u64: what is kept, charged against buffer (read only) */
	LES_A_TICK_LATE,	/* u32: % of the last second the tick was overdue (read only) */
	LES_A_LATE,		/* u8: too late to ACK early: no new data taken (read only) */
	__LES_A_MAX,
};

#define LES_A_MAX	(__LES_A_MAX - 1)

enum les_stat_attr {
	LES_STAT_A_UNSPEC,
	LES_STAT_A_NAME,	/* string, as in /proc/net/les_stat */
	LES_STAT_A_VALUE,	/* u64 */
	LES_STAT_A_PAD,
	__LES_STAT_A_MAX,
};

#define LES_STAT_A_MAX	(__LES_STAT_A_MAX - 1)

/* A PEP key: an xfrm state with a pep-view blob and the PEP mark. */
enum les_key_attr {
	LES_KEY_A_UNSPEC,
	LES_KEY_A_FAMILY,	/* u8: AF_INET or AF_INET6 (outer) */
	LES_KEY_A_SADDR,	/* binary, 4 or 16 bytes */
	LES_KEY_A_DADDR,	/* binary, 4 or 16 bytes */
	LES_KEY_A_SPI,		/* u32, host order */
	LES_KEY_A_MARK,		/* u32 */
	LES_KEY_A_MODE,		/* u8: XFRM_MODE_TRANSPORT or _TUNNEL */
	LES_KEY_A_ESN,		/* u8: 1 with extended sequence numbers */
	LES_KEY_A_ENCAP_SPORT,	/* u16: with ESP-in-UDP only */
	LES_KEY_A_ENCAP_DPORT,	/* u16 */
	LES_KEY_A_KEYLEN,	/* u8: AES key bytes */
	LES_KEY_A_EXPIRES,	/* u64: seconds until the hard lifetime ends, 0 none */
	LES_KEY_A_PACKETS,	/* u64: header zones opened */
	LES_KEY_A_BYTES,	/* u64 */
	LES_KEY_A_AUTH_FAILED,	/* u64: header zones that failed ICV2 */
	LES_KEY_A_PAD,
	__LES_KEY_A_MAX,
};

#define LES_KEY_A_MAX	(__LES_KEY_A_MAX - 1)

enum les_flow_state {
	LES_FLOW_SYN_SENT = 1,
	LES_FLOW_SYN_RECV,
	LES_FLOW_ESTABLISHED,
	LES_FLOW_FIN_WAIT,	/* one side sent FIN */
	LES_FLOW_CLOSED,	/* both FINs, or RST */
};

enum les_flow_attr {
	LES_FLOW_A_UNSPEC,
	LES_FLOW_A_FAMILY,	/* u8: AF_INET or AF_INET6 (inner) */
	LES_FLOW_A_STATE,	/* u8: enum les_flow_state */
	LES_FLOW_A_HANDSHAKE,	/* u8: 1 if the SYN was seen */
	LES_FLOW_A_AGE_MS,	/* u64: since the first packet */
	LES_FLOW_A_IDLE_MS,	/* u64: since the last packet */
	LES_FLOW_A_SIDE,	/* nest of LES_SIDE_A_*: initiator, then responder */
	LES_FLOW_A_PAD,
	__LES_FLOW_A_MAX,
};

#define LES_FLOW_A_MAX	(__LES_FLOW_A_MAX - 1)

/*
 * One side of a flow: what that endpoint sent, and the round trip time
 * between the PEP and that endpoint (its data's ACKs come from the other
 * side, so a side's RTT is measured on the other side's data).  Once the
 * acceleration engine has taken the flow (docs/accel.md), what it does
 * with this side's data, whichever side of the hop the PEP is on: as the
 * sender's PEP, early ACKs, the lead, and the copies held until the other
 * side has them, timed from when they leave for the hop (HOP_RTT_*: the
 * PEP -> other side -> PEP round trip, without the wait in the hop lane,
 * or behind a hole, that RTT_* of the other side counts); as the
 * receiver's PEP, what of it is held past the other side's window (OVER).
 */
enum les_side_attr {
	LES_SIDE_A_UNSPEC,
	LES_SIDE_A_ADDR,	/* binary, 4 or 16 bytes */
	LES_SIDE_A_PORT,	/* u16 */
	LES_SIDE_A_SPI,		/* u32: SA of its last packet, host order */
	LES_SIDE_A_ISN,		/* u32: from its SYN, if seen */
	LES_SIDE_A_SEQ,		/* u32: sequence number of its last segment */
	LES_SIDE_A_NEXT,	/* u32: highest sequence number it sent, plus one */
	LES_SIDE_A_ACK,		/* u32: acknowledgment number of its last segment */
	LES_SIDE_A_WIN,		/* u16: window field of its last segment */
	LES_SIDE_A_WSCALE,	/* u8: from its SYN, if any */
	LES_SIDE_A_MSS,		/* u16: from its SYN, if any */
	LES_SIDE_A_SACK,	/* binary: u32 left, right edge pairs, host order */
	LES_SIDE_A_FLAGS,	/* u8: every TCP flag it sent */
	LES_SIDE_A_PACKETS,	/* u64 */
	LES_SIDE_A_BYTES,	/* u64: TCP payload bytes */
	LES_SIDE_A_RETRANS,	/* u64: segments below NEXT (retransmissions) */
	LES_SIDE_A_RTT_US,	/* u32: smoothed RTT, PEP <-> this side */
	LES_SIDE_A_RTT_MIN_US,	/* u32 */
	LES_SIDE_A_RTT_SAMPLES,	/* u32 */
	LES_SIDE_A_PAD,
	LES_SIDE_A_EARLY,	/* u8: 1 if this PEP ACKs its data early */
	LES_SIDE_A_HELD,	/* u32: bytes of its data held as copies */
	LES_SIDE_A_HOP_RTT_US,	/* u32: smoothed, the copies' round trip */
	LES_SIDE_A_HOP_RTT_MIN_US,	/* u32 */
	LES_SIDE_A_HOP_RTT_SAMPLES,	/* u32 */
	LES_SIDE_A_RTO_US,	/* u32: the copies' retransmission timeout */
	LES_SIDE_A_OVER,	/* u32: bytes held past the receiver's window */
	LES_SIDE_A_LEAD,	/* u32: ACKed early, not yet by the receiver */
	__LES_SIDE_A_MAX,
};

#define LES_SIDE_A_MAX	(__LES_SIDE_A_MAX - 1)

#endif /* LES_GENL_H */
