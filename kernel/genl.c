// SPDX-License-Identifier: GPL-2.0
/*
 * The "les" generic netlink family (les_genl.h): the PEP settings, the
 * counters, the PEP keys and the flow table of the caller's namespace.
 */
#include <net/genetlink.h>
#include <linux/jiffies.h>
#include <linux/rhashtable.h>
#include <linux/timekeeping.h>
#include <net/netlink.h>
#include <net/tcp.h>
#include <net/xfrm.h>

#include "les.h"
#include "pep.h"

static struct genl_family les_genl_family;

/* Only "pep set" takes attributes; every other command takes none. */
static const struct nla_policy les_genl_set_policy[LES_A_MAX + 1] = {
	[LES_A_HOOK]		= NLA_POLICY_MAX(NLA_U8, 1),
	[LES_A_MAX_FLOWS]	= { .type = NLA_U32 },
	[LES_A_IDLE_TIMEOUT]	= { .type = NLA_U32 },
	[LES_A_PEP_MARK]	= { .type = NLA_U32 },
	[LES_A_ENCAP_PORT]	= { .type = NLA_U16 },
	[LES_A_BACKLOG]		= { .type = NLA_U32 },
	[LES_A_ACCEL]		= NLA_POLICY_MAX(NLA_U8, 1),
	[LES_A_HOP_IFINDEX]	= { .type = NLA_U32 },
	[LES_A_HOP_RATE]	= { .type = NLA_U32 },
	[LES_A_FLOW_BUFFER]	= { .type = NLA_U32 },
	[LES_A_BUFFER]		= { .type = NLA_U32 },
	[LES_A_PEER_BUFFER]	= { .type = NLA_U32 },
};

static int les_genl_put_config(struct sk_buff *msg, struct net *net)
{
	struct les_pep_net *pn = les_pep_net(net);
	struct les_accel_cfg *ac = &pn->accel.cfg;
	struct les_flow_table *t = &pn->flows;
	u64 held, mem;

	spin_lock_bh(&t->lock);
	held = pn->accel.held_bytes;
	mem = pn->accel.mem;
	spin_unlock_bh(&t->lock);
	if (nla_put_u8(msg, LES_A_ACCEL, READ_ONCE(ac->on)) ||
	    nla_put_u32(msg, LES_A_HOP_IFINDEX, READ_ONCE(ac->hop_ifindex)) ||
	    nla_put_u32(msg, LES_A_HOP_RATE, READ_ONCE(ac->hop_rate)) ||
	    nla_put_u32(msg, LES_A_FLOW_BUFFER, READ_ONCE(ac->flow_buffer)) ||
	    nla_put_u32(msg, LES_A_BUFFER, READ_ONCE(ac->buffer)) ||
	    nla_put_u32(msg, LES_A_PEER_BUFFER, READ_ONCE(ac->peer_buffer)) ||
	    nla_put_u64_64bit(msg, LES_A_HELD, held, LES_A_PAD) ||
	    nla_put_u32(msg, LES_A_ACCEL_FLOWS, atomic_read(&pn->accel.active)) ||
	    nla_put_u64_64bit(msg, LES_A_MEM, mem, LES_A_PAD) ||
	    nla_put_u32(msg, LES_A_TICK_LATE, READ_ONCE(pn->accel.late_pct)) ||
	    nla_put_u8(msg, LES_A_LATE, READ_ONCE(pn->accel.late)))
		return -EMSGSIZE;
	if (nla_put_u8(msg, LES_A_HOOK, READ_ONCE(pn->hook_on)) ||
	    nla_put_u32(msg, LES_A_MAX_FLOWS, READ_ONCE(t->max_flows)) ||
	    nla_put_u32(msg, LES_A_IDLE_TIMEOUT, READ_ONCE(t->idle_timeout)) ||
	    nla_put_u32(msg, LES_A_PEP_MARK, READ_ONCE(pn->pep_mark)) ||
	    nla_put_u16(msg, LES_A_ENCAP_PORT, READ_ONCE(pn->encap_port)) ||
	    nla_put_u32(msg, LES_A_BACKLOG, READ_ONCE(pn->backlog_max)) ||
	    nla_put_u32(msg, LES_A_FLOW_COUNT, les_flow_count(t)))
		return -EMSGSIZE;
	return 0;
}

