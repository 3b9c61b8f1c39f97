// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Layered ESP: the pure parts of the protocol (key blob, header chain,
 * PEP-origin policy).  Built into les.ko and, unchanged, into lesctl and the
 * user-space tests and fuzzers, so keep it free of kernel-only calls.
 */
#ifdef __KERNEL__
#include <linux/string.h>
#include <linux/errno.h>
#else
#include <string.h>
#include <errno.h>
#endif

#include "les_wire.h"

#define PROTO_HOPOPTS	0
#define PROTO_ICMP	1
#define PROTO_IPIP	4
#define PROTO_TCP	6
#define PROTO_UDP	17
#define PROTO_IPV6	41
#define PROTO_ROUTING	43
#define PROTO_FRAGMENT	44
#define PROTO_AH	51
#define PROTO_ICMPV6	58
#define PROTO_DSTOPTS	60
#define PROTO_UDPLITE	136

static const char *const blob_errors[] = {
	[LES_BLOB_OK]		= "ok",
	[LES_BLOB_ERR_SHORT]	= "LES key blob is shorter than its header",
	[LES_BLOB_ERR_MAGIC]	= "LES key blob has a bad magic",
	[LES_BLOB_ERR_VERSION]	= "LES key blob version is not supported",
	[LES_BLOB_ERR_ROLE]	= "LES key blob role is unknown",
	[LES_BLOB_ERR_KEYLEN]	= "LES key blob key length must be 16, 24 or 32",
	[LES_BLOB_ERR_FLAGS]	= "LES key blob has reserved flags set",
	[LES_BLOB_ERR_LENGTH]	= "LES key blob length does not match its role and key length",
	[LES_BLOB_ERR_PEP_ID]	= "LES key blob carries a PEP id its role does not use",
};

const char *les_blob_strerror(int err)
{
	if (err < 0 || err >= (int)LES_ARRAY_SIZE(blob_errors))
		return "LES key blob is invalid";
	return blob_errors[err];
}

static const char *const role_names[] = {
	[LES_ROLE_ENDPOINT]		= "endpoint",
	[LES_ROLE_PEP_VIEW]		= "pep-view",
	[LES_ROLE_PEP_ORIGIN_IN]	= "pep-origin-in",
	[LES_ROLE_PEP_ORIGIN_OUT]	= "pep-origin-out",
};

const char *les_role_name(enum les_role role)
{
	if (role < LES_ROLE_ENDPOINT || role > LES_ROLE_MAX)
		return "unknown";
	return role_names[role];
}

unsigned int les_role_dirs(enum les_role role)
{
	switch (role) {
	case LES_ROLE_ENDPOINT:
		return LES_DIR_IN | LES_DIR_OUT;
	case LES_ROLE_PEP_VIEW:
	case LES_ROLE_PEP_ORIGIN_IN:
		return LES_DIR_IN;
	case LES_ROLE_PEP_ORIGIN_OUT:
		return LES_DIR_OUT;
	}
	return 0;
}

static bool key_len_ok(unsigned int key_len)
{
	return key_len == 16 || key_len == 24 || key_len == 32;
}

size_t les_blob_len(enum les_role role, unsigned int key_len)
{
	size_t zone = key_len + LES_SALT_LEN;

	if (!key_len_ok(key_len) || role < LES_ROLE_ENDPOINT || role > LES_ROLE_MAX)
		return 0;
	return LES_BLOB_HDR_LEN + zone * (role == LES_ROLE_ENDPOINT ? 2 : 1);
}

bool les_blob_is_les(const __u8 *key, size_t len)
{
	/* rfc4106 keys are an AES key plus a 4-byte salt: 20, 28 or 36 bytes. */
	if (len == 20 || len == 28 || len == 36)
		return false;
	return len >= LES_BLOB_MAGIC_LEN &&
	       !memcmp(key, LES_BLOB_MAGIC, LES_BLOB_MAGIC_LEN);
}

