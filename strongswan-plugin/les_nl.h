/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A request and its answer on a plain netlink socket: charon's
 * kernel-netlink keeps its own sockets to itself.
 */
#ifndef LES_NL_H_
#define LES_NL_H_

#include <library.h>
#include <linux/netlink.h>

/*
 * Appends attribute @type of @len bytes (copied from @data if given) to
 * @nlh, in a buffer of @size bytes; its data, or NULL if it does not fit.
 */
void *les_nl_put(struct nlmsghdr *nlh, size_t size, uint16_t type,
				 const void *data, size_t len);

/* The first attribute @type from offset @off of @nlh on, or NULL. */
struct nlattr *les_nl_find(struct nlmsghdr *nlh, size_t off, uint16_t type);

/*
 * Sends @req (which asks for an ACK) and reads its answer: into @reply
 * (if given) the first message that is not the ACK.  Returns 0 or a
 * negative errno, with the extended ACK's message in @why.  What it read
 * is wiped: an answer may hold a key.
 */
int les_nl_talk(int fd, struct nlmsghdr *req, void *reply, size_t reply_len,
				char *why, size_t why_len);

#endif /* LES_NL_H_ */
