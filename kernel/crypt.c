// SPDX-License-Identifier: GPL-2.0
/*
 * The AEAD operation of one zone, shared by output and input.
 *
 * Each zone is one gcm(aes) operation over a scatterlist made of the AAD
 * prefix (SPI || [seq hi] || seq lo: with ESN a copy kept here, so that no
 * header is shuffled in the skb; without it the ESP header in the skb)
 * followed by the packet from the IV on:
 *
 *   header zone:  AAD = prefix || IV || L               text = L bytes
 *   payload zone: AAD = prefix || IV || L || HZ || ICV2  text = the rest
 *
 * One allocation per packet holds the request, the nonce and the
 * scatterlist; it lives in LES_SKB_CB(skb)->tmp across async completion.
 */
#include <linux/slab.h>
#include <linux/scatterlist.h>
#include <crypto/aead.h>

#include "les.h"

struct les_crypt *les_crypt_alloc(struct les_sa *sa, int nfrags)
{
	unsigned int reqsize, alignmask, len;
	struct les_crypt *c;
	u8 *p;

	reqsize = crypto_aead_reqsize(sa->hz_aead);
	alignmask = crypto_aead_alignmask(sa->hz_aead);
	if (sa->pz_aead) {
		reqsize = max(reqsize, crypto_aead_reqsize(sa->pz_aead));
		alignmask = max(alignmask, crypto_aead_alignmask(sa->pz_aead));
	}

	len = sizeof(*c);
	len += alignmask + LES_NONCE_LEN;
	len = ALIGN(len, crypto_tfm_ctx_alignment()) + crypto_tfm_ctx_alignment();
	len += sizeof(struct aead_request) + reqsize;
	len = ALIGN(len, __alignof__(struct scatterlist));
	len += sizeof(struct scatterlist) * (nfrags + 1);

	c = kmalloc(len, GFP_ATOMIC);
	if (!c)
		return NULL;

	c->sa = sa;
	c->nfrags = nfrags;
	p = (u8 *)(c + 1);
	c->nonce = PTR_ALIGN(p, alignmask + 1);
	p = c->nonce + LES_NONCE_LEN;
	c->req = (void *)PTR_ALIGN(p, crypto_tfm_ctx_alignment());
	p = (u8 *)(c->req + 1) + reqsize;
	c->sg = (void *)PTR_ALIGN(p, __alignof__(struct scatterlist));
	return c;
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
	struct les_sa *sa = c->sa;
	unsigned int ad, text, span;
	struct crypto_aead *aead;
	const u8 *salt;
	int err;

	/* IV and L sit between the prefix and the header zone. */
	ad = c->prefix_len + LES_IV_LEN + LES_HZLEN_LEN;
	if (c->step == LES_STEP_HZ) {
		aead = sa->hz_aead;
		salt = sa->hz_salt;
		text = c->hz_len;
		span = LES_IV_LEN + LES_HZLEN_LEN + c->hz_len + LES_ICV_LEN;
	} else {
		aead = sa->pz_aead;
		salt = sa->pz_salt;
		ad += c->hz_len + LES_ICV_LEN;
		text = c->pz_len;
		span = LES_IV_LEN + LES_HZLEN_LEN + c->hz_len + LES_ICV_LEN +
		       c->pz_len + LES_ICV_LEN;
	}
	/* When opening, the ICV counts as ciphertext. */
	if (!encrypt)
		text += LES_ICV_LEN;

	memcpy(c->nonce, salt, LES_SALT_LEN);
	memcpy(c->nonce + LES_SALT_LEN, c->iv, LES_IV_LEN);

	if (c->prefix_in_skb) {
		/*
		 * Without ESN the prefix is the ESP header itself, just before
		 * the IV: the AAD is then one run of the linear head, which
		 * GCM implementations read in place instead of copying it.
		 */
		sg_init_table(c->sg, c->nfrags);
		err = skb_to_sgvec(skb, c->sg, c->zone_off - LES_ESP_HDR_LEN,
				   span + LES_ESP_HDR_LEN);
	} else {
		sg_init_table(c->sg, c->nfrags + 1);
		sg_set_buf(&c->sg[0], c->prefix, c->prefix_len);
		err = skb_to_sgvec(skb, &c->sg[1], c->zone_off, span);
	}
	if (unlikely(err < 0))
		return err;

	aead_request_set_tfm(c->req, aead);
	aead_request_set_callback(c->req, 0, done, skb);
	aead_request_set_crypt(c->req, c->sg, c->sg, text, c->nonce);
	aead_request_set_ad(c->req, ad);

	return encrypt ? crypto_aead_encrypt(c->req) :
			 crypto_aead_decrypt(c->req);
}
