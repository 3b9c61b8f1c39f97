// SPDX-License-Identifier: GPL-2.0
/*
 * Opening: an LES packet becomes the inner packet again.
 *
 * L comes first, from one AES block (docs/protocol.md 3.1).  An endpoint
 * opens the header zone first (ICV2 covers all that follows it): its
 * plaintext is the payload zone's AAD.  Then the checksum and the moved
 * bytes go back into the headers, the headers move 18 bytes back over ICV2
 * and the checksum field to rejoin the payload, and the ESP part goes:
 *
 *   | ESP IV L nh f e | headers | ICV2 | csum | payload | moved pad pl nh | ICV1 |
 *   ->                               | headers | payload |
 *
 * The header zone must then be exactly what a sender makes of the restored
 * packet (section 4).  A pep-origin-in SA takes header-only packets and
 * nothing else.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/xfrm.h>

#include "les.h"
#include "compat.h"

static int les_input_done2(struct sk_buff *skb, int err);

static LES_CRYPTO_DONE(les_input_cb)
{
	struct sk_buff *skb = LES_CRYPTO_DATA();
	struct les_crypt *c = LES_SKB_CB(skb)->tmp;

	if (!err && c->step == LES_STEP_HZ && c->pz_len) {
		c->step = LES_STEP_PZ;
		err = les_crypt_zone(c, skb, false, les_input_cb);
		if (err == -EINPROGRESS)
			return;
	}
	xfrm_input_resume(skb, les_input_done2(skb, err));
}

/* Drop and count: returns the error xfrm_input expects. */
static int les_drop(struct xfrm_state *x, enum les_stat why)
{
	les_stat_inc(xs_net(x), why);
	return -EINVAL;
}

/* RFC 3948: tell the keying daemon if the NAT mapping of the peer moved. */
static void les_input_encap(struct xfrm_state *x, struct sk_buff *skb,
			    unsigned int l3_len)
{
	const struct udphdr *uh = (void *)(skb_network_header(skb) + l3_len);
	xfrm_address_t ipaddr;
	bool moved;

	if (x->props.family == AF_INET) {
		ipaddr.a4 = ip_hdr(skb)->saddr;
		moved = ipaddr.a4 != x->props.saddr.a4;
	} else {
		ipaddr.in6 = ipv6_hdr(skb)->saddr;
		moved = !ipv6_addr_equal(&ipaddr.in6, &x->props.saddr.in6);
	}
	if (moved || uh->source != x->encap->encap_sport)
		km_new_mapping(x, &ipaddr, uh->source);

	/* RFC 3948 3.1.2: transport-mode checksums cannot be trusted. */
	if (x->props.mode == XFRM_MODE_TRANSPORT)
		skb->ip_summed = CHECKSUM_UNNECESSARY;
}

/* Padding (any length up to 255, valued 1, 2, 3...) before @end. */
static noinline bool les_input_pad_ok(struct sk_buff *skb, unsigned int end,
				      unsigned int padlen)
{
	unsigned int done = 0, i, n;
	u8 buf[64];

	while (done < padlen) {
		n = min_t(unsigned int, padlen - done, sizeof(buf));
		if (skb_copy_bits(skb, end - padlen + done, buf, n))
			return false;
		for (i = 0; i < n; i++)
			if (buf[i] != (u8)(done + i + 1))
				return false;
		done += n;
	}
	return true;
}

/*
 * The header zone of a packet that also has a payload zone: put what it
 * left out back, rejoin the headers to the payload, and check that a sender
 * would have made exactly this header zone (protocol.md 4).  Returns 0 or
 * the counter that says why not.
 */
