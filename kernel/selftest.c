// SPDX-License-Identifier: GPL-2.0
/*
 * Load-time self-test of the protocol code: key blobs, what enters the
 * header zone, the PEP's replay window, the PEP-origin policy, the key
 * derivation, the window field of the PEP's early ACKs and the zones' AEAD.
 * A module whose zone layout is wrong must not load.  tests/host builds the
 * same file in user space (without the kernel-crypto parts).
 */
#ifdef __KERNEL__
#include <linux/completion.h>
#include <linux/kernel.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "les.h"
#include "compat.h"
#include "selftest_vectors.h"
#endif
#include "tcp_win.h"

#define CHECK(cond) do {						\
		if (!(cond)) {						\
			pr_err("les: self-test %s:%d: %s\n", __func__,	\
			       __LINE__, #cond);			\
			return -EINVAL;					\
		}							\
	} while (0)

static int les_selftest_blob(void)
{
	u8 roots[3][36], kp[LES_KP_LEN], blob[LES_BLOB_MAX_LEN];
	struct les_blob b = {}, p;
	size_t len;
	int i;

	for (i = 0; i < 36; i++) {
		roots[0][i] = i;
		roots[1][i] = 0x80 | i;
		roots[2][i] = 0x40 | i;
	}
	memset(kp, 0x5a, sizeof(kp));
	b.role = LES_ROLE_ENDPOINT;
	b.key_len = 32;
	b.flags = LES_BLOB_F_R2I;
	b.k2 = roots[0];
	b.k1 = roots[1];
	b.kp = kp;
	len = les_blob_build(blob, sizeof(blob), &b);
	CHECK(len == 116 && len == les_blob_len(LES_ROLE_ENDPOINT, 32));
	CHECK(les_blob_is_les(blob, len));
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_OK);
	CHECK(p.role == LES_ROLE_ENDPOINT && p.key_len == 32 && p.flags == 1);
	CHECK(p.k2 == blob + 12 && p.k1 == blob + 48 && p.kp == blob + 84 && !p.ko);

	CHECK(les_blob_parse(blob, len - 1, &p) == LES_BLOB_ERR_LENGTH);
	CHECK(les_blob_parse(blob, 11, &p) == LES_BLOB_ERR_SHORT);
	blob[4] = 1;		/* versions 1 and 2 are gone */
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_VERSION);
	blob[4] = 2;
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_VERSION);
	blob[4] = LES_BLOB_VERSION;
	blob[5] = 9;
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_ROLE);
	blob[5] = LES_ROLE_PEP_VIEW;
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_LENGTH);
	blob[5] = LES_ROLE_ENDPOINT;
	blob[6] = 20;
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_KEYLEN);
	blob[6] = 32;
	blob[7] = 2;
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_FLAGS);
	blob[7] = 1;
	blob[11] = 1;
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_PEP_ID);
	blob[11] = 0;
	/* The same key in both zones, whatever the salts. */
	memcpy(blob + 48, blob + 12, 32);
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_SAME_KEYS);
	/* Any key with the magic is a blob: v1's 20/28/36-byte escape is gone. */
	CHECK(les_blob_is_les(blob, 36) && les_blob_is_les(blob, 20));
	blob[0] = 'X';
	CHECK(!les_blob_is_les(blob, len));

	memset(&b, 0, sizeof(b));
	b.role = LES_ROLE_PEP_ORIGIN_IN;
	b.key_len = 16;
	b.pep_id = 7;
	b.ko = roots[2];
	len = les_blob_build(blob, sizeof(blob), &b);
	CHECK(len == 32);
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_OK);
	CHECK(p.pep_id == 7 && p.ko == blob + 12 && !p.k1 && !p.k2);
	blob[11] = 0;		/* PEP-origin roles need a pep_id */
	CHECK(les_blob_parse(blob, len, &p) == LES_BLOB_ERR_PEP_ID);
	b.pep_id = 0;
	CHECK(!les_blob_build(blob, sizeof(blob), &b));
	return 0;
}

