// SPDX-License-Identifier: GPL-2.0
/*
 * The PEP's flow table: one entry per TCP connection whose header zones the
 * PEP opened, both directions in one entry.
 *
 * The table is bounded.  A new flow that finds it full takes the place of
 * the least recently seen flow that is not established (half open, closing,
 * closed) or is idle past the timeout, among the oldest few; if there is
 * none, the new flow is not tracked and counted, so that a burst of new
 * connections cannot push out the established ones being accelerated.  A
 * worker drops flows idle for longer than the timeout.
 *
 * Every access holds the table lock: each packet that gets here has just
 * been through an AES-GCM operation, next to which the lock costs little.
 * It is taken in process context only (the opener, the GC, netlink): dumps
 * hold it around rhashtable's walker lock, which rhashtable's own worker
 * takes with softirqs on.  So flows are freed at once, with no RCU grace period: nothing reads the
 * table without the lock.  The hash table grows and shrinks with the number
 * of flows (rhashtable: resizing runs in its own worker, a bucket at a time).
 */
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <net/tcp.h>

#include "les.h"
#include "pep.h"

#define LES_FLOW_EVICT_SCAN	16	/* oldest flows a new one may replace */
#define LES_FLOW_GC_BUDGET	4096	/* flows a GC run may free */
#define LES_FLOW_FLUSH_BATCH	256	/* flows freed per hold of the lock */
#define LES_FLOW_KEPT_SCAN	1024	/* kept flows a GC run looks at */

/* Charged to the namespace's memory cgroup (pep.c sets it active). */
static struct kmem_cache *les_flow_cache __read_mostly;

int les_flow_cache_init(void)
{
	les_flow_cache = kmem_cache_create("les_flow", sizeof(struct les_flow), 0,
					   SLAB_ACCOUNT, NULL);
	return les_flow_cache ? 0 : -ENOMEM;
}

void les_flow_cache_exit(void)
{
	kmem_cache_destroy(les_flow_cache);
}

/* What this table may hold now: its own limit, within the initial namespace's. */
static unsigned int les_flow_max(const struct les_flow_table *t)
{
	return les_pep_limit(t->max_flows,
			     READ_ONCE(les_pep_net(&init_net)->flows.max_flows));
}

/* Hashed with a random seed per table (rhashtable's hash_rnd). */
static const struct rhashtable_params les_flow_params = {
	.head_offset		= offsetof(struct les_flow, node),
	.key_offset		= offsetof(struct les_flow, key),
	.key_len		= sizeof(struct les_flow_key),
	.max_size		= LES_PEP_MAX_FLOWS_LIMIT,
	.automatic_shrinking	= true,
};

/* Returns the index in key->end of the packet's sender. */
static unsigned int les_flow_key_make(struct les_flow_key *key,
				      const struct les_pep_pkt *pkt)
{
	struct les_flow_end src, dst;
	bool swap;

	/* Zeroed whole: the key is hashed and compared as bytes. */
	memset(key, 0, sizeof(*key));
	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	src.addr = pkt->saddr;
	src.port = htons(pkt->tcp.sport);
	dst.addr = pkt->daddr;
	dst.port = htons(pkt->tcp.dport);
	swap = memcmp(&src, &dst, sizeof(src)) > 0;
	key->end[0] = swap ? dst : src;
	key->end[1] = swap ? src : dst;
	key->family = pkt->family;
	return swap;
}

static void les_flow_free(struct les_flow_table *t, struct les_flow *f)
{
	les_accel_flow_free(container_of(t, struct les_pep_net, flows), f);
	rhashtable_remove_fast(&t->ht, &f->node, les_flow_params);
	list_del(&f->lru);
	t->count--;
	t->gen++;
	kmem_cache_free(les_flow_cache, f);
}

/*
 * Idle past the timeout.  A flow that holds data ACKed early in its
 * receiver's name is the only keeper of that data, and one whose far PEP
 * may send past its receiver's window the only keeper of that window: it
 * waits out a hop that is down, for LES_ACCEL_HOLD_TIMEOUT_S at least, as
 * the sender's TCP would have kept trying (the PEP's own resends do not
 * refresh it).
 */
