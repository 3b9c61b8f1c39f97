/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The PEP node: a forwarding-path observer that opens header zones with the
 * PEP keys of its namespace and keeps a table of the TCP flows it sees.
 */
#ifndef LES_PEP_H
#define LES_PEP_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netfilter.h>
#include <linux/rhashtable-types.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <net/xfrm.h>

#include "les_wire.h"
#include "les_genl.h"
#include "accel.h"
#include "rtt.h"

/* Defaults of the per-namespace settings (lesctl pep set). */
#define LES_PEP_MARK_DEFAULT		0x4c455350	/* "LESP" */
#define LES_PEP_MAX_FLOWS_DEFAULT	65536
#define LES_PEP_MAX_FLOWS_LIMIT		4194304
#define LES_PEP_IDLE_TIMEOUT_DEFAULT	300		/* seconds */
#define LES_PEP_IDLE_TIMEOUT_MAX	86400
#define LES_PEP_ENCAP_PORT_DEFAULT	4500
#define LES_PEP_BACKLOG_DEFAULT		1024	/* packets */
#define LES_PEP_BACKLOG_MAX		65536
/*
 * Bytes the backlog may cost, per packet it may hold: a full-size packet's
 * copy (kmalloc's size) and the skb the engine took (its truesize), and
 * no more whatever their size (reassembled ones reach 64 KiB).
 */
#define LES_PEP_BACKLOG_BYTES_PER	8192
#define LES_PEP_BATCH			64	/* packets that wake the opener */

/* An endpoint of a flow: inner address and port. */
struct les_flow_end {
	xfrm_address_t addr;
	__be16 port;
};

struct les_flow_key {
	struct les_flow_end end[2];	/* in canonical (memcmp) order */
	u8 family;			/* AF_INET, AF_INET6 */
};

/* A SYN a side sent outside the handshake, kept until answered (flow.c). */
struct les_flow_syn {
	ktime_t seen;			/* 0 once sent again (Karn) */
	u32 seq;
	u16 win, mss;
	u16 len;			/* its data (TCP Fast Open) */
	u8 wscale;
	bool waits;
};

/* What one side of a TCP connection sent, as seen at the PEP. */
struct les_flow_side {
	u32 spi;			/* SA of its last packet */
	u32 isn, seq, next, ack;
	u16 win, mss;
	u8 wscale;			/* its SYN's option */
	bool scaled;			/* its window is scaled (flow.c) */
	u8 flags_seen;
	bool have_isn, have_next, fin;
	u8 sack_n;
	bool key_went;			/* its key went, none since (drain.c) */
	struct les_flow_syn syn;
	u32 sack[2 * LES_SACK_MAX];
	bool have_ts;
	bool window_short;		/* its receiver's replay window (accel.c) */
	u32 tsval;			/* its newest TSval */
	/*
	 * The right edge of its window (ack + scaled window), the furthest
	 * it offered: a segment that overtook an older one on its way here
	 * must not move it back (a receiver never shrinks its window).
	 */
	bool have_edge;
	u32 edge;
	u64 packets, bytes, retrans;
	/*
	 * Round trip PEP -> this side -> PEP: a segment of the other side
	 * that advanced its sequence space is timed until this side ACKs it
	 * (Karn: a retransmission of it cancels the sample).
	 */
	bool probing;
	u32 probe_end;
	ktime_t probe_sent;
	struct les_rtt rtt;
};

/* The shift of a side's window field (RFC 7323 2.3: at most 14). */
static inline u8 les_side_wshift(const struct les_flow_side *side)
{
	return side->scaled ? min_t(u8, side->wscale, 14) : 0;
}

/* The right edge of a side's window: the furthest it offered (flow.c). */
static inline u32 les_side_edge(const struct les_flow_side *side)
{
	return side->have_edge ? side->edge :
	       side->ack + ((u32)side->win << les_side_wshift(side));
}

/* The largest segment a side takes (RFC 9293 3.7.1: 536 unless it said). */
static inline u32 les_side_mss(const struct les_flow_side *side)
{
	return side->mss ?: 536;
}

struct les_flow {
	struct rhash_head node;		/* in the table, keyed by @key */
	struct list_head lru;		/* least recently seen first */
	struct les_flow_key key;
	struct les_flow_side side[2];	/* indexed like key.end */
	u8 initiator;			/* key.end index of the first sender */
	u8 state;			/* enum les_flow_state */
	bool handshake;			/* the SYN was seen */
	struct les_accel_flow *accel;	/* accelerated (accel.c), or NULL */
	unsigned long created, last_seen;	/* jiffies */
};

