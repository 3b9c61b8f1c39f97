// SPDX-License-Identifier: GPL-2.0
/*
 * A PEP-origin SA lives no longer than the endpoint SA whose KP its keys
 * come from (docs/protocol.md 6): a rekeyed or deleted tunnel must not
 * leave a PEP able to speak for an endpoint.  The endpoint that takes a
 * PEP's packets holds that SA (the inbound SA of the direction the PEP's
 * packets travel), so its kernel binds them: a pep-origin-in SA is added
 * only if an endpoint SA here derives its KO root, its lifetime limits are
 * cut to what is left of that SA's, and it is deleted (with a hard expiry
 * event, as its own lifetime would) when that SA goes.
 *
 * The bond is a pointer compared, never followed: the child holds no
 * reference on its parent, whose destructor looks for its children.
 */
#include <crypto/algapi.h>
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <net/xfrm.h>

#include "les.h"

/* Children deleted per walk of the SA table. */
#define LES_BIND_BATCH	8

struct les_bind_cand {
	struct xfrm_state *x;		/* held */
	u8 kp[LES_KP_LEN];
};

/* Could @p, an endpoint SA, be the parent of @x by everything but its KP? */
static bool les_bind_may_parent(const struct les_sa *p, struct xfrm_state *x,
				const struct les_blob *blob)
{
	struct xfrm_state *px = p->x;

	return p->role == LES_ROLE_ENDPOINT && net_eq(xs_net(px), xs_net(x)) &&
	       px->props.family == x->props.family &&
	       px->props.mode == x->props.mode && !!px->encap == !!x->encap &&
	       xfrm_addr_equal(&px->props.saddr, &x->props.saddr, x->props.family) &&
	       xfrm_addr_equal(&px->id.daddr, &x->id.daddr, x->props.family) &&
	       p->key_len == blob->key_len &&
	       !((p->blob_flags ^ blob->flags) & LES_BLOB_F_R2I) &&
	       READ_ONCE(px->km.state) == XFRM_STATE_VALID;
}

static u64 les_bind_left(u64 limit, time64_t added, time64_t now)
{
	s64 left;

	if (!limit)
		return 0;
	left = (s64)limit - (now - added);
	return left > 0 ? left : 1;
}

static u64 les_bind_min(u64 own, u64 parent)
{
	/* 0 means no limit for times, XFRM_INF for bytes and packets. */
	return !own ? parent : !parent ? own : min(own, parent);
}

/* @x's limits, cut to what is left of @p's. */
static void les_bind_lifetime(struct xfrm_state *x, struct xfrm_state *p)
{
	time64_t now = ktime_get_real_seconds();
	struct xfrm_lifetime_cfg *l = &x->lft;

	spin_lock_bh(&p->lock);
	l->soft_byte_limit = min(l->soft_byte_limit, p->lft.soft_byte_limit);
	l->hard_byte_limit = min(l->hard_byte_limit, p->lft.hard_byte_limit);
	l->soft_packet_limit = min(l->soft_packet_limit, p->lft.soft_packet_limit);
	l->hard_packet_limit = min(l->hard_packet_limit, p->lft.hard_packet_limit);
	l->soft_add_expires_seconds =
		les_bind_min(l->soft_add_expires_seconds,
			     les_bind_left(p->lft.soft_add_expires_seconds,
					   p->curlft.add_time, now));
	l->hard_add_expires_seconds =
		les_bind_min(l->hard_add_expires_seconds,
			     les_bind_left(p->lft.hard_add_expires_seconds,
					   p->curlft.add_time, now));
	spin_unlock_bh(&p->lock);
}

/*
 * A pep-origin-in SA being added: find the endpoint SA whose KP gives its
 * KO root, bind to it.  Returns that SA held, for les_sa_bound(); NULL if
 * none is here (*@err -ENOENT) or on an error.
 */
/*
 * The endpoint SAs that could be @x's parent, held, with their KPs: as
 * many as two gateways have SAs between them (one per CHILD_SA, and those
 * rekeying them), counted first, then taken.
 */