static int les_genl_reply(struct genl_info *info, u8 cmd,
			  int (*put)(struct sk_buff *msg, struct net *net))
{
	struct sk_buff *msg;
	void *hdr;
	int err;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &les_genl_family, 0, cmd);
	if (!hdr) {
		err = -EMSGSIZE;
		goto fail;
	}
	err = put(msg, genl_info_net(info));
	if (err)
		goto fail;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
fail:
	nlmsg_free(msg);
	return err;
}

static int les_genl_get_config(struct sk_buff *skb, struct genl_info *info)
{
	return les_genl_reply(info, LES_CMD_GET_CONFIG, les_genl_put_config);
}

static bool les_genl_dev_exists(struct net *net, int ifindex)
{
	bool found;

	rcu_read_lock();
	found = dev_get_by_index_rcu(net, ifindex);
	rcu_read_unlock();
	return found;
}

static int les_genl_set_config(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	struct les_pep_net *pn = les_pep_net(net);
	struct les_pep_net *init_pn = les_pep_net(&init_net);
	struct les_flow_table *t = &pn->flows;
	struct nlattr **a = info->attrs;
	unsigned int max_flows, idle;
	int err = 0;

	/* Settings change together or not at all, one caller at a time. */
	mutex_lock(&pn->cfg_lock);
	max_flows = READ_ONCE(t->max_flows);
	idle = READ_ONCE(t->idle_timeout);
	if (a[LES_A_MAX_FLOWS]) {
		max_flows = nla_get_u32(a[LES_A_MAX_FLOWS]);
		if (max_flows > LES_PEP_MAX_FLOWS_LIMIT) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[LES_A_MAX_FLOWS],
					    "max-flows is at most 4194304");
			err = -ERANGE;
			goto out;
		}
		if (net != &init_net && max_flows > READ_ONCE(init_pn->flows.max_flows)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[LES_A_MAX_FLOWS],
					    "max-flows cannot exceed the initial namespace's");
			err = -EPERM;
			goto out;
		}
	}
	if (a[LES_A_IDLE_TIMEOUT]) {
		idle = nla_get_u32(a[LES_A_IDLE_TIMEOUT]);
		if (!idle || idle > LES_PEP_IDLE_TIMEOUT_MAX) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[LES_A_IDLE_TIMEOUT],
					    "idle-timeout is 1 to 86400 seconds");
			err = -ERANGE;
			goto out;
		}
	}
	if (a[LES_A_BACKLOG]) {
		unsigned int backlog = nla_get_u32(a[LES_A_BACKLOG]);

		if (!backlog || backlog > LES_PEP_BACKLOG_MAX) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[LES_A_BACKLOG],
					    "backlog is 1 to 65536 packets");
			err = -ERANGE;
			goto out;
		}
		if (net != &init_net && backlog > READ_ONCE(init_pn->backlog_max)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a[LES_A_BACKLOG],
					    "backlog cannot exceed the initial namespace's");
			err = -EPERM;
			goto out;
		}
	}
	/* Holding memory is the host's to grant: only the initial namespace. */
	if (net != &init_net && (a[LES_A_ACCEL] || a[LES_A_FLOW_BUFFER] ||
				 a[LES_A_BUFFER] || a[LES_A_PEER_BUFFER]) &&
	    !ns_capable(init_net.user_ns, CAP_NET_ADMIN)) {
		NL_SET_ERR_MSG(info->extack,
			       "acceleration is set up by the initial namespace's administrator");
		err = -EPERM;
		goto out;
	}
	if (a[LES_A_HOP_RATE] && nla_get_u32(a[LES_A_HOP_RATE]) > LES_ACCEL_RATE_MAX) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[LES_A_HOP_RATE],
				    "hop-rate is at most 100000000 kbit/s (0: not paced)");
		err = -ERANGE;
		goto out;
	}
	if ((a[LES_A_FLOW_BUFFER] && nla_get_u32(a[LES_A_FLOW_BUFFER]) > LES_ACCEL_BUFFER_MAX) ||
	    (a[LES_A_BUFFER] && nla_get_u32(a[LES_A_BUFFER]) > LES_ACCEL_BUFFER_MAX) ||
	    (a[LES_A_PEER_BUFFER] && nla_get_u32(a[LES_A_PEER_BUFFER]) > LES_ACCEL_BUFFER_MAX)) {
		NL_SET_ERR_MSG(info->extack, "buffers are at most 1 GiB");
		err = -ERANGE;
		goto out;
	}
	if (a[LES_A_HOP_IFINDEX] && nla_get_u32(a[LES_A_HOP_IFINDEX]) &&
	    !les_genl_dev_exists(net, nla_get_u32(a[LES_A_HOP_IFINDEX]))) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[LES_A_HOP_IFINDEX],
				    "no such device in this namespace");
		err = -ENODEV;
		goto out;
	}
	if (a[LES_A_ENCAP_PORT] && !nla_get_u16(a[LES_A_ENCAP_PORT])) {
		NL_SET_ERR_MSG_ATTR(info->extack, a[LES_A_ENCAP_PORT],
				    "encap-port cannot be 0");
		err = -ERANGE;
		goto out;
	}

	if (a[LES_A_HOOK]) {
		err = les_pep_set_hook(pn, nla_get_u8(a[LES_A_HOOK]));
		if (err) {
			NL_SET_ERR_MSG(info->extack, "could not register the netfilter hook");
			goto out;
		}
	}
	if (a[LES_A_PEP_MARK])
		WRITE_ONCE(pn->pep_mark, nla_get_u32(a[LES_A_PEP_MARK]));
	if (a[LES_A_ENCAP_PORT])
		WRITE_ONCE(pn->encap_port, nla_get_u16(a[LES_A_ENCAP_PORT]));
	if (a[LES_A_BACKLOG])
		WRITE_ONCE(pn->backlog_max, nla_get_u32(a[LES_A_BACKLOG]));
	if (a[LES_A_MAX_FLOWS] || a[LES_A_IDLE_TIMEOUT])
		les_flow_set_limits(t, max_flows, idle);
	if (a[LES_A_HOP_IFINDEX])
		WRITE_ONCE(pn->accel.cfg.hop_ifindex, nla_get_u32(a[LES_A_HOP_IFINDEX]));
	if (a[LES_A_HOP_RATE]) {
		WRITE_ONCE(pn->accel.cfg.hop_rate, nla_get_u32(a[LES_A_HOP_RATE]));
		les_pacer_set_rate(&pn->accel.pacer, nla_get_u32(a[LES_A_HOP_RATE]));
	}
	if (a[LES_A_FLOW_BUFFER])
		WRITE_ONCE(pn->accel.cfg.flow_buffer, nla_get_u32(a[LES_A_FLOW_BUFFER]));
	if (a[LES_A_BUFFER])
		WRITE_ONCE(pn->accel.cfg.buffer, nla_get_u32(a[LES_A_BUFFER]));
	if (a[LES_A_PEER_BUFFER])
		WRITE_ONCE(pn->accel.cfg.peer_buffer, nla_get_u32(a[LES_A_PEER_BUFFER]));
	if (a[LES_A_ACCEL])
		WRITE_ONCE(pn->accel.cfg.on, nla_get_u8(a[LES_A_ACCEL]));
