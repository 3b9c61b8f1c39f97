// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lesctl blob create | show | derive | zone-key: LES key blobs (version 2,
 * docs/protocol.md sections 1, 2.1 and 6).
 *
 * Blobs are built and checked by les_wire.c, the code les.ko runs; the two
 * HKDF-SHA256 derivations (zone keys, PEP-origin roots) use OpenSSL 3's
 * libcrypto.  Every buffer that held key material is wiped before return.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "les_wire.h"
#include "lesctl.h"

#define ROOT_MAX	(32 + LES_SALT_LEN)	/* a root of keylen 32 */
#define HEX_BLOB_MAX	1024	/* longer than any blob: les_blob_parse says why */

/* ---- Words and numbers ------------------------------------------------ */

static int parse_role(const char *s)
{
	int r;

	for (r = LES_ROLE_ENDPOINT; r <= LES_ROLE_MAX; r++)
		if (!strcmp(s, les_role_name(r)))
			return r;
	return -1;
}

static bool role_is_pep_origin(int role)
{
	return role == LES_ROLE_PEP_ORIGIN_IN || role == LES_ROLE_PEP_ORIGIN_OUT;
}

static const char *dir_name(__u8 flags)
{
	return flags & LES_BLOB_F_R2I ? "r2i" : "i2r";
}

/* An unsigned 32-bit number, decimal or 0x hex as iproute2 reads them. */
static int parse_u32(const char *s, __u32 *out)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ' || *s == '\t')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > 0xffffffffULL)
		return -1;
	*out = v;
	return 0;
}

static int parse_pep_id(const char *s, __u32 *out)
{
	if (parse_u32(s, out) || !*out) {
		fprintf(stderr, "lesctl: pep-id must be 1 to 4294967295, not \"%s\"\n", s);
		return -1;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Returns the byte count, or -1 on a malformed or too long string. */
static int parse_hex(const char *s, __u8 *out, size_t size)
{
	size_t n = 0;

	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
		s += 2;
	if (strlen(s) % 2)
		return -1;
	for (; *s; s += 2) {
		int hi = hexval(s[0]), lo = hexval(s[1]);

		if (hi < 0 || lo < 0 || n >= size)
			return -1;
		out[n++] = hi << 4 | lo;
	}
	return n;
}

static void print_hex(const __u8 *p, size_t n)
{
	size_t i;

	printf("0x");
	for (i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static int fill_random(__u8 *p, size_t n)
{
	while (n) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("lesctl: getrandom");
			return -1;
		}
		p += r;
		n -= r;
	}
	return 0;
}

/*
 * The blob argument of show, derive and zone-key: a blob that is not hex, or
 * that les_blob_parse() refuses, is a failure (1), as les.ko would refuse it.
 * @buf holds HEX_BLOB_MAX bytes; the caller wipes it.
 */
static int read_blob(const char *hex, __u8 *buf, struct les_blob *b)
{
	int n = parse_hex(hex, buf, HEX_BLOB_MAX), err;

	if (n < 0) {
		fprintf(stderr, "lesctl: the blob is not hex of at most %d bytes\n",
			HEX_BLOB_MAX);
		return -1;
	}
	err = les_blob_parse(buf, n, b);
	if (err) {
		fprintf(stderr, "lesctl: %s\n", les_blob_strerror(err));
		return -1;
	}
	return n;
}

/* ---- HKDF-SHA256 (RFC 5869) ------------------------------------------- */

static int hkdf_sha256(const char *salt, const __u8 *ikm, size_t ikm_len,
		       const __u8 *info, size_t info_len,
		       __u8 *out, size_t out_len)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
	EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM p[5];
	int ok = 0;

	EVP_KDF_free(kdf);
	if (ctx) {
		p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
							(char *)"SHA256", 0);
		p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
							 (void *)ikm, ikm_len);
		p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
							 (void *)salt, strlen(salt));
		p[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
							 (void *)info, info_len);
		p[4] = OSSL_PARAM_construct_end();
		ok = EVP_KDF_derive(ctx, out, out_len, p) == 1;
		EVP_KDF_CTX_free(ctx);	/* clears its copy of the key */
	}
	if (!ok) {
		fprintf(stderr, "lesctl: HKDF-SHA256 failed (libcrypto):\n");
		ERR_print_errors_fp(stderr);
		OPENSSL_cleanse(out, out_len);
		return -1;
	}
	return 0;
}

