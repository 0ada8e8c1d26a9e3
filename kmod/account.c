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
 * "count_registration" counts a charged pin the kernel made; "uncharge"
 * takes the pin back, as a release or as the rollback of a pin that was
 * refused or failed; "deny" counts and reports a refusal.  The charge API
 * takes a struct mrpin_charge (owners, device) and the bytes, never the pin.
 *
 * Process records are keyed by mm, not by pid: ib_umem_get() charges
 * current->mm and ib_umem_release() uncharges umem->owning_mm, possibly from
 * another task (at exit, current->mm is already gone).  The record holds the
 * mm with mmgrab() so that VmPin (mm->pinned_vm) can be read while it lives.
 * Cgroup records are keyed by cgroup id and hold their parent's record, so a
 * pin stays charged to the cgroup it was made in, even after its process
 * moved or the cgroup was removed.  A record keeps the cgroup's path from
 * the root of the hierarchy, taken when it is made: cgroup rules bind paths
 * (policy.c), so that a cgroup removed and made again at the same path (a
 * restarted service or container) is bound as the first one was.  A cgroup
 * record keeps its subtree's peak; a parked one that a cgroup rule names
 * is not reaped while the rule stands, so that a job's peak outlives the
 * job and its cgroup until the job's rule is deleted, or until a newer
 * record has the same path: a path keeps one record, its newest.
 *
 * Every record is charged to the memory cgroup of the task whose pin made
 * it (__GFP_ACCOUNT), as the pins' own records are (pin.c, distinct.c):
 * what a user makes mrpin allocate counts in that user's memory.max.
 *
 * Locking (mrpin.h, "Notes on locking"): mrpin_owners_lock (mutex) for
 * the owner tables and lists, taken to create a record, to revive a
 * parked one and to free one; dropping a reference is an atomic decrement
 * that at zero parks the record and queues the reaper, never frees it.
 * proc->lock (spinlock) for a process's bookkeeping.  Counters are
 * atomics.  Lookups read the tables under RCU; records are freed through
 * RCU.
 *
 * Storage: each kind of record has its own slab cache (mrpin_proc,
 * mrpin_user, mrpin_cgroup), so that its objects show in /proc/slabinfo and
 * fault injection can aim at mrpin alone (see mrpin_cache_create()).
 */
#include <linux/cgroup.h>
#include <linux/delay.h>
#include <linux/jhash.h>
#include <linux/rhashtable.h>
#include <linux/sched/clock.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "counter.h"
#include "mrpin.h"

/*
 * The owner tables, resizable hash tables (rhashtable: a lookup stays O(1)
 * with 65,536 users or 50,000 cgroups), each with a list of its records for
 * the views and the reaper: processes by mm, users by uid, cgroups by id,
 * and cgroups by path (the newest record of each path only).  The hash
 * seeds are random: whoever chooses uids or cgroup paths cannot aim at one
 * bucket.
 */
static const struct rhashtable_params mrpin_procs_params = {
	.key_len = sizeof(struct mm_struct *),
	.key_offset = offsetof(struct mrpin_proc, mm),
	.head_offset = offsetof(struct mrpin_proc, hnode),
	.automatic_shrinking = true,
};

static const struct rhashtable_params mrpin_users_params = {
	.key_len = sizeof(kuid_t),
	.key_offset = offsetof(struct mrpin_user, uid),
	.head_offset = offsetof(struct mrpin_user, hnode),
	.automatic_shrinking = true,
};

static const struct rhashtable_params mrpin_cgs_params = {
	.key_len = sizeof(u64),
	.key_offset = offsetof(struct mrpin_cg, id),
	.head_offset = offsetof(struct mrpin_cg, hnode),
	.automatic_shrinking = true,
};

/* By path: the key is a pointer to the path's first byte. */
static u32 mrpin_cg_path_hashfn(const void *key, u32 len, u32 seed)
{
	const char *path = *(const char *const *)key;

	return jhash(path, strlen(path), seed);
}

static u32 mrpin_cg_path_obj_hashfn(const void *obj, u32 len, u32 seed)
{
	return mrpin_cg_path_hashfn(&((const struct mrpin_cg *)obj)->path, len,
				    seed);
}

static int mrpin_cg_path_cmpfn(struct rhashtable_compare_arg *arg,
			       const void *obj)
{
	return strcmp(((const struct mrpin_cg *)obj)->path,
		      *(const char *const *)arg->key);
}

static const struct rhashtable_params mrpin_cgs_path_params = {
	.key_len = sizeof(const char *),
	.key_offset = offsetof(struct mrpin_cg, path),
	.head_offset = offsetof(struct mrpin_cg, pnode),
	.hashfn = mrpin_cg_path_hashfn,
	.obj_hashfn = mrpin_cg_path_obj_hashfn,
	.obj_cmpfn = mrpin_cg_path_cmpfn,
	.automatic_shrinking = true,
};

static struct rhashtable mrpin_procs_table;
static struct rhashtable mrpin_users_table;
static struct rhashtable mrpin_cgs_table;
static struct rhashtable mrpin_cgs_path_table;
LIST_HEAD(mrpin_procs);
LIST_HEAD(mrpin_users);
LIST_HEAD(mrpin_cgs);
/* Protects the owner tables and lists; see above. */
DEFINE_MUTEX(mrpin_owners_lock);

static void mrpin_reap_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(mrpin_reap_work, mrpin_reap_fn);
/*
 * The reaper's own queue: the system ones change name and meaning across
 * kernels (7.x warns at the first work queued on system_wq or
 * system_unbound_wq), and its own is drained by its destruction at unload.
 */
static struct workqueue_struct *mrpin_reap_wq;

/*
 * Insert a new record into a table, under mrpin_owners_lock (so it is not
 * there yet).  -EBUSY (a table over full while it grows) passes once the
 * table's worker has run.
 */