static int les_input_restore(struct sk_buff *skb, u8 nexthdr, u8 flags,
			     unsigned int hdrs)
{
	u8 hz[LES_HDRS_SEALED_MAX], again[LES_HDRS_SEALED_MAX];
	u8 csum[LES_CSUM_LEN], csum2[LES_CSUM_LEN];
	u8 moved[LES_MOVED_MAX], moved2[LES_MOVED_MAX];
	unsigned int pz_off, pz_len, padlen, inner, total;
	struct les_hz_plan plan;
	u8 tail[2];
	size_t need;
	int moved_len;

	if (flags & LES_HZF_HEADER_ONLY)
		return LES_STAT_IN_POLICY;
	if (hdrs > LES_HDRS_SEALED_MAX)
		return LES_STAT_IN_MALFORMED;
	moved_len = les_hz_moved_len(nexthdr, flags, skb->data + LES_HDRS_OFF, hdrs);
	if (moved_len < 0)
		return LES_STAT_IN_MALFORMED;

	/* Payload zone: checksum | payload | moved | padding | pl | nh. */
	pz_off = LES_HEADER_LEN + hdrs;
	pz_len = skb->len - pz_off - LES_ICV_LEN;
	if (skb_copy_bits(skb, pz_off + pz_len - 2, tail, 2))
		return LES_STAT_IN_MALFORMED;
	padlen = tail[0];
	if (tail[1] != nexthdr ||
	    LES_CSUM_LEN + moved_len + padlen + 2 > pz_len)
		return LES_STAT_IN_MALFORMED;
	if (!les_input_pad_ok(skb, pz_off + pz_len - 2, padlen))
		return LES_STAT_IN_MALFORMED;
	inner = pz_off + pz_len - 2 - padlen - moved_len;
	if (skb_copy_bits(skb, pz_off, csum, LES_CSUM_LEN) ||
	    skb_copy_bits(skb, inner, moved, moved_len))
		return LES_STAT_IN_MALFORMED;

	memcpy(hz, skb->data + LES_HDRS_OFF, hdrs);
	les_hz_restore(nexthdr, flags, skb->data + LES_HDRS_OFF, hdrs, csum, moved);
	if (pskb_trim(skb, inner))
		return LES_STAT_IN_ERRORS;
	memmove(skb->data + LES_HEADER_LEN + LES_CSUM_LEN,
		skb->data + LES_HDRS_OFF, hdrs);

	/* The inner packet (and any TFC padding) as a sender had it. */
	inner = LES_HEADER_LEN + LES_CSUM_LEN;
	total = skb->len - inner;
	while ((need = les_hz_plan(nexthdr, skb->data + inner,
				   skb_headlen(skb) - inner, total, &plan)))
		if (!pskb_may_pull(skb, inner + need))
			return LES_STAT_IN_ERRORS;
	if (plan.len != hdrs || plan.flags != flags ||
	    plan.moved_len != moved_len)
		return LES_STAT_IN_MALFORMED;
	les_hz_seal(&plan, skb->data + inner, again, csum2, moved2);
	if (memcmp(again, hz, hdrs) || memcmp(csum2, csum, LES_CSUM_LEN) ||
	    memcmp(moved2, moved, moved_len))
		return LES_STAT_IN_MALFORMED;
	return 0;
}

static int les_input_done2(struct sk_buff *skb, int err)
{
	struct xfrm_state *x = xfrm_input_state(skb);
	struct les_crypt *c = LES_SKB_CB(skb)->tmp;
	unsigned int hdrs = c->hz_len - LES_HZ_DESC_LEN;
	bool header_only = !c->pz_len;
	bool tunnel = x->props.mode == XFRM_MODE_TUNNEL;
	unsigned int l3_len, strip;
	u8 nexthdr, flags;
	int why;

	les_crypt_free(c);
	if (unlikely(err)) {
		les_stat_inc(xs_net(x), err == -EBADMSG ? LES_STAT_IN_AUTH_FAILED :
							   LES_STAT_IN_ERRORS);
		return err;
	}

	nexthdr = skb->data[LES_HZ_OFF + LES_HZ_NH];
	flags = skb->data[LES_HZ_OFF + LES_HZ_FLAGS];
	if (flags & ~LES_HZF_KNOWN)
		return les_drop(x, LES_STAT_IN_MALFORMED);
	/* The epoch is SeqHi's low half, which ICV1 (or ICV2) vouched for. */
	if (les_get_be16(skb->data + LES_HZ_OFF + LES_HZ_EPOCH) !=
	    (ntohl(XFRM_SKB_CB(skb)->seq.input.hi) & 0xffff))
		return les_drop(x, LES_STAT_IN_MALFORMED);

	if (header_only) {
		if (flags != LES_HZF_HEADER_ONLY ||
		    les_pep_origin_check(nexthdr, skb->data + LES_HDRS_OFF, hdrs,
					 tunnel) != LES_PO_OK)
			return les_drop(x, LES_STAT_IN_POLICY);
		err = pskb_trim(skb, skb->len - LES_ICV_LEN);
		if (unlikely(err))
			return err;
		strip = LES_HDRS_OFF;
		les_stat_inc(xs_net(x), LES_STAT_IN_HEADER_ONLY);
	} else {
		why = les_input_restore(skb, nexthdr, flags, hdrs);
		if (why)
			return les_drop(x, why);
		strip = LES_HEADER_LEN + LES_CSUM_LEN;
		les_stat_inc(xs_net(x), LES_STAT_IN_PACKETS);
	}

	/* Outer IP header (and extension headers) up to UDP or ESP. */
	if (x->props.family == AF_INET)
		l3_len = ip_hdr(skb)->ihl * 4;
	else
		l3_len = skb_network_header_len(skb) - les_encap_len(x);
	if (x->encap)
		les_input_encap(x, skb, l3_len);

	__skb_pull(skb, strip);
	if (tunnel)
		skb_reset_transport_header(skb);
	else
		skb_set_transport_header(skb, -l3_len);

	/* RFC 4303: a dummy packet (next header 59) is dropped silently. */
	if (nexthdr == IPPROTO_NONE)
		return -EINVAL;
	return nexthdr;
}

