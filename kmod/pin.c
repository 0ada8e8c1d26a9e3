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
 *	      Once charged, the record is in the `pins` view as a pin in
 *	      flight (MRPIN_PIN_PINNING): a pin that waits in the kernel (on
 *	      a FUSE page whose server does not answer) holds its charge,
 *	      and everyone can see whose it is and for how long.
 *   after:   mrpin_pin_record() publishes the record, keyed by the umem;
 *	      mrpin_pin_failed() says why the pin failed (failure.c) and
 *	      rolls the charge back.
 * and its wrapper of ib_umem_release() calls mrpin_pin_unpublish(), which
 * takes the record out of the tables *before* the real release (the umem's
 * address may be reused by the next pin as soon as it is freed), and
 * mrpin_pin_released(), which uncharges it after.
 *
 * An on-demand-paging registration (ib_umem_odp_get()) pins no pages but
 * takes an entry in the device's MR table, and can leak like any other:
 * it is recorded as a pin of 0 bytes (MRPIN_PIN_ODP), so that it counts in
 * the registrations, max_pins, the leaks and the lifetimes, and stays out
 * of every byte count and of the union of pinned ranges.
 *
 * A peer registration (ib_umem_get_peer() on the peer-memory interface,
 * compat.h) that a peer memory client served (GPU memory, nvidia-peermem)
 * pins no host page either: it is recorded with MRPIN_PIN_PEER, counts in
 * the registrations, max_pins, the leaks and the lifetimes, stays out of
 * the host bytes and the union, and its bytes are counted apart, as peer
 * bytes, which no limit bounds.  Which it will be is known for sure only
 * after the real pin: ib_core tries the host pages first and asks the peer
 * clients only when that fails.  So peer.c guesses before, from the
 * address space, and mrpin_pin_record() settles it after: a pin charged as
 * host memory that came back as peer gives its bytes back; one taken for
 * peer memory that came back holding host pages (the address space
 * changed in between: another thread mapped memory there) is not
 * recorded: hook.c releases it and pins again, charged as host memory.
 * No host pin stays uncharged, and no GPU registration is refused by a
 * host-bytes limit.  A pin taken for peer memory holds its user's turn
 * (MRPIN_PIN_PEER_TURN) from mrpin_pin_prepare() until it is recorded or
 * rolled back: peer.c says how that bounds what such a pin can hold
 * uncharged meanwhile.
 *
 * A dma-buf registration (ib_core's dma-buf imports: an exporter's memory,
 * a GPU's mostly) is known for what it is before: recorded with
 * MRPIN_PIN_PEER and MRPIN_PIN_DMABUF, counted as peer memory, with no
 * guess and no turn.  Its range is the registration's offset and length
 * in the dma-buf, not a user address: no stack check applies to it.
 *
 * A umem mrpin did not see made (made before mrpin was loaded, or an
 * implicit ODP umem and its children, which no hook sees) is released
 * untouched and counted in untracked_releases_total.
 *
 * When mrpin cannot allocate what it needs to track a pin (its record, an
 * owner's record), it can no longer vouch for any limit, and the global
 * rule's action decides, as for a limit: enforce refuses the pin with
 * -ENOMEM (nomem_denials_total); warn lets the real ib_umem_get() pin it
 * untracked (unrecorded_pins_total), and its release is then counted as
 * untracked.  Either way nothing is charged, so the counters stay exact.
 * A pin made but not put in the tables (no memory for a table's node,
 * after the pin) is uncharged and counted as unrecorded the same way.
 *
 * Storage: struct mrpin_pin comes from its own slab cache, 96 bytes a pin
 * (mrpin.h says how).  Live pins are in two tables: an rhashtable keyed by
 * the umem pointer (release finds its record there) and an allocating
 * xarray, by slot (the views walk it a chunk at a time, under RCU).  Slots
 * are small indexes reused as pins go, so the xarray stays shallow and
 * dense whatever the pin churn; the pin's id, unique for the module's
 * lifetime, is kept apart.  A pin takes its slot once charged, before the
 * real pin; its key in the umem table once made.
 * Records are freed after an RCU grace period; the owner and device
 * records they point to are freed through RCU too, after the pin drops its
 * references.
 *
 * Locking: the tables have their own internal locks; the owning process's
 * union_lock covers a pin's place in the union of its ranges together with
 * its charge (distinct.c).  A record's owners,
 * range and id are fixed once published; diag.c sets its facts (the
 * backing, whether its call site was saved) just after, and the views
 * read them as they are.
 */
#include <linux/cgroup.h>
#include <linux/delay.h>
#include <linux/hash.h>
#include <linux/rhashtable.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "arch.h"
#include "compat.h"
#include "mrpin.h"
#include "trace.h"

static struct kmem_cache *mrpin_pin_cache;
static struct rhashtable mrpin_pins_by_umem;
DEFINE_XARRAY_ALLOC(mrpin_pins);
#define MRPIN_SLOT_KEEP (XA_CHUNK_SIZE - 1)	/* see mrpin_pin_init() */
static atomic64_t mrpin_pin_last_id;

/*
 * The key is a pointer: a multiplicative hash of it (seeded, as the table
 * asks) spreads slab addresses as well as jhash does, in a few
 * instructions.
 */
static u32 mrpin_umem_hash(const void *key, u32 len, u32 seed)
{
	return hash_64(*(const unsigned long *)key ^ seed, 32);
}

static const struct rhashtable_params mrpin_pin_params = {
	.key_len = sizeof(const struct ib_umem *),
	.hashfn = mrpin_umem_hash,
	.key_offset = offsetof(struct mrpin_pin, umem),
	.head_offset = offsetof(struct mrpin_pin, node),
	.automatic_shrinking = true,
};

/*
 * The kernel functions that call the VA pin, few and fixed (a driver's
 * registration paths): a pin keeps an index into this table rather than a
 * return address.  Entries are added, never removed (a driver unloaded and
 * loaded again adds its new addresses); index 0 stands for a caller that
 * found the table full.
 */
static unsigned long mrpin_callers[256];

static u8 mrpin_caller_index(unsigned long caller)
{
	unsigned long seen;
	unsigned int i;

	for (i = 1; i < ARRAY_SIZE(mrpin_callers); i++) {
		seen = READ_ONCE(mrpin_callers[i]);
		if (!seen)
			seen = cmpxchg(&mrpin_callers[i], 0, caller) ?: caller;
		if (seen == caller)
			return i;
	}
	return 0;
}

/**
 * mrpin_pin_caller() - the kernel function that asked for a pin
 * @pin: the pin
 *
 * Return: the return address into it, or 0 when mrpin's table of callers
 * was full.
 */
unsigned long mrpin_pin_caller(const struct mrpin_pin *pin)
{
	return READ_ONCE(mrpin_callers[pin->caller]);
}

/*
 * Give back a record's slot, with what the facts keep there, before the
 * slot can be reused.
 */
static void mrpin_pin_free_slot(struct mrpin_pin *pin)
{
	mrpin_diag_free(pin);
	xa_erase(&mrpin_pins, pin->slot);
}

static void mrpin_pin_free_rcu(struct rcu_head *rcu)
{
	kmem_cache_free(mrpin_pin_cache,
			container_of(rcu, struct mrpin_pin, rcu));
}

/*
 * Drop the references of a prepared record (every owner and the device)
 * and free it after RCU readers are done.  The owner and device records
 * are freed through RCU too: a reader that found the pin may still follow
 * its pointers to them.
 */
static void mrpin_pin_free(struct mrpin_pin *pin)
{
	mrpin_cg_put(pin->charge.cg);
	mrpin_user_put(pin->charge.user);
	mrpin_proc_put(pin->charge.proc);
	mrpin_dev_put(pin->charge.dev);
	call_rcu(&pin->rcu, mrpin_pin_free_rcu);
}

/*
 * Take a prepared pin's range out of its address space's union, and its
 * charge back.
 */
static void mrpin_pin_uncharge(struct mrpin_pin *pin, bool released)
{
	struct mrpin_charge *c = &pin->charge;
	u64 distinct = 0;

	mutex_lock(&c->proc->union_lock);
	if (!(pin->flags & MRPIN_PIN_NO_HOST))
		distinct = mrpin_distinct_remove(c->proc, pin->start,
						 pin->length);
	mrpin_uncharge(c, mrpin_pin_charged(pin), distinct, released);
	mutex_unlock(&c->proc->union_lock);
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

/*
 * Whether mrpin tracks a pin of [@addr, @addr + @size): one that pins at
 * least a page, decided as ib_umem_get() and ib_umem_odp_get() decide it,
 * by the pages the range spans, not by its length.  A length of 0 at an
 * unaligned address spans one page, which the kernel pins and charges to
 * pinned_vm like any other; at an aligned address it spans none, and the
 * kernel refuses it before charging anything.  A range that wraps is
 * refused the same way; a kernel thread's pins are not a user's.
 */
static bool mrpin_pin_ours(unsigned long addr, size_t size)
{
	if (mrpin_range_wraps(addr, size) || !mrpin_pin_bytes(addr, size))
		return false;
	return current->mm;
}

/**
 * mrpin_pin_prepare() - get ready for a pin and charge it
 * @ibdev: the device ib_umem_get() was called for
 * @addr: the start of the user range
 * @size: its length in bytes
 * @caller: the return address into the kernel function that asked
 * @kind: 0 for host memory; MRPIN_PIN_ODP for an on-demand-paging
 *	registration, MRPIN_PIN_PEER for peer memory: neither pins a host
 *	page, so it charges no bytes and takes no place in the union
 *
 * In order: the record, its owners and device (each with a reference),
 * then the two decisions, the stack rule and the limits (the charge), and
 * the range's place in its address space's union (distinct.c).  A failure
 * unwinds what was taken, in reverse order.
 *
 * Context: process context (the registering task), may sleep.
 * Return: a record to pass to mrpin_pin_record() or mrpin_pin_abort();
 * NULL when the pin goes through untracked: not ours (see
 * mrpin_pin_ours(), or a device mrpin does not know), or no memory for the
 * records under action=warn; ERR_PTR(-ENOMEM) when the pin is refused: a
 * rule refused it, or no memory for the records under action=enforce.
 */
struct mrpin_pin *mrpin_pin_prepare(struct ib_device *ibdev,
				    unsigned long addr, size_t size,
				    unsigned long caller, u8 kind)
{
	bool host = !(kind & MRPIN_PIN_NO_HOST);
	u64 bytes = host ? mrpin_pin_bytes(addr, size) : 0, distinct = 0;
	struct mrpin_charge *c;
	struct mrpin_pin *pin;
	struct mrpin_dev *dev;
	struct cgroup *cgrp;
	int ret;

	/*
	 * A dma-buf's range is an offset and a length in it: ib_core makes an
	 * MR of any length it holds, 0 included, and each takes an entry of
	 * the MR table, which max_pins bounds.
	 */
	if (kind & MRPIN_PIN_DMABUF ? !current->mm : !mrpin_pin_ours(addr, size))
		return NULL;
	dev = mrpin_dev_get(ibdev);
	if (!dev)
		return NULL;

	pin = kmem_cache_alloc(mrpin_pin_cache, GFP_KERNEL_ACCOUNT);
	if (!pin)
		goto err_nomem_dev;
	/* Field stores, not a memset: the record is written once here. */
	*pin = (struct mrpin_pin){
		.start = addr,
		.length = size,
		.flags = kind & (MRPIN_PIN_NO_HOST | MRPIN_PIN_DMABUF),
		.caller = mrpin_caller_index(caller),
	};
	c = &pin->charge;
	c->dev = dev;
	c->proc = mrpin_proc_get_current();
	if (IS_ERR(c->proc))
		goto err_nomem_pin;
	c->user = mrpin_user_get(current_uid());
	if (IS_ERR(c->user))
		goto err_nomem_user;
	rcu_read_lock();
	cgrp = task_dfl_cgroup(current);
	cgroup_get(cgrp);
	rcu_read_unlock();
	c->cg = mrpin_cg_get(cgrp);
	if (IS_ERR(c->cg))
		goto err_nomem_cgrp;

	ret = mrpin_diag_prepare(pin);
	if (ret)
		goto err_refused;
	mutex_lock(&c->proc->union_lock);
	if (host)
		distinct = mrpin_distinct_new_bytes(c->proc, addr, size);
	ret = mrpin_try_charge(c, bytes, distinct, cgrp);
	if (ret) {
		mutex_unlock(&c->proc->union_lock);
		goto err_refused;
	}
	if (host && mrpin_distinct_add(c->proc, addr, size)) {
		mrpin_uncharge(c, bytes, distinct, false);
		mutex_unlock(&c->proc->union_lock);
		goto err_nomem_charged;
	}
	mutex_unlock(&c->proc->union_lock);
	cgroup_put(cgrp);
	pin->id = atomic64_inc_return(&mrpin_pin_last_id);
	pin->created_ns = local_clock();
	pin->flags |= MRPIN_PIN_PINNING;
	/* In `pins` from here on, charged and being pinned. */
	if (xa_alloc(&mrpin_pins, &pin->slot, pin, xa_limit_32b, GFP_KERNEL)) {
		mrpin_pin_uncharge(pin, false);
		mrpin_pin_free(pin);
		return mrpin_pin_nomem();
	}
	if ((kind & MRPIN_PIN_PEER) && !(kind & MRPIN_PIN_DMABUF)) {
		/* In `pins` (peer, pinning) while it waits for its turn. */
		ret = mrpin_peer_enter(c->user);
		if (ret) {
			mrpin_pin_abort(pin);
			if (ret == -EAGAIN)
				return mrpin_pin_prepare(ibdev, addr, size,
							 caller, 0);
			return ERR_PTR(ret);
		}
		pin->flags |= MRPIN_PIN_PEER_TURN;
	}
	return pin;

err_refused:
	cgroup_put(cgrp);
	mrpin_pin_free(pin);
	return ERR_PTR(ret);

err_nomem_charged:
	cgroup_put(cgrp);
	mrpin_pin_free(pin);
	return mrpin_pin_nomem();

err_nomem_cgrp:
	cgroup_put(cgrp);
	mrpin_user_put(c->user);
err_nomem_user:
	mrpin_proc_put(c->proc);
err_nomem_pin:
	kmem_cache_free(mrpin_pin_cache, pin);
err_nomem_dev:
	mrpin_dev_put(dev);
	return mrpin_pin_nomem();
}

/* End the peer turn a pin taken for peer memory holds, once. */
static void mrpin_pin_end_turn(struct mrpin_pin *pin)
{
	if (pin->flags & MRPIN_PIN_PEER_TURN) {
		WRITE_ONCE(pin->flags, pin->flags & ~MRPIN_PIN_PEER_TURN);
		mrpin_peer_leave(pin->charge.user);
	}
}

/**
 * mrpin_pin_abort() - roll back a prepared pin that will not be made
 * @pin: what mrpin_pin_prepare() returned
 *
 * Context: process context, may sleep.
 */
void mrpin_pin_abort(struct mrpin_pin *pin)
{
	mrpin_pin_end_turn(pin);
	mrpin_pin_free_slot(pin);
	mrpin_pin_uncharge(pin, false);
	mrpin_pin_free(pin);
}

/**
 * mrpin_pin_failed() - the real pin failed: say why, and roll back
 * @pin: what mrpin_pin_prepare() returned, or NULL (an untracked pin)
 * @addr: the start of the user range
 * @size: its length in bytes
 * @writable: the pin asked for write access
 * @odp: it was an on-demand-paging registration
 * @err: the negative errno the real pin returned
 *
 * Context: process context (the registering task), may sleep.
 */
void mrpin_pin_failed(struct mrpin_pin *pin, unsigned long addr, size_t size,
		      bool writable, bool odp, int err)
{
	if (current->mm)
		mrpin_fail_explain(pin ? pin->charge.proc : NULL, addr, size,
				   writable, odp, err);
	if (pin)
		mrpin_pin_abort(pin);
}

/* Drop a recorded pin: its charge, its count, its record. */
static void mrpin_pin_forget(struct mrpin_pin *pin, bool released)
{
	if (pin->flags & MRPIN_PIN_ODP)
		atomic64_dec(&mrpin_stats.odp_pins);
	if (pin->flags & MRPIN_PIN_PEER) {
		atomic64_dec(&mrpin_stats.peer_pins);
		mrpin_account_peer(&pin->charge,
				   -mrpin_pin_bytes(pin->start, pin->length));
	}
	mrpin_pin_uncharge(pin, released);
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
			     old->charge.proc->tgid);
		mrpin_pin_free_slot(old);
		mrpin_diag_release(old, false);
		mrpin_pin_forget(old, true);
	}
}

/*
 * Settle what a pin the kernel made holds, against what mrpin_pin_prepare()
 * was told: a pin charged as host memory that a peer client served gives
 * its host bytes back.  Return -EAGAIN for one taken for peer memory that
 * holds host pages: it must not be recorded uncharged.
 */
static int mrpin_pin_settle(struct mrpin_pin *pin, struct ib_umem *umem)
{
	struct mrpin_charge *c = &pin->charge;
	bool peer = mrpin_umem_is_peer(umem) || mrpin_umem_is_dmabuf(umem);
	u64 distinct;

	if (pin->flags & MRPIN_PIN_ODP || peer == !!(pin->flags & MRPIN_PIN_PEER))
		return 0;
	if (!peer)
		return -EAGAIN;
	mutex_lock(&c->proc->union_lock);
	distinct = mrpin_distinct_remove(c->proc, pin->start, pin->length);
	mrpin_refund_host(c, mrpin_pin_bytes(pin->start, pin->length),
			  distinct);
	pin->flags |= MRPIN_PIN_PEER;
	mutex_unlock(&c->proc->union_lock);
	return 0;
}

/**
 * mrpin_pin_record() - record a pin the kernel made
 * @pin: what mrpin_pin_prepare() returned
 * @umem: what the real pin returned
 *
 * Context: process context, may sleep.
 * Return: 0; -EAGAIN when @pin was prepared as peer memory (by
 * peer.c's guess) but @umem holds host pages: @pin is
 * then rolled back, and the caller releases @umem and pins again as host
 * memory.
 */
int mrpin_pin_record(struct mrpin_pin *pin, struct ib_umem *umem)
{
	if (mrpin_pin_settle(pin, umem)) {
		/* Before the turn ends: no pin waiting for it is taken as peer. */
		mrpin_peer_raced(pin->charge.user, pin->charge.proc->tgid,
				 pin->start, pin->length);
		mrpin_pin_abort(pin);
		return -EAGAIN;
	}
	mrpin_pin_end_turn(pin);
	pin->umem = umem;
	WRITE_ONCE(pin->created_ns, local_clock());
	/* Counted before it is published: its release uncounts it. */
	if (pin->flags & MRPIN_PIN_PEER) {
		mrpin_account_peer(&pin->charge,
				   mrpin_pin_bytes(pin->start, pin->length));
		atomic64_inc(&mrpin_stats.peer_pins);
	}
	if (mrpin_pin_publish(pin)) {
		/* Made but not recorded: its release will be untracked. */
		atomic64_inc(&mrpin_stats.unrecorded_pins_total);
		if (pin->flags & MRPIN_PIN_PEER) {
			mrpin_account_peer(&pin->charge,
					   -mrpin_pin_bytes(pin->start,
							    pin->length));
			atomic64_dec(&mrpin_stats.peer_pins);
		}
		mrpin_pin_abort(pin);
		return 0;
	}
	WRITE_ONCE(pin->flags, pin->flags & ~MRPIN_PIN_PINNING);
	mrpin_count_registration(&pin->charge);
	if (pin->flags & MRPIN_PIN_ODP)
		atomic64_inc(&mrpin_stats.odp_pins);
	mrpin_diag_pinned(pin, umem);

	if (trace_mrpin_pin_enabled()) {
		char name[IB_DEVICE_NAME_MAX];

		mrpin_dev_name(pin->charge.dev, name, sizeof(name));
		trace_mrpin_pin(pin->id, pin->charge.proc->tgid, name, pin->start,
				pin->length, mrpin_pin_charged(pin),
				mrpin_pin_caller(pin));
	}
	return 0;
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
		mrpin_pin_free_slot(pin);
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
	*cleanup = mrpin_release_is_cleanup(pin->charge.proc->mm);
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
 * Context: process context, may sleep (ib_umem_release() itself does).
 */
void mrpin_pin_released(struct mrpin_pin *pin, bool cleanup)
{
	mrpin_diag_release(pin, cleanup);
	if (trace_mrpin_unpin_enabled())
		trace_mrpin_unpin(pin->id, pin->charge.proc->tgid,
				  mrpin_pin_charged(pin),
				  mrpin_age_ns(pin->created_ns, local_clock()));
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

	BUILD_BUG_ON(sizeof(struct mrpin_pin) > 96);
	BUILD_BUG_ON(offsetofend(struct mrpin_pin, rcu) >
		     offsetof(struct mrpin_pin, charge.proc));
	mrpin_pin_cache = mrpin_cache_create("mrpin_pin",
					     sizeof(struct mrpin_pin));
	if (!mrpin_pin_cache)
		return -ENOMEM;
	ret = rhashtable_init(&mrpin_pins_by_umem, &mrpin_pin_params);
	if (ret) {
		kmem_cache_destroy(mrpin_pin_cache);
		return ret;
	}
	/*
	 * The last slot of the first node, reserved for good (no reader sees
	 * a reserved slot), keeps that node: with no pin or one live, every
	 * pin would otherwise make the array a node and free it through RCU,
	 * and the freed nodes cost a new, cleared slab page every few pins.
	 */
	ret = xa_reserve(&mrpin_pins, MRPIN_SLOT_KEEP, GFP_KERNEL);
	if (ret) {
		rhashtable_destroy(&mrpin_pins_by_umem);
		kmem_cache_destroy(mrpin_pin_cache);
	}
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
		mrpin_pin_free_slot(pin);
		rhashtable_remove_fast(&mrpin_pins_by_umem, &pin->node,
				       mrpin_pin_params);
		mrpin_pin_forget(pin, false);
	}
	rhashtable_destroy(&mrpin_pins_by_umem);
	xa_destroy(&mrpin_pins);
	rcu_barrier();
	kmem_cache_destroy(mrpin_pin_cache);
}
