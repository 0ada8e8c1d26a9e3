// SPDX-License-Identifier: GPL-2.0
/*
 * Owners and charges: who holds how many pinned bytes, against which limit.
 *
 * Every pin is charged, in this order, to
 *	the machine (mrpin_stats.usage),
 *	its process (struct mrpin_proc, one per address space),
 *	its user (struct mrpin_user),
 *	its cgroup and every ancestor (struct mrpin_cg, leaf to root),
 * each a struct mrpin_counter, and to its device (no limit there).  A level
 * with a limit is charged with a compare-and-exchange loop that adds only
 * what fits (as iommufd's incr_user_locked_vm() does), so concurrent pins
 * never overshoot a limit together, and no reader ever sees a counter above
 * it.  The first level a pin does not fit in refuses it: the levels already
 * charged are rolled back, exactly those (misc_cg_try_charge() works the
 * same way).
 *
 * The charge is made before the real ib_umem_get() pins anything, exactly
 * as ib_umem_get() itself charges mm->pinned_vm first, and is taken back
 * with the same numbers when the pin fails or is released.  Hence, for a
 * process that pins only through ib_umem_get(), its pinned bytes equal its
 * VmPin whenever no registration is in flight.
 *
 * Words: "try_charge" adds a pin to its owners and checks the limits;
 * "commit" counts a charged pin the kernel made as a registration;
 * "uncharge" takes the pin back, as a release or as the rollback of a pin
 * that was refused or failed.
 *
 * Process records are keyed by mm, not by pid: ib_umem_get() charges
 * current->mm and ib_umem_release() uncharges umem->owning_mm, possibly from
 * another task (at exit, current->mm is already gone).  The record holds the
 * mm with mmgrab() so that VmPin (mm->pinned_vm) can be read while it lives.
 * Cgroup records are keyed by cgroup id and hold their parent's record, so a
 * pin stays charged to the cgroup it was made in, even after its process
 * moved or the cgroup was removed.
 *
 * Locking (outer to inner):
 *   mrpin_owners_lock (mutex): the three owner hashes and mrpin_procs;
 *	taken to create a record and to drop a record's last reference
 *   proc->lock (spinlock): a process's bookkeeping (peak, counts, cgroup)
 * Counters are atomics.  Lookups walk the hashes under RCU; records are
 * freed through RCU.
 *
 * Storage: each kind of record has its own slab cache (mrpin_proc,
 * mrpin_user, mrpin_cgroup), so that its objects show in /proc/slabinfo and
 * fault injection can aim at mrpin alone (see mrpin_cache_create()).
 */
#include <linux/cgroup.h>
#include <linux/hashtable.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "mrpin.h"

static DEFINE_HASHTABLE(mrpin_procs_hash, MRPIN_OWNER_HASH_BITS);
DEFINE_HASHTABLE(mrpin_users_hash, MRPIN_OWNER_HASH_BITS);
DEFINE_HASHTABLE(mrpin_cgs_hash, MRPIN_OWNER_HASH_BITS);
LIST_HEAD(mrpin_procs);
/* Protects the owner hashes and mrpin_procs; see the lock map above. */
DEFINE_MUTEX(mrpin_owners_lock);

static struct kmem_cache *mrpin_proc_cache;
static struct kmem_cache *mrpin_user_cache;
static struct kmem_cache *mrpin_cg_cache;

struct mrpin_stats mrpin_stats;

/* --- processes --- */

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

	proc = kmem_cache_alloc(mrpin_proc_cache, GFP_KERNEL);
	if (!proc)
		return NULL;
	memset(proc, 0, sizeof(*proc));
	atomic_set(&proc->ref, 1);
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

static void mrpin_proc_free_rcu(struct rcu_head *rcu)
{
	kmem_cache_free(mrpin_proc_cache,
			container_of(rcu, struct mrpin_proc, rcu));
}

