// SPDX-License-Identifier: GPL-2.0
/*
 * The PEP node's eyes: a netfilter hook on the forwarding path that copies
 * out the header zone of LES packets it has a PEP key for, and an opener
 * that opens the copies and tells the flow table what it read.
 *
 * PEP keys are xfrm states with a pep-view blob and the namespace's PEP
 * mark (docs/pep.md): the operator sees them with "ip xfrm state", xfrm
 * expires them with their lifetime, and normal input, whose packets carry
 * no such mark, never matches them.  The hook never changes a packet
 * (BRIEF D3) and accepts it whatever it holds, a forged header zone
 * included.
 *
 * Since nothing the PEP reads changes a packet's fate, the AEAD call is
 * not made on the forwarding path: one work item per namespace opens the
 * queued copies in order, on the namespace's CPU (les_pep_work()).
 * Forwarding pays a lookup, a copy and a list insertion (docs/benchmarks.md
 * has what that is worth).  The queue is bounded: when the opener falls
 * that far behind, header zones go unread and counted, never packets.
 */
#include <linux/cpumask.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/netfilter_bridge.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/sched/isolation.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <crypto/aead.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ipv6.h>
#include <net/netns/generic.h>
#include <net/net_namespace.h>
#include <net/netfilter/nf_conntrack.h>
#include <net/netfilter/ipv4/nf_defrag_ipv4.h>
#include <net/netfilter/ipv6/nf_defrag_ipv6.h>

#include "les.h"
#include "compat.h"
#include "pep.h"

/*
 * After the filter and security tables: the hook sees what is really
 * forwarded, and nothing a firewall dropped.
 */
#define LES_PEP_HOOK_PRIORITY	(NF_IP_PRI_SECURITY + 1)

static bool pep_hook = true;
module_param(pep_hook, bool, 0444);
MODULE_PARM_DESC(pep_hook, "Start the PEP hook in every network namespace (default on)");

static unsigned int les_pep_net_id __read_mostly;

struct les_pep_net *les_pep_net(struct net *net)
{
	return net_generic(net, les_pep_net_id);
}

/*
 * A PEP reads whole ESP packets.  While it holds a key its namespace
 * reassembles outer fragments before FORWARD, as conntrack does, and
 * forwarding fragments them again no larger than they came (frag_max_size).
 * Else a hop that fragments would have every packet pass unread: one past
 * its receiver's window, and the far PEP's resends of what it held are
 * replays there.  The users are counted per namespace by nf_defrag.
 */
static int les_pep_defrag_get(struct net *net)
{
	int err;

	err = IS_ENABLED(CONFIG_NF_DEFRAG_IPV4) ? nf_defrag_ipv4_enable(net) : 0;
	if (err)
		return err;
	err = IS_ENABLED(CONFIG_NF_DEFRAG_IPV6) ? nf_defrag_ipv6_enable(net) : 0;
	if (err && IS_ENABLED(CONFIG_NF_DEFRAG_IPV4))
		nf_defrag_ipv4_disable(net);
	return err;
}

static void les_pep_defrag_put(struct net *net)
{
	/*
	 * A namespace on its way out (its SAs destroyed by xfrm's GC, which
	 * its cleanup does not wait for) has nf_defrag's own exit unhook,
	 * unlocked: a disable racing it would unhook twice.
	 */
	if (!maybe_get_net(net))
		return;
	if (IS_ENABLED(CONFIG_NF_DEFRAG_IPV6))
		nf_defrag_ipv6_disable(net);
	if (IS_ENABLED(CONFIG_NF_DEFRAG_IPV4))
		nf_defrag_ipv4_disable(net);
	put_net(net);
}

/*
 * May a namespace's opener and tick run on @cpu: online, and one the
 * kernel's own unbound work may use (not isolated: isolcpus=, nohz_full=)?
 * Stable while preemption is off: a CPU goes offline in stop_machine().
 */
static bool les_pep_cpu_ok(unsigned int cpu)
{
	return cpu < nr_cpu_ids && cpu_online(cpu) &&
	       housekeeping_cpu(cpu, HK_TYPE_WQ) &&
	       housekeeping_cpu(cpu, HK_TYPE_DOMAIN);
}

/*
 * The @nth CPU that may run a namespace's work, counting round them, or
 * WORK_CPU_UNBOUND if there is none.  Preemption off.
 */
static int les_pep_nth_cpu(unsigned int nth)
{
	unsigned int n = 0, cpu;

	for_each_online_cpu(cpu)
		n += les_pep_cpu_ok(cpu);
	if (!n)
		return WORK_CPU_UNBOUND;
	nth %= n;
	for_each_online_cpu(cpu)
		if (les_pep_cpu_ok(cpu) && !nth--)
			return cpu;
	return WORK_CPU_UNBOUND;
}

/*
 * A namespace's CPU, picked once, at its first PEP key: the next one round
 * those that may run it, so the PEPs of a host's namespaces are spread.
 */
static void les_pep_pick_cpu(struct les_pep_net *pn)
{
	static atomic_t next = ATOMIC_INIT(0);
	int cpu;

	if (READ_ONCE(pn->cpu) != WORK_CPU_UNBOUND)
		return;
	preempt_disable();
	cpu = les_pep_nth_cpu(atomic_inc_return(&next));
	preempt_enable();
	cmpxchg(&pn->cpu, WORK_CPU_UNBOUND, cpu);
}

int les_pep_key_add(struct net *net)
{
	struct les_pep_net *pn = les_pep_net(net);
	int err = les_pep_defrag_get(net);

	if (err)
		return err;
	les_pep_pick_cpu(pn);
	atomic_inc(&pn->keys);
	return 0;
}

void les_pep_key_del(struct net *net)
{
	atomic_dec(&les_pep_net(net)->keys);
	les_pep_defrag_put(net);
}

/*
 * A namespace other than the initial one (a container, a user namespace's
 * root) gets at most what the initial namespace allows: the kernel memory
 * its PEP may take is the host's to bound.
 */
