// SPDX-License-Identifier: GPL-2.0
/*
 * The receiver's side (docs/accel.md 4): the PEP one LAN hop from the
 * receiver holds what the hop brings beyond the receiver's window, and
 * lets it go as the receiver's own ACKs open the window.  The receiver
 * then opens its window at LAN round trips: without this its first
 * window (64 kB on Linux) would cap every satellite round trip, since the
 * PEP on the sender's side sends at the hop's rate from the start.
 *
 * Held packets wait in sequence order, and go as the window reaches each:
 * a packet the hop reordered far ahead must not hold back those the window
 * already covers (seen: a hop reordering 2 % stalled a fetch).  What the
 * window covers on arrival (a resent hole above all) never waits.
 *
 * A receiver's window update can be lost on its way here; the receiver
 * has nothing more to say then, and its data waits here for ever.  So when
 * held packets have not moved for a while, the PEP probes the receiver as
 * the sender's persist timer would, with a pure ACK in the sender's name
 * on a PEP-origin SA toward the receiver (docs/accel.md 4): one below the
 * receiver's rcv_nxt, which it answers with an ACK that shows its window
 * (RFC 9293 3.10.7.4).  A held packet must not be the probe: the receiver
 * would drop it if it fell out of the window, and its xfrm would then
 * refuse it as a replay for good.
 *
 * The update can also be lost on the hop with nothing held here: the far
 * PEP sent what the window it knows allowed (peer-buffer 0, or what it
 * sent past the window was released), and waits for the receiver's next
 * word as a sender waits at a zero window.  The sender's persist timer
 * cannot help: the far PEP ACKed it early and gave it a window of its own.
 * This PEP cannot tell which updates got across; so when data has stopped
 * coming for twice the round trip to the sender while the receiver's
 * window is open past it, the receiver is probed too, a few times, and its
 * answer goes on to the far PEP (docs/accel.md 4).
 *
 * The same PEP thins the receiver's ACKs on their way onto the hop (RFC
 * 3449; docs/accel.md 4): a return link slower than the data's needs fewer
 * ACKs, and an LES ACK is larger than an ESP one.  A pure ACK that only
 * moves the cumulative ACK waits a little, and a newer one replaces it;
 * the older is dropped, never changed (BRIEF D3).  What carries anything
 * else goes at once, after the one waiting: data, SYN/FIN/RST/URG, SACK
 * blocks, a dup-ACK (it signals loss), a zero window or its reopening.
 */
#include <net/tcp.h>

#include "les.h"
#include "pep.h"

/*
 * The far PEP sends data past the receiver's window (up to its
 * peer-buffer) for this PEP to hold.  Forwarded instead, such a packet is
 * dropped by the receiver's TCP after its xfrm has seen the sequence
 * number: every resend of it is then refused as a replay, and the data,
 * ACKed early, is lost.  Nothing comes off the hop while it is down, so
 * how lately data came cannot tell whether the far PEP still holds some.
 *
 * True while the far PEP may send the data of @s past the window: while
 * some is held here, and else for LES_ACCEL_HOLD_TIMEOUT_S after the
 * newest data, as long as a flow holding data ACKed early outlives its
 * last packet (flow.c); not before a far PEP has sent past a window here,
 * unless this PEP has a peer-buffer (the far PEP of a pair set up alike
 * sends past windows too, after a hop outage if not before), nor before
 * the receiver has answered
 * (one segment to a silent host keeps nothing), nor after a RST or once
 * the receiver has ACKed the sender's FIN.  The flow here is then the
 * only keeper of the receiver's window: it is not let go (flow.c), and
 * holds what comes past the window with acceleration off too.
 */
bool les_rcv_relied_on(const struct les_accel_net *an,
		       const struct les_accel_flow *af, unsigned int s)
{
	const struct les_flow_side *snd = &af->flow->side[s];
	const struct les_flow_side *rcv = &af->flow->side[!s];
	const struct les_accel_dir *d = &af->dir[s];

	if (!list_empty(&d->over))
		return true;
	if (!d->off_hop ||
	    !(an->held_past_window || READ_ONCE(an->cfg.peer_buffer)) ||
	    !(rcv->flags_seen & LES_TCP_ACK) ||
	    ((snd->flags_seen | rcv->flags_seen) & LES_TCP_RST))
		return false;
	if (snd->fin && !after(snd->next, rcv->ack))
		return false;
	return time_before(jiffies, d->off_hop + LES_ACCEL_HOLD_TIMEOUT_S * HZ);
}

