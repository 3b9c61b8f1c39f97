// SPDX-License-Identifier: GPL-2.0
/*
 * The pacer: what a PEP sends onto the satellite hop leaves at the hop's
 * configured rate, from the first packet (docs/accel.md 4).  No slow start
 * on the hop: the link's rate is known, and a queue at the hop's entrance
 * only adds delay (or drops packets this PEP has ACKed already).
 *
 * One FIFO per namespace, emptied by a soft hrtimer: each packet may leave
 * once the previous ones have had their time on the link.  The packets are
 * forwarded ones (their dst is held) or clones of held copies; they leave
 * through dst_output(), as ip_forward_finish() would have sent them.
 */
#include <linux/hrtimer.h>
#include <linux/skbuff.h>
#include <net/dst.h>
#include <net/ip.h>

#include "les.h"
#include "pep.h"

/* Nanoseconds @len bytes take at @kbit. */
static u64 les_pacer_ns(unsigned int len, u32 kbit)
{
	u64 rate = (u64)kbit * LES_ACCEL_PACE_PERMILLE;	/* bit/s */

	return div64_u64((u64)len * 8 * NSEC_PER_SEC, rate);
}

/* Forward @skb (stolen at FORWARD) as the stack would have. */
void les_accel_release(struct net *net, struct sk_buff *skb)
{
	skb_clear_tstamp(skb);
	rcu_read_lock();
	dst_output(net, NULL, skb);
	rcu_read_unlock();
}

/* Send what is due; returns when the next packet is, or 0 if none waits. */
static ktime_t les_pacer_run(struct les_pacer *p)
{
	struct sk_buff_head due;
	struct sk_buff *skb;
	ktime_t now = ktime_get(), next = 0;

	__skb_queue_head_init(&due);
	spin_lock(&p->lock);
	while ((skb = skb_peek(&p->q))) {
		if (p->rate && ktime_before(now, p->next)) {
			next = p->next;
			break;
		}
		__skb_unlink(skb, &p->q);
		p->bytes -= skb->len;
		__skb_queue_tail(&due, skb);
		if (p->rate) {
			/*
			 * A timer that fires late may catch up, by at most
			 * LES_PACER_SLACK_US: the link lost nothing while we
			 * were late, and a burst that short fits any queue.
			 */
			ktime_t base = ktime_sub_us(now, LES_PACER_SLACK_US);

			if (ktime_after(p->next, base))
				base = p->next;
			p->next = ktime_add_ns(base, les_pacer_ns(skb->len, p->rate));
		}
	}
	/* Nothing left: the timer stops, and the next packet starts it. */
	p->armed = next;
	spin_unlock(&p->lock);
	while ((skb = __skb_dequeue(&due)))
		les_accel_release(p->net, skb);
	return next;
}

static enum hrtimer_restart les_pacer_timer(struct hrtimer *t)
{
	struct les_pacer *p = container_of(t, struct les_pacer, timer);
	ktime_t next = les_pacer_run(p);

	if (!next)
		return HRTIMER_NORESTART;
	hrtimer_set_expires(t, next);
	return HRTIMER_RESTART;
}

void les_pacer_init(struct les_pacer *p, struct net *net)
{
	spin_lock_init(&p->lock);
	skb_queue_head_init(&p->q);
	hrtimer_init(&p->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	p->timer.function = les_pacer_timer;
	p->net = net;
	p->next = 0;
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

/* May more go into the queue (with what @todo adds)? */
bool les_pacer_room(struct les_pacer *p, const struct les_accel_todo *todo)
{
	u32 rate = READ_ONCE(p->rate);
	unsigned int max;

	if (!rate)
		return true;
	max = max_t(unsigned int, LES_PACER_QUEUE_MIN,
		    rate * (1000 / 8) / 1000 * LES_PACER_QUEUE_MS);
	return READ_ONCE(p->bytes) + todo->pace_bytes < max;
}

/* Queue @list behind what waits, in order; process context. */
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
	spin_unlock(&p->lock);
	/*
	 * Only the timer sends, so packets leave in the order they were
	 * queued (a second sender on another CPU could overtake it).
	 */
	if (arm)
		hrtimer_start(&p->timer, ktime_get(), HRTIMER_MODE_ABS_SOFT);
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
	les_pacer_run(p);
	local_bh_enable();
}
