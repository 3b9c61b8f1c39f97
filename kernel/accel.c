// SPDX-License-Identifier: GPL-2.0
/*
 * The acceleration engine's frame (docs/accel.md): which flows it takes,
 * which part of a packet goes to which side, and what a batch decided.
 *
 * A packet that crosses the hop plays two parts.  Its data belongs to the
 * direction of its sender x, its ACK to the direction of the other end:
 *
 *               data of x                    ACK of the other end's data
 *   to the hop  x's sender side: early ACK,  x is that data's receiver:
 *               hold, pace (early_ack.c)     its window (receiver.c)
 *   off the hop x's data's receiver side:    that data's sender side:
 *               past the window (receiver.c) free, recover, absorb
 *
 * The opener calls in here with the flow table's lock held; what it
 * decides for the packets (forward, pace, absorb) and the early ACKs are
 * carried out after the lock is dropped, at the end of the batch.
 */
#include <linux/slab.h>
#include <net/tcp.h>

#include "les.h"
#include "pep.h"

void les_accel_todo_init(struct les_accel_todo *todo, struct les_pacer *pacer)
{
	todo->pacer = pacer;
	__skb_queue_head_init(&todo->release);
	__skb_queue_head_init(&todo->pace);
	__skb_queue_head_init(&todo->drop);
	todo->absorbed = false;
	todo->pace_bytes = 0;
}

static struct les_accel_flow *les_accel_flow_get(struct les_pep_net *pn,
						 struct les_flow *f)
{
	struct les_accel_flow *af = f->accel;
	unsigned int i;

	if (af)
		return af;
	af = kzalloc(sizeof(*af), GFP_ATOMIC | __GFP_ACCOUNT);
	if (!af) {
		les_stat_inc(pn->net, LES_STAT_ACCEL_ERRORS);
		return NULL;
	}
	af->flow = f;
	INIT_LIST_HEAD(&af->ack_node);
	INIT_LIST_HEAD(&af->timed);
	for (i = 0; i < 2; i++) {
		INIT_LIST_HEAD(&af->dir[i].held);
		INIT_LIST_HEAD(&af->dir[i].over);
	}
	list_add_tail(&af->node, &pn->accel.flows);
	atomic_inc(&pn->accel.active);
	f->accel = af;
	if (list_is_singular(&pn->accel.flows))
		les_accel_tick_queue(&pn->accel,
				     msecs_to_jiffies(LES_ACCEL_TICK_MS), false);
	return af;
}

/*
 * Flow table lock held: the flow goes, and what it holds that the receiver
 * has not ACKed is counted; copies not yet sent still go.  Side @reset_by
 * (-1: neither) ended the connection with a RST its peer takes: what was
 * held for it goes as its TCP's unread data does, unless some of it could
 * no longer arrive (refused as replays: the guard gave up, or marks were
 * taken back), lost before the RST.
 */
static void les_accel_flow_release(struct les_pep_net *pn, struct les_flow *f,
				   int reset_by)
{
	struct les_accel_flow *af = f->accel;
	struct les_accel_net *an = &pn->accel;
	struct sk_buff_head out;
	unsigned int i;
	u32 lost;

	if (!af)
		return;
	__skb_queue_head_init(&out);
	for (i = 0; i < 2; i++) {
		struct les_accel_dir *d = &af->dir[i];
		bool reset = reset_by == !i && !d->unguarded && !d->reneged;

		if (d->thin_skb)
			__skb_queue_tail(&out, d->thin_skb);
		lost = les_held_purge(an, d, &out);
		if (lost)
			les_stat_add(pn->net, reset ? LES_STAT_ACCEL_RESET_BYTES :
				     LES_STAT_ACCEL_LOST, lost);
		if (d->origin)
			xfrm_state_put(d->origin);
		if (d->probe_origin)
			xfrm_state_put(d->probe_origin);
		les_view_put(pn, &d->view);
	}
	list_del(&af->node);
	list_del(&af->ack_node);
	list_del(&af->timed);
	atomic_dec(&an->active);
	f->accel = NULL;
	kfree(af);
	if (!skb_queue_empty(&out)) {
		spin_lock_bh(&an->orphans.lock);
		skb_queue_splice_tail(&out, &an->orphans);
		spin_unlock_bh(&an->orphans.lock);
		les_accel_tick_queue(an, 0, true);
	}
}

