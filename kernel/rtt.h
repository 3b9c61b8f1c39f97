/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A round trip as the PEP times it, smoothed with RFC 6298 2's gain of an
 * eighth (no variance: the copies' timeout is twice it, early_ack.c): the
 * observer's, from a segment it saw to the ACK that covers it (flow.c), and
 * the engine's, from a copy leaving for the hop to the receiver's word of
 * it (early_ack.c).  Karn's rule is the caller's: only what went once is
 * timed.
 */
#ifndef LES_RTT_H
#define LES_RTT_H

#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/types.h>

struct les_rtt {
	u32 srtt_us, min_us, samples;
};

static inline void les_rtt_sample(struct les_rtt *r, s64 sample_us)
{
	u32 us = min_t(s64, sample_us, U32_MAX);

	/* A clock that went back, or an ACK of the same instant: no sample. */
	if (sample_us <= 0)
		return;
	/* SRTT <- 7/8 SRTT + 1/8 R */
	r->srtt_us = r->samples ? r->srtt_us - (r->srtt_us >> 3) + (us >> 3) : us;
	if (!r->samples || us < r->min_us)
		r->min_us = us;
	r->samples++;
}

#endif /* LES_RTT_H */
