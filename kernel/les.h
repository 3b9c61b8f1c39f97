/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Layered ESP: what the parts of les.ko share.
 */
#ifndef LES_H
#define LES_H

#include <linux/types.h>
#include <linux/rhashtable-types.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/xfrm.h>
#include <crypto/aead.h>
#include <crypto/aes.h>

#include "les_wire.h"

/* One LES SA: the keys of its zones and what it may do. */
struct les_sa {
	struct rhash_head node;		/* in the SA table, keyed by @x */
	struct rcu_head rcu;
	struct xfrm_state *x;
	enum les_role role;
	unsigned int dirs;		/* LES_DIR_IN / LES_DIR_OUT */
	u32 pep_id;
	u8 key_len;			/* AES key bytes of the zones */
	u8 blob_flags;			/* LES_BLOB_F_* */
	/* Header zone: derived from K2, or from the PEP's KO root. */
	struct crypto_aead *hz_aead;
	u8 hz_salt[LES_SALT_LEN];
	/* The same key as a block cipher: it unmasks L (protocol.md 3.1). */
	struct crypto_aes_ctx hz_aes;
	/* Payload zone: derived from K1, endpoint SAs only. */
	struct crypto_aead *pz_aead;
	u8 pz_salt[LES_SALT_LEN];
	/* R: this state's IV mask, never shared with another state (2.2). */
	u64 iv_mask;
	/* pep-origin-out: in its namespace's list (origin.c). */
	struct list_head origin_node;
	/* endpoint: KP, which its PEP-origin SAs' keys come from (sa_bind.c) */
	u8 kp[LES_KP_LEN];
	/* pep-origin-in: that endpoint SA, compared, never followed */
	const struct xfrm_state *parent;
	/*
	 * pep-view only, the others have none: the PEP's replay window, under
	 * x->lock (section 7); its ->size 0 until the first header zone
	 * (les_sa_replay()).
	 */
	struct les_replay replay[];
};

/* Per-packet crypto state, carried in skb->cb across async completion. */
struct les_skb_cb {
	struct xfrm_skb_cb xfrm;
	void *tmp;
};

#define LES_SKB_CB(skb) ((struct les_skb_cb *)&((skb)->cb[0]))

/* Bytes of UDP encapsulation (RFC 3948) between the IP and ESP headers. */
static inline unsigned int les_encap_len(const struct xfrm_state *x)
{
	return x->encap ? sizeof(struct udphdr) : 0;
}

/* slot.c: the ESP xfrm type slot */
int les_slot_take(void);
void les_slot_release(void);
bool les_slot_has_ipv6(void);
extern const struct xfrm_type les_sa_type;

/* pep.c: a pep-view SA came or went in @net */
int les_pep_key_add(struct net *net);
void les_pep_key_del(struct net *net);
/* origin.c: a pep-origin-out SA came or went */
void les_origin_sa_add(struct les_sa *sa);
void les_origin_sa_del(struct les_sa *sa);

/* sa.c */
int les_sa_init(struct xfrm_state *x, struct netlink_ext_ack *extack);
int les_sa_keys(struct les_sa *sa, const struct les_blob *blob, __be32 spi,
		struct netlink_ext_ack *extack);
void les_sa_free_keys(struct les_sa *sa);
void les_sa_destroy(struct xfrm_state *x);
struct les_sa *les_sa_get(const struct xfrm_state *x);
struct les_replay *les_sa_replay(struct les_sa *sa, const struct xfrm_state *x);
int les_sa_table_init(void);
void les_sa_table_exit(void);
void les_sa_walk_enter(struct rhashtable_iter *iter) __acquires(RCU);
struct les_sa *les_sa_walk_next(struct rhashtable_iter *iter);
void les_sa_walk_exit(struct rhashtable_iter *iter) __releases(RCU);

/* sa_bind.c: PEP-origin SAs live no longer than their endpoint SA */
struct xfrm_state *les_sa_bind(struct les_sa *sa, const struct les_blob *blob,
			       int *errp);
