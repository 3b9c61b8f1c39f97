// SPDX-License-Identifier: GPL-2.0
/*
 * The AEAD operation of one zone, shared by output and input.
 *
 * Each zone is one gcm(aes) operation over a scatterlist of the packet
 * (docs/protocol.md 3.1):
 *
 *   header zone:  AAD = SPI || SeqLo || IV             text = 6 + L bytes
 *   payload zone: AAD = prefix || IV || HZ || ICV2      text = the rest
 *
 * The header zone's AAD is always the 16 bytes in front of it.  The payload
 * zone's prefix is SPI || [seq hi] || seq lo: with ESN a copy kept here, so
 * that no header is shuffled in the skb; without it the ESP header itself.
 *
 * One allocation per packet holds the request, the nonce and the
 * scatterlists (two when paged output seals out of place); it lives in
 * LES_SKB_CB(skb)->tmp across async completion.
 */
#include <linux/slab.h>
#include <linux/scatterlist.h>
#include <crypto/aead.h>

#include "les.h"

struct les_crypt *les_crypt_alloc(struct les_sa *sa, int nfrags,
				  int src_nfrags)
{
	unsigned int reqsize, alignmask, len, nents;
	struct les_crypt *c;
	u8 *p;

	reqsize = crypto_aead_reqsize(sa->hz_aead);
	alignmask = crypto_aead_alignmask(sa->hz_aead);
	if (sa->pz_aead) {
		reqsize = max(reqsize, crypto_aead_reqsize(sa->pz_aead));
		alignmask = max(alignmask, crypto_aead_alignmask(sa->pz_aead));
	}
	/* Each list may start with the prefix: one entry more than frags. */
	nents = nfrags + 1 + (src_nfrags ? src_nfrags + 1 : 0);

	len = sizeof(*c);
	len += alignmask + LES_NONCE_LEN;
	len = ALIGN(len, crypto_tfm_ctx_alignment()) + crypto_tfm_ctx_alignment();
	len += sizeof(struct aead_request) + reqsize;
	len = ALIGN(len, __alignof__(struct scatterlist));
	len += sizeof(struct scatterlist) * nents;

	c = kmalloc(len, GFP_ATOMIC);
	if (!c)
		return NULL;

	c->sa = sa;
	c->nfrags = nfrags;
	c->src_nfrags = src_nfrags;
	c->src_pages_at = 0;
	p = (u8 *)(c + 1);
	c->nonce = PTR_ALIGN(p, alignmask + 1);
	p = c->nonce + LES_NONCE_LEN;
	c->req = (void *)PTR_ALIGN(p, crypto_tfm_ctx_alignment());
	p = (u8 *)(c->req + 1) + reqsize;
	c->sg = (void *)PTR_ALIGN(p, __alignof__(struct scatterlist));
	c->src_sg = src_nfrags ? c->sg + nfrags + 1 : NULL;
	return c;
}

/* Drop the source pages paged output handed over, then the operation. */
void les_crypt_free(struct les_crypt *c)
{
	struct scatterlist *sg;

	if (c->src_pages_at) {
		sg = &c->src_sg[c->src_pages_at - 1];
		while (!sg_is_last(sg)) {
			sg = sg_next(sg);
			put_page(sg_page(sg));
		}
	}
	kfree(c);
}

/*
 * The packet from the ESP header (or the IV, after a prefix kept here) to
 * the end of the zone: @span bytes from the IV.
 */
static int les_crypt_sgvec(struct les_crypt *c, struct sk_buff *skb,
			   struct scatterlist *sg, int nfrags,
			   bool prefix_in_skb, unsigned int span)
{
	if (prefix_in_skb) {
		/*
		 * The ESP header is the AAD's first 8 bytes, just before the
		 * IV: the AAD is then one run of the linear head, which GCM
		 * implementations read in place instead of copying it.
		 */
		sg_init_table(sg, nfrags);
		return skb_to_sgvec(skb, sg, c->zone_off - LES_ESP_HDR_LEN,
				    span + LES_ESP_HDR_LEN);
	}
	sg_init_table(sg, nfrags + 1);
	sg_set_buf(sg, c->prefix, c->prefix_len);
	return skb_to_sgvec(skb, sg + 1, c->zone_off, span);
}