/*
 * Is data of @d held past its receiver's window, or has some come within
 * LES_RCV_QUIET_MS?  A key that went is kept that long only (drain.c):
 * once data has stopped, the endpoints let go of their SA too, and what
 * the far PEP resends under it could not be delivered for long.
 */
bool les_rcv_recent(const struct les_accel_dir *d)
{
	return !list_empty(&d->over) ||
	       (d->off_hop &&
		time_before(jiffies, d->off_hop + msecs_to_jiffies(LES_RCV_QUIET_MS)));
}

/*
 * Of a flow whose SYN-ACK went by unseen (picked up mid-stream), the
 * receiver's window scale may be unknown and its window taken unscaled
 * (flow.c): does a segment from @seq fill the hole that window waits
 * at?  Its TCP queues a segment from its next sequence number on whole
 * while its window is open (tcp_data_queue()), however far the segment
 * reaches: held here, it would be what the underestimated window waits
 * for, for good.
 */
static bool les_rcv_fills(const struct les_flow_side *snd,
			  const struct les_flow_side *rcv, u32 seq)
{
	return !rcv->scaled && !(snd->have_isn && rcv->have_isn) &&
	       !after(seq, rcv->ack) && rcv->win;
}

/*
 * Would the receiver !@s drop the data of @s from @seq to @end as past its
 * window?  Forwarded, it would be lost then (les_rcv_data()).
 */
bool les_rcv_past_window(const struct les_flow *f, unsigned int s, u32 seq,
			 u32 end)
{
	const struct les_flow_side *rcv = &f->side[!s];

	return (rcv->flags_seen & LES_TCP_ACK) &&
	       after(end, les_side_edge(rcv)) &&
	       !les_rcv_fills(&f->side[s], rcv, seq);
}

/*
 * Data of @s, off the hop, for the receiver !@s.  Returns true if the
 * packet is held here, or dropped; false if it goes on now.
 */
bool les_rcv_data(struct les_pep_net *pn, struct les_accel_flow *af,
		  unsigned int s, const struct les_pep_pkt *pkt,
		  struct sk_buff *skb, struct xfrm_state *view)
{
	struct les_accel_net *an = &pn->accel;
	struct les_accel_dir *d = &af->dir[s];
	u32 end = pkt->tcp.seq + pkt->payload;
	struct les_held *h, *pos;
	bool full = true;

	/*
	 * Inside the window it goes on, even past held packets: it is a resent
	 * hole (the receiver's window moves only once the hole is filled), or
	 * data the window reached meanwhile.
	 */
	if (!pkt->payload ||
	    !les_rcv_past_window(af->flow, s, pkt->tcp.seq, end))
		return false;
	/*
	 * No room: dropped here, where it was never seen.  Forwarded, the
	 * receiver's TCP would drop it too, but only after its xfrm took the
	 * sequence number, and refused every resend of the data from then
	 * on: data the far PEP ACKed early, lost.  Dropped, it comes again
	 * (the far PEP's copy, or its sender's).
	 */
	h = d->over_bytes + pkt->payload <= READ_ONCE(an->cfg.flow_buffer) ?
	    les_held_new(an, skb, pkt->tcp.seq, end, &full) : NULL;
	if (!h) {
		les_stat_inc(pn->net, full ? LES_STAT_ACCEL_OVER_DROPS :
					     LES_STAT_ACCEL_ERRORS);
		kfree_skb(skb);
		return true;
	}
	if (list_empty(&d->over)) {
		d->over_moved = ktime_get();
		d->probes = 0;
	}
	/* The SA to probe with: found once, again if it went away. */
	if (!les_origin_renew(an, &d->probe_origin, af->flow, s))
		d->probe_origin = les_origin_find(an, view, true, af->flow, s);
	/* In sequence order; from the tail, where in-order data goes. */
	list_for_each_entry_reverse(pos, &d->over, node)
		if (!after(pos->seq, h->seq))
			break;
	list_add(&h->node, &pos->node);
	an->held_past_window = true;
	d->over_bytes += pkt->payload;
	an->held_bytes += pkt->payload;
	les_stat_inc(pn->net, LES_STAT_ACCEL_WINDOW_HELD);
	return true;
}

