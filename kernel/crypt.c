// SPDX-License-Identifier: GPL-2.0
/*
 * The AEAD operation of one zone, shared by output and input.
 *
 * Each zone is one gcm(aes) operation over a scatterlist of the packet
 * (docs/protocol.md 3.1):
 *
 *   header zone:  AAD = SPI || SeqLo || IV || PZ || ICV1   text = 6 + L bytes
 *   payload zone: AAD = prefix || IV || HZ plaintext        text = the rest
 *
 * So ICV2, which a PEP checks, covers the whole packet, and ICV1 binds the
 * header zone a K2 holder could otherwise re-seal.  The payload zone's
 * prefix is SPI || [seq hi] || seq lo: with ESN a copy kept here, so that
 * no header is shuffled in the skb; without it the ESP header itself.
 *
 * One allocation per packet holds the request, the nonce and the
 * scatterlists (two when paged output seals out of place); it lives in
 * LES_SKB_CB(skb)->tmp across async completion.  A zone's list takes the
 * packet in up to three runs: each may split one entry of the skb's.
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
	/* The prefix, and a run that splits an entry, twice. */
	nents = nfrags + 3 + (src_nfrags ? src_nfrags + 3 : 0);

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
	c->src_pages_at = 0;
	p = (u8 *)(c + 1);
	c->nonce = PTR_ALIGN(p, alignmask + 1);
	p = c->nonce + LES_NONCE_LEN;
	c->req = (void *)PTR_ALIGN(p, crypto_tfm_ctx_alignment());
	p = (u8 *)(c->req + 1) + reqsize;
	c->sg = (void *)PTR_ALIGN(p, __alignof__(struct scatterlist));
	c->nfrags = nfrags + 3;
	c->src_nfrags = src_nfrags ? src_nfrags + 3 : 0;
	c->src_sg = src_nfrags ? c->sg + c->nfrags : NULL;
	return c;
}

/*
 * The zones of a packet whose ESP header is at @esp, @esp_off into its skb
 * (linear up to the IV): the payload zone's AAD prefix is SPI, SeqHi
 * (@seq_hi, with ESN only) and SeqLo; without ESN, the ESP header itself.
 */
