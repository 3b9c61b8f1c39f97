// SPDX-License-Identifier: GPL-2.0
/*
 * Sealing: an inner packet becomes an LES packet.
 *
 * The xfrm mode code has already reserved x->props.header_len bytes in
 * front of the inner data: [UDP encap] ESP(8) IV(8) L nh flags epoch(6), and 18
 * more on SAs with a payload zone (16 on PEP-origin ones).  The inner
 * headers move 18 bytes forward into that reserve, which opens the gap
 * ICV2 and the checksum field fill right after them; the payload does not
 * move (docs/protocol.md 3):
 *
 *   before:  | ESP IV L nh f e | 18 spare | headers | payload |
 *   after:   | ESP IV L nh f e | headers | ICV2 | csum | payload | moved pl nh | ICV1 |
 *
 * A paged packet (TCP's segments are: headers in the head, data in pages
 * shared with the socket's retransmit queue) is not linearised.  As esp4
 * does, the trailer goes into a page fragment of the state's, and the
 * payload zone is sealed out of place: read from the old pages, written to
 * one fresh fragment that replaces them.  GSO packets never get here: with
 * no offload, xfrm_output() segments them first.
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

	if (!err && c->step == LES_STEP_PZ) {
		c->step = LES_STEP_HZ;
		err = les_crypt_zone(c, skb, true, les_output_cb);
		if (err == -EINPROGRESS)
			return;
	}
	les_crypt_free(c);
	if (!err)
		les_output_encap_csum(x, skb);
	if (err)
		les_stat_inc(xs_net(x), LES_STAT_OUT_ERRORS);
	xfrm_output_resume(skb_to_full_sk(skb), skb, err);
}

/* Which headers the header zone takes, readable in the head. */
static int les_output_plan(struct sk_buff *skb, unsigned int off, u8 proto,
			   unsigned int total, struct les_hz_plan *plan)
{
	size_t need;

	for (;;) {
		need = les_hz_plan(proto, skb->data + off,
				   skb_headlen(skb) - off, total, plan);
		if (!need)
			return 0;
		if (!pskb_may_pull(skb, off + need))
			return -ENOMEM;
	}
}

/*
 * Whether the trailer can go into a page of its own.  Not with a frag list
 * or a full frag array; not when the pages would not fit one fresh
 * fragment (skb_page_frag_refill() promises a page); not for zerocopy or
 * page-pool pages, whose references are not plain page references.
 */
static bool les_output_can_page(struct sk_buff *skb, unsigned int tailen)
{
	const struct skb_shared_info *shinfo = skb_shinfo(skb);
	unsigned int i;

	if (!tailen || !skb_is_nonlinear(skb) || skb_has_frag_list(skb) ||
	    shinfo->nr_frags >= MAX_SKB_FRAGS ||
	    ALIGN(skb->data_len + tailen, L1_CACHE_BYTES) > PAGE_SIZE ||
	    skb_zcopy(skb) || skb->pp_recycle)
		return false;
	/*
	 * Each page must show up in the source scatterlist, where
	 * les_crypt_free() finds it: skb_to_sgvec() skips empty frags.
	 */
	for (i = 0; i < shinfo->nr_frags; i++)
		if (!skb_frag_size(&shinfo->frags[i]))
			return false;
	return true;
}

/*
 * Room for @tailen trailer bytes at the end of the packet: in the tailroom,
 * in a page fragment (*src_nfrags is then the source list's length), or
 * after skb_cow_data().  Returns where the trailer goes; *nfrags is the
 * scatterlist length the packet then needs.
 */