void les_accel_flow_free(struct les_pep_net *pn, struct les_flow *f)
{
	les_accel_flow_release(pn, f, -1);
}

/*
 * Side @from's RST @seg, in the window (flow.c), ends @f (docs/accel.md 8).
 * Taken by the other TCP only at its next expected byte; elsewhere that
 * TCP goes on, and what was held for @from is lost.
 */
void les_accel_flow_reset(struct les_pep_net *pn, struct les_flow *f,
			  unsigned int from, const struct les_tcp_seg *seg)
{
	les_accel_flow_release(pn, f, les_flow_rst_at_point(f, from, seg) ?
				      (int)from : -1);
}

/*
 * Does @f hold data ACKed early, or may the far PEP count on it to hold
 * what it sends past a receiver's window (receiver.c)?  Then it is the
 * only keeper of that data, or of that window: neither evicted nor
 * flushed, and idle only after LES_ACCEL_HOLD_TIMEOUT_S (flow.c).  Made
 * again from the next packet, it would know no window, and forward what
 * the far PEP sent past it.
 */
bool les_accel_flow_busy(const struct les_flow_table *t,
			 const struct les_flow *f)
{
	const struct les_accel_net *an =
		&container_of(t, struct les_pep_net, flows)->accel;
	const struct les_accel_flow *af = f->accel;

	return af && (af->dir[0].held_bytes || af->dir[1].held_bytes ||
		      les_rcv_relied_on(an, af, 0) ||
		      les_rcv_relied_on(an, af, 1));
}

/* The receiver's replay window, as its pep-view key gives it. */
static u32 les_accel_replay_window(const struct xfrm_state *view)
{
	return view->replay_esn ? view->replay_esn->replay_window :
				  view->props.replay_window;
}

/*
 * A copy this PEP resends keeps its ESP sequence number, and the receiver's
 * xfrm refuses one that comes more than its replay window behind the
 * newest packet of the SA: that data, ACKed early, could never arrive
 * (docs/accel.md 1).  The window is the pep-view key's, which mirrors the
 * endpoint's SA (0: not said, and no flow is taken: neither this check
 * nor the replay guard could work).  It must span what the hop
 * carries of the SA until the timer's first resend, two round trips at
 * hop-rate in segments of the flow's MSS, and the LAN's reordering.
 */
static bool les_accel_window_short(struct les_pep_net *pn,
				   const struct les_flow *f, unsigned int s,
				   const struct xfrm_state *view)
{
	const struct les_flow_side *rcv = &f->side[!s];
	u32 window = les_accel_replay_window(view);
	u64 rate = READ_ONCE(pn->accel.cfg.hop_rate);
	u64 packets;

	/* A key that does not say its window: the guard could not work. */
	if (!window)
		return true;
	if (!rate)
		return false;
	/* kbit/s x us = bytes x 8000 */
	packets = div64_u64(rate * les_early_rto_us(f, !s),
			    8000ULL * les_side_mss(rcv));
	return packets + LES_ACCEL_REORDER_SLACK > window;
}

/*
 * Start early-ACKing the data of @s with this segment, if it may be: the
 * handshake was seen (window scales), and the segment is new data.  If the
 * receiver has ACKed all data before it, at once: nothing unheld is in
 * flight, so an ACK of ours can only ever stand for data we hold.  If not
 * (switched on mid-transfer, or this PEP saw the receiver's ACK late), the
 * start is late: what follows is held, and ACKed by us once the receiver's
 * own ACKs have covered what was in flight (early_ack.c).  Needs a
 * PEP-origin SA toward @s.
 */
static void les_accel_start(struct les_pep_net *pn, struct les_flow *f,
			    unsigned int s, const struct les_pep_pkt *pkt,
			    struct xfrm_state *view)
{
	const struct les_flow_side *rcv = &f->side[!s];
	struct les_accel_flow *af;
	struct les_accel_dir *d;
	struct xfrm_state *origin;

