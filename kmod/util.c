// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers every layer of the module may use, and which use nothing of the
 * module's: the bottom layer.
 *
 * mrpin_cache_create(): each kind of record (pins, processes, users,
 * cgroups) lives in a slab cache of its own, so that its objects show in
 * /proc/slabinfo and fault injection can aim at mrpin alone.  pin.c and
 * account.c both make caches; neither may use the other's functions.
 */
#include <linux/slab.h>

#include "compat.h"
#include "mrpin.h"

/**
 * mrpin_cache_create() - a slab cache of mrpin's own
 * @name: its name in /proc/slabinfo and /sys/kernel/slab
 * @size: the size of its objects
 *
 * An own cache shows mrpin's records in /proc/slabinfo, and lets failslab
 * aim at mrpin alone (cache-filter, with the caches marked by booting with
 * slub_debug=A,mrpin_*, on a kernel with CONFIG_FAILSLAB: the sysfs flag is
 * read-only since 5.9).  Both need the cache not to be merged into another
 * of the same size: SLAB_NO_MERGE says so from 6.5.  6.1 has no such flag;
 * there SLUB may merge the caches (they show as aliases in
 * /sys/kernel/slab), unless slub_debug marks them, which keeps them apart.
 * A constructor would keep them apart too, but it moves SLUB's free pointer
 * out of the object: 8 bytes more per pin.  Objects are not zeroed: the
 * callers clear them.
 *
 * Context: process context.
 * Return: the cache, or NULL.
 */
struct kmem_cache *mrpin_cache_create(const char *name, unsigned int size)
{
	return kmem_cache_create(name, size, 0, MRPIN_SLAB_NO_MERGE, NULL);
}
