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
	[LES_BLOB_ERR_VERSION]	= "LES key blob version is not 3 (wire format 3)",
	[LES_BLOB_ERR_ROLE]	= "LES key blob role is unknown",
	[LES_BLOB_ERR_KEYLEN]	= "LES key blob key length must be 16, 24 or 32",
	[LES_BLOB_ERR_FLAGS]	= "LES key blob has reserved flags set",
	[LES_BLOB_ERR_PEP_ID]	= "LES key blob pep_id is wrong for its role",
	[LES_BLOB_ERR_LENGTH]	= "LES key blob length does not match its role and key length",
	[LES_BLOB_ERR_SAME_KEYS] = "LES key blob has the same key for both zones",
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

static bool role_is_pep_origin(unsigned int role)
{
	return role == LES_ROLE_PEP_ORIGIN_IN || role == LES_ROLE_PEP_ORIGIN_OUT;
}

size_t les_blob_len(enum les_role role, unsigned int key_len)
{
	size_t root = key_len + LES_SALT_LEN;

	if (!key_len_ok(key_len) || role < LES_ROLE_ENDPOINT || role > LES_ROLE_MAX)
		return 0;
	if (role == LES_ROLE_ENDPOINT)
		return LES_BLOB_HDR_LEN + 2 * root + LES_KP_LEN;
	return LES_BLOB_HDR_LEN + root;
}

bool les_blob_is_les(const __u8 *key, size_t len)
{
	return len >= LES_BLOB_MAGIC_LEN &&
	       !memcmp(key, LES_BLOB_MAGIC, LES_BLOB_MAGIC_LEN);
}

int les_blob_parse(const __u8 *buf, size_t len, struct les_blob *out)
{
	unsigned int key_len, role;
	const __u8 *m;
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
	if (buf[7] & ~LES_BLOB_F_KNOWN)
		return LES_BLOB_ERR_FLAGS;
	pep_id = les_get_be32(buf + 8);
	if (role_is_pep_origin(role) != !!pep_id)
		return LES_BLOB_ERR_PEP_ID;
	if (len != les_blob_len(role, key_len))
		return LES_BLOB_ERR_LENGTH;

	memset(out, 0, sizeof(*out));
	out->role = role;
	out->key_len = key_len;
	out->flags = buf[7];
	out->pep_id = pep_id;
	m = buf + LES_BLOB_HDR_LEN;
	switch (role) {
	case LES_ROLE_ENDPOINT:
		out->k2 = m;
		out->k1 = m + key_len + LES_SALT_LEN;
		out->kp = out->k1 + key_len + LES_SALT_LEN;
		/* One key for both zones would let a K2 holder open payloads. */
		if (!memcmp(out->k1, out->k2, key_len))
			return LES_BLOB_ERR_SAME_KEYS;
		break;
	case LES_ROLE_PEP_VIEW:
		out->k2 = m;
		break;
	default:
		out->ko = m;
		break;
	}
	return LES_BLOB_OK;
}