	if (!pkt->payload || !f->handshake || f->state != LES_FLOW_ESTABLISHED ||
	    !(rcv->flags_seen & LES_TCP_ACK) || before(pkt->tcp.seq, rcv->ack) ||
	    f->side[s].next != pkt->tcp.seq + pkt->payload ||
	    (f->accel && f->accel->dir[s].early) || f->side[s].window_short)
		return;
	if (les_accel_window_short(pn, f, s, view)) {
		f->side[s].window_short = true;
		les_stat_inc(pn->net, LES_STAT_ACCEL_WINDOW_SHORT);
		return;
	}
	origin = les_origin_find(&pn->accel, view, false, f, !s);
	if (!origin)
		return;
	af = les_accel_flow_get(pn, f);
	if (!af) {
		xfrm_state_put(origin);
		return;
	}
	d = &af->dir[s];
	if (d->origin)
		xfrm_state_put(d->origin);
	d->origin = origin;
	d->early = true;
	d->late = rcv->ack != pkt->tcp.seq;
	d->start = pkt->tcp.seq;
	d->ts = pkt->tcp.has_ts;
	d->ts_passed_valid = false;
	d->ack_point = pkt->tcp.seq;
	d->adv_edge = pkt->tcp.seq;
	d->rcv_ack = rcv->ack;
	d->rcv_edge = les_side_edge(rcv);
	d->rcv_known = true;
	d->edge_old = d->rcv_edge;
	d->edge_new = d->rcv_edge;
	d->edge_new_at = ktime_get();
	d->loss = false;
	d->rto_unanswered = false;
	d->dupacks = 0;
	d->unheld = false;
	d->replay_window = les_accel_replay_window(view);
	les_early_rto_set(d, les_early_copies_rto_us(af, s));
	les_stat_inc(pn->net, LES_STAT_ACCEL_FLOWS);
	if (d->late)
		les_stat_inc(pn->net, LES_STAT_ACCEL_LATE_STARTS);
}

/* No new early ACKs for @d's data; what is held is still delivered. */
void les_accel_early_stop(struct les_accel_dir *d)
{
	d->early = false;
	d->late = false;
	d->ack_due = false;
	/* A deleted SA must not live on here (nor keep the module). */
	if (d->origin) {
		xfrm_state_put(d->origin);
		d->origin = NULL;
	}
}

/*
 * The PEP-origin SA of @f's data from @s still works, or another one
 * replaces it.
 */
static bool les_accel_origin_ok(struct les_pep_net *pn, struct les_flow *f,
				unsigned int s, struct xfrm_state *view)
{
	struct les_accel_dir *d = &f->accel->dir[s];

	if (!les_origin_renew(&pn->accel, &d->origin, f, !s))
		d->origin = les_origin_find(&pn->accel, view, false, f, !s);
	return d->origin;
}

void les_accel_packet(struct les_pep_net *pn, struct les_flow *f,
		      unsigned int from, const struct les_pep_pkt *pkt,
		      struct sk_buff *skb, struct xfrm_state *view, bool to_hop,
		      struct les_accel_todo *todo)
{
	struct les_accel_net *an = &pn->accel;
	struct les_accel_flow *af;
	struct les_accel_dir *d;
	bool on, gone = les_key_gone(view), late = READ_ONCE(an->late);

	/*
	 * The handshake is the flow table's alone, and a SYN after it starts
	 * nothing (flow.c): neither is data or an ACK of the connection held
	 * here, whose sequence space a new ISN's would only confuse.  It goes
	 * after a receiver's ACK that waits (receiver.c).
	 */
	if ((pkt->tcp.flags & (LES_TCP_SYN | LES_TCP_RST)) == LES_TCP_SYN) {
		if (to_hop && f->accel)
			les_rcv_thin_flush(pn, &f->accel->dir[!from], todo, 0);
		goto pass;
	}
	/*
	 * A key that went only drains what is held; until the other side's
	 * packets come under a valid key again, its ACKs cannot be read
	 * (drain.c).
	 */
	if (!gone)
		f->side[from].key_went = false;
	on = READ_ONCE(an->cfg.on) && !gone && !f->side[!from].key_went;

	/*
	 * Late (accel.h), no new data is ACKed early; what a far PEP sends
	 * past a receiver's window, counting on this one, is still held (4).
	 */
	if (on && !late && to_hop)
		les_accel_start(pn, f, from, pkt, view);
	af = f->accel;
	if (!af && on && !to_hop && pkt->payload) {
		af = les_accel_flow_get(pn, f);
		/*
		 * No memory to hold data past its receiver's window: dropped,
		 * as les_rcv_data() drops it with no room (receiver.c).
		 */
		if (!af && les_rcv_past_window(f, from, pkt->tcp.seq,
					       pkt->tcp.seq + pkt->payload)) {
			les_stat_inc(pn->net, LES_STAT_ACCEL_ERRORS);
			kfree_skb(skb);
			return;
		}
	}
	if (!af) {
		/*
		 * The tick marks only the flows it holds; one that holds
		 * nothing must not start again before this side's key is back.
		 */
		if (gone)
			f->side[from].key_went = true;
		goto pass;
	}

