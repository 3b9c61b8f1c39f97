// SPDX-License-Identifier: GPL-2.0
/*
 * The sender's side (docs/accel.md 3): the PEP that sends a flow's data
 * onto the hop ACKs it to the sender as soon as it holds a copy, so the
 * sender's window opens at LAN round trips; it sends the data on at the
 * hop's rate, recovers what the hop loses from its copies, and absorbs
 * the receiver's ACKs that the sender already had from it.
 *
 * "Ahead" numbers, in the sequence space of the data (s: sender, r:
 * receiver):
 *   rcv_ack <= (copies held in order) <= ack_point <= adv_edge
 * rcv_ack is the receiver's own cumulative ACK; ack_point what the sender
 * had ACKed by the PEP (copies past a hole, or older than a resend below
 * them, wait above it); adv_edge the right edge of the window the PEP
 * gave it.  The lead (ack_point - rcv_ack) is what a crash of the PEP
 * would cost (docs/accel.md 7): flow-buffer bounds it, and so does the
 * receiver's window plus peer-buffer (the PEP takes no more than the hop
 * may carry on).
 *
 * How a Linux sender takes these ACKs is in docs/accel.md 2; in short:
 * timestamps copied, never invented; the window's right edge never moves
 * back; sequence number the receiver's own.
 */
#include <linux/ktime.h>
#include <net/tcp.h>

#include "les.h"
#include "pep.h"
#include "tcp_win.h"

/* The PEP -> receiver -> PEP round trip, or a safe guess before a sample. */
static u32 les_early_rtt_us(const struct les_flow *f, unsigned int r)
{
	const struct les_rtt *rtt = &f->side[r].rtt;

	return rtt->samples ? rtt->srtt_us : USEC_PER_SEC;
}

/*
 * The round trip of @s's copies: from when they leave for the hop, once
 * some have been timed; the flow's until then.
 */
static u32 les_early_hop_rtt_us(const struct les_accel_flow *af, unsigned int s)
{
	const struct les_accel_dir *d = &af->dir[s];

	return d->hop_rtt.samples ? d->hop_rtt.srtt_us :
				    les_early_rtt_us(af->flow, !s);
}

/*
 * @h has reached its receiver: if its data was sent once only (RFC 6298
 * 3, Karn: not by us twice, nor unheld before), not for the far PEP to
 * hold past the window (its wait there is the reader's), and later than
 * the others this ACK or SACK covers, it times the round trip.
 */
static void les_early_timed(const struct les_held *h, ktime_t *timed)
{
	if (h->tx == 1 && !h->untimed && !h->beyond_window &&
	    ktime_after(h->sent, *timed))
		*timed = h->sent;
}

/* Twice the round trip, within RFC 6298 2.4 and 2.5's bounds (ours). */
static u64 les_early_rto_of(u64 rtt_us)
{
	return clamp_t(u64, 2 * rtt_us, LES_ACCEL_RTO_MIN_MS * USEC_PER_MSEC,
		       LES_ACCEL_RTO_MAX_MS * USEC_PER_MSEC);
}

/* The retransmission timer of copies for receiver @r: twice its RTT. */
u64 les_early_rto_us(const struct les_flow *f, unsigned int r)
{
	return les_early_rto_of(les_early_rtt_us(f, r));
}

/* The same for @s's copies, once they have timed the hop. */
u64 les_early_copies_rto_us(const struct les_accel_flow *af, unsigned int s)
{
	return les_early_rto_of(les_early_hop_rtt_us(af, s));
}

/* Note the copies' timeout where the replay guard (pace.c) finds it. */
void les_early_rto_set(struct les_accel_dir *d, u64 rto_us)
{
	d->rto_us = min_t(u64, rto_us, U32_MAX);
}

/* How far into the data the hop may carry now (the receiver's window). */
u32 les_early_send_limit(struct les_pep_net *pn, const struct les_accel_dir *d)
{
	return d->rcv_edge + READ_ONCE(pn->accel.cfg.peer_buffer);
}

/*
 * The window we may give past the ACK point: room in the flow's buffer,
 * but no further than the hop may carry (the receiver's window plus what
 * the far PEP holds past it).  Data held beyond that would wait at the
 * head of its SA's hop lane, and every other flow of the SA behind it,
 * for as long as its reader keeps its window shut (docs/accel.md 5).
 */
static u32 les_early_space(struct les_pep_net *pn, const struct les_accel_dir *d)
{
	u32 flow_buffer = READ_ONCE(pn->accel.cfg.flow_buffer);
	u32 limit = les_early_send_limit(pn, d);
	u32 space = d->held_bytes < flow_buffer ? flow_buffer - d->held_bytes : 0;

	if (!after(limit, d->ack_point))
		return 0;
	return min(space, limit - d->ack_point);
}