static int mrpin_owner_insert(struct rhashtable *ht, struct rhash_head *head,
			      const struct rhashtable_params params)
{
	int ret, tries = 0;

	while ((ret = rhashtable_insert_fast(ht, head, params)) == -EBUSY &&
	       ++tries <= 1000)
		usleep_range(20, 100);
	return ret;
}

/*
 * Reaping: each new record looks at the next MRPIN_REAP_BATCH records of
 * its kind, round the list from a cursor, and frees those parked for good.
 * A new record costs O(1), and a full round of a list of N records takes
 * N / MRPIN_REAP_BATCH new records, during which it gains fewer than that:
 * records parked for good stay a fraction of the live ones.  And the last
 * put of a record queues mrpin_reap_work, which within a second (or
 * MRPIN_REAP_RECHECK, when a second look is already queued) frees the
 * parked records of exited processes and of users, and looks at
 * MRPIN_REAP_WORK_BATCH cgroup records: an exited process's mm and page
 * directory, and a user's record, do not wait for the next new record.  A
 * process that deregistered its last MR and lives on leaves a parked record
 * whose mm still has users: nothing of mrpin's runs when it exits, so the
 * worker looks again every MRPIN_REAP_RECHECK while such a record is
 * there.
 */
#define MRPIN_REAP_BATCH 4
#define MRPIN_REAP_WORK_BATCH 64
#define MRPIN_REAP_RECHECK (5 * HZ)
/* The next records to look at; under mrpin_owners_lock. */
static struct list_head *mrpin_procs_cursor = &mrpin_procs;
static struct list_head *mrpin_cgs_cursor = &mrpin_cgs;

static struct kmem_cache *mrpin_proc_cache;
static struct kmem_cache *mrpin_user_cache;
static struct kmem_cache *mrpin_cg_cache;

struct mrpin_stats mrpin_stats;

#define MRPIN_RATE_WINDOW_NS (10 * NSEC_PER_SEC)

/* --- processes --- */

/*
 * The find functions run under rcu_read_lock() (the fast path) or under
 * mrpin_owners_lock (the slow path, which adds): either keeps what they
 * return from being freed.
 */
static struct mrpin_proc *mrpin_proc_find_rcu(struct mm_struct *mm)
{
	return rhashtable_lookup_fast(&mrpin_procs_table, &mm,
				      mrpin_procs_params);
}

static struct mrpin_proc *mrpin_proc_alloc(struct mm_struct *mm)
{
	struct mrpin_proc *proc;

	proc = kmem_cache_alloc(mrpin_proc_cache, GFP_KERNEL_ACCOUNT);
	if (!proc)
		return NULL;
	memset(proc, 0, sizeof(*proc));
	atomic_set(&proc->ref, 1);
	mutex_init(&proc->union_lock);
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
	/* Every pin took its range out of the union (distinct.c). */
	WARN_ON_ONCE(!RB_EMPTY_ROOT(&proc->points));
	mmdrop(proc->mm);
	if (proc->cgrp)
		cgroup_put(proc->cgrp);
	call_rcu(&proc->rcu, mrpin_proc_free_rcu);
}

/* Unlink a record and free it after RCU readers are done. */
static void mrpin_proc_del_locked(struct mrpin_proc *proc)
{
	lockdep_assert_held(&mrpin_owners_lock);
	if (mrpin_procs_cursor == &proc->node)
		mrpin_procs_cursor = proc->node.next;
	rhashtable_remove_fast(&mrpin_procs_table, &proc->hnode,
			       mrpin_procs_params);
	list_del_rcu(&proc->node);
	mrpin_proc_free(proc);
}

/*
 * Free the parked records of address spaces that have exited, looking at
 * MRPIN_REAP_BATCH records from the cursor on.
 */
static void mrpin_proc_reap_locked(void)
{
	struct list_head *pos;
	struct mrpin_proc *proc;
	int i;

	lockdep_assert_held(&mrpin_owners_lock);
	for (i = 0; i < MRPIN_REAP_BATCH && !list_empty(&mrpin_procs); i++) {
		pos = mrpin_procs_cursor;
		if (pos == &mrpin_procs)
			pos = pos->next;
		mrpin_procs_cursor = pos->next;
		proc = list_entry(pos, struct mrpin_proc, node);
		if (!atomic_read(&proc->ref) &&
		    !atomic_read(&proc->mm->mm_users))
			mrpin_proc_del_locked(proc);
	}
}

/**
 * mrpin_proc_get_current() - the record of the current address space
 *
 * Finds or creates the record of current->mm and takes a reference.
 *
 * Context: process context, may sleep; current has an mm.
 * Return: the record, or ERR_PTR(-ENOMEM).
 */
struct mrpin_proc *mrpin_proc_get_current(void)
{
	struct mm_struct *mm = current->mm;
	struct mrpin_proc *proc, *new;

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
		if (!mrpin_owner_insert(&mrpin_procs_table, &new->hnode,
					mrpin_procs_params)) {
			list_add_tail_rcu(&new->node, &mrpin_procs);
			proc = new;
			new = NULL;
		}
	}
	mutex_unlock(&mrpin_owners_lock);
	if (new)
		mrpin_proc_free(new);
	return proc ?: ERR_PTR(-ENOMEM);
}

/* A record was parked: the reaper's worker frees it if it can. */
static void mrpin_reap_soon(void)
{
	queue_delayed_work(mrpin_reap_wq, &mrpin_reap_work, HZ);
}

/* Drop a reference to a record; true when it was the last (parked). */
static bool mrpin_ref_put(atomic_t *ref)
{
	int left = atomic_dec_return(ref);

	WARN_ON_ONCE(left < 0);
	return !left;
}