out:
	mutex_unlock(&pn->cfg_lock);
	return err;
}

static int les_genl_put_stats(struct sk_buff *msg, struct net *net)
{
	struct nlattr *nest;
	int i;

	for (i = 0; i < LES_STAT_MAX; i++) {
		nest = nla_nest_start(msg, LES_A_STAT);
		if (!nest ||
		    nla_put_string(msg, LES_STAT_A_NAME, les_stat_name(i)) ||
		    nla_put_u64_64bit(msg, LES_STAT_A_VALUE, les_stat_read(net, i),
				      LES_STAT_A_PAD))
			return -EMSGSIZE;
		nla_nest_end(msg, nest);
	}
	return 0;
}

/*
 * An administrator's read first waits for the opener: what it reports
 * covers each packet forwarded before the request.  Anyone else gets the
 * counters as they are; nobody unprivileged waits on the backlog.
 */
static int les_genl_get_stats(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info);

	if (netlink_ns_capable(skb, net->user_ns, CAP_NET_ADMIN))
		les_pep_sync(les_pep_net(net));
	return les_genl_reply(info, LES_CMD_GET_STATS, les_genl_put_stats);
}

static int les_genl_flush_flows(struct sk_buff *skb, struct genl_info *info)
{
	struct les_pep_net *pn = les_pep_net(genl_info_net(info));

	/* Or header zones queued before the flush would bring flows back. */
	les_pep_sync(pn);
	les_flow_flush(&pn->flows, true);
	return 0;
}