bool les_sa_bound(struct xfrm_state *parent);
void les_sa_unbind(const struct xfrm_state *parent);

/* kdf.c */
int les_hkdf_sha256(const u8 *salt, unsigned int salt_len,
		    const u8 *ikm, unsigned int ikm_len,
		    const u8 *info, unsigned int info_len,
		    u8 *okm, unsigned int okm_len);
int les_kdf_zone(const u8 *root, unsigned int key_len, u8 zone, __be32 spi,
		 u8 blob_flags, u8 *out);

/* output.c, input.c */
int les_output(struct xfrm_state *x, struct sk_buff *skb);
int les_input(struct xfrm_state *x, struct sk_buff *skb);

/* crypt.c: the zone AEAD operations of one packet */
enum les_step { LES_STEP_HZ, LES_STEP_PZ };

struct les_crypt {
	struct les_sa *sa;
	enum les_step step;
	unsigned int prefix_len;	/* payload zone AAD: 8, or 12 with ESN */
	bool prefix_in_skb;		/* no ESN: the prefix is the ESP header */
	unsigned int zone_off;		/* skb offset of the IV */
	unsigned int hz_len;		/* header zone plaintext: 6 + L */
	unsigned int pz_len;		/* payload zone plaintext; 0: header-only */
	int nfrags;
	int src_nfrags;
	/*
	 * Paged output (output.c): the payload zone is read from the skb's
	 * old pages, listed here, and written to the page that replaced them.
	 * Entries from src_pages_at on hold a page reference each.
	 */
	struct scatterlist *src_sg;
	unsigned int src_pages_at;
	u8 prefix[LES_AAD_PREFIX_MAX];	/* SPI || [seq hi] || seq lo */
	u8 iv[LES_IV_LEN];
	u8 *nonce;			/* salt || IV, aligned for the AEAD */
	struct aead_request *req;
	struct scatterlist *sg;		/* nfrags entries */
};

struct les_crypt *les_crypt_alloc(struct les_sa *sa, int nfrags,
				  int src_nfrags);
int les_crypt_pz_src(struct les_crypt *c, struct sk_buff *skb);
void les_crypt_free(struct les_crypt *c);
void les_crypt_set_zones(struct les_crypt *c, const u8 *esp,
			 unsigned int esp_off, const __be32 *seq_hi,
			 unsigned int hz_len, unsigned int pz_len);
int les_crypt_zone(struct les_crypt *c, struct sk_buff *skb, bool encrypt,
		   crypto_completion_t done);
unsigned int les_hz_peek_len(const struct les_sa *sa, const u8 *iv,
			     const u8 *hz);

