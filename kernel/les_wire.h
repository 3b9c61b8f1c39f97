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
#define LES_BLOB_VERSION	3
#define LES_BLOB_HDR_LEN	12	/* magic, version, role, key_len, flags, pep_id */
#define LES_SALT_LEN		4	/* GCM nonce salt after each AES key */
#define LES_KP_LEN		32	/* PEP-origin seed of an endpoint blob */
#define LES_BLOB_MAX_LEN	(LES_BLOB_HDR_LEN + 2 * (32 + LES_SALT_LEN) + LES_KP_LEN)

/* Blob flags. */
#define LES_BLOB_F_R2I		0x01	/* responder-to-initiator direction */
#define LES_BLOB_F_KNOWN	LES_BLOB_F_R2I

enum les_role {
	LES_ROLE_ENDPOINT	= 1,	/* K2, K1, KP: a tunnel endpoint's SA */
	LES_ROLE_PEP_VIEW	= 2,	/* K2 only: a PEP reading header zones */
	LES_ROLE_PEP_ORIGIN_IN	= 3,	/* endpoint receiving packets a PEP made */
	LES_ROLE_PEP_ORIGIN_OUT	= 4,	/* PEP sending header-only packets */
};

#define LES_ROLE_MAX		LES_ROLE_PEP_ORIGIN_OUT

/* Where an SA of a role may be used. */
#define LES_DIR_IN		0x1
#define LES_DIR_OUT		0x2

/*
 * A parsed blob.  A root is an AES key followed by its salt, key_len +
 * LES_SALT_LEN bytes; no root is used as a GCM key directly (section 2.1).
 */
struct les_blob {
	enum les_role role;
	unsigned int key_len;		/* 16, 24 or 32 */
	__u8 flags;			/* LES_BLOB_F_* */
	__u32 pep_id;			/* PEP-origin roles: which PEP */
	const __u8 *k2;			/* header zone root: endpoint, pep-view */
	const __u8 *k1;			/* payload zone root: endpoint */
	const __u8 *kp;			/* PEP-origin seed: endpoint */
	const __u8 *ko;			/* PEP-origin root: PEP-origin roles */
};

enum les_blob_err {
	LES_BLOB_OK = 0,
	LES_BLOB_ERR_SHORT,
	LES_BLOB_ERR_MAGIC,
	LES_BLOB_ERR_VERSION,
	LES_BLOB_ERR_ROLE,
	LES_BLOB_ERR_KEYLEN,
	LES_BLOB_ERR_FLAGS,
	LES_BLOB_ERR_PEP_ID,
	LES_BLOB_ERR_LENGTH,
	LES_BLOB_ERR_SAME_KEYS,
};

int les_blob_parse(const __u8 *buf, size_t len, struct les_blob *out);
const char *les_blob_strerror(int err);
size_t les_blob_len(enum les_role role, unsigned int key_len);
/*
 * Writes the blob @b describes (its role's material only); returns its
 * length, or 0 if @buf is too small or @b is not a valid blob.
 */
size_t les_blob_build(__u8 *buf, size_t size, const struct les_blob *b);
unsigned int les_role_dirs(enum les_role role);
const char *les_role_name(enum les_role role);
/* Every key that starts with the magic is an LES blob (valid or not). */
bool les_blob_is_les(const __u8 *key, size_t len);

/* ---- Key derivation (HKDF-SHA256, RFC 5869; sections 2.1 and 6) ------- */

#define LES_KDF_ZONE_SALT	"LES v3 zone"
#define LES_KDF_PEP_ORIGIN_SALT	"LES v3 pep-origin"
#define LES_ZONE_HEADER		0x48	/* 'H' */
#define LES_ZONE_PAYLOAD	0x50	/* 'P' */
#define LES_KDF_ZONE_INFO_LEN	6	/* zone, SPI, dir */
#define LES_KDF_PO_INFO_LEN	5	/* pep_id, dir */