static bool les_flow_idle(const struct les_flow_table *t,
			  const struct les_flow *f, unsigned long now)
{
	unsigned long timeout = t->idle_timeout;

	if (les_accel_flow_busy(t, f))
		timeout = max_t(unsigned long, timeout, LES_ACCEL_HOLD_TIMEOUT_S);
	return time_after_eq(now, f->last_seen + timeout * HZ);
}

/* Makes room for one flow; false if only young established flows are left. */
static bool les_flow_evict_one(struct les_flow_table *t, unsigned long now)
{
	unsigned int scanned = 0;
	struct les_flow *f;

	list_for_each_entry(f, &t->lru, lru) {
		/* Its data or window kept for the receiver (les_flow_idle()). */
		if (les_accel_flow_busy(t, f)) {
			if (++scanned == LES_FLOW_EVICT_SCAN)
				break;
			continue;
		}
		if (f->state != LES_FLOW_ESTABLISHED || les_flow_idle(t, f, now)) {
			les_flow_free(t, f);
			les_stat_inc(t->net, LES_STAT_PEP_FLOWS_EVICTED);
			return true;
		}
		if (++scanned == LES_FLOW_EVICT_SCAN)
			break;
	}
	return false;
}

static struct les_flow *les_flow_create(struct les_flow_table *t,
					const struct les_flow_key *key,
					unsigned long now)
{
	unsigned int max = les_flow_max(t);
	struct les_flow *f;
	int err;

	if (!max)
		return NULL;
	if (t->count >= max && !les_flow_evict_one(t, now)) {
		les_stat_inc(t->net, LES_STAT_PEP_TABLE_FULL);
		return NULL;
	}
	f = kmem_cache_zalloc(les_flow_cache, GFP_ATOMIC | __GFP_ACCOUNT);
	if (!f) {
		les_stat_inc(t->net, LES_STAT_PEP_ERRORS);
		t->no_memory = true;
		return NULL;
	}
	f->key = *key;
	f->created = now;
	f->state = LES_FLOW_ESTABLISHED;
	/*
	 * Fails when a resize it needs cannot get memory or is still to run
	 * (-ENOMEM, -EBUSY: the packet may come again), or at max_size.
	 */
	err = rhashtable_insert_fast(&t->ht, &f->node, les_flow_params);
	if (err) {
		kmem_cache_free(les_flow_cache, f);
		t->no_memory = err != -E2BIG;
		les_stat_inc(t->net, t->no_memory ? LES_STAT_PEP_ERRORS :
						    LES_STAT_PEP_TABLE_FULL);
		return NULL;
	}
	list_add_tail(&f->lru, &t->lru);
	t->gen++;
	if (!t->count++)
		queue_delayed_work(system_power_efficient_wq, &t->gc, HZ);
	les_stat_inc(t->net, LES_STAT_PEP_FLOWS_NEW);
	return f;
}

/*
 * The window scales in force, from the SYNs seen (RFC 7323 2.2): both
 * windows are scaled or neither.  A SYN-ACK carries the option only if
 * the SYN did, so its sender's shift holds as soon as it is seen; a
 * SYN's, once an answer with the option is seen too (a SYN sent again
 * after an answer without it does not turn it back on).  Until then a
 * window is taken unscaled: an underestimate, which holds data rather
 * than forward it past the receiver's window (receiver.c).
 */
static void les_flow_wscale(struct les_flow *f, unsigned int from, bool syn_ack)
{
	struct les_flow_side *s = &f->side[from], *o = &f->side[!from];

	if (syn_ack) {
		s->scaled = s->wscale != LES_WSCALE_NONE &&
			    !(o->have_isn && o->wscale == LES_WSCALE_NONE);
		o->scaled = s->scaled && o->have_isn;
	} else {
		s->scaled = o->scaled && s->wscale != LES_WSCALE_NONE;
	}
}

/*
 * A segment that carries an ACK older than the newest seen overtook it
 * on its way here: its window and SACK blocks are older too, and the
 * sender's TCP would not take them (tcp_may_update_window()).
 */
