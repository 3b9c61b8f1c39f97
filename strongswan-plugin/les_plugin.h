/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Layered ESP for charon: LES CHILD_SAs from the les128/les256 proposals,
 * announced to the peer with a private notify (docs/ike.md).
 */
#ifndef LES_PLUGIN_H_
#define LES_PLUGIN_H_

#include <plugins/plugin.h>

typedef struct les_plugin_t les_plugin_t;

struct les_plugin_t {

	/* Implements plugin_t. */
	plugin_t plugin;
};

#endif /* LES_PLUGIN_H_ */
