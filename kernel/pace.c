// SPDX-License-Identifier: GPL-2.0
/*
 * The pacer: what a PEP sends onto the satellite hop leaves at the hop's
 * configured rate, from the first packet (docs/accel.md 5).  No slow start
 * on the hop: the link's rate is known, and a queue at the hop's entrance
 * only adds delay (or drops packets this PEP has ACKed already).
 *
 * One FIFO per namespace, emptied by a soft hrtimer: each packet may leave
 * once the previous ones have had their time on the link.  The packets are
 * forwarded ones (their dst is held) or clones of held copies; they leave
 * through dst_output(), as ip_forward_finish() would have sent them.
 */
#include <linux/hash.h>
#include <linux/hrtimer.h>
#include <linux/netfilter.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <net/dst.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/tcp.h>

#include "les.h"
#include "pep.h"

/* Nanoseconds @len bytes take at @kbit. */
static u64 les_pacer_ns(unsigned int len, u32 kbit)
{
	u64 rate = (u64)kbit * LES_ACCEL_PACE_PERMILLE;	/* bit/s */

	return div64_u64((u64)len * 8 * NSEC_PER_SEC, rate);
}

/*
 * What FORWARD goes on with after its hooks (ip_forward_finish(),
 * ip6_forward_finish(): counters, then dst_output()), noted from the hook
 * state of the packets the engine takes, as nf_queue keeps it; per
 * namespace and family.  Only routed packets are taken (pep.c), so it is
 * the IP layer's own.
 */
void les_accel_note_okfn(struct les_accel_net *an,
			 const struct nf_hook_state *state)
{
	unsigned int i = state->pf == NFPROTO_IPV6;

	if (READ_ONCE(an->fwd_okfn[i]) != state->okfn)
		WRITE_ONCE(an->fwd_okfn[i], state->okfn);
}

/* Forward @skb (taken at FORWARD) as the stack would have. */
void les_accel_release(struct les_accel_net *an, struct sk_buff *skb)
{
	int (*okfn)(struct net *net, struct sock *sk, struct sk_buff *skb);
	struct net *net = an->pacer.net;

	okfn = READ_ONCE(an->fwd_okfn[skb->protocol == htons(ETH_P_IPV6)]);
	rcu_read_lock();
	if (okfn) {
		okfn(net, NULL, skb);
	} else {
		skb_clear_tstamp(skb);
		dst_output(net, NULL, skb);
	}
	rcu_read_unlock();
}

/*
 * Send what is due; returns when the next packet is, or 0 if none waits.
 * @due: when the timer was to fire, or 0 if it did not fire.
 */
static ktime_t les_pacer_run(struct les_pacer *p, ktime_t due)
{
	struct sk_buff_head due_q;
	struct sk_buff *skb;
	ktime_t now = ktime_get(), next = 0;
	s64 slack;

	__skb_queue_head_init(&due_q);
	spin_lock(&p->lock);
	/*
	 * A timer that fires late may catch up: the link lost nothing while
	 * we were late.  By a little on a host that keeps time, a burst that
	 * short fits any queue; by twice how late the timer fires, smoothed,
	 * on one that does not (a loaded CPU, an emulated machine).  Held to
	 * a little there, a timer late by L each time would send only that
	 * much per L, and the pacer, not the hop, would set the rate.  At
	 * most what the queue holds at its rate: bursts no longer than those
	 * of the senders it stands for.
	 */
	if (due) {
		s64 late = min_t(s64, ktime_to_ns(ktime_sub(now, due)),
				 LES_PACER_QUEUE_MS * NSEC_PER_MSEC);

		if (late > 0)
			p->late_avg_ns += (late - p->late_avg_ns) / 8;
	}
	slack = clamp_t(s64, 2 * p->late_avg_ns,
			LES_PACER_SLACK_MIN_US * NSEC_PER_USEC,
			LES_PACER_QUEUE_MS * NSEC_PER_MSEC);
	while ((skb = skb_peek(&p->q))) {
		if (p->rate && ktime_before(now, p->next)) {
			next = p->next;
			break;
		}
		__skb_unlink(skb, &p->q);
		p->bytes -= skb->len;
		__skb_queue_tail(&due_q, skb);
		if (p->rate) {
			ktime_t base = ktime_sub_ns(now, slack);

			if (ktime_after(p->next, base))
				base = p->next;
			p->next = ktime_add_ns(base, les_pacer_ns(skb->len, p->rate));
		}
	}
	/* Nothing left: the timer stops, and the next packet starts it. */
	p->armed = next;
	spin_unlock(&p->lock);
	while ((skb = __skb_dequeue(&due_q)))
		les_accel_release(container_of(p, struct les_accel_net, pacer), skb);
	return next;
}