void les_crypt_set_zones(struct les_crypt *c, const u8 *esp,
			 unsigned int esp_off, const __be32 *seq_hi,
			 unsigned int hz_len, unsigned int pz_len)
{
	memcpy(c->prefix, esp, 4);
	if (seq_hi) {
		memcpy(c->prefix + 4, seq_hi, 4);
		memcpy(c->prefix + 8, esp + 4, 4);
		c->prefix_len = 12;
		c->prefix_in_skb = false;
	} else {
		memcpy(c->prefix + 4, esp + 4, 4);
		c->prefix_len = 8;
		c->prefix_in_skb = true;
	}
	memcpy(c->iv, esp + LES_ESP_HDR_LEN, LES_IV_LEN);
	c->zone_off = esp_off + LES_ESP_HDR_LEN;
	c->hz_len = hz_len;
	c->pz_len = pz_len;
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
 * Append @len bytes of @skb from @off to @sg, whose entries from @n on are
 * free up to @nents: returns the entries then used.  les_crypt_alloc()
 * sized @sg for every run (the skb's entries, each run splitting at most
 * one): the checks assert that, they do not enforce it.
 */
static int les_crypt_sg_add(struct sk_buff *skb, struct scatterlist *sg,
			    int n, int nents, unsigned int off,
			    unsigned int len)
{
	int err;

	if (WARN_ON_ONCE(n >= nents))
		return -EMSGSIZE;
	err = skb_to_sgvec_nomark(skb, sg + n, off, len);
	if (unlikely(err < 0))
		return err;
	if (WARN_ON_ONCE(n + err > nents))
		return -EMSGSIZE;
	return n + err;
}

/*
 * The payload zone's AAD and text (docs/protocol.md 3.1): the prefix, the
 * IV and the header zone's plaintext, then the zone and ICV1, ICV2 left
 * out.  Without ESN the prefix is the ESP header, and the AAD is then one
 * run of the linear head, which GCM implementations read in place.
 * Returns the entries used.
 */
static int les_crypt_pz_sgvec(struct les_crypt *c, struct sk_buff *skb,
			      struct scatterlist *sg, int nents)
{
	unsigned int pz_off = c->zone_off + LES_IV_LEN + c->hz_len + LES_ICV_LEN;
	int n;

	sg_init_table(sg, nents);
	if (c->prefix_in_skb) {
		n = les_crypt_sg_add(skb, sg, 0, nents,
				     c->zone_off - LES_ESP_HDR_LEN,
				     LES_ESP_HDR_LEN + LES_IV_LEN + c->hz_len);
	} else {
		sg_set_buf(sg, c->prefix, c->prefix_len);
		n = les_crypt_sg_add(skb, sg, 1, nents, c->zone_off,
				     LES_IV_LEN + c->hz_len);
	}
	if (n >= 0)
		n = les_crypt_sg_add(skb, sg, n, nents, pz_off,
				     c->pz_len + LES_ICV_LEN);
	if (unlikely(n <= 0))
		return n ? n : -EINVAL;
	sg_mark_end(&sg[n - 1]);
	return n;
}

/*
 * The header zone's AAD and text: SPI, SeqLo and IV, then all that
 * follows ICV2 (the payload zone and ICV1, none in a header-only packet),
 * then the zone and ICV2.  Returns the entries used.
 */
static int les_crypt_hz_sgvec(struct les_crypt *c, struct sk_buff *skb,
			      struct scatterlist *sg, int nents)
{
	unsigned int hz_off = c->zone_off + LES_IV_LEN;
	unsigned int pz_off = hz_off + c->hz_len + LES_ICV_LEN;
	int n;

	sg_init_table(sg, nents);
	n = les_crypt_sg_add(skb, sg, 0, nents, c->zone_off - LES_ESP_HDR_LEN,
			     LES_HZ_AAD_LEN);
	if (n >= 0 && c->pz_len)
		n = les_crypt_sg_add(skb, sg, n, nents, pz_off,
				     c->pz_len + LES_ICV_LEN);
	if (n >= 0)
		n = les_crypt_sg_add(skb, sg, n, nents, hz_off,
				     c->hz_len + LES_ICV_LEN);
	if (unlikely(n <= 0))
		return n ? n : -EINVAL;
	sg_mark_end(&sg[n - 1]);
	return n;
}

/*
 * List the payload zone as the skb holds it now, before paged output gives
 * the skb new pages (output.c).  Returns the index of the first page entry:
 * everything before it is the prefix and two runs of the linear head (the
 * AAD, then the checksum field and any data there), one entry each.
 */
int les_crypt_pz_src(struct les_crypt *c, struct sk_buff *skb)
{
	int err;

	err = les_crypt_pz_sgvec(c, skb, c->src_sg, c->src_nfrags);
	if (unlikely(err < 0))
		return err;
	return c->prefix_in_skb ? 2 : 3;
}

/*
 * Seal or open the zone c->step names.  The packet's IV sits at
 * c->zone_off in @skb; the zone's bytes follow it as docs/protocol.md
 * lays them out.  Sealing goes payload zone first, opening header zone
 * first: each zone's AAD is the other's output, or its input.  Returns 0,
 * -EINPROGRESS (then @done runs later), or an error: -EBADMSG when an ICV
 * does not verify.
 */
int les_crypt_zone(struct les_crypt *c, struct sk_buff *skb, bool encrypt,
		   crypto_completion_t done)
{
	struct scatterlist *src = c->sg;
	struct les_sa *sa = c->sa;
	struct crypto_aead *aead;
	unsigned int ad, text;
	const u8 *salt;
	int err;

	if (c->step == LES_STEP_HZ) {
		aead = sa->hz_aead;
		salt = sa->hz_salt;
		ad = LES_HZ_AAD_LEN;
		if (c->pz_len)
			ad += c->pz_len + LES_ICV_LEN;
		text = c->hz_len;
		err = les_crypt_hz_sgvec(c, skb, c->sg, c->nfrags);
	} else {
		aead = sa->pz_aead;
		salt = sa->pz_salt;
		ad = c->prefix_len + LES_IV_LEN + c->hz_len;
		text = c->pz_len;
		/* Paged output reads the old pages, writes the new one. */
		if (c->src_pages_at)
			src = c->src_sg;
		err = les_crypt_pz_sgvec(c, skb, c->sg, c->nfrags);
	}
	if (unlikely(err < 0))
		return err;
	/* When opening, the ICV counts as ciphertext. */
	if (!encrypt)
		text += LES_ICV_LEN;

	memcpy(c->nonce, salt, LES_SALT_LEN);
	memcpy(c->nonce + LES_SALT_LEN, c->iv, LES_IV_LEN);

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