/* ---- PEP keys: the pep-view SAs among the namespace's xfrm states ---- */

static int les_put_addr(struct sk_buff *msg, int attr, unsigned short family,
			const xfrm_address_t *addr)
{
	return nla_put(msg, attr, family == AF_INET ? 4 : 16, addr);
}

struct les_key_dump {
	struct netlink_callback *cb;
	struct sk_buff *skb;
};

static int les_genl_fill_key(struct xfrm_state *x, int count, void *arg)
{
	struct les_key_dump *d = arg;
	struct netlink_callback *cb = d->cb;
	struct sk_buff *skb = d->skb;
	struct les_sa *sa;
	struct nlattr *nest;
	time64_t expires = 0;
	void *hdr;

	if (x->type != &les_sa_type)
		return 0;
	sa = les_sa_get(x);
	if (!sa || sa->role != LES_ROLE_PEP_VIEW)
		return 0;
	if (x->lft.hard_add_expires_seconds) {
		expires = x->curlft.add_time + x->lft.hard_add_expires_seconds -
			  ktime_get_real_seconds();
		expires = max_t(time64_t, expires, 1);
	}

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &les_genl_family, NLM_F_MULTI, LES_CMD_GET_KEY);
	if (!hdr)
		return -EMSGSIZE;
	nest = nla_nest_start(skb, LES_A_KEY);
	if (!nest ||
	    nla_put_u8(skb, LES_KEY_A_FAMILY, x->props.family) ||
	    les_put_addr(skb, LES_KEY_A_SADDR, x->props.family, &x->props.saddr) ||
	    les_put_addr(skb, LES_KEY_A_DADDR, x->props.family, &x->id.daddr) ||
	    nla_put_u32(skb, LES_KEY_A_SPI, ntohl(x->id.spi)) ||
	    nla_put_u32(skb, LES_KEY_A_MARK, x->mark.v) ||
	    nla_put_u8(skb, LES_KEY_A_MODE, x->props.mode) ||
	    nla_put_u8(skb, LES_KEY_A_ESN, !!(x->props.flags & XFRM_STATE_ESN)) ||
	    (x->encap &&
	     (nla_put_u16(skb, LES_KEY_A_ENCAP_SPORT, ntohs(x->encap->encap_sport)) ||
	      nla_put_u16(skb, LES_KEY_A_ENCAP_DPORT, ntohs(x->encap->encap_dport)))) ||
	    nla_put_u8(skb, LES_KEY_A_KEYLEN, sa->key_len) ||
	    nla_put_u64_64bit(skb, LES_KEY_A_EXPIRES, expires, LES_KEY_A_PAD) ||
	    nla_put_u64_64bit(skb, LES_KEY_A_PACKETS, x->curlft.packets, LES_KEY_A_PAD) ||
	    nla_put_u64_64bit(skb, LES_KEY_A_BYTES, x->curlft.bytes, LES_KEY_A_PAD) ||
	    nla_put_u64_64bit(skb, LES_KEY_A_AUTH_FAILED, x->stats.integrity_failed,
			      LES_KEY_A_PAD)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

/* The xfrm walk keeps its place between the parts of a dump. */
static struct xfrm_state_walk *les_key_walk(struct netlink_callback *cb)
{
	BUILD_BUG_ON(sizeof(struct xfrm_state_walk) > sizeof(cb->ctx));
	return (struct xfrm_state_walk *)cb->ctx;
}

static int les_genl_key_start(struct netlink_callback *cb)
{
	les_pep_sync(les_pep_net(sock_net(cb->skb->sk)));
	xfrm_state_walk_init(les_key_walk(cb), IPPROTO_ESP, NULL);
	return 0;
}

static int les_genl_key_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct les_key_dump d = { .cb = cb, .skb = skb };

	xfrm_state_walk(sock_net(skb->sk), les_key_walk(cb), les_genl_fill_key, &d);
	return skb->len;
}