static void mrpin_proc_free(struct mrpin_proc *proc)
{
	mmdrop(proc->mm);
	if (proc->cgrp)
		cgroup_put(proc->cgrp);
	call_rcu(&proc->rcu, mrpin_proc_free_rcu);
}

/* Unlink a parked record and free it after RCU readers are done. */
static void mrpin_proc_del_locked(struct mrpin_proc *proc)
{
	lockdep_assert_held(&mrpin_owners_lock);
	hash_del_rcu(&proc->hnode);
	list_del(&proc->node);
	WARN_ONCE(atomic64_read(&proc->usage.pins) ||
		  atomic64_read(&proc->usage.pinned_bytes),
		  "mrpin: pid %d (%s) record freed with pins left\n",
		  proc->tgid, proc->comm);
	mrpin_proc_free(proc);
}

/* Free the parked records of address spaces that have exited. */
static void mrpin_proc_reap_locked(void)
{
	struct mrpin_proc *proc, *tmp;

	lockdep_assert_held(&mrpin_owners_lock);
	list_for_each_entry_safe(proc, tmp, &mrpin_procs, node)
		if (!atomic_read(&proc->ref) &&
		    !atomic_read(&proc->mm->mm_users))
			mrpin_proc_del_locked(proc);
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
	if (proc && !atomic_inc_not_zero(&proc->ref))
		proc = NULL;
	rcu_read_unlock();
	if (proc)
		return proc;

	/* Parked (or new): the slow path, under the lock. */
	mutex_lock(&mrpin_owners_lock);
	proc = mrpin_proc_find_rcu(mm);
	if (proc)
		atomic_inc(&proc->ref);
	mutex_unlock(&mrpin_owners_lock);
	if (proc)
		return proc;

	new = mrpin_proc_alloc(mm);
	if (!new)
		return ERR_PTR(-ENOMEM);

	mutex_lock(&mrpin_owners_lock);
	proc = mrpin_proc_find_rcu(mm);
	if (proc) {
		atomic_inc(&proc->ref);
	} else {
		mrpin_proc_reap_locked();
		hash_add_rcu(mrpin_procs_hash, &new->hnode, (unsigned long)mm);
		list_add_tail(&new->node, &mrpin_procs);
		proc = new;
		new = NULL;
	}
	mutex_unlock(&mrpin_owners_lock);
	if (new)
		mrpin_proc_free(new);
	return proc;
}

/**
 * mrpin_proc_put() - drop a reference to a process record
 * @proc: the record
 *
 * The last reference parks the record: it stays, out of sight, for the
 * next pin of the same address space; mrpin_proc_reap_locked() frees it
 * once the address space is gone.
 *
 * Context: any context.
 */