unsigned int les_pep_limit(unsigned int own, unsigned int init_net_value)
{
	return min(own, init_net_value);
}

/* Where the packet's ESP header is, and what the outer header says. */
struct les_pep_outer {
	unsigned short family;
	xfrm_address_t saddr, daddr;
	unsigned int esp_off;
	unsigned int esp_len;		/* as its receiver reads it */
	bool udp;			/* ESP in UDP (RFC 3948) */
	bool udp_csum;			/* whose checksum is to be checked */
};

static struct workqueue_struct *les_pep_wq;

/*
 * One header zone to open.  Everything the result needs is copied out of
 * the skb by the hook, so the packet goes on its way at once and the
 * opener works on the copy when the skb is long gone.
 */
struct les_pep_op {
	struct list_head node;		/* on les_pep_net.backlog */
	struct les_pep_net *pn;
	struct xfrm_state *x;		/* held until the op ends */
	struct les_sa *sa;		/* x's, alive while x is held */
	ktime_t seen;			/* when the packet went through */
	/*
	 * Accelerating (docs/accel.md): the packet itself, taken from the
	 * forwarding path until the engine has read it; and whether it
	 * leaves onto the satellite hop.
	 */
	struct sk_buff *skb;
	bool to_hop;
	bool draining;			/* @x went: read for held data (drain.c) */
	struct les_pep_outer outer;
	unsigned int esp_len, hz_len;	/* hz_len: 6 + L */
	unsigned int charge;		/* in les_pep_net.backlog_bytes */
	u8 nonce[LES_NONCE_LEN];
	/*
	 * The ESP packet, reordered as the AEAD reads it: the header zone's
	 * AAD (SPI, SeqLo, IV, then all that follows ICV2), the zone, ICV2.
	 */
	u8 buf[];
};

/* Where the header zone sits in @op's copy: after the whole AAD. */
static u8 *les_pep_op_hz(const struct les_pep_op *op)
{
	return (u8 *)op->buf + op->esp_len - op->hz_len - LES_ICV_LEN;
}

/* What the opened header zone says, into @pkt; 0 or the counter of why not. */
static int les_pep_parse(const struct les_pep_op *op, struct les_pep_pkt *pkt)
{
	const u8 *hz = les_pep_op_hz(op);
	bool tunnel = op->x->props.mode == XFRM_MODE_TUNNEL;
	u8 nexthdr = hz[LES_HZ_NH], flags = hz[LES_HZ_FLAGS];

	/* Under K2 only endpoints seal; they never set HEADER_ONLY. */
	if (flags & ~(LES_HZF_OPTIONS_MOVED | LES_HZF_URGENT_MOVED))
		return LES_STAT_PEP_MALFORMED;
	/* Inner IP headers in tunnel mode, TCP first in transport mode. */
	if (tunnel ? nexthdr == IPPROTO_TCP :
		     nexthdr == IPPROTO_IPIP || nexthdr == IPPROTO_IPV6)
		return LES_STAT_PEP_NOT_TCP;
	switch (les_hz_tcp(nexthdr, hz + LES_HZ_DESC_LEN,
			   op->hz_len - LES_HZ_DESC_LEN, &pkt->tcp)) {
	case LES_HZ_TCP:
		break;
	case LES_HZ_NOT_TCP:
		return LES_STAT_PEP_NOT_TCP;
	default:
		return LES_STAT_PEP_MALFORMED;
	}

	if (pkt->tcp.family) {
		unsigned int alen = pkt->tcp.family == 4 ? 4 : 16;

		pkt->family = pkt->tcp.family == 4 ? AF_INET : AF_INET6;
		memset(&pkt->saddr, 0, sizeof(pkt->saddr));
		memset(&pkt->daddr, 0, sizeof(pkt->daddr));
		memcpy(&pkt->saddr, pkt->tcp.saddr, alen);
		memcpy(&pkt->daddr, pkt->tcp.daddr, alen);
	} else {
		/* Transport mode: the addresses are the outer ones. */
		pkt->family = op->outer.family;
		pkt->saddr = op->outer.saddr;
		pkt->daddr = op->outer.daddr;
	}
	pkt->payload = pkt->tcp.payload_len;
	pkt->spi = ntohl(op->x->id.spi);
	pkt->seen = op->seen;
	return 0;
}

/* The engine's part of a packet the hook took (flow table lock held). */
struct les_pep_accel_arg {
	struct les_pep_op *op;
	const struct les_pep_pkt *pkt;
	struct les_accel_todo *todo;
};

static void les_pep_accel(struct les_flow *f, unsigned int from, void *arg)
{
	struct les_pep_accel_arg *a = arg;
	struct les_pep_op *op = a->op;

	if (!f) {
		/*
		 * A SYN (or SYN-ACK) the table had no memory for, while
		 * accelerating: dropped, it comes again.  Unseen, its flow's
		 * window scale would be unknown here (receiver.c).
		 */
		if ((a->pkt->tcp.flags & LES_TCP_SYN) &&
		    op->pn->flows.no_memory && READ_ONCE(op->pn->accel.cfg.on)) {
			les_stat_inc(op->pn->net, LES_STAT_ACCEL_ERRORS);
			kfree_skb(op->skb);
		} else if (op->to_hop) {
			les_hop_queue_skb(op->pn, op->skb, a->todo, false);
		} else {
			__skb_queue_tail(&a->todo->release, op->skb);
		}
	} else {
		les_accel_packet(op->pn, f, from, a->pkt, op->skb, op->x,
				 op->to_hop, a->todo);
	}
	les_hop_drain(op->pn, a->todo);
}

/* What became of one header zone: counters, the key's lifetime, the flow. */
static void les_pep_finish(struct les_pep_op *op, int err,
			   struct les_accel_todo *todo)
{
	struct les_pep_net *pn = op->pn;
	struct xfrm_state *x = op->x;
	struct les_pep_pkt pkt;
	bool dead = false, authentic;
	bool absorbed = false;
	u64 seq = 0;
	int why;