static int les_genl_key_done(struct netlink_callback *cb)
{
	xfrm_state_walk_done(les_key_walk(cb), sock_net(cb->skb->sk));
	return 0;
}

/* ---- The flow table ---- */

/* A round trip, once timed: smoothed, shortest, samples. */
static int les_genl_put_rtt(struct sk_buff *skb, const struct les_rtt *r,
			    int srtt, int min, int samples)
{
	if (r->samples &&
	    (nla_put_u32(skb, srtt, r->srtt_us) ||
	     nla_put_u32(skb, min, r->min_us) ||
	     nla_put_u32(skb, samples, r->samples)))
		return -EMSGSIZE;
	return 0;
}

/* What the engine does with a side's data; the dump holds the table lock. */
static int les_genl_put_side_accel(struct sk_buff *skb,
				   const struct les_accel_dir *d)
{
	if (d->early || d->held_bytes) {
		/* What a crash of this PEP would cost (early_ack.c). */
		u32 lead = after(d->ack_point, d->rcv_ack) ?
			   d->ack_point - d->rcv_ack : 0;

		if (nla_put_u8(skb, LES_SIDE_A_EARLY, d->early) ||
		    nla_put_u32(skb, LES_SIDE_A_LEAD, lead) ||
		    nla_put_u32(skb, LES_SIDE_A_HELD, d->held_bytes) ||
		    nla_put_u32(skb, LES_SIDE_A_RTO_US, d->rto_us) ||
		    les_genl_put_rtt(skb, &d->hop_rtt, LES_SIDE_A_HOP_RTT_US,
				     LES_SIDE_A_HOP_RTT_MIN_US,
				     LES_SIDE_A_HOP_RTT_SAMPLES))
			return -EMSGSIZE;
	}
	if (d->over_bytes && nla_put_u32(skb, LES_SIDE_A_OVER, d->over_bytes))
		return -EMSGSIZE;
	return 0;
}

