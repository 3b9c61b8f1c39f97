// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the pure protocol code the kernel runs on untrusted
 * bytes: blob parsing (ip xfrm input), the header-chain walk (every packet
 * sent), the PEP-origin policy (every header-only packet received) and the
 * TCP parser of the PEP hook (every header zone a PEP opens).
 * Built with -fsanitize=fuzzer,address,undefined by tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "les_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct les_chain chain;
	struct les_blob blob;
	size_t avail, need;
	uint8_t nh;

	if (les_blob_parse(data, size, &blob) == LES_BLOB_OK) {
		/* Keys must lie inside the buffer. */
		if (blob.k2.salt + LES_SALT_LEN > data + size)
			__builtin_trap();
		if (blob.k1.key && blob.k1.salt + LES_SALT_LEN > data + size)
			__builtin_trap();
	}
	(void)les_blob_is_les(data, size);

	if (size < 2)
		return 0;
	nh = data[0];
	avail = data[1] % (size - 1);	/* sometimes less than all is readable */
	need = les_hdr_chain(nh, data + 2, avail > size - 2 ? size - 2 : avail,
			     size - 2, &chain);
	if (need && (need > size - 2 || need > LES_HDRS_MAX))
		__builtin_trap();
	need = les_hdr_chain(nh, data + 2, size - 2, size - 2, &chain);
	if (need || chain.len > size - 2 || chain.len > LES_HDRS_MAX)
		__builtin_trap();
	if (chain.l4_off >= 0 && (size_t)chain.l4_off >= chain.len)
		__builtin_trap();
	(void)les_pep_origin_check(nh, data + 2, size - 2, data[1] & 1);

	/* What a PEP reads from every header zone it opens. */
	{
		struct les_tcp_seg seg;

		if (les_hz_tcp(nh, data + 2, size - 2, data[1] & 1, &seg) == LES_HZ_TCP) {
			if (seg.sack_n > LES_SACK_MAX)
				__builtin_trap();
			if (seg.payload_len >= 0 && (size_t)seg.payload_len > 65535 + 40)
				__builtin_trap();
			if (seg.wscale != LES_WSCALE_NONE && seg.wscale > 14)
				__builtin_trap();
		}
	}
	return 0;
}
