/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The LES endpoint key blob of one CHILD_SA direction, made from the keymat
 * IKEv2 derives for the private les128/les256 transforms (docs/ike.md 3).
 */
#ifndef LES_BLOB_H_
#define LES_BLOB_H_

#include <library.h>

/* Private ESP transform IDs (RFC 7296: 1024-65535 is for private use). */
#define LES_ENCR_LES128		1030
#define LES_ENCR_LES256		1031

/*
 * AES key length (16 or 32) of a private LES transform, 0 for any other
 * encryption algorithm.
 */
u_int les_alg_key_len(uint16_t enc_alg);

/*
 * Keymat bits the transform asks prf+ for: K2 root, K1 root (AES key and
 * 4-byte salt each) and the 32-byte KP, in that order.
 */
u_int les_alg_keymat_bits(u_int key_len);

/*
 * Builds the endpoint blob from one direction's keymat.  Returns the blob
 * (wipe it with chunk_clear()), or chunk_empty if the keymat has the wrong
 * length or les.ko would refuse the blob.
 */
chunk_t les_blob_endpoint(chunk_t keymat, u_int key_len, bool r2i);

/*
 * What an endpoint blob gives the PEPs (docs/protocol.md 1, 6): the
 * pep-view blob (its K2 root), and PEP @pep_id's pep-origin-out blob (@out)
 * or pep-origin-in blob, whose KO root comes from its KP by HKDF-SHA256.
 * Each returns the blob (wipe it with chunk_clear()), or chunk_empty if
 * @endpoint is not an endpoint blob, @pep_id is 0, or no HMAC-SHA256.
 */
chunk_t les_blob_pep_view(chunk_t endpoint);
chunk_t les_blob_pep_origin(chunk_t endpoint, uint32_t pep_id, bool out);

#endif /* LES_BLOB_H_ */
