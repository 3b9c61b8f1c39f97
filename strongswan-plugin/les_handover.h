/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The endpoint's side of the fourth message (docs/ike.md 4): when an LES
 * CHILD_SA is up, each agreed PEP this endpoint keys gets, over a childless
 * IKE_SA to it, both directions' pep-view keys and its own pep-origin-out
 * key, whose pep-origin-in SA this endpoint installs; when the CHILD_SA
 * goes, those keys go too; if the IKE_SA to the PEP goes first, they are
 * sent again.  The tunnel never waits for it.
 */
#ifndef LES_HANDOVER_H_
#define LES_HANDOVER_H_

#include <sa/ike_sa.h>
#include <sa/child_sa.h>
#include <encoding/message.h>
#include <kernel/kernel_ipsec.h>

typedef struct les_handover_t les_handover_t;

struct les_handover_t {

	/*
	 * An LES endpoint SA was installed with @blob (kernel wrapper): kept
	 * until its CHILD_SA is up and has handed its keys over.
	 */
	void (*sa_added)(les_handover_t *this, kernel_ipsec_sa_id_t *id,
					 kernel_ipsec_add_sa_t *data, chunk_t blob);

	/* An SA was deleted: anything kept for it goes. */
	void (*sa_deleted)(les_handover_t *this, kernel_ipsec_sa_id_t *id);

	/*
	 * An SA moved to new addresses (MOBIKE): the PEPs holding its keys
	 * get them again with the new ones.
	 */
	void (*sa_updated)(les_handover_t *this, kernel_ipsec_sa_id_t *id,
					   kernel_ipsec_update_sa_t *data);

	/*
	 * @child_sa of @ike_sa is up (@agreed: les_pep_t*, the PEPs agreed
	 * for it) or down.
	 */
	void (*child_updown)(les_handover_t *this, ike_sa_t *ike_sa,
						 child_sa_t *child_sa, linked_list_t *agreed, bool up);

	/* An outgoing INFORMATIONAL request: the keys waiting for its IKE_SA. */
	void (*request)(les_handover_t *this, ike_sa_t *ike_sa, message_t *message);

	/* An incoming INFORMATIONAL response: the PEP's answers. */
	void (*response)(les_handover_t *this, ike_sa_t *ike_sa, message_t *message);

	/*
	 * An IKE_SA is destroyed: the keys it carried or was to carry are sent
	 * again over a new one, after charon.plugins.les.resend_delay.
	 */
	void (*ike_gone)(les_handover_t *this, ike_sa_t *ike_sa);

	/* An IKE_SA was rekeyed: what waits for it, waits for the new one. */
	void (*ike_rekeyed)(les_handover_t *this, uint32_t old, uint32_t new);

	void (*destroy)(les_handover_t *this);
};

les_handover_t *les_handover_create(void);

#endif /* LES_HANDOVER_H_ */