/* stats.c */
enum les_stat {
	LES_STAT_OUT_PACKETS,
	LES_STAT_OUT_HEADER_ONLY,
	LES_STAT_OUT_ERRORS,
	LES_STAT_OUT_POLICY,
	LES_STAT_OUT_PAGED,
	LES_STAT_OUT_LINEARISED,
	LES_STAT_IN_PACKETS,
	LES_STAT_IN_HEADER_ONLY,
	LES_STAT_IN_MALFORMED,
	LES_STAT_IN_AUTH_FAILED,
	LES_STAT_IN_POLICY,
	LES_STAT_IN_ERRORS,
	/* PEP node (pep.c, flow.c) */
	LES_STAT_PEP_OPENED,
	LES_STAT_PEP_NO_KEY,
	LES_STAT_PEP_AUTH_FAILED,
	LES_STAT_PEP_MALFORMED,
	LES_STAT_PEP_NOT_TCP,
	LES_STAT_PEP_SKIPPED,
	LES_STAT_PEP_ERRORS,
	LES_STAT_PEP_FLOWS_NEW,
	LES_STAT_PEP_FLOWS_EXPIRED,
	LES_STAT_PEP_FLOWS_EVICTED,
	LES_STAT_PEP_TABLE_FULL,
	LES_STAT_PEP_BACKLOG_FULL,
	LES_STAT_PEP_KEY_EXPIRED,
	LES_STAT_PEP_OUTER_FRAGMENT,
	LES_STAT_PEP_GSO,
	LES_STAT_PEP_GSO_UNREAD,
	LES_STAT_PEP_REPLAY,
	LES_STAT_PEP_RST_OOW,
	/* acceleration engine (accel.c and its parts) */
	LES_STAT_ACCEL_FLOWS,		/* flow directions early-ACKed (late starts too) */
	LES_STAT_ACCEL_EARLY_ACKS,	/* ACKs sent on PEP-origin SAs */
	LES_STAT_ACCEL_EARLY_BYTES,	/* data ACKed early */
	LES_STAT_ACCEL_HOP_RETRANS,	/* held copies sent again (SACK, dupacks) */
	LES_STAT_ACCEL_HOP_TIMEOUTS,	/* ... by the retransmission timer */
	LES_STAT_ACCEL_HOP_SPURIOUS,	/* resends the receiver had before */
	LES_STAT_ACCEL_ABSORBED_ACKS,	/* receiver ACKs the sender had already */
	LES_STAT_ACCEL_ABSORBED_DATA,	/* sender retransmissions of held data */
	LES_STAT_ACCEL_FAIL_OPEN,	/* data forwarded unheld: limits, holes */
	LES_STAT_ACCEL_WINDOW_HELD,	/* packets held past a receiver's window */
	LES_STAT_ACCEL_THINNED,		/* receiver ACKs a newer one replaced */
	LES_STAT_ACCEL_WINDOW_PROBES,	/* receivers probed for their window */
	LES_STAT_ACCEL_DUP_HELD,	/* resent copies of packets held here */
	LES_STAT_ACCEL_DUP_ABSORBED,	/* copies of packets absorbed here */
	LES_STAT_ACCEL_LATE_STARTS,	/* flow directions taken mid-transfer */
	LES_STAT_ACCEL_WINDOW_SHORT,	/* not taken: replay window too short */
	LES_STAT_ACCEL_GUARD_WAITS,	/* an SA held back for a copy's resend */
	LES_STAT_ACCEL_GUARD_EXPIRED,	/* ... for too long: the flow let go */
	LES_STAT_ACCEL_TS_BEHIND,	/* copies older than a resend below them */
	LES_STAT_ACCEL_KEYS_DRAINED,	/* keys that went, read on for held data */
	LES_STAT_ACCEL_DRAIN_TIMEOUTS,	/* flows that let go when the drain ended */
	LES_STAT_ACCEL_LOST,		/* bytes ACKed early, let go undelivered */
	LES_STAT_ACCEL_RESET_BYTES,	/* ... whose receiver reset the connection */
	LES_STAT_ACCEL_SACK_RENEGING,	/* SACK marks taken back: reneging */
	LES_STAT_ACCEL_HOP_DROPS,	/* passing packets over a lane's or buffer's bound */
	LES_STAT_ACCEL_OVER_DROPS,	/* past a receiver's window, over a bound */
	LES_STAT_ACCEL_ERRORS,		/* no memory, an ACK that could not go */
	LES_STAT_ACCEL_TICKS,		/* runs of the engine's tick */
	LES_STAT_ACCEL_TICK_FLOWS,	/* flows they timed */
	LES_STAT_ACCEL_TICK_US,		/* microseconds they held the flow table */
	LES_STAT_ACCEL_TICK_LATE_US,	/* microseconds they ran after they were due */
	LES_STAT_ACCEL_LATE,		/* times the tick ran too late to ACK early */
	LES_STAT_MAX
};

void les_stat_inc(struct net *net, enum les_stat item);
void les_stat_add(struct net *net, enum les_stat item, unsigned long n);
u64 les_stat_read(struct net *net, enum les_stat item);
const char *les_stat_name(enum les_stat item);
int les_stats_init(void);
void les_stats_exit(void);

/* selftest.c */
int les_selftest(void);

#endif /* LES_H */
