/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The acceleration engine (docs/accel.md): what a PEP does with the TCP
 * flows it reads, once `lesctl pep set accel on` names the satellite hop.
 *
 * Per flow and per direction of data, a PEP is on the sender's side (the
 * data leaves it onto the hop: early ACKs, held copies, pacing, recovery:
 * early_ack.c, hold.c, pace.c) or on the receiver's side (the data came
 * off the hop: holding past the receiver's window: receiver.c).  Packets a
 * PEP makes go out on PEP-origin SAs (origin.c).  Everything runs in the
 * namespace's opener (pep.c), under the flow table's lock, except the
 * pacer's timer and the sending of what a batch decided.
 */
#ifndef LES_ACCEL_H
#define LES_ACCEL_H

#include <linux/hrtimer.h>
#include <linux/list.h>
#include <linux/netfilter.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <net/xfrm.h>

#include "les_wire.h"
#include "rtt.h"

struct les_pep_net;
struct les_flow;
struct les_flow_table;
struct les_pep_pkt;
struct les_sa;

/* Settings (lesctl pep set); the defaults fit 10 Mbit/s x 600 ms (750 kB). */
#define LES_ACCEL_FLOW_BUFFER_DEFAULT	(2U << 20)
#define LES_ACCEL_BUFFER_DEFAULT	(64U << 20)
#define LES_ACCEL_BUFFER_MAX		(1024U << 20)
#define LES_ACCEL_RATE_MAX		(100U * 1000 * 1000)	/* kbit/s */
/* The pacer sends at this share of the hop's rate (link framing, drift). */
#define LES_ACCEL_PACE_PERMILLE		970
/* Retransmission timer: twice the hop's RTT, within these. */
#define LES_ACCEL_RTO_MIN_MS		200
#define LES_ACCEL_RTO_MAX_MS		60000
/*
 * The timer's rounds that leave what the far PEP holds past a window to it
 * (early_ack.c): the oldest copy's timeouts before they resend it too.
 */
#define LES_ACCEL_FAR_HOLD_ROUNDS	3
#define LES_ACCEL_TICK_MS		10
/*
 * The share of a window the tick spent overdue by more than a quarter of
 * the shortest retransmission timeout, past which the engine ACKs no new
 * data early, and at most which it takes data again (accel.c): on a host
 * that cannot run the engine's timers (a starved CPU, an emulated machine
 * that loses its timer interrupts) its resends come late, and the
 * endpoints' own TCP should recover their losses instead.  Less late, a
 * tick harms nothing: a slow kernel's often is, by a few ms.
 */
#define LES_ACCEL_LATE_WINDOW_MS	1000
#define LES_ACCEL_LATE_GRACE_MS		(LES_ACCEL_RTO_MIN_MS / 4)
#define LES_ACCEL_LATE_PCT		50
#define LES_ACCEL_ON_TIME_PCT		25
/* Flows with no work for the tick it looks at per tick, for keys gone. */
#define LES_ACCEL_SWEEP			64
/* Packets of an SA the LAN may reorder, on top of the hop's (accel.c). */
#define LES_ACCEL_REORDER_SLACK		128
/*
 * How many retransmission timeouts an SA waits for a copy before that
 * copy's flow is let go (pace.c); the copy is resent each timeout
 * meanwhile, so three resends lost in a row are covered.
 */
#define LES_ACCEL_GUARD_RTOS		4
#define LES_ACCEL_GUARD_MIN_MS		1000
/*
 * How long a flow that holds data ACKed early outlives its last packet
 * (flow.c), and one whose far PEP may hold some its newest data off the hop
 * (receiver.c): about as long as the sender's TCP would have kept
 * resending it (tcp_retries2's 15 resends, 924 s at the least timeout).
 */
#define LES_ACCEL_HOLD_TIMEOUT_S	900
/* How long a key that went keeps reading for the data it held (drain.c). */
#define LES_DRAIN_MAX_MS		30000
#define LES_VIEW_HASH_BITS		6
#define LES_HOP_LANE_BITS		6
/* A key that went is kept this long after the newest data (drain.c). */
#define LES_RCV_QUIET_MS		2000
/* ACK thinning: a receiver's pure ACK waits at most this, or this much data. */
#define LES_THIN_MS			20
#define LES_THIN_SEGMENTS		8
/*
 * A receiver that shows no window for the packets held past it is probed
 * after this (and twice its LAN round trip), backing off to 16 times it.
 */
