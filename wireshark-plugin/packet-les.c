// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Layered ESP (docs/protocol.md, wire format 2) for Wireshark 4.0.
 *
 * ESP packets (IP protocol 50, UDP 4500) of an SA in the LES SA table are
 * opened with its blob: the header zone with K2 (or a PEP-origin key), the
 * payload zone with K1 when the blob is an endpoint's.  What the zones hold
 * goes to Wireshark's own IP and TCP dissectors, so TCP analysis works
 * through the tunnel.  Every other ESP packet goes to the ESP dissector, as
 * before.
 */
#include <string.h>

#include <epan/expert.h>
#include <epan/ipproto.h>
#include <epan/packet.h>
#include <epan/prefs.h>
#include <wsutil/pint.h>

#include "les_keys.h"

#define LES_FLAG_HEADER_ONLY	0x01
#define LES_FLAG_OPTIONS_MOVED	0x02
#define LES_FLAG_URGENT_MOVED	0x04
#define LES_MIN_PACKET		(LES_HZ_OFF + LES_HZ_DESC + LES_ICV_LEN)
#define LES_PZ_MIN		(2 + 2)	/* checksum, pad length, next header */
#define LES_MAX_KEYS		8

/* Wireshark 4.0 wants every id -1 until registered. */
static int proto_les = -1;
static int hf_spi = -1, hf_seq = -1, hf_iv = -1, hf_masked_l = -1,
	   hf_hz_ct = -1, hf_icv2 = -1, hf_opened_by = -1, hf_l = -1, hf_nh = -1,
	   hf_flags = -1, hf_flag_ho = -1, hf_flag_om = -1, hf_flag_um = -1,
	   hf_epoch = -1, hf_headers = -1, hf_tcp_payload_len = -1, hf_pz_ct = -1,
	   hf_icv1 = -1, hf_encrypted = -1, hf_csum = -1, hf_moved = -1,
	   hf_padding = -1, hf_pad_len = -1, hf_pz_nh = -1, hf_esn = -1;
static gint ett_les = -1, ett_hz = -1, ett_pz = -1, ett_flags = -1;
static expert_field ei_icv2_bad = EI_INIT, ei_icv1_bad = EI_INIT;
static expert_field ei_malformed = EI_INIT, ei_truncated = EI_INIT;
static expert_field ei_policy = EI_INIT;

static dissector_handle_t esp_handle, udp4500_handle;
static dissector_table_t ip_proto_table;
static gboolean pref_all_esp;

static const value_string role_names[] = {
	{ LES_ROLE_ENDPOINT, "endpoint" },
	{ LES_ROLE_PEP_VIEW, "pep-view" },
	{ LES_ROLE_ORIGIN_IN, "pep-origin-in" },
	{ LES_ROLE_ORIGIN_OUT, "pep-origin-out" },
	{ 0, NULL }
};

static int * const flag_fields[] = {
	&hf_flag_ho, &hf_flag_om, &hf_flag_um, NULL
};

/* The TCP header's offset in a zone's headers (section 4). */
static guint tcp_off(guint8 nh)
{
	return nh == IP_PROTO_IPIP ? 20 : nh == IP_PROTO_IPV6 ? 40 : 0;
}

/*
 * Whether a (not header-only) header zone is one a sender makes: empty,
 * or IP and TCP ending exactly at L (section 4; the PEP checks the same).
 */
static gboolean zone_well_formed(guint8 nh, guint8 flags, const guint8 *h,
				 guint l)
{
	guint t = tcp_off(nh);

	if (flags & ~(LES_FLAG_HEADER_ONLY | LES_FLAG_OPTIONS_MOVED |
		      LES_FLAG_URGENT_MOVED))
		return FALSE;
	if (flags & LES_FLAG_HEADER_ONLY)
		return TRUE;
	if (!l)
		return !(flags & (LES_FLAG_OPTIONS_MOVED | LES_FLAG_URGENT_MOVED));
	if ((nh != IP_PROTO_TCP && !t) || l < t + 20)
		return FALSE;
	if (nh == IP_PROTO_IPIP && (h[0] != 0x45 || h[9] != IP_PROTO_TCP))
		return FALSE;
	if (nh == IP_PROTO_IPV6 && (h[0] >> 4 != 6 || h[6] != IP_PROTO_TCP))
		return FALSE;
	return t + (h[t + 12] >> 4) * 4 == l;
}

