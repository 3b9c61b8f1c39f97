/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Announces LES in every message that negotiates a CHILD_SA and remembers,
 * per IKE_SA, whether the peer announced it too and the PEPs agreed; hands
 * the INFORMATIONAL exchanges of the fourth message to the endpoint's side
 * (les_handover.h) and the PEP's (les_pep_role.h).
 */
#ifndef LES_LISTENER_H_
#define LES_LISTENER_H_

#include <bus/listeners/listener.h>
#include <kernel/kernel_ipsec.h>

typedef struct les_listener_t les_listener_t;

struct les_listener_t {

	/* Implements listener_t. */
	listener_t listener;

	/*
	 * LES version the peer of an IKE_SA announced, 0 if it did not.
	 */
	u_int (*peer_version)(les_listener_t *this, ike_sa_t *ike_sa);

	/* An LES endpoint SA installed with @blob, or any SA deleted
	 * (the kernel wrapper): for the fourth message (les_handover.h). */
	void (*sa_added)(les_listener_t *this, kernel_ipsec_sa_id_t *id,
					 kernel_ipsec_add_sa_t *data, chunk_t blob);
	void (*sa_deleted)(les_listener_t *this, kernel_ipsec_sa_id_t *id);
	void (*sa_updated)(les_listener_t *this, kernel_ipsec_sa_id_t *id,
					   kernel_ipsec_update_sa_t *data);

	/* strongswan.conf was reloaded. */
	void (*reload)(les_listener_t *this);

	void (*destroy)(les_listener_t *this);
};

les_listener_t *les_listener_create(void);

#endif /* LES_LISTENER_H_ */
