/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which PEPs a tunnel's CHILD_SAs are keyed for (docs/ike.md 2, "Which PEPs"): an
 * endpoint names the PEPs it keys (those on its side of the hop) and the
 * other side's PEPs it lets read its header zones; the responder of an
 * exchange agrees, and only its answer is acted on.
 */
#ifndef LES_PEPS_H_
#define LES_PEPS_H_

#include "les_notify.h"

typedef struct les_peps_t les_peps_t;

/* An endpoint's PEP settings (strongswan.conf charon.plugins.les). */
struct les_peps_t {
	/* identification_t*: the PEPs this endpoint keys (les.peps) */
	linked_list_t *mine;
	/* char*, one per entry of @mine: its name in les.peps, the name of
	 * the connection to that PEP (NULL if created from lists) */
	linked_list_t *conns;
	/* identification_t*: the other side's PEPs it trusts (les.trust),
	 * wildcards as strongSwan's IDs take them */
	linked_list_t *trust;
};

/*
 * The settings as they are now (a `swanctl --reload-settings` takes
 * effect at the next exchange).  Entries that do not parse are logged
 * and left out.
 */
les_peps_t *les_peps_load(void);

/* Settings from lists the caller gives up (tests). */
les_peps_t *les_peps_create(linked_list_t *mine, linked_list_t *trust);

void les_peps_destroy(les_peps_t *conf);

/*
 * The responder's agreement on an initiator's notify @peer: the
 * initiator's PEPs this endpoint trusts, then this endpoint's PEPs the
 * initiator trusts, each once, numbered from 1 (les_pep_t*).
 */
linked_list_t *les_peps_agree(les_peps_t *conf, les_notify_t *peer);

/*
 * The initiator's reading of the responder's answer @answer: the agreed
 * PEPs that are its own or that it trusts, with distinct pep_ids
 * (les_pep_t*, cloned); *refused counts those left out.  A responder
 * cannot add a PEP the initiator neither keys nor trusts.
 */
linked_list_t *les_peps_accept(les_peps_t *conf, les_notify_t *answer,
							   u_int *refused);

/* The connection to PEP @pep of @conf->mine (its name in les.peps), or NULL. */
const char *les_peps_conn(les_peps_t *conf, identification_t *pep);

/* Frees a list of les_pep_t*. */
void les_peps_free(linked_list_t *agreed);

#endif /* LES_PEPS_H_ */
