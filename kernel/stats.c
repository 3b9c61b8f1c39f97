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

/*
 * Per CPU, as xfrm's and SNMP's MIBs are: the hot paths never share a
 * cache line for counting.  A reader sums the CPUs.  The area lives until
 * the namespace's pernet exit, after the devices (and with them every skb
 * in flight) are gone, as net->mib.xfrm_statistics does.
 */
struct les_mib {
	unsigned long mibs[LES_STAT_MAX];
};

struct les_net {
	struct les_mib __percpu *mib;
};

static unsigned int les_net_id __read_mostly;

static const char *const les_stat_names[LES_STAT_MAX] = {
	[LES_STAT_OUT_PACKETS]		= "LesOutPackets",
	[LES_STAT_OUT_HEADER_ONLY]	= "LesOutHeaderOnly",
	[LES_STAT_OUT_ERRORS]		= "LesOutErrors",
	[LES_STAT_OUT_POLICY]		= "LesOutPolicy",
	[LES_STAT_OUT_PAGED]		= "LesOutPaged",
	[LES_STAT_OUT_LINEARISED]	= "LesOutLinearised",
	[LES_STAT_IN_PACKETS]		= "LesInPackets",
	[LES_STAT_IN_HEADER_ONLY]	= "LesInHeaderOnly",
	[LES_STAT_IN_MALFORMED]		= "LesInMalformed",
	[LES_STAT_IN_AUTH_FAILED]	= "LesInAuthFailed",
	[LES_STAT_IN_POLICY]		= "LesInPolicy",
	[LES_STAT_IN_ERRORS]		= "LesInErrors",
	[LES_STAT_PEP_OPENED]		= "LesPepOpened",
	[LES_STAT_PEP_NO_KEY]		= "LesPepNoKey",
	[LES_STAT_PEP_AUTH_FAILED]	= "LesPepAuthFailed",
	[LES_STAT_PEP_MALFORMED]	= "LesPepMalformed",
	[LES_STAT_PEP_NOT_TCP]		= "LesPepNotTcp",
	[LES_STAT_PEP_SKIPPED]		= "LesPepSkipped",
	[LES_STAT_PEP_ERRORS]		= "LesPepErrors",
	[LES_STAT_PEP_FLOWS_NEW]	= "LesPepFlowsNew",
	[LES_STAT_PEP_FLOWS_EXPIRED]	= "LesPepFlowsExpired",
	[LES_STAT_PEP_FLOWS_EVICTED]	= "LesPepFlowsEvicted",
	[LES_STAT_PEP_TABLE_FULL]	= "LesPepTableFull",
	[LES_STAT_PEP_BACKLOG_FULL]	= "LesPepBacklogFull",
	[LES_STAT_PEP_KEY_EXPIRED]	= "LesPepKeyExpired",
	[LES_STAT_PEP_OUTER_FRAGMENT]	= "LesPepOuterFragment",
	[LES_STAT_PEP_GSO]		= "LesPepGso",
	[LES_STAT_PEP_GSO_UNREAD]	= "LesPepGsoUnread",
	[LES_STAT_PEP_REPLAY]		= "LesPepReplay",
	[LES_STAT_PEP_RST_OOW]		= "LesPepRstOutOfWindow",
	[LES_STAT_ACCEL_FLOWS]		= "LesAccelFlows",
	[LES_STAT_ACCEL_EARLY_ACKS]	= "LesAccelEarlyAcks",
	[LES_STAT_ACCEL_EARLY_BYTES]	= "LesAccelEarlyAckedBytes",
	[LES_STAT_ACCEL_HOP_RETRANS]	= "LesAccelHopRetrans",
	[LES_STAT_ACCEL_HOP_TIMEOUTS]	= "LesAccelHopTimeouts",
	[LES_STAT_ACCEL_HOP_SPURIOUS]	= "LesAccelHopSpurious",
	[LES_STAT_ACCEL_ABSORBED_ACKS]	= "LesAccelAbsorbedAcks",
	[LES_STAT_ACCEL_ABSORBED_DATA]	= "LesAccelAbsorbedData",
	[LES_STAT_ACCEL_FAIL_OPEN]	= "LesAccelFailOpen",
	[LES_STAT_ACCEL_WINDOW_HELD]	= "LesAccelWindowHeld",
	[LES_STAT_ACCEL_THINNED]	= "LesAccelThinnedAcks",
	[LES_STAT_ACCEL_WINDOW_PROBES]	= "LesAccelWindowProbes",
	[LES_STAT_ACCEL_DUP_HELD]	= "LesAccelDupHeld",
	[LES_STAT_ACCEL_DUP_ABSORBED]	= "LesAccelDupAbsorbed",
	[LES_STAT_ACCEL_LATE_STARTS]	= "LesAccelLateStarts",
	[LES_STAT_ACCEL_WINDOW_SHORT]	= "LesAccelReplayWindowShort",
	[LES_STAT_ACCEL_GUARD_WAITS]	= "LesAccelReplayGuardWaits",
	[LES_STAT_ACCEL_GUARD_EXPIRED]	= "LesAccelReplayGuardExpired",
	[LES_STAT_ACCEL_TS_BEHIND]	= "LesAccelTsBehind",
	[LES_STAT_ACCEL_KEYS_DRAINED]	= "LesAccelKeysDrained",
	[LES_STAT_ACCEL_DRAIN_TIMEOUTS]	= "LesAccelDrainTimeouts",
	[LES_STAT_ACCEL_LOST]		= "LesAccelLost",
	[LES_STAT_ACCEL_RESET_BYTES]	= "LesAccelResetBytes",
	[LES_STAT_ACCEL_SACK_RENEGING]	= "LesAccelSackReneging",
	[LES_STAT_ACCEL_HOP_DROPS]	= "LesAccelHopDrops",
	[LES_STAT_ACCEL_OVER_DROPS]	= "LesAccelOverDrops",
	[LES_STAT_ACCEL_ERRORS]		= "LesAccelErrors",
	[LES_STAT_ACCEL_TICKS]		= "LesAccelTicks",
	[LES_STAT_ACCEL_TICK_FLOWS]	= "LesAccelTickFlows",
	[LES_STAT_ACCEL_TICK_US]	= "LesAccelTickUs",
	[LES_STAT_ACCEL_TICK_LATE_US]	= "LesAccelTickLateUs",
	[LES_STAT_ACCEL_LATE]		= "LesAccelLate",
};

