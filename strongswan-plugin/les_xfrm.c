// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kernel-netlink moves an SA (update_sa, for MOBIKE) by reading it,
 * deleting it and adding it at the new addresses, in requests of 1 KiB
 * into which it copies the replay bitmap twice (with the SA's attributes,
 * then from the replay state it reads apart).  With an LES blob (116
 * bytes) and a replay window of more than about 1,800 packets the new SA
 * does not fit: it is never added, and the old one is gone.  LES SAs want
 * windows of 4,096 (docs/accel.md 1), so they move here, the same way,
 * with room: the SA as the kernel dumps it, its replay state and lifetime
 * counters with it, under the new addresses.
 */
#include "les_xfrm.h"
#include "les_nl.h"
#include "les_wire.h"

#include <daemon.h>

#include <errno.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/udp.h>
#include <linux/xfrm.h>
#include <sys/socket.h>

/* An SA's info, an LES blob, a 4,096-packet replay bitmap and the rest. */
#define LES_XFRM_BUF	4096

typedef struct {
	union {
		struct nlmsghdr nlh;
		char buf[LES_XFRM_BUF];
	};
} les_xfrm_msg_t;

static void addr_put(xfrm_address_t *x, host_t *host)
{
	chunk_t a = host->get_address(host);

	memset(x, 0, sizeof(*x));
	memcpy(x, a.ptr, min(a.len, sizeof(*x)));
}

static void *attr_put(les_xfrm_msg_t *m, uint16_t type, const void *data,
					  size_t len)
{
	return les_nl_put(&m->nlh, sizeof(m->buf), type, data, len);
}

/* A request naming the SA @id: XFRM_MSG_GETSA or XFRM_MSG_DELSA. */
static bool id_request(les_xfrm_msg_t *m, uint16_t type,
					   kernel_ipsec_sa_id_t *id)
{
	struct xfrm_usersa_id *sid;
	struct xfrm_mark mark = { id->mark.value, id->mark.mask };

	memset(m, 0, NLMSG_LENGTH(sizeof(*sid)));
	m->nlh.nlmsg_len = NLMSG_LENGTH(sizeof(*sid));
	m->nlh.nlmsg_type = type;
	m->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	sid = NLMSG_DATA(&m->nlh);
	addr_put(&sid->daddr, id->dst);
	sid->spi = id->spi;
	sid->proto = id->proto;
	sid->family = id->dst->get_family(id->dst);
	return (!(mark.v | mark.m) ||
			attr_put(m, XFRMA_MARK, &mark, sizeof(mark))) &&
		   (!id->if_id ||
			attr_put(m, XFRMA_IF_ID, &id->if_id, sizeof(id->if_id)));
}

/* The attributes after the SA's info in @m, and their length. */
static struct rtattr *sa_attrs(les_xfrm_msg_t *m, size_t *len)
{
	size_t hdr = NLMSG_LENGTH(sizeof(struct xfrm_usersa_info));

	*len = m->nlh.nlmsg_len > hdr ? m->nlh.nlmsg_len - NLMSG_ALIGN(hdr) : 0;
	return (void*)(m->buf + NLMSG_ALIGN(hdr));
}