static unsigned int les_crypt_pz_span(const struct les_crypt *c)
{
	return LES_IV_LEN + c->hz_len + LES_ICV_LEN + c->pz_len + LES_ICV_LEN;
}

/*
 * List the payload zone as the skb holds it now, before paged output gives
 * the skb new pages (output.c).  Returns the index of the first page entry:
 * everything before it is the prefix and the linear head, one entry each,
 * as skb_to_sgvec() lays out a head that holds the AAD.
 */
int les_crypt_pz_src(struct les_crypt *c, struct sk_buff *skb)
{
	int err;

	err = les_crypt_sgvec(c, skb, c->src_sg, c->src_nfrags,
			      c->prefix_in_skb, les_crypt_pz_span(c));
	if (unlikely(err < 0))
		return err;
	return c->prefix_in_skb ? 1 : 2;
}

/*
 * Seal or open the zone c->step names.  The packet's IV sits at
 * c->zone_off in @skb; the zone's bytes follow it as docs/protocol.md
 * lays them out.  Returns 0, -EINPROGRESS (then @done runs later), or an
 * error: -EBADMSG when an ICV does not verify.
 */
int les_crypt_zone(struct les_crypt *c, struct sk_buff *skb, bool encrypt,
		   crypto_completion_t done)
{
	struct scatterlist *src = c->sg;
	unsigned int ad, text, span;
	struct les_sa *sa = c->sa;
	struct crypto_aead *aead;
	bool prefix_in_skb;
	const u8 *salt;
	int err;

	if (c->step == LES_STEP_HZ) {
		aead = sa->hz_aead;
		salt = sa->hz_salt;
		prefix_in_skb = true;
		ad = LES_HZ_AAD_LEN;
		text = c->hz_len;
		span = LES_IV_LEN + c->hz_len + LES_ICV_LEN;
	} else {
		aead = sa->pz_aead;
		salt = sa->pz_salt;
		prefix_in_skb = c->prefix_in_skb;
		ad = c->prefix_len + LES_IV_LEN + c->hz_len + LES_ICV_LEN;
		text = c->pz_len;
		span = les_crypt_pz_span(c);
		/* Paged output reads the old pages, writes the new one. */
		if (c->src_pages_at)
			src = c->src_sg;
	}
	/* When opening, the ICV counts as ciphertext. */
	if (!encrypt)
		text += LES_ICV_LEN;

	memcpy(c->nonce, salt, LES_SALT_LEN);
	memcpy(c->nonce + LES_SALT_LEN, c->iv, LES_IV_LEN);

	err = les_crypt_sgvec(c, skb, c->sg, c->nfrags, prefix_in_skb, span);
	if (unlikely(err < 0))
		return err;

	aead_request_set_tfm(c->req, aead);
	aead_request_set_callback(c->req, 0, done, skb);
	aead_request_set_crypt(c->req, src, c->sg, text, c->nonce);
	aead_request_set_ad(c->req, ad);

	return encrypt ? crypto_aead_encrypt(c->req) :
			 crypto_aead_decrypt(c->req);
}

/*
 * L, before any ICV is checked: the first two plaintext bytes of the header
 * zone are XORed with GCM's first keystream block (docs/protocol.md 3.1).
 * @iv and @hz point at the packet's IV and header zone ciphertext.
 */
unsigned int les_hz_peek_len(const struct les_sa *sa, const u8 *iv,
			     const u8 *hz)
{
	u8 block[AES_BLOCK_SIZE];
	unsigned int len;

	les_hz_ctr_block(block, sa->hz_salt, iv);
	aes_encrypt(&sa->hz_aes, block, block);
	len = les_hz_len_unmask(hz, block);
	memzero_explicit(block, sizeof(block));
	return len;
}
