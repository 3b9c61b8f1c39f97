// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Key message data: format (1) | version (1) | flags (2) | child (4) |
 * attributes, each type (2) | length (2) | value, big-endian, as the LES
 * notify's (les_notify.c).  One SA attribute per state:
 *
 *   role (1) | flags (1) | family (1) | 0 (1) | spi (4) | replay window (4) |
 *   lifetime (4) | encap sport (2) | encap dport (2) | src | dst | blob
 *
 * flags: 1 tunnel, 2 ESN, 4 UDP encapsulation; family 4 or 6 (addresses of
 * 4 or 16 bytes).  The blob is the rest of the attribute.
 */
#include "les_keymsg.h"
#include "les_notify.h"

#include "les_wire.h"

#include <bio/bio_writer.h>

#define LES_KEYMSG_ATTR_SA	1
#define LES_KEYMSG_SA_FIXED	20

#define LES_KEYMSG_F_TUNNEL	0x01
#define LES_KEYMSG_F_ESN	0x02
#define LES_KEYMSG_F_ENCAP	0x04

void les_keymsg_sa_destroy(les_keymsg_sa_t *sa)
{
	if (sa)
	{
		DESTROY_IF(sa->src);
		DESTROY_IF(sa->dst);
		chunk_clear(&sa->blob);
		free(sa);
	}
}

void les_keymsg_clear(les_keymsg_t *msg)
{
	if (msg->sas)
	{
		msg->sas->destroy_function(msg->sas, (void*)les_keymsg_sa_destroy);
	}
	*msg = (les_keymsg_t){};
}

static void put_header(bio_writer_t *w, uint32_t child)
{
	w->write_uint8(w, LES_KEYMSG_FORMAT);
	w->write_uint8(w, LES_NOTIFY_VERSION);
	w->write_uint16(w, 0);
	w->write_uint32(w, child);
}

/* The writer's buffer, wiped with the writer: it held keys. */
static chunk_t extract(bio_writer_t *w)
{
	chunk_t data = chunk_clone(w->get_buf(w));

	memwipe(w->get_buf(w).ptr, w->get_buf(w).len);
	w->destroy(w);
	return data;
}

chunk_t les_keymsg_build(les_keymsg_t *msg)
{
	/* the worst case at once: no realloc leaves a copy of the keys */
	bio_writer_t *w = bio_writer_create(LES_KEYMSG_HDR_LEN +
			LES_KEYMSG_MAX_STATES * (LES_NOTIFY_ATTR_HDR_LEN +
			LES_KEYMSG_SA_FIXED + 32 + LES_BLOB_MAX_LEN));
	enumerator_t *e;
	les_keymsg_sa_t *sa;
	chunk_t src, dst;

	put_header(w, msg->child);
	e = msg->sas->create_enumerator(msg->sas);
	while (e->enumerate(e, &sa))
	{
		src = sa->src->get_address(sa->src);
		dst = sa->dst->get_address(sa->dst);
		w->write_uint16(w, LES_KEYMSG_ATTR_SA);
		w->write_uint16(w, LES_KEYMSG_SA_FIXED + src.len + dst.len +
						sa->blob.len);
		w->write_uint8(w, sa->role);
		w->write_uint8(w, (sa->tunnel ? LES_KEYMSG_F_TUNNEL : 0) |
						  (sa->esn ? LES_KEYMSG_F_ESN : 0) |
						  (sa->encap_dport ? LES_KEYMSG_F_ENCAP : 0));
		w->write_uint8(w, src.len == 4 ? 4 : 6);
		w->write_uint8(w, 0);
		w->write_uint32(w, sa->spi);
		w->write_uint32(w, sa->replay_window);
		w->write_uint32(w, sa->lifetime);
		w->write_uint16(w, sa->encap_sport);
		w->write_uint16(w, sa->encap_dport);
		w->write_data(w, src);
		w->write_data(w, dst);
		w->write_data(w, sa->blob);
	}
	e->destroy(e);
	return extract(w);
}

chunk_t les_keymsg_build_delete(uint32_t child)
{
	bio_writer_t *w = bio_writer_create(LES_KEYMSG_HDR_LEN);

	put_header(w, child);
	return extract(w);
}

chunk_t les_keymsg_build_ack(uint32_t child, uint8_t status)
{
	bio_writer_t *w = bio_writer_create(LES_KEYMSG_HDR_LEN + 1);

	put_header(w, child);
	w->write_uint8(w, status);
	return extract(w);
}

/* Header of any of the three; @data is left at the attributes. */
static bool parse_header(chunk_t *data, uint32_t *child, const char **why)
{
	if (data->len < LES_KEYMSG_HDR_LEN)
	{
		*why = "shorter than its header";
		return FALSE;
	}
	if (data->ptr[0] != LES_KEYMSG_FORMAT || data->ptr[1] != LES_NOTIFY_VERSION)
	{
		*why = "unknown format or version";
		return FALSE;
	}
	*child = untoh32(data->ptr + 4);
	*data = chunk_skip(*data, LES_KEYMSG_HDR_LEN);
	return TRUE;
}

bool les_keymsg_parse_child(chunk_t data, uint32_t *child, uint8_t *status)
{
	const char *why;

	if (!parse_header(&data, child, &why))
	{
		return FALSE;
	}
	if (status)
	{
		if (data.len != 1)
		{
			return FALSE;
		}
		*status = data.ptr[0];
	}
	return TRUE;
}