/**
 * mrpin_proc_put() - drop a reference to a process record
 * @proc: the record
 *
 * The last reference parks the record: it stays, out of sight, for the
 * next pin of the same address space; once the address space is gone
 * (the last put of an exiting process's pins comes after it, a process's
 * own deregistration before it), the reaper frees it.
 *
 * Context: any context.
 */
void mrpin_proc_put(struct mrpin_proc *proc)
{
	if (mrpin_ref_put(&proc->ref))
		mrpin_reap_soon();
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
	return rhashtable_lookup_fast(&mrpin_users_table, &uid,
				      mrpin_users_params);
}

static void mrpin_user_del_locked(struct mrpin_user *user)
{
	lockdep_assert_held(&mrpin_owners_lock);
	rhashtable_remove_fast(&mrpin_users_table, &user->hnode,
			       mrpin_users_params);
	list_del_rcu(&user->node);
	call_rcu(&user->rcu, mrpin_user_free_rcu);
}

/**
 * mrpin_user_get() - find or create the record of a user
 * @uid: the user
 *
 * As a process record: the last put parks it, a pin finds it again, and
 * the reaper frees it a second later if none did.
 *
 * Context: process context, may sleep.
 * Return: the record with a reference, or ERR_PTR(-ENOMEM).
 */
struct mrpin_user *mrpin_user_get(kuid_t uid)
{
	struct mrpin_user *user, *new;

	rcu_read_lock();
	user = mrpin_user_find_rcu(uid);
	if (user && !atomic_inc_not_zero(&user->ref))
		user = NULL;
	rcu_read_unlock();
	if (user)
		return user;

	new = kmem_cache_zalloc(mrpin_user_cache, GFP_KERNEL_ACCOUNT);
	if (!new)
		return ERR_PTR(-ENOMEM);
	atomic_set(&new->ref, 1);
	new->uid = uid;
	mutex_init(&new->peer_lock);

	mutex_lock(&mrpin_owners_lock);
	user = mrpin_user_find_rcu(uid);
	if (user) {
		/* Maybe parked: it comes back. */
		atomic_inc(&user->ref);
	} else if (!mrpin_owner_insert(&mrpin_users_table, &new->hnode,
				       mrpin_users_params)) {
		list_add_tail_rcu(&new->node, &mrpin_users);
		user = new;
		new = NULL;
	}
	mutex_unlock(&mrpin_owners_lock);
	if (new)
		kmem_cache_free(mrpin_user_cache, new);
	return user ?: ERR_PTR(-ENOMEM);
}

/**
 * mrpin_user_put() - drop a pin's reference to a user record
 * @user: the record
 *
 * Context: any context.
 */
void mrpin_user_put(struct mrpin_user *user)
{
	if (mrpin_ref_put(&user->ref))
		mrpin_reap_soon();
}

/* --- cgroups --- */

static void mrpin_cg_free(struct mrpin_cg *cg)
{
	kfree(cg->path);
	kmem_cache_free(mrpin_cg_cache, cg);
}

static void mrpin_cg_free_rcu(struct rcu_head *rcu)
{
	mrpin_cg_free(container_of(rcu, struct mrpin_cg, rcu));
}

static struct mrpin_cg *mrpin_cg_find_rcu(u64 id)
{
	return rhashtable_lookup_fast(&mrpin_cgs_table, &id, mrpin_cgs_params);
}

/* Unlink a parked record, drop its parent and free it after RCU readers. */
static void mrpin_cg_del_locked(struct mrpin_cg *cg)
{
	lockdep_assert_held(&mrpin_owners_lock);
	if (mrpin_cgs_cursor == &cg->node)
		mrpin_cgs_cursor = cg->node.next;
	rhashtable_remove_fast(&mrpin_cgs_table, &cg->hnode, mrpin_cgs_params);
	if (!cg->superseded)
		rhashtable_remove_fast(&mrpin_cgs_path_table, &cg->pnode,
				       mrpin_cgs_path_params);
	list_del_rcu(&cg->node);
	if (cg->parent)
		atomic_dec(&cg->parent->ref);
	call_rcu(&cg->rcu, mrpin_cg_free_rcu);
}

/*
 * Free the parked records of cgroups that no longer exist, looking at
 * MRPIN_REAP_BATCH records from the cursor on.  Called when a new record is
 * made, so that cgroup churn (a cgroup per job) cannot grow the table
 * without bound; freeing a record drops its parent's reference, which may
 * park the parent: a later round frees it.  A record that a cgroup rule
 * names stays, with its peak, until the rule is deleted or a newer record
 * has its path: a later round frees it then.
 */
static void mrpin_cg_reap_locked(void)
{
	struct list_head *pos;
	struct cgroup *cgrp;
	struct mrpin_cg *cg;
	int i;

	lockdep_assert_held(&mrpin_owners_lock);
	for (i = 0; i < MRPIN_REAP_BATCH && !list_empty(&mrpin_cgs); i++) {
		pos = mrpin_cgs_cursor;
		if (pos == &mrpin_cgs)
			pos = pos->next;
		mrpin_cgs_cursor = pos->next;
		cg = list_entry(pos, struct mrpin_cg, node);
		if (atomic_read(&cg->ref) ||
		    (!cg->superseded && mrpin_policy_names_cgroup(cg->path)))
			continue;
		cgrp = cgroup_get_from_id(cg->id);
		if (!IS_ERR(cgrp)) {
			cgroup_put(cgrp);
			continue;
		}
		mrpin_cg_del_locked(cg);
	}
}

/*
 * A new record of @c, its path taken into @buf (PATH_MAX bytes).  A path
 * too long for PATH_MAX is kept cut: no rule names one that long.
 */