	if (err)
		why = err == -EBADMSG ? LES_STAT_PEP_AUTH_FAILED : LES_STAT_PEP_ERRORS;
	else
		why = 0;

	spin_lock_bh(&x->lock);
	/*
	 * The key may have reached a hard limit, or been deleted, while this
	 * copy waited: a header zone read with a dead key counts nowhere.  As
	 * in xfrm_input(), the state is checked under x->lock before it is
	 * charged; xfrm_state_check_expire() on a state that is no longer
	 * valid would arm its timer again, and the timer would delete the
	 * state a second time (list_del corruption).  Like xfrm_input(), a
	 * key with a hard limit of N opens exactly N header zones.
	 *
	 * The replay window moves only for a header zone whose ICV2 verified
	 * (protocol.md 7): a forgery or a replay changes nothing here.
	 */
	/*
	 * A key that went while the copy waited is read on if a flow still
	 * drains with it (drain.c): forwarded unread, held data's packet
	 * would be seen, and refused, by the receiver.
	 */
	if (!op->draining) {
		/* So is the very copy that takes it past a hard limit. */
		dead = x->km.state != XFRM_STATE_VALID || xfrm_state_check_expire(x);
		if (dead && les_drain_reads(&pn->accel, x)) {
			op->draining = true;
			dead = false;
		}
	}
	if (dead) {
		why = LES_STAT_PEP_KEY_EXPIRED;
	} else if (why == LES_STAT_PEP_AUTH_FAILED) {
		x->stats.integrity_failed++;
	} else if (!why) {
		struct les_replay *replay = les_sa_replay(op->sa, x);

		seq = les_replay_seq(replay,
				     les_get_be16(les_pep_op_hz(op) + LES_HZ_EPOCH),
				     les_get_be32(op->buf + 4));
		if (!les_replay_check(replay, seq)) {
			x->stats.replay++;
			why = LES_STAT_PEP_REPLAY;
			absorbed = les_replay_absorbed(replay, seq);
		} else {
			les_replay_advance(replay, seq);
			/*
			 * ip -s xfrm state shows what the PEP key opened; a
			 * key that went is read on for held data only (drain.c).
			 */
			if (!op->draining) {
				x->curlft.bytes += op->esp_len;
				x->curlft.packets++;
			}
		}
	}
	spin_unlock_bh(&x->lock);
	/*
	 * Only a header zone that authenticated and passed the replay window
	 * steers anything (pace.c).  One not opened for want of memory, or
	 * under a key that went, is genuine all the same: the receiver's
	 * xfrm will take it.
	 */
	authentic = why != LES_STAT_PEP_AUTH_FAILED && why != LES_STAT_PEP_REPLAY;
	if (!why)
		why = les_pep_parse(op, &pkt);
	/*
	 * Replays that go no further, as nothing they say is news: a copy of
	 * a packet the engine absorbed (its receiver's xfrm never saw the
	 * number and would take it, its TCP drop it as old); and off the
	 * hop, the far PEP's resend of a packet held here past its
	 * receiver's window, read (it is authentic, ICV2 said so) only to
	 * find that out (receiver.c).
	 */
	if (why == LES_STAT_PEP_REPLAY && op->skb &&
	    (absorbed ||
	     (!op->to_hop && atomic_read(&pn->accel.active) &&
	      !les_pep_parse(op, &pkt) &&
	      les_flow_peek(&pn->flows, &pkt, les_rcv_holds)))) {
		les_stat_inc(pn->net, why);
		les_stat_inc(pn->net, absorbed ? LES_STAT_ACCEL_DUP_ABSORBED :
						 LES_STAT_ACCEL_DUP_HELD);
		__skb_queue_tail(&todo->drop, op->skb);
		op->skb = NULL;
		goto out;
	}

	if (why) {
		les_stat_inc(pn->net, why);
		/*
		 * Unread, it goes on as it came (the engine acts on nothing
		 * forged), onto the hop in its turn.
		 */
		if (op->skb && err == -ENOMEM &&
		    (READ_ONCE(pn->accel.cfg.on) ||
		     atomic_read(&pn->accel.active))) {
			/*
			 * Not read for want of memory.  A SYN unseen would
			 * leave its flow's window scale unknown here
			 * (receiver.c).  Off the hop, past its
			 * receiver's window, its TCP would drop it after its
			 * xfrm took the sequence number, and refuse every
			 * resend of what the far PEP ACKed early; onto it, a
			 * sender's resend would pass unseen, and the ACK point
			 * then over copies its new TSval makes old
			 * (early_ack.c).  Dropped here, it comes again (as
			 * les_pep_hook() drops).
			 */
			kfree_skb(op->skb);
		} else if (op->skb && op->to_hop) {
			spin_lock_bh(&pn->flows.lock);
			les_hop_queue_skb(pn, op->skb, todo, !authentic);
			les_hop_drain(pn, todo);
			spin_unlock_bh(&pn->flows.lock);
		} else if (op->skb) {
			__skb_queue_tail(&todo->release, op->skb);
		}
	} else {
		struct les_pep_accel_arg arg = { op, &pkt, todo };

		les_stat_inc(pn->net, LES_STAT_PEP_OPENED);
		/*
		 * A key that went reads on only the flows that drain with
		 * it; the others' packets go on as if unread (drain.c).
		 */
		todo->absorbed = false;
		les_flow_seen(&pn->flows, &pkt,
			      op->draining ? les_drain_flow_reads : NULL,
			      op->skb ? les_pep_accel : NULL, &arg);
		/*
		 * Marked after the fact: one opener per namespace reads the
		 * packets in order, so no copy of it is read before this.
		 */
		if (todo->absorbed) {
			spin_lock_bh(&x->lock);
			les_replay_absorb(les_sa_replay(op->sa, x), seq);
			spin_unlock_bh(&x->lock);
		}
	}
out:
	xfrm_state_put(x);
	/* The opened headers are the only plaintext here: no need to wipe more. */
	memzero_explicit(les_pep_op_hz(op), op->hz_len);
	kfree(op);
}

