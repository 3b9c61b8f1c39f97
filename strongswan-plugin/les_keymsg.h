/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fourth message's content (docs/ike.md 4): the states an endpoint
 * hands one PEP for one CHILD_SA, and the PEP's answer.  Pure encoding,
 * parsing and the PEP's policy check; no charon state.
 */
#ifndef LES_KEYMSG_H_
#define LES_KEYMSG_H_

#include <library.h>
#include <collections/linked_list.h>
#include <networking/host.h>
#include <utils/identification.h>
#include <selectors/traffic_selector.h>

/* Private status notifies of the INFORMATIONAL exchange endpoint -> PEP. */
#define LES_NOTIFY_KEYS		41037	/* request: the states of a CHILD_SA */
#define LES_NOTIFY_KEYS_DELETE	41038	/* request: delete a CHILD_SA's states */
#define LES_NOTIFY_KEYS_ACK	41039	/* response: what the PEP did */

#define LES_KEYMSG_FORMAT	1
#define LES_KEYMSG_HDR_LEN	8	/* format, version, flags (2), child (4) */

/* The largest replay window a state may ask for (xfrm's ESN bitmap). */
#define LES_KEYMSG_MAX_REPLAY_WINDOW	(4096 * 8)

/* A CHILD_SA has two pep-view states and at most one pep-origin-out. */
#define LES_KEYMSG_MAX_STATES	3

/* One state for the PEP to install: an xfrm state with a blob as key. */
typedef struct {
	/* LES_ROLE_PEP_VIEW or LES_ROLE_PEP_ORIGIN_OUT (kernel/les_wire.h) */
	uint8_t role;
	bool tunnel;
	bool esn;
	/* UDP encapsulation (NAT-T) ports, 0 without */
	uint16_t encap_sport, encap_dport;
	uint32_t spi;
	uint32_t replay_window;
	/* hard lifetime, seconds: no longer than the endpoint's CHILD_SA */
	uint32_t lifetime;
	host_t *src, *dst;
	chunk_t blob;
} les_keymsg_sa_t;

void les_keymsg_sa_destroy(les_keymsg_sa_t *sa);

typedef struct {
	/* the endpoint's CHILD_SA unique id: names it in a later delete */
	uint32_t child;
	/* les_keymsg_sa_t* */
	linked_list_t *sas;
} les_keymsg_t;

void les_keymsg_clear(les_keymsg_t *msg);

/* LES_NOTIFY_KEYS data; wipe it with chunk_clear(). */
chunk_t les_keymsg_build(les_keymsg_t *msg);

/* LES_NOTIFY_KEYS_DELETE data: the child alone. */
chunk_t les_keymsg_build_delete(uint32_t child);

/*
 * Parses LES_NOTIFY_KEYS data into @out (free with les_keymsg_clear()).
 * FALSE with a reason in *why if it is malformed; @out is then empty.
 */
bool les_keymsg_parse(chunk_t data, les_keymsg_t *out, const char **why);

/* Parses LES_NOTIFY_KEYS_DELETE or _ACK data's child (and ACK status). */
bool les_keymsg_parse_child(chunk_t data, uint32_t *child, uint8_t *status);

/* The PEP's answer, LES_NOTIFY_KEYS_ACK: 0 installed or deleted, else why not. */
enum les_keymsg_status {
	LES_KEYS_OK = 0,
	LES_KEYS_NOT_ALLOWED = 1,	/* no policy for this endpoint, or address */
	LES_KEYS_QUOTA = 2,		/* over the endpoint's quota */
	LES_KEYS_MALFORMED = 3,
	LES_KEYS_FAILED = 4,		/* the kernel refused a state */
};
chunk_t les_keymsg_build_ack(uint32_t child, uint8_t status);

/* What a PEP allows one endpoint (charon.plugins.les.pep.endpoints.NAME). */
typedef struct {
	identification_t *id;
	/* traffic_selector_t*: the addresses its states may have */
	linked_list_t *addrs;
	/* states it may hold on this PEP at once */
	u_int max_states;
	/* longest lifetime a state may ask for, seconds */
	uint32_t max_lifetime;
} les_keymsg_policy_t;

/*
 * The PEP's check of @msg from an endpoint its policy @policy names (the
 * caller matched the IKE_SA's authenticated peer identity), which holds
 * @held states here: every state's addresses allowed, a pep-view or
 * pep-origin-out blob les.ko would take (its role that of the state), a
 * lifetime within bounds, and room in the quota.
 */
enum les_keymsg_status les_keymsg_check(les_keymsg_policy_t *policy,
										u_int held, les_keymsg_t *msg,
										const char **why);

#endif /* LES_KEYMSG_H_ */