static void les_flow_ack(struct les_flow_side *s, const struct les_tcp_seg *seg,
			 bool had_ack)
{
	u32 edge;

	if (had_ack && before(seg->ack, s->ack))
		return;
	s->win = seg->win;
	s->ack = seg->ack;
	s->sack_n = seg->sack_n;
	memcpy(s->sack, seg->sack, sizeof(s->sack));
	/* A SYN-ACK's window is never scaled (RFC 7323 2.2). */
	edge = seg->ack + ((u32)seg->win <<
			   (seg->flags & LES_TCP_SYN ? 0 : les_side_wshift(s)));
	if (!s->have_edge || after(edge, s->edge))
		s->edge = edge;
	s->have_edge = true;
}

static void les_flow_update(struct les_flow *f, unsigned int from,
			    const struct les_pep_pkt *pkt)
{
	struct les_flow_side *s = &f->side[from], *o = &f->side[!from];
	const struct les_tcp_seg *seg = &pkt->tcp;
	bool had_ack = s->flags_seen & LES_TCP_ACK;
	u8 flags = seg->flags;
	u32 end;

	end = seg->seq + pkt->payload + !!(flags & LES_TCP_SYN) +
	      !!(flags & LES_TCP_FIN);

	s->packets++;
	/*
	 * A SYN on a connection its sender has sent on since: its receiver
	 * answers with an ACK and goes on (RFC 5961 4.2), and so does the
	 * flow here; with a SYN-ACK only if it had let the connection go
	 * unseen here (les_flow_reopen()).  A late copy of the handshake's
	 * own SYN, or one under another SA, begins nothing.  A SYN sent
	 * again times nothing (Karn), and Linux sends a Fast Open SYN again
	 * without its data, which its answer may still ACK.  A SYN with RST
	 * is a RST (RFC 9293 3.10.7.4).
	 */
	if ((flags & (LES_TCP_SYN | LES_TCP_RST)) == LES_TCP_SYN && s->have_next &&
	    f->state != LES_FLOW_SYN_SENT && f->state != LES_FLOW_SYN_RECV) {
		if (!(flags & LES_TCP_ACK) && pkt->spi == s->spi &&
		    !(s->have_isn && seg->seq == s->isn)) {
			bool again = (s->syn.waits || s->syn.seen) &&
				     s->syn.seq == seg->seq;

			s->syn = (struct les_flow_syn){
				.seen = again ? 0 : pkt->seen,
				.seq = seg->seq,
				.win = seg->win,
				.mss = seg->mss,
				.len = max_t(u32, pkt->payload,
					     again ? s->syn.len : 0),
				.wscale = seg->wscale,
				.waits = true,
			};
		}
		return;
	}
	/*
	 * The handshake's SYN again once its SYN-ACK went by: its sender's
	 * timer.  Its receiver answers at most with that SYN-ACK again
	 * (tcp_check_req(), rate-limited), or an ACK once established: a
	 * flow taken back to SYN_SENT would never see the handshake end.
	 */
	if ((flags & (LES_TCP_SYN | LES_TCP_ACK | LES_TCP_RST)) == LES_TCP_SYN &&
	    f->state == LES_FLOW_SYN_RECV && from == f->initiator &&
	    s->have_isn && seg->seq == s->isn) {
		s->retrans++;
		return;
	}
	s->spi = pkt->spi;
	if (!(flags & LES_TCP_SYN))
		o->syn.waits = false;
	s->bytes += pkt->payload;
	s->flags_seen |= flags;
	s->seq = seg->seq;
	if ((flags & (LES_TCP_SYN | LES_TCP_ACK)) == LES_TCP_SYN)
		s->win = seg->win;
	if (seg->has_ts && (!s->have_ts || after(seg->tsval, s->tsval))) {
		s->tsval = seg->tsval;
		s->have_ts = true;
	}

	if (flags & LES_TCP_SYN) {
		s->isn = seg->seq;
		s->have_isn = true;
		s->have_next = false;
		s->mss = seg->mss;
		s->wscale = seg->wscale;
		les_flow_wscale(f, from, flags & LES_TCP_ACK);
		if (!(flags & LES_TCP_ACK)) {
			f->handshake = true;
			f->initiator = from;
			f->state = LES_FLOW_SYN_SENT;
		} else if (f->state == LES_FLOW_SYN_SENT) {
			f->state = LES_FLOW_SYN_RECV;
		}
	}

	if (!s->have_next || after(end, s->next)) {
		/* New sequence space: time it unless a sample is running. */
		if (end != seg->seq && !o->probing) {
			o->probing = true;
			o->probe_end = end;
			o->probe_sent = pkt->seen;
		}
		s->next = end;
		s->have_next = true;
	} else if (end != seg->seq) {
		s->retrans++;
		if (o->probing && before(seg->seq, o->probe_end))
			o->probing = false;
	}

	if (flags & LES_TCP_ACK) {
		les_flow_ack(s, seg, had_ack);
		if (s->probing && !before(seg->ack, s->probe_end)) {
			les_rtt_sample(&s->rtt, ktime_us_delta(pkt->seen, s->probe_sent));
			s->probing = false;
		}
		if (f->state == LES_FLOW_SYN_RECV && from == f->initiator)
			f->state = LES_FLOW_ESTABLISHED;
	}

	if (flags & LES_TCP_FIN) {
		s->fin = true;
		f->state = o->fin ? LES_FLOW_CLOSED : LES_FLOW_FIN_WAIT;
	}
	if (flags & LES_TCP_RST)
		f->state = LES_FLOW_CLOSED;
}