static void les_early_ack_due(struct les_pep_net *pn,
			      struct les_accel_flow *af, unsigned int s)
{
	if (!af->dir[s].ack_due) {
		af->dir[s].ack_due = true;
		if (list_empty(&af->ack_node))
			list_add_tail(&af->ack_node, &pn->accel.ack_due);
	}
}

/*
 * Where [@seq, @end) goes in the held list, which is in sequence order:
 * after the returned copy (NULL: first).  An ERR_PTR if it overlaps a copy
 * held already.  From the tail: in-order data is appended.
 */
static struct les_held *les_early_slot(struct les_accel_dir *d, u32 seq, u32 end)
{
	struct les_held *h, *next = NULL;

	list_for_each_entry_reverse(h, &d->held, node) {
		if (!after(h->end, seq))
			break;
		next = h;
	}
	if (list_entry_is_head(h, &d->held, node))
		h = NULL;
	if (next && after(end, next->seq))
		return ERR_PTR(-EEXIST);
	return h;
}

/* Data up to @end goes on unheld: a copy of it held later times nothing. */
static void les_early_unheld(struct les_accel_dir *d, u32 end)
{
	if (!d->unheld || after(end, d->unheld_end)) {
		d->unheld = true;
		d->unheld_end = end;
	}
}

/*
 * The sender's segment ending at @end, with TSval @tsval, goes onto the
 * hop.  The receiver's TCP takes the TSval of a segment that reaches what
 * it has ACKed in order (tcp_replace_ts_recent()), a partly or wholly
 * duplicate one too, as its TS.Recent, and then drops as old every segment
 * whose TSval is more than one behind (PAWS, RFC 7323 5.3), after its xfrm
 * took the sequence number: every resend of such a copy is a replay.  The
 * sender resends only what we did not ACK (data that went unheld, or never
 * reached us), with a new TSval; copies held past it and older by more
 * than one may arrive after it.  So the ACK point does not pass such a
 * copy (les_early_ack_on()) until the receiver SACKs or ACKs it: until
 * then the sender keeps that data, and its own resends, newer, deliver it.
 * Copies the sender has from us as ACKed cannot be taken back: those of a
 * late start, none of it announced yet, can (docs/accel.md 8).  A copy
 * that comes after the resend (the sender's packets may overtake each
 * other) is marked as it is held (les_early_ts_held()).
 */
static void les_early_behind(struct les_pep_net *pn, struct les_held *h)
{
	h->behind = true;
	les_stat_inc(pn->net, LES_STAT_ACCEL_TS_BEHIND);
	/* Its sender keeps it: the SA need not wait for it (pace.c). */
	if (h->lane)
		les_hop_guard_del(&pn->accel, h);
}

/*
 * The newest TSval sent on, if recent: an old one is no evidence (a
 * sender's packets overtake each other within a round trip; TSvals wrap).
 */
static bool les_early_ts_recent(const struct les_accel_dir *d)
{
	return d->ts_passed_valid &&
	       time_before(jiffies, d->ts_passed_at + msecs_to_jiffies(LES_ACCEL_RTO_MAX_MS));
}

static void les_early_ts_newest(u32 *newest, u32 tsval)
{
	if ((s32)(tsval - *newest) > 0)
		*newest = tsval;
}

static void les_early_ts_mark(struct les_pep_net *pn, struct les_accel_dir *d,
			      const struct les_tcp_seg *t, u32 end, bool held)
{
	u32 tsval = t->tsval;
	struct les_held *h;

	if (!d->ts || !t->has_ts)
		return;
	if (!les_early_ts_recent(d)) {
		d->ts_passed = tsval;
		d->ts_below = tsval;
		d->ts_high = end;
		d->ts_passed_at = jiffies;
		d->ts_passed_valid = true;
	} else {
		/* A hole opens: what fills it is above all sent before. */
		if (after(t->seq, d->ts_high))
			les_early_ts_newest(&d->ts_below, d->ts_passed);
		else if (before(t->seq, d->ts_high))
			les_early_ts_newest(&d->ts_below, tsval);
		if (after(end, d->ts_high))
			d->ts_high = end;
		if (!before(tsval, d->ts_passed)) {
			d->ts_passed = tsval;
			d->ts_passed_at = jiffies;
		}
	}
	/*
	 * Sent on unheld, it keeps no place: a copy held there later is no
	 * hole's, and may be older than all sent so far.
	 */
	if (!held)
		les_early_ts_newest(&d->ts_below, d->ts_passed);
	/* In order, it stays behind: within half the TSval space, as a mark. */
	if ((s32)(d->ts_passed - d->ts_below) > (1 << 30))
		d->ts_below = d->ts_passed - (1 << 30);
	list_for_each_entry_reverse(h, &d->held, node) {
		if (!after(h->end, end))
			break;
		if (h->behind || h->sacked || (s32)(tsval - h->tsval) <= 1)
			continue;
		if (before(h->seq, d->ack_point)) {
			if (!d->late)
				continue;
			d->ack_point = h->seq;
		}
		les_early_behind(pn, h);
	}
}