static u8 *les_output_trailer(struct xfrm_state *x, struct sk_buff *skb,
			      unsigned int tailen, int *nfrags,
			      int *src_nfrags)
{
	unsigned int alloc = ALIGN(tailen, L1_CACHE_BYTES);
	struct page_frag *pfrag = &x->xfrag;
	struct sk_buff *trailer;
	struct page *page;
	unsigned int nr;
	u8 *tail;

	*src_nfrags = 0;
	if (!skb_cloned(skb) && !skb_is_nonlinear(skb) &&
	    tailen <= skb_tailroom(skb)) {
		*nfrags = 1;
		return skb_put(skb, tailen);
	}
	if (!les_output_can_page(skb, tailen))
		goto cow;
	/*
	 * A clone shares its frag array with the original: give it its own
	 * head and array.  That copies the headers, not the payload.  (esp4
	 * linearises clones instead; TCP hands xfrm nothing else.)
	 */
	if (skb_cloned(skb) && pskb_expand_head(skb, 0, 0, GFP_ATOMIC))
		goto cow;

	spin_lock_bh(&x->lock);
	if (unlikely(!skb_page_frag_refill(alloc, pfrag, GFP_ATOMIC))) {
		spin_unlock_bh(&x->lock);
		goto cow;
	}
	page = pfrag->page;
	get_page(page);
	tail = page_address(page) + pfrag->offset;
	nr = skb_shinfo(skb)->nr_frags;
	__skb_fill_page_desc(skb, nr, page, pfrag->offset, tailen);
	skb_shinfo(skb)->nr_frags = nr + 1;
	pfrag->offset += alloc;
	spin_unlock_bh(&x->lock);
	/*
	 * Not truesize: the socket's write memory was charged with the old
	 * truesize and its destructor gives back what truesize says then
	 * (pskb_expand_head() keeps it for owned skbs for the same reason).
	 */
	skb->len += tailen;
	skb->data_len += tailen;
	/* The head, each page, the trailer's; the output is head and one. */
	*src_nfrags = nr + 2;
	*nfrags = 2;
	return tail;

cow:
	if (skb_is_nonlinear(skb))
		les_stat_inc(xs_net(x), LES_STAT_OUT_LINEARISED);
	*nfrags = skb_cow_data(skb, tailen, &trailer);
	if (*nfrags < 0)
		return ERR_PTR(*nfrags);
	return pskb_put(skb, trailer, tailen);
}

/*
 * Paged output's second half: list the payload zone as it is, then give the
 * skb one fresh fragment for the ciphertext.  The old pages' references pass
 * to @c, which drops them once the zone is sealed (les_crypt_free()).
 */
static int les_output_repage(struct xfrm_state *x, struct sk_buff *skb,
			     struct les_crypt *c)
{
	unsigned int len = skb->data_len, alloc = ALIGN(len, L1_CACHE_BYTES);
	struct page_frag *pfrag = &x->xfrag;
	struct page *page;
	int pages_at;

	pages_at = les_crypt_pz_src(c, skb);
	if (pages_at < 0)
		return pages_at;

	spin_lock_bh(&x->lock);
	if (unlikely(!skb_page_frag_refill(alloc, pfrag, GFP_ATOMIC))) {
		spin_unlock_bh(&x->lock);
		return -ENOMEM;
	}
	page = pfrag->page;
	get_page(page);
	__skb_fill_page_desc(skb, 0, page, pfrag->offset, len);
	skb_shinfo(skb)->nr_frags = 1;
	pfrag->offset += alloc;
	spin_unlock_bh(&x->lock);
	c->src_pages_at = pages_at;
	return 0;
}

