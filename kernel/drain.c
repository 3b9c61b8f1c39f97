// SPDX-License-Identifier: GPL-2.0
/*
 * The pep-view keys the engine's flows read with, and what happens when
 * one goes while they hold data (docs/accel.md 3.1).
 *
 * Data a PEP has ACKed early is freed only by the receiver's ACKs, and data
 * held past a receiver's window is released by its window updates: only a
 * pep-view key reads either.  Such data also needs its own key read on: a
 * packet of it that went past the receiver unread would be dropped there
 * as out of window, and its ESP sequence number, seen, would make the
 * receiver's xfrm refuse the held one.  A key deleted (by the operator,
 * before unloading the module) or expired would strand what is held.
 *
 * So each flow direction holds its key through a struct les_view, one per
 * key in use by some flow; when xfrm's lookup misses, the hook looks among
 * those whose state went, and reads with it, for those flows only: the
 * packets of the SA's other connections go on unread.  What such a key reads makes
 * nothing new held past a hole and no ACK of ours (accel.c), and is charged
 * to no lifetime (pep.c).  The tick lets a flow keep a key that went only
 * while it holds data, at most LES_DRAIN_MAX_MS from when it was first
 * seen gone; a flow still holding data then lets go of it, as a flow freed
 * for idleness does.
 *
 * A view holds a reference on its state, and so on the module: "rmmod"
 * after "ip xfrm state flush" on a PEP that holds data fails with EBUSY
 * until the drain is over.
 */
#include <linux/hash.h>
#include <linux/slab.h>

#include "les.h"
#include "pep.h"

/*
 * Views are hashed by SPI (an ESP packet no key reads, a stranger's or a
 * forged one, costs one short bucket walk), changed under the flow table
 * lock and read by the hook under RCU.  A view puts its state when it
 * goes: xfrm destroys a state a grace period after its last reference
 * (its state GC), so a reader may still look at it, and takes a reference
 * only if one is left.
 */
struct les_view {
	struct hlist_node node;		/* in les_accel_net.views */
	struct rcu_head rcu;
	struct xfrm_state *x;		/* held while hashed */
	unsigned int users;		/* flow directions reading with it */
	ktime_t gone;			/* first seen gone by the tick, or 0 */
};

static struct hlist_head *les_view_bucket(struct les_accel_net *an, __be32 spi)
{
	return &an->views[hash_32((__force u32)spi, LES_VIEW_HASH_BITS)];
}

/* Flow table lock held. */
static struct les_view *les_view_find(struct les_accel_net *an,
				      const struct xfrm_state *x)
{
	struct les_view *v;

	hlist_for_each_entry(v, les_view_bucket(an, x->id.spi), node)
		if (v->x == x)
			return v;
	return NULL;
}

/*
 * Flow table lock held: *@vp becomes the view of @x (made if none is),
 * the old one let go.  A key that went gets no new view: a drain lasts
 * from when its key went (the tick), and a packet that was on its way
 * then must not start another.  Nor does a straggler on a key that went
 * take a direction off the valid key it has moved to (a rekey).  On no
 * memory *@vp stays as it was.
 */
void les_view_set(struct les_pep_net *pn, struct les_view **vp,
		  struct xfrm_state *x)
{
	struct les_accel_net *an = &pn->accel;
	struct les_view *v = *vp;

	if (v && v->x == x)
		return;
	if (les_key_gone(x) && v && !les_view_gone(v))
		return;
	v = les_view_find(an, x);
	if (!v) {
		if (les_key_gone(x))
			return;
		v = kzalloc(sizeof(*v), GFP_ATOMIC | __GFP_ACCOUNT);
		if (!v) {
			les_stat_inc(pn->net, LES_STAT_ACCEL_ERRORS);
			return;
		}
		xfrm_state_hold(x);
		v->x = x;
		hlist_add_head_rcu(&v->node, les_view_bucket(an, x->id.spi));
		WRITE_ONCE(an->nr_views, an->nr_views + 1);
	}
	v->users++;
	les_view_put(pn, vp);
	*vp = v;
}

/* Flow table lock held: the flow direction lets go of its view. */
void les_view_put(struct les_pep_net *pn, struct les_view **vp)
{
	struct les_accel_net *an = &pn->accel;
	struct les_view *v = *vp;

	if (!v)
		return;
	*vp = NULL;
	if (--v->users)
		return;
	hlist_del_rcu(&v->node);
	WRITE_ONCE(an->nr_views, an->nr_views - 1);
	/* A deleted SA must not live on here (nor keep the module). */
	xfrm_state_put(v->x);
	kfree_rcu(v, rcu);
}

