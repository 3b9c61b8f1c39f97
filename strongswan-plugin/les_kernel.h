/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A kernel_ipsec_t wrapping kernel-netlink's: LES SAs become
 * rfc4106(gcm(aes)) SAs whose key is an LES endpoint blob, everything else
 * goes through unchanged.
 */
#ifndef LES_KERNEL_H_
#define LES_KERNEL_H_

#include <kernel/kernel_ipsec.h>

/* Name the plugin registers its listener under (lib->set). */
#define LES_LISTENER_NAME	"les-listener"

/*
 * A kernel_ipsec_constructor_t: builds kernel-netlink's object through that
 * plugin's own features and wraps it.
 */
kernel_ipsec_t *les_kernel_create(void);

#endif /* LES_KERNEL_H_ */