/*
 * Copy @h, just held, is older by more than a tick than data sent on
 * before it and below it, a resend: marked as les_early_ts_mark() would
 * have.  Past all sent on, that is everything sent; under it, a hole's
 * filler, what was sent before the hole opened or below the furthest
 * since (ts_below; data sent on unheld leaves no hole, and counts as
 * everything sent before it).  The sender's first sendings carry TSvals
 * in sequence order: one that fills a hole after the segments past it
 * overtook it (a starved or multi-queue sender's) is not behind them;
 * marked, it would hold the ACK point a hop round trip, past the
 * sender's timeout.
 */
static void les_early_ts_held(struct les_pep_net *pn, struct les_accel_dir *d,
			      struct les_held *h, const struct les_tcp_seg *t)
{
	u32 newest;

	if (!d->ts || !t->has_ts || !les_early_ts_recent(d))
		return;
	newest = after(h->end, d->ts_high) ? d->ts_passed : d->ts_below;
	if ((s32)(newest - t->tsval) > 1)
		les_early_behind(pn, h);
}

/*
 * The ACK point, at copy @h, moves on over the copies held in order from
 * there, but not over one a resend passed (les_early_ts_mark()) that the
 * receiver has not SACKed.
 */
static void les_early_ack_on(struct les_accel_dir *d, struct les_held *h)
{
	list_for_each_entry_from(h, &d->held, node) {
		if (h->seq != d->ack_point || (h->behind && !h->sacked))
			break;
		d->ack_point = h->end;
		d->tsecr = h->tsval;
	}
}

/* A segment from the sender @s, on its way onto the hop. */
void les_early_data(struct les_pep_net *pn, struct les_accel_flow *af,
		    unsigned int s, const struct les_pep_pkt *pkt,
		    struct sk_buff *skb, struct les_accel_todo *todo)
{
	struct les_accel_net *an = &pn->accel;
	struct les_accel_dir *d = &af->dir[s];
	const struct les_tcp_seg *t = &pkt->tcp;
	u32 len = pkt->payload, seq = t->seq, end = seq + len;
	struct les_held *h, *prev;
	bool room;

	/*
	 * The sender probes a window we closed (seq below what we ACKed, no
	 * data): the answer is ours to give, the receiver's would be absorbed.
	 */
	if (d->early && !d->late && !len && before(seq, d->ack_point) &&
	    !(t->flags & (LES_TCP_SYN | LES_TCP_FIN | LES_TCP_RST))) {
		les_early_ack_due(pn, af, s);
		les_accel_absorb(todo, skb);
		return;
	}
	/* Only plain data is ACKed early; never a FIN (docs/accel.md 3). */
	if (!d->early || !len ||
	    (t->flags & (LES_TCP_SYN | LES_TCP_FIN | LES_TCP_RST | LES_TCP_URG))) {
		if (d->early) {
			les_early_unheld(d, end);
			if (len)
				les_early_ts_mark(pn, d, t, end, false);
		}
		les_hop_queue_skb(pn, skb, todo, false);
		return;
	}
	/*
	 * Sent again from before a late start: the receiver ACKs it, not us
	 * (we never held it).
	 */
	if (d->late && before(seq, d->start)) {
		les_early_ts_mark(pn, d, t, end, false);
		les_hop_queue_skb(pn, skb, todo, false);
		return;
	}
	if (!after(end, d->ack_point)) {
		/*
		 * The sender sent again what it had from us as ACKed (an ACK
		 * of ours lost, or its timer): the hop needs none of it.
		 */
		les_stat_inc(pn->net, LES_STAT_ACCEL_ABSORBED_DATA);
		les_accel_absorb(todo, skb);
		les_early_ack_due(pn, af, s);
		return;
	}
	/*
	 * A resent segment may reach past what we hold (the sender cuts
	 * segments anew when it retransmits): held for the new part.
	 */
	if (before(seq, d->ack_point))
		seq = d->ack_point;
	len = end - seq;
	room = !after(end, d->adv_edge) ||
	       (d->held_bytes + len <= READ_ONCE(an->cfg.flow_buffer) &&
		!after(end, les_early_send_limit(pn, d)));
	prev = room ? les_early_slot(d, seq, end) : ERR_PTR(-ENOSPC);
	h = IS_ERR(prev) ? NULL : les_held_new(an, skb, seq, end, NULL);
	if (!h) {
		/*
		 * No room, or it overlaps what we hold: it travels unheld and
		 * its ACK comes from the receiver.
		 */
		les_stat_inc(pn->net, LES_STAT_ACCEL_FAIL_OPEN);
		les_early_unheld(d, end);
		les_early_ts_mark(pn, d, t, end, false);
		les_hop_queue_skb(pn, skb, todo, false);
		return;
	}
	if (d->unheld && !before(d->ack_point, d->unheld_end))
		d->unheld = false;
	h->untimed = d->unheld && before(seq, d->unheld_end);
	if (!les_hop_queue_held(pn, h, d)) {
		/* No lane to wait in: neither held nor ACKed, sent again. */
		les_held_node_free(an, h);
		les_stat_inc(pn->net, LES_STAT_ACCEL_ERRORS);
		kfree_skb(skb);
		return;
	}
	h->tsval = t->tsval;
	list_add(&h->node, prev ? &prev->node : &d->held);
	d->held_bytes += len;
	an->held_bytes += len;
	les_stat_add(pn->net, LES_STAT_ACCEL_EARLY_BYTES, len);
	les_early_ts_held(pn, d, h, t);
	les_early_ts_mark(pn, d, t, end, true);
	/*
	 * In order, the ACK point moves past it and past what came early
	 * and now joins it; out of order (the sender's packets may overtake
	 * each other, as async crypto completes), it waits for the hole.
	 */
	les_early_ack_on(d, h);
	les_early_ack_due(pn, af, s);
}

