// SPDX-License-Identifier: GPL-2.0
/*
 * Packets a PEP makes: pure ACKs sealed header-only on a PEP-origin SA
 * (docs/protocol.md 5), in the name of the endpoint whose SA they stand
 * in for.  A PEP never sends on an endpoint's SA (BRIEF D3).
 *
 * xfrm's output path needs a policy and a route for the inner packet; a
 * PEP has neither for traffic it only forwards.  So the packet is built
 * here whole: the inner ACK (les_ack_build()), its header zone sealed with
 * the SA's own key and the next sequence number of the SA's own space,
 * then the SA's outer addresses, routed as they are (the source is the
 * endpoint's, not ours).  Process context only: the AEAD may sleep.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/route.h>
#include <net/xfrm.h>

#include "les.h"
#include "pep.h"

/* The namespace's PEP-origin SAs: les_origin_find() looks among them. */
void les_origin_sa_add(struct les_sa *sa)
{
	struct les_accel_net *an = &les_pep_net(xs_net(sa->x))->accel;

	spin_lock_bh(&an->origin_lock);
	list_add_tail(&sa->origin_node, &an->origin_sas);
	spin_unlock_bh(&an->origin_lock);
}

void les_origin_sa_del(struct les_sa *sa)
{
	struct les_accel_net *an = &les_pep_net(xs_net(sa->x))->accel;

	spin_lock_bh(&an->origin_lock);
	list_del(&sa->origin_node);
	spin_unlock_bh(&an->origin_lock);
}

/*
 * Would the endpoint take a segment from @f's end @src to the other end on
 * @x?  xfrm checks an inbound SA's selector against the inner packet
 * (XfrmInStateMismatch): with several tunnels between the same gateways
 * (CHILD_SAs of other traffic selectors), only the flow's own will do.
 * The selector's ifindex is not looked at: on input xfrm compares it with
 * the endpoint's own route, which the PEP does not know.
 */
static bool les_origin_carries(const struct xfrm_state *x,
			       const struct les_flow *f, unsigned int src)
{
	const struct xfrm_selector *sel = &x->sel;
	const struct les_flow_end *from = &f->key.end[src];
	const struct les_flow_end *to = &f->key.end[!src];

	if ((sel->family != AF_UNSPEC && sel->family != f->key.family) ||
	    (sel->proto && sel->proto != IPPROTO_TCP) ||
	    ((from->port ^ sel->sport) & sel->sport_mask) ||
	    ((to->port ^ sel->dport) & sel->dport_mask))
		return false;
	if (f->key.family == AF_INET)
		return addr4_match(from->addr.a4, sel->saddr.a4, sel->prefixlen_s) &&
		       addr4_match(to->addr.a4, sel->daddr.a4, sel->prefixlen_d);
	return addr_match(&from->addr, &sel->saddr, sel->prefixlen_s) &&
	       addr_match(&to->addr, &sel->daddr, sel->prefixlen_d);
}

/*
 * A valid PEP-origin SA from @from to @to, of @ref's family, mode and
 * encapsulation, that carries @f's segments from its end @src; of those,
 * one of @ref's reqid if there is one (the endpoint's policy template
 * checks it next, should two tunnels' selectors overlap).  Returns it
 * held, or NULL.  Under the lock, not RCU: xfrm frees a state right after
 * its destructor (les_origin_sa_del()) without a grace period, so only the
 * lock keeps a listed state's memory alive here.
 */
static struct xfrm_state *les_origin_lookup(struct les_accel_net *an,
					    const struct xfrm_state *ref,
					    const xfrm_address_t *from,
					    const xfrm_address_t *to,
					    const struct les_flow *f,
					    unsigned int src)
{
	unsigned short family = ref->props.family;
	struct xfrm_state *found = NULL;
	struct les_sa *sa;

	spin_lock_bh(&an->origin_lock);
	list_for_each_entry(sa, &an->origin_sas, origin_node) {
		struct xfrm_state *x = sa->x;

		if (x->props.family != family ||
		    x->props.mode != ref->props.mode ||
		    !!x->encap != !!ref->encap ||
		    !xfrm_addr_equal(&x->props.saddr, from, family) ||
		    !xfrm_addr_equal(&x->id.daddr, to, family) ||
		    READ_ONCE(x->km.state) != XFRM_STATE_VALID ||
		    !refcount_read(&x->refcnt) ||
		    !les_origin_carries(x, f, src))
			continue;
		if (x->props.reqid == ref->props.reqid) {
			found = x;
			break;
		}
		if (!found)
			found = x;
	}
	/* A state whose last reference is gone is being destroyed. */
	if (found && !refcount_inc_not_zero(&found->refcnt))
		found = NULL;
	spin_unlock_bh(&an->origin_lock);
	return found;
}

/*
 * The PEP-origin SA that sends toward the sender of the packets @view
 * reads (the reverse addresses), or with @along toward their receiver (the
 * same addresses), for @f's segments from its end @src.  Returns it held,
 * or NULL.
 */