/*
 * Could the TCP that @from's RST goes to take it?  Only at its next
 * expected sequence number (one before, once it has taken a FIN:
 * tcp_reset_check()), which lies between the newest ACK it sent and the
 * furthest @from has sent.  It drops a RST outside its window and answers
 * one inside with a challenge ACK (RFC 5961 3.2): the connection goes
 * on, and so must what a PEP keeps for it.  A RST in the window but off
 * that point is taken too: the PEP cannot know the point exactly (a
 * sender's RST after early ACKs lies past the receiver's).  A SYN's
 * sender takes only a RST that ACKs its SYN (tcp_rcv_synsent_state_process());
 * any other RST during the handshake, from a side not yet seen, or when
 * the receiver has ACKed more than the PEP saw sent (it missed some).
 */
static bool les_flow_rst_in_window(const struct les_flow *f, unsigned int from,
				   const struct les_tcp_seg *seg)
{
	const struct les_flow_side *s = &f->side[from], *o = &f->side[!from];

	if (f->state == LES_FLOW_SYN_SENT && from != f->initiator)
		return (seg->flags & LES_TCP_ACK) && o->have_next &&
		       seg->ack == o->next;
	if (f->state == LES_FLOW_SYN_SENT || f->state == LES_FLOW_SYN_RECV ||
	    !(o->flags_seen & LES_TCP_ACK) || !s->have_next ||
	    after(o->ack, s->next))
		return true;
	return !before(seg->seq, o->ack - 1) && !after(seg->seq, s->next);
}

/*
 * Is @from's RST, in the window, where the other TCP takes it: its next
 * expected byte, the newest ACK it sent, or the end of its furthest SACK
 * block, or one before that ACK once it has taken @from's FIN
 * (tcp_validate_incoming(), tcp_reset_check())?  Elsewhere that TCP
 * answers a challenge ACK and goes on (RFC 5961 3.2).
 */
bool les_flow_rst_at_point(const struct les_flow *f, unsigned int from,
			   const struct les_tcp_seg *seg)
{
	const struct les_flow_side *s = &f->side[from], *o = &f->side[!from];
	unsigned int i;
	u32 sacked;

	if (!(o->flags_seen & LES_TCP_ACK))
		return false;
	if (seg->seq == o->ack)
		return true;
	if (o->sack_n) {
		sacked = o->sack[1];
		for (i = 1; i < o->sack_n; i++)
			if (after(o->sack[2 * i + 1], sacked))
				sacked = o->sack[2 * i + 1];
		if (seg->seq == sacked)
			return true;
	}
	return s->fin && s->have_next && o->ack == s->next &&
	       seg->seq == o->ack - 1;
}