static unsigned int les_bind_candidates(struct xfrm_state *x,
					const struct les_blob *blob,
					struct les_bind_cand *cand,
					unsigned int max)
{
	struct rhashtable_iter iter;
	unsigned int n = 0;
	struct les_sa *p;

	les_sa_walk_enter(&iter);
	while ((p = les_sa_walk_next(&iter))) {
		if (!les_bind_may_parent(p, x, blob))
			continue;
		if (!cand) {
			n++;
		} else if (n < max && refcount_inc_not_zero(&p->x->refcnt)) {
			cand[n].x = p->x;
			memcpy(cand[n].kp, p->kp, LES_KP_LEN);
			n++;
		}
	}
	les_sa_walk_exit(&iter);
	return n;
}

struct xfrm_state *les_sa_bind(struct les_sa *sa, const struct les_blob *blob,
			       int *errp)
{
	u8 ko[32 + LES_SALT_LEN], info[LES_KDF_PO_INFO_LEN];
	struct xfrm_state *parent = NULL, *x = sa->x;
	struct les_bind_cand *cand;
	unsigned int n, i;
	int err = -ENOENT;

	/* A few more than counted: SAs may come meanwhile. */
	n = les_bind_candidates(x, blob, NULL, 0) + 4;
	cand = kvcalloc(n, sizeof(*cand), GFP_KERNEL);
	if (!cand) {
		*errp = -ENOMEM;
		return NULL;
	}
	n = les_bind_candidates(x, blob, cand, n);

	les_kdf_po_info(info, blob->pep_id, blob->flags);
	for (i = 0; i < n; i++) {
		if (!parent) {
			int e = les_hkdf_sha256(LES_KDF_PEP_ORIGIN_SALT,
						sizeof(LES_KDF_PEP_ORIGIN_SALT) - 1,
						cand[i].kp, LES_KP_LEN, info, sizeof(info),
						ko, blob->key_len + LES_SALT_LEN);

			if (e)
				err = e;
			else if (!crypto_memneq(ko, blob->ko, blob->key_len + LES_SALT_LEN))
				parent = cand[i].x;
		}
		memzero_explicit(cand[i].kp, LES_KP_LEN);
		if (cand[i].x != parent)
			xfrm_state_put(cand[i].x);
	}
	memzero_explicit(ko, sizeof(ko));
	kvfree(cand);
	if (parent) {
		sa->parent = parent;
		les_bind_lifetime(x, parent);
	}
	*errp = parent ? 0 : err;
	return parent;
}

/*
 * The child is in the SA table now, where @parent's destructor would find
 * it: false if @parent went meanwhile (its destructor may have looked
 * already).  Puts @parent.
 */
bool les_sa_bound(struct xfrm_state *parent)
{
	bool alive = READ_ONCE(parent->km.state) == XFRM_STATE_VALID;

	xfrm_state_put(parent);
	return alive;
}

/*
 * An endpoint SA is destroyed: its PEP-origin SAs go too.  Process
 * context, no xfrm lock held (the state's destructor, from xfrm's GC).
 */
void les_sa_unbind(const struct xfrm_state *parent)
{
	struct xfrm_state *child[LES_BIND_BATCH];
	struct rhashtable_iter iter;
	unsigned int n, i;
	struct les_sa *p;

	do {
		n = 0;
		les_sa_walk_enter(&iter);
		while ((p = les_sa_walk_next(&iter))) {
			if (n < LES_BIND_BATCH && p->parent == parent &&
			    READ_ONCE(p->x->km.state) == XFRM_STATE_VALID &&
			    refcount_inc_not_zero(&p->x->refcnt))
				child[n++] = p->x;
		}
		les_sa_walk_exit(&iter);
		for (i = 0; i < n; i++) {
			if (!xfrm_state_delete(child[i]))
				km_state_expired(child[i], 1, 0);
			xfrm_state_put(child[i]);
		}
	} while (n == LES_BIND_BATCH);
}
