// SPDX-License-Identifier: GPL-2.0
/*
 * Owners and charges: who holds how many pinned bytes.
 *
 * Every pin is charged, in the same order, to its process (struct
 * mrpin_proc, one per address space), its device (struct mrpin_dev) and the
 * global counters (mrpin_stats).  A charge is made before the real
 * ib_umem_get() pins anything, exactly as ib_umem_get() itself charges
 * mm->pinned_vm first, and is rolled back with the same numbers if the pin
 * fails.  Hence, for a process that pins only through ib_umem_get(), its
 * pinned_bytes equals its VmPin whenever no registration is in flight.
 *
 * Words: "charge" adds a pin's bytes to its owners; "commit" makes a
 * charged pin count as a registration; "uncharge" takes the bytes back,
 * as a release or as the rollback of a pin that failed.
 *
 * Process records are keyed by mm, not by pid: ib_umem_get() charges
 * current->mm and ib_umem_release() uncharges umem->owning_mm, possibly from
 * another task (at exit, current->mm is already gone).  The record holds the
 * mm with mmgrab() so that VmPin (mm->pinned_vm) can be read while it lives.
 *
 * Locking (outer to inner):
 *   mrpin_procs_lock (mutex): the hash and the list of records; taken to
 *	create a record and to drop its last reference
 *   proc->lock (spinlock): the record's counters and cgroup
 * Lookups walk the hash under RCU; records are freed through RCU.
 */
#include <linux/cgroup.h>
#include <linux/hashtable.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "mrpin.h"

#define MRPIN_PROC_HASH_BITS 8

static DEFINE_HASHTABLE(mrpin_procs_hash, MRPIN_PROC_HASH_BITS);
LIST_HEAD(mrpin_procs);
/* Protects mrpin_procs and mrpin_procs_hash; see the lock map above. */
DEFINE_MUTEX(mrpin_procs_lock);

struct mrpin_stats mrpin_stats;

static struct mrpin_proc *mrpin_proc_find_rcu(struct mm_struct *mm)
{
	struct mrpin_proc *proc;

	hash_for_each_possible_rcu(mrpin_procs_hash, proc, hnode,
				   (unsigned long)mm)
		if (proc->mm == mm)
			return proc;
	return NULL;
}

static struct mrpin_proc *mrpin_proc_alloc(struct mm_struct *mm)
{
	struct mrpin_proc *proc;

	proc = kzalloc(sizeof(*proc), GFP_KERNEL);
	if (!proc)
		return NULL;
	refcount_set(&proc->ref, 1);
	spin_lock_init(&proc->lock);
	proc->mm = mm;
	mmgrab(mm);
	proc->tgid = task_tgid_nr(current);
	proc->uid = current_uid();
	rcu_read_lock();
	strscpy(proc->comm, rcu_dereference(current->group_leader)->comm,
		sizeof(proc->comm));
	rcu_read_unlock();
	return proc;
}

static void mrpin_proc_free(struct mrpin_proc *proc)
{
	mmdrop(proc->mm);
	if (proc->cgrp)
		cgroup_put(proc->cgrp);
	kfree_rcu(proc, rcu);
}

/**
 * mrpin_proc_get_current() - the record of the current address space
 *
 * Finds or creates the record of current->mm and takes a reference.
 *
 * Context: process context, may sleep.
 * Return: the record; NULL for a task without an mm; ERR_PTR(-ENOMEM).
 */
struct mrpin_proc *mrpin_proc_get_current(void)
{
	struct mm_struct *mm = current->mm;
	struct mrpin_proc *proc, *new;

	if (!mm)
		return NULL;

	rcu_read_lock();
	proc = mrpin_proc_find_rcu(mm);
	if (proc && !refcount_inc_not_zero(&proc->ref))
		proc = NULL;
	rcu_read_unlock();
	if (proc)
		return proc;

	new = mrpin_proc_alloc(mm);
	if (!new)
		return ERR_PTR(-ENOMEM);

	mutex_lock(&mrpin_procs_lock);
	/* Under the lock, a record found has a non-zero count. */
	proc = mrpin_proc_find_rcu(mm);
	if (proc) {
		refcount_inc(&proc->ref);
	} else {
		hash_add_rcu(mrpin_procs_hash, &new->hnode, (unsigned long)mm);
		list_add_tail(&new->node, &mrpin_procs);
		proc = new;
		new = NULL;
	}
	mutex_unlock(&mrpin_procs_lock);
	if (new)
		mrpin_proc_free(new);
	return proc;
}

/**
 * mrpin_proc_put() - drop a reference to a process record
 * @proc: the record
 *
 * The record is unlinked and freed with its last reference.
 *
 * Context: process context, may sleep.
 */
