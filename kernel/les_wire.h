/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Layered ESP wire format: the one source of truth for the kernel module,
 * lesctl and the user-space fuzz/unit tests.  docs/protocol.md explains
 * every constant here; keep the two in step.
 *
 * This header and les_wire.c are "pure": no allocation, no skb, no crypto.
 * They compile in the kernel and in user space alike.
 */
#ifndef LES_WIRE_H
#define LES_WIRE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <linux/types.h>
#endif

#define LES_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- Key blob (the "key" of an rfc4106(gcm(aes)) xfrm SA) ------------ */

#define LES_BLOB_MAGIC		"LESK"
#define LES_BLOB_MAGIC_LEN	4
#define LES_BLOB_VERSION	1
#define LES_BLOB_HDR_LEN	12	/* magic, version, role, key_len, flags, pep_id */
#define LES_SALT_LEN		4	/* RFC 4106 salt */

enum les_role {
	LES_ROLE_ENDPOINT	= 1,	/* K2 and K1: a tunnel endpoint's SA */
	LES_ROLE_PEP_VIEW	= 2,	/* K2 only: a PEP reading header zones */
	LES_ROLE_PEP_ORIGIN_IN	= 3,	/* endpoint receiving packets a PEP made */
	LES_ROLE_PEP_ORIGIN_OUT	= 4,	/* PEP sending header-only packets */
};

#define LES_ROLE_MAX		LES_ROLE_PEP_ORIGIN_OUT

/* Where an SA of a role may be used. */
#define LES_DIR_IN		0x1
#define LES_DIR_OUT		0x2

/* Key material of one zone: an AES key and the RFC 4106 salt after it. */
struct les_zone_key {
	const __u8 *key;		/* key_len bytes, salt follows */
	unsigned int key_len;		/* 16, 24 or 32 */
	const __u8 *salt;		/* LES_SALT_LEN bytes */
};

struct les_blob {
	enum les_role role;
	__u32 pep_id;			/* PEP-origin roles: which PEP */
	struct les_zone_key k2;		/* header zone (every role) */
	struct les_zone_key k1;		/* payload zone (endpoint only) */
};

enum les_blob_err {
	LES_BLOB_OK = 0,
	LES_BLOB_ERR_SHORT,
	LES_BLOB_ERR_MAGIC,
	LES_BLOB_ERR_VERSION,
	LES_BLOB_ERR_ROLE,
	LES_BLOB_ERR_KEYLEN,
	LES_BLOB_ERR_FLAGS,
	LES_BLOB_ERR_LENGTH,
	LES_BLOB_ERR_PEP_ID,
};

int les_blob_parse(const __u8 *buf, size_t len, struct les_blob *out);
const char *les_blob_strerror(int err);
size_t les_blob_len(enum les_role role, unsigned int key_len);
/* Writes a blob; returns its length or 0 if buf is too small or args bad. */
size_t les_blob_build(__u8 *buf, size_t size, enum les_role role,
		      unsigned int key_len, __u32 pep_id,
		      const __u8 *k2_and_salt, const __u8 *k1_and_salt);
unsigned int les_role_dirs(enum les_role role);
const char *les_role_name(enum les_role role);
/* A blob is recognised by magic and by a length no rfc4106 key can have. */
bool les_blob_is_les(const __u8 *key, size_t len);

/* ---- Packet layout -------------------------------------------------- */

/*
 *  0      4      8             16    18                 18+hzlen   +16
 *  | SPI  | Seq  | IV (8)      |hzlen| header zone (K2)  | ICV2 (16) |
 *  | payload zone (K1): payload | pad | padlen | nexthdr | ICV1 (16) |
 *
 * The header zone plaintext starts with two bytes of its own:
 *   next header (the protocol of the first header in the zone) and flags.
 */
#define LES_ESP_HDR_LEN		8	/* SPI + sequence number */
#define LES_IV_LEN		8
#define LES_HZLEN_LEN		2
#define LES_HZ_DESC_LEN		2	/* next header, flags */
#define LES_ICV_LEN		16
#define LES_NONCE_LEN		12	/* salt || IV */
#define LES_HZ_OFF		(LES_ESP_HDR_LEN + LES_IV_LEN + LES_HZLEN_LEN)
#define LES_HDRS_OFF		(LES_HZ_OFF + LES_HZ_DESC_LEN)	/* 20 */
/* Bytes before the inner headers once the ICV2 gap is counted: 36. */
#define LES_HEADER_LEN		(LES_HDRS_OFF + LES_ICV_LEN)
/* Bytes LES adds to ESP with the same AEAD, any packet: 20. */
#define LES_OVERHEAD_VS_ESP	(LES_HZLEN_LEN + LES_HZ_DESC_LEN + LES_ICV_LEN)

/* Header zone flags. */
#define LES_HZF_HEADER_ONLY	0x01	/* no payload zone follows (PEP-origin) */
#define LES_HZF_KNOWN		LES_HZF_HEADER_ONLY

/* Largest header chain carried in the header zone. */
#define LES_HDRS_MAX		512

/* Padding: the ESP payload after the IV ends on a 4-byte boundary. */
#define LES_ALIGN		4