struct xfrm_state *les_origin_find(struct les_accel_net *an,
				   const struct xfrm_state *view, bool along,
				   const struct les_flow *f, unsigned int src)
{
	return les_origin_lookup(an, view,
				 along ? &view->props.saddr : &view->id.daddr,
				 along ? &view->id.daddr : &view->props.saddr,
				 f, src);
}

/*
 * *@xp, held by the caller and sending @f's segments from its end @src, if
 * it is still valid; else the SA that took its place (same addresses, a
 * selector that carries them: re-added or rekeyed), or NULL, the old one
 * put.  A flow holding a dead SA would keep it, and fail every send, until
 * the flow goes.  True if *@xp can send.
 */
bool les_origin_renew(struct les_accel_net *an, struct xfrm_state **xp,
		      const struct les_flow *f, unsigned int src)
{
	struct xfrm_state *old = *xp;

	if (!old)
		return false;
	if (READ_ONCE(old->km.state) == XFRM_STATE_VALID)
		return true;
	*xp = les_origin_lookup(an, old, &old->props.saddr, &old->id.daddr,
				f, src);
	xfrm_state_put(old);
	return *xp;
}

/* The SA's next sequence number, as xfrm_output() would take it. */
static int les_origin_seq(struct xfrm_state *x, unsigned int len, u32 *lo,
			  u32 *hi)
{
	int err = 0;

	spin_lock_bh(&x->lock);
	if (x->km.state != XFRM_STATE_VALID) {
		err = -ESRCH;
		goto out;
	}
	err = xfrm_state_check_expire(x);
	if (err)
		goto out;
	if (x->replay_esn) {
		struct xfrm_replay_state_esn *r = x->replay_esn;

		*lo = ++r->oseq;
		if (!*lo) {
			if (!(x->props.flags & XFRM_STATE_ESN) || !++r->oseq_hi) {
				r->oseq--;
				if (x->props.flags & XFRM_STATE_ESN)
					r->oseq_hi--;
				err = -EOVERFLOW;
				goto out;
			}
		}
		*hi = x->props.flags & XFRM_STATE_ESN ? r->oseq_hi : 0;
	} else {
		*lo = ++x->replay.oseq;
		if (!*lo) {
			x->replay.oseq--;
			err = -EOVERFLOW;
			goto out;
		}
		*hi = 0;
	}
	x->curlft.bytes += len;
	x->curlft.packets++;
	x->lastused = ktime_get_real_seconds();
out:
	spin_unlock_bh(&x->lock);
	return err;
}

/* Seal SPI | SeqLo | IV | header zone | ICV2 in place (protocol.md 3.1). */
static int les_origin_seal(struct les_sa *sa, u8 *esp, unsigned int hz_len)
{
	DECLARE_CRYPTO_WAIT(wait);
	struct aead_request *req;
	struct scatterlist sg;
	u8 nonce[LES_NONCE_LEN];
	int err;

	req = kmalloc(sizeof(*req) + crypto_aead_reqsize(sa->hz_aead),
		      GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	memcpy(nonce, sa->hz_salt, LES_SALT_LEN);
	memcpy(nonce + LES_SALT_LEN, esp + LES_ESP_HDR_LEN, LES_IV_LEN);
	sg_init_one(&sg, esp, LES_HZ_AAD_LEN + hz_len + LES_ICV_LEN);
	aead_request_set_tfm(req, sa->hz_aead);
	aead_request_set_callback(req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				  CRYPTO_TFM_REQ_MAY_SLEEP, crypto_req_done, &wait);
	aead_request_set_crypt(req, &sg, &sg, hz_len, nonce);
	aead_request_set_ad(req, LES_HZ_AAD_LEN);
	err = crypto_wait_req(crypto_aead_encrypt(req), &wait);
	kfree_sensitive(req);
	return err;
}

/*
 * Outer headers and a route for @skb, whose data is the ESP packet; sends
 * it, or frees it on failure.
 */
static int les_origin_xmit(struct xfrm_state *x, struct sk_buff *skb)
{
	struct net *net = xs_net(x);
	unsigned int len;
	u8 proto = IPPROTO_ESP;

	if (x->encap) {
		struct udphdr *uh = skb_push(skb, sizeof(*uh));

		spin_lock_bh(&x->lock);
		uh->source = x->encap->encap_sport;
		uh->dest = x->encap->encap_dport;
		spin_unlock_bh(&x->lock);
		uh->len = htons(skb->len);
		uh->check = 0;
		skb_reset_transport_header(skb);
		proto = IPPROTO_UDP;
	} else {
		skb_reset_transport_header(skb);
	}
	len = skb->len;

	if (x->props.family == AF_INET) {
		struct flowi4 fl4 = {
			.daddr = x->id.daddr.a4,
			.saddr = x->props.saddr.a4,
			.flowi4_proto = proto,
			/* The endpoint's address, not one of ours. */
			.flowi4_flags = FLOWI_FLAG_ANYSRC,
		};
		struct iphdr *iph;
		struct rtable *rt;

		rt = ip_route_output_key(net, &fl4);
		if (IS_ERR(rt)) {
			kfree_skb(skb);
			return PTR_ERR(rt);
		}
		iph = skb_push(skb, sizeof(*iph));
		skb_reset_network_header(skb);
		memset(iph, 0, sizeof(*iph));
		iph->version = 4;
		iph->ihl = 5;
		iph->tot_len = htons(skb->len);
		iph->frag_off = htons(IP_DF);
		iph->ttl = 64;
		iph->protocol = proto;
		iph->saddr = fl4.saddr;
		iph->daddr = fl4.daddr;
		ip_send_check(iph);
		skb->protocol = htons(ETH_P_IP);
		skb_dst_set(skb, &rt->dst);
		return ip_local_out(net, NULL, skb);
	}
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct flowi6 fl6 = {
			.daddr = x->id.daddr.in6,
			.saddr = x->props.saddr.in6,
			.flowi6_proto = proto,
		};
		struct dst_entry *dst;
		struct ipv6hdr *ip6h;

		if (x->encap) {
			struct udphdr *uh = udp_hdr(skb);

			uh->check = csum_ipv6_magic(&fl6.saddr, &fl6.daddr, len,
						    IPPROTO_UDP,
						    skb_checksum(skb, 0, len, 0));
			if (!uh->check)
				uh->check = CSUM_MANGLED_0;
		}
		dst = ip6_route_output(net, NULL, &fl6);
		if (dst->error) {
			int err = dst->error;

			dst_release(dst);
			kfree_skb(skb);
			return err;
		}
		ip6h = skb_push(skb, sizeof(*ip6h));
		skb_reset_network_header(skb);
		memset(ip6h, 0, sizeof(*ip6h));
		ip6h->version = 6;
		ip6h->payload_len = htons(len);
		ip6h->nexthdr = proto;
		ip6h->hop_limit = 64;
		ip6h->saddr = fl6.saddr;
		ip6h->daddr = fl6.daddr;
		skb->protocol = htons(ETH_P_IPV6);
		skb_dst_set(skb, dst);
		return ip6_local_out(net, NULL, skb);
	}
#else
	kfree_skb(skb);
	return -EAFNOSUPPORT;
#endif
}