/*
 * Open one copy's header zone in place with @req, waiting if the AEAD
 * completes later.  Its AAD is SPI, SeqLo and IV, then the payload zone and
 * ICV1 (docs/protocol.md 3.1): what ICV2 vouches for is the whole packet,
 * so nothing its sender did not seal is read, or ACKed early.
 */
static int les_pep_open(struct les_pep_op *op, struct aead_request *req)
{
	DECLARE_CRYPTO_WAIT(wait);
	struct scatterlist sg;

	/* One run: GCM implementations read a contiguous AAD in place. */
	sg_init_one(&sg, op->buf, op->esp_len);
	aead_request_set_tfm(req, op->sa->hz_aead);
	aead_request_set_callback(req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				  CRYPTO_TFM_REQ_MAY_SLEEP, crypto_req_done, &wait);
	aead_request_set_crypt(req, &sg, &sg, op->hz_len + LES_ICV_LEN, op->nonce);
	aead_request_set_ad(req, op->esp_len - op->hz_len - LES_ICV_LEN);
	return crypto_wait_req(crypto_aead_decrypt(req), &wait);
}

/*
 * The opener: takes the whole backlog at once and opens it in arrival
 * order.  A work item never runs on two CPUs at a time, so the flow table
 * sees each namespace's segments in the order they were forwarded.
 */
static void les_pep_opener(struct work_struct *work)
{
	struct les_pep_net *pn = container_of(to_delayed_work(work),
					      struct les_pep_net, opener);
	struct aead_request *req = NULL;
	struct les_pep_op *op, *tmp;
	unsigned int req_size = 0, charged = 0;
	struct les_accel_todo todo;
	struct mem_cgroup *old_memcg;
	LIST_HEAD(batch);

	les_accel_todo_init(&todo, &pn->accel.pacer);
	spin_lock_bh(&pn->backlog_lock);
	list_splice_init(&pn->backlog, &batch);
	/* Its bytes stay counted until the batch is done (below). */
	WRITE_ONCE(pn->backlog_len, 0);
	spin_unlock_bh(&pn->backlog_lock);

	/* New flows are the namespace's memory, not the worker's. */
	old_memcg = set_active_memcg(pn->memcg);
	les_accel_batch_start(pn);
	list_for_each_entry_safe(op, tmp, &batch, node) {
		/* One request for the batch, not one per copy in the queue. */
		unsigned int need = sizeof(*req) + crypto_aead_reqsize(op->sa->hz_aead);

		if (need > req_size) {
			kfree_sensitive(req);
			req = kmalloc(need, GFP_KERNEL);
			req_size = req ? need : 0;
		}
		charged += op->charge;
		les_pep_finish(op, req ? les_pep_open(op, req) : -ENOMEM, &todo);
		cond_resched();
	}
	set_active_memcg(old_memcg);
	kfree_sensitive(req);
	les_accel_batch_end(pn, &todo);
	spin_lock_bh(&pn->backlog_lock);
	WRITE_ONCE(pn->backlog_bytes, pn->backlog_bytes - charged);
	spin_unlock_bh(&pn->backlog_lock);
}

/*
 * Wait until every header zone the hook has queued so far is opened: what
 * lesctl reads afterwards accounts for every packet forwarded before it.
 */
void les_pep_sync(struct les_pep_net *pn)
{
	flush_delayed_work(&pn->opener);
}

/*
 * Queue @dwork, the opener or the tick of @pn, to run on the namespace's
 * CPU after @delay (with @reset, even if it was due later).  Both send what
 * the PEP forwards, and a packet sent goes into the sending CPU's backlog
 * (veth, netif_rx()): sent from one CPU, a flow's packets leave in order;
 * sent from whichever CPU a worker had, one batch overtook the one before
 * (docs/accel.md 8).  With its CPU gone offline, the first that may run it
 * takes over for good: a timer added on an offline CPU would not fire.
 */
void les_pep_work(struct les_pep_net *pn, struct delayed_work *dwork,
		  unsigned long delay, bool reset)
{
	int cpu = READ_ONCE(pn->cpu);

	preempt_disable();
	if (cpu != WORK_CPU_UNBOUND && !les_pep_cpu_ok(cpu)) {
		cpu = les_pep_nth_cpu(0);
		WRITE_ONCE(pn->cpu, cpu);
	}
	if (reset)
		mod_delayed_work_on(cpu, les_pep_wq, dwork, delay);
	else
		queue_delayed_work_on(cpu, les_pep_wq, dwork, delay);
	preempt_enable();
}

static unsigned int les_pep_backlog_max(struct les_pep_net *pn)
{
	return les_pep_limit(READ_ONCE(pn->backlog_max),
			     READ_ONCE(les_pep_net(&init_net)->backlog_max));
}

/*
 * Copy the ESP packet of @skb out for the pep-view SA @x and queue it for
 * the opener.  Returns 0 (the op owns @x's reference now), or the counter
 * that says why the packet cannot be read.  With @take, the op takes the
 * packet too (the hook then returns NF_STOLEN): the acceleration engine
 * decides what becomes of it.
 */