static enum hrtimer_restart les_pacer_timer(struct hrtimer *t)
{
	struct les_pacer *p = container_of(t, struct les_pacer, timer);
	ktime_t next = les_pacer_run(p, hrtimer_get_expires(t));

	if (!next)
		return HRTIMER_NORESTART;
	hrtimer_set_expires(t, next);
	return HRTIMER_RESTART;
}

void les_pacer_init(struct les_pacer *p, struct net *net)
{
	spin_lock_init(&p->lock);
	skb_queue_head_init(&p->q);
	hrtimer_init(&p->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED_SOFT);
	p->timer.function = les_pacer_timer;
	p->net = net;
	p->next = 0;
	p->late_avg_ns = 0;
	p->rate = 0;
	p->bytes = 0;
	p->armed = false;
}

void les_pacer_set_rate(struct les_pacer *p, u32 kbit)
{
	spin_lock_bh(&p->lock);
	p->rate = kbit;
	spin_unlock_bh(&p->lock);
}

/*
 * How long what the pacer and @todo hold takes to leave: what is queued
 * now leaves then (the copies' round trip starts there: early_ack.c).
 */
u64 les_pacer_wait_ns(const struct les_accel_todo *todo)
{
	struct les_pacer *p = todo->pacer;
	u32 rate = READ_ONCE(p->rate);

	if (!rate)
		return 0;
	return les_pacer_ns(READ_ONCE(p->bytes) + todo->pace_bytes, rate);
}

/* May more go into the queue (with what @todo adds)? */

bool les_pacer_room(struct les_pacer *p, const struct les_accel_todo *todo)
{
	u64 rate = READ_ONCE(p->rate), max;

	if (!rate)
		return true;
	/* kbit/s x ms / 8 = bytes */
	max = max_t(u64, LES_PACER_QUEUE_MIN, rate * LES_PACER_QUEUE_MS / 8);
	return (u64)READ_ONCE(p->bytes) + todo->pace_bytes < max;
}

/* Queue @list behind what waits, in order; BHs may be off already. */
void les_pacer_queue(struct les_pacer *p, struct sk_buff_head *list)
{
	struct sk_buff *skb;
	bool arm;

	if (skb_queue_empty(list))
		return;
	local_bh_disable();
	spin_lock(&p->lock);
	skb_queue_walk(list, skb)
		p->bytes += skb->len;
	skb_queue_splice_tail_init(list, &p->q);
	arm = !p->armed;
	p->armed = true;
	/* From idle, a burst is only what the timer then comes late by. */
	if (arm && ktime_before(p->next, ktime_get()))
		p->next = ktime_get();
	spin_unlock(&p->lock);
	/*
	 * Only the timer sends, so packets leave in the order they were
	 * queued (a second sender on another CPU could overtake it); pinned
	 * to the CPU that starts it, the namespace's (les_pep_work()), it
	 * sends into that CPU's backlog as the opener does.
	 */
	if (arm)
		hrtimer_start(&p->timer, ktime_get(), HRTIMER_MODE_ABS_PINNED_SOFT);
	local_bh_enable();
}

/* Namespace exit: send what waits, at once (nothing of it is lost). */
void les_pacer_stop(struct les_pacer *p)
{
	hrtimer_cancel(&p->timer);
	local_bh_disable();
	spin_lock(&p->lock);
	p->rate = 0;
	spin_unlock(&p->lock);
	les_pacer_run(p, 0);
	local_bh_enable();
}

/*
 * The hop lanes: what this PEP sends onto the hop waits in its SA's lane,
 * in the order it arrived, until the pacer has room.  Order matters beyond
 * TCP's: the packets of one SA carry its sequence numbers, and the
 * receiver's xfrm replay window (4096 packets at most) drops what comes
 * too far behind the newest.  A PEP that sent each flow's copies as that
 * flow's window allows would scramble an SA's packets across its flows by
 * the whole of what it holds.  A held copy at a lane's head waits for its
 * receiver's window, and what is behind it in that lane waits too; other
 * SAs' lanes go on (docs/accel.md 5).  A resent copy goes at once
 * (hold.c).  Flow table lock held throughout.
 */

