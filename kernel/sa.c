// SPDX-License-Identifier: GPL-2.0
/*
 * LES SAs: from the key blob of an rfc4106(gcm(aes)) SA to the zone keys.
 */
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/ipv6.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <crypto/aead.h>
#include <net/xfrm.h>

#include "les.h"
#include "compat.h"

/*
 * xfrm_state_mtu() reads x->data as the SA's crypto_aead (for ESP it needs
 * the ICV length), so x->data must stay a crypto_aead: it holds the AEAD of
 * the zone that ends the packet.  The rest of an SA's state is found through
 * this table, keyed by the xfrm_state.  It grows and shrinks with the number
 * of SAs (a gateway may hold tens of thousands); lookups take no lock.
 */
static struct rhashtable les_sa_table;

static const struct rhashtable_params les_sa_params = {
	.head_offset		= offsetof(struct les_sa, node),
	.key_offset		= offsetof(struct les_sa, x),
	.key_len		= sizeof(struct xfrm_state *),
	.automatic_shrinking	= true,
};

int les_sa_table_init(void)
{
	return rhashtable_init(&les_sa_table, &les_sa_params);
}

/* Every SA is gone: each held the module. */
void les_sa_table_exit(void)
{
	rhashtable_destroy(&les_sa_table);
}

/*
 * For tests: a cryptd(...) GCM driver makes every zone operation complete
 * asynchronously, which exercises the completion paths that AES-NI, being
 * synchronous almost always, leaves idle.  Any GCM with a 12-byte nonce and
 * a 16-byte tag produces the same bytes.
 */
static char *zone_aead = "gcm(aes)";
module_param(zone_aead, charp, 0444);
MODULE_PARM_DESC(zone_aead, "AEAD of the zones (default gcm(aes); tests: a cryptd GCM)");

static void les_set_err(struct netlink_ext_ack *extack, const char *msg)
{
	/* Our messages are static strings, as extack requires. */
	if (extack)
		extack->_msg = msg;
}

/* Every SA, for a walk that may not sleep until les_sa_walk_exit(). */
void les_sa_walk_enter(struct rhashtable_iter *iter)
	__acquires(RCU)
{
	rhashtable_walk_enter(&les_sa_table, iter);
	rhashtable_walk_start(iter);
}

/* The next SA of the walk, or NULL at its end (a resize restarts it). */
struct les_sa *les_sa_walk_next(struct rhashtable_iter *iter)
{
	struct les_sa *sa;

	do {
		sa = rhashtable_walk_next(iter);
	} while (IS_ERR(sa) && PTR_ERR(sa) == -EAGAIN);
	return IS_ERR(sa) ? NULL : sa;
}

void les_sa_walk_exit(struct rhashtable_iter *iter)
	__releases(RCU)
{
	rhashtable_walk_stop(iter);
	rhashtable_walk_exit(iter);
}

/* @x outlives the caller's use of the result (the skb holds it). */
struct les_sa *les_sa_get(const struct xfrm_state *x)
{
	return rhashtable_lookup_fast(&les_sa_table, &x, les_sa_params);
}

static struct crypto_aead *les_zone_aead(const u8 *key, unsigned int key_len,
					 struct netlink_ext_ack *extack)
{
	struct crypto_aead *aead;
	int err;

	/*
	 * Plain gcm(aes), not rfc4106: the zones' AAD is longer than the 8 or
	 * 12 bytes rfc4106 accepts.  The nonce is built as RFC 4106 does.
	 */
	aead = crypto_alloc_aead(zone_aead, 0, 0);
	if (IS_ERR(aead)) {
		les_set_err(extack, "LES: the kernel has no such zone AEAD (gcm(aes))");
		return aead;
	}
	if (crypto_aead_ivsize(aead) != LES_NONCE_LEN || !strstr(zone_aead, "gcm")) {
		crypto_free_aead(aead);
		les_set_err(extack, "LES: the zone AEAD must be GCM with a 12-byte nonce");
		return ERR_PTR(-EINVAL);
	}
	err = crypto_aead_setkey(aead, key, key_len);
	if (!err)
		err = crypto_aead_setauthsize(aead, LES_ICV_LEN);
	if (err) {
		crypto_free_aead(aead);
		les_set_err(extack, "LES: the kernel refused the zone key");
		return ERR_PTR(err);
	}
	return aead;
}

