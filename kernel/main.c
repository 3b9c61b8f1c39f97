// SPDX-License-Identifier: GPL-2.0
/*
 * Layered ESP (LES): ESP whose packets carry two zones under two keys, so
 * that authorised TCP performance-enhancing proxies can read the inner
 * headers and never the data.  See docs/protocol.md.
 */
#include <linux/module.h>
#include <linux/rcupdate.h>

#include "les.h"
#include "pep.h"

static int __init les_init(void)
{
	int err;

	BUILD_BUG_ON(sizeof(struct les_skb_cb) > sizeof_field(struct sk_buff, cb));

	err = les_selftest();
	if (err) {
		pr_err("les: self-test failed (%d); not loading\n", err);
		return err;
	}
	err = les_sa_table_init();
	if (err)
		return err;
	err = les_stats_init();
	if (err)
		goto err_sa;
	err = les_pep_init();
	if (err)
		goto err_stats;
	err = les_genl_init();
	if (err)
		goto err_pep;
	/*
	 * Last: from the moment the slot is ours, SAs may point into this
	 * module, and a module whose init fails is freed whatever points
	 * into it.  Nothing may fail after this.
	 */
	err = les_slot_take();
	if (err)
		goto err_genl;
	pr_info("les: Layered ESP %s, wire format %d: ESP type slot taken for %s\n",
		LES_VERSION, LES_BLOB_VERSION,
		les_slot_has_ipv6() ? "IPv4 and IPv6" : "IPv4");
	return 0;

err_genl:
	les_genl_exit();
err_pep:
	les_pep_exit();
err_stats:
	les_stats_exit();
err_sa:
	les_sa_table_exit();
	return err;
}

/* Only when no SA holds the module: the reverse of les_init(). */
static void __exit les_exit(void)
{
	les_slot_release();
	les_genl_exit();
	les_pep_exit();
	les_stats_exit();
	/* Wait for pending RCU callbacks before the module text goes. */
	rcu_barrier();
	les_sa_table_exit();
	pr_info("les: ESP type slot given back to esp4 and esp6\n");
}

module_init(les_init);
module_exit(les_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Layered ESP: two-zone ESP for PEP-friendly IPsec");
MODULE_VERSION(LES_VERSION);
MODULE_SOFTDEP("pre: esp4 esp6");