int les_blob_parse(const __u8 *buf, size_t len, struct les_blob *out)
{
	unsigned int key_len, role;
	__u32 pep_id;

	if (len < LES_BLOB_HDR_LEN)
		return LES_BLOB_ERR_SHORT;
	if (memcmp(buf, LES_BLOB_MAGIC, LES_BLOB_MAGIC_LEN))
		return LES_BLOB_ERR_MAGIC;
	if (buf[4] != LES_BLOB_VERSION)
		return LES_BLOB_ERR_VERSION;
	role = buf[5];
	if (role < LES_ROLE_ENDPOINT || role > LES_ROLE_MAX)
		return LES_BLOB_ERR_ROLE;
	key_len = buf[6];
	if (!key_len_ok(key_len))
		return LES_BLOB_ERR_KEYLEN;
	if (buf[7])
		return LES_BLOB_ERR_FLAGS;
	if (len != les_blob_len(role, key_len))
		return LES_BLOB_ERR_LENGTH;
	pep_id = les_get_be32(buf + 8);
	if (pep_id && role != LES_ROLE_PEP_ORIGIN_IN &&
	    role != LES_ROLE_PEP_ORIGIN_OUT)
		return LES_BLOB_ERR_PEP_ID;

	out->role = role;
	out->pep_id = pep_id;
	out->k2.key = buf + LES_BLOB_HDR_LEN;
	out->k2.key_len = key_len;
	out->k2.salt = out->k2.key + key_len;
	if (role == LES_ROLE_ENDPOINT) {
		out->k1.key = out->k2.salt + LES_SALT_LEN;
		out->k1.key_len = key_len;
		out->k1.salt = out->k1.key + key_len;
	} else {
		out->k1.key = NULL;
		out->k1.key_len = 0;
		out->k1.salt = NULL;
	}
	return LES_BLOB_OK;
}

size_t les_blob_build(__u8 *buf, size_t size, enum les_role role,
		      unsigned int key_len, __u32 pep_id,
		      const __u8 *k2_and_salt, const __u8 *k1_and_salt)
{
	size_t len = les_blob_len(role, key_len);
	size_t zone = key_len + LES_SALT_LEN;

	if (!len || len > size || !k2_and_salt)
		return 0;
	if (role == LES_ROLE_ENDPOINT && !k1_and_salt)
		return 0;
	if (pep_id && role != LES_ROLE_PEP_ORIGIN_IN &&
	    role != LES_ROLE_PEP_ORIGIN_OUT)
		return 0;

	memcpy(buf, LES_BLOB_MAGIC, LES_BLOB_MAGIC_LEN);
	buf[4] = LES_BLOB_VERSION;
	buf[5] = role;
	buf[6] = key_len;
	buf[7] = 0;
	les_put_be32(buf + 8, pep_id);
	memcpy(buf + LES_BLOB_HDR_LEN, k2_and_salt, zone);
	if (role == LES_ROLE_ENDPOINT)
		memcpy(buf + LES_BLOB_HDR_LEN + zone, k1_and_salt, zone);
	return len;
}

/*
 * One step of the walk: header @want bytes long at @off.  Returns 1 if it
 * fits (readable, inside the packet and the limit), 0 if the chain ends
 * before it, or stores the readable length needed in *need and returns -1.
 */
static int chain_fits(size_t off, size_t want, size_t avail, size_t total,
		      size_t *need)
{
	if (off + want > total || off + want > LES_HDRS_MAX)
		return 0;
	if (off + want > avail) {
		*need = off + want;
		return -1;
	}
	return 1;
}

