// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The LES SA table and the zone crypto (docs/protocol.md 1, 2.1, 3.1).
 *
 * A row is what `ip xfrm state add` was given: source, destination, SPI and
 * the key blob.  Source and destination may be "*", the SPI too.  The zone
 * keys follow from the blob and the packet's SPI, so one row with SPI "*"
 * serves every SA a blob was installed for.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <epan/prefs.h>
#include <epan/strutil.h>
#include <wsutil/pint.h>
#include <wsutil/inet_addr.h>
#include <wsutil/wsgcrypt.h>

#include "les_keys.h"

/* A row, parsed: what lookups match against. */
struct les_sa {
	address_type src_type, dst_type;	/* AT_NONE: "*" */
	guint8 src[16], dst[16];
	gboolean any_spi;
	guint32 spi;
	struct les_blob blob;
};

/*
 * A row as the table holds it, parsed when Wireshark checks it: a row
 * that does not parse opens nothing, and the others still do.
 */
typedef struct {
	char *src;
	char *dst;
	char *spi;
	char *blob;
	gboolean ok;
	struct les_sa sa;
} les_sa_row_t;

static les_sa_row_t *rows;
static guint n_rows;

static const guint8 label_zone[] = "LES v3 zone";

/* Section 1; NULL if @hex is a blob, else why not. */
static const char *blob_parse(const char *hex, struct les_blob *b)
{
	GByteArray *raw = g_byte_array_new();
	const char *err = NULL;
	const guint8 *p;
	gsize root, want;

	/* As ip xfrm takes it: 0x optional. */
	if (hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
		hex += 2;
	if (!hex_str_to_bytes(hex, raw, FALSE)) {
		err = "the blob is not hex";
		goto out;
	}
	p = raw->data;
	if (raw->len < 12 || memcmp(p, "LESK", 4)) {
		err = "not an LES blob (no LESK magic)";
		goto out;
	}
	if (p[4] != 3) {
		err = "blob version is not 3";
		goto out;
	}
	memset(b, 0, sizeof(*b));
	b->role = p[5];
	b->keylen = p[6];
	b->dir = p[7] & 1;
	b->pep_id = (guint32)p[8] << 24 | p[9] << 16 | p[10] << 8 | p[11];
	if (b->role < LES_ROLE_ENDPOINT || b->role > LES_ROLE_ORIGIN_OUT) {
		err = "unknown blob role";
		goto out;
	}
	if ((b->role == LES_ROLE_ORIGIN_IN || b->role == LES_ROLE_ORIGIN_OUT) !=
	    (b->pep_id != 0)) {
		err = "pep_id is 0 on a PEP-origin blob, or set on another";
		goto out;
	}
	if (b->keylen != 16 && b->keylen != 24 && b->keylen != 32) {
		err = "key length is not 16, 24 or 32";
		goto out;
	}
	if (p[7] & ~1) {
		err = "unknown blob flags";
		goto out;
	}
	root = b->keylen + LES_SALT_LEN;
	want = 12 + (b->role == LES_ROLE_ENDPOINT ? 2 * root + 32 : root);
	if (raw->len != want) {
		err = "the blob's length does not match its role and key length";
		goto out;
	}
	memcpy(b->hz_root, p + 12, root);
	if (b->role == LES_ROLE_ENDPOINT) {
		memcpy(b->pz_root, p + 12 + root, root);
		if (!memcmp(b->hz_root, b->pz_root, b->keylen))
			err = "K1 equals K2";
	}
out:
	memset(raw->data, 0, raw->len);
	g_byte_array_free(raw, TRUE);
	return err;
}

static const char *addr_parse(const char *s, address_type *type, guint8 *a)
{
	if (!s || !*s || !strcmp(s, "*")) {
		*type = AT_NONE;
		return NULL;
	}
	if (ws_inet_pton4(s, (ws_in4_addr *)a)) {
		*type = AT_IPv4;
		return NULL;
	}
	if (ws_inet_pton6(s, (ws_in6_addr *)a)) {
		*type = AT_IPv6;
		return NULL;
	}
	return "an address is neither IPv4, IPv6 nor *";
}

static const char *row_parse(const les_sa_row_t *r, struct les_sa *sa)
{
	const char *err;
	char *end;
	unsigned long v;

	memset(sa, 0, sizeof(*sa));
	err = addr_parse(r->src, &sa->src_type, sa->src);
	if (!err)
		err = addr_parse(r->dst, &sa->dst_type, sa->dst);
	if (err)
		return err;
	if (!r->spi || !*r->spi || !strcmp(r->spi, "*")) {
		sa->any_spi = TRUE;
	} else {
		gboolean hex = r->spi[0] == '0' && (r->spi[1] == 'x' || r->spi[1] == 'X');

		errno = 0;
		v = strtoul(r->spi + (hex ? 2 : 0), &end, hex ? 16 : 10);
		if (errno || *end || !g_ascii_isxdigit(r->spi[hex ? 2 : 0]) ||
		    v > G_MAXUINT32)
			return "the SPI is not a 32-bit number (4096 or 0x1000) or *";
		sa->spi = (guint32)v;
	}
	return blob_parse(r->blob ? r->blob : "", &sa->blob);
}

static gboolean row_update_cb(void *rec, char **error)
{
	les_sa_row_t *r = rec;
	const char *err = row_parse(r, &r->sa);

	r->ok = !err;
	if (err)
		*error = g_strdup(err);
	return !err;
}

static void *row_copy_cb(void *dst, const void *src, size_t len _U_)
{
	const les_sa_row_t *s = src;
	les_sa_row_t *d = dst;

	d->src = g_strdup(s->src);
	d->dst = g_strdup(s->dst);
	d->spi = g_strdup(s->spi);
	d->blob = g_strdup(s->blob);
	d->ok = s->ok;
	d->sa = s->sa;
	return d;
}

static void row_free_cb(void *rec)
{
	les_sa_row_t *r = rec;

	g_free(r->src);
	g_free(r->dst);
	g_free(r->spi);
	g_free(r->blob);
	memset(&r->sa, 0, sizeof(r->sa));
	r->ok = FALSE;
}

UAT_CSTRING_CB_DEF(les_sa, src, les_sa_row_t)
UAT_CSTRING_CB_DEF(les_sa, dst, les_sa_row_t)
UAT_CSTRING_CB_DEF(les_sa, spi, les_sa_row_t)
UAT_CSTRING_CB_DEF(les_sa, blob, les_sa_row_t)

void les_keys_register(module_t *module)
{
	static uat_field_t fields[] = {
		UAT_FLD_CSTRING(les_sa, src, "Source",
				"outer source address (IPv4 or IPv6), or * for any"),
		UAT_FLD_CSTRING(les_sa, dst, "Destination",
				"outer destination address, or * for any"),
		UAT_FLD_CSTRING(les_sa, spi, "SPI",
				"the SA's SPI (0x1000 or 4096), or * for any"),
		UAT_FLD_CSTRING(les_sa, blob, "Key blob",
				"the LES key blob as given to ip xfrm (hex, 0x optional): "
				"endpoint opens both zones, pep-view the header zone, "
				"a PEP-origin blob the PEP's own packets"),
		UAT_END_FIELDS
	};
	uat_t *uat = uat_new("LES SAs", sizeof(les_sa_row_t), "les_sa", TRUE,
			     &rows, &n_rows, UAT_AFFECTS_DISSECTION, NULL,
			     row_copy_cb, row_update_cb, row_free_cb,
			     NULL, NULL, fields);

	prefs_register_uat_preference(module, "sa_table", "LES SAs",
				      "The SAs whose packets to open: addresses, SPI "
				      "and key blob, as for ip xfrm", uat);
}

static gboolean addr_match(address_type type, const guint8 *want,
			   const address *a)
{
	if (type == AT_NONE)
		return TRUE;
	if ((address_type)a->type != type)
		return FALSE;
	return !memcmp(a->data, want, type == AT_IPv4 ? 4 : 16);
}

guint les_keys_lookup(const address *src, const address *dst, guint32 spi,
		      const struct les_blob **out, guint max)
{
	guint i, n = 0, pass;

	/*
	 * Endpoint blobs first: a pep-view blob shares K2 with its endpoint
	 * blob and would open the header zone first, leaving ICV1 unchecked.
	 */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n_rows && n < max; i++) {
			const struct les_sa *sa = &rows[i].sa;

			if (!rows[i].ok ||
			    (sa->blob.role == LES_ROLE_ENDPOINT) != !pass)
				continue;
			if ((sa->any_spi || sa->spi == spi) &&
			    addr_match(sa->src_type, sa->src, src) &&
			    addr_match(sa->dst_type, sa->dst, dst))
				out[n++] = &sa->blob;
		}
	}
	return n;
}