/*
 * SACK recovery's reordering window: a quarter of the round trip @rtt at
 * least, the whole of it at most (RFC 8985 6.2).
 */
static s64 les_early_reo_us(const struct les_accel_dir *d, s64 rtt)
{
	return clamp_t(s64, d->reo_us, rtt / 4, rtt);
}

/*
 * Send again the copies the receiver's SACK blocks say the hop lost: those
 * sent before data that has arrived since (below @sacked_high), not
 * SACKed, and not sent again within the last round trip and the
 * reordering window.  Without SACK, dup-ACKs name the first hole only
 * (@sacked_high 0).  A copy already queued for a resend in its hop lane
 * (the timer's, pace.c) waits for that.
 */
static void les_early_recover(struct les_pep_net *pn, struct les_accel_flow *af,
			      unsigned int s, u32 sacked_high,
			      struct les_accel_todo *todo)
{
	struct les_accel_dir *d = &af->dir[s];
	s64 rtt = les_early_hop_rtt_us(af, s);
	s64 wait = rtt + les_early_reo_us(d, rtt);
	ktime_t now = ktime_get();
	bool resent = false;
	struct les_held *h;

	list_for_each_entry(h, &d->held, node) {
		if (sacked_high && !before(h->seq, sacked_high))
			break;
		if (!h->tx || h->waiting)
			continue;
		if (!h->sacked && ktime_us_delta(now, h->sent) >= wait) {
			/*
			 * Marks taken back (les_early_reneging()) may leave a
			 * whole window to resend: only as the pacer has room.
			 */
			if (h->untimed && !les_pacer_room(&pn->accel.pacer, todo))
				break;
			if (les_held_send(h, todo)) {
				h->sack_resent = true;
				les_stat_inc(pn->net, LES_STAT_ACCEL_HOP_RETRANS);
				resent = true;
			}
		}
		if (!sacked_high)
			break;
	}
	/* The window goes back to a quarter after 16 round trips with resends. */
	if (resent && d->reo_persist &&
	    (!d->reo_counted || ktime_us_delta(now, d->reo_counted) >= rtt)) {
		d->reo_counted = now;
		if (!--d->reo_persist)
			d->reo_us = 0;
	}
}

/*
 * Does the far PEP hold what went past the window, for the oldest copy
 * @h's first timeouts while the flow is ACKed early (les_early_timer())?
 */
static bool les_early_far_holds(const struct les_accel_dir *d,
				const struct les_held *h)
{
	return d->early && h->timeouts < LES_ACCEL_FAR_HOLD_ROUNDS;
}

/* Each round trip, the receiver's right edge then becomes the old one. */
static void les_early_edge_age(struct les_accel_flow *af, unsigned int s,
			       ktime_t now)
{
	struct les_accel_dir *d = &af->dir[s];

	if (ktime_us_delta(now, d->edge_new_at) < les_early_hop_rtt_us(af, s))
		return;
	d->edge_old = d->edge_new;
	d->edge_new = d->rcv_edge;
	d->edge_new_at = now;
}