static gboolean po_options_ok(const guint8 *o, guint n)
{
	guint i = 0, j;

	while (i < n) {
		if (o[i] == 0) {	/* EOL, then zeros only */
			for (j = i; j < n; j++)
				if (o[j])
					return FALSE;
			return TRUE;
		}
		if (o[i] == 1) {
			i++;
			continue;
		}
		if (i + 2 > n || o[i + 1] < 2 || i + o[i + 1] > n)
			return FALSE;
		if (o[i] == 8 ? o[i + 1] != 10 :
		    o[i] != 5 || o[i + 1] < 10 || (o[i + 1] - 2) % 8)
			return FALSE;
		i += o[i + 1];
	}
	return TRUE;
}

/*
 * Why the endpoint refuses a header-only packet (section 5), or NULL: only
 * a pure ACK in IP (tunnel) or TCP (transport) with the options a PEP
 * sends, nothing past its TCP header.
 */
static const char *pep_origin_refusal(guint8 role, guint8 nh, guint8 flags,
				      const guint8 *h, guint l)
{
	guint t = tcp_off(nh), ip_len, tcp_flags;

	if (role != LES_ROLE_ORIGIN_IN && role != LES_ROLE_ORIGIN_OUT)
		return "a header-only packet on an endpoint SA";
	if (flags != LES_FLAG_HEADER_ONLY)
		return "flags other than HEADER_ONLY";
	if ((nh != IP_PROTO_TCP && !t) || l < t + 20)
		return "not IP and TCP";
	if (nh == IP_PROTO_IPIP) {
		if (h[0] != 0x45 || h[9] != IP_PROTO_TCP || pntoh16(h + 6) & 0x3fff)
			return "IPv4 options, a fragment, or not TCP";
		ip_len = pntoh16(h + 2);
	} else if (nh == IP_PROTO_IPV6) {
		if (h[0] >> 4 != 6 || h[6] != IP_PROTO_TCP)
			return "IPv6 extension headers, or not TCP";
		ip_len = 40 + pntoh16(h + 4);
	} else {
		ip_len = l;
	}
	if (ip_len != l || t + (h[t + 12] >> 4) * 4 != l)
		return "bytes past the TCP header, or lengths that disagree";
	tcp_flags = h[t + 13];
	if (!(tcp_flags & 0x10) || tcp_flags & ~(0x10 | 0x40 | 0x80))
		return "TCP flags other than ACK, ECE, CWR";
	if (!po_options_ok(h + t + 20, l - t - 20))
		return "TCP options other than timestamps, SACK, NOP, EOL";
	return NULL;
}

/* The inner packet's length as its headers say (for TCP analysis). */
static guint inner_reported_len(guint8 nh, const guint8 *h, guint l)
{
	guint t = tcp_off(nh), len = l;

	if (nh == IP_PROTO_IPIP && l >= 20)
		len = pntoh16(h + 2);
	else if (nh == IP_PROTO_IPV6 && l >= 40)
		len = 40 + pntoh16(h + 4);
	else if (nh == IP_PROTO_TCP && l >= 20)
		len = l + pntoh16(h + t + 16);
	return MAX(len, l);
}

static void call_inner(tvbuff_t *inner, packet_info *pinfo, proto_tree *tree,
		       guint8 nh)
{
	col_append_str(pinfo->cinfo, COL_INFO, " ");
	col_set_fence(pinfo->cinfo, COL_INFO);
	if (!dissector_try_uint_new(ip_proto_table, nh, inner, pinfo, tree,
				    TRUE, NULL))
		call_data_dissector(inner, pinfo, tree);
}

/* Section 4's option walk: TRUE if @o (@n bytes) goes into the zone as is. */
static gboolean options_kept(const guint8 *o, guint n)
{
	guint i = 0, j, len;

	while (i < n) {
		if (o[i] == 1) {
			i++;
			continue;
		}
		if (o[i] == 0) {
			for (j = i; j < n; j++)
				if (o[j])
					return FALSE;
			return TRUE;
		}
		if (i + 2 > n || o[i + 1] < 2 || i + o[i + 1] > n)
			return FALSE;
		len = o[i + 1];
		switch (o[i]) {
		case 2:
			if (len != 4)
				return FALSE;
			break;
		case 3:
			if (len != 3)
				return FALSE;
			break;
		case 4:
			if (len != 2)
				return FALSE;
			break;
		case 5:
			if (len < 10 || len > 34 || (len - 2) % 8)
				return FALSE;
			break;
		case 8:
			if (len != 10)
				return FALSE;
			break;
		default:
			return FALSE;
		}
		i += len;
	}
	return TRUE;
}

