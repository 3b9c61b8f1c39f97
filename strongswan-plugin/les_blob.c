// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Keymat to LES endpoint blob.  The blob is written by les_wire.c, the code
 * les.ko parses it with, so the two cannot drift apart.
 */
#include "les_blob.h"

#include "les_wire.h"

u_int les_alg_key_len(uint16_t enc_alg)
{
	switch (enc_alg)
	{
		case LES_ENCR_LES128:
			return 16;
		case LES_ENCR_LES256:
			return 32;
		default:
			return 0;
	}
}

u_int les_alg_keymat_bits(u_int key_len)
{
	return 8 * (2 * (key_len + LES_SALT_LEN) + LES_KP_LEN);
}

chunk_t les_blob_endpoint(chunk_t keymat, u_int key_len, bool r2i)
{
	size_t root = key_len + LES_SALT_LEN, len;
	struct les_blob b = {
		.role = LES_ROLE_ENDPOINT,
		.key_len = key_len,
		.flags = r2i ? LES_BLOB_F_R2I : 0,
	};
	chunk_t blob;

	if (!key_len || keymat.len != les_alg_keymat_bits(key_len) / 8)
	{
		return chunk_empty;
	}
	/* The keymat is the blob's key material in the blob's own order. */
	b.k2 = keymat.ptr;
	b.k1 = keymat.ptr + root;
	b.kp = keymat.ptr + 2 * root;

	blob = chunk_alloc(les_blob_len(LES_ROLE_ENDPOINT, key_len));
	len = les_blob_build(blob.ptr, blob.len, &b);
	if (len != blob.len)
	{	/* K1 equal to K2 (2^-128 at worst): les.ko would refuse it too */
		chunk_clear(&blob);
		return chunk_empty;
	}
	return blob;
}