static struct mrpin_cg *mrpin_cg_alloc(struct cgroup *c, char *buf)
{
	struct mrpin_cg *cg;

	cg = kmem_cache_zalloc(mrpin_cg_cache, GFP_KERNEL_ACCOUNT);
	if (!cg)
		return NULL;
	if (cgroup_path(c, buf, PATH_MAX) < 0)
		buf[0] = '\0';
	cg->path = kstrdup(buf, GFP_KERNEL_ACCOUNT);
	if (!cg->path) {
		kmem_cache_free(mrpin_cg_cache, cg);
		return NULL;
	}
	atomic_set(&cg->ref, 1);
	cg->id = cgroup_id(c);
	return cg;
}

/*
 * Put a new record in the tables; the record its path had (the cgroup
 * there before) is superseded and leaves the table by path.
 */
static int mrpin_cg_add_locked(struct mrpin_cg *cg)
{
	struct mrpin_cg *old;
	int ret;

	lockdep_assert_held(&mrpin_owners_lock);
	ret = mrpin_owner_insert(&mrpin_cgs_table, &cg->hnode,
				 mrpin_cgs_params);
	if (ret)
		return ret;
	old = rhashtable_lookup_fast(&mrpin_cgs_path_table, &cg->path,
				     mrpin_cgs_path_params);
	if (old) {
		rhashtable_remove_fast(&mrpin_cgs_path_table, &old->pnode,
				       mrpin_cgs_path_params);
		WRITE_ONCE(old->superseded, true);
	}
	ret = mrpin_owner_insert(&mrpin_cgs_path_table, &cg->pnode,
				 mrpin_cgs_path_params);
	if (ret) {
		/* Not by path: as a superseded record, no rule keeps it. */
		cg->superseded = true;
	}
	list_add_tail_rcu(&cg->node, &mrpin_cgs);
	return 0;
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
	struct mrpin_cg *cg, *tmp, *found = NULL, *leaf = NULL, *child = NULL;
	LIST_HEAD(fresh);
	struct cgroup *c;
	char *buf;

	rcu_read_lock();
	cg = mrpin_cg_find_rcu(cgroup_id(cgrp));
	if (cg && !atomic_inc_not_zero(&cg->ref))
		cg = NULL;
	rcu_read_unlock();
	if (cg)
		return cg;

	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);

	/*
	 * Create the missing records from the leaf up to the first existing
	 * one, then publish them from the top down, so that a lookup never
	 * finds a record without its ancestors.  Each new record's first
	 * reference belongs to its child (or, for the leaf, to the caller);
	 * the existing one gets a reference for its new child.
	 */
	mutex_lock(&mrpin_owners_lock);
	for (c = cgrp; c; c = cgroup_parent(c)) {
		found = mrpin_cg_find_rcu(cgroup_id(c));
		if (found) {
			/* Maybe parked (no pin, no child): it comes back. */
			atomic_inc(&found->ref);
			cg = found;
		} else {
			cg = mrpin_cg_alloc(c, buf);
			if (!cg)
				goto nomem;
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
		list_add(&cg->node, &fresh);
	list_for_each_entry_safe(cg, tmp, &fresh, node) {
		list_del(&cg->node);
		if (mrpin_cg_add_locked(cg))
			goto unpublished;
	}
	mutex_unlock(&mrpin_owners_lock);
	kfree(buf);
	return leaf;

unpublished:
	/*
	 * A table could not take @cg: it and the records below it go; its
	 * parent, in the tables, loses the reference @cg held.
	 */
	if (cg->parent && !atomic_dec_return(&cg->parent->ref))
		mrpin_reap_soon();
	mrpin_cg_free(cg);
	list_for_each_entry_safe(cg, tmp, &fresh, node)
		mrpin_cg_free(cg);
	mutex_unlock(&mrpin_owners_lock);
	kfree(buf);
	return ERR_PTR(-ENOMEM);

nomem:
	mutex_unlock(&mrpin_owners_lock);
	kfree(buf);
	while (leaf) {
		child = leaf->parent;
		mrpin_cg_free(leaf);
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
 * records whose cgroup is gone and that no cgroup rule names.
 *
 * Context: any context.
 */
void mrpin_cg_put(struct mrpin_cg *cg)
{
	if (mrpin_ref_put(&cg->ref))
		mrpin_reap_soon();
}

/*
 * The reaper's worker: frees the parked records of exited processes and
 * of users, and looks at MRPIN_REAP_WORK_BATCH cgroup records.  A worker
 * runs in the initial cgroup namespace, where cgroup_get_from_id() finds
 * every cgroup that exists.
 */
static void mrpin_reap_fn(struct work_struct *work)
{
	struct mrpin_proc *proc, *ptmp;
	struct mrpin_user *user, *utmp;
	bool living = false;
	int i;

	mutex_lock(&mrpin_owners_lock);
	list_for_each_entry_safe(proc, ptmp, &mrpin_procs, node) {
		if (atomic_read(&proc->ref))
			continue;
		if (atomic_read(&proc->mm->mm_users))
			living = true;
		else
			mrpin_proc_del_locked(proc);
	}
	list_for_each_entry_safe(user, utmp, &mrpin_users, node)
		if (!atomic_read(&user->ref))
			mrpin_user_del_locked(user);
	for (i = 0; i < MRPIN_REAP_WORK_BATCH / MRPIN_REAP_BATCH; i++)
		mrpin_cg_reap_locked();
	mutex_unlock(&mrpin_owners_lock);
	/*
	 * A parked record whose process lives on: look again later (at
	 * unload, cancel_delayed_work_sync() stops this requeue too).
	 */
	if (living)
		queue_delayed_work(mrpin_reap_wq, &mrpin_reap_work,
				   MRPIN_REAP_RECHECK);
}

/**
 * mrpin_owner_records() - how many records of a kind mrpin keeps
 * @scope: MRPIN_SCOPE_PROCESS, MRPIN_SCOPE_UID or MRPIN_SCOPE_CGROUP
 *
 * In use and parked alike: what mrpin holds in memory for its owners.
 *
 * Context: any context.
 * Return: the number of records in that kind's table.
 */
unsigned int mrpin_owner_records(enum mrpin_scope scope)
{
	switch (scope) {
	case MRPIN_SCOPE_PROCESS:
		return atomic_read(&mrpin_procs_table.nelems);
	case MRPIN_SCOPE_UID:
		return atomic_read(&mrpin_users_table.nelems);
	case MRPIN_SCOPE_CGROUP:
		return atomic_read(&mrpin_cgs_table.nelems);
	default:
		return 0;
	}
}

/* --- charges --- */

/*
 * Subtract @n from @counter, which stops at zero.  Return false when it
 * held less than @n: a bug, the caller warns.  One atomic operation when
 * it held enough, the only case that is not a bug; a counter that went
 * below zero is brought back to where zero was.
 */
static bool mrpin_counter_try_sub(atomic64_t *counter, u64 n)
{
	s64 left = atomic64_sub_return(n, counter);

	if (likely(left >= 0))
		return true;
	atomic64_sub(left, counter);
	return false;
}

/*
 * Take one pin of @bytes (@distinct of them new to its address space) off
 * @c.  Never below zero: an uncharge of what was not charged is a bug,
 * warned of once (as misc_cg_cancel_charge() does), and the counter stays
 * at zero rather than wrapping round to refuse every pin after it.
 */
static void mrpin_counter_sub_pins(struct mrpin_counter *c, u64 pins,
				   u64 bytes, u64 distinct)
{
	bool pins_ok = !pins || mrpin_counter_try_sub(&c->pins, pins);
	bool bytes_ok = mrpin_counter_try_sub(&c->pinned_bytes, bytes);
	/* The owners but the machine and the process have none: no atomic. */
	bool distinct_ok = !distinct ||
			   mrpin_counter_try_sub(&c->distinct_bytes, distinct);

	WARN_ONCE(!pins_ok || !bytes_ok || !distinct_ok,
		  "mrpin: uncharge of %llu bytes below zero\n", bytes);
}

static void mrpin_counter_sub(struct mrpin_counter *c, u64 bytes,
			      u64 distinct)
{
	mrpin_counter_sub_pins(c, 1, bytes, distinct);
}

static void mrpin_max64(atomic64_t *peak, s64 value)
{
	s64 old = atomic64_read(peak);

	while (old < value && !atomic64_try_cmpxchg(peak, &old, value))
		;
}

static void mrpin_counter_add(struct mrpin_counter *c, u64 bytes,
			      u64 distinct)
{
	atomic64_inc(&c->pins);
	atomic64_add(bytes, &c->pinned_bytes);
	if (distinct)
		atomic64_add(distinct, &c->distinct_bytes);
}

/*
 * Charge one level within its rule.  Return false when an enforced limit
 * would be crossed (described in *v): the level is then left uncharged.  A
 * limit crossed in warn mode is reported and counted here, and the level is
 * charged all the same.  max_pinned bounds the pinned bytes, or the
 * distinct bytes under count=distinct; the other is charged unchecked.  A
 * pin that adds nothing to what max_pinned counts (memory already pinned,
 * under count=distinct) never crosses it, even over a lowered limit.
 * @path is the cgroup's path (cgroup scope), else NULL.  Called under
 * rcu_read_lock(), which keeps the policy the limits come from.
 */
static bool mrpin_level_try_charge(struct mrpin_counter *c,
				   enum mrpin_scope scope, u64 id,
				   const char *path, u64 bytes, u64 distinct,
				   struct mrpin_violation *v)
{
	const struct mrpin_limits *lim;
	atomic64_t *counted, *other;
	u64 asked, rest, usage;

	lim = mrpin_policy_limits(scope, id, path);
	if (!lim) {
		mrpin_counter_add(c, bytes, distinct);
		return true;
	}
	counted = lim->distinct ? &c->distinct_bytes : &c->pinned_bytes;
	other = lim->distinct ? &c->pinned_bytes : &c->distinct_bytes;
	asked = lim->distinct ? distinct : bytes;
	rest = lim->distinct ? bytes : distinct;

	v->asked = bytes;
	if (bytes > lim->max[MRPIN_MAX_PIN_SIZE]) {
		v->key = MRPIN_MAX_PIN_SIZE;
		v->usage = bytes;
	} else if (asked &&
		   !mrpin_counter_try_add(counted, asked,
					  lim->max[MRPIN_MAX_PINNED], &usage)) {
		v->key = MRPIN_MAX_PINNED;
		v->asked = asked;
		v->usage = usage;
	} else if (!mrpin_counter_try_add(&c->pins, 1, lim->max[MRPIN_MAX_PINS],
					  &usage)) {
		if (asked)
			atomic64_sub(asked, counted);
		v->key = MRPIN_MAX_PINS;
		v->usage = usage;
	} else {
		if (rest)
			atomic64_add(rest, other);
		return true;
	}
	v->scope = scope;
	v->id = id;
	strscpy(v->path, path ? path : "", sizeof(v->path));
	v->limit = lim->max[v->key];
	v->warn = lim->warn;
	if (!v->warn)
		return false;
	mrpin_counter_add(c, bytes, distinct);
	atomic64_inc(&mrpin_stats.warnings_total);
	mrpin_report(v);
	return true;
}

/**
 * mrpin_deny() - count a refused pin and report it
 * @proc: the process whose pin is refused
 * @v: the limit or rule that refused it
 *
 * The one place a refusal is counted, whichever rule refused (a limit
 * here, the stack rule in diag.c).
 *
 * Context: process context (the registering task); does not sleep.
 */
void mrpin_deny(struct mrpin_proc *proc, const struct mrpin_violation *v)
{
	spin_lock(&proc->lock);
	proc->denials++;
	spin_unlock(&proc->lock);
	atomic64_inc(&mrpin_stats.denials_total);
	mrpin_report(v);
}

/**
 * mrpin_fail() - count a pin the kernel refused and report it
 * @proc: the process whose pin failed, when mrpin tracks it; or NULL
 * @v: why (v->key MRPIN_EVENT_FAIL plus the cause)
 *
 * Context: process context (the registering task); does not sleep.
 */
void mrpin_fail(struct mrpin_proc *proc, const struct mrpin_violation *v)
{
	if (proc) {
		spin_lock(&proc->lock);
		proc->failures++;
		spin_unlock(&proc->lock);
	}
	atomic64_inc(&mrpin_stats.failures_total[v->key - MRPIN_EVENT_FAIL]);
	mrpin_report(v);
}

/**
 * mrpin_try_charge() - charge a pin about to be made, within every limit
 * @c: the pin's owners (proc, user, cg) and device
 * @bytes: the bytes it pins
 * @distinct: the bytes it adds to its address space's union (distinct.c)
 * @cgrp: the cgroup the pin is made in, held by the caller
 *
 * Charges the machine, the process, the user and the cgroup chain, each
 * checked against its rule; the first enforced limit crossed rolls back
 * exactly what was charged and refuses the pin, which is reported.  The
 * distinct bytes go to the machine and the process only: the union is per
 * address space, and a process's pins may be charged to several users and
 * cgroups.
 *
 * Context: process context.
 * Return: 0, or -ENOMEM when the pin is refused.
 */
int mrpin_try_charge(const struct mrpin_charge *c, u64 bytes, u64 distinct,
		     struct cgroup *cgrp)
{
	struct mrpin_proc *proc = c->proc;
	struct mrpin_cg *cg, *failed_cg = NULL;
	struct mrpin_violation v;
	struct cgroup *old = NULL;
	int level = 0;

	/* level: how many levels are charged, for the rollback. */
	rcu_read_lock();
	if (!mrpin_level_try_charge(&mrpin_stats.usage, MRPIN_SCOPE_GLOBAL, 0,
				    NULL, bytes, distinct, &v))
		goto rollback;
	level++;
	if (!mrpin_level_try_charge(&proc->usage, MRPIN_SCOPE_PROCESS,
				    proc->tgid, NULL, bytes, distinct, &v))
		goto rollback;
	level++;
	if (!mrpin_level_try_charge(&c->user->usage, MRPIN_SCOPE_UID,
				    from_kuid(&init_user_ns, c->user->uid),
				    NULL, bytes, 0, &v))
		goto rollback;
	level++;
	for (cg = c->cg; cg; cg = cg->parent) {
		if (!mrpin_level_try_charge(&cg->usage, MRPIN_SCOPE_CGROUP,
					    cg->id, cg->path, bytes, 0, &v)) {
			failed_cg = cg;
			goto rollback;
		}
	}
	rcu_read_unlock();

	mrpin_counter_add(&c->dev->usage, bytes, 0);

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
		mrpin_counter_sub(&mrpin_stats.usage, bytes, distinct);
	if (level >= 2)
		mrpin_counter_sub(&proc->usage, bytes, distinct);
	if (level >= 3)
		mrpin_counter_sub(&c->user->usage, bytes, 0);
	for (cg = c->cg; level >= 3 && cg != failed_cg; cg = cg->parent)
		mrpin_counter_sub(&cg->usage, bytes, 0);
	rcu_read_unlock();

	mrpin_deny(proc, &v);
	return -ENOMEM;
}

/**
 * mrpin_count_registration() - count a charged pin that the kernel made
 * @c: its charge
 *
 * Raises the peaks its owners keep (the process's, the machine's, its
 * cgroup's and every ancestor's) to what they hold now: a pin refused or
 * failed after its charge never counts in a peak.  The machine's and each
 * cgroup's cost a read and, only when it rises, a compare-and-exchange.
 *
 * Context: any context.
 */
void mrpin_count_registration(const struct mrpin_charge *c)
{
	struct mrpin_proc *proc = c->proc;
	struct mrpin_cg *cg;
	u64 now = atomic64_read(&proc->usage.pinned_bytes);

	spin_lock(&proc->lock);
	proc->registrations++;
	proc->peak_bytes = max(proc->peak_bytes, now);
	spin_unlock(&proc->lock);

	atomic64_inc(&mrpin_stats.pins_total);
	mrpin_max64(&mrpin_stats.peak_pinned_bytes,
		    atomic64_read(&mrpin_stats.usage.pinned_bytes));
	for (cg = c->cg; cg; cg = cg->parent)
		mrpin_max64(&cg->peak_pinned_bytes,
			    atomic64_read(&cg->usage.pinned_bytes));
}

/**
 * mrpin_uncharge() - take a pin back from every owner
 * @c: the owners and device mrpin_try_charge() charged
 * @bytes: the bytes it charged
 * @distinct: the bytes its address space's union lost with it
 * @released: true for the release of a registered pin, false for the
 *	rollback of a pin that failed
 *
 * Context: any context.
 */
void mrpin_uncharge(const struct mrpin_charge *c, u64 bytes, u64 distinct,
		    bool released)
{
	struct mrpin_proc *proc = c->proc;
	struct mrpin_cg *cg;

	mrpin_counter_sub(&mrpin_stats.usage, bytes, distinct);
	mrpin_counter_sub(&proc->usage, bytes, distinct);
	mrpin_counter_sub(&c->user->usage, bytes, 0);
	for (cg = c->cg; cg; cg = cg->parent)
		mrpin_counter_sub(&cg->usage, bytes, 0);
	mrpin_counter_sub(&c->dev->usage, bytes, 0);
	if (released)
		atomic64_inc(&mrpin_stats.releases_total);
}

/**
 * mrpin_refund_host() - take back the host bytes of a pin that holds none
 * @c: the owners and device mrpin_try_charge() charged
 * @bytes: the bytes it charged
 * @distinct: the bytes its address space's union lost with it
 *
 * A pin charged as host memory that a peer memory client served instead
 * (it holds no host page) keeps its place in the pin counts, which bound
 * the MRs, and gives its bytes back.
 *
 * Context: any context.
 */
void mrpin_refund_host(const struct mrpin_charge *c, u64 bytes, u64 distinct)
{
	struct mrpin_cg *cg;

	mrpin_counter_sub_pins(&mrpin_stats.usage, 0, bytes, distinct);
	mrpin_counter_sub_pins(&c->proc->usage, 0, bytes, distinct);
	mrpin_counter_sub_pins(&c->user->usage, 0, bytes, 0);
	for (cg = c->cg; cg; cg = cg->parent)
		mrpin_counter_sub_pins(&cg->usage, 0, bytes, 0);
	mrpin_counter_sub_pins(&c->dev->usage, 0, bytes, 0);
}

/**
 * mrpin_account_peer() - count a peer registration's bytes for its owners
 * @c: its owners and device
 * @bytes: its bytes; negative when it goes
 *
 * Peer bytes are shown, never limited: they are a device's memory (a
 * GPU's), which no host-memory rule is about.
 *
 * Context: any context.
 */
void mrpin_account_peer(const struct mrpin_charge *c, s64 bytes)
{
	struct mrpin_cg *cg;

	atomic64_add(bytes, &mrpin_stats.usage.peer_bytes);
	atomic64_add(bytes, &c->proc->usage.peer_bytes);
	atomic64_add(bytes, &c->user->usage.peer_bytes);
	for (cg = c->cg; cg; cg = cg->parent)
		atomic64_add(bytes, &cg->usage.peer_bytes);
	atomic64_add(bytes, &c->dev->usage.peer_bytes);
}

/**
 * mrpin_account_pinned_facts() - count a new pin's facts for its owners
 * @proc: its process
 * @bytes_2m: its bytes in 2 MiB pages
 * @bytes_1g: its bytes in 1 GiB pages
 * @flags: MRPIN_PIN_* facts
 * @now: local_clock() when the pin was made
 *
 * The process's backing, stack and registration rate (over windows of
 * MRPIN_RATE_WINDOW_NS), and the machine's.
 *
 * Context: any context.
 */
void mrpin_account_pinned_facts(struct mrpin_proc *proc, u64 bytes_2m,
				u64 bytes_1g, u8 flags, u64 now)
{
	spin_lock(&proc->lock);
	proc->bytes_2m += bytes_2m;
	proc->bytes_1g += bytes_1g;
	if (flags & MRPIN_PIN_STACK)
		proc->stack_pins++;
	if (!proc->rate_start_ns)
		proc->rate_start_ns = now;
	if (now - proc->rate_start_ns >= MRPIN_RATE_WINDOW_NS) {
		proc->rate = div64_u64(proc->rate_count * NSEC_PER_SEC,
				       now - proc->rate_start_ns);
		proc->rate_full = true;
		proc->rate_start_ns = now;
		proc->rate_count = 0;
	}
	proc->rate_count++;
	spin_unlock(&proc->lock);

	atomic64_add(bytes_2m, &mrpin_stats.bytes_2m);
	atomic64_add(bytes_1g, &mrpin_stats.bytes_1g);
	if (flags & MRPIN_PIN_STACK)
		atomic64_inc(&mrpin_stats.stack_pins_total);
	if (flags & MRPIN_PIN_OVERSIZED)
		atomic64_inc(&mrpin_stats.oversized_pins_total);
}

/**
 * mrpin_account_released_facts() - take a released pin's facts back
 * @proc: its process
 * @bytes_2m: its bytes in 2 MiB pages
 * @bytes_1g: its bytes in 1 GiB pages
 * @life_bucket: its lifetime's bucket in proc->life_hist
 * @cleanup: the kernel's cleanup released it, not a deregistration
 *
 * Context: any context.
 */
void mrpin_account_released_facts(struct mrpin_proc *proc, u64 bytes_2m,
				  u64 bytes_1g, unsigned int life_bucket,
				  bool cleanup)
{
	spin_lock(&proc->lock);
	proc->life_hist[life_bucket]++;
	proc->bytes_2m -= bytes_2m;
	proc->bytes_1g -= bytes_1g;
	if (cleanup)
		proc->cleanup_releases++;
	else
		proc->deregistrations++;
	spin_unlock(&proc->lock);

	atomic64_sub(bytes_2m, &mrpin_stats.bytes_2m);
	atomic64_sub(bytes_1g, &mrpin_stats.bytes_1g);
	if (cleanup)
		atomic64_inc(&mrpin_stats.cleanup_releases_total);
}

static void mrpin_account_destroy_caches(void)
{
	/* The records freed through RCU must be back in their caches. */
	rcu_barrier();
	kmem_cache_destroy(mrpin_cg_cache);
	kmem_cache_destroy(mrpin_user_cache);
	kmem_cache_destroy(mrpin_proc_cache);
}

/* Empty tables: rhashtable_destroy() frees only the buckets. */
static void mrpin_account_destroy_tables(void)
{
	rhashtable_destroy(&mrpin_cgs_path_table);
	rhashtable_destroy(&mrpin_cgs_table);
	rhashtable_destroy(&mrpin_users_table);
	rhashtable_destroy(&mrpin_procs_table);
}

/**
 * mrpin_account_init() - set up the owner records' caches and tables
 *
 * Context: process context.
 * Return: 0 or -ENOMEM.
 */
int mrpin_account_init(void)
{
	int ret;

	mrpin_reap_wq = alloc_workqueue("mrpin_reap", WQ_UNBOUND, 1);
	if (!mrpin_reap_wq)
		return -ENOMEM;
	ret = rhashtable_init(&mrpin_procs_table, &mrpin_procs_params);
	if (ret)
		goto err_wq;
	ret = rhashtable_init(&mrpin_users_table, &mrpin_users_params);
	if (ret)
		goto err_procs;
	ret = rhashtable_init(&mrpin_cgs_table, &mrpin_cgs_params);
	if (ret)
		goto err_users;
	ret = rhashtable_init(&mrpin_cgs_path_table, &mrpin_cgs_path_params);
	if (ret)
		goto err_cgs;
	mrpin_proc_cache = mrpin_cache_create("mrpin_proc",
					      sizeof(struct mrpin_proc));
	mrpin_user_cache = mrpin_cache_create("mrpin_user",
					      sizeof(struct mrpin_user));
	mrpin_cg_cache = mrpin_cache_create("mrpin_cgroup",
					    sizeof(struct mrpin_cg));
	if (mrpin_proc_cache && mrpin_user_cache && mrpin_cg_cache)
		return 0;
	mrpin_account_destroy_caches();
	mrpin_account_destroy_tables();
	destroy_workqueue(mrpin_reap_wq);
	return -ENOMEM;

err_cgs:
	rhashtable_destroy(&mrpin_cgs_table);
err_users:
	rhashtable_destroy(&mrpin_users_table);
err_procs:
	rhashtable_destroy(&mrpin_procs_table);
err_wq:
	destroy_workqueue(mrpin_reap_wq);
	return ret;
}

/* Report a cgroup record left with references at unload, with its path. */
static void mrpin_cg_report_left(const struct mrpin_cg *cg)
{
	char *path = kmalloc(4 * PATH_MAX, GFP_KERNEL);

	pr_err("mrpin: record of cgroup %llu (%s) left with %d references, %lld pins\n",
	       cg->id, path ? mrpin_escape(path, cg->path, 4 * PATH_MAX) : "?",
	       atomic_read(&cg->ref), atomic64_read(&cg->usage.pins));
	kfree(path);
}

/*
 * Free the cgroup records, children first (a record holds its parent):
 * round after round while one frees something, so that a record still
 * referenced (a leak) cannot keep unload going round for ever.  What is
 * left then is reported, record by record, and freed all the same: no pin
 * is left to use it.  Return whether anything was left.
 */
static bool mrpin_cgs_free_locked(void)
{
	struct mrpin_cg *cg, *tmp;
	bool progress, left = false;

	lockdep_assert_held(&mrpin_owners_lock);
	do {
		progress = false;
		list_for_each_entry_safe(cg, tmp, &mrpin_cgs, node) {
			if (atomic_read(&cg->ref))
				continue;
			mrpin_cg_del_locked(cg);
			progress = true;
		}
	} while (progress);
	list_for_each_entry(cg, &mrpin_cgs, node)
		mrpin_cg_report_left(cg);
	list_for_each_entry_safe(cg, tmp, &mrpin_cgs, node) {
		left = true;
		cg->parent = NULL;
		mrpin_cg_del_locked(cg);
	}
	return left;
}

/**
 * mrpin_account_exit() - check that nothing is left charged, free the records
 *
 * Called after every pin record was dropped: a process or cgroup record
 * still referenced is a leak of references, reported with its owner, then
 * freed with the others (nothing can use it any more); one warning says
 * that something was left.  User and cgroup records, kept for reuse, are
 * freed here, and so are the records' caches.  Never waits for a reference
 * to go.
 *
 * Context: process context.
 */
void mrpin_account_exit(void)
{
	char comm[4 * TASK_COMM_LEN + 1];
	struct mrpin_proc *proc, *ptmp;
	struct mrpin_user *user, *utmp;
	bool left = false;

	/*
	 * Every pin is gone: no put queues the worker again, and the worker
	 * does not requeue itself once cancelled.
	 */
	cancel_delayed_work_sync(&mrpin_reap_work);
	destroy_workqueue(mrpin_reap_wq);
	mutex_lock(&mrpin_owners_lock);
	list_for_each_entry_safe(proc, ptmp, &mrpin_procs, node) {
		if (atomic_read(&proc->ref)) {
			pr_err("mrpin: record of pid %d (%s) left with %d references, %lld pins\n",
			       proc->tgid,
			       mrpin_escape(comm, proc->comm, sizeof(comm)),
			       atomic_read(&proc->ref),
			       atomic64_read(&proc->usage.pins));
			left = true;
		}
		mrpin_proc_del_locked(proc);
	}
	list_for_each_entry_safe(user, utmp, &mrpin_users, node) {
		if (atomic_read(&user->ref)) {
			pr_err("mrpin: record of uid %u left with %d references, %lld pins\n",
			       from_kuid_munged(&init_user_ns, user->uid),
			       atomic_read(&user->ref),
			       atomic64_read(&user->usage.pins));
			left = true;
		}
		mrpin_user_del_locked(user);
	}
	left |= mrpin_cgs_free_locked();
	mutex_unlock(&mrpin_owners_lock);
	WARN_ONCE(left || atomic64_read(&mrpin_stats.usage.pins) ||
		  atomic64_read(&mrpin_stats.usage.pinned_bytes),
		  "mrpin: records left at unload\n");
	mrpin_account_destroy_caches();
	mrpin_account_destroy_tables();
}