/*
 * A copy of a packet held here came off the hop again (the far PEP's
 * resend: the PEP's replay window refused its header zone, which is
 * authentic).  Forwarded, it would reach the receiver before the held one,
 * past the window: its TCP would drop it, and its xfrm, having seen the
 * sequence number, would then refuse the held one and every later resend.
 * True if @pkt's data is held here: the copy is dropped.
 */
bool les_rcv_holds(struct les_flow *f, unsigned int from,
		   const struct les_pep_pkt *pkt)
{
	u32 seq = pkt->tcp.seq, end = seq + pkt->payload;
	struct les_accel_flow *af = f->accel;
	struct les_held *h;

	if (!af || !pkt->payload)
		return false;
	list_for_each_entry(h, &af->dir[from].over, node) {
		if (after(h->seq, seq))
			break;
		if (!after(end, h->end))
			return true;
	}
	return false;
}

/* The receiver !@s showed its window: release what now fits, in order. */
void les_rcv_window(struct les_pep_net *pn, struct les_accel_flow *af,
		    unsigned int s, struct les_accel_todo *todo)
{
	struct les_accel_net *an = &pn->accel;
	struct les_accel_dir *d = &af->dir[s];
	struct les_held *h, *tmp;

	list_for_each_entry_safe(h, tmp, &d->over, node) {
		if (les_rcv_past_window(af->flow, s, h->seq, h->end))
			break;
		list_del(&h->node);
		d->over_bytes -= h->end - h->seq;
		an->held_bytes -= h->end - h->seq;
		__skb_queue_tail(&todo->release, h->skb);
		les_held_node_free(an, h);
		d->over_moved = ktime_get();
		d->update_since = d->over_moved;
		d->probes = 0;
	}
}

/* Data of @s off the hop, held here or not: the far PEP is sending. */
void les_rcv_data_seen(struct les_pep_net *pn, struct les_accel_flow *af,
		       unsigned int s, const struct les_pep_pkt *pkt,
		       struct xfrm_state *view)
{
	struct les_accel_dir *d = &af->dir[s];
	u32 end = pkt->tcp.seq + pkt->payload;

	if (!pkt->payload)
		return;
	if (!d->update_since || after(end, d->hop_end))
		d->hop_end = end;
	d->update_edge = les_side_edge(&af->flow->side[!s]);
	d->update_probes = 0;
	d->update_since = ktime_get();
	if (!les_origin_renew(&pn->accel, &d->probe_origin, af->flow, s))
		d->probe_origin = les_origin_find(&pn->accel, view, true,
						  af->flow, s);
}

/*
 * The receiver !@s sent a segment onto the hop: if it opens the window a
 * segment or more past what it had, that is news the far PEP may wait
 * for; probes for it start again.  (A probe's answer opens nothing new.)
 */
void les_rcv_update_seen(struct les_accel_flow *af, unsigned int s)
{
	struct les_accel_dir *d = &af->dir[s];
	u32 edge = les_side_edge(&af->flow->side[!s]);
	u16 mss = af->flow->side[s].mss ?: 536;

	if (d->update_since && !before(edge, d->update_edge + mss)) {
		d->update_edge = edge;
		d->update_probes = 0;
		d->update_since = ktime_get();
	}
}

static void les_rcv_probe_make_due(struct les_pep_net *pn,
				   struct les_accel_flow *af,
				   struct les_accel_dir *d, bool update)
{
	d->probe_due = true;
	d->update_probe = update;
	if (list_empty(&af->ack_node))
		list_add_tail(&af->ack_node, &pn->accel.ack_due);
}

/*
 * Data came off the hop, and no update probe since it stopped says more
 * (nor could one go: no PEP-origin SA to send it on).
 */
static bool les_rcv_update_armed(const struct les_accel_flow *af,
				 unsigned int s)
{
	const struct les_accel_dir *d = &af->dir[s];

	return d->update_since && d->probe_origin && !af->flow->side[s].fin &&
	       d->update_probes < LES_RCV_UPDATE_PROBES &&
	       after(les_side_edge(&af->flow->side[!s]), d->hop_end);
}

