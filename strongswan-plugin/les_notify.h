/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The LES status notify: "this peer speaks LES, version N" (docs/ike.md 2).
 * Pure encoding and parsing, no charon state.
 */
#ifndef LES_NOTIFY_H_
#define LES_NOTIFY_H_

#include <library.h>

/*
 * Private status notify type (>= 40960: a peer that does not know it skips
 * it; an error type, < 16384, would abort the exchange).  strongSwan's own
 * private notifies sit at 40961-40969.
 */
#define LES_NOTIFY_TYPE		41036

/* Layout of the notify data, bumped only if the 4-byte header changes. */
#define LES_NOTIFY_FORMAT	1
/* The LES wire and key blob version this plugin speaks (protocol.md). */
#define LES_NOTIFY_VERSION	2
#define LES_NOTIFY_HDR_LEN	4
#define LES_NOTIFY_ATTR_HDR_LEN	4

typedef struct les_notify_t les_notify_t;

/* What a peer's notify says. */
struct les_notify_t {
	/* highest LES version the peer speaks */
	uint8_t version;
	/* attributes the receiver did not know and skipped */
	u_int unknown_attrs;
};

/* Notify data of this plugin (free it with chunk_free()). */
chunk_t les_notify_build(void);

/*
 * Parses a peer's notify data.  Returns FALSE with a reason in *why if it is
 * malformed or of a format this plugin does not know.
 */
bool les_notify_parse(chunk_t data, les_notify_t *out, const char **why);

#endif /* LES_NOTIFY_H_ */
