// SPDX-License-Identifier: GPL-2.0
/*
 * The held-packet store (docs/accel.md 3): the packets a PEP has ACKed in
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
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <net/tcp.h>

#include "les.h"
#include "pep.h"

/* One node per packet held or waiting for the hop: a cache of their own. */
static struct kmem_cache *les_held_cache __read_mostly;

/*
 * What all namespaces' engines keep at most, in bytes charged as below:
 * each namespace's `buffer` is its operator's to set, and namespaces can
 * be many (0: an eighth of the memory the host had when les.ko loaded).
 */
static unsigned long les_accel_mem_max __read_mostly;
module_param_named(accel_mem_max, les_accel_mem_max, ulong, 0644);
MODULE_PARM_DESC(accel_mem_max,
		 "bytes the PEP engines of all namespaces may keep (0: an eighth of RAM)");
static unsigned long les_accel_mem_default __read_mostly;
static atomic_long_t les_accel_mem = ATOMIC_LONG_INIT(0);

int les_held_cache_init(void)
{
	les_accel_mem_default = (totalram_pages() << PAGE_SHIFT) / 8;
	les_held_cache = kmem_cache_create("les_held", sizeof(struct les_held), 0,
					   SLAB_ACCOUNT, NULL);
	return les_held_cache ? 0 : -ENOMEM;
}

void les_held_cache_exit(void)
{
	/* Every namespace gave back what it was charged. */
	WARN_ON(atomic_long_read(&les_accel_mem));
	kmem_cache_destroy(les_held_cache);
}

/*
 * A packet the engine keeps costs what it occupies: its skb's truesize
 * and its node, and at least LES_ACCEL_PKT_COST_MIN, so that `buffer`
 * caps the packets too (one-byte segments, or a small MSS, cost as much
 * as the buffers they came in).  Charged against the namespace's `buffer`
 * and the module's cap, as a qdisc's memory limit: a packet that would
 * pass either is not kept.
 */
static bool les_held_charge(struct les_accel_net *an, struct les_held *h)
{
	unsigned long max = READ_ONCE(les_accel_mem_max) ?: les_accel_mem_default;
	u32 cost = max_t(u32, h->skb->truesize + sizeof(*h), LES_ACCEL_PKT_COST_MIN);

	if (an->mem + cost > READ_ONCE(an->cfg.buffer))
		return false;
	if (atomic_long_add_return(cost, &les_accel_mem) > max) {
		atomic_long_sub(cost, &les_accel_mem);
		return false;
	}
	an->mem += cost;
	h->cost = cost;
	return true;
}

/*
 * A node for @skb, charged (above); NULL if it may not be kept, with
 * *@full (if given) set when a bound, not the allocator, said no.
 */
struct les_held *les_held_new(struct les_accel_net *an, struct sk_buff *skb,
			      u32 seq, u32 end, bool *full)
{
	struct les_held *h = kmem_cache_zalloc(les_held_cache, GFP_ATOMIC |
					       __GFP_ACCOUNT | __GFP_NOWARN);

	if (full)
		*full = false;
	if (!h)
		return NULL;
	h->skb = skb;
	/*
	 * Its clones share these pages.  One that a router gave a head of
	 * its own (skb_cow()) no longer looks cloned, and its receiver would
	 * decrypt the pages in place (les_input(), esp_input()): every later
	 * resend of this copy would carry that plaintext.  Marked shared,
	 * they are copied first.
	 */
	if (skb_is_nonlinear(skb))
		skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	h->seq = seq;
	h->end = end;
	if (!les_held_charge(an, h)) {
		if (full)
			*full = true;
		kmem_cache_free(les_held_cache, h);
		return NULL;
	}
	return h;
}

/* The node only, its charge given back: its skb has gone elsewhere. */
void les_held_node_free(struct les_accel_net *an, struct les_held *h)
{
	an->mem -= h->cost;
	atomic_long_sub(h->cost, &les_accel_mem);
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
	les_held_node_free(an, h);
}

/*
 * Let go of everything @d holds: packets never sent and packets held past
 * the receiver's window go to @out, to be forwarded; copies already sent
 * are dropped, and with them the only copy of any the hop lost.  Returns
 * the bytes of those, ACKed early and not yet by the receiver: what may
 * be lost.
 */
u32 les_held_purge(struct les_accel_net *an, struct les_accel_dir *d,
		   struct sk_buff_head *out)
{
	struct les_held *h, *tmp;
	u32 unacked = 0;

	list_for_each_entry_safe(h, tmp, &d->held, node) {
		if (!h->tx) {
			__skb_queue_tail(out, h->skb);
			h->skb = NULL;
		} else if (!h->sacked) {
			unacked += h->end - h->seq;
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
		les_held_node_free(an, h);
	}
	return unacked;
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