struct les_flow_table {
	spinlock_t lock;		/* everything below, flows included */
	struct rhashtable ht;
	struct list_head lru;
	struct list_head kept;		/* idle, kept by the engine (flow.c) */
	unsigned int count;
	struct delayed_work gc;
	u32 gen;			/* bumped when a flow comes or goes: dumps */
	struct net *net;
	unsigned int max_flows, idle_timeout;	/* settings: lesctl pep set */
	bool no_memory;			/* for the new flow of the last packet */
};

/* A TCP segment the hook opened, with the packet's outer facts. */
struct les_pep_pkt {
	struct les_tcp_seg tcp;
	u8 family;			/* inner family: AF_INET or AF_INET6 */
	xfrm_address_t saddr, daddr;	/* inner addresses */
	u32 spi;
	u32 payload;			/* TCP payload bytes (lower bound) */
	ktime_t seen;			/* when the hook saw it */
};

/* The PEP state of one network namespace. */
struct les_pep_net {
	struct net *net;
	/*
	 * pep-view SAs in the namespace: without one the hook returns at
	 * once, so a host that is no PEP pays no lookup and no counter.
	 */
	atomic_t keys;
	/* Of the namespace's creator: charged for what the PEP allocates. */
	struct mem_cgroup *memcg;
	struct mutex cfg_lock;		/* hook (un)registration, settings */
	bool hook_on;
	u32 pep_mark;
	u16 encap_port;
	struct nf_hook_ops ops[2];
	/* Packets copied by the hook, waiting for the opener. */
	spinlock_t backlog_lock;
	struct list_head backlog;
	unsigned int backlog_len, backlog_max;
	unsigned int backlog_bytes;	/* what they and the opener's batch cost */
	struct delayed_work opener;
	/*
	 * Where the opener, the engine's tick and so its pacer run (pep.c:
	 * les_pep_work()), WORK_CPU_UNBOUND until the first PEP key.
	 */
	int cpu;
	struct les_flow_table flows;
	struct les_accel_net accel;
};

/* pep.c */
int les_pep_init(void);
void les_pep_exit(void);
struct les_pep_net *les_pep_net(struct net *net);
int les_pep_set_hook(struct les_pep_net *pn, bool on);	/* cfg_lock held */
void les_pep_sync(struct les_pep_net *pn);
void les_pep_work(struct les_pep_net *pn, struct delayed_work *dwork,
		  unsigned long delay, bool reset);
unsigned int les_pep_limit(unsigned int own, unsigned int init_net_value);

/* flow.c */
int les_flow_cache_init(void);
void les_flow_cache_exit(void);
int les_flow_table_init(struct les_flow_table *t, struct net *net);
void les_flow_table_destroy(struct les_flow_table *t);
/*
 * Tell the table of @pkt, if @only (NULL: any) says its flow is to hear of
 * it; then, with the table's lock still held, @then (if not NULL) with the
 * flow (NULL if untracked, or not told) and the index of its sender in the
 * flow's key.
 */
bool les_flow_peek(struct les_flow_table *t, const struct les_pep_pkt *pkt,
		   bool (*fn)(struct les_flow *f, unsigned int from,
			      const struct les_pep_pkt *pkt));
void les_flow_seen(struct les_flow_table *t, const struct les_pep_pkt *pkt,
		   bool (*only)(struct les_flow *f, unsigned int from,
				const struct les_pep_pkt *pkt),
		   void (*then)(struct les_flow *f, unsigned int from, void *arg),
		   void *arg);
bool les_flow_rst_at_point(const struct les_flow *f, unsigned int from,
			   const struct les_tcp_seg *seg);
void les_flow_flush(struct les_flow_table *t, bool keep_busy);
void les_flow_set_limits(struct les_flow_table *t, unsigned int max_flows,
			 unsigned int idle_timeout);
unsigned int les_flow_count(struct les_flow_table *t);
/*
 * Fills records from where @iter stopped; *@gen is the table's generation
 * the records were read under (NLM_F_DUMP_INTR).
 */
int les_flow_dump(struct les_flow_table *t, struct sk_buff *skb,
		  struct rhashtable_iter *iter, unsigned long *restarts,
		  unsigned int *gen,
		  int (*fill)(struct sk_buff *skb, const struct les_flow *f,
			      void *arg),
		  void *arg);
void les_flow_walk_enter(struct les_flow_table *t, struct rhashtable_iter *iter);

/* genl.c */
int les_genl_init(void);
void les_genl_exit(void);

#endif /* LES_PEP_H */
