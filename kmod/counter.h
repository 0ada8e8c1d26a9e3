/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A counter with a limit, added to by many CPUs at once: the one primitive
 * every limit of mrpin rests on.  It sits in a header of its own so that
 * the selftests' counter module races the very code the pin path runs.
 *
 * Locking: none.  A counter is an atomic64_t; every add that a limit
 * guards goes through mrpin_counter_try_add(), every removal is an
 * atomic64_sub() of what an add put there.
 */
#ifndef _MRPIN_COUNTER_H
#define _MRPIN_COUNTER_H

#include <linux/atomic.h>
#include <linux/types.h>

/**
 * mrpin_counter_try_add() - add to a counter unless that crosses its limit
 * @counter:	the counter
 * @n:		what to add
 * @max:	the limit: the counter may reach it, never cross it
 * @usage:	on failure, the counter's value that @n did not fit in
 *
 * A compare-and-exchange loop, so that a counter that only this function
 * adds to never shows more than @max, not even for an instant, whatever
 * the number of CPUs adding at once.  A counter already over @max (a limit
 * lowered under it) takes nothing.  No sum can wrap: @n is compared with
 * what is left below @max.
 *
 * Context: any.
 * Return: true when @n was added.
 */
static inline bool mrpin_counter_try_add(atomic64_t *counter, u64 n, u64 max,
					 u64 *usage)
{
	s64 old = atomic64_read(counter);

	do {
		if ((u64)old > max || n > max - (u64)old) {
			*usage = old;
			return false;
		}
	} while (!atomic64_try_cmpxchg(counter, &old, old + n));
	return true;
}

#endif /* _MRPIN_COUNTER_H */