/*
 * Why the restored inner packet is not one section 4 makes into this
 * header zone, or NULL: the L its table gives, the payload length in the
 * checksum field, the moved flags and options (what the endpoint checks).
 */
static const char *plan_refusal(guint8 nh, guint8 flags, const guint8 *h,
				guint l, const guint8 *in, guint n,
				const guint8 *csum)
{
	guint t = 0, th = 0, plen = 0, want = 0, opt;

	if (nh == IP_PROTO_IPIP && n >= 40 && in[0] == 0x45 &&
	    pntoh16(in + 2) >= 40 && pntoh16(in + 2) <= n &&
	    !(pntoh16(in + 6) & 0x3fff) && in[9] == IP_PROTO_TCP) {
		t = 20;
		th = (in[32] >> 4) * 4;
		if (th >= 20 && t + th <= pntoh16(in + 2))
			want = t + th, plen = pntoh16(in + 2) - t - th;
	} else if (nh == IP_PROTO_IPV6 && n >= 60 && in[0] >> 4 == 6 &&
		   in[6] == IP_PROTO_TCP && pntoh16(in + 4) >= 20 &&
		   40u + pntoh16(in + 4) <= n) {
		t = 40;
		th = (in[52] >> 4) * 4;
		if (th >= 20 && th <= pntoh16(in + 4))
			want = t + th, plen = pntoh16(in + 4) - th;
	} else if (nh == IP_PROTO_TCP && n >= 20) {
		th = (in[12] >> 4) * 4;
		if (th >= 20 && th <= n)
			want = th, plen = n - th;
	}
	if (want != l)
		return "L is not what section 4 gives the restored packet";
	if (!l)
		return pntoh16(csum) || flags ? "a checksum or moved bytes without headers" :
		       NULL;
	if (pntoh16(h + t + 16) != plen)
		return "the TCP payload length in the zone is wrong";
	if (!!pntoh16(in + t + 18) != !!(flags & LES_FLAG_URGENT_MOVED) ||
	    pntoh16(h + t + 18))
		return "the urgent pointer is not moved as section 4 says";
	opt = th - 20;
	if (options_kept(in + t + 20, opt) == !!(flags & LES_FLAG_OPTIONS_MOVED))
		return "the options are not moved as section 4 says";
	return NULL;
}

/*
 * The payload zone opened with K1 (section 3.1): TRUE, and the restored
 * inner packet handed on, if ICV1 verifies.  Without ESN P is SPI || SeqLo;
 * with it SPI || SeqHi || SeqLo, SeqHi taken as the epoch (a capture of
 * fewer than 2^48 packets).
 */