static int les_genl_put_side(struct sk_buff *skb, const struct les_flow *f,
			     unsigned int i)
{
	const struct les_flow_side *s = &f->side[i];
	const struct les_flow_end *e = &f->key.end[i];
	struct nlattr *nest;
	u32 sack[2 * LES_SACK_MAX];
	unsigned int b;

	nest = nla_nest_start(skb, LES_FLOW_A_SIDE);
	if (!nest ||
	    les_put_addr(skb, LES_SIDE_A_ADDR, f->key.family, &e->addr) ||
	    nla_put_u16(skb, LES_SIDE_A_PORT, ntohs(e->port)) ||
	    nla_put_u32(skb, LES_SIDE_A_SPI, s->spi) ||
	    (s->have_isn && nla_put_u32(skb, LES_SIDE_A_ISN, s->isn)) ||
	    (s->packets &&
	     (nla_put_u32(skb, LES_SIDE_A_SEQ, s->seq) ||
	      nla_put_u32(skb, LES_SIDE_A_NEXT, s->next) ||
	      nla_put_u16(skb, LES_SIDE_A_WIN, s->win))) ||
	    ((s->flags_seen & LES_TCP_ACK) && nla_put_u32(skb, LES_SIDE_A_ACK, s->ack)) ||
	    (s->scaled && nla_put_u8(skb, LES_SIDE_A_WSCALE, s->wscale)) ||
	    (s->mss && nla_put_u16(skb, LES_SIDE_A_MSS, s->mss)) ||
	    nla_put_u8(skb, LES_SIDE_A_FLAGS, s->flags_seen) ||
	    nla_put_u64_64bit(skb, LES_SIDE_A_PACKETS, s->packets, LES_SIDE_A_PAD) ||
	    nla_put_u64_64bit(skb, LES_SIDE_A_BYTES, s->bytes, LES_SIDE_A_PAD) ||
	    nla_put_u64_64bit(skb, LES_SIDE_A_RETRANS, s->retrans, LES_SIDE_A_PAD))
		return -EMSGSIZE;
	if (s->sack_n) {
		for (b = 0; b < 2 * s->sack_n; b++)
			sack[b] = s->sack[b];
		if (nla_put(skb, LES_SIDE_A_SACK, 8 * s->sack_n, sack))
			return -EMSGSIZE;
	}
	if (les_genl_put_rtt(skb, &s->rtt, LES_SIDE_A_RTT_US,
			     LES_SIDE_A_RTT_MIN_US, LES_SIDE_A_RTT_SAMPLES))
		return -EMSGSIZE;
	if (f->accel && les_genl_put_side_accel(skb, &f->accel->dir[i]))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int les_genl_fill_flow(struct sk_buff *skb, const struct les_flow *f,
			      void *arg)
{
	struct netlink_callback *cb = arg;
	unsigned long now = jiffies;
	struct nlattr *nest;
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &les_genl_family, NLM_F_MULTI, LES_CMD_GET_FLOW);
	if (!hdr)
		return -EMSGSIZE;
	genl_dump_check_consistent(cb, hdr);
	nest = nla_nest_start(skb, LES_A_FLOW);
	if (!nest ||
	    nla_put_u8(skb, LES_FLOW_A_FAMILY, f->key.family) ||
	    nla_put_u8(skb, LES_FLOW_A_STATE, f->state) ||
	    nla_put_u8(skb, LES_FLOW_A_HANDSHAKE, f->handshake) ||
	    nla_put_u64_64bit(skb, LES_FLOW_A_AGE_MS,
			      jiffies_to_msecs(now - f->created), LES_FLOW_A_PAD) ||
	    nla_put_u64_64bit(skb, LES_FLOW_A_IDLE_MS,
			      jiffies_to_msecs(now - f->last_seen), LES_FLOW_A_PAD) ||
	    les_genl_put_side(skb, f, f->initiator) ||
	    les_genl_put_side(skb, f, !f->initiator)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

/* cb->args[0]: the table walker, from start to done; [1]: its restarts. */
static int les_genl_flow_start(struct netlink_callback *cb)
{
	struct les_pep_net *pn = les_pep_net(sock_net(cb->skb->sk));
	struct rhashtable_iter *iter;

	iter = kmalloc(sizeof(*iter), GFP_KERNEL_ACCOUNT);
	if (!iter)
		return -ENOMEM;
	les_pep_sync(pn);
	les_flow_walk_enter(&pn->flows, iter);
	cb->args[0] = (unsigned long)iter;
	return 0;
}

static int les_genl_flow_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct les_pep_net *pn = les_pep_net(sock_net(skb->sk));

	return les_flow_dump(&pn->flows, skb,
			     (struct rhashtable_iter *)cb->args[0], &cb->args[1],
			     &cb->seq,
			     les_genl_fill_flow, cb);
}

static int les_genl_flow_done(struct netlink_callback *cb)
{
	struct rhashtable_iter *iter = (struct rhashtable_iter *)cb->args[0];

	if (iter) {
		rhashtable_walk_exit(iter);
		kfree(iter);
	}
	return 0;
}

static const struct genl_ops les_genl_ops[] = {
	{
		.cmd	= LES_CMD_GET_CONFIG,
		.doit	= les_genl_get_config,
	},
	{
		.cmd	= LES_CMD_SET_CONFIG,
		.doit	= les_genl_set_config,
		.policy	= les_genl_set_policy,
		.maxattr = LES_A_MAX,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= LES_CMD_GET_STATS,
		.doit	= les_genl_get_stats,
	},
	{
		.cmd	= LES_CMD_GET_KEY,
		.start	= les_genl_key_start,
		.dumpit	= les_genl_key_dump,
		.done	= les_genl_key_done,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= LES_CMD_GET_FLOW,
		.start	= les_genl_flow_start,
		.dumpit	= les_genl_flow_dump,
		.done	= les_genl_flow_done,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= LES_CMD_FLUSH_FLOWS,
		.doit	= les_genl_flush_flows,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
};

static struct genl_family les_genl_family __ro_after_init = {
	.name		= LES_GENL_NAME,
	.version	= LES_GENL_VERSION,
	.netnsok	= true,
	/* Nothing here needs genl_mutex: each command takes what it needs. */
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.ops		= les_genl_ops,
	.n_ops		= ARRAY_SIZE(les_genl_ops),
	/*
	 * resv_start_op stays 0: every command is validated strictly (header
	 * flags, reserved field, attributes against its policy, none where it
	 * has none).
	 */
};

int les_genl_init(void)
{
	return genl_register_family(&les_genl_family);
}

void les_genl_exit(void)
{
	genl_unregister_family(&les_genl_family);
}