#define LES_RCV_PROBE_MS		200
#define LES_RCV_PROBE_BACKOFF_MAX	4
/*
 * A window update that may have been lost on its way to the far PEP: the
 * receiver is probed at most this many times for it (after twice the
 * round trip to the sender, doubling), each answer sent on.
 */
#define LES_RCV_UPDATE_PROBES		3

struct les_accel_cfg {
	bool on;
	int hop_ifindex;	/* the satellite hop's device, 0: none */
	u32 hop_rate;		/* kbit/s this PEP sends onto the hop */
	u32 flow_buffer;	/* bytes one direction of a flow may hold */
	u32 buffer;		/* bytes the namespace may hold */
	u32 peer_buffer;	/* bytes the far PEP holds past a receiver's window */
};

/* A packet the engine holds: its bytes are never changed (BRIEF D3). */
struct les_held {
	struct list_head node;	/* on its direction's held or over list */
	/*
	 * On its SA's hop lane until first sent (pace.c), with @dir; a
	 * packet that only passes through waits there too, as a node of
	 * its own with no @dir.
	 */
	struct list_head wait;
	struct les_accel_dir *dir;
	bool waiting;
	struct sk_buff *skb;	/* as received; sent as clones */
	u32 cost;		/* charged against `buffer` (hold.c) */
	/*
	 * A packet passing through whose header zone was not authenticated
	 * (or was a replay): its sequence number steers nothing (pace.c).
	 */
	bool unread;
	u32 seq, end;		/* the TCP data it carries */
	u32 tsval;		/* its sender's TSval */
	/*
	 * When it last leaves for the hop, as the pacer's queue lets it (a
	 * little ahead of now), 0: not yet.  @beyond_window: then past the
	 * receiver's window, for the far PEP to hold (its ACK untimed).
	 */
	ktime_t sent;
	bool beyond_window;
	u8 tx;			/* times sent */
	u8 timeouts;		/* of which the timer's: its backoff */
	bool sacked;
	bool sack_resent;	/* last sent by SACK recovery (early_ack.c) */
	/*
	 * An ACK of it may be of an earlier sending, so it times nothing and
	 * proves no timeout spurious: its data went on unheld once before
	 * (the sender sent it again), or its SACK mark was taken back
	 * (reneging, early_ack.c) when the receiver may have had it.
	 */
	bool untimed;
	/*
	 * Older than a resend of the sender's passed below it: the ACK point
	 * waits at it until the receiver has it (early_ack.c).
	 */
	bool behind;
	/*
	 * Out on the hop and not yet ACKed by the receiver: on its lane's
	 * replay guard (pace.c) with the ESP sequence number it carries, or
	 * @lane NULL.
	 */
	struct list_head guard;
	struct les_hop_lane *lane;
	u32 esp_seq;
};