/* IPv4 + TCP (12 bytes of options: NOP NOP timestamps) + @data bytes. */
static void les_build_tcp4(u8 *p, unsigned int data, u8 tcp_flags)
{
	memset(p, 0, 52 + data);
	p[0] = 0x45;
	les_put_be16(p + 2, 52 + data);
	p[8] = 64;
	p[9] = 6;
	p[20 + 12] = 8 << 4;	/* data offset: 32 bytes */
	p[20 + 13] = tcp_flags;
	p[20 + 16] = 0xab;	/* checksum */
	p[20 + 17] = 0xcd;
	p[40] = LES_TCPOPT_NOP;
	p[41] = LES_TCPOPT_NOP;
	p[42] = LES_TCPOPT_TS;
	p[43] = 10;
}

static int les_selftest_hz(void)
{
	static u8 pkt[256], hz[LES_HDRS_SEALED_MAX];
	u8 csum[LES_CSUM_LEN], moved[LES_MOVED_MAX];
	struct les_hz_plan plan;
	struct les_tcp_seg seg;

	les_build_tcp4(pkt, 100, LES_TCP_ACK);
	CHECK(les_hz_plan(4, pkt, 152, 152, &plan) == 0);
	CHECK(plan.len == 52 && plan.tcp_off == 20 && !plan.flags &&
	      !plan.moved_len && plan.payload_len == 100);
	les_hz_seal(&plan, pkt, hz, csum, moved);
	/* The checksum leaves; the payload length takes its place. */
	CHECK(csum[0] == 0xab && csum[1] == 0xcd);
	CHECK(les_get_be16(hz + 36) == 100 && !memcmp(hz, pkt, 36));
	CHECK(les_hz_tcp(4, hz, 52, &seg) == LES_HZ_TCP);
	CHECK(seg.payload_len == 100 && seg.has_ts && seg.family == 4);
	/* Not enough readable bytes: the plan asks for them. */
	CHECK(les_hz_plan(4, pkt, 30, 152, &plan) == 40);
	/* Transport mode: TCP first, payload length from the bytes present. */
	CHECK(les_hz_plan(6, pkt + 20, 132, 140, &plan) == 0);
	CHECK(plan.len == 32 && plan.payload_len == 108);
	/* An unknown option and an urgent pointer are moved. */
	pkt[40] = 30;		/* MPTCP, length 2 */
	pkt[41] = 2;
	les_put_be16(pkt + 38, 7);
	CHECK(les_hz_plan(4, pkt, 152, 152, &plan) == 0);
	CHECK(plan.flags == (LES_HZF_OPTIONS_MOVED | LES_HZF_URGENT_MOVED) &&
	      plan.moved_len == 14);
	les_hz_seal(&plan, pkt, hz, csum, moved);
	CHECK(hz[40] == LES_TCPOPT_NOP && hz[41] == LES_TCPOPT_NOP &&
	      hz[42] == LES_TCPOPT_TS && !hz[38] && !hz[39]);
	CHECK(les_hz_moved_len(4, plan.flags, hz, 52) == 14);
	les_hz_restore(4, plan.flags, hz, 52, csum, moved);
	CHECK(!memcmp(hz, pkt, 52));
	/* A header zone that still shows what a sender moves is malformed. */
	CHECK(les_hz_tcp(4, pkt, 52, &seg) == LES_HZ_MALFORMED);
	/* Fragments, IP options, UDP: no headers at all. */
	les_build_tcp4(pkt, 100, LES_TCP_ACK);
	les_put_be16(pkt + 6, 0x2000);
	CHECK(les_hz_plan(4, pkt, 152, 152, &plan) == 0 && !plan.len);
	les_put_be16(pkt + 6, 0);
	pkt[0] = 0x46;
	CHECK(les_hz_plan(4, pkt, 152, 152, &plan) == 0 && !plan.len);
	pkt[0] = 0x45;
	pkt[9] = 17;
	CHECK(les_hz_plan(4, pkt, 152, 152, &plan) == 0 && !plan.len);
	les_hz_seal(&plan, pkt, hz, csum, moved);
	CHECK(!csum[0] && !csum[1]);
	return 0;
}