/*
 * Nothing held, and the far PEP's data stopped with the receiver's window
 * open past it: the receiver is probed after twice the round trip to the
 * sender (at least LES_RCV_PROBE_MS), doubling, at most
 * LES_RCV_UPDATE_PROBES times unless data or a new opening comes; never
 * once the sender sent its FIN.  A sender with nothing more to send costs
 * three probes, and their answers on the hop, each time its data stops.
 */
static void les_rcv_update_timer(struct les_pep_net *pn,
				 struct les_accel_flow *af, unsigned int s,
				 ktime_t now)
{
	struct les_accel_dir *d = &af->dir[s];
	const struct les_flow_side *snd = &af->flow->side[s];
	s64 wait = LES_RCV_PROBE_MS * USEC_PER_MSEC;

	if (!les_rcv_update_armed(af, s))
		return;
	wait = max_t(s64, wait,
		     2LL * (snd->rtt.samples ? snd->rtt.srtt_us : USEC_PER_SEC));
	wait <<= d->update_probes;
	if (ktime_us_delta(now, d->update_since) < wait)
		return;
	d->update_since = now;
	d->update_probes++;
	les_rcv_probe_make_due(pn, af, d, true);
}

/*
 * The tick: held packets that have not moved for a probe interval (twice
 * the LAN round trip to the receiver, at least LES_RCV_PROBE_MS, doubled
 * for each probe unanswered) make a probe due; with nothing held, a window
 * update that may have been lost does.
 */
void les_rcv_probe_timer(struct les_pep_net *pn, struct les_accel_flow *af,
			 unsigned int s, ktime_t now)
{
	struct les_accel_dir *d = &af->dir[s];
	const struct les_flow_side *rcv = &af->flow->side[!s];
	s64 wait = LES_RCV_PROBE_MS * USEC_PER_MSEC;

	if (d->probe_due ||
	    !les_origin_renew(&pn->accel, &d->probe_origin, af->flow, s))
		return;
	if (list_empty(&d->over)) {
		les_rcv_update_timer(pn, af, s, now);
		return;
	}
	if (rcv->rtt.samples)
		wait = max_t(s64, wait, 2LL * rcv->rtt.srtt_us);
	wait <<= min_t(u8, d->probes, LES_RCV_PROBE_BACKOFF_MAX);
	if (ktime_us_delta(now, d->over_moved) < wait)
		return;
	d->over_moved = now;
	if (d->probes < U8_MAX)
		d->probes++;
	les_rcv_probe_make_due(pn, af, d, false);
}

/*
 * Has the tick anything to do for the data of @s at its receiver's side: a
 * thinned ACK waiting, data held past the window, a probe due or an update
 * probe to come?  Only a packet of the flow can make it so again (one the
 * engine took, or, for the window, one only the flow table saw: the
 * tick's sweep finds those).
 */
bool les_rcv_timed(const struct les_accel_flow *af, unsigned int s)
{
	const struct les_accel_dir *d = &af->dir[s];

	return d->thin_skb || d->probe_due || !list_empty(&d->over) ||
	       les_rcv_update_armed(af, s);
}

/*
 * The probe of the receiver !@s for the data of @s: a pure ACK as @s would
 * send it, one below what the receiver has ACKed, with @s's newest
 * timestamp (never older than the receiver's ts_recent: no PAWS drop; and
 * out of window, it does not become ts_recent).
 * False if none is due or the receiver's ACK is not known.
 */
bool les_rcv_probe_desc(struct les_accel_flow *af, unsigned int s,
			struct les_ack_desc *desc)
{
	struct les_accel_dir *d = &af->dir[s];
	const struct les_flow *f = af->flow;
	const struct les_flow_side *snd = &f->side[s], *rcv = &f->side[!s];
	unsigned int alen = f->key.family == AF_INET ? 4 : 16;