/* Section 2.1: a zone's GCM key || salt from a root, the SPI and the dir. */
static int zone_key(const struct les_blob *b, const __u8 *root, __u8 zone,
		    __u32 spi, __u8 *out)
{
	__u8 info[LES_KDF_ZONE_INFO_LEN], spi_be[4];

	les_put_be32(spi_be, spi);
	les_kdf_zone_info(info, zone, spi_be, b->flags);
	return hkdf_sha256(LES_KDF_ZONE_SALT, root, b->key_len + LES_SALT_LEN,
			   info, sizeof(info), out, b->key_len + LES_SALT_LEN);
}

/* Section 6: the KO root of PEP @pep_id from an endpoint blob's KP. */
static int pep_origin_root(const struct les_blob *b, __u32 pep_id, __u8 *ko)
{
	__u8 info[LES_KDF_PO_INFO_LEN];

	les_kdf_po_info(info, pep_id, b->flags);
	return hkdf_sha256(LES_KDF_PEP_ORIGIN_SALT, b->kp, LES_KP_LEN,
			   info, sizeof(info), ko, b->key_len + LES_SALT_LEN);
}

/* ---- Output ----------------------------------------------------------- */

static void print_blob_json(const struct les_blob *b, const __u8 *blob, size_t len)
{
	printf("{\"role\":\"%s\",\"keylen\":%u,\"dir\":\"%s\",\"pep_id\":%u,"
	       "\"length\":%zu,\"blob\":\"",
	       les_role_name(b->role), b->key_len, dir_name(b->flags),
	       b->pep_id, len);
	print_hex(blob, len);
	printf("\"}");
}

/* ---- blob create ------------------------------------------------------ */

/* Key material create takes, and the roles that carry it. */
struct material {
	const char *name;
	size_t size;		/* 0: keylen + 4 (a root) */
	unsigned int roles;	/* 1 << role */
	__u8 buf[ROOT_MAX];
	int len;		/* bytes given, -1 if none */
};

#define ROLE_BIT(r)	(1u << (r))