/*
 * Loss recovery after a timeout (RFC 5681 3.1, RFC 6298 5.4): every copy
 * out at the timeout is taken as lost.  Once the receiver ACKs new data,
 * the hop carries again, and each goes again once, in sequence order, as
 * far as the timer's rules let copies go, unless SACKed or sent within a
 * round trip and the reordering window; those sent past the window,
 * which the far PEP holds (the timer's first rounds), only once the
 * window reached them a round trip ago (that released them there).  Else
 * the answer to each single resend kept the timer from a round of all,
 * and a flow whose hop came back during such a round crept on at a
 * segment a round trip (`accel hop outage`).  As far as the pacer has
 * room; the tick goes on (les_early_timer()).
 */
static void les_early_loss_resend(struct les_pep_net *pn,
				  struct les_accel_flow *af, unsigned int s,
				  struct les_accel_todo *todo)
{
	struct les_accel_dir *d = &af->dir[s];
	s64 rtt = les_early_hop_rtt_us(af, s);
	s64 wait = rtt + les_early_reo_us(d, rtt);
	u32 limit = les_early_send_limit(pn, d);
	bool first = true, far_holds = false;
	ktime_t now = ktime_get();
	struct les_held *h;

	list_for_each_entry(h, &d->held, node) {
		if (!before(h->seq, d->loss_high))
			break;
		if (!h->tx || h->sacked || h->waiting)
			continue;
		if (first) {
			far_holds = les_early_far_holds(d, h);
			first = false;
		}
		/* Sent again since the timeout: once is all. */
		if (ktime_after(h->sent, d->loss_at))
			continue;
		if (after(h->end, limit))
			return;
		if (far_holds && h->beyond_window && after(h->end, d->edge_old))
			continue;
		/* Maybe on its way still: the next ACK looks again. */
		if (ktime_us_delta(now, h->sent) < wait)
			return;
		d->loss_paced = !les_pacer_room(&pn->accel.pacer, todo);
		if (d->loss_paced || !les_held_send(h, todo))
			return;
		les_stat_inc(pn->net, LES_STAT_ACCEL_HOP_TIMEOUTS);
	}
	d->loss = false;
}

/*
 * The receiver has @h, resent once, by SACK recovery: if it says so sooner
 * after the resend than the hop allows (three quarters of the copies'
 * shortest round trip), it had the first copy (its xfrm dropped the resend
 * as a replay, so no D-SACK tells us; RFC 8985 6.2 widens its window on
 * those).  Seen when a burst the far PEP held past the window, released at
 * once, reaches the receiver behind what came unheld meanwhile
 * (docs/accel.md 3).  Before a copy is timed, half the flow's shortest:
 * it may count a wait in the hop lane (flow.c times it from when data
 * reaches us).  The reordering window then grows by twice what it lacked,
 * and by a quarter round trip at least once a round trip.
 * An untimed copy's earlier sending may be what arrived: it proves nothing.
 */
static void les_early_spurious(struct les_pep_net *pn, struct les_accel_flow *af,
			       unsigned int s, const struct les_held *h,
			       ktime_t now)
{
	const struct les_flow_side *r = &af->flow->side[!s];
	struct les_accel_dir *d = &af->dir[s];
	s64 late = ktime_us_delta(now, h->sent);
	s64 rtt = les_early_hop_rtt_us(af, s);
	s64 soon = d->hop_rtt.samples ? (s64)d->hop_rtt.min_us * 3 / 4 :
		   (s64)r->rtt.min_us / 2;
	s64 grow;

	if (h->tx != 2 || !h->sack_resent || h->untimed ||
	    !(d->hop_rtt.samples || r->rtt.samples) || late >= soon)
		return;
	les_stat_inc(pn->net, LES_STAT_ACCEL_HOP_SPURIOUS);
	grow = 2 * max_t(s64, late, 0);
	/*
	 * At least RACK's step, a quarter round trip, once a round trip: an
	 * ACK that comes before the resend has left the pacer (@late < 0)
	 * says the wait was short, not by how much.
	 */
	if (!d->reo_grown || ktime_us_delta(now, d->reo_grown) >= rtt) {
		grow = max(grow, rtt / 4);
		d->reo_grown = now;
	}
	d->reo_us = min_t(s64, les_early_reo_us(d, rtt) + grow, rtt);
	d->reo_persist = 16;
}

/*
 * A pure ACK from the receiver of @d's data that the sender would drop
 * (PAWS, RFC 7323 5.3): below our ACK point, so old for the sender, and
 * with a TSval more than a tick older than that of an ACK of ours it had.
 * The receiver's ACKs can reach us out of order, by more than a tick
 * (docs/accel.md 3); forwarded, each would count as a PAWS drop there.
 */