/*
 * Send the ACK @d describes on the PEP-origin SA @x (held by the caller).
 * Returns 0 once the packet is handed to the stack.
 */
int les_origin_send(struct xfrm_state *x, const struct les_ack_desc *d)
{
	bool tunnel = x->props.mode == XFRM_MODE_TUNNEL;
	unsigned int ilen, esp_len, room;
	struct les_sa *sa = les_sa_get(x);
	struct sk_buff *skb;
	u32 seq_lo, seq_hi;
	u64 iv;
	u8 *esp;
	int err;

	if (!sa || sa->role != LES_ROLE_PEP_ORIGIN_OUT)
		return -EINVAL;
	room = LL_MAX_HEADER + sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	skb = alloc_skb(room + LES_HEADER_LEN + LES_ACK_MAX_LEN, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, room);
	esp = skb->data;
	ilen = les_ack_build(d, tunnel, esp + LES_HDRS_OFF, LES_ACK_MAX_LEN);
	if (!ilen) {
		err = -EINVAL;
		goto fail;
	}
	esp_len = LES_HDRS_OFF + ilen + LES_ICV_LEN;
	skb_put(skb, esp_len);

	err = les_origin_seq(x, esp_len, &seq_lo, &seq_hi);
	if (err)
		goto fail;
	memcpy(esp, &x->id.spi, 4);
	les_put_be32(esp + 4, seq_lo);
	/* IV: the sequence number XOR this state's R (protocol.md 2.2). */
	iv = ((u64)seq_hi << 32 | seq_lo) ^ sa->iv_mask;
	les_put_be32(esp + LES_ESP_HDR_LEN, iv >> 32);
	les_put_be32(esp + LES_ESP_HDR_LEN + 4, (u32)iv);
	les_put_be16(esp + LES_HZ_OFF, ilen);
	esp[LES_HZ_OFF + LES_HZ_NH] = !tunnel ? IPPROTO_TCP :
				      d->family == 4 ? IPPROTO_IPIP : IPPROTO_IPV6;
	esp[LES_HZ_OFF + LES_HZ_FLAGS] = LES_HZF_HEADER_ONLY;
	les_put_be16(esp + LES_HZ_OFF + LES_HZ_EPOCH, seq_hi & 0xffff);

	err = les_origin_seal(sa, esp, LES_HZ_DESC_LEN + ilen);
	if (err)
		goto fail;
	les_stat_inc(xs_net(x), LES_STAT_OUT_HEADER_ONLY);
	/* ip_local_out() owns the skb, whatever it returns. */
	err = les_origin_xmit(x, skb);
	return net_xmit_eval(err);

fail:
	kfree_skb(skb);
	les_stat_inc(xs_net(x), LES_STAT_OUT_ERRORS);
	return err;
}