static int les_selftest_replay(void)
{
	struct les_replay r;
	u64 s;

	les_replay_init(&r, 0);
	CHECK(r.size == LES_REPLAY_MIN);
	CHECK(les_replay_check(&r, 5));
	les_replay_advance(&r, 5);
	CHECK(!les_replay_check(&r, 5) && les_replay_check(&r, 4));
	les_replay_advance(&r, 100);
	CHECK(les_replay_check(&r, 40) && !les_replay_check(&r, 36));
	CHECK(!les_replay_check(&r, 100) && les_replay_check(&r, 101));
	/*
	 * Absorbed: remembered past the window, up to LES_ABSORBED_MAX back,
	 * and forgotten as the window slides over the number again.
	 */
	les_replay_advance(&r, 90);
	les_replay_absorb(&r, 90);
	les_replay_absorb(&r, 101);
	CHECK(les_replay_absorbed(&r, 90) && !les_replay_absorbed(&r, 89) &&
	      !les_replay_absorbed(&r, 101));
	les_replay_advance(&r, 90 + LES_ABSORBED_MAX - 1);
	CHECK(!les_replay_check(&r, 90) && les_replay_absorbed(&r, 90));
	les_replay_advance(&r, 90 + LES_ABSORBED_MAX);
	CHECK(!les_replay_absorbed(&r, 90) &&
	      !les_replay_absorbed(&r, 90 + LES_ABSORBED_MAX));
	/* Across an ESN epoch: SeqLo wraps, the epoch tells. */
	les_replay_advance(&r, 0xfffffff0ULL);
	s = les_replay_seq(&r, 1, 3);
	CHECK(s == 0x100000003ULL && les_replay_check(&r, s));
	les_replay_advance(&r, s);
	CHECK(les_replay_seq(&r, 0, 0xfffffff8U) == 0xfffffff8ULL);
	CHECK(!les_replay_check(&r, les_replay_seq(&r, 0, 0xfffffff0U)));
	/* An old packet stays old: v1 took it for the next epoch. */
	CHECK(!les_replay_check(&r, les_replay_seq(&r, 0, 100)));
	/* Before epoch 0 there is nothing. */
	CHECK(!les_replay_check(&r, les_replay_seq(&r, 0xffff, 5)));
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

/*
 * The zones' AEAD on packets of tests/host/vectors.json (made by
 * tools/lescodec), through the code the data path runs: the blob, the zone
 * keys bound to the SPI, L unmasked, both zones opened in place as input.c
 * does and sealed again as output.c does.  Then one bit of the last ICV
 * flipped (ICV1, or header-only ICV2): the header zone, whose ICV2 covers
 * the whole packet, must refuse it.
 */
#define LES_KAT_MAX	256	/* bytes of the longest packet */

struct les_kat_wait {
	struct completion done;
	int err;
};

static LES_CRYPTO_DONE(les_kat_done)
{
	struct sk_buff *skb = LES_CRYPTO_DATA();
	struct les_kat_wait *w = LES_SKB_CB(skb)->tmp;

	w->err = err;
	complete(&w->done);
}

static int les_kat_zone(struct les_crypt *c, struct sk_buff *skb,
			enum les_step step, bool encrypt)
{
	struct les_kat_wait *w = LES_SKB_CB(skb)->tmp;
	int err;

	c->step = step;
	reinit_completion(&w->done);
	err = les_crypt_zone(c, skb, encrypt, les_kat_done);
	if (err == -EINPROGRESS) {
		wait_for_completion(&w->done);
		err = w->err;
	}
	return err;
}

static int les_selftest_zone(const struct les_zone_kat *t, struct les_sa *sa,
			     struct sk_buff *skb)
{
	unsigned int hz_off = LES_ESP_HDR_LEN + LES_IV_LEN;
	unsigned int pz_off = hz_off + t->hz_len + LES_ICV_LEN;
	struct les_kat_wait w;
	struct les_crypt *c;
	struct les_blob blob;
	__be32 seq_hi;
	int err;

	CHECK(les_blob_parse(t->blob, t->blob_len, &blob) == LES_BLOB_OK);
	CHECK(!les_sa_keys(sa, &blob, cpu_to_be32(t->spi), NULL));
	CHECK(t->esp_len <= skb_tailroom(skb));
	CHECK(t->esp_len == pz_off + (t->pz_len ? t->pz_len + LES_ICV_LEN : 0));
	skb_put_data(skb, t->esp, t->esp_len);
	CHECK(les_hz_peek_len(sa, skb->data + LES_ESP_HDR_LEN,
			      skb->data + hz_off) + LES_HZ_DESC_LEN == t->hz_len);

	c = les_crypt_alloc(sa, 1, 0);
	CHECK(c);
	seq_hi = cpu_to_be32(t->seq_hi);
	les_crypt_set_zones(c, skb->data, 0, t->esn ? &seq_hi : NULL, t->hz_len,
			    t->pz_len);
	init_completion(&w.done);
	LES_SKB_CB(skb)->tmp = &w;

	/* Opened in place, the header zone first, as input.c does. */
	err = les_kat_zone(c, skb, LES_STEP_HZ, false);
	if (!err && t->pz_len)
		err = les_kat_zone(c, skb, LES_STEP_PZ, false);
	if (!err && (memcmp(skb->data + hz_off, t->hz, t->hz_len) ||
		     (t->pz_len && memcmp(skb->data + pz_off, t->pz, t->pz_len))))
		err = -EBADMSG;
	/* Sealed again, the payload zone first, as output.c does. */
	if (!err && t->pz_len)
		err = les_kat_zone(c, skb, LES_STEP_PZ, true);
	if (!err)
		err = les_kat_zone(c, skb, LES_STEP_HZ, true);
	if (!err && memcmp(skb->data, t->esp, t->esp_len))
		err = -EBADMSG;
	/* One bit of the last ICV: ICV2 no longer verifies. */
	if (!err) {
		skb->data[t->esp_len - 1] ^= 1;
		err = les_kat_zone(c, skb, LES_STEP_HZ, false) == -EBADMSG ?
		      0 : -EINVAL;
	}
	les_crypt_free(c);
	if (err)
		pr_err("les: self-test: zone vector %s: %d\n", t->name, err);
	return err;
}

static int les_selftest_zones(void)
{
	struct sk_buff *skb;
	struct les_sa *sa;
	unsigned int i;
	int err = 0;

	sa = kzalloc(sizeof(*sa), GFP_KERNEL);
	if (!sa)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(les_zone_kats) && !err; i++) {
		skb = alloc_skb(LES_KAT_MAX, GFP_KERNEL);
		err = skb ? les_selftest_zone(&les_zone_kats[i], sa, skb) :
			    -ENOMEM;
		consume_skb(skb);
		les_sa_free_keys(sa);
		memset(sa, 0, sizeof(*sa));
	}
	kfree(sa);
	return err;
}