bool les_view_gone(const struct les_view *v)
{
	return v && les_key_gone(v->x);
}

/*
 * The hook, after xfrm's lookup missed: the key that went which reads ESP
 * packets to @daddr with @spi under @mark, held, if a flow still reads
 * with it; else NULL.
 */
struct xfrm_state *les_drain_lookup(struct les_accel_net *an, u32 mark,
				    const xfrm_address_t *daddr, __be32 spi,
				    unsigned short family)
{
	struct xfrm_state *found = NULL;
	struct les_view *v;

	if (!READ_ONCE(an->nr_views))
		return NULL;
	rcu_read_lock();
	hlist_for_each_entry_rcu(v, les_view_bucket(an, spi), node) {
		struct xfrm_state *x = v->x;

		if (x->id.spi == spi && x->props.family == family &&
		    (mark & x->mark.m) == x->mark.v &&
		    xfrm_addr_equal(&x->id.daddr, daddr, family) &&
		    les_key_gone(x) && refcount_inc_not_zero(&x->refcnt)) {
			found = x;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/*
 * Whether @x, which went, is still read for some flow's held data: a
 * packet looked up while @x was valid and read after it went (the hook,
 * the opener).
 */
bool les_drain_reads(struct les_accel_net *an, const struct xfrm_state *x)
{
	struct les_view *v;
	bool reads = false;

	if (!les_key_gone(x) || !READ_ONCE(an->nr_views))
		return false;
	rcu_read_lock();
	hlist_for_each_entry_rcu(v, les_view_bucket(an, x->id.spi), node) {
		if (v->x == x) {
			reads = true;
			break;
		}
	}
	rcu_read_unlock();
	return reads;
}

/*
 * Flow table lock held: whether @f drains with the key, gone, that read
 * @pkt.  Only such a flow's packets are read on with it: the key's SA also
 * carries other connections, which its deletion stops reading at once.
 */
bool les_drain_flow_reads(struct les_flow *f, unsigned int from,
			  const struct les_pep_pkt *pkt)
{
	const struct les_accel_flow *af = f->accel;
	unsigned int i;

	if (!af)
		return false;
	for (i = 0; i < 2; i++) {
		const struct les_view *v = af->dir[i].view;

		if (les_view_gone(v) && ntohl(v->x->id.spi) == pkt->spi)
			return true;
	}
	return false;
}

/*
 * The tick, flow table lock held, for one flow.  The key of side @s's
 * packets reads the ACKs and window of the data of !@s, and the data of
 * @s: a flow needs it while the data of !@s is held here as copies, or
 * while the data of either comes past its receiver's window
 * (les_rcv_recent()).  Once it has let go of a key that went, the
 * connection is not accelerated again until a packet of @s comes under a
 * valid key (a rekey): the ACKs that would free what it held could not be
 * read.  True if the flow was let go (the drain ended).
 */
bool les_drain_flow(struct les_pep_net *pn, struct les_accel_flow *af,
		    ktime_t now)
{
	unsigned int s;

	for (s = 0; s < 2; s++) {
		struct les_accel_dir *d = &af->dir[s], *data = &af->dir[!s];
		struct les_view *v = d->view;

		/*
		 * PEP-origin SAs that went are let go here too: a flow whose
		 * packets are no longer read would keep them.  Without one,
		 * no early ACKs: the receiver's ACKs go to the sender again,
		 * not absorbed for ACKs never sent.
		 */
		if (les_key_gone(d->origin) &&
		    !les_origin_renew(&pn->accel, &d->origin, af->flow, !s))
			les_accel_early_stop(d);
		if (les_key_gone(d->probe_origin))
			les_origin_renew(&pn->accel, &d->probe_origin, af->flow, s);
		if (!les_view_gone(v))
			continue;
		af->flow->side[s].key_went = true;
		if (!data->held_bytes && !les_rcv_recent(data) &&
		    !les_rcv_recent(d)) {
			les_view_put(pn, &d->view);
			continue;
		}
		if (!v->gone) {
			v->gone = now;
			les_stat_inc(pn->net, LES_STAT_ACCEL_KEYS_DRAINED);
		}
		if (ktime_ms_delta(now, v->gone) > LES_DRAIN_MAX_MS) {
			les_stat_inc(pn->net, LES_STAT_ACCEL_DRAIN_TIMEOUTS);
			les_accel_flow_free(pn, af->flow);
			return true;
		}
	}
	return false;
}
