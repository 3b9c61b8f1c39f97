// SPDX-License-Identifier: GPL-2.0
/*
 * The held-packet store (docs/accel.md 5): the packets a PEP has ACKed in
 * the receiver's name, kept as they arrived until the receiver's own
 * cumulative ACK covers them.  They go onto the hop as clones, so a copy
 * that is lost there can be sent again byte for byte: the PEP never
 * re-seals anything (BRIEF D3), and the receiver's xfrm takes a resent
 * packet as long as it never had it and it is still inside its replay
 * window.
 *
 * The same nodes hold what a receiver's side keeps past a receiver's
 * window (receiver.c).  All of it under the flow table's lock.
 */
#include <linux/slab.h>
#include <net/tcp.h>

#include "les.h"
#include "pep.h"

/* One node per packet held or waiting for the hop: a cache of their own. */
static struct kmem_cache *les_held_cache __read_mostly;

int les_held_cache_init(void)
{
	les_held_cache = kmem_cache_create("les_held", sizeof(struct les_held), 0,
					   SLAB_ACCOUNT, NULL);
	return les_held_cache ? 0 : -ENOMEM;
}

void les_held_cache_exit(void)
{
	kmem_cache_destroy(les_held_cache);
}

struct les_held *les_held_new(struct sk_buff *skb, u32 seq, u32 end)
{
	struct les_held *h = kmem_cache_zalloc(les_held_cache,
					       GFP_ATOMIC | __GFP_ACCOUNT);

	if (!h)
		return NULL;
	h->skb = skb;
	h->seq = seq;
	h->end = end;
	return h;
}

/* The node only: its skb has gone elsewhere. */
void les_held_node_free(struct les_held *h)
{
	kmem_cache_free(les_held_cache, h);
}

void les_held_free(struct les_accel_net *an, struct les_accel_dir *d,
		   struct les_held *h)
{
	unsigned int len = h->end - h->seq;

	if (h->waiting)
		list_del(&h->wait);
	if (h->lane)
		les_hop_guard_del(an, h);
	list_del(&h->node);
	/* All it was sent is ACKed: the replay guard covers it again. */
	if (list_empty(&d->held))
		d->unguarded = false;
	d->held_bytes -= len;
	an->held_bytes -= len;
	consume_skb(h->skb);	/* NULL-safe */
	les_held_node_free(h);
}

/*
 * Let go of everything @d holds without losing a byte: copies already sent
 * are dropped (the receiver's ACK for them would free them anyway, and the
 * flow goes on end to end), packets never sent and packets held past the
 * receiver's window go to @out, to be forwarded.
 */
void les_held_purge(struct les_accel_net *an, struct les_accel_dir *d,
		    struct sk_buff_head *out)
{
	struct les_held *h, *tmp;

	list_for_each_entry_safe(h, tmp, &d->held, node) {
		if (!h->tx) {
			__skb_queue_tail(out, h->skb);
			h->skb = NULL;
		}
		les_held_free(an, d, h);
	}
	list_for_each_entry_safe(h, tmp, &d->over, node) {
		list_del(&h->node);
		if (h->waiting)
			list_del(&h->wait);
		d->over_bytes -= h->end - h->seq;
		an->held_bytes -= h->end - h->seq;
		__skb_queue_tail(out, h->skb);
		les_held_node_free(h);
	}
}

/* Queue a copy of @h for the hop; false if no copy could be made. */
bool les_held_send(struct les_held *h, struct les_accel_todo *todo)
{
	struct sk_buff *clone = skb_clone(h->skb, GFP_ATOMIC);

	if (!clone)
		return false;
	h->sent = ktime_add_ns(ktime_get(), les_pacer_wait_ns(todo));
	h->beyond_window = h->dir && after(h->end, h->dir->rcv_edge);
	h->sack_resent = false;
	if (h->tx < U8_MAX)
		h->tx++;
	todo->pace_bytes += clone->len;
	__skb_queue_tail(&todo->pace, clone);
	return true;
}