/*
 * The SPI of the ESP packet @skb, as the hook found it (pep.c), 0: none;
 * and in @seq, if not NULL, the sequence number it carries (or 0).
 */
static __be32 les_hop_esp(const struct sk_buff *skb, u32 *seq)
{
	unsigned int off;
	__be32 _esp[2];
	const __be32 *esp;
	u8 proto;

	if (seq)
		*seq = 0;

	if (skb->protocol == htons(ETH_P_IP)) {
		off = skb_network_offset(skb) + ip_hdrlen(skb);
		proto = ip_hdr(skb)->protocol;
	} else if (skb->protocol == htons(ETH_P_IPV6)) {
		__be16 frag_off;
		int ext;

		proto = ipv6_hdr(skb)->nexthdr;
		ext = ipv6_skip_exthdr(skb, skb_network_offset(skb) +
				       sizeof(struct ipv6hdr), &proto, &frag_off);
		if (ext < 0)
			return 0;
		off = ext;
	} else {
		return 0;
	}
	if (proto == IPPROTO_UDP)
		off += sizeof(struct udphdr);
	else if (proto != IPPROTO_ESP)
		return 0;
	esp = skb_header_pointer(skb, off, sizeof(_esp), _esp);
	if (!esp)
		return 0;
	if (seq)
		*seq = ntohl(esp[1]);
	return esp[0];
}

static struct hlist_head *les_hop_bucket(struct les_accel_net *an, __be32 spi)
{
	return &an->lanes[hash_32((__force u32)spi, LES_HOP_LANE_BITS)];
}

/* The lane of SPI @spi, if its SA has one (packets waiting, or guarded). */
static struct les_hop_lane *les_hop_lane_find(struct les_accel_net *an,
					      __be32 spi)
{
	struct les_hop_lane *l;

	hlist_for_each_entry(l, les_hop_bucket(an, spi), hnode)
		if (l->spi == spi)
			return l;
	return NULL;
}

/*
 * @skb's lane, made if none waits; NULL if none can be made.  Every SA has
 * a lane of its own, or its packets do not wait: one that cannot wait in
 * order, and unguarded, is not taken (its caller drops it, or holds
 * nothing).
 */
static struct les_hop_lane *les_hop_lane_get(struct les_accel_net *an,
					     const struct sk_buff *skb)
{
	__be32 spi = les_hop_esp(skb, NULL);
	struct les_hop_lane *l = les_hop_lane_find(an, spi);

	if (l)
		return l;
	l = kzalloc(sizeof(*l), GFP_ATOMIC | __GFP_ACCOUNT | __GFP_NOWARN);
	if (!l)
		return NULL;
	l->spi = spi;
	INIT_LIST_HEAD(&l->queue);
	INIT_LIST_HEAD(&l->busy);
	INIT_LIST_HEAD(&l->guard);
	hlist_add_head(&l->hnode, les_hop_bucket(an, l->spi));
	return l;
}

/*
 * An empty lane goes: a lane exists only while its SA's packets wait, or
 * its receiver has not ACKed copies sent (the replay guard).
 */
static void les_hop_lane_put(struct les_accel_net *an, struct les_hop_lane *l)
{
	list_del_init(&l->busy);
	if (!list_empty(&l->guard) || !list_empty(&l->queue))
		return;
	hlist_del(&l->hnode);
	kfree(l);
}

/*
 * The replay guard (docs/accel.md 5.2).  The receiver's xfrm refuses a
 * packet that comes more than its replay window of the SA's packets behind
 * the newest it had, and a resent copy carries the sequence number it
 * first had: a copy resent after the SA went that far on could never
 * arrive, and its data, ACKed early, would be lost.  So none of an SA's
 * packets goes onto the hop more than @guard_limit ahead of the oldest
 * copy out there that its receiver has not ACKed (or SACKed), whose resend
 * the SA then waits for.  Copies join when first sent, from their SA's
 * lane, and leave when ACKed, or when their sender keeps them (a copy
 * older than its resend: early_ack.c).
 */
static void les_hop_guard_add(struct les_accel_net *an, struct les_hop_lane *l,
			      struct les_held *h, u32 seq)
{
	u32 window = h->dir->replay_window;

