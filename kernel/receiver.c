// SPDX-License-Identifier: GPL-2.0
/*
 * The receiver's side (docs/accel.md 4): the PEP one LAN hop from the
 * receiver holds what the hop brings beyond the receiver's window, and
 * lets it go as the receiver's own ACKs open the window.  The receiver
 * then opens its window at LAN round trips: without this its first
 * window (64 kB on Linux) would cap every satellite round trip, since the
 * PEP on the sender's side sends at the hop's rate from the start.
 *
 * Held packets keep their order among themselves; what the window already
 * covers (a resent hole above all) never waits behind them.
 */
#include <net/tcp.h>

#include "les.h"
#include "pep.h"

/* The receiver's right edge, from its newest segment. */
static u32 les_rcv_edge(const struct les_flow_side *rcv)
{
	u8 shift = rcv->wscale == LES_WSCALE_NONE ? 0 : min_t(u8, rcv->wscale, 14);

	return rcv->ack + ((u32)rcv->win << shift);
}

/*
 * Data of @s, off the hop, for the receiver !@s.  Returns true if the
 * packet is held here; false if it goes on now.
 */
bool les_rcv_data(struct les_pep_net *pn, struct les_accel_flow *af,
		  unsigned int s, const struct les_pep_pkt *pkt,
		  struct sk_buff *skb, struct les_accel_todo *todo)
{
	struct les_accel_net *an = &pn->accel;
	struct les_accel_dir *d = &af->dir[s];
	const struct les_flow_side *rcv = &af->flow->side[!s];
	u32 end = pkt->tcp.seq + pkt->payload;
	struct les_held *h;

	/*
	 * Inside the window it goes on, even past held packets: it is a resent
	 * hole (the receiver's window moves only once the hole is filled), or
	 * data the window reached meanwhile.
	 */
	if (!pkt->payload || !(rcv->flags_seen & LES_TCP_ACK) ||
	    !after(end, les_rcv_edge(rcv)))
		return false;
	/* No room: it goes on, and the receiver drops what it cannot take. */
	if (d->over_bytes + pkt->payload > READ_ONCE(an->cfg.flow_buffer) ||
	    an->held_bytes + pkt->payload > READ_ONCE(an->cfg.buffer)) {
		les_stat_inc(pn->net, LES_STAT_ACCEL_FAIL_OPEN);
		return false;
	}
	h = les_held_new(skb, pkt->tcp.seq, end);
	if (!h) {
		les_stat_inc(pn->net, LES_STAT_ACCEL_ERRORS);
		return false;
	}
	list_add_tail(&h->node, &d->over);
	d->over_bytes += pkt->payload;
	an->held_bytes += pkt->payload;
	les_stat_inc(pn->net, LES_STAT_ACCEL_WINDOW_HELD);
	return true;
}

/* The receiver !@s showed its window: release what now fits, in order. */
void les_rcv_window(struct les_pep_net *pn, struct les_accel_flow *af,
		    unsigned int s, struct les_accel_todo *todo)
{
	struct les_accel_net *an = &pn->accel;
	struct les_accel_dir *d = &af->dir[s];
	u32 edge = les_rcv_edge(&af->flow->side[!s]);
	struct les_held *h, *tmp;

	list_for_each_entry_safe(h, tmp, &d->over, node) {
		if (after(h->end, edge))
			break;
		list_del(&h->node);
		d->over_bytes -= h->end - h->seq;
		an->held_bytes -= h->end - h->seq;
		__skb_queue_tail(&todo->release, h->skb);
		kfree(h);
	}
}
