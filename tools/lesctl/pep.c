// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lesctl's generic netlink side: the PEP settings and keys, the flow table
 * and the counters of les.ko, in the caller's network namespace.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/xfrm.h>
#include <libmnl/libmnl.h>

#include "les_genl.h"
#include "les_wire.h"
#include "lesctl.h"

struct les_nl {
	struct mnl_socket *sock;
	unsigned int portid, seq;
	uint16_t family;
	char errmsg[256];	/* the kernel's extack message, if any */
	int dump_intr;		/* the kernel flagged the dump NLM_F_DUMP_INTR */
	char buf[65536];		/* the largest dump part the kernel sends */
};

/* Where answers are printed: stdout, or a buffer while a dump may be retried. */
static FILE *outf;

/* What one request's callbacks share: the data callback gets @data. */
struct talk {
	struct les_nl *nl;
	mnl_cb_t cb;
	void *data;
};

static int extack_attr(const struct nlattr *a, void *data)
{
	struct les_nl *nl = data;

	if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG &&
	    !mnl_attr_validate(a, MNL_TYPE_NUL_STRING))
		snprintf(nl->errmsg, sizeof(nl->errmsg), "%s", mnl_attr_get_str(a));
	return MNL_CB_OK;
}

static int cb_error(const struct nlmsghdr *nlh, void *data)
{
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	unsigned int off = sizeof(*err);

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*err))) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (!err->error)
		return MNL_CB_STOP;
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += err->msg.nlmsg_len - sizeof(struct nlmsghdr);
		mnl_attr_parse(nlh, off, extack_attr, ((struct talk *)data)->nl);
	}
	errno = -err->error;
	return MNL_CB_ERROR;
}

/* The end of a dump; it carries an error if the dump failed part way. */
static int cb_done(const struct nlmsghdr *nlh, void *data)
{
	if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
		((struct talk *)data)->nl->dump_intr = 1;
	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int)) {
		int err = *(const int *)mnl_nlmsg_get_payload(nlh);

		if (err < 0) {
			errno = -err;
			return MNL_CB_ERROR;
		}
	}
	return MNL_CB_STOP;
}

static int cb_noop(const struct nlmsghdr *nlh, void *data)
{
	(void)nlh;
	(void)data;
	return MNL_CB_OK;
}

static mnl_cb_t ctl_cbs[NLMSG_MIN_TYPE] = {
	[NLMSG_NOOP] = cb_noop,
	[NLMSG_ERROR] = cb_error,
	[NLMSG_DONE] = cb_done,
	[NLMSG_OVERRUN] = cb_noop,
};

static struct nlmsghdr *nl_request(struct les_nl *nl, uint16_t type, uint8_t cmd,
				   uint8_t version, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(nl->buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = ++nl->seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

static int talk_data(const struct nlmsghdr *nlh, void *data)
{
	struct talk *t = data;

	if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
		t->nl->dump_intr = 1;
	return t->cb ? t->cb(nlh, t->data) : MNL_CB_OK;
}

/* Whether @len bytes of answers hold the current request's last one. */
static bool nl_ends(const struct les_nl *nl, int len)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)nl->buf;

	for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len))
		if (nlh->nlmsg_seq == nl->seq &&
		    (nlh->nlmsg_type == NLMSG_DONE || nlh->nlmsg_type == NLMSG_ERROR))
			return true;
	return false;
}

/* Reads the current request's answers up to their end, unparsed. */
static void nl_drain(struct les_nl *nl)
{
	int len;

	do
		len = mnl_socket_recvfrom(nl->sock, nl->buf, sizeof(nl->buf));
	while (len > 0 && !nl_ends(nl, len));
}

/*
 * Sends @nlh and feeds every answer to @cb; 0 or -1 with errno set (EINTR:
 * a dump the kernel flagged as interrupted, nl->dump_intr set).
 */