/* One direction of data of an accelerated flow, indexed by its sender. */
struct les_accel_dir {
	/* Sender's side: this PEP sends the data onto the hop. */
	bool early;		/* early-ACKing */
	/*
	 * Taken mid-stream: data from @start on is held, but the receiver's
	 * ACKs for what was in flight before it go to the sender, and no ACK
	 * of ours, until the receiver has ACKed @start (accel.c).
	 */
	bool late;
	u32 start;
	bool ack_due;		/* an early ACK waits for the batch's end */
	bool rto_unanswered;	/* the timer resent, no receiver ACK since */
	/*
	 * Loss recovery (early_ack.c): the copies out below @loss_high at
	 * the timeout @loss_at are taken as lost; @loss_go: the receiver
	 * has ACKed new data since, and they go again; @loss_paced: the
	 * pacer's room ran out, the tick goes on.
	 */
	bool loss;
	bool loss_go;
	bool loss_paced;
	ktime_t loss_at;
	u32 loss_high;
	/* The receiver's right edge a round trip or two ago, and since. */
	u32 edge_old, edge_new;
	ktime_t edge_new_at;
	u32 ack_point;		/* data below it is held or delivered: ACKed */
	u32 adv_edge;		/* right edge advertised to the sender */
	bool ts;		/* the flow uses timestamps */
	u32 tsecr;		/* the sender's TSval of the newest in-order data */
	bool ts_sent_valid;
	u32 ts_sent;		/* the TSval of our newest ACK to the sender */
	/* The newest TSval of data sent on toward the receiver, and when. */
	bool ts_passed_valid;
	u32 ts_passed;
	unsigned long ts_passed_at;
	/*
	 * Since then, the furthest sequence number sent on, and the newest
	 * TSval of data that may be below a copy held under it later: data
	 * sent on below it, before a hole opened, or before data that went
	 * on unheld (les_early_ts_held()).
	 */
	u32 ts_high;
	u32 ts_below;
	struct list_head held;	/* by sequence number */
	u32 held_bytes;
	bool unheld;		/* data up to @unheld_end went on unheld */
	u32 unheld_end;
	u32 rcv_ack;		/* the receiver's own cumulative ACK */
	u32 rcv_edge;		/* and its right edge */
	bool rcv_known;
	bool reneged;		/* marks were taken back: copies may be lost */
	u8 dupacks;
	ktime_t reneged_at;	/* @rcv_ack first seen at a SACKed copy, or 0 */
	/*
	 * SACK recovery's reordering window, widened past a quarter round
	 * trip when a resend proves needless, back to a quarter after 16
	 * round trips with resends (RFC 8985 6.2; early_ack.c).
	 */
	u32 reo_us;
	u8 reo_persist;
	ktime_t reo_counted;	/* the last round trip @reo_persist counted */
	ktime_t reo_grown;	/* when it last grew by a quarter */
	/*
	 * The hop's round trip as the copies see it, from when one left for
	 * the hop to the receiver's ACK or SACK of it, copies sent once only
	 * (Karn): the flow's own (flow.c) runs from when data reaches us to
	 * its cumulative ACK, so counts its wait in the hop lane, and behind
	 * a hole (docs/accel.md 3).
	 */
	struct les_rtt hop_rtt;
	/*
	 * For the replay guard (pace.c): the receiver's replay window, in
	 * packets of the SA (its pep-view key's, never 0), and the
	 * copies' retransmission timeout.  @unguarded: a wait for one of
	 * them ran out and the SA went on; until all it held is ACKed.
	 */
	u32 replay_window;
	u32 rto_us;
	bool unguarded;
	struct xfrm_state *origin;	/* PEP-origin SA toward the sender */
	/*
	 * The pep-view key of this side's newest packet: it reads this side's
	 * data, and the ACKs for the other side's (drain.c).
	 */
	struct les_view *view;
	/* Receiver's side: the data came off the hop. */
	struct list_head over;	/* past the receiver's window, in order */
	u32 over_bytes;
	unsigned long off_hop;	/* jiffies | 1: the newest data, or 0 */
	/*
	 * Probing the receiver for its window (receiver.c): on a PEP-origin
	 * SA toward it, when the held packets have not moved for a while.
	 */
	struct xfrm_state *probe_origin;
	ktime_t over_moved;	/* last release, or first hold */
	u8 probes;		/* sent since then */
	bool probe_due;		/* a probe waits for the batch's end */
	bool probe_out;		/* sent, its answer not seen yet */
	/*
	 * A window update lost on the hop (receiver.c): data stopped coming
	 * with the receiver's window open past it.  The answer to such a
	 * probe goes on.
	 */
	bool update_probe;	/* the probe due or out is of this kind */
	u8 update_probes;	/* sent since the newest data or opening */
	u32 hop_end;		/* end of the newest data off the hop */
	u32 update_edge;	/* the receiver's right edge then, or since */
	ktime_t update_since;	/* the newest data or opening, 0: no data */
	/* ACK thinning: the receiver's newest pure ACK, waiting to go. */
	struct sk_buff *thin_skb;
	ktime_t thin_since;
	u32 thin_ack;
	u32 fwd_ack;		/* the last ACK of the receiver let through */
	u16 fwd_win;
	bool fwd_valid;
};

struct les_accel_flow {
	struct list_head node;		/* on les_accel_net.flows */
	struct list_head ack_node;	/* on les_accel_net.ack_due */
	struct list_head timed;		/* on les_accel_net.timed */
	struct les_flow *flow;
	struct les_accel_dir dir[2];	/* indexed like les_flow.key.end */
};

/* What the opener does with the packets and ACKs of a batch, in order. */
struct les_accel_todo {
	struct sk_buff_head release;	/* forward now */
	struct sk_buff_head pace;	/* onto the hop, paced */
	struct sk_buff_head drop;	/* absorbed */
	bool absorbed;			/* the packet read is in @drop */
	unsigned int pace_bytes;
	struct les_pacer *pacer;	/* where @pace goes */
};

/*
 * What waits to go onto the hop for one SA, in arrival order (pace.c): the
 * SA's sequence numbers must reach its receiver in about that order, other
 * SAs' need not wait behind them.  And its replay guard: the copies out on
 * the hop that its receiver has not ACKed, oldest first; none of the SA's
 * packets goes so far ahead of them that the receiver's xfrm would refuse
 * their resends.
 */
