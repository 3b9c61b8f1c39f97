/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Announces LES in every message that negotiates a CHILD_SA and remembers,
 * per IKE_SA, whether the peer announced it too.
 */
#ifndef LES_LISTENER_H_
#define LES_LISTENER_H_

#include <bus/listeners/listener.h>

typedef struct les_listener_t les_listener_t;

struct les_listener_t {

	/* Implements listener_t. */
	listener_t listener;

	/*
	 * LES version the peer of an IKE_SA announced, 0 if it did not.
	 */
	u_int (*peer_version)(les_listener_t *this, ike_sa_t *ike_sa);

	void (*destroy)(les_listener_t *this);
};

les_listener_t *les_listener_create(void);

#endif /* LES_LISTENER_H_ */