int les_input(struct xfrm_state *x, struct sk_buff *skb)
{
	struct les_sa *sa = les_sa_get(x);
	unsigned int hz_len, hz_end;
	struct sk_buff *trailer;
	struct les_crypt *c;
	bool header_only;
	int nfrags, err;

	/* A pep-view SA is for reading headers on a PEP, never for decap. */
	if (unlikely(!sa || !(sa->dirs & LES_DIR_IN) ||
		     sa->role == LES_ROLE_PEP_VIEW))
		return les_drop(x, LES_STAT_IN_POLICY);
	header_only = sa->role == LES_ROLE_PEP_ORIGIN_IN;

	if (skb->len < LES_MIN_LEN || !pskb_may_pull(skb, LES_HDRS_OFF))
		return les_drop(x, LES_STAT_IN_MALFORMED);
	hz_len = LES_HZ_DESC_LEN +
		 les_hz_peek_len(sa, skb->data + LES_ESP_HDR_LEN,
				 skb->data + LES_HZ_OFF);
	if (hz_len > LES_HZ_DESC_LEN + LES_HDRS_MAX)
		return les_drop(x, LES_STAT_IN_MALFORMED);
	hz_end = LES_HZ_OFF + hz_len + LES_ICV_LEN;
	if (header_only) {
		if (skb->len != hz_end)
			return les_drop(x, skb->len > hz_end ? LES_STAT_IN_POLICY :
							       LES_STAT_IN_MALFORMED);
	} else if (skb->len < hz_end + LES_CSUM_LEN + 2 + LES_ICV_LEN) {
		/* Too short for a payload zone: header-only, or broken. */
		return les_drop(x, skb->len == hz_end ? LES_STAT_IN_POLICY :
							LES_STAT_IN_MALFORMED);
	}
	/* The header zone is opened and moved in place: make it linear. */
	if (!pskb_may_pull(skb, hz_end + (header_only ? 0 : LES_CSUM_LEN)))
		return les_drop(x, LES_STAT_IN_MALFORMED);
	if (!skb_cloned(skb) && !skb_is_nonlinear(skb)) {
		nfrags = 1;
	} else if (!skb_cloned(skb) && !skb_has_frag_list(skb) &&
		   !skb_has_shared_frag(skb)) {
		nfrags = skb_shinfo(skb)->nr_frags + 1;
	} else {
		nfrags = skb_cow_data(skb, 0, &trailer);
		if (nfrags < 0)
			return nfrags;
	}

	c = les_crypt_alloc(sa, nfrags, 0);
	if (!c)
		return -ENOMEM;
	les_crypt_set_zones(c, skb->data, 0, x->props.flags & XFRM_STATE_ESN ?
			    &XFRM_SKB_CB(skb)->seq.input.hi : NULL, hz_len,
			    header_only ? 0 : skb->len - hz_end - LES_ICV_LEN);
	/* The header zone first: its plaintext is the payload zone's AAD. */
	c->step = LES_STEP_HZ;
	LES_SKB_CB(skb)->tmp = c;

	/* Decryption replaces the bytes; any hardware checksum is stale. */
	skb->ip_summed = CHECKSUM_NONE;

	err = les_crypt_zone(c, skb, false, les_input_cb);
	if (err == -EINPROGRESS)
		return err;
	if (!err && c->pz_len) {
		c->step = LES_STEP_PZ;
		err = les_crypt_zone(c, skb, false, les_input_cb);
		if (err == -EINPROGRESS)
			return err;
	}
	return les_input_done2(skb, err);
}