	d = &af->dir[from];
	if (list_empty(&af->timed))
		list_add_tail(&af->timed, &an->timed);
	les_view_set(pn, &d->view, view);
	/* A straggler under a key that went, its side moved on (a rekey). */
	if (gone && d->view && !les_view_gone(d->view)) {
		gone = false;
		on = READ_ONCE(an->cfg.on) && !f->side[!from].key_went;
	}
	if (gone)
		f->side[from].key_went = true;
	/* Nothing new is held that only a key gone could free. */
	if (les_view_gone(af->dir[!from].view))
		on = false;
	/* Switched off, late, or the key to ACK with gone: no new early ACKs. */
	if (d->early && (!on || late || !les_accel_origin_ok(pn, f, from, view)))
		les_accel_early_stop(d);
	/*
	 * This packet's key went: it reads the ACKs of the other side's
	 * data, which we then ACK no more, not even to open the window.
	 */
	if (gone && af->dir[!from].early)
		les_accel_early_stop(&af->dir[!from]);
	if (pkt->tcp.flags & LES_TCP_RST) {
		/* The connection is over: let go of everything, forward it. */
		les_accel_flow_reset(pn, f, from, &pkt->tcp);
		goto pass;
	}

	if (to_hop) {
		les_rcv_window(pn, af, !from, todo);
		les_rcv_update_seen(af, !from);
		if (les_rcv_probe_answer(&af->dir[!from], pkt)) {
			les_stat_inc(pn->net, LES_STAT_ACCEL_ABSORBED_ACKS);
			les_accel_absorb(todo, skb);
			return;
		}
		if (on && les_rcv_thin(pn, af, !from, pkt, skb, todo))
			return;
		/* Not thinned: an ACK still waiting goes first (older TSval). */
		les_rcv_thin_flush(pn, &af->dir[!from], todo, 0);
		les_early_data(pn, af, from, pkt, skb, todo);
	} else {
		bool absorb = les_early_rcv_ack(pn, af, !from, pkt, todo) ||
			      les_early_stale_ack(&af->dir[!from], pkt);

		if (pkt->payload) {
			d->off_hop = jiffies | 1;
			les_rcv_data_seen(pn, af, from, pkt, view);
		}
		if (pkt->payload || !absorb) {
			if (!les_rcv_data(pn, af, from, pkt, skb, view))
				__skb_queue_tail(&todo->release, skb);
		} else {
			les_stat_inc(pn->net, LES_STAT_ACCEL_ABSORBED_ACKS);
			les_accel_absorb(todo, skb);
		}
	}
	/* Nothing left to do for it: a plain observed flow again. */
	if (!on && !les_accel_flow_busy(&pn->flows, f) &&
	    !af->dir[0].early && !af->dir[1].early)
		les_accel_flow_free(pn, f);
	return;

pass:
	if (to_hop)
		les_hop_queue_skb(pn, skb, todo, false);
	else
		__skb_queue_tail(&todo->release, skb);
}

/* Carry out @todo: data onto the hop or on its way, early ACKs, drops. */
static void les_accel_todo_run(struct les_pep_net *pn,
			       struct les_accel_todo *todo)
{
	struct sk_buff *skb;

	les_pacer_queue(&pn->accel.pacer, &todo->pace);
	if (!skb_queue_empty(&todo->release)) {
		local_bh_disable();
		while ((skb = __skb_dequeue(&todo->release)))
			les_accel_release(&pn->accel, skb);
		local_bh_enable();
	}
	while ((skb = __skb_dequeue(&todo->drop)))
		consume_skb(skb);
}

struct les_ack_job {
	struct xfrm_state *x;
	struct les_ack_desc d;
	enum les_stat sent;
};

#define LES_ACK_JOBS	12

static void les_ack_job_add(struct les_ack_job *job, struct xfrm_state *x,
			    enum les_stat sent)
{
	job->x = x;
	job->sent = sent;
	xfrm_state_hold(x);
}