/* A new connection on the tuple of @f: it starts again. */
static void les_flow_restart(struct les_flow_table *t, struct les_flow *f,
			     unsigned long now)
{
	les_accel_flow_free(container_of(t, struct les_pep_net, flows), f);
	memset(f->side, 0, sizeof(f->side));
	f->created = now;
	f->handshake = false;
}

/*
 * Does @from's SYN-ACK answer the SYN the other side sent outside the
 * handshake?  It ACKs that SYN, and its Fast Open data if it took them
 * (RFC 7413 3), under the SA of @from's connection, with a new ISN.
 */
static bool les_flow_answers_syn(const struct les_flow *f, unsigned int from,
				 const struct les_pep_pkt *pkt)
{
	const struct les_flow_syn *syn = &f->side[!from].syn;
	u32 ack = pkt->tcp.ack;

	return (pkt->tcp.flags & (LES_TCP_SYN | LES_TCP_ACK)) ==
	       (LES_TCP_SYN | LES_TCP_ACK) && syn->waits &&
	       (ack == syn->seq + 1 || ack == syn->seq + 1 + syn->len) &&
	       pkt->spi == f->side[from].spi && pkt->tcp.seq != f->side[from].isn;
}

/*
 * @from answered with a SYN-ACK the SYN the other side sent outside the
 * handshake: it had let the connection go (its close went by unread
 * here, or it crashed), and that SYN began a new one.  The flow starts
 * again from that SYN, as it was seen then.
 */
static void les_flow_reopen(struct les_flow_table *t, struct les_flow *f,
			    unsigned int from, const struct les_pep_pkt *pkt,
			    unsigned long now)
{
	const struct les_flow_side *o = &f->side[!from];
	struct les_pep_pkt syn = {
		.family = pkt->family,
		.spi = o->spi,
		.payload = o->syn.len,
		/* Sent again, it times nothing: a sample of 0 is none (rtt.h). */
		.seen = o->syn.seen ?: pkt->seen,
		.tcp = {
			.seq = o->syn.seq,
			.win = o->syn.win,
			.mss = o->syn.mss,
			.wscale = o->syn.wscale,
			.flags = LES_TCP_SYN,
		},
	};

	les_flow_restart(t, f, now);
	les_flow_update(f, !from, &syn);
}

void les_flow_seen(struct les_flow_table *t, const struct les_pep_pkt *pkt,
		   bool (*only)(struct les_flow *f, unsigned int from,
				const struct les_pep_pkt *pkt),
		   void (*then)(struct les_flow *f, unsigned int from, void *arg),
		   void *arg)
{
	unsigned long now = jiffies;
	struct les_flow_key key;
	unsigned int from;
	struct les_flow *f;
	u8 flags = pkt->tcp.flags;

	from = les_flow_key_make(&key, pkt);
	spin_lock_bh(&t->lock);
	t->no_memory = false;
	f = rhashtable_lookup_fast(&t->ht, &key, les_flow_params);
	if (only && (!f || !only(f, from, pkt))) {
		f = NULL;
		goto out;
	}
	if (f && (flags & LES_TCP_RST) &&
	    !les_flow_rst_in_window(f, from, &pkt->tcp)) {
		/* Goes on unread, as a flow the table does not know. */
		les_stat_inc(t->net, LES_STAT_PEP_RST_OOW);
		f = NULL;
		goto out;
	}
	if (f && f->state == LES_FLOW_CLOSED &&
	    (flags & (LES_TCP_SYN | LES_TCP_ACK)) == LES_TCP_SYN)
		les_flow_restart(t, f, now);
	if (f && les_flow_answers_syn(f, from, pkt))
		les_flow_reopen(t, f, from, pkt, now);
	if (!f) {
		/* A RST opens nothing: it would only take a table slot. */
		if (flags & LES_TCP_RST)
			goto out;
		f = les_flow_create(t, &key, now);
		if (!f)
			goto out;
		f->initiator = from;
	}
	les_flow_update(f, from, pkt);
	f->last_seen = now;
	list_move_tail(&f->lru, &t->lru);
out:
	if (then)
		then(f, from, arg);
	spin_unlock_bh(&t->lock);
}