static int les_pep_queue(struct les_pep_net *pn, struct xfrm_state *x,
			 struct les_sa *sa, struct sk_buff *skb,
			 const struct les_pep_outer *outer, bool take,
			 bool to_hop, bool draining, bool *taken)
{
	unsigned int esp_len = outer->esp_len;
	unsigned int hz_len, hz_end, backlog_max, charge;
	u8 head[LES_HZ_OFF + 2];
	struct mem_cgroup *old_memcg;
	unsigned int queued;
	struct les_pep_op *op;
	size_t size;

	if (esp_len < LES_MIN_LEN ||
	    skb_copy_bits(skb, outer->esp_off, head, sizeof(head)))
		return LES_STAT_PEP_MALFORMED;
	/* L is hidden: one AES block with our key unmasks it (protocol.md 3.1). */
	hz_len = LES_HZ_DESC_LEN +
		 les_hz_peek_len(sa, head + LES_ESP_HDR_LEN, head + LES_HZ_OFF);
	if (hz_len > LES_HZ_DESC_LEN + LES_HDRS_MAX)
		return LES_STAT_PEP_MALFORMED;
	hz_end = LES_HZ_OFF + hz_len + LES_ICV_LEN;
	/* A header-only packet is some PEP's own, under a key not ours. */
	if (esp_len == hz_end)
		return LES_STAT_PEP_SKIPPED;
	if (esp_len < hz_end + LES_CSUM_LEN + 2 + LES_ICV_LEN)
		return LES_STAT_PEP_MALFORMED;

	/* What it costs until the opener is done: the copy, and the packet. */
	size = struct_size(op, buf, esp_len);
	charge = kmalloc_size_roundup(size) + (take ? skb->truesize : 0);
	/* Full already: spare the allocation and the copy (checked again below). */
	backlog_max = les_pep_backlog_max(pn);
	queued = READ_ONCE(pn->backlog_len);
	if (queued >= backlog_max ||
	    (queued && READ_ONCE(pn->backlog_bytes) + charge >
		       backlog_max * LES_PEP_BACKLOG_BYTES_PER))
		return LES_STAT_PEP_BACKLOG_FULL;

	old_memcg = set_active_memcg(pn->memcg);
	op = kmalloc(size, GFP_ATOMIC | __GFP_ACCOUNT | __GFP_NOWARN);
	set_active_memcg(old_memcg);
	if (!op)
		return LES_STAT_PEP_ERRORS;
	op->pn = pn;
	op->x = x;
	op->sa = sa;
	op->seen = ktime_get();
	op->outer = *outer;
	op->skb = NULL;
	op->to_hop = to_hop;
	op->draining = draining;
	op->esp_len = esp_len;
	op->charge = charge;
	op->hz_len = hz_len;

	/* ICV2 covers the whole packet: a copy of it, in the AEAD's order. */
	if (skb_copy_bits(skb, outer->esp_off, op->buf, LES_HZ_AAD_LEN) ||
	    skb_copy_bits(skb, outer->esp_off + hz_end, op->buf + LES_HZ_AAD_LEN,
			  esp_len - hz_end) ||
	    skb_copy_bits(skb, outer->esp_off + LES_HZ_OFF, les_pep_op_hz(op),
			  hz_len + LES_ICV_LEN)) {
		kfree(op);
		return LES_STAT_PEP_MALFORMED;
	}
	memcpy(op->nonce, sa->hz_salt, LES_SALT_LEN);
	memcpy(op->nonce + LES_SALT_LEN, op->buf + LES_ESP_HDR_LEN, LES_IV_LEN);

	spin_lock(&pn->backlog_lock);
	/* One packet always fits, whatever its size. */
	BUILD_BUG_ON(LES_PEP_BACKLOG_MAX * LES_PEP_BACKLOG_BYTES_PER > UINT_MAX / 2);
	if (pn->backlog_len >= backlog_max ||
	    (pn->backlog_len && pn->backlog_bytes + charge >
				backlog_max * LES_PEP_BACKLOG_BYTES_PER)) {
		spin_unlock(&pn->backlog_lock);
		kfree(op);
		return LES_STAT_PEP_BACKLOG_FULL;
	}
	/*
	 * Held past this hook: the forwarding path's dst is not refcounted.
	 * Its input device is not held either: from here on the packet names
	 * its output device, which its dst holds.
	 */
	if (take) {
		skb_dst_force(skb);
		if (skb_dst(skb)) {
			skb->dev = skb_dst(skb)->dev;
			op->skb = skb;
		}
	}
	/* Said now: once queued, the opener may be done with @op at once. */
	*taken = op->skb;
	list_add_tail(&op->node, &pn->backlog);
	queued = pn->backlog_len + 1;
	WRITE_ONCE(pn->backlog_len, queued);
	WRITE_ONCE(pn->backlog_bytes, pn->backlog_bytes + charge);
	spin_unlock(&pn->backlog_lock);
	/* A packet waits for the opener: wake it now. */
	if (*taken) {
		if (queued == 1)
			les_pep_work(pn, &pn->opener, 0, true);
		return 0;
	}
	/*
	 * Wake the opener once per batch, not once per packet: a tick after
	 * the first header zone, or at once when a batch is waiting.  The
	 * delay costs no accuracy (the time is noted above), and a wake-up
	 * per packet cost as much as the AEAD call it moved.
	 */
	if (queued == min(backlog_max, LES_PEP_BATCH))
		les_pep_work(pn, &pn->opener, 0, true);
	else if (queued == 1)
		les_pep_work(pn, &pn->opener, 1, false);
	return 0;
}

/*
 * The UDP checksum of the datagram around @outer's ESP packet, as its
 * receiver checks it, unless the stack already has (a NIC's, or veth's)
 * over the whole packet, as the datagram is then.  Computed aside: the
 * skb's checksum state is the forwarding path's, not ours to change.
 */
static bool les_pep_udp_csum_ok(const struct sk_buff *skb,
				const struct les_pep_outer *outer)
{
	unsigned int off = outer->esp_off - sizeof(struct udphdr);
	unsigned int len = outer->esp_len + sizeof(struct udphdr);
	__wsum csum;

	if (!outer->udp_csum)
		return true;
	if (len == skb->len - off &&
	    (skb->ip_summed == CHECKSUM_UNNECESSARY ||
	     skb->ip_summed == CHECKSUM_PARTIAL))
		return true;
	csum = skb_checksum(skb, off, len, 0);
	if (outer->family == AF_INET)
		return !csum_tcpudp_magic(ip_hdr(skb)->saddr, ip_hdr(skb)->daddr,
					  len, IPPROTO_UDP, csum);
	return !csum_ipv6_magic(&ipv6_hdr(skb)->saddr, &ipv6_hdr(skb)->daddr,
				len, IPPROTO_UDP, csum);
}