static int nl_talk(struct les_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	struct talk t = { .nl = nl, .cb = cb, .data = data };
	bool ended;
	int ret;

	nl->errmsg[0] = 0;
	nl->dump_intr = 0;
	if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
		return -1;
	do {
		ret = mnl_socket_recvfrom(nl->sock, nl->buf, sizeof(nl->buf));
		if (ret < 0)
			return -1;
		ended = nl_ends(nl, ret);
		ret = mnl_cb_run2(nl->buf, ret, nl->seq, nl->portid, talk_data, &t,
				  ctl_cbs, NLMSG_MIN_TYPE);
	} while (ret > MNL_CB_STOP);
	if (ret < 0 && errno == EINTR) {
		/*
		 * libmnl stops at the first message flagged NLM_F_DUMP_INTR; the
		 * flag may sit on NLMSG_DONE itself, so read on only if the end
		 * is still to come.
		 */
		nl->dump_intr = 1;
		if (!ended)
			nl_drain(nl);
		errno = EINTR;
	}
	return ret < 0 ? -1 : 0;
}

static int family_attr(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID &&
	    !mnl_attr_validate(a, MNL_TYPE_U16))
		*(uint16_t *)data = mnl_attr_get_u16(a);
	return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), family_attr, data);
	return MNL_CB_OK;
}

static void nl_close(struct les_nl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	free(nl);
}

static struct les_nl *nl_open(void)
{
	struct les_nl *nl = calloc(1, sizeof(*nl));
	struct nlmsghdr *nlh;
	int one = 1;

	if (!nl)
		return NULL;
	nl->sock = mnl_socket_open(NETLINK_GENERIC);
	if (!nl->sock || mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		perror("lesctl: netlink");
		nl_close(nl);
		return NULL;
	}
	/* Error messages from the kernel, without the echoed request. */
	mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = time(NULL);

	nlh = nl_request(nl, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_ACK);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, LES_GENL_NAME);
	if (nl_talk(nl, nlh, family_cb, &nl->family) < 0 || !nl->family) {
		if (errno == ENOENT || !nl->family)
			fprintf(stderr, "lesctl: les.ko is not loaded (no \"%s\" generic netlink family)\n",
				LES_GENL_NAME);
		else
			perror("lesctl: generic netlink");
		nl_close(nl);
		return NULL;
	}
	return nl;
}

static int nl_fail(struct les_nl *nl, const char *what)
{
	int e = errno;

	if (nl->errmsg[0])
		fprintf(stderr, "lesctl: %s: %s\n", what, nl->errmsg);
	else if (e == EPERM)
		fprintf(stderr, "lesctl: %s: %s (needs CAP_NET_ADMIN)\n", what, strerror(e));
	else
		fprintf(stderr, "lesctl: %s: %s\n", what, strerror(e));
	return 1;
}

/* ---- attribute tables ---- */

struct attrs {
	const struct nlattr *tb[32];
	unsigned int max;
};

static int table_cb(const struct nlattr *a, void *data)
{
	struct attrs *t = data;
	unsigned int type = mnl_attr_get_type(a);

	if (type <= t->max && type < 32)
		t->tb[type] = a;
	return MNL_CB_OK;
}

static void parse_top(const struct nlmsghdr *nlh, struct attrs *t, unsigned int max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), table_cb, t);
}

static void parse_nest(const struct nlattr *nest, struct attrs *t, unsigned int max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
	mnl_attr_parse_nested(nest, table_cb, t);
}

/* An unsigned attribute of any width; 0 when absent. */
static unsigned long long get_uint(const struct nlattr *a)
{
	if (!a)
		return 0;
	switch (mnl_attr_get_payload_len(a)) {
	case 1:
		return mnl_attr_get_u8(a);
	case 2:
		return mnl_attr_get_u16(a);
	case 4:
		return mnl_attr_get_u32(a);
	case 8:
		return mnl_attr_get_u64(a);
	}
	return 0;
}

static const char *addr_str(const struct nlattr *a, char *buf, size_t size)
{
	int len = a ? mnl_attr_get_payload_len(a) : 0;

	if (len == 4 || len == 16)
		return inet_ntop(len == 4 ? AF_INET : AF_INET6,
				 mnl_attr_get_payload(a), buf, size);
	return "?";
}

/* ---- settings: pep show / pep set ---- */

struct config {
	int have;
	unsigned int hook, max_flows, idle, mark, port, backlog, flows;
	unsigned int accel, hop, hop_rate, flow_buffer, buffer, peer_buffer, accel_flows;
	unsigned int tick_late, late;
	unsigned long long held;
	unsigned long long mem;
};