static gboolean open_payload(tvbuff_t *tvb, packet_info *pinfo,
			     proto_tree *tree, proto_tree *les_tree,
			     const guint8 *esp, guint len, guint l,
			     const guint8 *hz, const struct les_zone_key *pz)
{
	guint pz_off = LES_MIN_PACKET + l, pz_len = len - pz_off - LES_ICV_LEN;
	guint8 nh = hz[2], flags = hz[3], *pt, *inner;
	guint aad_len, esn, pad, moved = 0, body, t = tcp_off(nh), i;
	guint8 *aad = wmem_alloc(pinfo->pool, 12 + 8 + 6 + l);
	const guint8 *h = hz + LES_HZ_DESC;
	const char *why;
	proto_tree *pz_tree;
	tvbuff_t *pz_tvb, *inner_tvb;
	gboolean bad = FALSE;
	proto_item *ti;

	pt = wmem_alloc(pinfo->pool, pz_len);
	for (esn = 0; esn < 2; esn++) {
		memcpy(aad, esp, 4);
		if (esn) {
			aad[4] = 0;
			aad[5] = 0;
			memcpy(aad + 6, hz + 4, 2);
		}
		aad_len = esn ? 8 : 4;
		memcpy(aad + aad_len, esp + 4, 4);
		aad_len += 4;
		memcpy(aad + aad_len, esp + 8, 8);
		aad_len += 8;
		memcpy(aad + aad_len, hz, LES_HZ_DESC + l);	/* plaintext */
		aad_len += LES_HZ_DESC + l;
		if (les_gcm_open(pz, esp + 8, aad, aad_len, esp + pz_off, pz_len, pt))
			break;
	}
	if (esn == 2)
		return FALSE;

	pz_tvb = tvb_new_child_real_data(tvb, pt, pz_len, pz_len);
	add_new_data_source(pinfo, pz_tvb, "LES payload zone");
	ti = proto_tree_add_item(les_tree, hf_pz_ct, tvb, pz_off, pz_len, ENC_NA);
	pz_tree = proto_item_add_subtree(ti, ett_pz);
	proto_item_append_text(ti, " (opened with K1)");
	proto_tree_add_boolean(pz_tree, hf_esn, pz_tvb, 0, 0, esn);
	proto_tree_add_item(pz_tree, hf_csum, pz_tvb, 0, 2, ENC_BIG_ENDIAN);
	pad = pt[pz_len - 2];
	if (pad + LES_PZ_MIN > pz_len) {
		expert_add_info_format(pinfo, ti, &ei_malformed,
				       "Pad length %u past the payload zone", pad);
		return TRUE;
	}
	if (l && (flags & LES_FLAG_OPTIONS_MOVED))
		moved += (h[t + 12] >> 4) * 4 - 20;
	if (l && (flags & LES_FLAG_URGENT_MOVED))
		moved += 2;
	if (2 + moved + pad + 2 > pz_len) {
		expert_add_info(pinfo, ti, &ei_malformed);
		return TRUE;
	}
	body = pz_len - 2 - moved - pad - 2;
	if (moved)
		proto_tree_add_item(pz_tree, hf_moved, pz_tvb, 2 + body, moved, ENC_NA);
	if (pad)
		proto_tree_add_item(pz_tree, hf_padding, pz_tvb, 2 + body + moved,
				    pad, ENC_NA);
	for (i = 0; i < pad; i++)
		bad |= pt[2 + body + moved + i] != i + 1;
	ti = proto_tree_add_item(pz_tree, hf_pad_len, pz_tvb, pz_len - 2, 1, ENC_NA);
	if (bad)
		expert_add_info_format(pinfo, ti, &ei_malformed,
				       "Padding is not 1, 2, 3, ...");
	ti = proto_tree_add_item(pz_tree, hf_pz_nh, pz_tvb, pz_len - 1, 1, ENC_NA);
	if (pt[pz_len - 1] != nh)
		expert_add_info_format(pinfo, ti, &ei_malformed,
				       "Next header %u, the header zone says %u",
				       pt[pz_len - 1], nh);

	if (!esn && pntoh16(hz + 4)) {
		expert_add_info_format(pinfo, ti, &ei_malformed,
				       "Epoch %u on a packet sent without ESN",
				       pntoh16(hz + 4));
		return TRUE;
	}
	if (!l && !body)
		return TRUE;

	/* Section 4 undone: checksum and moved bytes back into the headers. */
	inner = wmem_alloc(pinfo->pool, l + body);
	memcpy(inner, h, l);
	if (l) {
		memcpy(inner + t + 16, pt, 2);
		i = 2 + body;
		if (flags & LES_FLAG_OPTIONS_MOVED) {
			guint opt = (h[t + 12] >> 4) * 4 - 20;

			memcpy(inner + t + 20, pt + i, opt);
			i += opt;
		}
		if (flags & LES_FLAG_URGENT_MOVED)
			memcpy(inner + t + 18, pt + i, 2);
	}
	memcpy(inner + l, pt + 2, body);
	why = plan_refusal(nh, flags, h, l, inner, l + body, pt);
	if (why) {
		expert_add_info_format(pinfo, ti, &ei_malformed,
				       "A header zone no sender makes of this packet "
				       "(section 4): %s", why);
		return TRUE;
	}
	inner_tvb = tvb_new_child_real_data(tvb, inner, l + body, l + body);
	add_new_data_source(pinfo, inner_tvb, "LES inner packet");
	call_inner(inner_tvb, pinfo, tree, nh);
	return TRUE;
}

