// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One request, LES_CMD_SET_CONFIG, with the settings the section gives:
 * les.ko applies all of them or none (kernel/genl.c), and says why in
 * the extended ACK.  A plain netlink socket: charon's kernel-netlink keeps
 * its own to itself, and two messages need no library.
 */
#include "les_pep_engine.h"
#include "les_genl.h"
#include "les_nl.h"

#include <daemon.h>

#include <errno.h>
#include <net/if.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#define LES_ENGINE_SECTION	"%s.plugins.les.pep.engine"

/* The settings, named as lesctl names them but with '_' (strongswan.conf). */
static const struct {
	const char *name;
	int attr;
	uint32_t max;
} settings[] = {
	{ "hook", LES_A_HOOK, 1 },
	{ "accel", LES_A_ACCEL, 1 },
	{ "hop_dev", LES_A_HOP_IFINDEX, UINT32_MAX },
	{ "hop_rate", LES_A_HOP_RATE, UINT32_MAX },
	{ "flow_buffer", LES_A_FLOW_BUFFER, UINT32_MAX },
	{ "buffer", LES_A_BUFFER, UINT32_MAX },
	{ "peer_buffer", LES_A_PEER_BUFFER, UINT32_MAX },
	{ "max_flows", LES_A_MAX_FLOWS, UINT32_MAX },
	{ "idle_timeout", LES_A_IDLE_TIMEOUT, UINT32_MAX },
	{ "backlog", LES_A_BACKLOG, UINT32_MAX },
};

/* A request being built: header, generic header, attributes. */
typedef struct {
	struct nlmsghdr *nlh;
	char buf[512];
} request_t;

static void request_init(request_t *req, uint16_t type, uint8_t cmd,
						 uint8_t version)
{
	struct genlmsghdr *g;

	memset(req, 0, sizeof(*req));
	req->nlh = (struct nlmsghdr*)req->buf;
	req->nlh->nlmsg_len = NLMSG_LENGTH(sizeof(*g));
	req->nlh->nlmsg_type = type;
	req->nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req->nlh->nlmsg_seq = 1;
	g = NLMSG_DATA(req->nlh);
	g->cmd = cmd;
	g->version = version;
}

static void put_attr(request_t *req, uint16_t type, const void *data,
					 uint16_t len)
{
	les_nl_put(req->nlh, sizeof(req->buf), type, data, len);
}

/* The attribute as wide as the setting's range (les_genl.h). */
static void put_setting(request_t *req, int attr, uint32_t max, uint32_t v)
{
	uint8_t u8 = v;
	uint16_t u16 = v;

	if (max <= UINT8_MAX)
	{
		put_attr(req, attr, &u8, sizeof(u8));
	}
	else if (max <= UINT16_MAX)
	{
		put_attr(req, attr, &u16, sizeof(u16));
	}
	else
	{
		put_attr(req, attr, &v, sizeof(v));
	}
}

/* The id of generic netlink family "les", or a negative errno. */
static int family_id(int fd)
{
	char reply[1024] __attribute__((aligned(4))) = {};
	struct nlmsghdr *nlh = (void*)reply;
	struct nlattr *id;
	request_t req;
	char why[1];
	int err;

	request_init(&req, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	put_attr(&req, CTRL_ATTR_FAMILY_NAME, LES_GENL_NAME,
			 sizeof(LES_GENL_NAME));
	err = les_nl_talk(fd, req.nlh, reply, sizeof(reply), why, sizeof(why));
	if (err)
	{
		return err;
	}
	id = nlh->nlmsg_len ? les_nl_find(nlh, NLMSG_LENGTH(GENL_HDRLEN),
									CTRL_ATTR_FAMILY_ID) : NULL;
	if (!id || id->nla_len != NLA_HDRLEN + sizeof(uint16_t))
	{
		return -EBADMSG;
	}
	return *(uint16_t*)((char*)id + NLA_HDRLEN);
}

/* Parses setting @i's value @s into @v; FALSE if malformed. */
static bool parse(u_int i, char *s, uint32_t *v)
{
	unsigned long long n;
	char *end;

	if (settings[i].attr == LES_A_HOOK || settings[i].attr == LES_A_ACCEL)
	{	/* strongswan.conf's booleans: a word it knows whatever the default */
		*v = settings_value_as_bool(s, TRUE);
		return *v == settings_value_as_bool(s, FALSE);
	}
	if (settings[i].attr == LES_A_HOP_IFINDEX)
	{	/* a device of the namespace charon runs in */
		*v = streq(s, "none") ? 0 : if_nametoindex(s);
		return streq(s, "none") || *v;
	}
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || n > settings[i].max)
	{
		return FALSE;
	}
	*v = n;
	return TRUE;
}

bool les_pep_engine_apply(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char why[256] = "";
	request_t req;
	uint32_t v;
	char *s;
	int fd, id, err, one = 1;
	u_int i, n = 0;

	request_init(&req, 0, LES_CMD_SET_CONFIG, LES_GENL_VERSION);
	for (i = 0; i < countof(settings); i++)
	{
		s = lib->settings->get_str(lib->settings, LES_ENGINE_SECTION ".%s",
								   NULL, lib->ns, settings[i].name);
		if (!s)
		{
			continue;
		}
		if (!parse(i, s, &v))
		{
			DBG1(DBG_CFG, "les pep: engine setting %s = '%s' is not valid: "
				 "nothing set", settings[i].name, s);
			return FALSE;
		}
		put_setting(&req, settings[i].attr, settings[i].max, v);
		n++;
	}
	if (!n)
	{
		return TRUE;
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
	{
		DBG1(DBG_CFG, "les pep: no generic netlink socket: %s",
			 strerror(errno));
		return FALSE;
	}
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	err = bind(fd, (struct sockaddr*)&sa, sizeof(sa)) ? -errno : 0;
	id = err ?: family_id(fd);
	if (id < 0)
	{
		DBG1(DBG_CFG, "les pep: engine settings not set: les.ko's netlink "
			 "family: %s", strerror(-id));
		close(fd);
		return FALSE;
	}
	req.nlh->nlmsg_type = id;
	req.nlh->nlmsg_seq = 2;
	err = les_nl_talk(fd, req.nlh, NULL, 0, why, sizeof(why));
	close(fd);
	if (err)
	{
		DBG1(DBG_CFG, "les pep: les.ko refused the engine settings: %s%s%s",
			 strerror(-err), why[0] ? ": " : "", why);
		return FALSE;
	}
	DBG1(DBG_CFG, "les pep: engine settings set (%u)", n);
	return TRUE;
}