	if (h->lane || h->dir->unguarded || h->behind)
		return;
	/* The LAN reorders too: a slack, but never more than half of it. */
	l->guard_limit = window - min_t(u32, window / 2, LES_ACCEL_REORDER_SLACK);
	h->esp_seq = seq;
	h->lane = l;
	list_add_tail(&h->guard, &l->guard);
}

/* @h is ACKed or let go; its lane goes if nothing else keeps it. */
void les_hop_guard_del(struct les_accel_net *an, struct les_held *h)
{
	struct les_hop_lane *l = h->lane;
	struct les_held *first;

	list_del(&h->guard);
	h->lane = NULL;
	/* The last copy out through a wait that let a flow go has gone. */
	first = list_first_entry_or_null(&l->guard, struct les_held, guard);
	if (!first || !before(first->esp_seq, l->gone_held))
		l->gone = false;
	if (list_empty(&l->guard) && list_empty(&l->queue) &&
	    list_empty(&l->busy))
		les_hop_lane_put(an, l);
}

/* Would a packet of @l's SA carrying @seq go too far ahead? */
static struct les_held *les_hop_guard_head(struct les_hop_lane *l, u32 seq)
{
	struct les_held *h;

	h = list_first_entry_or_null(&l->guard, struct les_held, guard);
	if (h && (s32)(seq - h->esp_seq) >= (s32)l->guard_limit)
		return h;
	return NULL;
}

/*
 * Must the packet carrying @seq wait for the guard?  While it does, the
 * copy waited for is resent each timeout of its flow: with the SA held
 * back no new SACK comes to trigger a resend, and the timer's backoff
 * (early_ack.c) would outlast the wait.  Not for longer than that flow
 * allows (LES_ACCEL_GUARD_RTOS timeouts): a receiver that went away, or
 * keeps its window shut on what the far PEP holds for it, must not stop
 * its tunnel.  That flow is then let go: its copies leave the guard until
 * it has all it was sent (counted: its data may never arrive).  A copy
 * that was out, unanswered, through all of such a wait (sent before the
 * packet it first held back) had it too: when it holds the SA back, then
 * or later, it is resent once, and its flow let go if that goes a timeout
 * unanswered.  So receivers gone together (connections a server reset)
 * hold their tunnel back about one wait, not one each.  @l has packets
 * waiting: it stays.
 */
static bool les_hop_guard_waits(struct les_pep_net *pn, struct les_hop_lane *l,
				u32 seq, struct les_accel_todo *todo)
{
	s64 allowed, waited, since_sent;
	struct les_held *h, *c;
	struct les_accel_dir *d;
	ktime_t now;

	while ((h = les_hop_guard_head(l, seq))) {
		now = ktime_get();
		d = h->dir;
		allowed = max_t(s64, (s64)LES_ACCEL_GUARD_RTOS * d->rto_us,
				LES_ACCEL_GUARD_MIN_MS * USEC_PER_MSEC);
		if (!l->guard_since || l->guard_seq != h->esp_seq) {
			if (l->gone && before(h->esp_seq, l->gone_held)) {
				/* All but a resend and its timeout: had. */
				l->guard_since = ktime_sub_us(now, allowed - d->rto_us);
				l->guard_held = l->gone_held;
			} else {
				l->guard_since = now;
				l->guard_held = seq;
			}
			l->guard_seq = h->esp_seq;
			les_stat_inc(pn->net, LES_STAT_ACCEL_GUARD_WAITS);
		}
		waited = ktime_us_delta(now, l->guard_since);
		since_sent = ktime_us_delta(now, h->sent);
		/* A copy sent just now has a timeout for its answer, no more. */
		if (waited < allowed ||
		    (since_sent < d->rto_us && waited < allowed + d->rto_us)) {
			if (!h->waiting && since_sent >= d->rto_us &&
			    les_held_send(h, todo)) {
				les_held_timeout(h);
				les_stat_inc(pn->net, LES_STAT_ACCEL_HOP_TIMEOUTS);
			}
			return true;
		}
		les_stat_inc(pn->net, LES_STAT_ACCEL_GUARD_EXPIRED);
		l->gone = true;
		l->gone_held = l->guard_held;
		d->unguarded = true;
		list_for_each_entry(c, &d->held, node)
			if (c->lane)
				les_hop_guard_del(&pn->accel, c);
	}
	l->guard_since = 0;
	return false;
}