gboolean les_zone_key(const struct les_blob *b, char zone, guint32 spi,
		      struct les_zone_key *zk)
{
	guint8 prk[32], info[6], out[LES_KEY_MAX + LES_SALT_LEN];
	const guint8 *root = zone == 'P' ? b->pz_root : b->hz_root;
	guint len = b->keylen + LES_SALT_LEN;

	if (zone == 'P' && b->role != LES_ROLE_ENDPOINT)
		return FALSE;
	info[0] = (guint8)zone;
	phton32(info + 1, spi);
	info[5] = b->dir;
	if (hkdf_extract(GCRY_MD_SHA256, label_zone, sizeof(label_zone) - 1,
			 root, len, prk) ||
	    hkdf_expand(GCRY_MD_SHA256, prk, sizeof(prk), info, sizeof(info),
			out, len))
		return FALSE;
	zk->keylen = b->keylen;
	memcpy(zk->key, out, b->keylen);
	memcpy(zk->salt, out + b->keylen, LES_SALT_LEN);
	return TRUE;
}

static int aes_algo(guint8 keylen)
{
	return keylen == 16 ? GCRY_CIPHER_AES128 :
	       keylen == 24 ? GCRY_CIPHER_AES192 : GCRY_CIPHER_AES256;
}

gboolean les_peek_len(const struct les_zone_key *zk, const guint8 *iv,
		      const guint8 *masked, guint *len)
{
	guint8 block[16] = { 0 }, ks[16];
	gcry_cipher_hd_t h;
	gboolean ok;

	/* GCM's first plaintext block is XORed with E(salt || IV || 2). */
	memcpy(block, zk->salt, LES_SALT_LEN);
	memcpy(block + 4, iv, 8);
	block[15] = 2;
	if (gcry_cipher_open(&h, aes_algo(zk->keylen), GCRY_CIPHER_MODE_ECB, 0))
		return FALSE;
	ok = !gcry_cipher_setkey(h, zk->key, zk->keylen) &&
	     !gcry_cipher_encrypt(h, ks, sizeof(ks), block, sizeof(block));
	gcry_cipher_close(h);
	if (ok)
		*len = (guint)(masked[0] ^ ks[0]) << 8 | (masked[1] ^ ks[1]);
	return ok;
}

gboolean les_gcm_open(const struct les_zone_key *zk, const guint8 *iv,
		      const guint8 *aad, gsize aad_len, const guint8 *ct,
		      gsize len, guint8 *pt)
{
	guint8 nonce[12];
	gcry_cipher_hd_t h;
	gboolean ok;

	memcpy(nonce, zk->salt, LES_SALT_LEN);
	memcpy(nonce + 4, iv, 8);
	if (gcry_cipher_open(&h, aes_algo(zk->keylen), GCRY_CIPHER_MODE_GCM, 0))
		return FALSE;
	ok = !gcry_cipher_setkey(h, zk->key, zk->keylen) &&
	     !gcry_cipher_setiv(h, nonce, sizeof(nonce)) &&
	     !gcry_cipher_authenticate(h, aad, aad_len) &&
	     !gcry_cipher_decrypt(h, pt, len, ct, len) &&
	     !gcry_cipher_checktag(h, ct + len, LES_ICV_LEN);
	gcry_cipher_close(h);
	return ok;
}