/*
 * The early ACKs and receiver probes the batch (or the tick) made due:
 * built under the lock, sent after.
 */
static void les_accel_send_acks(struct les_pep_net *pn, bool tick)
{
	struct les_accel_net *an = &pn->accel;
	struct les_ack_job jobs[LES_ACK_JOBS];
	struct les_accel_flow *af;
	unsigned int n, i, s;

	do {
		n = 0;
		spin_lock_bh(&pn->flows.lock);
		while (n + 4 <= LES_ACK_JOBS && !list_empty(&an->ack_due) &&
		       !(tick && an->batching)) {
			af = list_first_entry(&an->ack_due, struct les_accel_flow,
					      ack_node);
			list_del_init(&af->ack_node);
			for (s = 0; s < 2; s++) {
				struct les_accel_dir *d = &af->dir[s];

				/* None due if none can be sent (early ACKs stopped). */
				if (!d->origin)
					d->ack_due = false;
				else if (les_early_ack_desc(pn, af, s, &jobs[n].d))
					les_ack_job_add(&jobs[n++], d->origin,
							LES_STAT_ACCEL_EARLY_ACKS);
				if (!d->probe_origin)
					d->probe_due = false;
				else if (les_rcv_probe_desc(af, s, &jobs[n].d))
					les_ack_job_add(&jobs[n++], d->probe_origin,
							LES_STAT_ACCEL_WINDOW_PROBES);
			}
		}
		spin_unlock_bh(&pn->flows.lock);
		for (i = 0; i < n; i++) {
			if (les_origin_send(jobs[i].x, &jobs[i].d))
				les_stat_inc(pn->net, LES_STAT_ACCEL_ERRORS);
			else
				les_stat_inc(pn->net, jobs[i].sent);
			xfrm_state_put(jobs[i].x);
		}
	} while (n);
}

/* The start of an opener batch: early ACKs now wait for its end. */
void les_accel_batch_start(struct les_pep_net *pn)
{
	spin_lock_bh(&pn->flows.lock);
	pn->accel.batching = true;
	spin_unlock_bh(&pn->flows.lock);
}

/* The end of an opener batch: what it forwards first, then its ACKs. */
void les_accel_batch_end(struct les_pep_net *pn, struct les_accel_todo *todo)
{
	les_accel_todo_run(pn, todo);
	spin_lock_bh(&pn->flows.lock);
	pn->accel.batching = false;
	spin_unlock_bh(&pn->flows.lock);
	les_accel_send_acks(pn, false);
}

/* Packets of flows that went away: forwarded, paced like the rest. */
static void les_accel_orphans(struct les_pep_net *pn)
{
	struct les_accel_net *an = &pn->accel;
	struct sk_buff_head list;

	__skb_queue_head_init(&list);
	spin_lock_bh(&an->orphans.lock);
	skb_queue_splice_init(&an->orphans, &list);
	spin_unlock_bh(&an->orphans.lock);
	les_pacer_queue(&an->pacer, &list);
}

/* Is there anything the tick does for @af but look for keys gone? */
static bool les_accel_flow_timed(const struct les_accel_flow *af)
{
	unsigned int s;

	for (s = 0; s < 2; s++)
		if (!list_empty(&af->dir[s].held) || les_rcv_timed(af, s))
			return true;
	return false;
}

/*
 * The flows the tick has no work for are looked at LES_ACCEL_SWEEP at a
 * time, in turn, for keys that went: an idle flow lets go of a deleted SA
 * within seconds, and the tick's time does not grow with idle flows.  One
 * whose timers a packet the engine did not take armed (the receiver's
 * window, seen by the flow table alone) is timed from then on.
 */
static void les_accel_sweep(struct les_pep_net *pn, ktime_t now)
{
	struct les_accel_net *an = &pn->accel;
	unsigned int n = min_t(unsigned int, LES_ACCEL_SWEEP,
			       atomic_read(&an->active));
	struct les_accel_flow *af;

	while (n-- && !list_empty(&an->flows)) {
		af = list_first_entry(&an->flows, struct les_accel_flow, node);
		list_move_tail(&af->node, &an->flows);
		if (!list_empty(&af->timed) || les_drain_flow(pn, af, now))
			continue;
		if (les_accel_flow_timed(af))
			list_add_tail(&af->timed, &an->timed);
	}
}