void les_stat_inc(struct net *net, enum les_stat item)
{
	struct les_net *ln = net_generic(net, les_net_id);

	this_cpu_inc(ln->mib->mibs[item]);
}

void les_stat_add(struct net *net, enum les_stat item, unsigned long n)
{
	struct les_net *ln = net_generic(net, les_net_id);

	this_cpu_add(ln->mib->mibs[item], n);
}

u64 les_stat_read(struct net *net, enum les_stat item)
{
	struct les_net *ln = net_generic(net, les_net_id);
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(ln->mib, cpu)->mibs[item];
	return sum;
}

const char *les_stat_name(enum les_stat item)
{
	return les_stat_names[item];
}

static int les_stat_show(struct seq_file *seq, void *v)
{
	struct net *net = seq_file_single_net(seq);
	int i;

	for (i = 0; i < LES_STAT_MAX; i++)
		seq_printf(seq, "%-24s\t%llu\n", les_stat_names[i],
			   (unsigned long long)les_stat_read(net, i));
	return 0;
}

static int __net_init les_net_init(struct net *net)
{
	struct les_net *ln = net_generic(net, les_net_id);

	ln->mib = alloc_percpu_gfp(struct les_mib, GFP_KERNEL_ACCOUNT);
	if (!ln->mib)
		return -ENOMEM;
	if (!proc_create_net_single("les_stat", 0444, net->proc_net,
				    les_stat_show, NULL)) {
		free_percpu(ln->mib);
		return -ENOMEM;
	}
	return 0;
}

static void __net_exit les_net_exit(struct net *net)
{
	struct les_net *ln = net_generic(net, les_net_id);

	remove_proc_entry("les_stat", net->proc_net);
	free_percpu(ln->mib);
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