bool les_early_stale_ack(const struct les_accel_dir *d,
			 const struct les_pep_pkt *pkt)
{
	const struct les_tcp_seg *t = &pkt->tcp;

	return d->ts_sent_valid && t->has_ts && !pkt->payload &&
	       !(t->flags & ~(LES_TCP_ACK | LES_TCP_PSH | LES_TCP_ECE | LES_TCP_CWR)) &&
	       before(t->ack, d->ack_point) && (s32)(d->ts_sent - t->tsval) > 1;
}

/*
 * A segment from the receiver (!@s) off the hop, with what it says of the
 * data of @s.  Returns true if it is a pure ACK the sender already had from
 * us: it is absorbed (docs/accel.md 3).
 */
bool les_early_rcv_ack(struct les_pep_net *pn, struct les_accel_flow *af,
		       unsigned int s, const struct les_pep_pkt *pkt,
		       struct les_accel_todo *todo)
{
	struct les_accel_net *an = &pn->accel;
	struct les_accel_dir *d = &af->dir[s];
	struct les_flow *f = af->flow;
	const struct les_tcp_seg *t = &pkt->tcp;
	u32 ack = t->ack, edge, sacked_high = 0;
	ktime_t now = ktime_get(), timed = 0, timed_sack = 0;
	struct les_held *h, *tmp;
	bool progress = false, opened, beyond, filled = false, spurious = false;
	unsigned int i;

	if (!(t->flags & LES_TCP_ACK))
		return false;
	d->rto_unanswered = false;
	/* News for the sender: data that went unheld has arrived. */
	beyond = after(ack, d->ack_point);
	edge = ack + ((u32)t->win << les_side_wshift(&f->side[!s]));
	if (!d->rcv_known || after(ack, d->rcv_ack)) {
		d->rcv_ack = ack;
		d->rcv_known = true;
		d->dupacks = 0;
		progress = true;
		list_for_each_entry_safe(h, tmp, &d->held, node) {
			if (after(h->end, ack))
				break;
			if (!h->sacked) {
				les_early_spurious(pn, af, s, h, now);
				les_early_timed(h, &timed);
				filled |= h->tx > 1 || h->untimed;
				/*
				 * Sent once before the timeout, inside the
				 * window, and not SACKed, it arrived: the
				 * timeout was spurious (F-RTO, RFC 5682).
				 */
				spurious |= d->loss && !d->loss_go &&
					    h->tx == 1 && !h->beyond_window &&
					    !h->untimed &&
					    !ktime_after(h->sent, d->loss_at);
			}
			les_held_free(an, d, h);
		}
		/*
		 * One that fills a hole times the hole's recovery too (Karn):
		 * what it covers past the resend arrived long before.
		 */
		if (filled)
			timed = 0;
	} else if (ack == d->rcv_ack && edge == d->rcv_edge && !pkt->payload &&
		   !list_empty(&d->held)) {
		/* A window update is no dup-ACK (RFC 5681). */
		d->dupacks++;
	}
	opened = after(edge, d->rcv_edge);
	if (opened)
		d->rcv_edge = edge;
	les_early_edge_age(af, s, now);
	/*
	 * A late start: once the receiver has ACKed what was in flight before
	 * it, ACKs are ours; the window's right edge we give starts at the
	 * receiver's, so that it never moves back for the sender.
	 */
	if (d->late && !before(d->rcv_ack, d->start)) {
		d->late = false;
		if (after(d->rcv_edge, d->adv_edge))
			d->adv_edge = d->rcv_edge;
		les_early_ack_due(pn, af, s);
	}
	/*
	 * The receiver's ACK passed ours (data that went unheld): ours
	 * catches up, and on over copies held out of order from there.
	 */
	if (after(d->rcv_ack, d->ack_point)) {
		d->ack_point = d->rcv_ack;
		/* Copies below the receiver's ACK are freed above. */
		if (!list_empty(&d->held))
			les_early_ack_on(d, list_first_entry(&d->held,
							     struct les_held,
							     node));
		if (after(d->ack_point, d->adv_edge))
			d->adv_edge = d->ack_point;
		/* Past it: the sender hears of that from us alone. */
		if (d->early && after(d->ack_point, d->rcv_ack))
			les_early_ack_due(pn, af, s);
	}

