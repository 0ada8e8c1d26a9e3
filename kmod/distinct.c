// SPDX-License-Identifier: GPL-2.0
/*
 * Distinct pinned bytes: the union of the ranges pinned in one address
 * space, so that memory registered several times (on several devices, in
 * several PDs, or as overlapping MRs) counts once.
 *
 * The kernel charges every registration in full to mm->pinned_vm and
 * RLIMIT_MEMLOCK: a buffer registered on 8 NICs counts 8 times.  mrpin
 * counts both: pinned_bytes as the kernel does, distinct_bytes as RAM sees
 * it.
 *
 * Each process record keeps the boundaries of its live pins in an rbtree
 * of points, keyed by address.  A point says how many live pins start
 * there (@opens), end there (@closes), and cover the stretch from it to the
 * next point (@cover).  A point exists while a pin starts or ends at it, so
 * a process with n live pins has at most 2n points whatever came and went
 * before; the stretches with @cover 0 are the holes between pinned ranges.
 *
 *	pins:      [=====A=====)
 *	                 [====B====)
 *	points:    a0    b0    a1  b1      a0, b0: opens 1; a1, b1: closes 1
 *	cover:        1     2     1    0
 *
 * A pin of [s, e) (page-aligned, as the kernel pins whole pages):
 *   mrpin_distinct_new_bytes()	the bytes of [s, e) no live pin covers:
 *				what the pin adds to the union
 *   mrpin_distinct_add()	makes (or finds) the points s and e and adds
 *				one to the cover of every point in [s, e)
 *   mrpin_distinct_remove()	takes one off, returns the bytes whose
 *				cover went to 0, and erases the points no
 *				pin starts or ends at any more (the cover is
 *				the same on both sides of such a point)
 * Each costs O(log p + k) for p points: a search, then a walk over the k
 * points inside the range, which are boundaries of other pins.  The same
 * range registered again and again (one buffer on every device, or a
 * registration cache re-registering) has none inside: k = 0.  Adding
 * allocates the points that are not there yet, at most two (none for a
 * range pinned again), and undoes what it made if one is missing; removing
 * allocates nothing, so a release never fails for want of memory.
 *
 * The caller (pin.c) holds proc->union_lock from measuring a pin to adding
 * it, with the charge (account.c) in between, so that a limit on distinct
 * bytes can refuse the pin before it is added, and from removing a pin to
 * uncharging it: the counters move by exactly what each change of the tree
 * changed, and never show more than the union, not even for an instant.
 *
 * "Distinct" is by user address, in one address space.  A range
 * registered, then unmapped and mapped again (other pages at the same
 * address), and registered again, counts once although two sets of pages
 * are pinned; two processes sharing memory count it once each.
 *
 * Locking: proc->union_lock (a mutex: adding allocates, charging may
 * report) protects the tree and its points.
 */
#include <linux/rbtree.h>
#include <linux/slab.h>

#include "mrpin.h"

/**
 * struct mrpin_point - a boundary of the pinned ranges of an address space
 * @node:	in proc->points, keyed by @addr
 * @addr:	the address (page-aligned)
 * @opens:	live pins that start at @addr
 * @closes:	live pins that end at @addr
 * @cover:	live pins that cover [@addr, the next point)
 */
struct mrpin_point {
	struct rb_node node;
	unsigned long addr;
	unsigned int opens;
	unsigned int closes;
	unsigned int cover;
};

static struct kmem_cache *mrpin_point_cache;

/* The whole pages a pin of [@start, @start + @length) pins: [*@s, *@e). */
static void mrpin_distinct_range(unsigned long start, size_t length,
				 unsigned long *s, unsigned long *e)
{
	*s = start & PAGE_MASK;
	*e = PAGE_ALIGN(start + length);
}

static struct mrpin_point *mrpin_point_next(struct mrpin_point *p)
{
	return rb_entry_safe(rb_next(&p->node), struct mrpin_point, node);
}

/* The point at @addr, or NULL. */
static struct mrpin_point *mrpin_point_find(struct mrpin_proc *proc,
					    unsigned long addr)
{
	struct rb_node *n = proc->points.rb_node;
	struct mrpin_point *p;

	while (n) {
		p = rb_entry(n, struct mrpin_point, node);
		if (addr == p->addr)
			return p;
		n = addr < p->addr ? n->rb_left : n->rb_right;
	}
	return NULL;
}

/*
 * The point at @addr: found, or made with the cover of the stretch it cuts
 * in two, opened and closed by no pin yet.  NULL: no memory.
 */
static struct mrpin_point *mrpin_point_get(struct mrpin_proc *proc,
					   unsigned long addr)
{
	struct rb_node **link = &proc->points.rb_node, *parent = NULL;
	struct mrpin_point *p, *before = NULL;

	while (*link) {
		parent = *link;
		p = rb_entry(parent, struct mrpin_point, node);
		if (addr == p->addr)
			return p;
		if (addr < p->addr) {
			link = &parent->rb_left;
		} else {
			before = p;
			link = &parent->rb_right;
		}
	}
	p = kmem_cache_alloc(mrpin_point_cache, GFP_KERNEL_ACCOUNT);
	if (!p)
		return NULL;
	p->addr = addr;
	p->opens = 0;
	p->closes = 0;
	p->cover = before ? before->cover : 0;
	rb_link_node(&p->node, parent, link);
	rb_insert_color(&p->node, &proc->points);
	return p;
}

