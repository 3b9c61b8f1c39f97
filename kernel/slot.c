// SPDX-License-Identifier: GPL-2.0
/*
 * The ESP xfrm type slot (BRIEF D1).
 *
 * xfrm keeps one type per protocol and family, and esp4/esp6 own the ESP
 * one.  les.ko takes the slot with a copy of the esp4/esp6 type whose only
 * change is init_state: it looks at the SA's key and either makes the SA an
 * LES SA (sa.c switches x->type to les_sa_type) or calls esp4/esp6's own
 * init_state.  Every other operation of a plain ESP SA is esp4/esp6's own
 * function, so plain SAs behave, and put bytes on the wire, exactly as they
 * do without les.ko.  On unload the original type goes back in the slot.
 */
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <net/xfrm.h>

#include "les.h"

struct les_slot {
	unsigned short family;
	const char *esp_module;
	const struct xfrm_type *esp;	/* the type we took the slot from */
	struct xfrm_type type;		/* what the slot holds while we are loaded */
};

static int les_slot_init_state4(struct xfrm_state *x,
				struct netlink_ext_ack *extack);
static int les_slot_init_state6(struct xfrm_state *x,
				struct netlink_ext_ack *extack);

static struct les_slot les_slots[] = {
	{ .family = AF_INET,  .esp_module = "esp4" },
	{ .family = AF_INET6, .esp_module = "esp6" },
};

const struct xfrm_type les_sa_type = {
	.owner		= THIS_MODULE,
	.proto		= IPPROTO_ESP,
	.flags		= XFRM_TYPE_REPLAY_PROT,
	.init_state	= les_sa_init,
	.destructor	= les_sa_destroy,
	.input		= les_input,
	.output		= les_output,
};

static bool les_key_is_blob(const struct xfrm_state *x)
{
	return x->aead &&
	       les_blob_is_les(x->aead->alg_key, (x->aead->alg_key_len + 7) / 8);
}

static int les_slot_init_state(struct les_slot *slot, struct xfrm_state *x,
			       struct netlink_ext_ack *extack)
{
	if (les_key_is_blob(x))
		return les_sa_init(x, extack);
	return slot->esp->init_state(x, extack);
}

static int les_slot_init_state4(struct xfrm_state *x,
				struct netlink_ext_ack *extack)
{
	return les_slot_init_state(&les_slots[0], x, extack);
}

static int les_slot_init_state6(struct xfrm_state *x,
				struct netlink_ext_ack *extack)
{
	return les_slot_init_state(&les_slots[1], x, extack);
}

static const struct xfrm_type *les_slot_peek(unsigned short family)
{
	struct xfrm_state_afinfo *afinfo;
	const struct xfrm_type *type = NULL;

	rcu_read_lock();
	afinfo = xfrm_state_afinfo_get_rcu(family);
	if (afinfo) {
		type = READ_ONCE(afinfo->type_esp);
		if (type && !try_module_get(type->owner))
			type = NULL;
	}
	rcu_read_unlock();
	return type;
}

static int les_slot_take_one(struct les_slot *slot)
{
	const struct xfrm_type *esp;
	int err;

	/* esp4/esp6 fill the slot when they load; make sure they have. */
	request_module("%s", slot->esp_module);

	esp = les_slot_peek(slot->family);
	if (!esp) {
		pr_err("les: no ESP xfrm type for %s (is %s available?); not loading\n",
		       slot->family == AF_INET ? "IPv4" : "IPv6", slot->esp_module);
		return -ENOENT;
	}
	if (esp->owner && strcmp(module_name(esp->owner), slot->esp_module)) {
		pr_err("les: the %s ESP xfrm type belongs to %s, not %s; not loading\n",
		       slot->family == AF_INET ? "IPv4" : "IPv6",
		       module_name(esp->owner), slot->esp_module);
		module_put(esp->owner);
		return -EBUSY;
	}
	if (!esp->init_state || !esp->input || !esp->output) {
		pr_err("les: the %s ESP xfrm type lacks an operation; not loading\n",
		       slot->esp_module);
		module_put(esp->owner);
		return -EINVAL;
	}

	slot->type = *esp;
	slot->type.owner = THIS_MODULE;
	slot->type.init_state = slot->family == AF_INET ? les_slot_init_state4 :
							   les_slot_init_state6;

	/*
	 * There is no atomic swap: for the moment between these two calls an
	 * SA being added for this family finds no ESP type and fails.  SAs
	 * already installed keep their type and are not affected.
	 */
	xfrm_unregister_type(esp, slot->family);
	err = xfrm_register_type(&slot->type, slot->family);
	if (err) {
		pr_err("les: could not take the %s ESP xfrm slot (%d); not loading\n",
		       slot->esp_module, err);
		if (xfrm_register_type(esp, slot->family))
			pr_crit("les: could not give the ESP slot back to %s\n",
				slot->esp_module);
		module_put(esp->owner);
		return err;
	}
	slot->esp = esp;
	return 0;
}

static void les_slot_release_one(struct les_slot *slot)
{
	if (!slot->esp)
		return;
	xfrm_unregister_type(&slot->type, slot->family);
	if (xfrm_register_type(slot->esp, slot->family))
		pr_crit("les: could not give the ESP slot back to %s\n",
			slot->esp_module);
	module_put(slot->esp->owner);
	slot->esp = NULL;
}

int les_slot_take(void)
{
	int i, err;

	for (i = 0; i < ARRAY_SIZE(les_slots); i++) {
		err = les_slot_take_one(&les_slots[i]);
		/* A kernel without IPv6 (ipv6.disable=1) still gets IPv4 LES. */
		if (err == -ENOENT && les_slots[i].family == AF_INET6) {
			pr_warn("les: no IPv6 ESP type: serving IPv4 SAs only\n");
			continue;
		}
		if (err) {
			while (--i >= 0)
				les_slot_release_one(&les_slots[i]);
			return err;
		}
	}
	return 0;
}

bool les_slot_has_ipv6(void)
{
	return les_slots[1].esp;
}

void les_slot_release(void)
{
	int i;

	for (i = ARRAY_SIZE(les_slots) - 1; i >= 0; i--)
		les_slot_release_one(&les_slots[i]);
}
