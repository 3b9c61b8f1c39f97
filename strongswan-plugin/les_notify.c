// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LES notify data: format (1) | version (1) | flags (2) | attributes,
 * each attribute type (2) | length (2) | value (length), big-endian.
 * A receiver skips types it does not know, so the format grows without a
 * new number.
 */
#include "les_notify.h"

#include <utils/utils.h>
#include <bio/bio_writer.h>

les_pep_t *les_pep_create(uint32_t pep_id, identification_t *id)
{
	les_pep_t *pep;

	INIT(pep,
		.pep_id = pep_id,
		.id = id,
	);
	return pep;
}

void les_pep_destroy(les_pep_t *pep)
{
	if (pep)
	{
		DESTROY_IF(pep->id);
		free(pep);
	}
}

static void put_attr(bio_writer_t *w, uint16_t type, uint32_t *pep_id,
					 identification_t *id)
{
	chunk_t enc = id->get_encoding(id);

	w->write_uint16(w, type);
	w->write_uint16(w, (pep_id ? 4 : 0) + 1 + enc.len);
	if (pep_id)
	{
		w->write_uint32(w, *pep_id);
	}
	w->write_uint8(w, id->get_type(id));
	w->write_data(w, enc);
}

chunk_t les_notify_build(linked_list_t *peps, linked_list_t *trust,
						 linked_list_t *agreed)
{
	enumerator_t *e;
	identification_t *id;
	les_pep_t *pep;
	bio_writer_t *w = bio_writer_create(LES_NOTIFY_HDR_LEN);
	chunk_t data;

	w->write_uint8(w, LES_NOTIFY_FORMAT);
	w->write_uint8(w, LES_NOTIFY_VERSION);
	/* flags: none defined; sent 0, ignored on receipt */
	w->write_uint16(w, 0);
	e = peps ? peps->create_enumerator(peps) : enumerator_create_empty();
	while (e->enumerate(e, &id))
	{
		put_attr(w, LES_ATTR_PEP, NULL, id);
	}
	e->destroy(e);
	e = trust ? trust->create_enumerator(trust) : enumerator_create_empty();
	while (e->enumerate(e, &id))
	{
		put_attr(w, LES_ATTR_TRUST, NULL, id);
	}
	e->destroy(e);
	e = agreed ? agreed->create_enumerator(agreed) : enumerator_create_empty();
	while (e->enumerate(e, &pep))
	{
		put_attr(w, LES_ATTR_AGREED, &pep->pep_id, pep->id);
	}
	e->destroy(e);
	data = w->extract_buf(w);
	w->destroy(w);
	return data;
}

/* An identity: ID type (1) | ID data, of a type IKEv2's ID payload has. */
static identification_t *get_id(chunk_t value, const char **why)
{
	switch (value.len ? value.ptr[0] : 0)
	{
		case ID_IPV4_ADDR:
		case ID_FQDN:
		case ID_RFC822_ADDR:
		case ID_IPV6_ADDR:
		case ID_DER_ASN1_DN:
		case ID_KEY_ID:
			break;
		default:
			*why = "identity of no IKEv2 ID type";
			return NULL;
	}
	if (value.len < 2)
	{
		*why = "empty identity";
		return NULL;
	}
	return identification_create_from_encoding(value.ptr[0],
											   chunk_skip(value, 1));
}

void les_notify_clear(les_notify_t *n)
{
	if (n->peps)
	{
		n->peps->destroy_offset(n->peps, offsetof(identification_t, destroy));
	}
	if (n->trust)
	{
		n->trust->destroy_offset(n->trust, offsetof(identification_t, destroy));
	}
	if (n->agreed)
	{
		n->agreed->destroy_function(n->agreed, (void*)les_pep_destroy);
	}
	*n = (les_notify_t){};
}

/* One attribute's value into @out; FALSE with *why if it is malformed. */
static bool take_attr(les_notify_t *out, uint16_t type, chunk_t value,
					  const char **why)
{
	identification_t *id;
	linked_list_t *list;
	uint32_t pep_id;

	switch (type)
	{
		case LES_ATTR_PEP:
		case LES_ATTR_TRUST:
			id = get_id(value, why);
			if (!id)
			{
				return FALSE;
			}
			list = type == LES_ATTR_PEP ? out->peps : out->trust;
			if (list->get_count(list) >= (type == LES_ATTR_PEP ?
							LES_NOTIFY_MAX_PEPS : LES_NOTIFY_MAX_TRUST))
			{
				id->destroy(id);
				*why = "more PEPs or trusted patterns than a tunnel has";
				return FALSE;
			}
			list->insert_last(list, id);
			return TRUE;
		case LES_ATTR_AGREED:
			if (value.len < 4)
			{
				*why = "agreed PEP without its pep_id";
				return FALSE;
			}
			pep_id = untoh32(value.ptr);
			if (!pep_id)
			{
				*why = "agreed PEP with pep_id 0";
				return FALSE;
			}
			id = get_id(chunk_skip(value, 4), why);
			if (!id)
			{
				return FALSE;
			}
			if (!out->agreed)
			{
				out->agreed = linked_list_create();
			}
			if (out->agreed->get_count(out->agreed) >= 2 * LES_NOTIFY_MAX_PEPS)
			{
				id->destroy(id);
				*why = "more agreed PEPs than a tunnel has";
				return FALSE;
			}
			out->agreed->insert_last(out->agreed, les_pep_create(pep_id, id));
			return TRUE;
		default:
			out->unknown_attrs++;
			return TRUE;
	}
}

bool les_notify_next_attr(chunk_t *data, uint16_t *type, chunk_t *value,
						  const char **why)
{
	uint16_t len;

	if (data->len < LES_NOTIFY_ATTR_HDR_LEN)
	{
		*why = "truncated attribute header";
		return FALSE;
	}
	*type = untoh16(data->ptr);
	len = untoh16(data->ptr + 2);
	if (len > data->len - LES_NOTIFY_ATTR_HDR_LEN)
	{
		*why = "attribute longer than the notify";
		return FALSE;
	}
	*value = chunk_create(data->ptr + LES_NOTIFY_ATTR_HDR_LEN, len);
	*data = chunk_skip(*data, LES_NOTIFY_ATTR_HDR_LEN + len);
	return TRUE;
}

bool les_notify_parse(chunk_t data, les_notify_t *out, const char **why)
{
	uint16_t type;
	chunk_t value;

	*out = (les_notify_t){};
	if (data.len < LES_NOTIFY_HDR_LEN)
	{
		*why = "shorter than its header";
		return FALSE;
	}
	if (data.ptr[0] != LES_NOTIFY_FORMAT)
	{
		*why = "unknown format";
		return FALSE;
	}
	out->version = data.ptr[1];
	if (!out->version)
	{
		*why = "version 0";
		return FALSE;
	}
	out->peps = linked_list_create();
	out->trust = linked_list_create();
	data = chunk_skip(data, LES_NOTIFY_HDR_LEN);
	while (data.len)
	{
		if (!les_notify_next_attr(&data, &type, &value, why) ||
			!take_attr(out, type, value, why))
		{
			goto bad;
		}
	}
	return TRUE;

bad:
	les_notify_clear(out);
	out->version = 0;
	return FALSE;
}