/* The packet @tvb from its SPI, of an SA @blobs may open. */
static int dissect_les_esp(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
			   const struct les_blob **blobs, guint n)
{
	guint len = tvb_reported_length(tvb), l = 0, i, pz_off, pz_len, rest;
	const struct les_blob *opened = NULL;
	struct les_zone_key hz_key, pz_key;
	proto_tree *les_tree, *hz_tree;
	const guint8 *esp;
	guint8 *hz = NULL, *hz_aad;
	proto_item *ti, *hz_item;
	tvbuff_t *hz_tvb, *hdr_tvb;
	guint32 spi, seq;

	col_set_str(pinfo->cinfo, COL_PROTOCOL, "LES");
	ti = proto_tree_add_item(tree, proto_les, tvb, 0, -1, ENC_NA);
	les_tree = proto_item_add_subtree(ti, ett_les);
	proto_tree_add_item_ret_uint(les_tree, hf_spi, tvb, 0, 4, ENC_BIG_ENDIAN, &spi);
	if (len < LES_MIN_PACKET) {
		col_add_fstr(pinfo->cinfo, COL_INFO, "LES (SPI=0x%08x)", spi);
		if (len >= 8)
			proto_tree_add_item(les_tree, hf_seq, tvb, 4, 4, ENC_BIG_ENDIAN);
		expert_add_info_format(pinfo, ti, &ei_malformed,
				       "Shorter than an LES packet's %u bytes",
				       LES_MIN_PACKET);
		return tvb_captured_length(tvb);
	}
	proto_tree_add_item_ret_uint(les_tree, hf_seq, tvb, 4, 4, ENC_BIG_ENDIAN, &seq);
	col_add_fstr(pinfo->cinfo, COL_INFO, "LES (SPI=0x%08x, seq=%u)", spi, seq);
	proto_tree_add_item(les_tree, hf_iv, tvb, 8, 8, ENC_NA);
	proto_tree_add_item(les_tree, hf_masked_l, tvb, LES_HZ_OFF, 2, ENC_BIG_ENDIAN);
	if (tvb_captured_length(tvb) < len) {
		proto_tree_add_item(les_tree, hf_encrypted, tvb, LES_HZ_OFF, -1, ENC_NA);
		expert_add_info(pinfo, ti, &ei_truncated);
		return tvb_captured_length(tvb);
	}
	esp = tvb_get_ptr(tvb, 0, len);

	/* Each key in turn, until one opens the header zone (ICV2). */
	for (i = 0; i < n && !opened; i++) {
		if (!les_zone_key(blobs[i], 'H', spi, &hz_key) ||
		    !les_peek_len(&hz_key, esp + 8, esp + LES_HZ_OFF, &l) ||
		    l > LES_HDRS_MAX || LES_MIN_PACKET + l > len)
			continue;
		hz = wmem_alloc(pinfo->pool, LES_HZ_DESC + l);
		/* ICV2 covers SPI, SeqLo, IV and all after it (3.1). */
		rest = len - LES_MIN_PACKET - l;
		hz_aad = wmem_alloc(pinfo->pool, LES_HZ_OFF + rest);
		memcpy(hz_aad, esp, LES_HZ_OFF);
		memcpy(hz_aad + LES_HZ_OFF, esp + LES_MIN_PACKET + l, rest);
		if (les_gcm_open(&hz_key, esp + 8, hz_aad, LES_HZ_OFF + rest,
				 esp + LES_HZ_OFF, LES_HZ_DESC + l, hz))
			opened = blobs[i];
	}
	if (!opened) {
		proto_tree_add_item(les_tree, hf_encrypted, tvb, LES_HZ_OFF, -1, ENC_NA);
		if (n)
			expert_add_info_format(pinfo, ti, &ei_icv2_bad,
					       "The header zone does not authenticate with "
					       "the %u key(s) for this SA (ICV2): corrupted, "
					       "forged, or another key", n);
		col_append_str(pinfo->cinfo, COL_INFO, n ? " [ICV2 wrong]" : " [no key]");
		return len;
	}

	hz_item = proto_tree_add_item(les_tree, hf_hz_ct, tvb, LES_HZ_OFF,
				      LES_HZ_DESC + l, ENC_NA);
	proto_tree_add_item(les_tree, hf_icv2, tvb, LES_HZ_OFF + LES_HZ_DESC + l,
			    LES_ICV_LEN, ENC_NA);
	hz_tree = proto_item_add_subtree(hz_item, ett_hz);
	proto_item_append_text(hz_item, " (opened with the %s key)",
			       val_to_str_const(opened->role, role_names, "?"));
	hz_tvb = tvb_new_child_real_data(tvb, hz, LES_HZ_DESC + l, LES_HZ_DESC + l);
	add_new_data_source(pinfo, hz_tvb, "LES header zone");
	proto_tree_add_uint(hz_tree, hf_opened_by, hz_tvb, 0, 0, opened->role);
	proto_tree_add_item(hz_tree, hf_l, hz_tvb, 0, 2, ENC_BIG_ENDIAN);
	proto_tree_add_item(hz_tree, hf_nh, hz_tvb, 2, 1, ENC_NA);
	proto_tree_add_bitmask(hz_tree, hz_tvb, 3, hf_flags, ett_flags, flag_fields,
			       ENC_NA);
	proto_tree_add_item(hz_tree, hf_epoch, hz_tvb, 4, 2, ENC_BIG_ENDIAN);
	if (l)
		proto_tree_add_item(hz_tree, hf_headers, hz_tvb, LES_HZ_DESC, l, ENC_NA);
	pz_off = LES_MIN_PACKET + l;
	/* A PEP-origin key opens header-only packets, and nothing else. */
	if (hz[3] & LES_FLAG_HEADER_ONLY || opened->role == LES_ROLE_ORIGIN_IN ||
	    opened->role == LES_ROLE_ORIGIN_OUT) {
		const char *why = pep_origin_refusal(opened->role, hz[2], hz[3],
						     hz + LES_HZ_DESC, l);

		col_append_str(pinfo->cinfo, COL_INFO, " PEP-origin");
		if (!why && len != pz_off)
			why = "bytes after ICV2";
		if (why) {
			expert_add_info_format(pinfo, hz_item, &ei_policy,
					       "A PEP-origin packet the endpoint refuses "
					       "(section 5): %s", why);
			col_append_str(pinfo->cinfo, COL_INFO, " [refused]");
			return len;
		}
		hdr_tvb = tvb_new_child_real_data(tvb, hz + LES_HZ_DESC, l, l);
		add_new_data_source(pinfo, hdr_tvb, "LES PEP-origin packet");
		call_inner(hdr_tvb, pinfo, tree, hz[2]);
		return len;
	}
	if (!zone_well_formed(hz[2], hz[3], hz + LES_HZ_DESC, l)) {
		expert_add_info_format(pinfo, hz_item, &ei_malformed,
				       "A header zone no sender makes (section 4): "
				       "made by a holder of its key, or a sender's bug");
		col_append_str(pinfo->cinfo, COL_INFO, " [malformed header zone]");
		return len;
	}
	if (l)
		proto_tree_add_item(hz_tree, hf_tcp_payload_len, hz_tvb,
				    LES_HZ_DESC + tcp_off(hz[2]) + 16, 2, ENC_BIG_ENDIAN);
	if (len == pz_off) {
		expert_add_info_format(pinfo, hz_item, &ei_policy,
				       "Header-only by its length, on an SA that is "
				       "not PEP-origin: the endpoint drops it");
		return len;
	}
	if (len < pz_off + LES_PZ_MIN + LES_ICV_LEN) {
		expert_add_info_format(pinfo, hz_item, &ei_malformed,
				       "No room for a payload zone after ICV2");
		return len;
	}
	pz_len = len - pz_off - LES_ICV_LEN;
	if (opened->role == LES_ROLE_ENDPOINT &&
	    les_zone_key(opened, 'P', spi, &pz_key) &&
	    open_payload(tvb, pinfo, tree, les_tree, esp, len, l, hz, &pz_key)) {
		proto_tree_add_item(les_tree, hf_icv1, tvb, len - LES_ICV_LEN,
				    LES_ICV_LEN, ENC_NA);
		return len;
	}
	ti = proto_tree_add_item(les_tree, hf_pz_ct, tvb, pz_off, pz_len, ENC_NA);
	proto_item_append_text(ti, opened->role == LES_ROLE_ENDPOINT ?
			       " (does not open with K1)" : " (encrypted with K1)");
	ti = proto_tree_add_item(les_tree, hf_icv1, tvb, len - LES_ICV_LEN,
				 LES_ICV_LEN, ENC_NA);
	if (opened->role == LES_ROLE_ENDPOINT) {
		/* Its headers are only K2's word, which every PEP holds. */
		expert_add_info(pinfo, ti, &ei_icv1_bad);
		col_append_str(pinfo->cinfo, COL_INFO, " [ICV1 wrong]");
		return len;
	}
	/* What a PEP sees: the headers, the payload's length without it. */
	if (l) {
		hdr_tvb = tvb_new_child_real_data(tvb, hz + LES_HZ_DESC, l,
						  inner_reported_len(hz[2], hz + LES_HZ_DESC, l));
		add_new_data_source(pinfo, hdr_tvb, "LES headers");
		call_inner(hdr_tvb, pinfo, tree, hz[2]);
	}
	return len;
}

