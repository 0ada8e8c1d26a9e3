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

#include "mrpin.h"

/* Only there to make the cache unmergeable; see mrpin_cache_create(). */
static void mrpin_cache_ctor(void *object)
{
}

/**
 * mrpin_cache_create() - a slab cache of mrpin's own
 * @name: its name in /proc/slabinfo and /sys/kernel/slab
 * @size: the size of its objects
 *
 * An own cache shows mrpin's records in /proc/slabinfo, and lets failslab
 * aim at mrpin alone (cache-filter, with the caches marked by booting with
 * slub_debug=A,mrpin_*, on a kernel with CONFIG_FAILSLAB: the sysfs flag is
 * read-only since 5.9).  Both need the cache not to be merged into another
 * of the same size: a constructor prevents that, 6.1 having no
 * SLAB_NO_MERGE.  The constructor does nothing, so objects are not zeroed:
 * the callers clear them.
 *
 * Context: process context.
 * Return: the cache, or NULL.
 */
struct kmem_cache *mrpin_cache_create(const char *name, unsigned int size)
{
	return kmem_cache_create(name, size, 0, 0, mrpin_cache_ctor);
}