/*
 * Accelerating, a packet to or from the hop goes through the engine
 * (docs/accel.md 5.1): 1 onto the hop, 2 off it, 0 neither.  Also while flows
 * switched off still hold data, so that their receivers' ACKs free it.
 */
static int les_pep_hop(struct les_pep_net *pn, struct sk_buff *skb,
		       const struct nf_hook_state *state)
{
	int hop = READ_ONCE(pn->accel.cfg.hop_ifindex);

	if (!hop || (!READ_ONCE(pn->accel.cfg.on) && !atomic_read(&pn->accel.active)))
		return 0;
	/*
	 * ip_forward_finish() writes a record route, source route or
	 * timestamp option (at least its header checksum) on each forward:
	 * into the header the engine's copies share, and for a source route
	 * differently each time.  Those are not taken; other options it
	 * leaves as they are.
	 */
	if (state->pf == NFPROTO_IPV4 && ip_hdr(skb)->ihl != 5 &&
	    (IPCB(skb)->opt.rr || IPCB(skb)->opt.srr || IPCB(skb)->opt.ts ||
	     IPCB(skb)->opt.is_changed))
		return 0;
#if IS_ENABLED(CONFIG_BRIDGE_NETFILTER)
	/*
	 * Bridged, and seen at FORWARD by br_netfilter: the bridge's own
	 * continuation follows the hook, not the IP layer's (pace.c).
	 */
	if (nf_bridge_info_exists(skb))
		return 0;
#endif
	if (state->out && state->out->ifindex == hop)
		return 1;
	if (state->in && state->in->ifindex == hop)
		return 2;
	return 0;
}

/* Returns the hook's verdict: NF_STOLEN once the engine has the packet. */
static unsigned int les_pep_esp(struct les_pep_net *pn, struct sk_buff *skb,
				const struct les_pep_outer *outer,
				const struct nf_hook_state *state)
{
	struct net *net = pn->net;
	bool taken = false, draining = false;
	struct xfrm_state *x;
	struct les_sa *sa;
	__be32 spi;
	int why, hop;

	if (skb_copy_bits(skb, outer->esp_off, &spi, sizeof(spi)) || !spi) {
		/* In UDP that is IKE or a keepalive (RFC 3948), not ESP. */
		if (!outer->udp)
			les_stat_inc(net, LES_STAT_PEP_MALFORMED);
		return NF_ACCEPT;
	}
	/* The one lookup every ESP packet pays. */
	x = xfrm_state_lookup(net, READ_ONCE(pn->pep_mark), &outer->daddr, spi,
			      IPPROTO_ESP, outer->family);
	/* Gone from xfrm, but data it reads is held (drain.c). */
	if (!x) {
		x = les_drain_lookup(&pn->accel, READ_ONCE(pn->pep_mark),
				     &outer->daddr, spi, outer->family);
		draining = x;
	} else if (les_drain_reads(&pn->accel, x)) {
		/* Expired, not yet deleted, its held data still read. */
		draining = true;
	}
	if (!x) {
		les_stat_inc(net, LES_STAT_PEP_NO_KEY);
		return NF_ACCEPT;
	}
	sa = x->type == &les_sa_type ? les_sa_get(x) : NULL;
	if (!sa || sa->role != LES_ROLE_PEP_VIEW ||
	    (!draining && READ_ONCE(x->km.state) != XFRM_STATE_VALID)) {
		les_stat_inc(net, LES_STAT_PEP_NO_KEY);
		xfrm_state_put(x);
		return NF_ACCEPT;
	}
	/* Only a packet the PEP reads pays for its UDP checksum. */
	if (!les_pep_udp_csum_ok(skb, outer)) {
		les_stat_inc(net, LES_STAT_PEP_MALFORMED);
		xfrm_state_put(x);
		return NF_ACCEPT;
	}
	hop = les_pep_hop(pn, skb, state);
	if (hop)
		les_accel_note_okfn(&pn->accel, state);
	why = les_pep_queue(pn, x, sa, skb, outer, hop, hop == 1, draining, &taken);
	if (why) {
		les_stat_inc(net, why);
		xfrm_state_put(x);
		/*
		 * Accelerating, a packet the engine could not take for want of
		 * room is dropped, as a qdisc drops at its limit.  Forwarded
		 * unread, onto the hop it would pass the replay guard (pace.c);
		 * off it, past its receiver's window, its sequence number would
		 * make every resend of data the far PEP ACKed early a replay.
		 */
		if (hop && (why == LES_STAT_PEP_BACKLOG_FULL || why == LES_STAT_PEP_ERRORS))
			return NF_DROP;
		return NF_ACCEPT;
	}
	if (taken)
		return NF_STOLEN;
	/* skb_dst_force() failed (the route is going away): nothing to send it on. */
	return skb_dst(skb) ? NF_ACCEPT : NF_DROP;
}

static unsigned int les_pep_forward_gso(struct les_pep_net *pn,
					struct sk_buff *skb,
					const struct nf_hook_state *state);

