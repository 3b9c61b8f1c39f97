// SPDX-License-Identifier: GPL-2.0-or-later
#include "les_nl.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

void *les_nl_put(struct nlmsghdr *nlh, size_t size, uint16_t type,
				 const void *data, size_t len)
{
	struct nlattr *a;

	if (NLMSG_ALIGN(nlh->nlmsg_len) + NLA_HDRLEN + NLA_ALIGN(len) > size)
	{
		return NULL;
	}
	a = (void*)((char*)nlh + NLMSG_ALIGN(nlh->nlmsg_len));
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (data)
	{
		memcpy((char*)a + NLA_HDRLEN, data, len);
	}
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(a->nla_len);
	return (char*)a + NLA_HDRLEN;
}

struct nlattr *les_nl_find(struct nlmsghdr *nlh, size_t off, uint16_t type)
{
	struct nlattr *a;

	while (off + NLA_HDRLEN <= nlh->nlmsg_len)
	{
		a = (void*)((char*)nlh + off);
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > nlh->nlmsg_len)
		{
			return NULL;
		}
		if ((a->nla_type & NLA_TYPE_MASK) == type)
		{
			return a;
		}
		off += NLA_ALIGN(a->nla_len);
	}
	return NULL;
}

/* The ACK @nlh's error, its extended message in @why. */
static int ack_error(struct nlmsghdr *nlh, char *why, size_t why_len)
{
	struct nlmsgerr *err = NLMSG_DATA(nlh);
	struct nlattr *msg;

	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*err)))
	{
		return -EBADMSG;
	}
	if (err->error && (nlh->nlmsg_flags & NLM_F_ACK_TLVS) && why_len)
	{	/* after the request, unless NETLINK_CAP_ACK left it out */
		msg = les_nl_find(nlh, NLMSG_LENGTH(sizeof(*err)) +
					((nlh->nlmsg_flags & NLM_F_CAPPED) ? 0 :
					 NLMSG_ALIGN(err->msg.nlmsg_len) - NLMSG_HDRLEN),
						  NLMSGERR_ATTR_MSG);
		if (msg)
		{
			snprintf(why, why_len, "%.*s", (int)(msg->nla_len - NLA_HDRLEN),
					 (char*)msg + NLA_HDRLEN);
		}
	}
	return err->error;
}

int les_nl_talk(int fd, struct nlmsghdr *req, void *reply, size_t reply_len,
				char *why, size_t why_len)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *nlh;
	ssize_t len;
	int err = 1;

	if (send(fd, req, req->nlmsg_len, 0) < 0)
	{
		return -errno;
	}
	while (err > 0)
	{
		len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0)
		{
			err = -errno;
			break;
		}
		for (nlh = (void*)buf; err > 0 && NLMSG_OK(nlh, len);
			 nlh = NLMSG_NEXT(nlh, len))
		{
			if (nlh->nlmsg_type == NLMSG_ERROR)
			{
				err = ack_error(nlh, why, why_len);
			}
			else if (reply && nlh->nlmsg_len <= reply_len)
			{
				memcpy(reply, nlh, nlh->nlmsg_len);
				reply = NULL;
			}
		}
	}
	memwipe(buf, sizeof(buf));
	return err;
}