static int blob_create(int argc, char **argv)
{
	struct material mat[] = {
		{ "k2", 0, ROLE_BIT(LES_ROLE_ENDPOINT) | ROLE_BIT(LES_ROLE_PEP_VIEW), {0}, -1 },
		{ "k1", 0, ROLE_BIT(LES_ROLE_ENDPOINT), {0}, -1 },
		{ "kp", LES_KP_LEN, ROLE_BIT(LES_ROLE_ENDPOINT), {0}, -1 },
		{ "ko", 0, ROLE_BIT(LES_ROLE_PEP_ORIGIN_IN) |
			   ROLE_BIT(LES_ROLE_PEP_ORIGIN_OUT), {0}, -1 },
	};
	bool have_keylen = false, have_dir = false, have_pep_id = false;
	struct les_blob b = { .key_len = 32 };
	__u8 blob[LES_BLOB_MAX_LEN];
	int role, i, ret = 2;
	unsigned int m;
	size_t len;

	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	role = parse_role(argv[0]);
	if (role < 0) {
		fprintf(stderr, "lesctl: unknown role \"%s\"\n", argv[0]);
		return 2;
	}
	b.role = role;
	for (i = 1; i < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		bool dup = false;

		for (m = 0; m < LES_ARRAY_SIZE(mat) && strcmp(k, mat[m].name); m++)
			;
		if (m == LES_ARRAY_SIZE(mat) && strcmp(k, "keylen") &&
		    strcmp(k, "dir") && strcmp(k, "pep-id")) {
			fprintf(stderr, "lesctl: unknown argument \"%s\"\n", k);
			goto out;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "lesctl: \"%s\" needs a value\n", k);
			goto out;
		}
		if (!strcmp(k, "keylen"))
			dup = have_keylen;
		else if (!strcmp(k, "dir"))
			dup = have_dir;
		else if (!strcmp(k, "pep-id"))
			dup = have_pep_id;
		else
			dup = mat[m].len >= 0;
		if (dup) {
			fprintf(stderr, "lesctl: \"%s\" given twice\n", k);
			goto out;
		}
		if (!strcmp(k, "keylen")) {
			__u32 kl;

			if (parse_u32(v, &kl) || (kl != 16 && kl != 24 && kl != 32)) {
				fprintf(stderr, "lesctl: keylen must be 16, 24 or 32\n");
				goto out;
			}
			b.key_len = kl;
			have_keylen = true;
		} else if (!strcmp(k, "dir")) {
			if (!strcmp(v, "r2i")) {
				b.flags = LES_BLOB_F_R2I;
			} else if (strcmp(v, "i2r")) {
				fprintf(stderr, "lesctl: dir must be i2r or r2i\n");
				goto out;
			}
			have_dir = true;
		} else if (!strcmp(k, "pep-id")) {
			if (parse_pep_id(v, &b.pep_id))
				goto out;
			have_pep_id = true;
		} else {
			size_t max = mat[m].size ? mat[m].size : ROOT_MAX;

			mat[m].len = parse_hex(v, mat[m].buf, max);
			if (mat[m].len < 0) {
				fprintf(stderr, "lesctl: %s is not hex of at most %zu bytes\n",
					k, max);
				goto out;
			}
		}
	}

	if (role_is_pep_origin(role) && !have_pep_id) {
		fprintf(stderr, "lesctl: a %s blob needs a pep-id\n", les_role_name(role));
		goto out;
	}
	if (!role_is_pep_origin(role) && have_pep_id) {
		fprintf(stderr, "lesctl: only pep-origin blobs carry a pep-id\n");
		goto out;
	}
	for (m = 0; m < LES_ARRAY_SIZE(mat); m++) {
		size_t want = mat[m].size ? mat[m].size : b.key_len + LES_SALT_LEN;

		if (mat[m].len < 0)
			continue;
		if (!(mat[m].roles & ROLE_BIT(role))) {
			fprintf(stderr, "lesctl: a %s blob carries no %s\n",
				les_role_name(role), mat[m].name);
			goto out;
		}
		if ((size_t)mat[m].len != want) {
			fprintf(stderr, "lesctl: %s must be %zu bytes%s\n", mat[m].name, want,
				mat[m].size ? "" : " (keylen + 4 salt bytes)");
			goto out;
		}
	}

	/* What was not given is random. */
	ret = 1;
	for (m = 0; m < LES_ARRAY_SIZE(mat); m++) {
		if (!(mat[m].roles & ROLE_BIT(role)))
			continue;
		if (mat[m].len < 0 && fill_random(mat[m].buf, sizeof(mat[m].buf)))
			goto out;
	}
	b.k2 = mat[0].buf;
	b.k1 = mat[1].buf;
	b.kp = mat[2].buf;
	b.ko = mat[3].buf;
	if (role == LES_ROLE_ENDPOINT && !memcmp(b.k1, b.k2, b.key_len)) {
		fprintf(stderr, "lesctl: %s\n", les_blob_strerror(LES_BLOB_ERR_SAME_KEYS));
		goto out;
	}
	len = les_blob_build(blob, sizeof(blob), &b);
	if (!len) {
		fprintf(stderr, "lesctl: could not build the blob\n");
		goto out;
	}
	if (json)
		print_blob_json(&b, blob, len);
	else
		print_hex(blob, len);
	printf("\n");
	ret = 0;
out:
	for (m = 0; m < LES_ARRAY_SIZE(mat); m++)
		OPENSSL_cleanse(mat[m].buf, sizeof(mat[m].buf));
	OPENSSL_cleanse(blob, sizeof(blob));
	return ret;
}