	for (i = 0; i < t->sack_n; i++) {
		u32 left = t->sack[2 * i], right = t->sack[2 * i + 1];

		if (!after(right, d->rcv_ack))
			continue;
		list_for_each_entry(h, &d->held, node) {
			if (!before(h->seq, right))
				break;
			if (before(h->seq, left) || after(h->end, right) ||
			    h->sacked)
				continue;
			h->sacked = true;
			/* The receiver has it: no PAWS drop to fear. */
			if (h->behind && h->seq == d->ack_point) {
				les_early_ack_on(d, h);
				if (after(d->ack_point, d->adv_edge))
					d->adv_edge = d->ack_point;
				les_early_ack_due(pn, af, s);
			}
			les_early_spurious(pn, af, s, h, now);
			les_early_timed(h, &timed_sack);
			/* Its receiver has it: no resend to wait for. */
			if (h->lane)
				les_hop_guard_del(&pn->accel, h);
		}
		if (after(right, sacked_high) || !sacked_high)
			sacked_high = right;
	}
	/*
	 * Copies freed, or the receiver's window opened: the window we gave
	 * may open too.  The sender hears of it only from us (the receiver's
	 * ACKs stop here), so say it at once after a zero window, and else
	 * once it opens by an eighth of the buffer, or by a segment and at
	 * least what was left of it (a reader's window, not our buffer, may
	 * be what holds the sender back).
	 */
	if ((progress || opened) && d->early) {
		u32 edge_now = d->ack_point + les_early_space(pn, d);
		u32 left = d->adv_edge - d->ack_point;
		u32 more = edge_now - d->adv_edge;

		if (after(edge_now, d->adv_edge) &&
		    (!left || more >= READ_ONCE(an->cfg.flow_buffer) / 8 ||
		     (more >= left && more >= les_side_mss(&f->side[!s]))))
			les_early_ack_due(pn, af, s);
	}
	if (ktime_after(timed_sack, timed))
		timed = timed_sack;
	if (timed)
		les_rtt_sample(&d->hop_rtt, ktime_us_delta(now, timed));
	if (d->loss && progress) {
		d->loss_go = true;
		if (!before(d->rcv_ack, d->loss_high) || spurious)
			d->loss = false;
		else
			les_early_loss_resend(pn, af, s, todo);
	}
	if (sacked_high)
		les_early_recover(pn, af, s, sacked_high, todo);
	else if (d->dupacks >= 3)
		les_early_recover(pn, af, s, 0, todo);

	/*
	 * One that passed our ACK point is news for the sender, unless held
	 * copies took the point past it too: ours, due, says more.
	 */
	return d->early && !d->late && !pkt->payload &&
	       (!beyond || after(d->ack_point, ack)) &&
	       !(t->flags & ~(LES_TCP_ACK | LES_TCP_PSH | LES_TCP_ECE | LES_TCP_CWR));
}

/* The end of the highest copy sent so far: loss recovery's end. */
static u32 les_early_sent_high(const struct les_accel_dir *d)
{
	struct les_held *h;

	list_for_each_entry_reverse(h, &d->held, node)
		if (h->tx)
			return h->end;
	return d->rcv_ack;
}

/*
 * The receiver's cumulative ACK stops at a copy it SACKed: its TCP dropped
 * what it held out of order (reneging, RFC 2018 8).  If that still holds
 * half a round trip later (10 ms at least; Linux's
 * tcp_check_sack_reneging() waits so for ACKs that crossed), every mark
 * goes (RFC 6675 5.1): the receiver's next blocks mark again what it still
 * has, and recovery and the timer resend the rest.  Its xfrm refuses a copy
 * it had as a replay, so what it dropped is lost, counted when the flow
 * lets go of it (LesAccelLost, docs/accel.md 8).  An older block that marks
 * such a copy again is caught again here.
 */
static void les_early_reneging(struct les_pep_net *pn, struct les_accel_flow *af,
			       unsigned int s, ktime_t now)
{
	struct les_accel_dir *d = &af->dir[s];
	struct les_held *h;

	h = list_first_entry_or_null(&d->held, struct les_held, node);
	if (!h || !h->sacked || !d->rcv_known || after(h->seq, d->rcv_ack)) {
		d->reneged_at = 0;
		return;
	}
	if (!d->reneged_at) {
		d->reneged_at = now;
		return;
	}
	if (ktime_us_delta(now, d->reneged_at) <
	    max_t(s64, les_early_hop_rtt_us(af, s) / 2, 10 * USEC_PER_MSEC))
		return;
	d->reneged_at = 0;
	d->reneged = true;
	les_stat_inc(pn->net, LES_STAT_ACCEL_SACK_RENEGING);
	list_for_each_entry(h, &d->held, node) {
		if (h->sacked) {
			h->sacked = false;
			h->untimed = true;
		}
	}
}