int les_output(struct xfrm_state *x, struct sk_buff *skb)
{
	unsigned int esph_off, inner_off, total, hdrs, tailen, gap;
	u8 proto, flags, *esph, moved[LES_MOVED_MAX];
	struct net *net = xs_net(x);
	struct les_sa *sa = les_sa_get(x);
	struct les_hz_plan plan = {};
	int nfrags, src_nfrags, err;
	struct les_crypt *c;
	bool header_only;
	__be32 seq_hi;
	u8 *tail;
	u64 seq;

	if (unlikely(!sa || !(sa->dirs & LES_DIR_OUT))) {
		les_stat_inc(net, LES_STAT_OUT_POLICY);
		return -EINVAL;
	}
	header_only = sa->role == LES_ROLE_PEP_ORIGIN_OUT;
	/* Header-only packets have no checksum field (protocol.md 5). */
	gap = LES_ICV_LEN + (header_only ? 0 : LES_CSUM_LEN);

	proto = *skb_mac_header(skb);
	*skb_mac_header(skb) = IPPROTO_ESP;

	/* From here on offsets count from the outer network header. */
	skb_push(skb, -skb_network_offset(skb));
	esph_off = skb_transport_offset(skb) + les_encap_len(x);
	inner_off = esph_off + LES_HDRS_OFF + gap;
	if (unlikely(skb->len < inner_off)) {
		err = -EINVAL;
		goto error;
	}
	total = skb->len - inner_off;

	if (header_only) {
		struct les_chain chain;
		size_t need;

		/* A PEP-origin SA carries headers, never data. */
		while ((need = les_hdr_chain(proto, skb->data + inner_off,
					     skb_headlen(skb) - inner_off, total,
					     &chain))) {
			if (!pskb_may_pull(skb, inner_off + need)) {
				err = -ENOMEM;
				goto error;
			}
		}
		if (chain.len != total) {
			les_stat_inc(net, LES_STAT_OUT_POLICY);
			return -EINVAL;
		}
		hdrs = total;
		flags = LES_HZF_HEADER_ONLY;
		tailen = 0;
	} else {
		err = les_output_plan(skb, inner_off, proto, total, &plan);
		if (err)
			goto error;
		hdrs = plan.len;
		flags = plan.flags;
		/* Moved bytes, no padding, pad length, next header, ICV1. */
		tailen = plan.moved_len + 2 + LES_ICV_LEN;
	}

	tail = les_output_trailer(x, skb, tailen, &nfrags, &src_nfrags);
	if (IS_ERR(tail)) {
		err = PTR_ERR(tail);
		goto error;
	}

	esph = skb->data + esph_off;
	memmove(esph + LES_HDRS_OFF, esph + LES_HDRS_OFF + gap, hdrs);
	if (!header_only) {
		u8 *hz = esph + LES_HDRS_OFF;

		/* Sanitise in place; the checksum goes to its field after ICV2. */
		les_hz_seal(&plan, hz, hz, hz + hdrs + LES_ICV_LEN, moved);
		memcpy(tail, moved, plan.moved_len);
		tail[plan.moved_len] = 0;		/* pad length */
		tail[plan.moved_len + 1] = proto;
		memzero_explicit(moved, plan.moved_len);
	}

	if (x->encap) {
		err = les_output_encap(x, skb);
		if (err)
			goto error;
	}

	seq = XFRM_SKB_CB(skb)->seq.output.low +
	      ((u64)XFRM_SKB_CB(skb)->seq.output.hi << 32);
	memcpy(esph, &x->id.spi, 4);
	les_put_be32(esph + 4, XFRM_SKB_CB(skb)->seq.output.low);
	/* The IV: sequence number XOR this state's R (protocol.md 2.2). */
	seq ^= sa->iv_mask;
	les_put_be32(esph + LES_ESP_HDR_LEN, seq >> 32);
	les_put_be32(esph + LES_ESP_HDR_LEN + 4, (u32)seq);
	les_put_be16(esph + LES_HZ_OFF, hdrs);
	esph[LES_HZ_OFF + LES_HZ_NH] = proto;
	esph[LES_HZ_OFF + LES_HZ_FLAGS] = flags;
	/* SeqHi's low bits: a PEP places the packet in its window (7). */
	les_put_be16(esph + LES_HZ_OFF + LES_HZ_EPOCH,
		     XFRM_SKB_CB(skb)->seq.output.hi & 0xffff);

	c = les_crypt_alloc(sa, nfrags, src_nfrags);
	if (!c) {
		err = -ENOMEM;
		goto error;
	}
	seq_hi = htonl(XFRM_SKB_CB(skb)->seq.output.hi);
	les_crypt_set_zones(c, esph, esph_off,
			    x->props.flags & XFRM_STATE_ESN ? &seq_hi : NULL,
			    LES_HZ_DESC_LEN + hdrs,
			    header_only ? 0 : LES_CSUM_LEN + total - hdrs +
					      plan.moved_len + 2);
	/* The payload zone first: ICV2 covers its ciphertext and ICV1. */
	c->step = header_only ? LES_STEP_HZ : LES_STEP_PZ;
	LES_SKB_CB(skb)->tmp = c;
	if (src_nfrags) {
		err = les_output_repage(x, skb, c);
		if (err) {
			LES_SKB_CB(skb)->tmp = NULL;
			les_crypt_free(c);
			goto error;
		}
		les_stat_inc(net, LES_STAT_OUT_PAGED);
	}

	les_stat_inc(net, header_only ? LES_STAT_OUT_HEADER_ONLY :
					LES_STAT_OUT_PACKETS);

	err = les_crypt_zone(c, skb, true, les_output_cb);
	if (err == -EINPROGRESS)
		return err;
	if (!err && c->step == LES_STEP_PZ) {
		c->step = LES_STEP_HZ;
		err = les_crypt_zone(c, skb, true, les_output_cb);
		if (err == -EINPROGRESS)
			return err;
	}
	les_crypt_free(c);
	if (!err)
		les_output_encap_csum(x, skb);
	if (err == -ENOSPC)
		err = NET_XMIT_DROP;
error:
	if (err)
		les_stat_inc(net, LES_STAT_OUT_ERRORS);
	return err;
}