/* ---- blob show -------------------------------------------------------- */

static int blob_show(int argc, char **argv)
{
	const char *material[3];
	__u8 buf[HEX_BLOB_MAX];
	struct les_blob b;
	int n, nm = 0, i, ret = 1;

	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	n = read_blob(argv[0], buf, &b);
	if (n < 0)
		goto out;
	if (b.k2)
		material[nm++] = "k2";
	if (b.k1)
		material[nm++] = "k1";
	if (b.kp)
		material[nm++] = "kp";
	if (b.ko)
		material[nm++] = "ko";
	/* Key bytes are never printed: zone-key prints what SAs derive. */
	if (json) {
		printf("{\"version\":%d,\"role\":\"%s\",\"keylen\":%u,\"dir\":\"%s\","
		       "\"pep_id\":%u,\"length\":%d,\"material\":[",
		       LES_BLOB_VERSION, les_role_name(b.role), b.key_len,
		       dir_name(b.flags), b.pep_id, n);
		for (i = 0; i < nm; i++)
			printf("%s\"%s\"", i ? "," : "", material[i]);
		printf("]}\n");
	} else {
		printf("LES blob v%d role %s keylen %u dir %s pep-id %u length %d material",
		       LES_BLOB_VERSION, les_role_name(b.role), b.key_len,
		       dir_name(b.flags), b.pep_id, n);
		for (i = 0; i < nm; i++)
			printf(" %s", material[i]);
		printf("\n");
	}
	ret = 0;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	return ret;
}

/* ---- blob derive ------------------------------------------------------ */

/* Print one derived blob; returns 0, or 1 if it could not be built. */
static int derive_one(const struct les_blob *b, bool *first)
{
	__u8 blob[LES_BLOB_MAX_LEN];
	size_t len = les_blob_build(blob, sizeof(blob), b);

	if (!len) {
		fprintf(stderr, "lesctl: could not build the %s blob\n",
			les_role_name(b->role));
		return 1;
	}
	if (json) {
		printf("%s", *first ? "[" : ",");
		print_blob_json(b, blob, len);
	} else {
		printf("%s ", les_role_name(b->role));
		if (b->pep_id)
			printf("pep-id %u ", b->pep_id);
		print_hex(blob, len);
		printf("\n");
	}
	*first = false;
	OPENSSL_cleanse(blob, sizeof(blob));
	return 0;
}

static int blob_derive(int argc, char **argv)
{
	struct les_blob ep, view, po;
	__u8 buf[HEX_BLOB_MAX], ko[ROOT_MAX];
	int i, j, n_ids = 0, ret = 2;
	bool first = true;
	__u32 *ids;

	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	ids = calloc(argc, sizeof(*ids));
	if (!ids) {
		perror("lesctl");
		return 1;
	}
	for (i = 1; i < argc; i += 2) {
		if (strcmp(argv[i], "pep-id")) {
			fprintf(stderr, "lesctl: unknown argument \"%s\"\n", argv[i]);
			goto out;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "lesctl: \"pep-id\" needs a value\n");
			goto out;
		}
		if (parse_pep_id(argv[i + 1], &ids[n_ids]))
			goto out;
		for (j = 0; j < n_ids; j++) {
			if (ids[j] == ids[n_ids]) {
				fprintf(stderr, "lesctl: pep-id %u given twice\n", ids[j]);
				goto out;
			}
		}
		n_ids++;
	}

	ret = 1;
	if (read_blob(argv[0], buf, &ep) < 0)
		goto out;
	if (ep.role != LES_ROLE_ENDPOINT) {
		fprintf(stderr, "lesctl: a %s blob cannot derive anything: "
			"only an endpoint blob holds K2 and KP\n", les_role_name(ep.role));
		goto out;
	}

	view = (struct les_blob){ .role = LES_ROLE_PEP_VIEW, .key_len = ep.key_len,
				  .flags = ep.flags, .k2 = ep.k2 };
	if (derive_one(&view, &first))
		goto out;
	for (i = 0; i < n_ids; i++) {
		if (pep_origin_root(&ep, ids[i], ko))
			goto out;
		po = (struct les_blob){ .role = LES_ROLE_PEP_ORIGIN_IN, .key_len = ep.key_len,
					.flags = ep.flags, .pep_id = ids[i], .ko = ko };
		if (derive_one(&po, &first))
			goto out;
		po.role = LES_ROLE_PEP_ORIGIN_OUT;
		if (derive_one(&po, &first))
			goto out;
	}
	if (json)
		printf("]\n");
	ret = 0;