static les_keymsg_sa_t *parse_sa(chunk_t v, const char **why)
{
	les_keymsg_sa_t *sa;
	size_t alen;
	uint8_t flags;

	if (v.len < LES_KEYMSG_SA_FIXED || (v.ptr[2] != 4 && v.ptr[2] != 6))
	{
		*why = "SA attribute too short, or of no address family";
		return NULL;
	}
	alen = v.ptr[2] == 4 ? 4 : 16;
	if (v.len < LES_KEYMSG_SA_FIXED + 2 * alen + LES_BLOB_HDR_LEN ||
		v.len > LES_KEYMSG_SA_FIXED + 2 * alen + LES_BLOB_MAX_LEN)
	{
		*why = "SA attribute of a length no blob has";
		return NULL;
	}
	flags = v.ptr[1];
	INIT(sa,
		.role = v.ptr[0],
		.tunnel = flags & LES_KEYMSG_F_TUNNEL,
		.esn = flags & LES_KEYMSG_F_ESN,
		.spi = untoh32(v.ptr + 4),
		.replay_window = untoh32(v.ptr + 8),
		.lifetime = untoh32(v.ptr + 12),
		.encap_sport = untoh16(v.ptr + 16),
		.encap_dport = untoh16(v.ptr + 18),
		.src = host_create_from_chunk(v.ptr[2] == 4 ? AF_INET : AF_INET6,
				chunk_create(v.ptr + LES_KEYMSG_SA_FIXED, alen), 0),
		.dst = host_create_from_chunk(v.ptr[2] == 4 ? AF_INET : AF_INET6,
				chunk_create(v.ptr + LES_KEYMSG_SA_FIXED + alen, alen), 0),
		.blob = chunk_clone(chunk_skip(v, LES_KEYMSG_SA_FIXED + 2 * alen)),
	);
	if ((flags & ~(LES_KEYMSG_F_TUNNEL | LES_KEYMSG_F_ESN |
				   LES_KEYMSG_F_ENCAP)) || v.ptr[3] ||
		((flags & LES_KEYMSG_F_ENCAP) ?
			!sa->encap_sport || !sa->encap_dport :
			sa->encap_sport || sa->encap_dport) ||
		!sa->src || !sa->dst || !sa->spi)
	{
		*why = "SA attribute with unknown flags, ports without encapsulation "
			   "or no SPI";
		les_keymsg_sa_destroy(sa);
		return NULL;
	}
	return sa;
}

bool les_keymsg_parse(chunk_t data, les_keymsg_t *out, const char **why)
{
	les_keymsg_sa_t *sa;
	uint16_t type;
	chunk_t value;

	*out = (les_keymsg_t){};
	if (!parse_header(&data, &out->child, why))
	{
		return FALSE;
	}
	out->sas = linked_list_create();
	while (data.len)
	{
		if (!les_notify_next_attr(&data, &type, &value, why))
		{
			goto bad;
		}
		if (type != LES_KEYMSG_ATTR_SA)
		{	/* of a later format: skipped */
			continue;
		}
		if (out->sas->get_count(out->sas) >= LES_KEYMSG_MAX_STATES)
		{
			*why = "more states than a CHILD_SA gives a PEP";
			goto bad;
		}
		sa = parse_sa(value, why);
		if (!sa)
		{
			goto bad;
		}
		out->sas->insert_last(out->sas, sa);
	}
	if (!out->sas->get_count(out->sas))
	{
		*why = "no state";
		goto bad;
	}
	return TRUE;

bad:
	les_keymsg_clear(out);
	return FALSE;
}

/* Is @host inside one of @addrs (traffic_selector_t*)? */
static bool allowed(host_t *host, linked_list_t *addrs)
{
	enumerator_t *e;
	traffic_selector_t *ts;
	bool found = FALSE;

	e = addrs->create_enumerator(addrs);
	while (!found && e->enumerate(e, &ts))
	{
		found = ts->includes(ts, host);
	}
	e->destroy(e);
	return found;
}

enum les_keymsg_status les_keymsg_check(les_keymsg_policy_t *policy,
										u_int held, les_keymsg_t *msg,
										const char **why)
{
	enumerator_t *e;
	les_keymsg_sa_t *sa;
	struct les_blob blob;
	enum les_keymsg_status status = LES_KEYS_OK;
	u_int origins = 0;

	e = msg->sas->create_enumerator(msg->sas);
	while (status == LES_KEYS_OK && e->enumerate(e, &sa))
	{
		if (!allowed(sa->src, policy->addrs) || !allowed(sa->dst, policy->addrs))
		{
			*why = "an address the policy does not allow this endpoint";
			status = LES_KEYS_NOT_ALLOWED;
		}
		else if ((sa->role != LES_ROLE_PEP_VIEW &&
				  sa->role != LES_ROLE_PEP_ORIGIN_OUT) ||
				 les_blob_parse(sa->blob.ptr, sa->blob.len, &blob) ||
				 blob.role != sa->role)
		{
			*why = "a blob that is no pep-view or pep-origin-out blob, or "
				   "not the state's role";
			status = LES_KEYS_MALFORMED;
		}
		else if (!sa->lifetime || sa->lifetime > policy->max_lifetime)
		{
			*why = "a lifetime of 0 or over the policy's";
			status = LES_KEYS_NOT_ALLOWED;
		}
		else if (sa->replay_window > LES_KEYMSG_MAX_REPLAY_WINDOW)
		{
			*why = "a replay window over what xfrm takes";
			status = LES_KEYS_MALFORMED;
		}
		else if (sa->role == LES_ROLE_PEP_ORIGIN_OUT && ++origins > 1)
		{
			*why = "two pep-origin-out states";
			status = LES_KEYS_MALFORMED;
		}
	}
	e->destroy(e);
	if (status == LES_KEYS_OK &&
		held + msg->sas->get_count(msg->sas) > policy->max_states)
	{
		*why = "over the endpoint's quota of states";
		status = LES_KEYS_QUOTA;
	}
	return status;
}