/*
 * The tick, @delay jiffies from now; @reset: sooner if it is queued for
 * later, which otherwise keeps its time.  tick_due is the due time of the
 * run that has not yet read it (0: none).  A run pending or begun keeps an
 * older one, so that the run it belongs to counts what it is late by; the
 * run queued now then counts as on time.  The tick swaps it for 0 outside
 * the flow table's lock, hence the cmpxchg.
 */
void les_accel_tick_queue(struct les_accel_net *an, unsigned long delay,
			  bool reset)
{
	struct les_pep_net *pn = container_of(an, struct les_pep_net, accel);
	unsigned long due = (jiffies + delay) ?: 1;
	unsigned long cur;

	lockdep_assert_held(&pn->flows.lock);
	if (!reset && delayed_work_pending(&an->tick))
		return;
	cur = READ_ONCE(an->tick_due);
	do {
		if (cur && !time_after(cur, due))
			break;
	} while (!try_cmpxchg(&an->tick_due, &cur, due));
	les_pep_work(pn, &an->tick, delay, reset);
}

/*
 * How much of each window the tick spends overdue past its grace, and
 * whether the engine keeps time enough to ACK early (accel.h): while it
 * does not, it takes no new data and delivers what it holds.  A share, not
 * a mean: a host stalled most of each second and on time between stalls
 * runs many ticks on time and few late.  Only the time overdue inside the
 * window counts.  Once the tick has been stopped, the next window begins
 * when it is due again.
 */
static void les_accel_tick_late(struct les_pep_net *pn, unsigned long due)
{
	struct les_accel_net *an = &pn->accel;
	unsigned long now = jiffies;
	unsigned long window = msecs_to_jiffies(LES_ACCEL_LATE_WINDOW_MS);
	unsigned long grace = msecs_to_jiffies(LES_ACCEL_LATE_GRACE_MS);
	unsigned long from, span;

	lockdep_assert_held(&pn->flows.lock);
	/* None: an older run read it (les_accel_tick_queue()). */
	if (!due || time_after(due, now))
		due = now;
	les_stat_add(pn->net, LES_STAT_ACCEL_TICK_LATE_US,
		     div_u64(jiffies64_to_nsecs(now - due), NSEC_PER_USEC));
	if (an->tick_stopped) {
		an->tick_stopped = false;
		an->late_since = due;
		an->late_sum = 0;
	}
	from = due + grace;
	if (time_before(from, an->late_since))
		from = an->late_since;
	if (time_after(now, from))
		an->late_sum += now - from;
	span = now - an->late_since;
	if (span < window)
		return;
	WRITE_ONCE(an->late_pct, div64_ul((u64)min(an->late_sum, span) * 100, span));
	an->late_since = now;
	an->late_sum = 0;
	if (!an->late && an->late_pct > LES_ACCEL_LATE_PCT) {
		WRITE_ONCE(an->late, true);
		les_stat_inc(pn->net, LES_STAT_ACCEL_LATE);
	} else if (an->late && an->late_pct <= LES_ACCEL_ON_TIME_PCT) {
		WRITE_ONCE(an->late, false);
	}
}

/*
 * Every LES_ACCEL_TICK_MS while flows are accelerated: the timers of the
 * flows that have any (a packet put them on the timed list; the tick takes
 * them off once nothing is left to time), then a few of the others.
 */