void mrpin_proc_put(struct mrpin_proc *proc)
{
	WARN_ON_ONCE(atomic_dec_return(&proc->ref) < 0);
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

/* --- users --- */

static void mrpin_user_free_rcu(struct rcu_head *rcu)
{
	kmem_cache_free(mrpin_user_cache,
			container_of(rcu, struct mrpin_user, rcu));
}

static struct mrpin_user *mrpin_user_find_rcu(kuid_t uid)
{
	struct mrpin_user *user;

	hash_for_each_possible_rcu(mrpin_users_hash, user, hnode,
				   __kuid_val(uid))
		if (uid_eq(user->uid, uid))
			return user;
	return NULL;
}

/**
 * mrpin_user_get() - find or create the record of a user
 * @uid: the user
 *
 * User records are few and stay until mrpin is unloaded, so that a user
 * whose pins come and go does not make and free one on every pin.
 *
 * Context: process context, may sleep.
 * Return: the record, or ERR_PTR(-ENOMEM).
 */
struct mrpin_user *mrpin_user_get(kuid_t uid)
{
	struct mrpin_user *user, *new;

	rcu_read_lock();
	user = mrpin_user_find_rcu(uid);
	rcu_read_unlock();
	if (user)
		return user;

	new = kmem_cache_alloc(mrpin_user_cache, GFP_KERNEL);
	if (!new)
		return ERR_PTR(-ENOMEM);
	memset(new, 0, sizeof(*new));
	new->uid = uid;

	mutex_lock(&mrpin_owners_lock);
	user = mrpin_user_find_rcu(uid);
	if (user) {
		kmem_cache_free(mrpin_user_cache, new);
	} else {
		hash_add_rcu(mrpin_users_hash, &new->hnode, __kuid_val(uid));
		user = new;
	}
	mutex_unlock(&mrpin_owners_lock);
	return user;
}

/* --- cgroups --- */

static void mrpin_cg_free_rcu(struct rcu_head *rcu)
{
	kmem_cache_free(mrpin_cg_cache, container_of(rcu, struct mrpin_cg, rcu));
}

static struct mrpin_cg *mrpin_cg_find_rcu(u64 id)
{
	struct mrpin_cg *cg;

	hash_for_each_possible_rcu(mrpin_cgs_hash, cg, hnode, id)
		if (cg->id == id)
			return cg;
	return NULL;
}

/*
 * Free the parked records of cgroups that no longer exist; freeing one
 * drops its parent's reference, which may park (and free) the parent.
 * Called when a new record is made, so that cgroup churn (a cgroup per
 * job) cannot grow the table without bound.
 */
static void mrpin_cg_reap_locked(void)
{
	struct mrpin_cg *cg, *parent;
	struct hlist_node *tmp;
	struct cgroup *cgrp;
	bool again;
	int bkt;

	lockdep_assert_held(&mrpin_owners_lock);
	do {
		again = false;
		hash_for_each_safe(mrpin_cgs_hash, bkt, tmp, cg, hnode) {
			if (atomic_read(&cg->ref))
				continue;
			cgrp = cgroup_get_from_id(cg->id);
			if (!IS_ERR(cgrp)) {
				cgroup_put(cgrp);
				continue;
			}
			hash_del_rcu(&cg->hnode);
			parent = cg->parent;
			call_rcu(&cg->rcu, mrpin_cg_free_rcu);
			if (parent && atomic_dec_and_test(&parent->ref))
				again = true;
		}
	} while (again);
}

/**
 * mrpin_cg_get() - find or create the records of a cgroup and its ancestors
 * @cgrp: the cgroup (default hierarchy), held by the caller
 *
 * Context: process context, may sleep.
 * Return: the cgroup's record with a reference, or ERR_PTR(-ENOMEM).
 */
struct mrpin_cg *mrpin_cg_get(struct cgroup *cgrp)
{
	struct mrpin_cg *cg, *found = NULL, *leaf = NULL, *child = NULL;
	struct cgroup *c;

	rcu_read_lock();
	cg = mrpin_cg_find_rcu(cgroup_id(cgrp));
	if (cg && !atomic_inc_not_zero(&cg->ref))
		cg = NULL;
	rcu_read_unlock();
	if (cg)
		return cg;

	/*
	 * Create the missing records from the leaf up to the first existing
	 * one, and publish them only once the chain is complete, so that a
	 * lookup never finds a record without its ancestors.  Each new
	 * record's first reference belongs to its child (or, for the leaf, to
	 * the caller); the existing one gets a reference for its new child.
	 */
	mutex_lock(&mrpin_owners_lock);
	for (c = cgrp; c; c = cgroup_parent(c)) {
		found = mrpin_cg_find_rcu(cgroup_id(c));
		if (found) {
			/* Maybe parked (no pin, no child): it comes back. */
			atomic_inc(&found->ref);
			cg = found;
		} else {
			cg = kmem_cache_alloc(mrpin_cg_cache, GFP_KERNEL);
			if (!cg)
				goto nomem;
			memset(cg, 0, sizeof(*cg));
			atomic_set(&cg->ref, 1);
			cg->id = cgroup_id(c);
		}
		if (child)
			child->parent = cg;
		else
			leaf = cg;
		if (found)
			break;
		child = cg;
	}
	if (leaf != found)
		mrpin_cg_reap_locked();
	for (cg = leaf; cg && cg != found; cg = cg->parent)
		hash_add_rcu(mrpin_cgs_hash, &cg->hnode, cg->id);
	mutex_unlock(&mrpin_owners_lock);
	return leaf;

nomem:
	mutex_unlock(&mrpin_owners_lock);
	while (leaf) {
		child = leaf->parent;
		kmem_cache_free(mrpin_cg_cache, leaf);
		leaf = child;
	}
	return ERR_PTR(-ENOMEM);
}

/**
 * mrpin_cg_put() - drop a pin's reference to a cgroup record
 * @cg: the record
 *
 * A record left without pins and children is parked, not freed: the next
 * pin in that cgroup finds it again.  mrpin_cg_reap_locked() frees parked
 * records whose cgroup is gone.
 *
 * Context: any context.
 */
void mrpin_cg_put(struct mrpin_cg *cg)
{
	WARN_ON_ONCE(atomic_dec_return(&cg->ref) < 0);
}

/* --- charges --- */

static void mrpin_counter_sub(struct mrpin_counter *c, u64 bytes)
{
	atomic64_dec(&c->pins);
	atomic64_sub(bytes, &c->pinned_bytes);
}

static void mrpin_max64(atomic64_t *peak, s64 value)
{
	s64 old = atomic64_read(peak);

	while (old < value && !atomic64_try_cmpxchg(peak, &old, value))
		;
}

/*
 * Add @n to @counter unless that takes it over @max: a compare-and-exchange
 * loop, so a counter with a limit never shows more than the limit, not
 * even for an instant.  On failure, *usage is the value that did not fit.
 */
static bool mrpin_counter_try_add(atomic64_t *counter, u64 n, u64 max,
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

static void mrpin_counter_add(struct mrpin_counter *c, u64 bytes)
{
	atomic64_inc(&c->pins);
	atomic64_add(bytes, &c->pinned_bytes);
}

/*
 * Charge one level within its rule.  Return false when an enforced limit
 * would be crossed (described in *v): the level is then left uncharged.  A
 * limit crossed in warn mode is reported and counted here, and the level is
 * charged all the same.  Called under rcu_read_lock(), which keeps the
 * policy the limits come from.
 */
static bool mrpin_level_try_charge(struct mrpin_counter *c,
				   enum mrpin_scope scope, u64 id, u64 bytes,
				   struct mrpin_violation *v)
{
	const struct mrpin_limits *lim;
	const char *path = NULL;
	u64 usage;

	lim = mrpin_policy_limits(scope, id, &path);
	if (!lim) {
		mrpin_counter_add(c, bytes);
		return true;
	}

	if (bytes > lim->max[MRPIN_MAX_PIN_SIZE]) {
		v->key = MRPIN_MAX_PIN_SIZE;
		v->usage = bytes;
	} else if (!mrpin_counter_try_add(&c->pinned_bytes, bytes,
					  lim->max[MRPIN_MAX_PINNED], &usage)) {
		v->key = MRPIN_MAX_PINNED;
		v->usage = usage;
	} else if (!mrpin_counter_try_add(&c->pins, 1, lim->max[MRPIN_MAX_PINS],
					  &usage)) {
		atomic64_sub(bytes, &c->pinned_bytes);
		v->key = MRPIN_MAX_PINS;
		v->usage = usage;
	} else {
		return true;
	}
	v->scope = scope;
	v->id = id;
	strscpy(v->path, path ? path : "", sizeof(v->path));
	v->asked = bytes;
	v->limit = lim->max[v->key];
	v->warn = lim->warn;
	if (!v->warn)
		return false;
	mrpin_counter_add(c, bytes);
	atomic64_inc(&mrpin_stats.warnings_total);
	mrpin_report(v);
	return true;
}

/**
 * mrpin_try_charge() - charge a pin about to be made, within every limit
 * @pin: the prepared pin: owners (proc, user, cg) and device set
 * @bytes: the bytes the pin will hold (see mrpin_pin_bytes())
 * @cgrp: the cgroup the pin is made in, held by the caller
 *
 * Charges the machine, the process, the user and the cgroup chain, each
 * checked against its rule; the first enforced limit crossed rolls back
 * exactly what was charged and refuses the pin, which is reported.
 *
 * Context: process context.
 * Return: 0, or -ENOMEM when the pin is refused.
 */
int mrpin_try_charge(struct mrpin_pin *pin, u64 bytes, struct cgroup *cgrp)
{
	struct mrpin_proc *proc = pin->proc;
	struct mrpin_cg *cg, *failed_cg = NULL;
	struct mrpin_violation v;
	struct cgroup *old = NULL;
	int level = 0;

	/* level: how many levels are charged, for the rollback. */
	rcu_read_lock();
	if (!mrpin_level_try_charge(&mrpin_stats.usage, MRPIN_SCOPE_GLOBAL, 0,
				    bytes, &v))
		goto rollback;
	level++;
	if (!mrpin_level_try_charge(&proc->usage, MRPIN_SCOPE_PROCESS,
				    proc->tgid, bytes, &v))
		goto rollback;
	level++;
	if (!mrpin_level_try_charge(&pin->user->usage, MRPIN_SCOPE_UID,
				    from_kuid(&init_user_ns, pin->user->uid),
				    bytes, &v))
		goto rollback;
	level++;
	for (cg = pin->cg; cg; cg = cg->parent) {
		if (!mrpin_level_try_charge(&cg->usage, MRPIN_SCOPE_CGROUP,
					    cg->id, bytes, &v)) {
			failed_cg = cg;
			goto rollback;
		}
	}
	rcu_read_unlock();

	mrpin_counter_add(&pin->dev->usage, bytes);

	spin_lock(&proc->lock);
	proc->memlock = rlimit(RLIMIT_MEMLOCK);
	if (proc->cgrp != cgrp) {
		old = proc->cgrp;
		cgroup_get(cgrp);
		proc->cgrp = cgrp;
	}
	spin_unlock(&proc->lock);
	if (old)
		cgroup_put(old);
	return 0;

rollback:
	if (level >= 1)
		mrpin_counter_sub(&mrpin_stats.usage, bytes);
	if (level >= 2)
		mrpin_counter_sub(&proc->usage, bytes);
	if (level >= 3)
		mrpin_counter_sub(&pin->user->usage, bytes);
	for (cg = pin->cg; level >= 3 && cg != failed_cg; cg = cg->parent)
		mrpin_counter_sub(&cg->usage, bytes);
	rcu_read_unlock();

	spin_lock(&proc->lock);
	proc->denials++;
	spin_unlock(&proc->lock);
	atomic64_inc(&mrpin_stats.denials_total);
	mrpin_report(&v);
	return -ENOMEM;
}

/**
 * mrpin_commit() - count a charged pin that the kernel made
 * @pin: the pin
 * @bytes: its bytes
 *
 * Context: any context.
 */
void mrpin_commit(struct mrpin_pin *pin, u64 bytes)
{
	struct mrpin_proc *proc = pin->proc;
	u64 now = atomic64_read(&proc->usage.pinned_bytes);

	spin_lock(&proc->lock);
	proc->registrations++;
	proc->peak_bytes = max(proc->peak_bytes, now);
	spin_unlock(&proc->lock);

	atomic64_inc(&mrpin_stats.pins_total);
	mrpin_max64(&mrpin_stats.peak_pinned_bytes,
		    atomic64_read(&mrpin_stats.usage.pinned_bytes));
}

/**
 * mrpin_uncharge() - take a pin back from every owner
 * @pin: the pin
 * @bytes: what mrpin_try_charge() charged
 * @released: true for the release of a committed pin, false for the
 *	rollback of a pin that failed
 *
 * Context: any context.
 */
void mrpin_uncharge(struct mrpin_pin *pin, u64 bytes, bool released)
{
	struct mrpin_proc *proc = pin->proc;
	struct mrpin_cg *cg;

	mrpin_counter_sub(&mrpin_stats.usage, bytes);
	mrpin_counter_sub(&proc->usage, bytes);
	mrpin_counter_sub(&pin->user->usage, bytes);
	for (cg = pin->cg; cg; cg = cg->parent)
		mrpin_counter_sub(&cg->usage, bytes);
	mrpin_counter_sub(&pin->dev->usage, bytes);
	if (released) {
		spin_lock(&proc->lock);
		proc->releases++;
		spin_unlock(&proc->lock);
		atomic64_inc(&mrpin_stats.releases_total);
	}
}

static void mrpin_account_destroy_caches(void)
{
	/* The records freed through RCU must be back in their caches. */
	rcu_barrier();
	kmem_cache_destroy(mrpin_cg_cache);
	kmem_cache_destroy(mrpin_user_cache);
	kmem_cache_destroy(mrpin_proc_cache);
}

/**
 * mrpin_account_init() - set up the owner records' caches
 *
 * Context: process context.
 * Return: 0 or -ENOMEM.
 */
int mrpin_account_init(void)
{
	mrpin_proc_cache = mrpin_cache_create("mrpin_proc",
					      sizeof(struct mrpin_proc));
	mrpin_user_cache = mrpin_cache_create("mrpin_user",
					      sizeof(struct mrpin_user));
	mrpin_cg_cache = mrpin_cache_create("mrpin_cgroup",
					    sizeof(struct mrpin_cg));
	if (mrpin_proc_cache && mrpin_user_cache && mrpin_cg_cache)
		return 0;
	mrpin_account_destroy_caches();
	return -ENOMEM;
}

/**
 * mrpin_account_exit() - check that nothing is left charged
 *
 * Called after every pin record was dropped: any process record left is a
 * leak of references, reported with its owner.  User and cgroup records,
 * kept for reuse, are freed here, and so are the records' caches.
 *
 * Context: process context.
 */
void mrpin_account_exit(void)
{
	struct mrpin_proc *proc, *ptmp;
	struct mrpin_user *user;
	struct hlist_node *tmp;
	struct mrpin_cg *cg;
	int bkt;

	mutex_lock(&mrpin_owners_lock);
	list_for_each_entry_safe(proc, ptmp, &mrpin_procs, node) {
		if (atomic_read(&proc->ref))
			pr_err("mrpin: record of pid %d (%s) left with %lld pins\n",
			       proc->tgid, proc->comm,
			       atomic64_read(&proc->usage.pins));
		else
			mrpin_proc_del_locked(proc);
	}
	WARN_ON(!list_empty(&mrpin_procs));
	hash_for_each_safe(mrpin_users_hash, bkt, tmp, user, hnode) {
		WARN_ON(atomic64_read(&user->usage.pins));
		hash_del_rcu(&user->hnode);
		call_rcu(&user->rcu, mrpin_user_free_rcu);
	}
	/* Children first: a record holds its parent. */
	while (!hash_empty(mrpin_cgs_hash)) {
		hash_for_each_safe(mrpin_cgs_hash, bkt, tmp, cg, hnode) {
			if (atomic_read(&cg->ref))
				continue;
			hash_del_rcu(&cg->hnode);
			if (cg->parent)
				atomic_dec(&cg->parent->ref);
			call_rcu(&cg->rcu, mrpin_cg_free_rcu);
		}
	}
	mutex_unlock(&mrpin_owners_lock);
	WARN_ON(atomic64_read(&mrpin_stats.usage.pins) ||
		atomic64_read(&mrpin_stats.usage.pinned_bytes));
	mrpin_account_destroy_caches();
}
