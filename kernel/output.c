// SPDX-License-Identifier: GPL-2.0
/*
 * Sealing: an inner packet becomes an LES packet.
 *
 * The xfrm mode code has already reserved x->props.header_len bytes in
 * front of the inner data: [UDP encap] ESP(8) IV(8) L(2) nh+flags(2) and 16
 * more.  The inner headers move 16 bytes forward into that reserve, which
 * opens the gap ICV2 fills right after them; the payload does not move.
 *
 *   before:  | ESP IV L nh f | 16 spare | headers | payload |
 *   after:   | ESP IV L nh f | headers | ICV2 | payload | pad pl nh | ICV1 |
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/xfrm.h>

#include "les.h"
#include "compat.h"

static void les_output_done(struct sk_buff *skb, int err);

static LES_CRYPTO_DONE(les_output_cb)
{
	les_output_done(LES_CRYPTO_DATA(), err);
}

/* Make the inner header chain readable in the head and measure it. */
static int les_output_chain(struct sk_buff *skb, unsigned int off, u8 proto,
			    unsigned int total, struct les_chain *chain)
{
	size_t need;

	for (;;) {
		need = les_hdr_chain(proto, skb->data + off,
				     skb_headlen(skb) - off, total, chain);
		if (!need)
			return 0;
		if (!pskb_may_pull(skb, off + need))
			return -ENOMEM;
	}
}

static int les_output_encap(struct xfrm_state *x, struct sk_buff *skb)
{
	struct udphdr *uh = (struct udphdr *)skb_transport_header(skb);
	unsigned int len = skb->len - skb_transport_offset(skb);

	if (len > IP_MAX_MTU - sizeof(struct iphdr))
		return -EMSGSIZE;

	spin_lock_bh(&x->lock);
	uh->source = x->encap->encap_sport;
	uh->dest = x->encap->encap_dport;
	spin_unlock_bh(&x->lock);
	uh->len = htons(len);
	uh->check = 0;
	*skb_mac_header(skb) = IPPROTO_UDP;
	return 0;
}

/*
 * UDP over IPv6 needs a real checksum (RFC 8200), and only now, with both
 * zones sealed, are the bytes it covers final.  IPv4 keeps 0 (RFC 3948).
 */
static void les_output_encap_csum(struct xfrm_state *x, struct sk_buff *skb)
{
	struct udphdr *uh;
	unsigned int off;
	__wsum csum;

	if (!x->encap || x->props.family != AF_INET6)
		return;
	uh = udp_hdr(skb);
	off = skb_transport_offset(skb);
	csum = skb_checksum(skb, off, skb->len - off, 0);
	uh->check = csum_ipv6_magic(&ipv6_hdr(skb)->saddr, &ipv6_hdr(skb)->daddr,
				    skb->len - off, IPPROTO_UDP, csum);
	if (!uh->check)
		uh->check = CSUM_MANGLED_0;
}

/* Finish after both zones are sealed, or after a failure. */
static void les_output_done(struct sk_buff *skb, int err)
{
	struct les_crypt *c = LES_SKB_CB(skb)->tmp;
	struct xfrm_state *x = c->sa->x;

	if (!err && c->step == LES_STEP_HZ && c->sa->pz_aead) {
		c->step = LES_STEP_PZ;
		err = les_crypt_zone(c, skb, true, les_output_cb);
		if (err == -EINPROGRESS)
			return;
	}
	kfree(c);
	if (!err)
		les_output_encap_csum(x, skb);
	if (err)
		les_stat_inc(xs_net(x), LES_STAT_OUT_ERRORS);
	xfrm_output_resume(skb_to_full_sk(skb), skb, err);
}