static unsigned int les_pep_forward(struct les_pep_net *pn,
				    struct sk_buff *skb,
				    const struct nf_hook_state *state)
{
	struct les_pep_outer outer;
	bool fragment;
	u8 proto;

	memset(&outer, 0, sizeof(outer));
	if (state->pf == NFPROTO_IPV4) {
		const struct iphdr *iph = ip_hdr(skb);

		fragment = iph->frag_off & htons(IP_MF | IP_OFFSET);
		outer.family = AF_INET;
		outer.saddr.a4 = iph->saddr;
		outer.daddr.a4 = iph->daddr;
		outer.esp_off = skb_network_offset(skb) + iph->ihl * 4;
		proto = iph->protocol;
	} else {
		const struct ipv6hdr *ip6h = ipv6_hdr(skb);
		__be16 frag_off = 0;
		int off;

		proto = ip6h->nexthdr;
		off = ipv6_skip_exthdr(skb, skb_network_offset(skb) + sizeof(*ip6h),
				       &proto, &frag_off);
		if (off < 0)
			return NF_ACCEPT;
		fragment = frag_off & htons(IP6_OFFSET | IP6_MF);
		outer.family = AF_INET6;
		outer.saddr.in6 = ip6h->saddr;
		outer.daddr.in6 = ip6h->daddr;
		outer.esp_off = off;
	}
	if (proto != IPPROTO_ESP && proto != IPPROTO_UDP)
		return NF_ACCEPT;
	/*
	 * An outer fragment holds part of an ESP packet (a later one cannot
	 * even tell ESP-in-UDP from other UDP): reading a header zone from it
	 * would count a part as a packet.  nf_defrag reassembled the others
	 * (les_pep_key_add()); one it let through passes unread.
	 */
	if (fragment) {
		les_stat_inc(pn->net, LES_STAT_PEP_OUTER_FRAGMENT);
		return NF_ACCEPT;
	}

	if (proto == IPPROTO_UDP) {
		__be16 port = htons(READ_ONCE(pn->encap_port));
		struct udphdr _uh;
		const struct udphdr *uh;
		unsigned int len;

		uh = skb_header_pointer(skb, outer.esp_off, sizeof(_uh), &_uh);
		if (!uh || (uh->dest != port && uh->source != port))
			return NF_ACCEPT;
		/* UDP GRO's: several datagrams behind this header. */
		if (skb_is_gso(skb))
			return les_pep_forward_gso(pn, skb, state);
		/*
		 * The datagram as the receiver's UDP reads it (udp_rcv(),
		 * __udp6_lib_rcv()): a shorter length cuts the packet, IPv6's 0
		 * is all of it, a longer one or a bad checksum (0 is none over
		 * IPv4, RFC 768, and refused over IPv6, RFC 8200 8.1; the sum
		 * is checked once its SPI is known, in les_pep_esp()) is
		 * dropped.  ICV2 must vouch for just that, or a copy held
		 * would fail there with every resend.
		 */
		len = ntohs(uh->len);
		if (!len && outer.family == AF_INET6)
			len = skb->len - outer.esp_off;
		if (len < sizeof(*uh) || len > skb->len - outer.esp_off ||
		    (!uh->check && outer.family == AF_INET6)) {
			les_stat_inc(pn->net, LES_STAT_PEP_MALFORMED);
			return NF_ACCEPT;
		}
		/*
		 * RFC 3948: no more than an ESP header, or a zero SPI (below),
		 * is IKE's or a keepalive (xfrm4_udp_encap_rcv()).
		 */
		if (len <= sizeof(*uh) + sizeof(struct ip_esp_hdr))
			return NF_ACCEPT;
		outer.esp_off += sizeof(*uh);
		outer.esp_len = len - sizeof(*uh);
		outer.udp = true;
		outer.udp_csum = uh->check || outer.family == AF_INET6;
	} else {
		outer.esp_len = skb->len - outer.esp_off;
	}
	/* ESP's own GSO is xfrm offload's, made on the way out: not read. */
	if (skb_is_gso(skb)) {
		les_stat_inc(pn->net, LES_STAT_PEP_GSO_UNREAD);
		return NF_ACCEPT;
	}

	return les_pep_esp(pn, skb, &outer, state);
}

/*
 * A GSO skb of UDP GRO forwarding holds several ESP-in-UDP packets behind
 * one header.  Accelerating, to or from the hop, one unread could carry its
 * SA past the replay guard or land past its receiver's window, costing data
 * the far PEP ACKed early (docs/accel.md 8): there each is read, split as
 * nfqueue splits what it queues (nfnetlink_queue.c) and given the verdict
 * it earns, the engine sending it on as it sends what it takes.  Elsewhere
 * it passes unread, so that an observer changes nothing of what it
 * forwards, nor which hooks see it.  GRO checked each datagram's checksum:
 * the parts keep it for the device (CHECKSUM_PARTIAL), and their pages.
 */
static unsigned int les_pep_forward_gso(struct les_pep_net *pn,
					struct sk_buff *skb,
					const struct nf_hook_state *state)
{
	struct nf_conn *ct = (struct nf_conn *)skb_nfct(skb);
	unsigned int truesize = skb->truesize, parts = 0, sum = 0, share;
	struct sk_buff *segs, *seg, *next;

	/*
	 * Parts released later by the pacer, on another CPU, and parts
	 * forwarded now must not confirm a new conntrack entry at once (as
	 * nfqueue refuses to queue them): its first packets pass unread.
	 */
	if (!les_pep_hop(pn, skb, state) || (ct && !nf_ct_is_confirmed(ct)))
		goto unread;
	segs = skb_gso_segment(skb, NETIF_F_SG | NETIF_F_HW_CSUM);
	/* What is left of @skb may have lost its frag list: not forwarded. */
	if (IS_ERR(segs)) {
		les_stat_inc(pn->net, LES_STAT_PEP_ERRORS);
		return NF_DROP;
	}
	if (!segs)
		goto unread;
	les_stat_inc(pn->net, LES_STAT_PEP_GSO);
	consume_skb(skb);
	skb_list_walk_safe(segs, seg, next) {
		parts++;
		sum += seg->truesize;
	}
	/*
	 * A part on the whole's pages counts only its bytes (skb_segment()),
	 * yet each part held keeps them: what the whole took beyond its
	 * parts is shared out among them (hold.c charges a held packet what
	 * it took).  Parts that were the whole's frag list already count
	 * theirs.
	 */
	share = truesize > sum ? (truesize - sum) / parts : 0;
	skb_list_walk_safe(segs, seg, next) {
		skb_mark_not_on_list(seg);
		seg->truesize += share;
		switch (les_pep_forward(pn, seg, state)) {
		case NF_ACCEPT:
			state->okfn(state->net, state->sk, seg);
			break;
		case NF_STOLEN:
			break;
		default:
			kfree_skb_reason(seg, SKB_DROP_REASON_NETFILTER_DROP);
		}
	}
	return NF_STOLEN;

unread:
	les_stat_inc(pn->net, LES_STAT_PEP_GSO_UNREAD);
	return NF_ACCEPT;
}

