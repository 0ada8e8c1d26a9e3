// SPDX-License-Identifier: GPL-2.0
/*
 * The pin path: what happens around every VA pin and ib_umem_release(),
 * and the per-pin records.
 *
 * hook.c's wrapper of the VA pin (ib_umem_get(), or __ib_umem_get_va() on
 * kernels with ib_core's buffer descriptors) calls:
 *   before:  mrpin_pin_prepare() allocates the record, finds the owners
 *	      (process, user, cgroup) and the device, and charges the pin's
 *	      bytes within every limit (account.c, policy.c).  Nothing is
 *	      pinned yet: this is where a pin is refused.
 *   call:    the real pin.
 *   after:   mrpin_pin_commit() publishes the record, keyed by the umem;
 *	      mrpin_pin_abort() rolls the charge back if the pin failed.
 * and its wrapper of ib_umem_release() calls mrpin_pin_unpublish(), which
 * takes the record out of the tables *before* the real release (the umem's
 * address may be reused by the next pin as soon as it is freed), and
 * mrpin_pin_released(), which uncharges it after.
 *
 * A umem mrpin did not see pinned (made before mrpin was loaded, or an ODP
 * or dma-buf umem, which pins no host pages) is released untouched and
 * counted in untracked_releases_total.
 *
 * When mrpin cannot allocate what it needs to track a pin (its record, an
 * owner's record, a slot), it can no longer vouch for any limit, and the
 * global rule's action decides, as for a limit: enforce refuses the pin
 * with -ENOMEM (nomem_denials_total); warn lets the real ib_umem_get() pin
 * it untracked (unrecorded_pins_total), and its release is then counted as
 * untracked.  Either way nothing is charged, so the counters stay exact.
 *
 * Storage: struct mrpin_pin comes from its own slab cache.  Live pins are
 * in two tables: an rhashtable keyed by the umem pointer (release finds its
 * record there) and an allocating xarray, by slot (the views walk it a
 * chunk at a time, under RCU).  Slots are small indexes reused as pins go,
 * so the xarray stays shallow and dense whatever the pin churn; the pin's
 * id, unique for the module's lifetime, is kept apart.  The slot is
 * reserved before the pin, so publishing cannot fail for want of memory.  Records
 * are freed after an RCU grace period; the owner and device records they
 * point to are freed through RCU too, after the pin drops its references.
 *
 * Locking: the tables have their own internal locks; a record is immutable
 * once published.
 */
#include <linux/cgroup.h>
#include <linux/delay.h>
#include <linux/rhashtable.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "compat.h"
#include "mrpin.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static struct kmem_cache *mrpin_pin_cache;
static struct rhashtable mrpin_pins_by_umem;
DEFINE_XARRAY_ALLOC(mrpin_pins);
static atomic64_t mrpin_pin_last_id;

static const struct rhashtable_params mrpin_pin_params = {
	.key_len = sizeof(const struct ib_umem *),
	.key_offset = offsetof(struct mrpin_pin, umem),
	.head_offset = offsetof(struct mrpin_pin, node),
	.automatic_shrinking = true,
};

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
 * read-only since 5.9).  Both need the cache not to be merged
 * into another of the same size: a constructor prevents that, 6.1 having
 * no SLAB_NO_MERGE.  The constructor does nothing, so objects are not
 * zeroed: the callers clear them.
 *
 * Context: process context.
 * Return: the cache, or NULL.
 */
struct kmem_cache *mrpin_cache_create(const char *name, unsigned int size)
{
	return kmem_cache_create(name, size, 0, 0, mrpin_cache_ctor);
}

static void mrpin_pin_free_rcu(struct rcu_head *rcu)
{
	struct mrpin_pin *pin = container_of(rcu, struct mrpin_pin, rcu);

	kfree(pin->callsite);
	kmem_cache_free(mrpin_pin_cache, pin);
}

/* Drop what a record holds and free it after RCU readers are done. */
static void mrpin_pin_free(struct mrpin_pin *pin)
{
	if (!IS_ERR_OR_NULL(pin->cg))
		mrpin_cg_put(pin->cg);
	if (!IS_ERR_OR_NULL(pin->proc))
		mrpin_proc_put(pin->proc);
	if (pin->dev)
		mrpin_dev_put(pin->dev);
	call_rcu(&pin->rcu, mrpin_pin_free_rcu);
}

/*
 * mrpin could not allocate what tracking the pin needs: refuse it, or let
 * it through untracked, as the global rule's action says.
 */
static struct mrpin_pin *mrpin_pin_nomem(void)
{
	bool warn;

	rcu_read_lock();
	warn = mrpin_policy_global()->warn;
	rcu_read_unlock();
	if (warn) {
		atomic64_inc(&mrpin_stats.unrecorded_pins_total);
		return NULL;
	}
	atomic64_inc(&mrpin_stats.nomem_denials_total);
	return ERR_PTR(-ENOMEM);
}

