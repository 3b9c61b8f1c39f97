/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The LES status notify: "this peer speaks LES, version N", the PEPs it
 * keys, the PEPs it trusts, and in a responder's answer the PEPs agreed
 * (docs/ike.md 2).  Pure encoding and parsing, no charon state.
 */
#ifndef LES_NOTIFY_H_
#define LES_NOTIFY_H_

#include <library.h>
#include <collections/linked_list.h>
#include <utils/identification.h>

/*
 * Private status notify type (>= 40960: a peer that does not know it skips
 * it; an error type, < 16384, would abort the exchange).  strongSwan's own
 * private notifies sit at 40961-40969.
 */
#define LES_NOTIFY_TYPE		41036

/* Layout of the notify data, bumped only if the 4-byte header changes. */
#define LES_NOTIFY_FORMAT	1
/* The LES wire and key blob version this plugin speaks (protocol.md). */
#define LES_NOTIFY_VERSION	3
#define LES_NOTIFY_HDR_LEN	4
#define LES_NOTIFY_ATTR_HDR_LEN	4

/* Attribute types (docs/ike.md 2). */
enum les_notify_attr {
	/* a PEP the sender keys: ID type (1) | ID data */
	LES_ATTR_PEP = 1,
	/* the other side's PEPs the sender lets read its header zones:
	 * ID type (1) | ID data, wildcards as in strongSwan's IDs */
	LES_ATTR_TRUST = 2,
	/* responder only, one per agreed PEP: pep_id (4) | ID type (1) | ID data */
	LES_ATTR_AGREED = 3,
};

/*
 * Bounds on what a peer's notify may make us hold: a tunnel has a PEP or
 * two on each side of its hop; more is a peer's mistake or an attack.
 */
#define LES_NOTIFY_MAX_PEPS	8
#define LES_NOTIFY_MAX_TRUST	16

typedef struct les_pep_t les_pep_t;

/* A PEP agreed for the CHILD_SAs of an exchange. */
struct les_pep_t {
	/* its pep_id in the pep-origin blobs (docs/protocol.md 1), 1 to 2^32-1 */
	uint32_t pep_id;
	identification_t *id;
};

les_pep_t *les_pep_create(uint32_t pep_id, identification_t *id);
void les_pep_destroy(les_pep_t *pep);

typedef struct les_notify_t les_notify_t;

/* What a notify says; the lists hold identification_t* or les_pep_t*. */
struct les_notify_t {
	/* highest LES version the sender speaks */
	uint8_t version;
	/* LES_ATTR_PEP: identification_t* */
	linked_list_t *peps;
	/* LES_ATTR_TRUST: identification_t* */
	linked_list_t *trust;
	/* LES_ATTR_AGREED: les_pep_t*, NULL if the notify had none */
	linked_list_t *agreed;
	/* attributes the receiver did not know and skipped */
	u_int unknown_attrs;
};

/*
 * Notify data for @peps and @trust (identification_t*) and, in a
 * responder's answer, @agreed (les_pep_t*, or NULL).  Free with chunk_free().
 */
chunk_t les_notify_build(linked_list_t *peps, linked_list_t *trust,
						 linked_list_t *agreed);

/*
 * Parses a peer's notify data into @out (free with les_notify_clear()).
 * Returns FALSE with a reason in *why if it is malformed, of a format this
 * plugin does not know, or over the bounds above; @out is then empty.
 */
bool les_notify_parse(chunk_t data, les_notify_t *out, const char **why);

void les_notify_clear(les_notify_t *notify);

/*
 * The next attribute, type (2) | length (2) | value, of the rest of a
 * notify's data @data (advanced past it).  FALSE with a reason in *why if
 * the attribute runs past @data; call while @data.len.
 */
bool les_notify_next_attr(chunk_t *data, uint16_t *type, chunk_t *value,
						  const char **why);

#endif /* LES_NOTIFY_H_ */