static int dissect_les(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
		       void *data)
{
	const struct les_blob *blobs[LES_MAX_KEYS];
	guint n = 0;

	if (tvb_captured_length(tvb) >= 4)
		n = les_keys_lookup(&pinfo->src, &pinfo->dst, tvb_get_ntohl(tvb, 0),
				    blobs, LES_MAX_KEYS);
	if (!n && !pref_all_esp)
		return call_dissector_with_data(esp_handle, tvb, pinfo, tree, data);
	return dissect_les_esp(tvb, pinfo, tree, blobs, n);
}

/* UDP 4500 (RFC 3948): ESP unless IKE's zero marker or a keepalive. */
static int dissect_les_udp(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
			   void *data)
{
	const struct les_blob *blobs[LES_MAX_KEYS];
	guint n = 0;

	if (tvb_captured_length(tvb) < 8 || !tvb_get_ntohl(tvb, 0))
		return call_dissector_with_data(udp4500_handle, tvb, pinfo, tree, data);
	n = les_keys_lookup(&pinfo->src, &pinfo->dst, tvb_get_ntohl(tvb, 0),
			    blobs, LES_MAX_KEYS);
	if (!n && !pref_all_esp)
		return call_dissector_with_data(udp4500_handle, tvb, pinfo, tree, data);
	return dissect_les_esp(tvb, pinfo, tree, blobs, n);
}