size_t les_hdr_chain(__u8 nexthdr, const __u8 *buf, size_t avail,
		     size_t total, struct les_chain *chain)
{
	size_t off = 0, need = 0, hlen;
	int fit;

	chain->l4_off = -1;
	chain->l4_proto = 0;
	chain->fragment = false;
	chain->fragmented = false;

	/*
	 * Every header is read first for its fixed part, then for its length;
	 * chain_fits() says whether the chain may take it.
	 */
	for (;;) {
		const __u8 *h = buf + off;

		switch (nexthdr) {
		case PROTO_IPIP:
			fit = chain_fits(off, 20, avail, total, &need);
			if (fit <= 0)
				goto end;
			hlen = (h[0] & 0x0f) * 4u;
			if ((h[0] >> 4) != 4 || hlen < 20)
				goto out;
			fit = chain_fits(off, hlen, avail, total, &need);
			if (fit <= 0)
				goto end;
			nexthdr = h[9];
			off += hlen;
			/* MF or a fragment offset. */
			if (les_get_be16(h + 6) & 0x3fff)
				chain->fragmented = true;
			if (les_get_be16(h + 6) & 0x1fff) {
				chain->fragment = true;
				goto out;
			}
			break;
		case PROTO_IPV6:
			fit = chain_fits(off, 40, avail, total, &need);
			if (fit <= 0)
				goto end;
			if ((h[0] >> 4) != 6)
				goto out;
			nexthdr = h[6];
			off += 40;
			break;
		case PROTO_HOPOPTS:
		case PROTO_ROUTING:
		case PROTO_DSTOPTS:
		case PROTO_AH:
			fit = chain_fits(off, 2, avail, total, &need);
			if (fit <= 0)
				goto end;
			/* AH counts 4-byte words less 2, the others 8-byte units less 1. */
			hlen = nexthdr == PROTO_AH ? (h[1] + 2u) * 4 : (h[1] + 1u) * 8;
			fit = chain_fits(off, hlen, avail, total, &need);
			if (fit <= 0)
				goto end;
			nexthdr = h[0];
			off += hlen;
			break;
		case PROTO_FRAGMENT:
			fit = chain_fits(off, 8, avail, total, &need);
			if (fit <= 0)
				goto end;
			nexthdr = h[0];
			off += 8;
			chain->fragmented = true;
			if (les_get_be16(h + 2) & 0xfff8) {
				chain->fragment = true;
				goto out;
			}
			break;
		case PROTO_TCP:
			fit = chain_fits(off, 20, avail, total, &need);
			if (fit <= 0)
				goto end;
			hlen = (h[12] >> 4) * 4u;
			if (hlen < 20)
				goto out;
			fit = chain_fits(off, hlen, avail, total, &need);
			if (fit <= 0)
				goto end;
			chain->l4_off = off;
			chain->l4_proto = nexthdr;
			off += hlen;
			goto out;
		case PROTO_UDP:
		case PROTO_UDPLITE:
		case PROTO_ICMP:
		case PROTO_ICMPV6:
			fit = chain_fits(off, 8, avail, total, &need);
			if (fit <= 0)
				goto end;
			chain->l4_off = off;
			chain->l4_proto = nexthdr;
			off += 8;
			goto out;
		default:
			goto out;
		}
	}
end:
	if (fit < 0)
		return need;
out:
	chain->len = off;
	return 0;
}

int les_pep_origin_check(__u8 nexthdr, const __u8 *hdrs, size_t len,
			 bool tunnel)
{
	struct les_chain chain;
	__u8 flags;

	if (tunnel && nexthdr != PROTO_IPIP && nexthdr != PROTO_IPV6)
		return LES_PO_MALFORMED;
	if (!tunnel && nexthdr != PROTO_TCP)
		return LES_PO_NOT_TCP;
	if (les_hdr_chain(nexthdr, hdrs, len, len, &chain))
		return LES_PO_MALFORMED;
	if (chain.fragmented)
		return LES_PO_MALFORMED;
	if (chain.l4_off < 0)
		return chain.len == len ? LES_PO_NOT_TCP : LES_PO_MALFORMED;
	if (chain.l4_proto != PROTO_TCP)
		return LES_PO_NOT_TCP;
	if (chain.len != len)
		return LES_PO_PAYLOAD;
	if (tunnel) {
		/* The inner IP header must describe exactly these bytes. */
		size_t ip_len = nexthdr == PROTO_IPIP ?
				les_get_be16(hdrs + 2) :
				40u + les_get_be16(hdrs + 4);
		if (ip_len > len)
			return LES_PO_PAYLOAD;
		if (ip_len < len)
			return LES_PO_MALFORMED;
	}
	flags = hdrs[chain.l4_off + 13];
	if (!(flags & LES_TCP_ACK) || (flags & ~LES_PEP_ORIGIN_TCP_OK))
		return LES_PO_FLAGS;
	return LES_PO_OK;
}