static unsigned int les_pep_hook(void *priv, struct sk_buff *skb,
				 const struct nf_hook_state *state)
{
	struct les_pep_net *pn = priv;
	unsigned int verdict;

	/* Not a PEP (no key in this namespace): nothing to look at. */
	if (!atomic_read(&pn->keys))
		return NF_ACCEPT;
	/*
	 * BHs off, as on the forwarding path: after an NFQUEUE verdict,
	 * nf_reinject() runs the hooks that follow in process context, and
	 * the backlog's and the engine's locks are taken without _bh.
	 */
	local_bh_disable();
	verdict = les_pep_forward(pn, skb, state);
	local_bh_enable();
	return verdict;
}

/* With pn->cfg_lock held. */
int les_pep_set_hook(struct les_pep_net *pn, bool on)
{
	int err = 0;

	lockdep_assert_held(&pn->cfg_lock);
	if (on && !pn->hook_on)
		err = nf_register_net_hooks(pn->net, pn->ops, ARRAY_SIZE(pn->ops));
	else if (!on && pn->hook_on)
		nf_unregister_net_hooks(pn->net, pn->ops, ARRAY_SIZE(pn->ops));
	if (!err)
		pn->hook_on = on;
	return err;
}

static int __net_init les_pep_net_init(struct net *net)
{
	struct les_pep_net *pn = les_pep_net(net);
	int err, i;

	pn->net = net;
	atomic_set(&pn->keys, 0);
	pn->memcg = get_mem_cgroup_from_mm(current->mm);
	mutex_init(&pn->cfg_lock);
	pn->hook_on = false;
	spin_lock_init(&pn->backlog_lock);
	INIT_LIST_HEAD(&pn->backlog);
	pn->backlog_len = 0;
	pn->backlog_bytes = 0;
	pn->backlog_max = LES_PEP_BACKLOG_DEFAULT;
	INIT_DELAYED_WORK(&pn->opener, les_pep_opener);
	pn->cpu = WORK_CPU_UNBOUND;	/* until it has a key */
	pn->pep_mark = LES_PEP_MARK_DEFAULT;
	pn->encap_port = LES_PEP_ENCAP_PORT_DEFAULT;
	/*
	 * Both families, whatever the ESP slot holds (it is taken after the
	 * namespaces are set up): an IPv6 hook on a host without IPv6 traffic
	 * is never called.
	 */
	for (i = 0; i < ARRAY_SIZE(pn->ops); i++) {
		pn->ops[i].hook = les_pep_hook;
		pn->ops[i].priv = pn;
		pn->ops[i].pf = i ? NFPROTO_IPV6 : NFPROTO_IPV4;
		pn->ops[i].hooknum = NF_INET_FORWARD;
		pn->ops[i].priority = LES_PEP_HOOK_PRIORITY;
	}
	les_accel_net_init(pn);
	err = les_flow_table_init(&pn->flows, net);
	if (err)
		goto err_memcg;
	if (pep_hook) {
		mutex_lock(&pn->cfg_lock);
		err = les_pep_set_hook(pn, true);
		mutex_unlock(&pn->cfg_lock);
		if (err)
			goto err_flows;
	}
	return 0;

err_flows:
	les_flow_table_destroy(&pn->flows);
err_memcg:
	mem_cgroup_put(pn->memcg);
	return err;
}

/*
 * Before any device of the namespace goes: unregistering waits for packets
 * in the hook, after it nothing is queued, and what is queued is opened;
 * then the engine lets go of what it holds (accel.c).
 */
static void __net_exit les_pep_net_pre_exit(struct net *net)
{
	struct les_pep_net *pn = les_pep_net(net);

	mutex_lock(&pn->cfg_lock);
	les_pep_set_hook(pn, false);
	mutex_unlock(&pn->cfg_lock);
	flush_delayed_work(&pn->opener);
	les_accel_net_pre_exit(pn);
}

static void __net_exit les_pep_net_exit(struct net *net)
{
	struct les_pep_net *pn = les_pep_net(net);

	/* les_pep_net_pre_exit() unhooked, opened the queue, emptied the engine. */
	les_flow_table_destroy(&pn->flows);
	les_accel_net_exit(pn);
	mem_cgroup_put(pn->memcg);
	pn->memcg = NULL;
}

static struct pernet_operations les_pep_net_ops = {
	.init	= les_pep_net_init,
	.pre_exit = les_pep_net_pre_exit,
	.exit	= les_pep_net_exit,
	.id	= &les_pep_net_id,
	.size	= sizeof(struct les_pep_net),
};

int les_pep_init(void)
{
	int err;

	err = les_flow_cache_init();
	if (err)
		return err;
	err = les_held_cache_init();
	if (err)
		goto err_cache;
	/*
	 * Bound, each namespace's work on its CPU (les_pep_work()); CPU
	 * intensive, so that an opener's batch of AEAD calls does not hold
	 * back another namespace's tick on that CPU.
	 */
	les_pep_wq = alloc_workqueue("les_pep", WQ_CPU_INTENSIVE, 0);
	if (!les_pep_wq) {
		err = -ENOMEM;
		goto err_held;
	}
	err = register_pernet_subsys(&les_pep_net_ops);
	if (err)
		goto err_wq;
	return 0;

err_wq:
	destroy_workqueue(les_pep_wq);
err_held:
	les_held_cache_exit();
err_cache:
	les_flow_cache_exit();
	return err;
}

void les_pep_exit(void)
{
	unregister_pernet_subsys(&les_pep_net_ops);
	destroy_workqueue(les_pep_wq);
	les_held_cache_exit();
	les_flow_cache_exit();
}