/**
 * mrpin_pin_prepare() - get ready for a pin and charge it
 * @ibdev: the device ib_umem_get() was called for
 * @addr: the start of the user range
 * @size: its length in bytes
 * @caller: the return address into the kernel function that asked
 *
 * Context: process context (the registering task), may sleep.
 * Return: a record to pass to mrpin_pin_commit() or mrpin_pin_abort();
 * NULL when the pin is not tracked (a range ib_umem_get() will refuse, a
 * task without an mm, a device mrpin does not know, no memory for the
 * records in warn mode); an ERR_PTR() when the pin must be refused.
 */
struct mrpin_pin *mrpin_pin_prepare(struct ib_device *ibdev,
				    unsigned long addr, size_t size,
				    unsigned long caller)
{
	struct mrpin_pin *pin;
	struct mrpin_dev *dev;
	struct cgroup *cgrp;
	int ret;

	/* ib_umem_get() refuses these itself, before charging anything. */
	if (!size || addr + size < addr || PAGE_ALIGN(addr + size) < addr + size)
		return NULL;

	/* Not ours to track: a kernel thread, a device mrpin does not know. */
	if (!current->mm)
		return NULL;
	dev = mrpin_dev_get(ibdev);
	if (!dev)
		return NULL;

	pin = kmem_cache_alloc(mrpin_pin_cache, GFP_KERNEL);
	if (!pin) {
		mrpin_dev_put(dev);
		return mrpin_pin_nomem();
	}
	memset(pin, 0, sizeof(*pin));
	pin->start = addr;
	pin->length = size;
	pin->caller = caller;
	pin->dev = dev;
	pin->proc = mrpin_proc_get_current();
	if (IS_ERR_OR_NULL(pin->proc))
		goto err_nomem;
	pin->user = mrpin_user_get(current_uid());
	if (IS_ERR(pin->user))
		goto err_nomem;
	rcu_read_lock();
	cgrp = task_dfl_cgroup(current);
	cgroup_get(cgrp);
	rcu_read_unlock();
	pin->cg = mrpin_cg_get(cgrp);
	if (IS_ERR(pin->cg)) {
		cgroup_put(cgrp);
		goto err_nomem;
	}
	ret = mrpin_diag_prepare(pin);
	if (ret) {
		cgroup_put(cgrp);
		mrpin_pin_free(pin);
		return ERR_PTR(ret);
	}
	pin->id = atomic64_inc_return(&mrpin_pin_last_id);
	if (xa_alloc(&mrpin_pins, &pin->slot, NULL, xa_limit_32b, GFP_KERNEL)) {
		cgroup_put(cgrp);
		goto err_nomem;
	}

	ret = mrpin_try_charge(pin, mrpin_pin_bytes(addr, size), cgrp);
	cgroup_put(cgrp);
	if (ret) {
		xa_release(&mrpin_pins, pin->slot);
		mrpin_pin_free(pin);
		return ERR_PTR(ret);
	}
	return pin;

err_nomem:
	mrpin_pin_free(pin);
	return mrpin_pin_nomem();
}

/**
 * mrpin_pin_abort() - roll back a prepared pin that will not be made
 * @pin: what mrpin_pin_prepare() returned
 *
 * Context: process context, may sleep.
 */
void mrpin_pin_abort(struct mrpin_pin *pin)
{
	mrpin_uncharge(pin, mrpin_pin_bytes(pin->start, pin->length), false);
	xa_release(&mrpin_pins, pin->slot);
	mrpin_pin_free(pin);
}

static void mrpin_pin_forget(struct mrpin_pin *pin, bool released)
{
	mrpin_uncharge(pin, mrpin_pin_bytes(pin->start, pin->length),
		       released);
	mrpin_pin_free(pin);
}

/*
 * Put a record in the table by umem.  A record already there for the same
 * umem is stale: that umem was freed without mrpin seeing its release, and
 * the address came back.  hook.c's load and unload order rules that out;
 * should it happen anyway, the stale record is dropped, as released (its
 * facts too: the backing counters stay exact), with a warning.  -EBUSY
 * (a rehash already running while the table is over full) passes once the
 * rehash worker has run.
 */
static int mrpin_pin_publish(struct mrpin_pin *pin)
{
	struct mrpin_pin *old;
	int tries = 0;

	for (;;) {
		old = rhashtable_lookup_get_insert_fast(&mrpin_pins_by_umem,
							&pin->node,
							mrpin_pin_params);
		if (!old)
			return 0;
		if (IS_ERR(old)) {
			if (PTR_ERR(old) != -EBUSY || ++tries > 1000)
				return PTR_ERR(old);
			usleep_range(20, 100);
			continue;
		}
		if (rhashtable_remove_fast(&mrpin_pins_by_umem, &old->node,
					   mrpin_pin_params))
			continue;
		pr_warn_once("mrpin: a pin of pid %d was released unseen\n",
			     old->proc->tgid);
		xa_erase(&mrpin_pins, old->slot);
		mrpin_diag_release(old, false);
		mrpin_pin_forget(old, true);
	}
}

