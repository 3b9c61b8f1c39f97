// SPDX-License-Identifier: GPL-2.0
/*
 * lesctl: Layered ESP control.
 *
 *   lesctl blob create ROLE [keylen N] [k2 HEX] [k1 HEX] [pep-id N]
 *   lesctl blob show HEX
 *   lesctl stats
 *   lesctl pep show | pep set [hook on|off] [max-flows N] [idle-timeout S]
 *                             [mark M] [encap-port P] [backlog N]
 *   lesctl flows [show | flush]
 *
 * A blob goes into ip xfrm as the key of an rfc4106(gcm(aes)) SA:
 *   ip xfrm state add ... proto esp spi 0x100 aead 'rfc4106(gcm(aes))' \
 *       $(lesctl blob create endpoint) 128
 * Exit codes: 0 success, 1 failure, 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "les_wire.h"
#include "lesctl.h"

int json;

void usage(FILE *f)
{
	fprintf(f,
		"Usage: lesctl [-j] blob create ROLE [keylen 16|24|32] [k2 HEX] [k1 HEX] [pep-id N]\n"
		"       lesctl [-j] blob show HEX\n"
		"       lesctl [-j] stats\n"
		"       lesctl [-j] pep show\n"
		"       lesctl pep set [hook on|off] [max-flows N] [idle-timeout SECONDS]\n"
		"                      [mark MARK] [encap-port PORT] [backlog N]\n"
		"       lesctl [-j] flows [show | flush]\n"
		"ROLE := endpoint | pep-view | pep-origin-in | pep-origin-out\n"
		"k2/k1 are the zone key followed by its 4-byte salt; missing keys are random.\n");
}

static int parse_role(const char *s)
{
	int r;

	for (r = LES_ROLE_ENDPOINT; r <= LES_ROLE_MAX; r++)
		if (!strcmp(s, les_role_name(r)))
			return r;
	return -1;
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

static int blob_create(int argc, char **argv)
{
	__u8 k2[36], k1[36], blob[128];
	unsigned long keylen = 32, pep_id = 0;
	int have_k2 = 0, have_k1 = 0, role, i;
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
	for (i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		char *end;

		if (!strcmp(k, "keylen")) {
			keylen = strtoul(v, &end, 0);
			if (*end || (keylen != 16 && keylen != 24 && keylen != 32)) {
				fprintf(stderr, "lesctl: keylen must be 16, 24 or 32\n");
				return 2;
			}
		} else if (!strcmp(k, "pep-id")) {
			errno = 0;
			pep_id = strtoul(v, &end, 0);
			if (*end || errno || pep_id > 0xffffffffUL) {
				fprintf(stderr, "lesctl: bad pep-id \"%s\"\n", v);
				return 2;
			}
		} else if (!strcmp(k, "k2") || !strcmp(k, "k1")) {
			__u8 *dst = k[1] == '2' ? k2 : k1;
			int n = parse_hex(v, dst, 36);

			if (n < 0) {
				fprintf(stderr, "lesctl: %s is not hex of at most 36 bytes\n", k);
				return 2;
			}
			if (k[1] == '2')
				have_k2 = n;
			else
				have_k1 = n;
		} else {
			fprintf(stderr, "lesctl: unknown argument \"%s\"\n", k);
			return 2;
		}
	}
	if (i < argc) {
		fprintf(stderr, "lesctl: \"%s\" needs a value\n", argv[i]);
		return 2;
	}
	if ((have_k2 && have_k2 != (int)keylen + LES_SALT_LEN) ||
	    (have_k1 && have_k1 != (int)keylen + LES_SALT_LEN)) {
		fprintf(stderr, "lesctl: a zone key is keylen + 4 salt bytes: %lu bytes\n",
			keylen + LES_SALT_LEN);
		return 2;
	}
	if (have_k1 && role != LES_ROLE_ENDPOINT) {
		fprintf(stderr, "lesctl: only endpoint blobs carry k1\n");
		return 2;
	}
	if (pep_id && role != LES_ROLE_PEP_ORIGIN_IN && role != LES_ROLE_PEP_ORIGIN_OUT) {
		fprintf(stderr, "lesctl: only pep-origin blobs carry a pep-id\n");
		return 2;
	}
	if ((!have_k2 && fill_random(k2, sizeof(k2))) ||
	    (!have_k1 && fill_random(k1, sizeof(k1))))
		return 1;

	len = les_blob_build(blob, sizeof(blob), role, keylen, pep_id, k2, k1);
	if (!len) {
		fprintf(stderr, "lesctl: could not build the blob\n");
		return 1;
	}
	if (json) {
		printf("{\"role\":\"%s\",\"keylen\":%lu,\"pep_id\":%lu,\"blob\":\"0x",
		       les_role_name(role), keylen, pep_id);
		print_hex(blob, len);
		printf("\"}\n");
	} else {
		printf("0x");
		print_hex(blob, len);
		printf("\n");
	}
	return 0;
}

static int blob_show(int argc, char **argv)
{
	struct les_blob b;
	__u8 blob[256];
	int n, err;

	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	n = parse_hex(argv[0], blob, sizeof(blob));
	if (n < 0) {
		fprintf(stderr, "lesctl: the blob is not hex of at most %zu bytes\n",
			sizeof(blob));
		return 1;
	}
	err = les_blob_parse(blob, n, &b);
	if (err) {
		fprintf(stderr, "lesctl: %s\n", les_blob_strerror(err));
		return 1;
	}
	/* Key bytes are never printed. */
	if (json)
		printf("{\"version\":%d,\"role\":\"%s\",\"keylen\":%u,\"pep_id\":%u,\"length\":%d}\n",
		       LES_BLOB_VERSION, les_role_name(b.role), b.k2.key_len,
		       b.pep_id, n);
	else
		printf("LES blob v%d role %s keylen %u pep-id %u length %d\n",
		       LES_BLOB_VERSION, les_role_name(b.role), b.k2.key_len,
		       b.pep_id, n);
	return 0;
}

int main(int argc, char **argv)
{
	argc--;
	argv++;
	while (argc && argv[0][0] == '-') {
		if (!strcmp(argv[0], "-j") || !strcmp(argv[0], "-json")) {
			json = 1;
		} else if (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "lesctl: unknown option \"%s\"\n", argv[0]);
			return 2;
		}
		argc--;
		argv++;
	}
	if (argc >= 2 && !strcmp(argv[0], "blob") && !strcmp(argv[1], "create"))
		return blob_create(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[0], "blob") && !strcmp(argv[1], "show"))
		return blob_show(argc - 2, argv + 2);
	if (argc >= 1)
		return lesctl_netlink(argc, argv);
	usage(stderr);
	return 2;
}