/* info of a zone key: zone (1) || SPI (4, as on the wire) || dir (1). */
static inline void les_kdf_zone_info(__u8 *info, __u8 zone, const __u8 *spi,
				     __u8 blob_flags)
{
	info[0] = zone;
	info[1] = spi[0];
	info[2] = spi[1];
	info[3] = spi[2];
	info[4] = spi[3];
	info[5] = blob_flags & LES_BLOB_F_R2I;
}

/* info of a KO root: pep_id (4) || dir (1). */
static inline void les_kdf_po_info(__u8 *info, __u32 pep_id, __u8 blob_flags)
{
	info[0] = pep_id >> 24;
	info[1] = pep_id >> 16;
	info[2] = pep_id >> 8;
	info[3] = pep_id;
	info[4] = blob_flags & LES_BLOB_F_R2I;
}

/* ---- Packet layout (section 3) ---------------------------------------- */

/*
 *  0      4       8        16                                            22+L     38+L
 *  | SPI  | SeqLo | IV (8) | L (2) nh (1) flags (1) epoch (2) headers (L) | ICV2 (16) |
 *  | checksum (2) | payload | moved | padding | pad length | next header | ICV1 |
 *
 * The header zone plaintext starts with L, the next header, the flags and
 * the epoch (SeqHi's low 16 bits), all encrypted: L is read with one AES
 * block (les_hz_len_unmask).
 */
#define LES_ESP_HDR_LEN		8	/* SPI + sequence number */
#define LES_IV_LEN		8
#define LES_ICV_LEN		16
#define LES_NONCE_LEN		12	/* salt || IV */
#define LES_HZ_OFF		(LES_ESP_HDR_LEN + LES_IV_LEN)	/* 16 */
#define LES_HZ_DESC_LEN		6	/* L, next header, flags, epoch */
#define LES_HZ_NH		2	/* offsets in the header zone plaintext */
#define LES_HZ_FLAGS		3
#define LES_HZ_EPOCH		4
#define LES_HDRS_OFF		(LES_HZ_OFF + LES_HZ_DESC_LEN)	/* 22 */
/* Header zone AAD: SPI || SeqLo || IV, whatever the SA's ESN setting. */
#define LES_HZ_AAD_LEN		(LES_ESP_HDR_LEN + LES_IV_LEN)
/* Bytes before the inner headers once the ICV2 gap is counted: 38. */
#define LES_HEADER_LEN		(LES_HDRS_OFF + LES_ICV_LEN)
/* The payload zone's first field: the TCP checksum (section 4), or 0. */
#define LES_CSUM_LEN		2
/* The shortest packets: header-only with no header, and with a payload zone. */
#define LES_MIN_LEN		LES_HEADER_LEN
#define LES_MIN_FULL_LEN	(LES_HEADER_LEN + LES_CSUM_LEN + 2 + LES_ICV_LEN)
/* What LES adds to a packet without moved bytes (section 3.2): 58. */
#define LES_OVERHEAD		(LES_HEADER_LEN + LES_CSUM_LEN + 2 + LES_ICV_LEN)

/* Header zone flags. */
#define LES_HZF_HEADER_ONLY	0x01	/* no payload zone follows (PEP-origin) */
#define LES_HZF_OPTIONS_MOVED	0x02	/* TCP options in the residue */
#define LES_HZF_URGENT_MOVED	0x04	/* urgent pointer in the residue */
#define LES_HZF_KNOWN		0x07

/* Largest header zone (L); of a packet with a payload zone (IPv6 + TCP). */
#define LES_HDRS_MAX		512
#define LES_HDRS_SEALED_MAX	(40 + 60)
/* Moved bytes: TCP options, urgent pointer. */
#define LES_MOVED_MAX		(40 + 2)

/* Padding: a sender adds none, a receiver takes up to 255 (section 3). */
#define LES_PAD_MAX		255

/* Payload zone AAD prefix: SPI || [seq hi (ESN)] || seq lo (RFC 4303). */
#define LES_AAD_PREFIX_MAX	12

/* GCM's counter block of the first plaintext block: salt || IV || 2. */
#define LES_GCM_CTR_FIRST	2

/*
 * L from the first two ciphertext bytes of the header zone and the first
 * two bytes of AES(header zone key, salt || IV || 00000002).
 */