struct les_hop_lane {
	struct hlist_node hnode;	/* in les_accel_net.lanes, by SPI */
	struct list_head busy;		/* on les_accel_net.hop_busy */
	struct list_head queue;		/* of les_held.wait */
	struct list_head guard;		/* of les_held.guard */
	/* Packets that only pass, waiting here: bounded (pace.c). */
	u32 pass_bytes;
	u32 pass_packets;
	u32 guard_limit;		/* packets ahead of the oldest, at most */
	/*
	 * The copy the SA waits for, the sequence number the wait first held
	 * back, since when (0: none); and that number of the last wait that
	 * let a flow go, while copies sent before it are on the guard: they
	 * were out through that wait (pace.c).
	 */
	u32 guard_seq;
	u32 guard_held;
	u32 gone_held;
	ktime_t guard_since;
	__be32 spi;
	bool gone;
};

struct les_pacer {
	spinlock_t lock;	/* everything below but the timer */
	struct sk_buff_head q;
	struct hrtimer timer;
	struct net *net;
	ktime_t next;		/* earliest time of the next packet */
	s64 late_avg_ns;	/* how late the timer fires, smoothed */
	u32 rate;		/* kbit/s, 0: no pacing */
	unsigned int bytes;	/* queued */
	bool armed;		/* the timer will run */
};

/*
 * What the pacer keeps queued at most, in time at its rate: a held copy is
 * sent when the link can take it (its retransmission timer then starts
 * when it really leaves), and a resent copy does not wait behind seconds
 * of queue.  More than the engine's tick, so the link never idles.
 */
#define LES_PACER_QUEUE_MS	60
#define LES_PACER_QUEUE_MIN	(16U << 10)
/*
 * How late the pacer may make up for, in time: twice how late its timer
 * fires, this much at least, and at most LES_PACER_QUEUE_MS (pace.c).
 */
#define LES_PACER_SLACK_MIN_US	2000
/*
 * What a hop lane keeps of the packets that only pass (not copies this
 * PEP holds): this long at the hop's rate, this many packets.  Beyond it
 * they are dropped, as a qdisc drops at its limit: none is ACKed early,
 * their senders send again.
 */
#define LES_HOP_LANE_MS		200
#define LES_HOP_LANE_MIN	(64U << 10)
#define LES_HOP_LANE_PACKETS	1000
/* The least a packet kept costs (hold.c): `buffer` caps packets too. */
#define LES_ACCEL_PKT_COST_MIN	1024

struct les_accel_net {
	struct les_accel_cfg cfg;	/* written under the PEP's cfg_lock */
	/* Flows with engine state: the hook takes packets while there are. */
	atomic_t active;
	struct delayed_work tick;	/* timers, orphans */
	/*
	 * The tick's timing (accel.c): when the run that has not read it
	 * yet is due (0: none; atomic ops, not the lock), whether it stopped
	 * since it last ran, the window it is measured in and how long it
	 * was overdue there (jiffies), the last window's share overdue (%),
	 * and whether that is too late to ACK early.
	 */
	unsigned long tick_due;
	bool tick_stopped;
	unsigned long late_since;
	unsigned long late_sum;
	u32 late_pct;
	bool late;
	struct list_head flows;		/* accelerated flows: flow table lock */
	/* Flows the tick has work for: a packet puts one here (accel.c). */
	struct list_head timed;
	/*
	 * What goes onto the hop, a lane per SA (pace.c), and the lanes with
	 * packets waiting, taken in turn: flow table lock.
	 */
	struct hlist_head lanes[1 << LES_HOP_LANE_BITS];
	struct list_head hop_busy;
	struct list_head ack_due;	/* flows with an early ACK to send */
	/*
	 * The opener reads a batch (flow table lock): early ACKs wait for
	 * its end, so that none overtakes the receiver's older segments the
	 * batch still has to forward (their TSvals would be older: PAWS).
	 */
	bool batching;
	/*
	 * Flow table lock: the data held (copies, and past windows), and what
	 * the packets kept cost (those, and what waits in lanes: hold.c),
	 * charged against cfg.buffer.
	 */
	u64 held_bytes;
	u64 mem;
	/*
	 * A far PEP has sent data past a receiver's window here (receiver.c):
	 * flow table lock, like every reader.
	 */
	bool held_past_window;
	struct les_pacer pacer;
	/* FORWARD's own continuation, per family (pace.c). */
	int (*fwd_okfn[2])(struct net *net, struct sock *sk, struct sk_buff *skb);
	/* Packets of flows that went away, to be forwarded by the opener. */
	struct sk_buff_head orphans;
	/* PEP-origin SAs of the namespace (origin.c). */
	spinlock_t origin_lock;
	struct list_head origin_sas;
	/* The pep-view keys flows read with (drain.c): flow table lock, RCU. */
	struct hlist_head views[1 << LES_VIEW_HASH_BITS];
	unsigned int nr_views;
};

