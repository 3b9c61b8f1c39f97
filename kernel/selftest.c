// SPDX-License-Identifier: GPL-2.0
/*
 * Load-time self-test of the protocol code: key blobs, the header-chain
 * walk, the PEP-origin policy and the key derivation.  A module whose zone
 * layout is wrong must not load.  tests/host builds the same file in user
 * space (without the kernel-crypto KDF part).
 */
#ifdef __KERNEL__
#include <linux/kernel.h>
#include <linux/string.h>

#include "les.h"
#endif

#define CHECK(cond) do {						\
		if (!(cond)) {						\
			pr_err("les: self-test %s:%d: %s\n", __func__,	\
			       __LINE__, #cond);			\
			return -EINVAL;					\
		}							\
	} while (0)

static int les_selftest_blob(void)
{
	u8 keys[2][36], blob[96];
	struct les_blob b;
	size_t len;
	int i;

	for (i = 0; i < 36; i++) {
		keys[0][i] = i;
		keys[1][i] = 0x80 | i;
	}
	len = les_blob_build(blob, sizeof(blob), LES_ROLE_ENDPOINT, 32, 0,
			     keys[0], keys[1]);
	CHECK(len == 84);
	CHECK(les_blob_is_les(blob, len));
	CHECK(les_blob_parse(blob, len, &b) == LES_BLOB_OK);
	CHECK(b.role == LES_ROLE_ENDPOINT && b.k2.key_len == 32);
	CHECK(b.k2.key == blob + 12 && b.k2.salt == blob + 44);
	CHECK(b.k1.key == blob + 48 && !memcmp(b.k1.salt, keys[1] + 32, 4));

	CHECK(les_blob_parse(blob, len - 1, &b) == LES_BLOB_ERR_LENGTH);
	blob[4] = 2;
	CHECK(les_blob_parse(blob, len, &b) == LES_BLOB_ERR_VERSION);
	blob[4] = 1;
	blob[5] = 9;
	CHECK(les_blob_parse(blob, len, &b) == LES_BLOB_ERR_ROLE);
	blob[5] = LES_ROLE_PEP_VIEW;
	CHECK(les_blob_parse(blob, len, &b) == LES_BLOB_ERR_LENGTH);
	blob[5] = LES_ROLE_ENDPOINT;
	blob[6] = 20;
	CHECK(les_blob_parse(blob, len, &b) == LES_BLOB_ERR_KEYLEN);
	blob[6] = 32;
	blob[11] = 1;
	CHECK(les_blob_parse(blob, len, &b) == LES_BLOB_ERR_PEP_ID);
	blob[0] = 'X';
	CHECK(!les_blob_is_les(blob, len));

	len = les_blob_build(blob, sizeof(blob), LES_ROLE_PEP_ORIGIN_IN, 16, 7,
			     keys[0], NULL);
	CHECK(len == 32);
	CHECK(les_blob_parse(blob, len, &b) == LES_BLOB_OK);
	CHECK(b.pep_id == 7 && !b.k1.key);
	/* A plain rfc4106 key that happens to start with the magic is ESP's. */
	memcpy(keys[0], LES_BLOB_MAGIC, 4);
	CHECK(!les_blob_is_les(keys[0], 36));
	return 0;
}

/* IPv4 + TCP (with 12 bytes of options) + 100 bytes of data. */
static void les_build_tcp4(u8 *p, unsigned int data, u8 tcp_flags)
{
	memset(p, 0, 52 + data);
	p[0] = 0x45;
	les_put_be16(p + 2, 52 + data);
	p[8] = 64;
	p[9] = 6;
	p[20 + 12] = 8 << 4;	/* data offset: 32 bytes */
	p[20 + 13] = tcp_flags;
}