/*
 * @fn's answer for the flow of @pkt, under the table's lock; the flow is
 * not changed (@pkt was not read as news: a replayed header zone).
 */
bool les_flow_peek(struct les_flow_table *t, const struct les_pep_pkt *pkt,
		   bool (*fn)(struct les_flow *f, unsigned int from,
			      const struct les_pep_pkt *pkt))
{
	struct les_flow_key key;
	unsigned int from;
	struct les_flow *f;
	bool ret = false;

	from = les_flow_key_make(&key, pkt);
	spin_lock_bh(&t->lock);
	f = rhashtable_lookup_fast(&t->ht, &key, les_flow_params);
	if (f)
		ret = fn(f, from, pkt);
	spin_unlock_bh(&t->lock);
	return ret;
}

/*
 * Flows idle past the timeout go, unless the engine keeps them
 * (les_flow_idle()): those move to @kept, off the list that eviction and
 * this walk take oldest first, which they would otherwise block.  A
 * packet moves one back (les_flow_seen()).  The kept are looked at in
 * turn, a bounded number a run.
 */
static void les_flow_gc(struct work_struct *work)
{
	struct les_flow_table *t = container_of(to_delayed_work(work),
						struct les_flow_table, gc);
	unsigned int budget = LES_FLOW_GC_BUDGET, n;
	unsigned long now = jiffies;
	struct les_flow *f, *tmp;
	bool more, freed = false;
	LIST_HEAD(seen);

	spin_lock_bh(&t->lock);
	list_for_each_entry_safe(f, tmp, &t->lru, lru) {
		if (!budget)
			break;
		if (t->count > les_flow_max(t) && !les_accel_flow_busy(t, f)) {
			/* The limit was lowered: the oldest go first. */
			les_flow_free(t, f);
			les_stat_inc(t->net, LES_STAT_PEP_FLOWS_EVICTED);
			freed = true;
		} else if (!time_after_eq(now, f->last_seen + t->idle_timeout * HZ)) {
			break;
		} else if (les_accel_flow_busy(t, f)) {
			list_move_tail(&f->lru, &t->kept);
		} else {
			les_flow_free(t, f);
			les_stat_inc(t->net, LES_STAT_PEP_FLOWS_EXPIRED);
			freed = true;
		}
		budget--;
	}
	for (n = 0; n < LES_FLOW_KEPT_SCAN && !list_empty(&t->kept); n++) {
		f = list_first_entry(&t->kept, struct les_flow, lru);
		if (les_flow_idle(t, f, now)) {
			les_flow_free(t, f);
			les_stat_inc(t->net, LES_STAT_PEP_FLOWS_EXPIRED);
			freed = true;
		} else if (!les_accel_flow_busy(t, f)) {
			/* Let go, and idle-timeout raised since: the oldest. */
			list_move(&f->lru, &t->lru);
		} else {
			list_move_tail(&f->lru, &seen);
		}
	}
	list_splice_tail(&seen, &t->kept);
	more = t->count > 0;
	spin_unlock_bh(&t->lock);
	/* At once again only if this run freed all it could: no spinning. */
	if (more)
		queue_delayed_work(system_power_efficient_wq, &t->gc,
				   budget || !freed ? HZ : 1);
}

/*
 * In batches: a table of millions never holds the lock for long.  With
 * @keep_busy (an operator's flush), the flows the engine keeps stay, in
 * their order (les_flow_idle()): freed, what they keep would be lost.
 */