static int config_cb(const struct nlmsghdr *nlh, void *data)
{
	struct config *c = data;
	struct attrs t;

	parse_top(nlh, &t, LES_A_MAX);
	if (!t.tb[LES_A_HOOK] || !t.tb[LES_A_MAX_FLOWS] || !t.tb[LES_A_IDLE_TIMEOUT] ||
	    !t.tb[LES_A_PEP_MARK] || !t.tb[LES_A_ENCAP_PORT] || !t.tb[LES_A_BACKLOG] ||
	    !t.tb[LES_A_FLOW_COUNT])
		return MNL_CB_OK;
	c->have = 1;
	c->hook = get_uint(t.tb[LES_A_HOOK]);
	c->max_flows = get_uint(t.tb[LES_A_MAX_FLOWS]);
	c->idle = get_uint(t.tb[LES_A_IDLE_TIMEOUT]);
	c->mark = get_uint(t.tb[LES_A_PEP_MARK]);
	c->port = get_uint(t.tb[LES_A_ENCAP_PORT]);
	c->backlog = get_uint(t.tb[LES_A_BACKLOG]);
	c->flows = get_uint(t.tb[LES_A_FLOW_COUNT]);
	c->accel = get_uint(t.tb[LES_A_ACCEL]);
	c->hop = get_uint(t.tb[LES_A_HOP_IFINDEX]);
	c->hop_rate = get_uint(t.tb[LES_A_HOP_RATE]);
	c->flow_buffer = get_uint(t.tb[LES_A_FLOW_BUFFER]);
	c->buffer = get_uint(t.tb[LES_A_BUFFER]);
	c->peer_buffer = get_uint(t.tb[LES_A_PEER_BUFFER]);
	c->held = get_uint(t.tb[LES_A_HELD]);
	c->accel_flows = get_uint(t.tb[LES_A_ACCEL_FLOWS]);
	c->mem = t.tb[LES_A_MEM] ? get_uint(t.tb[LES_A_MEM]) : 0;
	c->tick_late = t.tb[LES_A_TICK_LATE] ? get_uint(t.tb[LES_A_TICK_LATE]) : 0;
	c->late = t.tb[LES_A_LATE] ? get_uint(t.tb[LES_A_LATE]) : 0;
	return MNL_CB_OK;
}

static int get_config(struct les_nl *nl, struct config *c)
{
	struct nlmsghdr *nlh;

	memset(c, 0, sizeof(*c));
	nlh = nl_request(nl, nl->family, LES_CMD_GET_CONFIG, LES_GENL_VERSION, NLM_F_ACK);
	if (nl_talk(nl, nlh, config_cb, c) < 0)
		return nl_fail(nl, "pep settings");
	if (!c->have) {
		fprintf(stderr, "lesctl: les.ko sent no PEP settings\n");
		return 1;
	}
	return 0;
}

struct key_ctx {
	unsigned int pep_mark;
	int n;
};