int les_output(struct xfrm_state *x, struct sk_buff *skb)
{
	unsigned int esph_off, payload_off, total, hdrs, pad = 0, tailen;
	struct net *net = xs_net(x);
	struct les_sa *sa = les_sa_get(x);
	struct les_chain chain;
	struct sk_buff *trailer;
	struct les_crypt *c;
	bool header_only;
	u8 proto, *esph;
	int nfrags, err;
	u64 seq;

	if (unlikely(!sa || !(sa->dirs & LES_DIR_OUT))) {
		les_stat_inc(net, LES_STAT_OUT_POLICY);
		return -EINVAL;
	}
	header_only = sa->role == LES_ROLE_PEP_ORIGIN_OUT;

	proto = *skb_mac_header(skb);
	*skb_mac_header(skb) = IPPROTO_ESP;

	/* From here on offsets count from the outer network header. */
	skb_push(skb, -skb_network_offset(skb));
	esph_off = skb_transport_offset(skb) + les_encap_len(x);
	payload_off = esph_off + LES_HEADER_LEN;
	if (unlikely(skb->len < payload_off)) {
		err = -EINVAL;
		goto error;
	}
	total = skb->len - payload_off;

	err = les_output_chain(skb, payload_off, proto, total, &chain);
	if (err)
		goto error;
	hdrs = chain.len;
	if (header_only && hdrs != total) {
		/* A PEP-origin SA carries headers, never data. */
		les_stat_inc(net, LES_STAT_OUT_POLICY);
		return -EINVAL;
	}

	if (!header_only)
		pad = les_pad_len(hdrs, total - hdrs);
	/* A header-only packet's ICV2 fills the gap; nothing is appended. */
	tailen = header_only ? 0 : pad + 2 + LES_ICV_LEN;

	if (!skb_cloned(skb) && !skb_is_nonlinear(skb) &&
	    tailen <= skb_tailroom(skb)) {
		nfrags = 1;
		trailer = skb;
	} else {
		nfrags = skb_cow_data(skb, tailen, &trailer);
		if (nfrags < 0) {
			err = nfrags;
			goto error;
		}
	}

	if (!header_only) {
		u8 *tail = skb_tail_pointer(trailer);
		unsigned int i;

		for (i = 0; i < pad; i++)
			tail[i] = i + 1;
		tail[pad] = pad;
		tail[pad + 1] = proto;
		pskb_put(skb, trailer, tailen);
	}

	if (x->encap) {
		err = les_output_encap(x, skb);
		if (err)
			goto error;
	}

	esph = skb->data + esph_off;
	memmove(esph + LES_HDRS_OFF, esph + LES_HEADER_LEN, hdrs);

	seq = XFRM_SKB_CB(skb)->seq.output.low +
	      ((u64)XFRM_SKB_CB(skb)->seq.output.hi << 32);
	memcpy(esph, &x->id.spi, 4);
	les_put_be32(esph + 4, XFRM_SKB_CB(skb)->seq.output.low);
	les_put_be32(esph + 8, seq >> 32);
	les_put_be32(esph + 12, (u32)seq);
	les_put_be16(esph + LES_ESP_HDR_LEN + LES_IV_LEN, LES_HZ_DESC_LEN + hdrs);
	esph[LES_HZ_OFF] = proto;
	esph[LES_HZ_OFF + 1] = header_only ? LES_HZF_HEADER_ONLY : 0;

	c = les_crypt_alloc(sa, nfrags);
	if (!c) {
		err = -ENOMEM;
		goto error;
	}
	memcpy(c->prefix, esph, 4);
	if (x->props.flags & XFRM_STATE_ESN) {
		les_put_be32(c->prefix + 4, XFRM_SKB_CB(skb)->seq.output.hi);
		memcpy(c->prefix + 8, esph + 4, 4);
		c->prefix_len = 12;
		c->prefix_in_skb = false;
	} else {
		memcpy(c->prefix + 4, esph + 4, 4);
		c->prefix_len = 8;
		c->prefix_in_skb = true;
	}
	memcpy(c->iv, esph + LES_ESP_HDR_LEN, LES_IV_LEN);
	c->zone_off = esph_off + LES_ESP_HDR_LEN;
	c->hz_len = LES_HZ_DESC_LEN + hdrs;
	c->pz_len = header_only ? 0 : total - hdrs + pad + 2;
	c->step = LES_STEP_HZ;
	LES_SKB_CB(skb)->tmp = c;

	les_stat_inc(net, header_only ? LES_STAT_OUT_HEADER_ONLY :
					LES_STAT_OUT_PACKETS);

	err = les_crypt_zone(c, skb, true, les_output_cb);
	if (err == -EINPROGRESS)
		return err;
	if (!err && sa->pz_aead) {
		c->step = LES_STEP_PZ;
		err = les_crypt_zone(c, skb, true, les_output_cb);
		if (err == -EINPROGRESS)
			return err;
	}
	kfree(c);
	if (!err)
		les_output_encap_csum(x, skb);
	if (err == -ENOSPC)
		err = NET_XMIT_DROP;
error:
	if (err)
		les_stat_inc(net, LES_STAT_OUT_ERRORS);
	return err;
}
