/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The differences between the kernels les.ko supports (Debian 6.1 and 6.12),
 * in one place.
 */
#ifndef LES_COMPAT_H
#define LES_COMPAT_H

#include <linux/version.h>
#include <linux/crypto.h>

/* 6.3 made crypto completion callbacks take the request's data pointer. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define LES_CRYPTO_DONE(name)	void name(void *les_cb_data, int err)
#define LES_CRYPTO_DATA()	(les_cb_data)
#else
#define LES_CRYPTO_DONE(name)	\
	void name(struct crypto_async_request *les_cb_base, int err)
#define LES_CRYPTO_DATA()	(les_cb_base->data)
#endif

/* 6.10 gave SAs a direction (XFRMA_SA_DIR, "ip xfrm state add ... dir in"). */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define LES_HAVE_SA_DIR		1
#else
#define LES_HAVE_SA_DIR		0
#endif

/* 6.5 moved skb_gso_segment() from netdevice.h to net/gso.h. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
#include <net/gso.h>
#else
#include <linux/netdevice.h>
#endif

#endif /* LES_COMPAT_H */