/* Whether the SA @m dumps has an LES blob as its key. */
static bool is_les(les_xfrm_msg_t *m)
{
	struct xfrm_algo_aead *aead;
	struct rtattr *rta;
	size_t len;

	if (m->nlh.nlmsg_type != XFRM_MSG_NEWSA ||
		m->nlh.nlmsg_len < NLMSG_LENGTH(sizeof(struct xfrm_usersa_info)))
	{
		return FALSE;
	}
	for (rta = sa_attrs(m, &len); RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
	{
		if (rta->rta_type != XFRMA_ALG_AEAD ||
			RTA_PAYLOAD(rta) < sizeof(*aead) + LES_BLOB_MAGIC_LEN)
		{
			continue;
		}
		aead = RTA_DATA(rta);
		return aead->alg_key_len / 8 >= LES_BLOB_MAGIC_LEN &&
			   RTA_PAYLOAD(rta) >= sizeof(*aead) + aead->alg_key_len / 8 &&
			   memeq(aead->alg_key, LES_BLOB_MAGIC, LES_BLOB_MAGIC_LEN);
	}
	return FALSE;
}

/* Whether a selector's address is @host's, alone. */
static bool sel_is(struct xfrm_selector *sel, xfrm_address_t *a,
				   uint8_t prefixlen, host_t *host)
{
	chunk_t h = host->get_address(host);

	return sel->family == host->get_family(host) && prefixlen == h.len * 8 &&
		   memeq(a, h.ptr, h.len);
}

/* Host selectors (transport mode's) move with their hosts. */
static void sel_move(struct xfrm_selector *sel, kernel_ipsec_sa_id_t *id,
					 kernel_ipsec_update_sa_t *data)
{
	bool src = sel_is(sel, &sel->saddr, sel->prefixlen_s, id->src);
	bool dst = sel_is(sel, &sel->daddr, sel->prefixlen_d, id->dst);

	if (src)
	{
		addr_put(&sel->saddr, data->new_src);
		sel->prefixlen_s = data->new_src->get_address(data->new_src).len * 8;
	}
	if (dst)
	{
		addr_put(&sel->daddr, data->new_dst);
		sel->prefixlen_d = data->new_dst->get_address(data->new_dst).len * 8;
	}
	if (src || dst)
	{
		sel->family = data->new_dst->get_family(data->new_dst);
	}
}

/* The XFRM_MSG_NEWSA request of SA @old (as dumped) at @data's addresses. */
static bool moved_sa(les_xfrm_msg_t *m, les_xfrm_msg_t *old,
					 kernel_ipsec_sa_id_t *id, kernel_ipsec_update_sa_t *data)
{
	struct xfrm_usersa_info *info;
	struct xfrm_encap_tmpl *encap = NULL;
	struct rtattr *rta;
	size_t len;

	memset(m, 0, NLMSG_LENGTH(sizeof(*info)));
	m->nlh.nlmsg_len = NLMSG_LENGTH(sizeof(*info));
	m->nlh.nlmsg_type = XFRM_MSG_NEWSA;
	m->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	info = NLMSG_DATA(&m->nlh);
	memcpy(info, NLMSG_DATA(&old->nlh), sizeof(*info));
	info->family = data->new_dst->get_family(data->new_dst);
	addr_put(&info->saddr, data->new_src);
	addr_put(&info->id.daddr, data->new_dst);
	sel_move(&info->sel, id, data);
	if (data->new_reqid)
	{
		info->reqid = data->new_reqid;
	}

	for (rta = sa_attrs(old, &len); RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
	{
		switch (rta->rta_type)
		{
			case XFRMA_ENCAP:
				if (!data->new_encap)
				{
					continue;
				}
				encap = attr_put(m, rta->rta_type, RTA_DATA(rta),
								 RTA_PAYLOAD(rta));
				if (!encap)
				{
					return FALSE;
				}
				break;
			case XFRMA_LASTUSED:
			case XFRMA_OFFLOAD_DEV:
				continue;
			case XFRMA_MTIMER_THRESH:
				/* of encapsulation only */
				if (!data->new_encap)
				{
					continue;
				}
				/* fall through */
			default:
				if (!attr_put(m, rta->rta_type, RTA_DATA(rta),
							  RTA_PAYLOAD(rta)))
				{
					return FALSE;
				}
				break;
		}
	}
	if (!encap && data->new_encap)
	{
		encap = attr_put(m, XFRMA_ENCAP, NULL, sizeof(*encap));
		if (!encap)
		{
			return FALSE;
		}
		memset(encap, 0, sizeof(*encap));
		encap->encap_type = UDP_ENCAP_ESPINUDP;
	}
	if (encap)
	{
		encap->encap_sport = htons(data->new_src->get_port(data->new_src));
		encap->encap_dport = htons(data->new_dst->get_port(data->new_dst));
	}
	/* the bytes, packets and add time its lifetimes count from */
	return attr_put(m, XFRMA_LTIME_VAL,
					&((struct xfrm_usersa_info*)NLMSG_DATA(&old->nlh))->curlft,
					sizeof(struct xfrm_lifetime_cur));
}

status_t les_xfrm_update_sa(kernel_ipsec_sa_id_t *id,
							kernel_ipsec_update_sa_t *data)
{
	les_xfrm_msg_t req, old;
	status_t status = NOT_SUPPORTED;
	int fd, err = -EMSGSIZE;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_XFRM);
	if (fd < 0)
	{
		return NOT_SUPPORTED;
	}
	old.nlh.nlmsg_len = 0;
	if (!id_request(&req, XFRM_MSG_GETSA, id) ||
		les_nl_talk(fd, &req.nlh, old.buf, sizeof(old.buf), NULL, 0) ||
		!is_les(&old))
	{	/* not ours to move: kernel-netlink says why if it cannot */
		goto out;
	}
	status = FAILED;
	if (!moved_sa(&req, &old, id, data))
	{
		DBG1(DBG_KNL, "les: SA %.8x does not fit a request: not moved",
			 ntohl(id->spi));
		goto out;
	}
	memwipe(old.buf, sizeof(old.buf));
	if (!id_request(&old, XFRM_MSG_DELSA, id) ||
		(err = les_nl_talk(fd, &old.nlh, NULL, 0, NULL, 0)))
	{
		DBG1(DBG_KNL, "les: deleting SA %.8x to move it failed: %s",
			 ntohl(id->spi), strerror(-err));
		goto out;
	}
	err = les_nl_talk(fd, &req.nlh, NULL, 0, NULL, 0);
	if (err)
	{
		DBG1(DBG_KNL, "les: adding SA %.8x at %H..%H failed: %s; it is "
			 "lost", ntohl(id->spi), data->new_src, data->new_dst,
			 strerror(-err));
		goto out;
	}
	DBG1(DBG_KNL, "les: moved SA %.8x from %H..%H to %H..%H", ntohl(id->spi),
		 id->src, id->dst, data->new_src, data->new_dst);
	status = SUCCESS;
out:
	memwipe(req.buf, sizeof(req.buf));
	memwipe(old.buf, sizeof(old.buf));
	close(fd);
	return status;
}