#else
/* User space (tests/host) checks the derivation against Python's HKDF. */
static int les_selftest_kdf(void)
{
	return 0;
}

/* ... and the zones against the codec (tests/host/test_lescodec.py). */
static int les_selftest_zones(void)
{
	return 0;
}
#endif

/*
 * An early ACK's right edge never moves back for the sender (tcp_win.h):
 * the case that rounding down got wrong, then ACKs walking through every
 * scale, the sequence space's wrap and the field's 16-bit cap.
 */
static int les_selftest_win(void)
{
	u32 edge = 100, seen, ack, space, x = 1;
	u32 win;
	u8 shift;
	int i;

	CHECK(les_win_field(&edge, 4, 3) == 12 && edge == 100);
	CHECK(les_win_field(&edge, 5, 3) == 12 && edge == 101);
	/* capped: the sender reads ack + 0xffff units, the edge stays */
	edge = 0x100000;
	CHECK(les_win_field(&edge, 0, 3) == 0xffff && edge == 0x100000);
	for (shift = 0; shift <= 14; shift++) {
		ack = 0xfff00000u;
		edge = ack;
		seen = ack;
		for (i = 0; i < 2000; i++) {
			x = x * 1103515245 + 12345;
			ack += x >> 22;
			/* a window that may shrink, as the PEP's buffer fills */
			space = (x >> 8) % (1U << (shift + 17));
			if ((s32)(ack + space - edge) > 0)
				edge = ack + space;
			if ((s32)(ack - edge) > 0)
				edge = ack;
			win = les_win_field(&edge, ack, shift);
			CHECK(win <= 0xffff);
			/* below the cap the edge recorded is the one read */
			CHECK(win == 0xffff || edge == ack + (win << shift));
			CHECK((s32)(ack + (win << shift) - seen) >= 0);
			CHECK((s32)(edge - (ack + (win << shift))) >= 0);
			seen = ack + (win << shift);
		}
	}
	return 0;
}

int les_selftest(void)
{
	int err;

	err = les_selftest_blob();
	if (!err)
		err = les_selftest_hz();
	if (!err)
		err = les_selftest_replay();
	if (!err)
		err = les_selftest_pep_origin();
	if (!err)
		err = les_selftest_kdf();
	if (!err)
		err = les_selftest_win();
	if (!err)
		err = les_selftest_zones();
	if (!err)
		pr_debug("les: self-tests passed\n");
	return err;
}