static int key_cb(const struct nlmsghdr *nlh, void *data)
{
	struct key_ctx *k = data;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	struct attrs top, t;
	unsigned long long expires;
	unsigned int mark;
	int mode, esn;

	parse_top(nlh, &top, LES_A_MAX);
	if (!top.tb[LES_A_KEY])
		return MNL_CB_OK;
	parse_nest(top.tb[LES_A_KEY], &t, LES_KEY_A_MAX);
	if (!t.tb[LES_KEY_A_SPI] || !t.tb[LES_KEY_A_MARK] || !t.tb[LES_KEY_A_MODE])
		return MNL_CB_OK;
	addr_str(t.tb[LES_KEY_A_SADDR], src, sizeof(src));
	addr_str(t.tb[LES_KEY_A_DADDR], dst, sizeof(dst));
	mark = get_uint(t.tb[LES_KEY_A_MARK]);
	mode = get_uint(t.tb[LES_KEY_A_MODE]);
	esn = get_uint(t.tb[LES_KEY_A_ESN]);
	expires = get_uint(t.tb[LES_KEY_A_EXPIRES]);

	if (json) {
		fprintf(outf, "%s{\"src\":\"%s\",\"dst\":\"%s\",\"spi\":%llu,\"mark\":%u,\"active\":%s,"
		       "\"mode\":\"%s\",\"esn\":%s,\"keylen\":%llu,",
		       k->n ? "," : "", src, dst, get_uint(t.tb[LES_KEY_A_SPI]), mark,
		       mark == k->pep_mark ? "true" : "false",
		       mode == XFRM_MODE_TUNNEL ? "tunnel" : "transport",
		       esn ? "true" : "false",
		       get_uint(t.tb[LES_KEY_A_KEYLEN]));
		if (t.tb[LES_KEY_A_ENCAP_SPORT] && t.tb[LES_KEY_A_ENCAP_DPORT])
			fprintf(outf, "\"encap\":{\"sport\":%llu,\"dport\":%llu},",
			       get_uint(t.tb[LES_KEY_A_ENCAP_SPORT]),
			       get_uint(t.tb[LES_KEY_A_ENCAP_DPORT]));
		fprintf(outf, "\"expires\":%llu,\"packets\":%llu,\"bytes\":%llu,\"auth_failed\":%llu}",
		       expires,
		       get_uint(t.tb[LES_KEY_A_PACKETS]),
		       get_uint(t.tb[LES_KEY_A_BYTES]),
		       get_uint(t.tb[LES_KEY_A_AUTH_FAILED]));
	} else {
		fprintf(outf, "key src %s dst %s spi 0x%08llx mode %s%s",
		       src, dst, get_uint(t.tb[LES_KEY_A_SPI]),
		       mode == XFRM_MODE_TUNNEL ? "tunnel" : "transport",
		       esn ? " esn" : "");
		if (t.tb[LES_KEY_A_ENCAP_SPORT] && t.tb[LES_KEY_A_ENCAP_DPORT])
			fprintf(outf, " encap espinudp %llu %llu",
			       get_uint(t.tb[LES_KEY_A_ENCAP_SPORT]),
			       get_uint(t.tb[LES_KEY_A_ENCAP_DPORT]));
		fprintf(outf, " keylen %llu", get_uint(t.tb[LES_KEY_A_KEYLEN]));
		if (expires)
			fprintf(outf, " expires %llus", expires);
		fprintf(outf, "\n    packets %llu bytes %llu auth-failed %llu",
		       get_uint(t.tb[LES_KEY_A_PACKETS]),
		       get_uint(t.tb[LES_KEY_A_BYTES]),
		       get_uint(t.tb[LES_KEY_A_AUTH_FAILED]));
		if (mark != k->pep_mark)
			fprintf(outf, " (unused: mark 0x%x is not the PEP mark)", mark);
		fprintf(outf, "\n");
	}
	k->n++;
	return MNL_CB_OK;
}

static int pep_show(struct les_nl *nl)
{
	char hop[IF_NAMESIZE + 12];
	struct key_ctx k = { 0 };
	struct nlmsghdr *nlh;
	struct config c;

	if (get_config(nl, &c))
		return 1;
	k.pep_mark = c.mark;
	if (!c.hop || !if_indextoname(c.hop, hop))
		snprintf(hop, sizeof(hop), c.hop ? "%u" : "none", c.hop);
	if (json)
		fprintf(outf, "{\"hook\":%s,\"mark\":%u,\"encap_port\":%u,\"backlog\":%u,"
		       "\"max_flows\":%u,\"idle_timeout\":%u,\"flows\":%u,"
		       "\"accel\":%s,\"hop_dev\":\"%s\",\"hop_rate\":%u,\"flow_buffer\":%u,"
		       "\"buffer\":%u,\"peer_buffer\":%u,\"held\":%llu,\"mem\":%llu,"
		       "\"accel_flows\":%u,\"tick_late_pct\":%u,\"late\":%s,\"keys\":[",
		       c.hook ? "true" : "false", c.mark, c.port, c.backlog,
		       c.max_flows, c.idle, c.flows, c.accel ? "true" : "false", hop,
		       c.hop_rate, c.flow_buffer, c.buffer, c.peer_buffer, c.held, c.mem,
		       c.accel_flows, c.tick_late, c.late ? "true" : "false");
	else
		fprintf(outf, "hook %s mark 0x%x encap-port %u backlog %u max-flows %u idle-timeout %u "
		       "flows %u\naccel %s hop-dev %s hop-rate %u flow-buffer %u buffer %u "
		       "peer-buffer %u held %llu mem %llu accel-flows %u tick-late-pct %u late %u\n",
		       c.hook ? "on" : "off", c.mark, c.port, c.backlog,
		       c.max_flows, c.idle, c.flows, c.accel ? "on" : "off", hop,
		       c.hop_rate, c.flow_buffer, c.buffer, c.peer_buffer, c.held, c.mem,
		       c.accel_flows, c.tick_late, !!c.late);
	fflush(stdout);
	nlh = nl_request(nl, nl->family, LES_CMD_GET_KEY, LES_GENL_VERSION, NLM_F_DUMP);
	if (nl_talk(nl, nlh, key_cb, &k) < 0) {
		if (json)
			fprintf(outf, "]}\n");
		return nl_fail(nl, "pep keys");
	}
	if (json)
		fprintf(outf, "]}\n");
	return 0;
}