/*
 * The timer: the oldest held copy unanswered for too long goes again.  If
 * the receiver said nothing since the timer's last resend, every copy not
 * SACKed and not sent within @rto goes too, as far as copies may go (its
 * window as we last heard it, plus what the far PEP holds past it) and
 * the pacer has room, the rest through its SA's hop lane: the receiver may
 * have had that copy all along, and its xfrm drops one it had as a
 * replay, answering nothing that would tell us where its hole is (its own
 * ACKs of the last round trip lost on the hop: docs/accel.md 3).  For
 * the first LES_ACCEL_FAR_HOLD_ROUNDS rounds, and while the flow is ACKed
 * early (not draining), not those sent past its window that the window
 * has not reached as we last heard it: only an accelerating far PEP is
 * sent any (peer-buffer), and it holds them for a reader that keeps its
 * window shut, probes it, and once the window is open and data stops,
 * probes it again and sends its answer on (receiver.c); the receiver's
 * SACKs then show any the hop lost.  Every round resent all the far PEP
 * held, up to 2 MB, dropped there; later rounds still do, should that PEP
 * have lost its keys or stopped accelerating.  A timeout also starts loss
 * recovery, which goes on here while the pacer's room holds it back.
 */
void les_early_timer(struct les_pep_net *pn, struct les_accel_flow *af,
		     unsigned int s, ktime_t now, struct les_accel_todo *todo)
{
	struct les_accel_dir *d = &af->dir[s];
	s64 rto = les_early_copies_rto_us(af, s);
	struct les_held *h;
	bool first = true, all = false, far_holds = false;

	les_early_rto_set(d, rto);
	les_early_reneging(pn, af, s, now);
	if (d->loss && d->loss_paced)
		les_early_loss_resend(pn, af, s, todo);
	list_for_each_entry(h, &d->held, node) {
		if (!h->tx || h->sacked || h->waiting)
			continue;
		if (first) {
			/*
			 * Backed off for the timer's own resends only: a copy
			 * SACK recovery resent, lost again once nothing newer
			 * goes (the tail, or a window-limited flow), waits one
			 * timeout, not two (RFC 6298 5.5 doubles on expiry).
			 */
			if (ktime_us_delta(now, h->sent) <
			    min_t(s64, rto << min_t(u8, h->timeouts, 5),
				  LES_ACCEL_RTO_MAX_MS * USEC_PER_MSEC))
				return;
			first = false;
			all = d->rto_unanswered;
			d->rto_unanswered = true;
			d->loss = true;
			d->loss_go = false;
			d->loss_paced = false;
			d->loss_at = now;
			d->loss_high = les_early_sent_high(d);
			far_holds = les_early_far_holds(d, h);
		} else if (!all || after(h->end, les_early_send_limit(pn, d)) ||
			   (far_holds && h->beyond_window &&
			    after(h->end, d->rcv_edge))) {
			break;
		} else if (ktime_us_delta(now, h->sent) < rto) {
			continue;
		} else if (!les_pacer_room(&pn->accel.pacer, todo)) {
			if (!les_hop_queue_resend(pn, h, d))
				break;
			les_held_timeout(h);
			les_stat_inc(pn->net, LES_STAT_ACCEL_HOP_TIMEOUTS);
			continue;
		}
		if (les_held_send(h, todo)) {
			les_held_timeout(h);
			les_stat_inc(pn->net, LES_STAT_ACCEL_HOP_TIMEOUTS);
		}
	}
}

/*
 * The early ACK of @s's data, as the receiver would send it (its address,
 * port, sequence number and timestamp clock).  False if none is due.
 */
bool les_early_ack_desc(struct les_pep_net *pn, struct les_accel_flow *af,
			unsigned int s, struct les_ack_desc *desc)
{
	struct les_accel_dir *d = &af->dir[s];
	struct les_flow *f = af->flow;
	const struct les_flow_side *rcv = &f->side[!s];
	unsigned int alen = f->key.family == AF_INET ? 4 : 16;
	u32 space, win;
	u8 shift = les_side_wshift(rcv);

	if (!d->ack_due)
		return false;
	d->ack_due = false;
	if (d->late)
		return false;

	space = les_early_space(pn, d);
	if (after(d->ack_point + space, d->adv_edge))
		d->adv_edge = d->ack_point + space;
	win = les_win_field(&d->adv_edge, d->ack_point, shift);

	memset(desc, 0, sizeof(*desc));
	desc->family = f->key.family == AF_INET ? 4 : 6;
	memcpy(desc->saddr, &f->key.end[!s].addr, alen);
	memcpy(desc->daddr, &f->key.end[s].addr, alen);
	desc->sport = ntohs(f->key.end[!s].port);
	desc->dport = ntohs(f->key.end[s].port);
	desc->seq = rcv->have_next ? rcv->next : rcv->seq;
	desc->ack = d->ack_point;
	desc->win = win;
	desc->flags = LES_TCP_ACK;
	/* The receiver's clock, as far as it has shown it: never ahead. */
	desc->has_ts = d->ts && rcv->have_ts;
	desc->tsval = rcv->tsval;
	desc->tsecr = d->tsecr;
	if (desc->has_ts) {
		d->ts_sent = desc->tsval;
		d->ts_sent_valid = true;
	}
	return true;
}