void les_hop_init(struct les_accel_net *an)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(an->lanes); i++)
		INIT_HLIST_HEAD(&an->lanes[i]);
	INIT_LIST_HEAD(&an->hop_busy);
}

static void les_hop_append(struct les_pep_net *pn, struct les_hop_lane *l,
			   struct les_held *h)
{
	struct les_accel_net *an = &pn->accel;

	if (list_empty(&an->hop_busy))
		les_accel_tick_queue(an, msecs_to_jiffies(LES_ACCEL_TICK_MS),
				     false);
	if (list_empty(&l->busy))
		list_add_tail(&l->busy, &an->hop_busy);
	list_add_tail(&h->wait, &l->queue);
	h->waiting = true;
}

/* A copy first sent from its lane; false if its SA can have none. */
bool les_hop_queue_held(struct les_pep_net *pn, struct les_held *h,
			struct les_accel_dir *d)
{
	struct les_hop_lane *l = les_hop_lane_get(&pn->accel, h->skb);

	if (!l)
		return false;
	h->dir = d;
	les_hop_append(pn, l, h);
	return true;
}

/*
 * A copy the timer resends when the pacer has no room: ahead of its lane's
 * first sends, behind the resends already there.  Its SA's receiver has
 * had newer packets; the replay guard may be waiting for this one.
 */
bool les_hop_queue_resend(struct les_pep_net *pn, struct les_held *h,
			  struct les_accel_dir *d)
{
	struct les_hop_lane *l = les_hop_lane_get(&pn->accel, h->skb);
	struct list_head *pos;
	struct les_held *w;

	/* No lane now: the copy stays held, the next timeout tries again. */
	if (!l)
		return false;
	pos = &l->queue;
	h->dir = d;
	list_for_each_entry(w, &l->queue, wait) {
		if (!w->dir || !w->tx)
			break;
		pos = &w->wait;
	}
	les_hop_append(pn, l, h);
	list_move(&h->wait, pos);
	return true;
}

/* May @l keep @skb, which only passes? */
static bool les_hop_lane_room(struct les_accel_net *an,
			      const struct les_hop_lane *l,
			      const struct sk_buff *skb)
{
	u64 rate = READ_ONCE(an->pacer.rate), max;

	/* kbit/s x ms / 8 = bytes */
	max = max_t(u64, LES_HOP_LANE_MIN, rate * LES_HOP_LANE_MS / 8);
	return l->pass_packets < LES_HOP_LANE_PACKETS &&
	       (u64)l->pass_bytes + skb->len <= max;
}

/*
 * A packet that only passes: it keeps its place among its SA's copies.
 * With nothing of its SA waiting, room in the pacer and the replay guard
 * not holding its SA back, it goes straight in, as les_hop_drain() would
 * take it (no node to allocate).  Else it waits in its lane, as far as
 * the lane's bound and `buffer` let it (hold.c), or is dropped: none of
 * it is ACKed early, its sender sends again.  @unread: its header zone
 * did not authenticate, or was a replay; its sequence number, which
 * anyone can write, neither waits for the replay guard nor holds the SA
 * back (the receiver's xfrm moves its window on authentic packets only).
 * False if it was dropped.
 */
bool les_hop_queue_skb(struct les_pep_net *pn, struct sk_buff *skb,
		       struct les_accel_todo *todo, bool unread)
{
	struct les_accel_net *an = &pn->accel;
	struct les_hop_lane *l;
	struct les_held *h;
	bool room, full = false;
	u32 seq;

	l = les_hop_lane_find(an, les_hop_esp(skb, &seq));
	/* Waiting for the guard, it waits in its lane (les_hop_lane_take()). */
	if (!(l && !list_empty(&l->queue)) && les_pacer_room(&an->pacer, todo) &&
	    !(l && !unread && les_hop_guard_head(l, seq))) {
		todo->pace_bytes += skb->len;
		__skb_queue_tail(&todo->pace, skb);
		return true;
	}
	if (!l)
		l = les_hop_lane_get(an, skb);
	room = l && les_hop_lane_room(an, l, skb);
	h = room ? les_held_new(an, skb, 0, 0, &full) : NULL;
	if (!h) {
		/* At a bound, or (no lane, no node) out of memory. */
		les_stat_inc(pn->net, !l || (room && !full) ?
			     LES_STAT_ACCEL_ERRORS : LES_STAT_ACCEL_HOP_DROPS);
		if (l && list_empty(&l->busy))
			les_hop_lane_put(an, l);
		kfree_skb(skb);
		return false;
	}
	INIT_LIST_HEAD(&h->node);
	h->unread = unread;
	l->pass_bytes += skb->len;
	l->pass_packets++;
	les_hop_append(pn, l, h);
	return true;
}