static int les_selftest_chain(void)
{
	static u8 pkt[256];
	struct les_chain ch;

	les_build_tcp4(pkt, 100, LES_TCP_ACK);
	CHECK(les_hdr_chain(4, pkt, 152, 152, &ch) == 0);
	CHECK(ch.len == 52 && ch.l4_off == 20 && ch.l4_proto == 6);
	/* Transport mode: the chain starts at TCP. */
	CHECK(les_hdr_chain(6, pkt + 20, 132, 132, &ch) == 0 && ch.len == 32);
	/* Not enough readable bytes: the walk asks for them. */
	CHECK(les_hdr_chain(4, pkt, 30, 152, &ch) == 40);
	/* A truncated TCP header ends the chain before it. */
	CHECK(les_hdr_chain(4, pkt, 40, 40, &ch) == 0 && ch.len == 20);
	/* Non-first fragment: IP header only. */
	les_put_be16(pkt + 6, 100);
	CHECK(les_hdr_chain(4, pkt, 152, 152, &ch) == 0);
	CHECK(ch.len == 20 && ch.fragment && ch.l4_off < 0);
	les_put_be16(pkt + 6, 0);
	/* GRE: nothing past the IP header. */
	pkt[9] = 47;
	CHECK(les_hdr_chain(4, pkt, 152, 152, &ch) == 0 && ch.len == 20);
	pkt[9] = 6;
	/* IPv6 + hop-by-hop (8) + UDP. */
	memset(pkt, 0, sizeof(pkt));
	pkt[0] = 0x60;
	pkt[6] = 0;
	pkt[40] = 17;
	CHECK(les_hdr_chain(41, pkt, 100, 100, &ch) == 0);
	CHECK(ch.len == 56 && ch.l4_off == 48 && ch.l4_proto == 17);
	/* The chain never passes LES_HDRS_MAX. */
	pkt[40] = 60;		/* hop-by-hop, 8 bytes, then ... */
	pkt[49] = 255;		/* ... a 2048-byte destination options header */
	CHECK(les_hdr_chain(41, pkt, sizeof(pkt), 4000, &ch) == 0 && ch.len == 48);
	CHECK(les_pad_len(52, 100) == 2 && les_pad_len(0, 2) == 0);
	return 0;
}

static int les_selftest_pep_origin(void)
{
	static u8 pkt[256];

	les_build_tcp4(pkt, 0, LES_TCP_ACK);
	CHECK(les_pep_origin_check(4, pkt, 52, true) == LES_PO_OK);
	CHECK(les_pep_origin_check(6, pkt + 20, 32, false) == LES_PO_OK);
	les_build_tcp4(pkt, 0, LES_TCP_ACK | LES_TCP_SYN);
	CHECK(les_pep_origin_check(4, pkt, 52, true) == LES_PO_FLAGS);
	les_build_tcp4(pkt, 0, LES_TCP_ACK | LES_TCP_FIN);
	CHECK(les_pep_origin_check(4, pkt, 52, true) == LES_PO_FLAGS);
	les_build_tcp4(pkt, 0, LES_TCP_RST);
	CHECK(les_pep_origin_check(4, pkt, 52, true) == LES_PO_FLAGS);
	les_build_tcp4(pkt, 8, LES_TCP_ACK);
	CHECK(les_pep_origin_check(4, pkt, 60, true) == LES_PO_PAYLOAD);
	les_build_tcp4(pkt, 0, LES_TCP_ACK);
	pkt[9] = 17;
	CHECK(les_pep_origin_check(4, pkt, 52, true) != LES_PO_OK);
	CHECK(les_pep_origin_check(17, pkt + 20, 8, false) == LES_PO_NOT_TCP);
	return 0;
}

#ifdef __KERNEL__
static int les_selftest_kdf(void)
{
	/* RFC 5869, test case 1. */
	static const u8 salt[13] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	static const u8 info[10] = {
		0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9 };
	static const u8 okm_want[42] = {
		0x3c, 0xb2, 0x5f, 0x25, 0xfa, 0xac, 0xd5, 0x7a, 0x90, 0x43,
		0x4f, 0x64, 0xd0, 0x36, 0x2f, 0x2a, 0x2d, 0x2d, 0x0a, 0x90,
		0xcf, 0x1a, 0x5a, 0x4c, 0x5d, 0xb0, 0x2d, 0x56, 0xec, 0xc4,
		0xc5, 0xbf, 0x34, 0x00, 0x72, 0x08, 0xd5, 0xb8, 0x87, 0x18,
		0x58, 0x65 };
	u8 ikm[22], okm[42];

	memset(ikm, 0x0b, sizeof(ikm));
	CHECK(!les_hkdf_sha256(salt, sizeof(salt), ikm, sizeof(ikm),
			       info, sizeof(info), okm, sizeof(okm)));
	CHECK(!memcmp(okm, okm_want, sizeof(okm)));
	return 0;
}

#else
/* User space (tests/host) checks the derivation against Python's HKDF. */
static int les_selftest_kdf(void)
{
	return 0;
}
#endif

int les_selftest(void)
{
	int err;

	err = les_selftest_blob();
	if (!err)
		err = les_selftest_chain();
	if (!err)
		err = les_selftest_pep_origin();
	if (!err)
		err = les_selftest_kdf();
	if (!err)
		pr_debug("les: self-tests passed\n");
	return err;
}