/* AAD prefix: SPI || [seq hi (ESN)] || seq lo, as RFC 4303 builds it. */
#define LES_AAD_PREFIX_MAX	12

/* What the header-chain walk found. */
struct les_chain {
	unsigned int len;	/* bytes of headers the header zone carries */
	int l4_off;		/* offset of the transport header, or -1 */
	__u8 l4_proto;		/* its protocol (valid when l4_off >= 0) */
	bool fragment;		/* an inner non-first fragment */
	bool fragmented;	/* any inner fragment, the first one too */
};

/*
 * les_hdr_chain - which headers the header zone carries
 * @nexthdr: protocol of the first header (the ESP next header)
 * @buf, @avail: readable bytes from the first header on
 * @total: bytes from the first header to the end of the packet
 * @chain: the result
 *
 * Returns 0, or the number of readable bytes the walk needs when @avail is
 * too short (make that many readable and call again).  The chain never
 * exceeds @total or LES_HDRS_MAX; a header that is truncated, malformed or
 * would cross that limit ends the chain before it.
 */
size_t les_hdr_chain(__u8 nexthdr, const __u8 *buf, size_t avail,
		     size_t total, struct les_chain *chain);

/* Payload-zone padding for @hdrs header bytes and @payload bytes after them. */
static inline unsigned int les_pad_len(size_t hdrs, size_t payload)
{
	return (LES_ALIGN - ((hdrs + payload + 2) % LES_ALIGN)) % LES_ALIGN;
}

/* PEP-origin key derivation (HKDF-SHA256, RFC 5869). */
#define LES_KDF_PEP_ORIGIN_SALT	"LES v1 pep-origin"
#define LES_KDF_INFO_LEN	8	/* SPI (4, network order) || pep_id (4, BE) */

/* TCP flags a PEP-origin packet may carry; ACK is required. */
#define LES_TCP_FIN	0x01
#define LES_TCP_SYN	0x02
#define LES_TCP_RST	0x04
#define LES_TCP_PSH	0x08
#define LES_TCP_ACK	0x10
#define LES_TCP_URG	0x20
#define LES_TCP_ECE	0x40
#define LES_TCP_CWR	0x80
#define LES_PEP_ORIGIN_TCP_OK	(LES_TCP_ACK | LES_TCP_ECE | LES_TCP_CWR)

enum les_po_verdict {
	LES_PO_OK = 0,
	LES_PO_NOT_TCP,
	LES_PO_PAYLOAD,
	LES_PO_FLAGS,
	LES_PO_MALFORMED,
};

/*
 * les_pep_origin_check - may an endpoint accept this header-only packet?
 * @nexthdr, @hdrs, @len: the header zone's next header and headers
 * @tunnel: tunnel mode (headers start with an inner IP header)
 */
int les_pep_origin_check(__u8 nexthdr, const __u8 *hdrs, size_t len,
			 bool tunnel);

/* ---- What a PEP reads from a header zone ----------------------------- */

#define LES_TCPOPT_EOL		0
#define LES_TCPOPT_NOP		1
#define LES_TCPOPT_MSS		2
#define LES_TCPOPT_WSCALE	3
#define LES_TCPOPT_SACK_PERM	4
#define LES_TCPOPT_SACK		5
#define LES_TCPOPT_TS		8
#define LES_SACK_MAX		4	/* blocks a 40-byte option space holds */
#define LES_WSCALE_NONE		0xff

/* A TCP segment as its header zone shows it. */
struct les_tcp_seg {
	__u8 family;		/* inner IP version (4 or 6); 0 in transport mode */
	__u8 saddr[16], daddr[16];	/* inner addresses (tunnel mode) */
	__u16 sport, dport;
	__u32 seq, ack;
	__u16 win;		/* as sent, before window scaling */
	__u8 flags;		/* LES_TCP_* */
	__u8 wscale;		/* LES_WSCALE_NONE when absent */
	__u16 mss;		/* 0 when absent */
	bool sack_perm;
	__u8 sack_n;		/* SACK blocks carried */
	__u32 sack[2 * LES_SACK_MAX];	/* left, right edge pairs */
	bool has_ts;
	__u32 tsval, tsecr;
	/*
	 * TCP payload bytes, from the inner IP length: -1 in transport mode,
	 * where only the payload zone (opaque to a PEP) knows it.
	 */
	int payload_len;
};

enum les_hz_verdict {
	LES_HZ_TCP = 0,
	LES_HZ_NOT_TCP,		/* another transport, or none */
	LES_HZ_FRAGMENT,	/* an inner IP fragment */
	LES_HZ_MALFORMED,	/* headers that no LES sender writes */
};

/*
 * les_hz_tcp - parse the headers of an opened header zone
 * @nexthdr, @hdrs, @len: the header zone's next header and headers
 * @tunnel: tunnel mode (headers start with an inner IP header)
 * @seg: the result, valid when LES_HZ_TCP is returned
 */
int les_hz_tcp(__u8 nexthdr, const __u8 *hdrs, size_t len, bool tunnel,
	       struct les_tcp_seg *seg);

/* Byte helpers usable on unaligned wire data. */
static inline __u16 les_get_be16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static inline __u32 les_get_be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static inline void les_put_be16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void les_put_be32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

#endif /* LES_WIRE_H */