/*
 * The packet being read goes no further: its receiver has, or will have
 * from us, all it says.  The opener marks its sequence number so that a
 * copy of it, which the receiver's xfrm never saw, goes no further either.
 */
static inline void les_accel_absorb(struct les_accel_todo *todo,
				    struct sk_buff *skb)
{
	__skb_queue_tail(&todo->drop, skb);
	todo->absorbed = true;
}

/* accel.c: from the opener */
void les_accel_net_init(struct les_pep_net *pn);
void les_accel_net_exit(struct les_pep_net *pn);
void les_accel_todo_init(struct les_accel_todo *todo, struct les_pacer *pacer);
void les_accel_packet(struct les_pep_net *pn, struct les_flow *f,
		      unsigned int from, const struct les_pep_pkt *pkt,
		      struct sk_buff *skb, struct xfrm_state *view, bool to_hop,
		      struct les_accel_todo *todo);
void les_accel_batch_start(struct les_pep_net *pn);
void les_accel_batch_end(struct les_pep_net *pn, struct les_accel_todo *todo);
void les_accel_flow_free(struct les_pep_net *pn, struct les_flow *f);
void les_accel_flow_reset(struct les_pep_net *pn, struct les_flow *f,
			  unsigned int from, const struct les_tcp_seg *seg);
bool les_accel_flow_busy(const struct les_flow_table *t,
			 const struct les_flow *f);
void les_accel_early_stop(struct les_accel_dir *d);
void les_accel_tick_queue(struct les_accel_net *an, unsigned long delay,
			  bool reset);
void les_accel_release(struct les_accel_net *an, struct sk_buff *skb);
void les_accel_note_okfn(struct les_accel_net *an,
			 const struct nf_hook_state *state);
void les_accel_net_pre_exit(struct les_pep_net *pn);

/* early_ack.c: the sender's side */
void les_early_data(struct les_pep_net *pn, struct les_accel_flow *af,
		    unsigned int s, const struct les_pep_pkt *pkt,
		    struct sk_buff *skb, struct les_accel_todo *todo);
bool les_early_stale_ack(const struct les_accel_dir *d,
			 const struct les_pep_pkt *pkt);
bool les_early_rcv_ack(struct les_pep_net *pn, struct les_accel_flow *af,
		       unsigned int s, const struct les_pep_pkt *pkt,
		       struct les_accel_todo *todo);
bool les_early_ack_desc(struct les_pep_net *pn, struct les_accel_flow *af,
			unsigned int s, struct les_ack_desc *desc);
void les_early_timer(struct les_pep_net *pn, struct les_accel_flow *af,
		     unsigned int s, ktime_t now, struct les_accel_todo *todo);
u32 les_early_send_limit(struct les_pep_net *pn, const struct les_accel_dir *d);
u64 les_early_rto_us(const struct les_flow *f, unsigned int r);
u64 les_early_copies_rto_us(const struct les_accel_flow *af, unsigned int s);
void les_early_rto_set(struct les_accel_dir *d, u64 rto_us);

/* hold.c: the held-packet store */
int les_held_cache_init(void);
void les_held_cache_exit(void);
struct les_held *les_held_new(struct les_accel_net *an, struct sk_buff *skb,
			      u32 seq, u32 end, bool *full);
void les_held_node_free(struct les_accel_net *an, struct les_held *h);
void les_held_free(struct les_accel_net *an, struct les_accel_dir *d,
		   struct les_held *h);
u32 les_held_purge(struct les_accel_net *an, struct les_accel_dir *d,
		   struct sk_buff_head *out);
bool les_held_send(struct les_held *h, struct les_accel_todo *todo);

/* @h was (or is queued to be) sent again because a timer expired. */
static inline void les_held_timeout(struct les_held *h)
{
	if (h->timeouts < U8_MAX)
		h->timeouts++;
}