void mrpin_proc_put(struct mrpin_proc *proc)
{
	if (!refcount_dec_and_mutex_lock(&proc->ref, &mrpin_procs_lock))
		return;
	hash_del_rcu(&proc->hnode);
	list_del(&proc->node);
	mutex_unlock(&mrpin_procs_lock);
	WARN_ONCE(proc->pins || proc->pinned_bytes,
		  "mrpin: pid %d (%s) record freed with %llu pins, %llu bytes\n",
		  proc->tgid, proc->comm, proc->pins, proc->pinned_bytes);
	mrpin_proc_free(proc);
}

/**
 * mrpin_proc_vm_pinned_bytes() - the kernel's own count: VmPin, in bytes
 * @proc: a live record (it holds the mm)
 *
 * mm->pinned_vm counts every pinner of the address space, not only RDMA.
 *
 * Context: any context.
 * Return: mm->pinned_vm in bytes.
 */
u64 mrpin_proc_vm_pinned_bytes(const struct mrpin_proc *proc)
{
	return (u64)atomic64_read(&proc->mm->pinned_vm) << PAGE_SHIFT;
}

static void mrpin_max64(atomic64_t *peak, s64 value)
{
	s64 old = atomic64_read(peak);

	while (old < value && !atomic64_try_cmpxchg(peak, &old, value))
		;
}

/**
 * mrpin_charge() - charge a pin about to be made to its owners
 * @proc: the owning process
 * @dev: the device
 * @bytes: the bytes the pin will hold (see mrpin_pin_bytes())
 * @cgrp: the cgroup the pin is made in, recorded as the process's latest
 *
 * Context: process context.
 */
void mrpin_charge(struct mrpin_proc *proc, struct mrpin_dev *dev, u64 bytes,
		  struct cgroup *cgrp)
{
	struct cgroup *old = NULL;

	spin_lock(&proc->lock);
	proc->pins++;
	proc->pinned_bytes += bytes;
	proc->memlock = rlimit(RLIMIT_MEMLOCK);
	if (proc->cgrp != cgrp) {
		old = proc->cgrp;
		cgroup_get(cgrp);
		proc->cgrp = cgrp;
	}
	spin_unlock(&proc->lock);
	if (old)
		cgroup_put(old);

	atomic64_inc(&dev->pins);
	atomic64_add(bytes, &dev->pinned_bytes);
	atomic64_inc(&mrpin_stats.pins);
	atomic64_add(bytes, &mrpin_stats.pinned_bytes);
}

/**
 * mrpin_commit() - count a charged pin that the kernel made
 * @proc: the owning process
 *
 * Context: any context.
 */
void mrpin_commit(struct mrpin_proc *proc)
{
	spin_lock(&proc->lock);
	proc->registrations++;
	proc->peak_bytes = max(proc->peak_bytes, proc->pinned_bytes);
	spin_unlock(&proc->lock);

	atomic64_inc(&mrpin_stats.pins_total);
	mrpin_max64(&mrpin_stats.peak_pinned_bytes,
		    atomic64_read(&mrpin_stats.pinned_bytes));
}

/**
 * mrpin_uncharge() - take a pin's bytes back from its owners
 * @proc: the owning process
 * @dev: the device
 * @bytes: what mrpin_charge() charged
 * @released: true for the release of a committed pin, false for the
 *	rollback of a pin that was refused or failed
 *
 * Context: any context.
 */
void mrpin_uncharge(struct mrpin_proc *proc, struct mrpin_dev *dev,
		    u64 bytes, bool released)
{
	spin_lock(&proc->lock);
	WARN_ONCE(proc->pins < 1 || proc->pinned_bytes < bytes,
		  "mrpin: pid %d uncharge of %llu bytes underflows\n",
		  proc->tgid, bytes);
	proc->pins--;
	proc->pinned_bytes -= bytes;
	if (released)
		proc->releases++;
	spin_unlock(&proc->lock);

	atomic64_dec(&dev->pins);
	atomic64_sub(bytes, &dev->pinned_bytes);
	atomic64_dec(&mrpin_stats.pins);
	atomic64_sub(bytes, &mrpin_stats.pinned_bytes);
	if (released)
		atomic64_inc(&mrpin_stats.releases_total);
}

/**
 * mrpin_account_exit() - check that nothing is left charged
 *
 * Called after every pin record was dropped: any process record left is a
 * leak of references, reported with its owner.
 *
 * Context: process context.
 */
void mrpin_account_exit(void)
{
	struct mrpin_proc *proc;

	mutex_lock(&mrpin_procs_lock);
	list_for_each_entry(proc, &mrpin_procs, node)
		pr_err("mrpin: record of pid %d (%s) left with %llu pins\n",
		       proc->tgid, proc->comm, proc->pins);
	WARN_ON(!list_empty(&mrpin_procs));
	mutex_unlock(&mrpin_procs_lock);
	WARN_ON(atomic64_read(&mrpin_stats.pins) ||
		atomic64_read(&mrpin_stats.pinned_bytes));
}
