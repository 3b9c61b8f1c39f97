// SPDX-License-Identifier: GPL-2.0
/*
 * HKDF-SHA256 (RFC 5869) and the zone key derivation of docs/protocol.md
 * section 2.1.  Runs when an SA is added, never per packet.  PEP-origin
 * roots (section 6) are derived by lesctl and keying daemons from an
 * endpoint blob's KP; the kernel derives them only to find the endpoint
 * SA a pep-origin-in SA comes from (sa_bind.c).
 */
#include <crypto/hash.h>
#include <linux/err.h>
#include <linux/string.h>

#include "les.h"

#define SHA256_LEN 32

static int les_hmac(struct crypto_shash *tfm, const u8 *key, unsigned int key_len,
		    const u8 *m1, unsigned int l1, const u8 *m2, unsigned int l2,
		    const u8 *m3, unsigned int l3, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	int err;

	err = crypto_shash_setkey(tfm, key, key_len);
	if (err)
		return err;
	desc->tfm = tfm;
	err = crypto_shash_init(desc);
	if (!err && l1)
		err = crypto_shash_update(desc, m1, l1);
	if (!err && l2)
		err = crypto_shash_update(desc, m2, l2);
	if (!err && l3)
		err = crypto_shash_update(desc, m3, l3);
	if (!err)
		err = crypto_shash_final(desc, out);
	shash_desc_zero(desc);
	return err;
}

int les_hkdf_sha256(const u8 *salt, unsigned int salt_len,
		    const u8 *ikm, unsigned int ikm_len,
		    const u8 *info, unsigned int info_len,
		    u8 *okm, unsigned int okm_len)
{
	u8 prk[SHA256_LEN], t[SHA256_LEN];
	struct crypto_shash *tfm;
	unsigned int done = 0;
	u8 counter = 0;
	int err;

	if (okm_len > 255 * SHA256_LEN)
		return -EINVAL;
	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);

	/* Extract: PRK = HMAC(salt, IKM). */
	err = les_hmac(tfm, salt, salt_len, ikm, ikm_len, NULL, 0, NULL, 0, prk);
	/* Expand: T(i) = HMAC(PRK, T(i-1) || info || i). */
	while (!err && done < okm_len) {
		unsigned int n = min_t(unsigned int, SHA256_LEN, okm_len - done);

		counter++;
		err = les_hmac(tfm, prk, SHA256_LEN, t, counter > 1 ? SHA256_LEN : 0,
			       info, info_len, &counter, 1, t);
		if (!err) {
			memcpy(okm + done, t, n);
			done += n;
		}
	}
	memzero_explicit(prk, sizeof(prk));
	memzero_explicit(t, sizeof(t));
	crypto_free_shash(tfm);
	return err;
}

/* A zone's GCM key and salt from a blob root, bound to one SA (2.1). */
int les_kdf_zone(const u8 *root, unsigned int key_len, u8 zone, __be32 spi,
		 u8 blob_flags, u8 *out)
{
	static const char label[] = LES_KDF_ZONE_SALT;
	u8 info[LES_KDF_ZONE_INFO_LEN];

	les_kdf_zone_info(info, zone, (const u8 *)&spi, blob_flags);
	return les_hkdf_sha256(label, sizeof(label) - 1,
			       root, key_len + LES_SALT_LEN,
			       info, sizeof(info), out, key_len + LES_SALT_LEN);
}
