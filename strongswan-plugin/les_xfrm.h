/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Moving an LES SA to new addresses (MOBIKE) without kernel-netlink.
 */
#ifndef LES_XFRM_H_
#define LES_XFRM_H_

#include <kernel/kernel_ipsec.h>

/*
 * Moves the SA @id to @data's addresses, as kernel-netlink's update_sa
 * would, if its key is an LES blob: SUCCESS or FAILED; NOT_SUPPORTED if
 * it is not an LES SA (kernel-netlink's to move).
 */
status_t les_xfrm_update_sa(kernel_ipsec_sa_id_t *id,
							kernel_ipsec_update_sa_t *data);

#endif /* LES_XFRM_H_ */