void les_sa_free_keys(struct les_sa *sa)
{
	if (sa->hz_aead)
		crypto_free_aead(sa->hz_aead);
	if (sa->pz_aead)
		crypto_free_aead(sa->pz_aead);
	memzero_explicit(sa->hz_salt, sizeof(sa->hz_salt));
	memzero_explicit(&sa->hz_aes, sizeof(sa->hz_aes));
	memzero_explicit(sa->pz_salt, sizeof(sa->pz_salt));
}

static int les_check_sa(struct xfrm_state *x, const struct les_blob *blob,
			struct netlink_ext_ack *extack)
{
	if (strcmp(x->aead->alg_name, "rfc4106(gcm(aes))")) {
		les_set_err(extack, "LES: key blobs go with aead rfc4106(gcm(aes))");
		return -EINVAL;
	}
	if (x->aead->alg_icv_len != LES_ICV_LEN * 8) {
		les_set_err(extack, "LES: the ICV length must be 128 bits");
		return -EINVAL;
	}
	if (x->props.mode != XFRM_MODE_TRANSPORT &&
	    x->props.mode != XFRM_MODE_TUNNEL) {
		les_set_err(extack, "LES: only transport and tunnel mode are supported");
		return -EINVAL;
	}
	if (x->props.extra_flags & XFRM_SA_XFLAG_OSEQ_MAY_WRAP) {
		les_set_err(extack, "LES: oseq-may-wrap would reuse GCM nonces");
		return -EINVAL;
	}
	if (x->tfcpad) {
		les_set_err(extack, "LES: TFC padding is not supported");
		return -EINVAL;
	}
	/* Non-IKE markers are gone from 6.12's esp4/esp6: RFC 3948 only. */
	if (x->encap && x->encap->encap_type != UDP_ENCAP_ESPINUDP) {
		les_set_err(extack, "LES: only espinudp (RFC 3948) encapsulation is supported");
		return -EINVAL;
	}
#if LES_HAVE_SA_DIR
	if (x->dir == XFRM_SA_DIR_IN && !(les_role_dirs(blob->role) & LES_DIR_IN)) {
		les_set_err(extack, "LES: this key blob role cannot be used on an inbound SA");
		return -EINVAL;
	}
	if (x->dir == XFRM_SA_DIR_OUT && !(les_role_dirs(blob->role) & LES_DIR_OUT)) {
		les_set_err(extack, "LES: this key blob role cannot be used on an outbound SA");
		return -EINVAL;
	}
#endif
	return 0;
}

/*
 * The bytes xfrm reserves in front of the inner data: exactly what LES puts
 * there, so that xfrm's MTU arithmetic holds (docs/protocol.md 3.2).
 */
static unsigned int les_header_len(const struct xfrm_state *x,
				   enum les_role role)
{
	unsigned int len = LES_HEADER_LEN;

	if (role != LES_ROLE_PEP_ORIGIN_OUT && role != LES_ROLE_PEP_ORIGIN_IN)
		len += LES_CSUM_LEN;
	if (x->props.mode == XFRM_MODE_TUNNEL)
		len += x->props.family == AF_INET6 ? sizeof(struct ipv6hdr) :
						     sizeof(struct iphdr);
	return len + les_encap_len(x);
}

/*
 * The PEP's replay window of pep-view state @x, the size its operator set
 * (docs/protocol.md 7).  Sized at its first use, under x->lock: xfrm_user
 * gives a state a window above 32 packets (replay_esn) only after
 * init_state, where it would read 32, and the PEP would then take a
 * packet reordered by 64 on the LAN for a replay (docs/pep.md 1).
 */
