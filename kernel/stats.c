// SPDX-License-Identifier: GPL-2.0
/*
 * LES counters, per network namespace, in /proc/net/les_stat (the format
 * of /proc/net/xfrm_stat: one "Name value" line each).  xfrm's own
 * counters (XfrmInStateProtoError, per-SA integrity-failed and replay) are
 * bumped as well, by xfrm, from the errors les.ko returns.
 */
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "les.h"

struct les_net {
	u64 __percpu *stats;	/* LES_STAT_MAX counters */
};

static unsigned int les_net_id __read_mostly;

static const char *const les_stat_names[LES_STAT_MAX] = {
	[LES_STAT_OUT_PACKETS]		= "LesOutPackets",
	[LES_STAT_OUT_HEADER_ONLY]	= "LesOutHeaderOnly",
	[LES_STAT_OUT_ERRORS]		= "LesOutErrors",
	[LES_STAT_OUT_POLICY]		= "LesOutPolicy",
	[LES_STAT_IN_PACKETS]		= "LesInPackets",
	[LES_STAT_IN_HEADER_ONLY]	= "LesInHeaderOnly",
	[LES_STAT_IN_MALFORMED]		= "LesInMalformed",
	[LES_STAT_IN_AUTH_FAILED]	= "LesInAuthFailed",
	[LES_STAT_IN_POLICY]		= "LesInPolicy",
	[LES_STAT_IN_ERRORS]		= "LesInErrors",
};

void les_stat_inc(struct net *net, enum les_stat item)
{
	struct les_net *ln = net_generic(net, les_net_id);

	this_cpu_inc(ln->stats[item]);
}

static int les_stat_show(struct seq_file *seq, void *v)
{
	struct net *net = seq_file_single_net(seq);
	struct les_net *ln = net_generic(net, les_net_id);
	int i, cpu;

	for (i = 0; i < LES_STAT_MAX; i++) {
		u64 sum = 0;

		for_each_possible_cpu(cpu)
			sum += per_cpu_ptr(ln->stats, cpu)[i];
		seq_printf(seq, "%-24s\t%llu\n", les_stat_names[i], sum);
	}
	return 0;
}

static int __net_init les_net_init(struct net *net)
{
	struct les_net *ln = net_generic(net, les_net_id);

	ln->stats = __alloc_percpu(sizeof(u64) * LES_STAT_MAX, __alignof__(u64));
	if (!ln->stats)
		return -ENOMEM;
	if (!proc_create_net_single("les_stat", 0444, net->proc_net,
				    les_stat_show, NULL)) {
		free_percpu(ln->stats);
		return -ENOMEM;
	}
	return 0;
}

static void __net_exit les_net_exit(struct net *net)
{
	struct les_net *ln = net_generic(net, les_net_id);

	remove_proc_entry("les_stat", net->proc_net);
	free_percpu(ln->stats);
}

static struct pernet_operations les_net_ops = {
	.init	= les_net_init,
	.exit	= les_net_exit,
	.id	= &les_net_id,
	.size	= sizeof(struct les_net),
};

int les_stats_init(void)
{
	return register_pernet_subsys(&les_net_ops);
}

void les_stats_exit(void)
{
	unregister_pernet_subsys(&les_net_ops);
}
