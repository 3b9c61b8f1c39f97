// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LES notify data: format (1) | version (1) | flags (2) | attributes,
 * each attribute type (2) | length (2) | value (length), big-endian.
 * Attributes carry whatever later steps negotiate (PEP lists); a receiver
 * skips types it does not know, so the format grows without a new number.
 */
#include "les_notify.h"

#include <utils/utils.h>

chunk_t les_notify_build(void)
{
	chunk_t data = chunk_alloc(LES_NOTIFY_HDR_LEN);

	data.ptr[0] = LES_NOTIFY_FORMAT;
	data.ptr[1] = LES_NOTIFY_VERSION;
	/* flags: none defined; sent 0, ignored on receipt */
	htoun16(data.ptr + 2, 0);
	return data;
}

bool les_notify_parse(chunk_t data, les_notify_t *out, const char **why)
{
	uint16_t len;

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
	data = chunk_skip(data, LES_NOTIFY_HDR_LEN);
	while (data.len)
	{
		if (data.len < LES_NOTIFY_ATTR_HDR_LEN)
		{
			*why = "truncated attribute header";
			return FALSE;
		}
		len = untoh16(data.ptr + 2);
		if (len > data.len - LES_NOTIFY_ATTR_HDR_LEN)
		{
			*why = "attribute longer than the notify";
			return FALSE;
		}
		/* no attribute type is defined by format 1 yet */
		out->unknown_attrs++;
		data = chunk_skip(data, LES_NOTIFY_ATTR_HDR_LEN + len);
	}
	return TRUE;
}
