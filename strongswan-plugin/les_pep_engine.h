/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A PEP's engine settings from strongswan.conf (charon.plugins.les.pep.
 * engine: hook, accel, hop_dev, hop_rate, buffers, flow table), set in
 * les.ko through its generic netlink family as `lesctl pep set` does, so
 * that an operator configures a PEP in one place (docs/ike.md 5).
 */
#ifndef LES_PEP_ENGINE_H_
#define LES_PEP_ENGINE_H_

#include <library.h>

/*
 * Sets what the section gives in the namespace charon runs in.  Returns
 * TRUE if it has nothing to set or les.ko took everything; FALSE, logged
 * with les.ko's reason, if a value is malformed or les.ko refused or is
 * not loaded.
 */
bool les_pep_engine_apply(void);

#endif /* LES_PEP_ENGINE_H_ */