	if (!d->probe_due)
		return false;
	d->probe_due = false;
	if (!(rcv->flags_seen & LES_TCP_ACK) || !(snd->flags_seen & LES_TCP_ACK))
		return false;
	memset(desc, 0, sizeof(*desc));
	desc->family = f->key.family == AF_INET ? 4 : 6;
	memcpy(desc->saddr, &f->key.end[s].addr, alen);
	memcpy(desc->daddr, &f->key.end[!s].addr, alen);
	desc->sport = ntohs(f->key.end[s].port);
	desc->dport = ntohs(f->key.end[!s].port);
	desc->seq = rcv->ack - 1;
	/*
	 * The receiver's own data, if this PEP ACKs it early, was ACKed up
	 * to the ACK point in @s's name: an older ACK would be stale to it.
	 */
	desc->ack = snd->ack;
	if (af->dir[!s].early && !af->dir[!s].late &&
	    after(af->dir[!s].ack_point, desc->ack))
		desc->ack = af->dir[!s].ack_point;
	desc->win = snd->win;
	desc->flags = LES_TCP_ACK;
	desc->has_ts = snd->have_ts && rcv->have_ts;
	desc->tsval = snd->tsval;
	desc->tsecr = rcv->tsval;
	d->probe_out = true;
	return true;
}

/*
 * A segment of the receiver after a probe: its answer, if it is a pure ACK
 * that says nothing the far side has not had (same ACK, same window).
 * That one stops here: it would reach the far PEP as a dup-ACK.  The
 * answer to a probe for a lost update goes on: the far side may not have
 * had what it says.
 */
bool les_rcv_probe_answer(struct les_accel_dir *d, const struct les_pep_pkt *pkt)
{
	const struct les_tcp_seg *t = &pkt->tcp;

	if (!d->probe_out)
		return false;
	d->probe_out = false;
	return !d->update_probe && !pkt->payload && t->flags == LES_TCP_ACK && !t->sack_n &&
	       d->fwd_valid && t->ack == d->fwd_ack && t->win == d->fwd_win &&
	       !d->thin_skb;
}

/* Let the waiting ACK of @d go onto the hop (flow table lock held). */
static void les_rcv_thin_send(struct les_pep_net *pn, struct les_accel_dir *d,
			      struct les_accel_todo *todo)
{
	if (!d->thin_skb)
		return;
	/* Dropped at a bound, the ACK was not forwarded: not said. */
	if (les_hop_queue_skb(pn, d->thin_skb, todo, false))
		d->fwd_ack = d->thin_ack;
	d->thin_skb = NULL;
}

/* The tick: a waiting ACK older than LES_THIN_MS goes (0 @now: at once). */
void les_rcv_thin_flush(struct les_pep_net *pn, struct les_accel_dir *d,
			struct les_accel_todo *todo, ktime_t now)
{
	if (d->thin_skb && (!now || ktime_ms_delta(now, d->thin_since) >= LES_THIN_MS))
		les_rcv_thin_send(pn, d, todo);
}

/*
 * A segment of the receiver !@s on its way onto the hop, with what it says
 * of the data of @s.  Returns true if the engine keeps it (a pure ACK
 * that waits); false if it goes on now, after any ACK that was waiting.
 */
bool les_rcv_thin(struct les_pep_net *pn, struct les_accel_flow *af,
		  unsigned int s, const struct les_pep_pkt *pkt,
		  struct sk_buff *skb, struct les_accel_todo *todo)
{
	struct les_accel_dir *d = &af->dir[s];
	const struct les_tcp_seg *t = &pkt->tcp;
	u16 mss = af->flow->side[s].mss ?: 1460;
	bool thin;

	thin = !pkt->payload && t->flags == LES_TCP_ACK && !t->sack_n && t->win &&
	       d->fwd_valid && d->fwd_win && after(t->ack, d->fwd_ack) &&
	       (!d->thin_skb || after(t->ack, d->thin_ack));
	if (!thin) {
		les_rcv_thin_send(pn, d, todo);
		if (t->flags & LES_TCP_ACK) {
			d->fwd_ack = t->ack;
			d->fwd_win = t->win;
			d->fwd_valid = true;
		}
		return false;
	}
	if (d->thin_skb) {
		__skb_queue_tail(&todo->drop, d->thin_skb);
		les_stat_inc(pn->net, LES_STAT_ACCEL_THINNED);
	} else {
		d->thin_since = ktime_get();
	}
	d->thin_skb = skb;
	d->thin_ack = t->ack;
	d->fwd_win = t->win;
	/* Enough data ACKed: it goes now, the next one waits again. */
	if (t->ack - d->fwd_ack >= LES_THIN_SEGMENTS * (u32)mss)
		les_rcv_thin_send(pn, d, todo);
	return true;
}