out:
	if (ret && json && !first)
		printf("]\n");	/* keep stdout JSON even when a later blob failed */
	OPENSSL_cleanse(buf, sizeof(buf));
	OPENSSL_cleanse(ko, sizeof(ko));
	free(ids);
	return ret;
}

/* ---- blob zone-key ---------------------------------------------------- */

static int blob_zone_key(int argc, char **argv)
{
	__u8 buf[HEX_BLOB_MAX], hz[ROOT_MAX], pz[ROOT_MAX];
	bool have_spi = false;
	const __u8 *hroot;
	struct les_blob b;
	int i, ret = 2;
	size_t rlen;
	__u32 spi;

	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	for (i = 1; i < argc; i += 2) {
		if (strcmp(argv[i], "spi")) {
			fprintf(stderr, "lesctl: unknown argument \"%s\"\n", argv[i]);
			return 2;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "lesctl: \"spi\" needs a value\n");
			return 2;
		}
		if (have_spi) {
			fprintf(stderr, "lesctl: \"spi\" given twice\n");
			return 2;
		}
		if (parse_u32(argv[i + 1], &spi)) {
			fprintf(stderr, "lesctl: spi must be 0 to 0xffffffff, not \"%s\"\n",
				argv[i + 1]);
			return 2;
		}
		have_spi = true;
	}
	if (!have_spi) {
		fprintf(stderr, "lesctl: zone-key needs the SA's spi\n");
		return 2;
	}

	ret = 1;
	if (read_blob(argv[0], buf, &b) < 0)
		goto out;
	rlen = b.key_len + LES_SALT_LEN;
	/* The header zone: K2 (endpoint, pep-view) or KO (PEP-origin roles). */
	hroot = b.k2 ? b.k2 : b.ko;
	if (zone_key(&b, hroot, LES_ZONE_HEADER, spi, hz))
		goto out;
	if (b.k1 && zone_key(&b, b.k1, LES_ZONE_PAYLOAD, spi, pz))
		goto out;
	if (json) {
		printf("{\"role\":\"%s\",\"keylen\":%u,\"dir\":\"%s\",\"pep_id\":%u,"
		       "\"spi\":%u,\"header\":\"",
		       les_role_name(b.role), b.key_len, dir_name(b.flags),
		       b.pep_id, spi);
		print_hex(hz, rlen);
		if (b.k1) {
			printf("\",\"payload\":\"");
			print_hex(pz, rlen);
		}
		printf("\"}\n");
	} else {
		printf("header ");
		print_hex(hz, rlen);
		printf("\n");
		if (b.k1) {
			printf("payload ");
			print_hex(pz, rlen);
			printf("\n");
		}
	}
	ret = 0;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	OPENSSL_cleanse(hz, sizeof(hz));
	OPENSSL_cleanse(pz, sizeof(pz));
	return ret;
}

int lesctl_blob(int argc, char **argv)
{
	if (argc >= 1 && !strcmp(argv[0], "create"))
		return blob_create(argc - 1, argv + 1);
	if (argc >= 1 && !strcmp(argv[0], "show"))
		return blob_show(argc - 1, argv + 1);
	if (argc >= 1 && !strcmp(argv[0], "derive"))
		return blob_derive(argc - 1, argv + 1);
	if (argc >= 1 && !strcmp(argv[0], "zone-key"))
		return blob_zone_key(argc - 1, argv + 1);
	if (argc == 1 && !strcmp(argv[0], "help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