size_t les_blob_build(__u8 *buf, size_t size, const struct les_blob *b)
{
	size_t len = les_blob_len(b->role, b->key_len);
	size_t root = b->key_len + LES_SALT_LEN;
	__u8 *m = buf + LES_BLOB_HDR_LEN;
	struct les_blob check;

	if (!len || len > size || (b->flags & ~LES_BLOB_F_KNOWN) ||
	    role_is_pep_origin(b->role) != !!b->pep_id)
		return 0;
	switch (b->role) {
	case LES_ROLE_ENDPOINT:
		if (!b->k2 || !b->k1 || !b->kp)
			return 0;
		memcpy(m, b->k2, root);
		memcpy(m + root, b->k1, root);
		memcpy(m + 2 * root, b->kp, LES_KP_LEN);
		break;
	case LES_ROLE_PEP_VIEW:
		if (!b->k2)
			return 0;
		memcpy(m, b->k2, root);
		break;
	default:
		if (!b->ko)
			return 0;
		memcpy(m, b->ko, root);
		break;
	}
	memcpy(buf, LES_BLOB_MAGIC, LES_BLOB_MAGIC_LEN);
	buf[4] = LES_BLOB_VERSION;
	buf[5] = b->role;
	buf[6] = b->key_len;
	buf[7] = b->flags;
	les_put_be32(buf + 8, b->pep_id);
	/* Never hand out what les_blob_parse() would refuse. */
	return les_blob_parse(buf, len, &check) == LES_BLOB_OK ? len : 0;
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

/*
 * The TCP options a PEP-origin packet may carry: those of the ACKs and
 * probes a PEP makes (timestamps, SACK blocks), NOP and EOL, and zeros
 * after EOL.  Anything else (MPTCP, TCP-AO, a window scale or MSS outside
 * a SYN) the endpoint's TCP would act on beyond an ACK: refused.
 */
static bool les_po_options_ok(const __u8 *opt, size_t len)
{
	size_t i = 0;
	__u8 olen;

	while (i < len) {
		switch (opt[i]) {
		case LES_TCPOPT_EOL:
			for (; i < len; i++)
				if (opt[i])
					return false;
			return true;
		case LES_TCPOPT_NOP:
			i++;
			continue;
		}
		if (i + 2 > len)
			return false;
		olen = opt[i + 1];
		if (i + olen > len)
			return false;
		if (opt[i] == LES_TCPOPT_TS ? olen != 10 :
		    opt[i] != LES_TCPOPT_SACK || olen < 10 || (olen - 2) % 8)
			return false;
		i += olen;
	}
	return true;
}

int les_pep_origin_check(__u8 nexthdr, const __u8 *hdrs, size_t len,
			 bool tunnel)
{
	struct les_chain chain;
	int tcp_off;
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
	/* The inner IP header alone before TCP: no options, no extensions. */
	tcp_off = !tunnel ? 0 : nexthdr == PROTO_IPIP ? 20 : 40;
	if (chain.l4_off != tcp_off ||
	    !les_po_options_ok(hdrs + tcp_off + 20, len - tcp_off - 20))
		return LES_PO_OPTIONS;
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

/* ---- Section 4: what enters the header zone --------------------------- */

/* The options a TCP PEP reads, with the only lengths they may have. */
static bool tcp_option_kept(__u8 kind, __u8 len)
{
	switch (kind) {
	case LES_TCPOPT_MSS:
		return len == 4;
	case LES_TCPOPT_WSCALE:
		return len == 3;
	case LES_TCPOPT_SACK_PERM:
		return len == 2;
	case LES_TCPOPT_SACK:
		return len == 10 || len == 18 || len == 26 || len == 34;
	case LES_TCPOPT_TS:
		return len == 10;
	}
	return false;
}

/*
 * The header zone's form of the TCP options @opt into @out (which may be
 * @opt, or NULL to only ask): true if it is @opt unchanged.  Every read
 * of a byte comes before the write at its index, so in place is safe.
 */
static bool tcp_options_sanitize(const __u8 *opt, size_t len, __u8 *out)
{
	bool clean = true;
	size_t i = 0, j;
	__u8 olen;

	while (i < len) {
		switch (opt[i]) {
		case LES_TCPOPT_EOL:
			for (j = i + 1; j < len && !opt[j]; j++)
				;
			if (j < len)
				goto rest;
			if (out)
				memset(out + i, 0, len - i);
			return clean;
		case LES_TCPOPT_NOP:
			if (out)
				out[i] = LES_TCPOPT_NOP;
			i++;
			continue;
		}
		if (i + 2 > len)
			goto rest;
		olen = opt[i + 1];
		if (olen < 2 || i + olen > len)
			goto rest;
		if (tcp_option_kept(opt[i], olen)) {
			if (out && out != opt)
				memcpy(out + i, opt + i, olen);
		} else {
			clean = false;
			if (out)
				memset(out + i, LES_TCPOPT_NOP, olen);
		}
		i += olen;
	}
	return clean;
rest:
	if (out)
		memset(out + i, LES_TCPOPT_NOP, len - i);
	return false;
}

size_t les_hz_plan(__u8 nexthdr, const __u8 *buf, size_t avail, size_t total,
		   struct les_hz_plan *plan)
{
	size_t ip_hlen, end, tcp_len, ip_len;
	const __u8 *th;

	memset(plan, 0, sizeof(*plan));
	plan->tcp_off = -1;

	switch (nexthdr) {
	case PROTO_IPIP:
		if (total < 20)
			return 0;
		if (avail < 20)
			return 20;
		/* Version 4 and IHL 5: IP options stay in the payload zone. */
		if (buf[0] != 0x45 || buf[9] != PROTO_TCP ||
		    (les_get_be16(buf + 6) & 0x3fff))
			return 0;
		ip_len = les_get_be16(buf + 2);
		if (ip_len < 20 || ip_len > total)
			return 0;
		ip_hlen = 20;
		end = ip_len;
		break;
	case PROTO_IPV6:
		if (total < 40)
			return 0;
		if (avail < 40)
			return 40;
		/* No extension header; no jumbogram (payload length 0). */
		if ((buf[0] >> 4) != 6 || buf[6] != PROTO_TCP)
			return 0;
		ip_len = les_get_be16(buf + 4);
		if (!ip_len || 40 + ip_len > total)
			return 0;
		ip_hlen = 40;
		end = 40 + ip_len;
		break;
	case PROTO_TCP:
		ip_hlen = 0;
		end = total;
		break;
	default:
		return 0;
	}

	if (ip_hlen + 20 > end)
		return 0;
	if (avail < ip_hlen + 20)
		return ip_hlen + 20;
	th = buf + ip_hlen;
	tcp_len = (th[12] >> 4) * 4u;
	if (tcp_len < 20 || ip_hlen + tcp_len > end)
		return 0;
	if (avail < ip_hlen + tcp_len)
		return ip_hlen + tcp_len;

	plan->len = ip_hlen + tcp_len;
	plan->tcp_off = ip_hlen;
	plan->payload_len = end - plan->len;
	if (!tcp_options_sanitize(th + 20, tcp_len - 20, NULL)) {
		plan->flags |= LES_HZF_OPTIONS_MOVED;
		plan->moved_len += tcp_len - 20;
	}
	if (les_get_be16(th + LES_TCP_URG_OFF)) {
		plan->flags |= LES_HZF_URGENT_MOVED;
		plan->moved_len += 2;
	}
	return 0;
}

void les_hz_seal(const struct les_hz_plan *plan, const __u8 *hdrs, __u8 *hz,
		 __u8 *csum, __u8 *moved)
{
	size_t tcp_len, n = 0;
	const __u8 *th;
	__u8 *zth;

	if (!plan->len) {
		csum[0] = 0;
		csum[1] = 0;
		return;
	}
	th = hdrs + plan->tcp_off;
	tcp_len = plan->len - plan->tcp_off;

	/* What leaves the headers first: @hz may be @hdrs. */
	memcpy(csum, th + LES_TCP_CSUM_OFF, LES_CSUM_LEN);
	if (plan->flags & LES_HZF_OPTIONS_MOVED) {
		memcpy(moved, th + 20, tcp_len - 20);
		n += tcp_len - 20;
	}
	if (plan->flags & LES_HZF_URGENT_MOVED)
		memcpy(moved + n, th + LES_TCP_URG_OFF, 2);

	if (hz != hdrs)
		memmove(hz, hdrs, plan->len);
	zth = hz + plan->tcp_off;
	les_put_be16(zth + LES_TCP_CSUM_OFF, plan->payload_len);
	les_put_be16(zth + LES_TCP_URG_OFF, 0);
	if (plan->flags & LES_HZF_OPTIONS_MOVED)
		tcp_options_sanitize(zth + 20, tcp_len - 20, zth + 20);
}

/* Where the TCP header of a header zone with @len header bytes starts. */
static int hz_tcp_off(__u8 nexthdr, const __u8 *hdrs, size_t len)
{
	size_t off, tcp_len;

	switch (nexthdr) {
	case PROTO_IPIP:
		off = 20;
		break;
	case PROTO_IPV6:
		off = 40;
		break;
	case PROTO_TCP:
		off = 0;
		break;
	default:
		return -1;
	}
	if (len < off + 20)
		return -1;
	tcp_len = (hdrs[off + 12] >> 4) * 4u;
	if (tcp_len < 20 || off + tcp_len != len)
		return -1;
	return off;
}

int les_hz_moved_len(__u8 nexthdr, __u8 flags, const __u8 *hdrs, size_t len)
{
	int off, n = 0;

	if (flags & ~(LES_HZF_OPTIONS_MOVED | LES_HZF_URGENT_MOVED))
		return -1;
	if (!len)
		return flags ? -1 : 0;
	off = hz_tcp_off(nexthdr, hdrs, len);
	if (off < 0)
		return -1;
	if (flags & LES_HZF_OPTIONS_MOVED)
		n += len - off - 20;
	if (flags & LES_HZF_URGENT_MOVED)
		n += 2;
	return n;
}

void les_hz_restore(__u8 nexthdr, __u8 flags, __u8 *hdrs, size_t len,
		    const __u8 *csum, const __u8 *moved)
{
	int off = len ? hz_tcp_off(nexthdr, hdrs, len) : -1;
	size_t n = 0;
	__u8 *th;

	if (off < 0)
		return;
	th = hdrs + off;
	memcpy(th + LES_TCP_CSUM_OFF, csum, LES_CSUM_LEN);
	if (flags & LES_HZF_OPTIONS_MOVED) {
		memcpy(th + 20, moved, len - off - 20);
		n += len - off - 20;
	}
	if (flags & LES_HZF_URGENT_MOVED)
		memcpy(th + LES_TCP_URG_OFF, moved + n, 2);
}

/* ---- What a PEP reads ------------------------------------------------ */

int les_hz_tcp(__u8 nexthdr, const __u8 *hdrs, size_t len,
	       struct les_tcp_seg *seg)
{
	struct les_hz_plan plan;
	const __u8 *th;
	unsigned int payload;
	int off;

	memset(seg, 0, sizeof(*seg));
	seg->wscale = LES_WSCALE_NONE;

	if (!len)
		return LES_HZ_NOT_TCP;
	off = hz_tcp_off(nexthdr, hdrs, len);
	if (off < 0)
		return LES_HZ_MALFORMED;
	th = hdrs + off;
	payload = les_get_be16(th + LES_TCP_CSUM_OFF);
	/*
	 * Only what a sender makes: the same headers planned again from
	 * themselves, the payload length agreeing with the IP length, no
	 * urgent pointer and no option a sender would have moved.
	 */
	if (les_hz_plan(nexthdr, hdrs, len, len + payload, &plan) ||
	    plan.len != len || plan.flags || plan.payload_len != payload)
		return LES_HZ_MALFORMED;

	if (nexthdr == PROTO_IPIP) {
		seg->family = 4;
		memcpy(seg->saddr, hdrs + 12, 4);
		memcpy(seg->daddr, hdrs + 16, 4);
	} else if (nexthdr == PROTO_IPV6) {
		seg->family = 6;
		memcpy(seg->saddr, hdrs + 8, 16);
		memcpy(seg->daddr, hdrs + 24, 16);
	}
	seg->payload_len = payload;
	seg->sport = les_get_be16(th);
	seg->dport = les_get_be16(th + 2);
	seg->seq = les_get_be32(th + 4);
	seg->ack = les_get_be32(th + 8);
	seg->flags = th[13];
	seg->win = les_get_be16(th + 14);
	les_tcp_options(th + 20, len - off - 20, seg);
	return LES_HZ_TCP;
}

/* ---- Section 7: the PEP's replay window ------------------------------ */

#define REPLAY_NONE	(~(__u64)0)

void les_replay_init(struct les_replay *r, unsigned int size)
{
	memset(r, 0, sizeof(*r));
	if (size < LES_REPLAY_MIN)
		size = LES_REPLAY_MIN;
	if (size > LES_REPLAY_MAX)
		size = LES_REPLAY_MAX;
	r->size = size;
}

__u64 les_replay_seq(const struct les_replay *r, __u16 epoch, __u32 seq_lo)
{
	__u32 top_hi = r->top >> 32, hi;
	__s32 diff;

	if (!r->any)
		return (__u64)epoch << 32 | seq_lo;
	/* The SeqHi with these low 16 bits nearest the window's (ties: lower). */
	hi = (top_hi & ~0xffffu) | epoch;
	diff = (__s32)(hi - top_hi);
	if (diff >= 0x8000) {
		if (hi < 0x10000)
			return REPLAY_NONE;
		hi -= 0x10000;
	} else if (diff < -0x8000) {
		if (hi > 0xffffffffu - 0x10000)
			return REPLAY_NONE;
		hi += 0x10000;
	}
	return (__u64)hi << 32 | seq_lo;
}

/*
 * A ring of @nbits bits (a power of two) indexed by sequence number: the
 * seen bits of the window and the absorbed marks are two of them.
 */
static bool ring_test(const __u32 *ring, unsigned int nbits, __u64 seq)
{
	unsigned int i = seq & (nbits - 1);

	return ring[i / 32] & (1u << (i % 32));
}

static void ring_set(__u32 *ring, unsigned int nbits, __u64 seq)
{
	unsigned int i = seq & (nbits - 1);

	ring[i / 32] |= 1u << (i % 32);
}

/* The window's top moves from @from to @to: the bits of (from, to] go. */
static void ring_slide(__u32 *ring, unsigned int nbits, __u64 from, __u64 to)
{
	__u64 s = from + 1, left = to - from;

	if (left >= nbits) {
		memset(ring, 0, nbits / 8);
		return;
	}
	while (left) {
		unsigned int i = s & (nbits - 1);

		if (!(i % 32) && left >= 32) {
			ring[i / 32] = 0;
			s += 32;
			left -= 32;
		} else {
			ring[i / 32] &= ~(1u << (i % 32));
			s++;
			left--;
		}
	}
}

bool les_replay_check(const struct les_replay *r, __u64 seq)
{
	if (seq == REPLAY_NONE)
		return false;
	if (!r->any || seq > r->top)
		return true;
	if (r->top - seq >= r->size)
		return false;
	return !ring_test(r->bits, LES_REPLAY_MAX, seq);
}

void les_replay_advance(struct les_replay *r, __u64 seq)
{
	if (r->any && seq <= r->top) {
		ring_set(r->bits, LES_REPLAY_MAX, seq);
		return;
	}
	if (r->any) {
		ring_slide(r->bits, LES_REPLAY_MAX, r->top, seq);
		ring_slide(r->absorbed, LES_ABSORBED_MAX, r->top, seq);
	} else {
		memset(r->bits, 0, sizeof(r->bits));
		memset(r->absorbed, 0, sizeof(r->absorbed));
	}
	r->top = seq;
	r->any = true;
	ring_set(r->bits, LES_REPLAY_MAX, seq);
}

/* Do @seq's marks still describe it (not yet slid over)? */
static bool absorbed_recent(const struct les_replay *r, __u64 seq)
{
	return r->any && seq != REPLAY_NONE && seq <= r->top &&
	       r->top - seq < LES_ABSORBED_MAX;
}

void les_replay_absorb(struct les_replay *r, __u64 seq)
{
	if (absorbed_recent(r, seq))
		ring_set(r->absorbed, LES_ABSORBED_MAX, seq);
}

bool les_replay_absorbed(const struct les_replay *r, __u64 seq)
{
	return absorbed_recent(r, seq) &&
	       ring_test(r->absorbed, LES_ABSORBED_MAX, seq);
}

/* ---- Pure ACKs a PEP makes ------------------------------------------ */

/* RFC 1071 sum of @len bytes, added to @sum (not folded). */
static __u32 csum_add_bytes(__u32 sum, const __u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	return sum;
}

static __u16 csum_fold_not(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

size_t les_ack_build(const struct les_ack_desc *d, bool ip, __u8 *buf,
		     size_t size)
{
	size_t alen = d->family == 6 ? 16 : 4, iplen, optlen, tcplen, len, i;
	__u8 *th, *o;
	__u32 sum;

	if ((d->family != 4 && d->family != 6) || !(d->flags & LES_TCP_ACK) ||
	    (d->flags & ~LES_PEP_ORIGIN_TCP_OK) ||
	    d->sack_n > (d->has_ts ? 3 : LES_SACK_MAX))
		return 0;
	iplen = ip ? (d->family == 6 ? 40 : 20) : 0;
	/* NOP NOP TS, then NOP NOP SACK: each 4-byte aligned. */
	optlen = (d->has_ts ? 12 : 0) + (d->sack_n ? 4 + 8 * d->sack_n : 0);
	tcplen = 20 + optlen;
	len = iplen + tcplen;
	if (size < len)
		return 0;
	for (i = 0; i < len; i++)
		buf[i] = 0;

	if (ip && d->family == 4) {
		buf[0] = 0x45;
		les_put_be16(buf + 2, (__u16)len);
		buf[6] = 0x40;			/* DF, ID 0 (protocol.md 5) */
		buf[8] = 64;
		buf[9] = 6;
		memcpy(buf + 12, d->saddr, 4);
		memcpy(buf + 16, d->daddr, 4);
		les_put_be16(buf + 10, csum_fold_not(csum_add_bytes(0, buf, 20)));
	} else if (ip) {
		buf[0] = 0x60;
		les_put_be16(buf + 4, (__u16)tcplen);
		buf[6] = 6;
		buf[7] = 64;
		memcpy(buf + 8, d->saddr, 16);
		memcpy(buf + 24, d->daddr, 16);
	}

	th = buf + iplen;
	les_put_be16(th, d->sport);
	les_put_be16(th + 2, d->dport);
	les_put_be32(th + 4, d->seq);
	les_put_be32(th + 8, d->ack);
	th[12] = (__u8)(tcplen / 4) << 4;
	th[13] = d->flags;
	les_put_be16(th + 14, d->win);
	o = th + 20;
	if (d->has_ts) {
		o[0] = LES_TCPOPT_NOP;
		o[1] = LES_TCPOPT_NOP;
		o[2] = LES_TCPOPT_TS;
		o[3] = 10;
		les_put_be32(o + 4, d->tsval);
		les_put_be32(o + 8, d->tsecr);
		o += 12;
	}
	if (d->sack_n) {
		o[0] = LES_TCPOPT_NOP;
		o[1] = LES_TCPOPT_NOP;
		o[2] = LES_TCPOPT_SACK;
		o[3] = (__u8)(2 + 8 * d->sack_n);
		for (i = 0; i < 2u * d->sack_n; i++)
			les_put_be32(o + 4 + 4 * i, d->sack[i]);
	}

	/* Pseudo-header (RFC 793, RFC 8200 8.1), then the segment. */
	sum = csum_add_bytes(0, d->saddr, alen);
	sum = csum_add_bytes(sum, d->daddr, alen);
	sum += 6 + (__u32)tcplen;
	sum = csum_add_bytes(sum, th, tcplen);
	les_put_be16(th + LES_TCP_CSUM_OFF, csum_fold_not(sum));
	return len;
}