/**
 * mrpin_pin_commit() - record a pin the kernel made
 * @pin: what mrpin_pin_prepare() returned
 * @umem: what the real ib_umem_get() returned
 *
 * Context: process context, may sleep.
 */
void mrpin_pin_commit(struct mrpin_pin *pin, struct ib_umem *umem)
{
	int ret;

	pin->umem = umem;
	pin->created_ns = local_clock();
	ret = mrpin_pin_publish(pin);
	if (ret) {
		/* Made but not recorded: its release will be untracked. */
		atomic64_inc(&mrpin_stats.unrecorded_pins_total);
		mrpin_pin_abort(pin);
		return;
	}
	xa_store(&mrpin_pins, pin->slot, pin, GFP_KERNEL);
	mrpin_commit(pin, mrpin_pin_bytes(pin->start, pin->length));
	mrpin_diag_commit(pin, umem);

	if (trace_mrpin_pin_enabled()) {
		char name[IB_DEVICE_NAME_MAX];

		mrpin_dev_name(pin->dev, name, sizeof(name));
		trace_mrpin_pin(pin->id, pin->proc->tgid, name, pin->start,
				pin->length,
				mrpin_pin_bytes(pin->start, pin->length),
				pin->caller);
	}
}

static struct mrpin_pin *mrpin_pin_take(struct ib_umem *umem)
{
	struct mrpin_pin *pin;

	rcu_read_lock();
	pin = rhashtable_lookup(&mrpin_pins_by_umem, &umem, mrpin_pin_params);
	if (pin && rhashtable_remove_fast(&mrpin_pins_by_umem, &pin->node,
					  mrpin_pin_params))
		pin = NULL;
	rcu_read_unlock();
	if (pin)
		xa_erase(&mrpin_pins, pin->slot);
	return pin;
}

/**
 * mrpin_pin_unpublish() - take a pin's record out before the pin is released
 * @umem: the umem about to be released
 * @cleanup: set to whether the release is the kernel's cleanup (the owner
 *	exiting or closing the device file) rather than a deregistration
 *
 * Out of the tables *before* the real release: the umem's address may come
 * back from the next pin as soon as it is freed.
 *
 * Context: process context.
 * Return: the record, to pass to mrpin_pin_released() after the release;
 * NULL for a umem mrpin did not see pinned (counted as untracked).
 */
struct mrpin_pin *mrpin_pin_unpublish(struct ib_umem *umem, bool *cleanup)
{
	struct mrpin_pin *pin;

	*cleanup = false;
	if (!umem)
		return NULL;
	pin = mrpin_pin_take(umem);
	if (!pin) {
		atomic64_inc(&mrpin_stats.untracked_releases_total);
		return NULL;
	}
	*cleanup = mrpin_release_is_cleanup(pin->proc->mm);
	return pin;
}

/**
 * mrpin_pin_released() - uncharge and free a pin's record after its release
 * @pin: what mrpin_pin_unpublish() returned
 * @cleanup: what mrpin_pin_unpublish() said of the release
 *
 * The pin is uncharged from the owners recorded when it was made, whichever
 * task releases it.
 *
 * Context: process context.
 */
void mrpin_pin_released(struct mrpin_pin *pin, bool cleanup)
{
	mrpin_diag_release(pin, cleanup);
	if (trace_mrpin_unpin_enabled())
		trace_mrpin_unpin(pin->id, pin->proc->tgid,
				  mrpin_pin_bytes(pin->start, pin->length),
				  local_clock() - pin->created_ns);
	mrpin_pin_forget(pin, true);
}

/**
 * mrpin_pin_init() - set up the pin records
 *
 * Context: process context.
 * Return: 0 or a negative errno.
 */
int mrpin_pin_init(void)
{
	int ret;

	mrpin_pin_cache = mrpin_cache_create("mrpin_pin",
					     sizeof(struct mrpin_pin));
	if (!mrpin_pin_cache)
		return -ENOMEM;
	ret = rhashtable_init(&mrpin_pins_by_umem, &mrpin_pin_params);
	if (ret)
		kmem_cache_destroy(mrpin_pin_cache);
	return ret;
}

/**
 * mrpin_pin_exit() - forget every live pin and free the records
 *
 * At unload the pins themselves stay: only mrpin's records go, and their
 * release will not be seen.
 *
 * Context: process context, after mrpin_hook_exit(): no pin path runs.
 */
void mrpin_pin_exit(void)
{
	struct mrpin_pin *pin;
	unsigned long id;

	xa_for_each(&mrpin_pins, id, pin) {
		xa_erase(&mrpin_pins, id);
		rhashtable_remove_fast(&mrpin_pins_by_umem, &pin->node,
				       mrpin_pin_params);
		mrpin_pin_forget(pin, false);
	}
	rhashtable_destroy(&mrpin_pins_by_umem);
	xa_destroy(&mrpin_pins);
	rcu_barrier();
	kmem_cache_destroy(mrpin_pin_cache);
}