void les_flow_flush(struct les_flow_table *t, bool keep_busy)
{
	struct les_flow *f;
	unsigned int n;
	LIST_HEAD(todo);
	LIST_HEAD(kept);
	bool more;

	/*
	 * The flows there are now; one that a packet moves back to the table's
	 * list meanwhile (busy) stays, and the flush ends however busy the
	 * table is.  Only under the lock is either list touched.
	 */
	spin_lock_bh(&t->lock);
	list_splice_init(&t->kept, &todo);
	list_splice_tail_init(&t->lru, &todo);
	spin_unlock_bh(&t->lock);
	do {
		spin_lock_bh(&t->lock);
		for (n = 0; n < LES_FLOW_FLUSH_BATCH && !list_empty(&todo); n++) {
			f = list_first_entry(&todo, struct les_flow, lru);
			if (keep_busy && les_accel_flow_busy(t, f))
				list_move_tail(&f->lru, &kept);
			else
				les_flow_free(t, f);
		}
		more = !list_empty(&todo);
		if (!more) {
			/* Oldest first again: the kept, then those seen since. */
			list_splice(&kept, &t->lru);
		}
		spin_unlock_bh(&t->lock);
		cond_resched();
	} while (more);
}

void les_flow_set_limits(struct les_flow_table *t, unsigned int max_flows,
			 unsigned int idle_timeout)
{
	spin_lock_bh(&t->lock);
	t->max_flows = max_flows;
	t->idle_timeout = idle_timeout;
	spin_unlock_bh(&t->lock);
	/* Apply them now rather than at the next run. */
	mod_delayed_work(system_power_efficient_wq, &t->gc, 0);
}

unsigned int les_flow_count(struct les_flow_table *t)
{
	unsigned int n;

	spin_lock_bh(&t->lock);
	n = t->count;
	spin_unlock_bh(&t->lock);
	return n;
}

void les_flow_walk_enter(struct les_flow_table *t, struct rhashtable_iter *iter)
{
	rhashtable_walk_enter(&t->ht, iter);
}

/*
 * A dump takes several calls, and flows come and go between them: the
 * walker's position may then repeat or skip a flow.  *@gen tells the caller
 * which table it read, so that netlink can flag a dump that spans two
 * (NLM_F_DUMP_INTR) and lesctl can ask again.  A resize under the walker
 * (-EAGAIN: it starts over from the first bucket) counts as a change too:
 * *@restarts, this dump's own, keeps it from flagging other dumps.
 */
int les_flow_dump(struct les_flow_table *t, struct sk_buff *skb,
		  struct rhashtable_iter *iter, unsigned long *restarts,
		  unsigned int *gen,
		  int (*fill)(struct sk_buff *skb, const struct les_flow *f,
			      void *arg),
		  void *arg)
{
	struct les_flow *f;

	spin_lock_bh(&t->lock);
	if (rhashtable_walk_start_check(iter) == -EAGAIN)
		(*restarts)++;
	/* The flow that did not fit last time, if it is still there. */
	for (f = rhashtable_walk_peek(iter); f; f = rhashtable_walk_next(iter)) {
		if (IS_ERR(f)) {
			if (PTR_ERR(f) != -EAGAIN)
				break;
			(*restarts)++;
			continue;
		}
		/* Both only grow: a change in either changes the sum. */
		*gen = (t->gen + *restarts) ?: 1;
		if (fill(skb, f, arg))
			break;
	}
	*gen = (t->gen + *restarts) ?: 1;
	rhashtable_walk_stop(iter);
	spin_unlock_bh(&t->lock);
	return skb->len;
}

int les_flow_table_init(struct les_flow_table *t, struct net *net)
{
	int err;

	spin_lock_init(&t->lock);
	INIT_LIST_HEAD(&t->lru);
	INIT_LIST_HEAD(&t->kept);
	INIT_DELAYED_WORK(&t->gc, les_flow_gc);
	err = rhashtable_init(&t->ht, &les_flow_params);
	if (err)
		return err;
	t->net = net;
	t->count = 0;
	/* Not 0: netlink takes a dump sequence of 0 for "not set". */
	t->gen = 1;
	t->max_flows = LES_PEP_MAX_FLOWS_DEFAULT;
	t->idle_timeout = LES_PEP_IDLE_TIMEOUT_DEFAULT;
	return 0;
}

/* The hook must be gone: nothing adds flows any more. */
void les_flow_table_destroy(struct les_flow_table *t)
{
	cancel_delayed_work_sync(&t->gc);
	les_flow_flush(t, false);
	rhashtable_destroy(&t->ht);
}