struct les_replay *les_sa_replay(struct les_sa *sa, const struct xfrm_state *x)
{
	/* Only a pep-view SA has one (les_sa_init()). */
	DEBUG_NET_WARN_ON_ONCE(sa->role != LES_ROLE_PEP_VIEW);
	if (!sa->replay->size)
		les_replay_init(sa->replay, x->replay_esn ?
				x->replay_esn->replay_window :
				x->props.replay_window);
	return sa->replay;
}

/*
 * One zone's keys from its blob root, bound to this SA's SPI and direction
 * (docs/protocol.md 2.1).  The header zone's key also goes into @aes, which
 * finds L before any ICV is checked.
 */
static struct crypto_aead *les_sa_zone(__be32 spi, const u8 *root,
				       unsigned int key_len, u8 zone, u8 flags,
				       u8 *salt, struct crypto_aes_ctx *aes,
				       struct netlink_ext_ack *extack)
{
	u8 okm[32 + LES_SALT_LEN];
	struct crypto_aead *aead;
	int err;

	err = les_kdf_zone(root, key_len, zone, spi, flags, okm);
	if (err) {
		les_set_err(extack, "LES: zone key derivation failed (is hmac(sha256) available?)");
		aead = ERR_PTR(err);
		goto out;
	}
	if (aes) {
		err = aes_expandkey(aes, okm, key_len);
		if (err) {
			les_set_err(extack, "LES: the kernel refused the zone key");
			aead = ERR_PTR(err);
			goto out;
		}
	}
	aead = les_zone_aead(okm, key_len, extack);
	memcpy(salt, okm + key_len, LES_SALT_LEN);
out:
	memzero_explicit(okm, sizeof(okm));
	return aead;
}

/*
 * The zones' keys from @blob, bound to @spi: an SA's, and the load-time
 * self-test's (selftest.c).  On failure les_sa_free_keys() frees what was
 * made.
 */
int les_sa_keys(struct les_sa *sa, const struct les_blob *blob, __be32 spi,
		struct netlink_ext_ack *extack)
{
	const u8 *hz_root;
	int err;

	hz_root = blob->role == LES_ROLE_ENDPOINT ||
		  blob->role == LES_ROLE_PEP_VIEW ? blob->k2 : blob->ko;
	sa->hz_aead = les_sa_zone(spi, hz_root, blob->key_len, LES_ZONE_HEADER,
				  blob->flags, sa->hz_salt, &sa->hz_aes, extack);
	if (IS_ERR(sa->hz_aead)) {
		err = PTR_ERR(sa->hz_aead);
		sa->hz_aead = NULL;
		return err;
	}
	if (blob->role != LES_ROLE_ENDPOINT)
		return 0;
	sa->pz_aead = les_sa_zone(spi, blob->k1, blob->key_len,
				  LES_ZONE_PAYLOAD, blob->flags, sa->pz_salt,
				  NULL, extack);
	if (IS_ERR(sa->pz_aead)) {
		err = PTR_ERR(sa->pz_aead);
		sa->pz_aead = NULL;
		return err;
	}
	return 0;
}

