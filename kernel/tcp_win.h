/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The window field of an ACK a PEP sends in the receiver's name.  The
 * receiver's window scale (RFC 7323 2.3) counts the field in units of
 * 2^shift: a right edge rounded down to a unit could fall before one the
 * sender was given already.  Rounded up instead (tcp_select_window() too
 * rounds up rather than shrink), the right edge never moves back.  Pure
 * arithmetic: selftest.c checks it at load and in user space.
 */
#ifndef LES_TCP_WIN_H
#define LES_TCP_WIN_H

/*
 * The field of an ACK of @ack whose right edge is to be at least *@edge;
 * *@edge becomes the right edge the sender reads from it, further right by
 * less than a unit.  Where the field's 16 bits cannot reach that far the
 * sender reads less, ack + 0xffff units, which moves on with @ack: *@edge
 * stays, the edge still to give.
 */
static inline u32 les_win_field(u32 *edge, u32 ack, u8 shift)
{
	u64 units = ((u64)(u32)(*edge - ack) + (1U << shift) - 1) >> shift;

	if (units > 0xffff)
		return 0xffff;
	*edge = ack + ((u32)units << shift);
	return units;
}

#endif /* LES_TCP_WIN_H */