enum les_hop_take { LES_HOP_TOOK, LES_HOP_BLOCKED, LES_HOP_EMPTY };

/* The head of @l into the pacer, unless it waits for a window. */
static enum les_hop_take les_hop_lane_take(struct les_pep_net *pn,
					   struct les_hop_lane *l,
					   struct les_accel_todo *todo)
{
	struct les_held *h;
	u32 seq;

	h = list_first_entry_or_null(&l->queue, struct les_held, wait);
	if (!h)
		return LES_HOP_EMPTY;
	les_hop_esp(h->skb, &seq);
	/*
	 * A resend's number went out before: it cannot carry the SA further,
	 * nor end a wait (the guard waits on for the packet behind it).
	 */
	if (!h->unread && !(h->dir && h->tx) &&
	    les_hop_guard_waits(pn, l, seq, todo))
		return LES_HOP_BLOCKED;
	if (h->dir) {
		/* The receiver's window first; a copy not made, later. */
		if (after(h->end, les_early_send_limit(pn, h->dir)) ||
		    !les_held_send(h, todo))
			return LES_HOP_BLOCKED;
		list_del(&h->wait);
		h->waiting = false;
		les_hop_guard_add(&pn->accel, l, h, seq);
		return LES_HOP_TOOK;
	}
	list_del(&h->wait);
	l->pass_bytes -= h->skb->len;
	l->pass_packets--;
	todo->pace_bytes += h->skb->len;
	__skb_queue_tail(&todo->pace, h->skb);
	les_held_node_free(&pn->accel, h);
	return LES_HOP_TOOK;
}

/*
 * What @todo has for the hop goes into the pacer now, before the flow
 * table's lock is let go: packets enter the pacer in the order the lock
 * saw them.  Left in an opener batch's @todo until the batch's end, an
 * SA's packets were overtaken by its later ones, which the tick took from
 * their lane meanwhile (seen: a hundred of a client's ACKs a batch held
 * reached the hop after the next fifty, past the far PEP's replay window,
 * and the server's TCP dropped them as PAWS: docs/accel.md 5).
 */
static void les_hop_commit(struct les_pep_net *pn, struct les_accel_todo *todo)
{
	les_pacer_queue(&pn->accel.pacer, &todo->pace);
	todo->pace_bytes = 0;
}

/*
 * Into the pacer, as far as it has room and windows allow: a packet from
 * each lane in turn, so no SA waits behind another's window or burst.  The
 * lane the pacer's room ran out at goes first next time.  Then what @todo
 * has for the hop goes in, the lock still held (les_hop_commit()).
 */
void les_hop_drain(struct les_pep_net *pn, struct les_accel_todo *todo)
{
	struct les_accel_net *an = &pn->accel;
	struct les_hop_lane *l, *tmp;
	bool took;

	do {
		took = false;
		list_for_each_entry_safe(l, tmp, &an->hop_busy, busy) {
			if (!les_pacer_room(&an->pacer, todo)) {
				list_rotate_to_front(&l->busy, &an->hop_busy);
				goto commit;
			}
			switch (les_hop_lane_take(pn, l, todo)) {
			case LES_HOP_TOOK:
				took = true;
				break;
			case LES_HOP_EMPTY:
				les_hop_lane_put(an, l);
				break;
			case LES_HOP_BLOCKED:
				break;
			}
		}
	} while (took);
commit:
	les_hop_commit(pn, todo);
}

/* Namespace exit, after the flows took their copies back: the rest goes. */
void les_hop_flush(struct les_pep_net *pn, struct sk_buff_head *out)
{
	struct les_accel_net *an = &pn->accel;
	struct les_hop_lane *l, *ltmp;
	struct les_held *h, *tmp;

	list_for_each_entry_safe(l, ltmp, &an->hop_busy, busy) {
		list_for_each_entry_safe(h, tmp, &l->queue, wait) {
			list_del(&h->wait);
			__skb_queue_tail(out, h->skb);
			les_held_node_free(an, h);
		}
		les_hop_lane_put(an, l);
	}
}