/* Erase and free @p if no pin starts or ends at it any more. */
static void mrpin_point_put(struct mrpin_proc *proc, struct mrpin_point *p)
{
	if (p->opens || p->closes)
		return;
	rb_erase(&p->node, &proc->points);
	kmem_cache_free(mrpin_point_cache, p);
}

/**
 * mrpin_distinct_new_bytes() - what a pin would add to the union
 * @proc: the pinning process
 * @start: the start of the user range
 * @length: its length in bytes (the range does not wrap)
 *
 * Context: process context, under proc->union_lock.
 * Return: the bytes of the range's pages that no live pin of @proc covers.
 */
u64 mrpin_distinct_new_bytes(struct mrpin_proc *proc, unsigned long start,
			     size_t length)
{
	struct rb_node *n = proc->points.rb_node;
	struct mrpin_point *p, *before = NULL, *after = NULL;
	unsigned long s, e, at;
	unsigned int cover;
	u64 bytes = 0;

	lockdep_assert_held(&proc->union_lock);
	mrpin_distinct_range(start, length, &s, &e);
	at = s;
	/* The last point at or below s, and the first above it. */
	while (n) {
		p = rb_entry(n, struct mrpin_point, node);
		if (p->addr <= s) {
			before = p;
			n = n->rb_right;
		} else {
			after = p;
			n = n->rb_left;
		}
	}
	cover = before ? before->cover : 0;
	for (p = after; p && p->addr < e; p = mrpin_point_next(p)) {
		if (!cover)
			bytes += p->addr - at;
		at = p->addr;
		cover = p->cover;
	}
	if (!cover)
		bytes += e - at;
	return bytes;
}

/**
 * mrpin_distinct_add() - add a pin's range to the union
 * @proc: the pinning process
 * @start: the start of the user range
 * @length: its length in bytes (the range does not wrap)
 *
 * The union grows by what mrpin_distinct_new_bytes() said, under the same
 * lock.  Only a point that is not there yet is allocated: the same range
 * pinned again allocates nothing.
 *
 * Context: process context, may sleep; under proc->union_lock.
 * Return: 0, or -ENOMEM (nothing changed).
 */
int mrpin_distinct_add(struct mrpin_proc *proc, unsigned long start,
		       size_t length)
{
	struct mrpin_point *first, *last, *p;
	unsigned long s, e;

	lockdep_assert_held(&proc->union_lock);
	mrpin_distinct_range(start, length, &s, &e);
	first = mrpin_point_get(proc, s);
	if (!first)
		return -ENOMEM;
	last = mrpin_point_get(proc, e);
	if (!last) {
		mrpin_point_put(proc, first);
		return -ENOMEM;
	}
	first->opens++;
	last->closes++;
	for (p = first; p != last; p = mrpin_point_next(p))
		p->cover++;
	return 0;
}

/**
 * mrpin_distinct_remove() - take a pin's range out of the union
 * @proc: the process that pinned it
 * @start: the start of the user range
 * @length: its length in bytes, as given to mrpin_distinct_add()
 *
 * Context: process context, under proc->union_lock.
 * Return: the bytes no live pin of @proc covers any more.
 */
u64 mrpin_distinct_remove(struct mrpin_proc *proc, unsigned long start,
			  size_t length)
{
	struct mrpin_point *first, *last, *p, *next;
	unsigned long s, e;
	u64 bytes = 0;

	lockdep_assert_held(&proc->union_lock);
	mrpin_distinct_range(start, length, &s, &e);
	first = mrpin_point_find(proc, s);
	last = mrpin_point_find(proc, e);
	if (WARN_ON_ONCE(!first || !last || !first->opens || !last->closes))
		return 0;
	for (p = first; p != last; p = next) {
		next = mrpin_point_next(p);
		if (!--p->cover)
			bytes += next->addr - p->addr;
	}
	/* A point no pin starts or ends at has the same cover on both sides. */
	first->opens--;
	last->closes--;
	mrpin_point_put(proc, first);
	mrpin_point_put(proc, last);
	return bytes;
}

/**
 * mrpin_distinct_init() - set up the points' cache
 *
 * Context: process context.
 * Return: 0 or -ENOMEM.
 */
int mrpin_distinct_init(void)
{
	mrpin_point_cache = mrpin_cache_create("mrpin_point",
					       sizeof(struct mrpin_point));
	return mrpin_point_cache ? 0 : -ENOMEM;
}

/**
 * mrpin_distinct_exit() - free the points' cache
 *
 * Context: process context, after every pin's range was removed
 * (mrpin_pin_exit()).
 */
void mrpin_distinct_exit(void)
{
	kmem_cache_destroy(mrpin_point_cache);
}