/* TCP options: a malformed one ends the walk, as in TCP stacks. */
static void les_tcp_options(const __u8 *opt, size_t len, struct les_tcp_seg *seg)
{
	size_t i = 0;

	while (i < len) {
		__u8 kind = opt[i], olen;

		if (kind == LES_TCPOPT_EOL)
			return;
		if (kind == LES_TCPOPT_NOP) {
			i++;
			continue;
		}
		if (i + 2 > len)
			return;
		olen = opt[i + 1];
		if (olen < 2 || i + olen > len)
			return;
		switch (kind) {
		case LES_TCPOPT_MSS:
			if (olen == 4)
				seg->mss = les_get_be16(opt + i + 2);
			break;
		case LES_TCPOPT_WSCALE:
			if (olen == 3)
				seg->wscale = opt[i + 2] > 14 ? 14 : opt[i + 2];
			break;
		case LES_TCPOPT_SACK_PERM:
			if (olen == 2)
				seg->sack_perm = true;
			break;
		case LES_TCPOPT_SACK:
			if (olen >= 10 && (olen - 2) % 8 == 0) {
				unsigned int n = (olen - 2) / 8, b;

				if (n > LES_SACK_MAX)
					n = LES_SACK_MAX;
				for (b = 0; b < 2 * n; b++)
					seg->sack[b] = les_get_be32(opt + i + 2 + 4 * b);
				seg->sack_n = n;
			}
			break;
		case LES_TCPOPT_TS:
			if (olen == 10) {
				seg->has_ts = true;
				seg->tsval = les_get_be32(opt + i + 2);
				seg->tsecr = les_get_be32(opt + i + 6);
			}
			break;
		}
		i += olen;
	}
}

int les_hz_tcp(__u8 nexthdr, const __u8 *hdrs, size_t len, bool tunnel,
	       struct les_tcp_seg *seg)
{
	struct les_chain chain;
	const __u8 *th;
	size_t doff;

	memset(seg, 0, sizeof(*seg));
	seg->wscale = LES_WSCALE_NONE;
	seg->payload_len = -1;

	if (tunnel && nexthdr != PROTO_IPIP && nexthdr != PROTO_IPV6)
		return LES_HZ_MALFORMED;
	if (les_hdr_chain(nexthdr, hdrs, len, len, &chain) || chain.len != len)
		return LES_HZ_MALFORMED;
	if (chain.fragmented)
		return LES_HZ_FRAGMENT;
	if (chain.l4_off < 0 || chain.l4_proto != PROTO_TCP)
		return LES_HZ_NOT_TCP;

	th = hdrs + chain.l4_off;
	doff = (th[12] >> 4) * 4u;
	if (tunnel) {
		size_t ip_len;

		if (nexthdr == PROTO_IPIP) {
			seg->family = 4;
			memcpy(seg->saddr, hdrs + 12, 4);
			memcpy(seg->daddr, hdrs + 16, 4);
			ip_len = les_get_be16(hdrs + 2);
		} else {
			seg->family = 6;
			memcpy(seg->saddr, hdrs + 8, 16);
			memcpy(seg->daddr, hdrs + 24, 16);
			ip_len = 40u + les_get_be16(hdrs + 4);
		}
		/* The inner IP length covers these headers and the payload. */
		if (ip_len < len)
			return LES_HZ_MALFORMED;
		seg->payload_len = ip_len - len;
	}
	seg->sport = les_get_be16(th);
	seg->dport = les_get_be16(th + 2);
	seg->seq = les_get_be32(th + 4);
	seg->ack = les_get_be32(th + 8);
	seg->flags = th[13];
	seg->win = les_get_be16(th + 14);
	les_tcp_options(th + 20, doff - 20, seg);
	return LES_HZ_TCP;
}