void proto_register_les(void);
void proto_reg_handoff_les(void);

void proto_register_les(void)
{
	static hf_register_info hf[] = {
		{ &hf_spi, { "SPI", "les.spi", FT_UINT32, BASE_HEX, NULL, 0,
			     NULL, HFILL } },
		{ &hf_seq, { "Sequence (low 32 bits)", "les.seq", FT_UINT32, BASE_DEC,
			     NULL, 0, NULL, HFILL } },
		{ &hf_iv, { "IV", "les.iv", FT_BYTES, BASE_NONE, NULL, 0,
			    "Sequence number XOR the sender's mask", HFILL } },
		{ &hf_masked_l, { "Masked L", "les.masked_l", FT_UINT16, BASE_HEX,
				  NULL, 0, "L as sent: encrypted, read only with the "
				  "header-zone key", HFILL } },
		{ &hf_encrypted, { "Encrypted data", "les.encrypted", FT_BYTES,
				   BASE_NONE, NULL, 0, NULL, HFILL } },
		{ &hf_hz_ct, { "Header zone", "les.hz", FT_BYTES, BASE_NONE, NULL, 0,
			       NULL, HFILL } },
		{ &hf_icv2, { "ICV2", "les.icv2", FT_BYTES, BASE_NONE, NULL, 0,
			      "The header zone's tag (verified)", HFILL } },
		{ &hf_opened_by, { "Opened with", "les.key_role", FT_UINT8, BASE_DEC,
				   VALS(role_names), 0, "The blob role that opened the "
				   "header zone", HFILL } },
		{ &hf_l, { "L", "les.l", FT_UINT16, BASE_DEC, NULL, 0,
			   "Length of the headers in the header zone", HFILL } },
		{ &hf_nh, { "Next header", "les.nh", FT_UINT8, BASE_DEC | BASE_EXT_STRING,
			    &ipproto_val_ext, 0, NULL, HFILL } },
		{ &hf_flags, { "Flags", "les.flags", FT_UINT8, BASE_HEX, NULL, 0,
			       NULL, HFILL } },
		{ &hf_flag_ho, { "Header only (PEP-origin)", "les.flags.header_only",
				 FT_BOOLEAN, 8, NULL, LES_FLAG_HEADER_ONLY, NULL, HFILL } },
		{ &hf_flag_om, { "Options moved", "les.flags.options_moved",
				 FT_BOOLEAN, 8, NULL, LES_FLAG_OPTIONS_MOVED, NULL, HFILL } },
		{ &hf_flag_um, { "Urgent pointer moved", "les.flags.urgent_moved",
				 FT_BOOLEAN, 8, NULL, LES_FLAG_URGENT_MOVED, NULL, HFILL } },
		{ &hf_epoch, { "Epoch", "les.epoch", FT_UINT16, BASE_DEC, NULL, 0,
			       "Low 16 bits of the sequence number's high half (ESN)",
			       HFILL } },
		{ &hf_headers, { "Headers", "les.headers", FT_BYTES, BASE_NONE, NULL, 0,
				 NULL, HFILL } },
		{ &hf_tcp_payload_len, { "TCP payload length (in the checksum field)",
					 "les.tcp_payload_len", FT_UINT16, BASE_DEC,
					 NULL, 0, NULL, HFILL } },
		{ &hf_pz_ct, { "Payload zone", "les.pz", FT_BYTES, BASE_NONE, NULL, 0,
			       NULL, HFILL } },
		{ &hf_icv1, { "ICV1", "les.icv1", FT_BYTES, BASE_NONE, NULL, 0,
			      "The payload zone's tag", HFILL } },
		{ &hf_esn, { "ESN", "les.esn", FT_BOOLEAN, BASE_NONE, NULL, 0,
			     "The payload zone authenticated with the sequence "
			     "number's high half", HFILL } },
		{ &hf_csum, { "TCP checksum", "les.pz.checksum", FT_UINT16, BASE_HEX,
			      NULL, 0, NULL, HFILL } },
		{ &hf_moved, { "Moved bytes", "les.pz.moved", FT_BYTES, BASE_NONE,
			       NULL, 0, "TCP options and urgent pointer the header "
			       "zone left out", HFILL } },
		{ &hf_padding, { "Padding", "les.pz.padding", FT_BYTES, BASE_NONE,
				 NULL, 0, NULL, HFILL } },
		{ &hf_pad_len, { "Pad length", "les.pz.pad_len", FT_UINT8, BASE_DEC,
				 NULL, 0, NULL, HFILL } },
		{ &hf_pz_nh, { "Next header", "les.pz.nh", FT_UINT8,
			       BASE_DEC | BASE_EXT_STRING, &ipproto_val_ext, 0, NULL,
			       HFILL } },
	};
	static gint *ett[] = { &ett_les, &ett_hz, &ett_pz, &ett_flags };
	static ei_register_info ei[] = {
		{ &ei_icv2_bad, { "les.icv2_bad", PI_CHECKSUM, PI_ERROR,
				  "The header zone does not authenticate (ICV2)",
				  EXPFILL } },
		{ &ei_icv1_bad, { "les.icv1_bad", PI_CHECKSUM, PI_ERROR,
				  "The payload zone does not authenticate with K1 "
				  "(ICV1): the endpoint drops this packet", EXPFILL } },
		{ &ei_malformed, { "les.malformed", PI_MALFORMED, PI_ERROR,
				   "Malformed LES packet", EXPFILL } },
		{ &ei_policy, { "les.policy", PI_SECURITY, PI_ERROR,
				"A PEP-origin packet the endpoint refuses", EXPFILL } },
		{ &ei_truncated, { "les.truncated", PI_MALFORMED, PI_WARN,
				   "Captured only in part: not opened", EXPFILL } },
	};
	module_t *module;
	expert_module_t *expert;

	proto_les = proto_register_protocol("Layered ESP", "LES", "les");
	proto_register_field_array(proto_les, hf, array_length(hf));
	proto_register_subtree_array(ett, array_length(ett));
	expert = expert_register_protocol(proto_les);
	expert_register_field_array(expert, ei, array_length(ei));

	module = prefs_register_protocol(proto_les, NULL);
	les_keys_register(module);
	prefs_register_bool_preference(module, "all_esp",
				       "Show every ESP packet as LES",
				       "Packets of SAs not in the table, too, as an "
				       "outsider sees LES: SPI, sequence number, IV, "
				       "masked L, the rest encrypted", &pref_all_esp);
}

void proto_reg_handoff_les(void)
{
	dissector_handle_t les_handle, les_udp_handle;
	dissector_table_t udp_port = find_dissector_table("udp.port");

	ip_proto_table = find_dissector_table("ip.proto");
	esp_handle = find_dissector("esp");
	udp4500_handle = dissector_get_uint_handle(udp_port, 4500);
	les_handle = create_dissector_handle(dissect_les, proto_les);
	les_udp_handle = create_dissector_handle(dissect_les_udp, proto_les);
	dissector_add_uint("ip.proto", IP_PROTO_ESP, les_handle);
	if (udp4500_handle)
		dissector_add_uint("udp.port", 4500, les_udp_handle);
}
