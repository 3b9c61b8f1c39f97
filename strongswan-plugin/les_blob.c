// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Keymat to LES endpoint blob.  The blob is written by les_wire.c, the code
 * les.ko parses it with, so the two cannot drift apart.
 */
#include "les_blob.h"

#include "les_wire.h"

#include <crypto/prfs/prf.h>

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

/* Parses an endpoint blob; FALSE if @blob is anything else. */
static bool parse_endpoint(chunk_t blob, struct les_blob *b)
{
	return !les_blob_parse(blob.ptr, blob.len, b) &&
		   b->role == LES_ROLE_ENDPOINT;
}

/* Builds @b into a new chunk, or chunk_empty. */
static chunk_t build(const struct les_blob *b)
{
	chunk_t blob = chunk_alloc(les_blob_len(b->role, b->key_len));

	if (les_blob_build(blob.ptr, blob.len, b) != blob.len)
	{
		chunk_clear(&blob);
		return chunk_empty;
	}
	return blob;
}

chunk_t les_blob_pep_view(chunk_t endpoint)
{
	struct les_blob ep, view;

	if (!parse_endpoint(endpoint, &ep))
	{
		return chunk_empty;
	}
	view = (struct les_blob){
		.role = LES_ROLE_PEP_VIEW,
		.key_len = ep.key_len,
		.flags = ep.flags,
		.k2 = ep.k2,
	};
	return build(&view);
}

/*
 * HKDF-SHA256 (RFC 5869) of @ikm into @out (at most two blocks: a KO root
 * is at most 36 bytes): extract with the salt, then expand with @info.
 */
static bool hkdf_sha256(const char *salt, chunk_t ikm, chunk_t info,
						chunk_t out)
{
	prf_t *prf = lib->crypto->create_prf(lib->crypto, PRF_HMAC_SHA2_256);
	u_char prk[HASH_SIZE_SHA256], t[HASH_SIZE_SHA256], i;
	chunk_t prev = chunk_empty;
	size_t done = 0, n;
	bool ok;

	if (!prf || out.len > 2 * sizeof(t))
	{
		DESTROY_IF(prf);
		return FALSE;
	}
	ok = prf->set_key(prf, chunk_create((u_char*)salt, strlen(salt))) &&
		 prf->get_bytes(prf, ikm, prk) &&
		 prf->set_key(prf, chunk_from_thing(prk));
	for (i = 1; ok && done < out.len; i++)
	{
		/* T(i) = HMAC(PRK, T(i-1) | info | i) */
		ok = prf->get_bytes(prf, prev, NULL) &&
			 prf->get_bytes(prf, info, NULL) &&
			 prf->get_bytes(prf, chunk_from_thing(i), t);
		n = min(sizeof(t), out.len - done);
		memcpy(out.ptr + done, t, n);
		done += n;
		prev = chunk_from_thing(t);
	}
	memwipe(prk, sizeof(prk));
	memwipe(t, sizeof(t));
	prf->destroy(prf);
	return ok;
}

chunk_t les_blob_pep_origin(chunk_t endpoint, uint32_t pep_id, bool out)
{
	struct les_blob ep, po;
	u_char info[LES_KDF_PO_INFO_LEN], ko[32 + LES_SALT_LEN];
	chunk_t blob = chunk_empty;

	if (!pep_id || !parse_endpoint(endpoint, &ep))
	{
		return chunk_empty;
	}
	les_kdf_po_info(info, pep_id, ep.flags);
	if (hkdf_sha256(LES_KDF_PEP_ORIGIN_SALT,
					chunk_create((u_char*)ep.kp, LES_KP_LEN),
					chunk_from_thing(info),
					chunk_create(ko, ep.key_len + LES_SALT_LEN)))
	{
		po = (struct les_blob){
			.role = out ? LES_ROLE_PEP_ORIGIN_OUT : LES_ROLE_PEP_ORIGIN_IN,
			.key_len = ep.key_len,
			.flags = ep.flags,
			.pep_id = pep_id,
			.ko = ko,
		};
		blob = build(&po);
	}
	memwipe(ko, sizeof(ko));
	return blob;
}