int les_sa_init(struct xfrm_state *x, struct netlink_ext_ack *extack)
{
	unsigned int key_len = (x->aead->alg_key_len + 7) / 8;
	struct xfrm_state *parent = NULL;
	struct les_blob blob;
	struct les_sa *sa;
	int err;

	/* The slot's destructor is esp4's: it must find no AEAD on failure. */
	x->data = NULL;

	err = les_blob_parse(x->aead->alg_key, key_len, &blob);
	if (err) {
		les_set_err(extack, les_blob_strerror(err));
		return -EINVAL;
	}
	err = les_check_sa(x, &blob, extack);
	if (err)
		return err;

	/* Only a PEP keeps a replay window: its marks are 0.6 KiB. */
	sa = kzalloc(struct_size(sa, replay,
				 blob.role == LES_ROLE_PEP_VIEW ? 1 : 0),
		     GFP_KERNEL);
	if (!sa)
		return -ENOMEM;
	sa->x = x;
	sa->role = blob.role;
	sa->dirs = les_role_dirs(blob.role);
	sa->pep_id = blob.pep_id;
	sa->key_len = blob.key_len;
	sa->blob_flags = blob.flags;

	err = les_sa_keys(sa, &blob, x->id.spi, extack);
	if (err)
		goto fail;
	if (blob.role == LES_ROLE_ENDPOINT)
		memcpy(sa->kp, blob.kp, LES_KP_LEN);
	if (blob.role == LES_ROLE_PEP_ORIGIN_IN) {
		parent = les_sa_bind(sa, &blob, &err);
		if (!parent) {
			les_set_err(extack, err != -ENOENT ?
				    "LES: PEP-origin key derivation failed" :
				    "LES: no endpoint SA here derives this PEP-origin key");
			goto fail;
		}
	}
	/* Fresh for every state, so nonces differ even under a reused key. */
	sa->iv_mask = get_random_u64();

	err = rhashtable_insert_fast(&les_sa_table, &sa->node, les_sa_params);
	if (err) {
		les_set_err(extack, "LES: no memory for the SA table");
		goto fail;
	}
	if (parent) {
		bool alive = les_sa_bound(parent);

		parent = NULL;
		if (!alive) {
			les_set_err(extack, "LES: no endpoint SA here derives this PEP-origin key");
			err = -ENOENT;
			goto unlist;
		}
	}
	if (sa->role == LES_ROLE_PEP_VIEW) {
		err = les_pep_key_add(xs_net(x));
		if (err) {
			les_set_err(extack, "LES: this namespace cannot reassemble outer fragments for a PEP");
			goto unlist;
		}
	}

	x->props.header_len = les_header_len(x, sa->role);
	/* Moved bytes, pad length, next header, ICV1: tailroom to reserve. */
	x->props.trailer_len = LES_MOVED_MAX + 2 + LES_ICV_LEN;
	/*
	 * LES SAs are never offloaded: esp4_offload knows nothing of zones.
	 * __xfrm_init_state took a reference on the offload type; only a
	 * non-NULL type_offload gives it back, so give it back here.
	 */
	if (x->type_offload) {
		module_put(x->type_offload->owner);
		x->type_offload = NULL;
	}
	x->data = sa->pz_aead ? sa->pz_aead : sa->hz_aead;
	/* Same owner as the slot type, so the module reference carries over. */
	x->type = &les_sa_type;

	if (sa->role == LES_ROLE_PEP_ORIGIN_OUT)
		les_origin_sa_add(sa);
	return 0;

unlist:
	/* A lookup may be walking past it: freed after a grace period. */
	rhashtable_remove_fast(&les_sa_table, &sa->node, les_sa_params);
	les_sa_free_keys(sa);
	kfree_rcu(sa, rcu);
	return err;

fail:
	if (parent)
		xfrm_state_put(parent);
	les_sa_free_keys(sa);
	memzero_explicit(sa->kp, sizeof(sa->kp));
	kfree(sa);
	return err;
}

void les_sa_destroy(struct xfrm_state *x)
{
	struct les_sa *sa = les_sa_get(x);

	x->data = NULL;
	if (!sa)
		return;
	rhashtable_remove_fast(&les_sa_table, &sa->node, les_sa_params);
	if (sa->role == LES_ROLE_PEP_VIEW)
		les_pep_key_del(xs_net(x));
	else if (sa->role == LES_ROLE_PEP_ORIGIN_OUT)
		les_origin_sa_del(sa);
	/*
	 * No packet uses the keys any more (every skb in flight holds @x), but
	 * a lookup for another SA may still be walking past this entry.
	 */
	les_sa_free_keys(sa);
	memzero_explicit(sa->kp, sizeof(sa->kp));
	if (sa->role == LES_ROLE_ENDPOINT)
		les_sa_unbind(x);
	kfree_rcu(sa, rcu);
}