static inline unsigned int les_hz_len_unmask(const __u8 *ct, const __u8 *ks)
{
	return (unsigned int)(ct[0] ^ ks[0]) << 8 | (ct[1] ^ ks[1]);
}

/* The counter block whose encryption les_hz_len_unmask() needs. */
static inline void les_hz_ctr_block(__u8 *block, const __u8 *salt,
				    const __u8 *iv)
{
	unsigned int i;

	for (i = 0; i < LES_SALT_LEN; i++)
		block[i] = salt[i];
	for (i = 0; i < LES_IV_LEN; i++)
		block[LES_SALT_LEN + i] = iv[i];
	block[12] = 0;
	block[13] = 0;
	block[14] = 0;
	block[15] = LES_GCM_CTR_FIRST;
}

/* ---- What enters the header zone (section 4) ------------------------- */

#define LES_TCP_CSUM_OFF	16
#define LES_TCP_URG_OFF		18

/* What a sender puts in the header zone for a packet, or what it should. */
struct les_hz_plan {
	unsigned int len;	/* L: header bytes the zone carries */
	int tcp_off;		/* offset of the TCP header in them, or -1 */
	__u8 flags;		/* LES_HZF_OPTIONS_MOVED, LES_HZF_URGENT_MOVED */
	unsigned int moved_len;	/* bytes moved to the payload zone's end */
	__u16 payload_len;	/* TCP payload bytes: the zone's checksum field */
};

/*
 * les_hz_plan - which headers the header zone carries, and how
 * @nexthdr: the ESP next header
 * @buf, @avail: readable bytes from the first header on
 * @total: the bytes present: inner packet and any TFC padding
 * @plan: the result
 *
 * Returns 0, or the number of readable bytes needed when @avail is too
 * short (never more than LES_HDRS_SEALED_MAX).
 */
size_t les_hz_plan(__u8 nexthdr, const __u8 *buf, size_t avail, size_t total,
		   struct les_hz_plan *plan);

/*
 * les_hz_seal - the header zone's headers, checksum and moved bytes
 * @hdrs: the plan->len original header bytes
 * @hz: where the plan->len header zone bytes go (may be @hdrs itself)
 * @csum: the payload zone's checksum field (LES_CSUM_LEN bytes)
 * @moved: where the plan->moved_len moved bytes go
 */
void les_hz_seal(const struct les_hz_plan *plan, const __u8 *hdrs, __u8 *hz,
		 __u8 *csum, __u8 *moved);

/*
 * les_hz_moved_len - moved bytes a received header zone announces
 * Returns their number, or -1 if @flags are impossible for these headers.
 */
int les_hz_moved_len(__u8 nexthdr, __u8 flags, const __u8 *hdrs, size_t len);

/* Put the checksum and the moved bytes back into the headers, in place. */
void les_hz_restore(__u8 nexthdr, __u8 flags, __u8 *hdrs, size_t len,
		    const __u8 *csum, const __u8 *moved);

/* ---- Header-chain walk of header-only packets (section 5) ------------- */

/* What the header-chain walk found. */
struct les_chain {
	unsigned int len;	/* bytes of headers */
	int l4_off;		/* offset of the transport header, or -1 */
	__u8 l4_proto;		/* its protocol (valid when l4_off >= 0) */
	bool fragment;		/* an inner non-first fragment */
	bool fragmented;	/* any inner fragment, the first one too */
};

/*
 * les_hdr_chain - walk the IP, extension and transport headers
 * Returns 0, or the number of readable bytes needed when @avail is too
 * short.  The chain never exceeds @total or LES_HDRS_MAX.
 */
size_t les_hdr_chain(__u8 nexthdr, const __u8 *buf, size_t avail,
		     size_t total, struct les_chain *chain);

/* ---- The PEP's replay window (section 7) ------------------------------ */

#define LES_REPLAY_MIN		64
#define LES_REPLAY_MAX		1024
/* As far back as an endpoint's xfrm window reaches (XFRMA_REPLAY_ESN_MAX). */
#define LES_ABSORBED_MAX	4096

