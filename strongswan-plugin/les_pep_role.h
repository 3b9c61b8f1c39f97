/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The PEP's side of the fourth message (docs/ike.md 4): keys from the
 * endpoints its policy names, checked, installed with the PEP mark, and
 * removed with the CHILD_SA or the endpoint's IKE_SA; and the engine's
 * settings, set at start, at a reload, and before keys if they failed.
 */
#ifndef LES_PEP_ROLE_H_
#define LES_PEP_ROLE_H_

#include <sa/ike_sa.h>
#include <encoding/message.h>

/* The xfrm mark les.ko's PEP reads its keys under (docs/pep.md 1). */
#define LES_PEP_MARK	0x4c455350

typedef struct les_pep_role_t les_pep_role_t;

struct les_pep_role_t {

	/*
	 * An incoming INFORMATIONAL request: acts on its key notifies and
	 * remembers the answers for the response.
	 */
	void (*request)(les_pep_role_t *this, ike_sa_t *ike_sa, message_t *message);

	/* The outgoing INFORMATIONAL response: adds the answers. */
	void (*response)(les_pep_role_t *this, ike_sa_t *ike_sa, message_t *message);

	/* An endpoint's IKE_SA went down: its keys go too (those the kernel
	 * expired went already). */
	void (*ike_gone)(les_pep_role_t *this, ike_sa_t *ike_sa);

	/* An endpoint's IKE_SA was rekeyed: its keys stay, with the new one. */
	void (*ike_rekeyed)(les_pep_role_t *this, uint32_t old, uint32_t new);

	/* strongswan.conf was reloaded: the engine settings are set again. */
	void (*reload)(les_pep_role_t *this);

	void (*destroy)(les_pep_role_t *this);
};

les_pep_role_t *les_pep_role_create(void);

#endif /* LES_PEP_ROLE_H_ */