static int parse_u32(const char *s, unsigned long max, unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (!*s || *end || errno || v > max || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

/* The settings "pep set" changes; a bit in @have per setting given. */
struct settings {
	unsigned int have;
	unsigned int v[LES_A_MAX + 1];
};

static const struct {
	const char *word;
	int attr;
	unsigned long max;
} setting_words[] = {
	{ "hook", LES_A_HOOK, 1 },
	{ "max-flows", LES_A_MAX_FLOWS, 0xffffffffUL },
	{ "idle-timeout", LES_A_IDLE_TIMEOUT, 0xffffffffUL },
	{ "mark", LES_A_PEP_MARK, 0xffffffffUL },
	{ "encap-port", LES_A_ENCAP_PORT, 0xffff },
	{ "backlog", LES_A_BACKLOG, 0xffffffffUL },
	{ "accel", LES_A_ACCEL, 1 },
	{ "hop-dev", LES_A_HOP_IFINDEX, 0xffffffffUL },
	{ "hop-rate", LES_A_HOP_RATE, 0xffffffffUL },
	{ "flow-buffer", LES_A_FLOW_BUFFER, 0xffffffffUL },
	{ "buffer", LES_A_BUFFER, 0xffffffffUL },
	{ "peer-buffer", LES_A_PEER_BUFFER, 0xffffffffUL },
};

/* Returns 0, or 2 (usage) after saying what is wrong. */
static int pep_set_parse(int argc, char **argv, struct settings *set)
{
	unsigned int i, w;

	memset(set, 0, sizeof(*set));
	if (!argc) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < (unsigned int)argc; i += 2) {
		const char *k = argv[i], *s = i + 1 < (unsigned int)argc ? argv[i + 1] : NULL;

		for (w = 0; w < sizeof(setting_words) / sizeof(setting_words[0]); w++)
			if (!strcmp(k, setting_words[w].word))
				break;
		if (w == sizeof(setting_words) / sizeof(setting_words[0])) {
			fprintf(stderr, "lesctl: unknown setting \"%s\"\n", k);
			return 2;
		}
		if (!s) {
			fprintf(stderr, "lesctl: \"%s\" needs a value\n", k);
			return 2;
		}
		if (setting_words[w].attr == LES_A_HOOK ||
		    setting_words[w].attr == LES_A_ACCEL) {
			if (strcmp(s, "on") && strcmp(s, "off")) {
				fprintf(stderr, "lesctl: %s is on or off\n", k);
				return 2;
			}
			set->v[setting_words[w].attr] = !strcmp(s, "on");
		} else if (setting_words[w].attr == LES_A_HOP_IFINDEX) {
			/* A device of the namespace lesctl runs in, or none. */
			set->v[LES_A_HOP_IFINDEX] = strcmp(s, "none") ? if_nametoindex(s) : 0;
			if (strcmp(s, "none") && !set->v[LES_A_HOP_IFINDEX]) {
				fprintf(stderr, "lesctl: no device \"%s\"\n", s);
				return 2;
			}
		} else if (parse_u32(s, setting_words[w].max,
				     &set->v[setting_words[w].attr])) {
			fprintf(stderr, "lesctl: bad %s \"%s\"\n", k, s);
			return 2;
		}
		set->have |= 1U << setting_words[w].attr;
	}
	return 0;
}

static int pep_set(struct les_nl *nl, const struct settings *set)
{
	struct nlmsghdr *nlh;
	unsigned int w;

	nlh = nl_request(nl, nl->family, LES_CMD_SET_CONFIG, LES_GENL_VERSION, NLM_F_ACK);
	for (w = 0; w < sizeof(setting_words) / sizeof(setting_words[0]); w++) {
		int attr = setting_words[w].attr;

		if (!(set->have & 1U << attr))
			continue;
		/* The attribute is as wide as the setting's range (les_genl.h). */
		if (setting_words[w].max <= 0xff)
			mnl_attr_put_u8(nlh, attr, set->v[attr]);
		else if (setting_words[w].max <= 0xffff)
			mnl_attr_put_u16(nlh, attr, set->v[attr]);
		else
			mnl_attr_put_u32(nlh, attr, set->v[attr]);
	}
	if (nl_talk(nl, nlh, NULL, NULL) < 0)
		return nl_fail(nl, "pep set");
	return 0;
}

/* ---- flows ---- */

static const char *const flow_states[] = {
	[LES_FLOW_SYN_SENT]	= "syn-sent",
	[LES_FLOW_SYN_RECV]	= "syn-recv",
	[LES_FLOW_ESTABLISHED]	= "established",
	[LES_FLOW_FIN_WAIT]	= "fin-wait",
	[LES_FLOW_CLOSED]	= "closed",
};

static void print_side(const struct nlattr *nest, const char *role, int first)
{
	/* In this order; "early" is a flag (its data ACKed early here). */
	static const struct { int attr; const char *json, *word; } uints[] = {
		{ LES_SIDE_A_ISN, "isn", "isn" },
		{ LES_SIDE_A_SEQ, "seq", "seq" },
		{ LES_SIDE_A_NEXT, "next", "next" },
		{ LES_SIDE_A_ACK, "ack", "ack" },
		{ LES_SIDE_A_WIN, "win", "win" },
		{ LES_SIDE_A_WSCALE, "wscale", "wscale" },
		{ LES_SIDE_A_MSS, "mss", "mss" },
		{ LES_SIDE_A_PACKETS, "packets", "packets" },
		{ LES_SIDE_A_BYTES, "bytes", "bytes" },
		{ LES_SIDE_A_RETRANS, "retrans", "retrans" },
		{ LES_SIDE_A_RTT_US, "rtt_us", "rtt-us" },
		{ LES_SIDE_A_RTT_MIN_US, "rtt_min_us", "rtt-min-us" },
		{ LES_SIDE_A_RTT_SAMPLES, "rtt_samples", "rtt-samples" },
		{ LES_SIDE_A_EARLY, "early", "early" },
		{ LES_SIDE_A_LEAD, "lead", "lead" },
		{ LES_SIDE_A_HELD, "held", "held" },
		{ LES_SIDE_A_HOP_RTT_US, "hop_rtt_us", "hop-rtt-us" },
		{ LES_SIDE_A_HOP_RTT_MIN_US, "hop_rtt_min_us", "hop-rtt-min-us" },
		{ LES_SIDE_A_HOP_RTT_SAMPLES, "hop_rtt_samples", "hop-rtt-samples" },
		{ LES_SIDE_A_RTO_US, "rto_us", "rto-us" },
		{ LES_SIDE_A_OVER, "over", "over" },
	};
	char addr[INET6_ADDRSTRLEN];
	struct attrs t;
	unsigned int i;

	parse_nest(nest, &t, LES_SIDE_A_MAX);
	addr_str(t.tb[LES_SIDE_A_ADDR], addr, sizeof(addr));
	if (json)
		fprintf(outf, "%s\"%s\":{\"addr\":\"%s\",\"port\":%llu,\"spi\":%llu,\"flags\":%llu",
		       first ? "" : ",", role, addr,
		       get_uint(t.tb[LES_SIDE_A_PORT]),
		       get_uint(t.tb[LES_SIDE_A_SPI]),
		       get_uint(t.tb[LES_SIDE_A_FLAGS]));
	else
		fprintf(outf, "    %s %s port %llu spi 0x%08llx", role, addr,
		       get_uint(t.tb[LES_SIDE_A_PORT]),
		       get_uint(t.tb[LES_SIDE_A_SPI]));
	for (i = 0; i < sizeof(uints) / sizeof(uints[0]); i++) {
		const struct nlattr *a = t.tb[uints[i].attr];

		if (!a)
			continue;
		if (uints[i].attr == LES_SIDE_A_EARLY) {
			if (json)
				fprintf(outf, ",\"early\":%s", get_uint(a) ? "true" : "false");
			else if (get_uint(a))
				fprintf(outf, " early");
		} else if (json) {
			fprintf(outf, ",\"%s\":%llu", uints[i].json, get_uint(a));
		} else {
			fprintf(outf, " %s %llu", uints[i].word, get_uint(a));
		}
	}
	if (t.tb[LES_SIDE_A_SACK]) {
		const uint32_t *e = mnl_attr_get_payload(t.tb[LES_SIDE_A_SACK]);
		unsigned int n = mnl_attr_get_payload_len(t.tb[LES_SIDE_A_SACK]) / 8;

		fprintf(outf, json ? ",\"sack\":[" : " sack");
		for (i = 0; i < n; i++)
			fprintf(outf, json ? "%s[%u,%u]" : "%s%u-%u", json && i ? "," : " ",
			       e[2 * i], e[2 * i + 1]);
		fprintf(outf, json ? "]" : "");
	}
	fprintf(outf, json ? "}" : "\n");
}

static int flow_cb(const struct nlmsghdr *nlh, void *data)
{
	int *n = data;
	const struct nlattr *a, *sides[2] = { NULL, NULL };
	struct attrs top, t;
	unsigned int state, nsides = 0;
	unsigned long long handshake, age, idle;

	parse_top(nlh, &top, LES_A_MAX);
	if (!top.tb[LES_A_FLOW])
		return MNL_CB_OK;
	parse_nest(top.tb[LES_A_FLOW], &t, LES_FLOW_A_MAX);
	mnl_attr_for_each_nested(a, top.tb[LES_A_FLOW])
		if (mnl_attr_get_type(a) == LES_FLOW_A_SIDE && nsides < 2)
			sides[nsides++] = a;
	if (nsides != 2 || !t.tb[LES_FLOW_A_STATE])
		return MNL_CB_OK;
	state = get_uint(t.tb[LES_FLOW_A_STATE]);
	if (state >= sizeof(flow_states) / sizeof(flow_states[0]) || !flow_states[state])
		return MNL_CB_OK;

	handshake = get_uint(t.tb[LES_FLOW_A_HANDSHAKE]);
	age = get_uint(t.tb[LES_FLOW_A_AGE_MS]);
	idle = get_uint(t.tb[LES_FLOW_A_IDLE_MS]);
	if (json)
		fprintf(outf, "%s{\"proto\":\"tcp\",\"state\":\"%s\",\"handshake\":%s,"
		       "\"age_ms\":%llu,\"idle_ms\":%llu,", *n ? "," : "",
		       flow_states[state], handshake ? "true" : "false", age, idle);
	else
		fprintf(outf, "tcp %s%s age %llums idle %llums\n", flow_states[state],
		       handshake ? "" : " (picked up mid-stream)", age, idle);
	print_side(sides[0], "initiator", 1);
	print_side(sides[1], "responder", 0);
	if (json)
		fprintf(outf, "}");
	(*n)++;
	return MNL_CB_OK;
}

#define DUMP_TRIES	8

/*
 * One request whose answers @cb prints; JSON between @open and @close.  A
 * dump the kernel flags as interrupted (the table changed under it: a flow
 * may be repeated or missed) is asked again, its output thrown away.
 */
static int show(struct les_nl *nl, uint8_t cmd, uint16_t flags, mnl_cb_t cb,
		const char *open, const char *close, const char *what)
{
	struct nlmsghdr *nlh;
	int tries, err = 0;
	size_t len = 0;
	char *buf = NULL;

	for (tries = 1; tries <= DUMP_TRIES; tries++) {
		int n = 0;

		outf = open_memstream(&buf, &len);
		if (!outf) {
			outf = stdout;
			perror("lesctl");
			return 1;
		}
		nlh = nl_request(nl, nl->family, cmd, LES_GENL_VERSION, flags);
		if (json)
			fprintf(outf, "%s", open);
		err = nl_talk(nl, nlh, cb, &n);
		if (json)
			fprintf(outf, "%s\n", close);
		fclose(outf);
		outf = stdout;
		if (!nl->dump_intr || tries == DUMP_TRIES)
			break;
		free(buf);
		buf = NULL;
	}
	if (err < 0 && !nl->dump_intr) {
		free(buf);
		return nl_fail(nl, what);
	}
	if (nl->dump_intr) {
		free(buf);
		fprintf(stderr, "lesctl: %s: the table changed during each of %d dumps; "
			"try again\n", what, DUMP_TRIES);
		return 1;
	}
	fwrite(buf, 1, len, stdout);
	free(buf);
	return 0;
}

static int flows_show(struct les_nl *nl)
{
	return show(nl, LES_CMD_GET_FLOW, NLM_F_DUMP, flow_cb, "[", "]", "flows");
}

static int flows_flush(struct les_nl *nl)
{
	struct nlmsghdr *nlh;

	nlh = nl_request(nl, nl->family, LES_CMD_FLUSH_FLOWS, LES_GENL_VERSION, NLM_F_ACK);
	return nl_talk(nl, nlh, NULL, NULL) < 0 ? nl_fail(nl, "flows flush") : 0;
}

/* ---- counters ---- */

static int stat_cb(const struct nlmsghdr *nlh, void *data)
{
	int *n = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		struct attrs t;

		if (mnl_attr_get_type(a) != LES_A_STAT)
			continue;
		parse_nest(a, &t, LES_STAT_A_MAX);
		if (!t.tb[LES_STAT_A_NAME] || !t.tb[LES_STAT_A_VALUE] ||
		    mnl_attr_validate(t.tb[LES_STAT_A_NAME], MNL_TYPE_NUL_STRING))
			continue;
		if (json)
			fprintf(outf, "%s\"%s\":%llu", *n ? "," : "",
			       mnl_attr_get_str(t.tb[LES_STAT_A_NAME]),
			       get_uint(t.tb[LES_STAT_A_VALUE]));
		else
			fprintf(outf, "%-20s %llu\n", mnl_attr_get_str(t.tb[LES_STAT_A_NAME]),
			       get_uint(t.tb[LES_STAT_A_VALUE]));
		(*n)++;
	}
	return MNL_CB_OK;
}