struct les_replay {
	__u64 top;		/* highest sequence number accepted */
	unsigned int size;	/* window, packets: LES_REPLAY_MIN..MAX */
	bool any;		/* a packet was accepted */
	__u32 bits[LES_REPLAY_MAX / 32];	/* bit (seq % MAX): seen */
	__u32 absorbed[LES_ABSORBED_MAX / 32];	/* seen, and dropped by the PEP */
};

void les_replay_init(struct les_replay *r, unsigned int size);
/*
 * The 64-bit sequence number of a header zone: @seq_lo from the ESP header,
 * SeqHi from @epoch (its low 16 bits) and the window (section 7).  Returns
 * a number les_replay_check() refuses if it would come before 0.
 */
__u64 les_replay_seq(const struct les_replay *r, __u16 epoch, __u32 seq_lo);
/* May @seq be accepted (not seen, not older than the window)? */
bool les_replay_check(const struct les_replay *r, __u64 seq);
/* Mark @seq seen: only after its ICV verified. */
void les_replay_advance(struct les_replay *r, __u64 seq);
/*
 * Mark @seq, seen, as one the PEP dropped: no endpoint has it, so its
 * xfrm would take a copy.  Remembered for the LES_ABSORBED_MAX numbers up
 * to the newest, whatever the window: as long as any endpoint's window
 * could take it.
 */
void les_replay_absorb(struct les_replay *r, __u64 seq);
/* Is @seq one les_replay_absorb() marked? */
bool les_replay_absorbed(const struct les_replay *r, __u64 seq);

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
	LES_PO_OPTIONS,		/* IP options, extension headers, TCP options */
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
	/* TCP payload bytes: the header zone's checksum field (section 4). */
	unsigned int payload_len;
};

enum les_hz_verdict {
	LES_HZ_TCP = 0,
	LES_HZ_NOT_TCP,		/* no headers (L = 0): not TCP, or not plain */
	LES_HZ_MALFORMED,	/* headers that no LES sender writes */
};

/*
 * les_hz_tcp - parse the headers of an opened header zone
 * @nexthdr, @hdrs, @len: the header zone's next header and headers
 * @seg: the result, valid when LES_HZ_TCP is returned
 *
 * Headers that section 4 would not have put in a header zone, as they
 * stand, are LES_HZ_MALFORMED.
 */
int les_hz_tcp(__u8 nexthdr, const __u8 *hdrs, size_t len,
	       struct les_tcp_seg *seg);

/* ---- Packets a PEP makes: pure ACKs (docs/accel.md 6) ---------------- */

/*
 * A pure TCP ACK, as a PEP sends it on a PEP-origin SA in the name of one
 * endpoint.  Addresses are those of the packet (inner in tunnel mode, the
 * endpoints' own in transport mode); numbers in host order.
 */
struct les_ack_desc {
	__u8 family;		/* 4 or 6 */
	__u8 saddr[16], daddr[16];
	__u16 sport, dport;
	__u32 seq, ack;
	__u16 win;		/* the window field, already scaled */
	__u8 flags;		/* LES_TCP_ACK, with ECE or CWR at most */
	bool has_ts;
	__u32 tsval, tsecr;
	__u8 sack_n;		/* SACK blocks, at most 3 beside timestamps */
	__u32 sack[2 * LES_SACK_MAX];
};

/* The longest ACK: IPv6, TCP with timestamps and 3 SACK blocks. */
#define LES_ACK_MAX_LEN		(40 + 20 + 40)

/*
 * les_ack_build - write the packet @d describes, checksums set
 * @ip: with its IP header (tunnel mode), or the TCP segment alone
 * (transport mode, whose checksum still covers @d's addresses)
 * Returns its length, or 0 if @d is not an ACK a PEP may send
 * (les_pep_origin_check() would refuse it) or @size is too small.
 */
size_t les_ack_build(const struct les_ack_desc *d, bool ip, __u8 *buf,
		     size_t size);

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
	p[0] = (v >> 8) & 0xff;
	p[1] = v & 0xff;
}

static inline void les_put_be32(__u8 *p, __u32 v)
{
	p[0] = (v >> 24) & 0xff;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

#endif /* LES_WIRE_H */
