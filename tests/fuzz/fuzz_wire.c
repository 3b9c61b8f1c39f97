// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the pure protocol code the kernel runs on untrusted
 * bytes: blob parsing (ip xfrm input), what enters the header zone (every
 * packet sent, and every packet received: docs/protocol.md 4), the
 * PEP-origin policy (every header-only packet received), the TCP parser of
 * the PEP hook (every header zone a PEP opens) and the PEP's replay window.
 * Built with -fsanitize=fuzzer,address,undefined by tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "les_wire.h"

static void fuzz_blob(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size;
	struct les_blob blob;
	uint8_t again[LES_BLOB_MAX_LEN];
	size_t root;

	(void)les_blob_is_les(data, size);
	if (les_blob_parse(data, size, &blob) != LES_BLOB_OK)
		return;
	root = blob.key_len + LES_SALT_LEN;
	/* Material lies inside the buffer, and builds back to the same bytes. */
	if ((blob.k2 && blob.k2 + root > end) || (blob.k1 && blob.k1 + root > end) ||
	    (blob.kp && blob.kp + LES_KP_LEN > end) || (blob.ko && blob.ko + root > end))
		__builtin_trap();
	if (les_blob_build(again, sizeof(again), &blob) != size ||
	    memcmp(again, data, size))
		__builtin_trap();
}

/* A sender's plan, its seal, and a receiver's restore of what it sealed. */
static void fuzz_hz(uint8_t nh, const uint8_t *pkt, size_t len, size_t avail)
{
	uint8_t hz[LES_HDRS_SEALED_MAX], csum[LES_CSUM_LEN], moved[LES_MOVED_MAX];
	struct les_hz_plan plan, plan2;
	struct les_tcp_seg seg;
	size_t need;

	need = les_hz_plan(nh, pkt, avail, len, &plan);
	if (need && (need <= avail || need > len || need > LES_HDRS_SEALED_MAX))
		__builtin_trap();
	if (les_hz_plan(nh, pkt, len, len, &plan))
		__builtin_trap();
	if (plan.len > len || plan.len > LES_HDRS_SEALED_MAX || plan.moved_len > LES_MOVED_MAX)
		__builtin_trap();
	les_hz_seal(&plan, pkt, hz, csum, moved);
	if (!plan.len)
		return;
	/* The PEP reads every header zone a sender makes. */
	if (les_hz_tcp(nh, hz, plan.len, &seg) != LES_HZ_TCP ||
	    seg.payload_len != plan.payload_len || seg.sack_n > LES_SACK_MAX ||
	    (seg.wscale != LES_WSCALE_NONE && seg.wscale > 14))
		__builtin_trap();
	if (les_hz_moved_len(nh, plan.flags, hz, plan.len) != (int)plan.moved_len)
		__builtin_trap();
	les_hz_restore(nh, plan.flags, hz, plan.len, csum, moved);
	if (memcmp(hz, pkt, plan.len))
		__builtin_trap();
	/* Idempotent where nothing moved: a sealed zone plans the same. */
	if (les_hz_plan(nh, hz, plan.len, len, &plan2) || plan2.len != plan.len)
		__builtin_trap();
}

static void fuzz_replay(const uint8_t *data, size_t size)
{
	struct les_replay r;
	uint64_t seq;
	size_t i;

	les_replay_init(&r, size ? data[0] * 8u : 0);
	for (i = 1; i + 4 <= size; i += 4) {
		seq = les_replay_seq(&r, data[i] & 3, les_get_be32(data + i));
		if (!les_replay_check(&r, seq))
			continue;
		les_replay_advance(&r, seq);
		if (les_replay_check(&r, seq))
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct les_chain chain;
	struct les_tcp_seg seg;
	size_t avail, need;
	uint8_t nh;

	fuzz_blob(data, size);
	fuzz_replay(data, size);
	if (size < 2)
		return 0;
	nh = data[0];
	avail = data[1] % (size - 1);	/* sometimes less than all is readable */
	if (avail > size - 2)
		avail = size - 2;
	fuzz_hz(nh, data + 2, size - 2, avail);

	need = les_hdr_chain(nh, data + 2, avail, size - 2, &chain);
	if (need && (need > size - 2 || need > LES_HDRS_MAX))
		__builtin_trap();
	need = les_hdr_chain(nh, data + 2, size - 2, size - 2, &chain);
	if (need || chain.len > size - 2 || chain.len > LES_HDRS_MAX)
		__builtin_trap();
	if (chain.l4_off >= 0 && (size_t)chain.l4_off >= chain.len)
		__builtin_trap();
	(void)les_pep_origin_check(nh, data + 2, size - 2, data[1] & 1);

	/* What a PEP reads from any header zone, a forger's included. */
	if (les_hz_tcp(nh, data + 2, size - 2, &seg) == LES_HZ_TCP) {
		if (seg.sack_n > LES_SACK_MAX || seg.payload_len > 65535)
			__builtin_trap();
		if (seg.wscale != LES_WSCALE_NONE && seg.wscale > 14)
			__builtin_trap();
	}
	return 0;
}