static int stats_show(struct les_nl *nl)
{
	return show(nl, LES_CMD_GET_STATS, NLM_F_ACK, stat_cb, "{", "}", "stats");
}

int lesctl_netlink(int argc, char **argv)
{
	struct settings set;
	struct les_nl *nl;
	int ret = 2;

	outf = stdout;
	/* Check the words before touching netlink: usage errors exit 2. */
	if (!strcmp(argv[0], "stats")) {
		if (argc != 1)
			goto usage;
	} else if (!strcmp(argv[0], "pep")) {
		if (argc < 2 || (strcmp(argv[1], "show") && strcmp(argv[1], "set")) ||
		    (!strcmp(argv[1], "show") && argc != 2))
			goto usage;
		if (!strcmp(argv[1], "set") && pep_set_parse(argc - 2, argv + 2, &set))
			return 2;
	} else if (!strcmp(argv[0], "flows")) {
		if (argc > 2 || (argc == 2 && strcmp(argv[1], "show") &&
				 strcmp(argv[1], "flush")))
			goto usage;
	} else {
		goto usage;
	}

	nl = nl_open();
	if (!nl)
		return 1;
	if (!strcmp(argv[0], "stats"))
		ret = stats_show(nl);
	else if (!strcmp(argv[0], "pep") && !strcmp(argv[1], "show"))
		ret = pep_show(nl);
	else if (!strcmp(argv[0], "pep"))
		ret = pep_set(nl, &set);
	else if (argc == 2 && !strcmp(argv[1], "flush"))
		ret = flows_flush(nl);
	else
		ret = flows_show(nl);
	nl_close(nl);
	return ret;
usage:
	usage(stderr);
	return 2;
}