static void les_accel_tick(struct work_struct *work)
{
	struct les_accel_net *an = container_of(to_delayed_work(work),
						struct les_accel_net, tick);
	struct les_pep_net *pn = container_of(an, struct les_pep_net, accel);
	struct les_accel_flow *af, *tmp;
	struct les_accel_todo todo;
	unsigned int visited = 0;
	unsigned long due;
	ktime_t now;
	bool busy;

	/* First: once the work runs, a packet path may queue it again. */
	due = xchg(&an->tick_due, 0);
	les_accel_orphans(pn);
	les_accel_todo_init(&todo, &an->pacer);
	spin_lock_bh(&pn->flows.lock);
	les_accel_tick_late(pn, due);
	now = ktime_get();
	list_for_each_entry_safe(af, tmp, &an->timed, timed) {
		visited++;
		if (les_drain_flow(pn, af, now))
			continue;
		les_early_timer(pn, af, 0, now, &todo);
		les_early_timer(pn, af, 1, now, &todo);
		les_rcv_thin_flush(pn, &af->dir[0], &todo, now);
		les_rcv_thin_flush(pn, &af->dir[1], &todo, now);
		les_rcv_probe_timer(pn, af, 0, now);
		les_rcv_probe_timer(pn, af, 1, now);
		if (!les_accel_flow_timed(af))
			list_del_init(&af->timed);
	}
	les_accel_sweep(pn, now);
	/* The pacer has room again: what waits for it goes in. */
	les_hop_drain(pn, &todo);
	busy = !list_empty(&an->flows) || !list_empty(&an->hop_busy);
	/*
	 * Late, it runs on to see when it keeps time again, if the engine is
	 * on.  Stopped, it starts afresh.
	 */
	if (busy || (an->late && READ_ONCE(an->cfg.on))) {
		les_accel_tick_queue(an, msecs_to_jiffies(LES_ACCEL_TICK_MS),
				     false);
	} else {
		an->tick_stopped = true;
		WRITE_ONCE(an->late, false);
		WRITE_ONCE(an->late_pct, 0);
	}
	les_stat_add(pn->net, LES_STAT_ACCEL_TICK_US,
		     ktime_us_delta(ktime_get(), now));
	spin_unlock_bh(&pn->flows.lock);
	les_stat_inc(pn->net, LES_STAT_ACCEL_TICKS);
	les_stat_add(pn->net, LES_STAT_ACCEL_TICK_FLOWS, visited);
	les_accel_todo_run(pn, &todo);
	les_accel_send_acks(pn, true);
}

void les_accel_net_init(struct les_pep_net *pn)
{
	struct les_accel_net *an = &pn->accel;
	unsigned int i;

	an->cfg.on = false;
	an->cfg.hop_ifindex = 0;
	an->cfg.hop_rate = 0;
	an->cfg.flow_buffer = LES_ACCEL_FLOW_BUFFER_DEFAULT;
	an->cfg.buffer = LES_ACCEL_BUFFER_DEFAULT;
	an->cfg.peer_buffer = 0;
	INIT_LIST_HEAD(&an->flows);
	INIT_LIST_HEAD(&an->timed);
	les_hop_init(an);
	INIT_LIST_HEAD(&an->ack_due);
	atomic_set(&an->active, 0);
	an->held_bytes = 0;
	an->mem = 0;
	an->fwd_okfn[0] = NULL;
	an->fwd_okfn[1] = NULL;
	skb_queue_head_init(&an->orphans);
	INIT_DELAYED_WORK(&an->tick, les_accel_tick);
	an->tick_due = 0;
	an->tick_stopped = true;
	an->late_since = jiffies;
	an->late_sum = 0;
	an->late_pct = 0;
	an->late = false;
	spin_lock_init(&an->origin_lock);
	INIT_LIST_HEAD(&an->origin_sas);
	for (i = 0; i < ARRAY_SIZE(an->views); i++)
		INIT_HLIST_HEAD(&an->views[i]);
	an->nr_views = 0;
	les_pacer_init(&an->pacer, pn->net);
}

/*
 * Namespace exit, before any device goes: the hook and the opener are gone;
 * what the engine holds is sent now or dropped (held skbs keep conntrack
 * entries and dsts that the namespace's exit waits for).
 */
void les_accel_net_pre_exit(struct les_pep_net *pn)
{
	struct les_accel_net *an = &pn->accel;
	struct les_accel_flow *af, *tmp;
	struct sk_buff_head out;

	__skb_queue_head_init(&out);
	spin_lock_bh(&pn->flows.lock);
	list_for_each_entry_safe(af, tmp, &an->flows, node)
		les_accel_flow_free(pn, af->flow);
	les_hop_flush(pn, &out);
	spin_unlock_bh(&pn->flows.lock);
	cancel_delayed_work_sync(&an->tick);
	les_pacer_queue(&an->pacer, &out);
	les_accel_orphans(pn);
	les_pacer_stop(&an->pacer);
}

/* After the hook and the opener are gone and the flows freed. */
void les_accel_net_exit(struct les_pep_net *pn)
{
	struct les_accel_net *an = &pn->accel;

	cancel_delayed_work_sync(&an->tick);
	les_accel_orphans(pn);
	les_pacer_stop(&an->pacer);
	/* Every packet kept was given back, with its charge (hold.c). */
	WARN_ON_ONCE(an->mem || an->held_bytes);
}