/* receiver.c: the receiver's side */
bool les_rcv_relied_on(const struct les_accel_net *an,
		       const struct les_accel_flow *af, unsigned int s);
bool les_rcv_recent(const struct les_accel_dir *d);
bool les_rcv_past_window(const struct les_flow *f, unsigned int s, u32 seq,
			 u32 end);
bool les_rcv_data(struct les_pep_net *pn, struct les_accel_flow *af,
		  unsigned int s, const struct les_pep_pkt *pkt,
		  struct sk_buff *skb, struct xfrm_state *view);
void les_rcv_window(struct les_pep_net *pn, struct les_accel_flow *af,
		    unsigned int s, struct les_accel_todo *todo);
bool les_rcv_thin(struct les_pep_net *pn, struct les_accel_flow *af,
		  unsigned int s, const struct les_pep_pkt *pkt,
		  struct sk_buff *skb, struct les_accel_todo *todo);
void les_rcv_thin_flush(struct les_pep_net *pn, struct les_accel_dir *d,
			struct les_accel_todo *todo, ktime_t now);
bool les_rcv_holds(struct les_flow *f, unsigned int from,
		   const struct les_pep_pkt *pkt);
bool les_rcv_probe_answer(struct les_accel_dir *d, const struct les_pep_pkt *pkt);
void les_rcv_data_seen(struct les_pep_net *pn, struct les_accel_flow *af,
		       unsigned int s, const struct les_pep_pkt *pkt,
		       struct xfrm_state *view);
void les_rcv_update_seen(struct les_accel_flow *af, unsigned int s);
bool les_rcv_timed(const struct les_accel_flow *af, unsigned int s);
void les_rcv_probe_timer(struct les_pep_net *pn, struct les_accel_flow *af,
			 unsigned int s, ktime_t now);
bool les_rcv_probe_desc(struct les_accel_flow *af, unsigned int s,
			struct les_ack_desc *desc);

/* pace.c */
void les_pacer_init(struct les_pacer *p, struct net *net);
void les_pacer_set_rate(struct les_pacer *p, u32 kbit);
void les_pacer_queue(struct les_pacer *p, struct sk_buff_head *list);
void les_pacer_stop(struct les_pacer *p);
u64 les_pacer_wait_ns(const struct les_accel_todo *todo);
bool les_pacer_room(struct les_pacer *p, const struct les_accel_todo *todo);
void les_hop_init(struct les_accel_net *an);
bool les_hop_queue_held(struct les_pep_net *pn, struct les_held *h,
			struct les_accel_dir *d);
bool les_hop_queue_resend(struct les_pep_net *pn, struct les_held *h,
			  struct les_accel_dir *d);
bool les_hop_queue_skb(struct les_pep_net *pn, struct sk_buff *skb,
		       struct les_accel_todo *todo, bool unread);
void les_hop_drain(struct les_pep_net *pn, struct les_accel_todo *todo);
void les_hop_flush(struct les_pep_net *pn, struct sk_buff_head *out);
void les_hop_guard_del(struct les_accel_net *an, struct les_held *h);

/* origin.c */
struct xfrm_state *les_origin_find(struct les_accel_net *an,
				   const struct xfrm_state *view, bool along,
				   const struct les_flow *f, unsigned int src);
/* A key deleted or expired, still held here. */
static inline bool les_key_gone(const struct xfrm_state *x)
{
	return x && READ_ONCE(x->km.state) != XFRM_STATE_VALID;
}

/* drain.c: the keys flows read with, and their drain when they go */
struct les_view;
void les_view_set(struct les_pep_net *pn, struct les_view **vp,
		  struct xfrm_state *x);
void les_view_put(struct les_pep_net *pn, struct les_view **vp);
bool les_view_gone(const struct les_view *v);
struct xfrm_state *les_drain_lookup(struct les_accel_net *an, u32 mark,
				    const xfrm_address_t *daddr, __be32 spi,
				    unsigned short family);
bool les_drain_reads(struct les_accel_net *an, const struct xfrm_state *x);
bool les_drain_flow_reads(struct les_flow *f, unsigned int from,
			  const struct les_pep_pkt *pkt);
bool les_drain_flow(struct les_pep_net *pn, struct les_accel_flow *af,
		    ktime_t now);

bool les_origin_renew(struct les_accel_net *an, struct xfrm_state **xp,
		      const struct les_flow *f, unsigned int src);
int les_origin_send(struct xfrm_state *x, const struct les_ack_desc *d);

#endif /* LES_ACCEL_H */
