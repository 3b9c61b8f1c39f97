/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The LES SA table (a UAT, as Wireshark's own ESP SA table) and the zone
 * crypto of docs/protocol.md 2 and 3.1: blobs parsed, zone keys derived
 * from a blob and an SPI, zones opened.
 */
#ifndef LES_KEYS_H
#define LES_KEYS_H

#include <epan/packet.h>
#include <epan/uat.h>

#define LES_ROLE_ENDPOINT	1
#define LES_ROLE_PEP_VIEW	2
#define LES_ROLE_ORIGIN_IN	3
#define LES_ROLE_ORIGIN_OUT	4

#define LES_KEY_MAX	32
#define LES_SALT_LEN	4
#define LES_ICV_LEN	16
#define LES_HZ_OFF	16	/* SPI, SeqLo, IV */
#define LES_HZ_DESC	6	/* L, next header, flags, epoch */
#define LES_HDRS_MAX	512

/* A blob, parsed (section 1). */
struct les_blob {
	guint8 role;
	guint8 keylen;
	guint8 dir;		/* 0 i2r, 1 r2i */
	guint32 pep_id;
	guint8 hz_root[LES_KEY_MAX + LES_SALT_LEN];	/* K2, or KO */
	guint8 pz_root[LES_KEY_MAX + LES_SALT_LEN];	/* K1: endpoint only */
};

/* A zone key bound to an SA: AES key || salt (section 2.1). */
struct les_zone_key {
	guint8 keylen;
	guint8 key[LES_KEY_MAX];
	guint8 salt[LES_SALT_LEN];
};

/*
 * The blobs that may open a packet from @src to @dst with @spi, in table
 * order; returns how many were written to @out (at most @max).
 */
guint les_keys_lookup(const address *src, const address *dst, guint32 spi,
		      const struct les_blob **out, guint max);

/* The table's preference, registered under @module. */
void les_keys_register(module_t *module);

/* Zone @zone ('H' or 'P') of @b bound to @spi. */
gboolean les_zone_key(const struct les_blob *b, char zone, guint32 spi,
		      struct les_zone_key *zk);

/* L as a holder of the header-zone key reads it (section 3.1). */
gboolean les_peek_len(const struct les_zone_key *zk, const guint8 *iv,
		      const guint8 *masked, guint *len);

/*
 * AES-GCM open of @ct (@len bytes, then the 16-byte tag) into @pt with the
 * nonce salt || @iv: TRUE only if the tag verifies.
 */
gboolean les_gcm_open(const struct les_zone_key *zk, const guint8 *iv,
		      const guint8 *aad, gsize aad_len, const guint8 *ct,
		      gsize len, guint8 *pt);

#endif
