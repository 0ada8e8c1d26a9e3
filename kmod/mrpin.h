/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mrpin: the internal API between the files of the module.
 *
 * The pin path, top-down:
 *
 *   the VA pin --ftrace--> hook.c --> pin.c: mrpin_pin_prepare()
 *   (ib_umem_get(),                         (owner, device, charge)
 *    __ib_umem_get_va(),              the real pin
 *    ib_umem_odp_get())
 *                                     pin.c: mrpin_pin_record() or
 *                                            mrpin_pin_failed() (why:
 *                                            failure.c), which aborts
 *   ib_umem_release(), --ftrace--> hook.c --> pin.c: mrpin_pin_unpublish()
 *   ib_umem_odp_release()
 *                                      the real release
 *                                      pin.c: mrpin_pin_released()
 *
 * account.c owns the process records and the global counters, device.c the
 * per-device records, debugfs.c only reads them.  Every record is freed
 * through RCU so that the debugfs views can walk them without blocking the
 * pin path.
 *
 * Notes on locking.  Every lock of the module, what it protects, and the
 * order they nest in:
 *
 *   mrpin_owners_lock (mutex, account.c)
 *	the owner tables (processes, users, cgroups by id and by path),
 *	their lists (mrpin_procs, mrpin_users, mrpin_cgs), the cgroup
 *	records' @superseded and the reaping cursors.  Taken to create a record, to take a
 *	reference on a parked one (its count going from zero: only under
 *	this lock), and to free one (reaping, unload).
 *	Dropping a reference (mrpin_proc_put(), mrpin_cg_put()) is a bare
 *	atomic decrement: the last one parks the record, and only the
 *	reaper, under the lock, frees a parked record.  Lookups under RCU
 *	take a reference with atomic_inc_not_zero(), never from zero, so
 *	they cannot revive a record the reaper is freeing.  The views walk
 *	under RCU and never take it; the `cgroups` view prints a parked
 *	record that a cgroup rule keeps without a reference, inside the RCU
 *	read section that found it, which keeps it from being freed.
 *   proc->union_lock (mutex)
 *	the union of a process's pinned ranges (distinct.c), from measuring
 *	a pin to charging and adding it, and from removing one to uncharging
 *	it.  Outer to proc->lock and mrpin_events_lock (a charge counts and
 *	reports); taken without any other mutex.
 *   proc->lock (spinlock)
 *	a process record's bookkeeping (struct mrpin_proc, the fields after
 *	it).  A leaf.
 *   mrpin_devs_lock (mutex, device.c)
 *	the mrpin_devs list; the `devices` view holds it while it prints.
 *	Outer to dev->name_lock.
 *   dev->name_lock (spinlock)
 *	a device record's name, which a rename changes.  A leaf.
 *   mrpin_policy_lock (mutex, policy.c)
 *	serialises the writers of the policy snapshot (and the reader of the
 *	whole policy); the pin path reads the snapshot under RCU.
 *   reader->lock (mutex, events.c, one per open `events` file)
 *	the reader's state; dropped while a read waits.  Outer to
 *	mrpin_events_lock.
 *   mrpin_events_lock (spinlock, events.c)
 *	the events ring and its next sequence number.  A leaf, taken under
 *	rcu_read_lock() by the pin path (a report).
 *   mrpin_leaks_lock (spinlock, leaks.c)
 *	the `leaks` table.  A leaf.
 *
 * The mutexes are never held together; each spinlock is a leaf but for
 * the two outer/inner pairs named.  The pin path takes no mutex but
 * mrpin_owners_lock, and that only for a new or parked record, and its
 * process's union_lock; the release path takes only the latter.  The pin tables
 * (rhashtable, xarray) have their own internal locks; counters are
 * atomics; hook.c's percpu_refs are no locks but gate unload.
 */
#ifndef _MRPIN_H
#define _MRPIN_H

#include <linux/atomic.h>
#include <linux/cred.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/rhashtable-types.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "mrpin_abi.h"
#include "version.h"

struct cgroup;
struct dentry;
struct kmem_cache;
struct ib_umem;
struct mm_struct;
struct seq_file;

/**
 * struct mrpin_counter - what one owner holds: the unit every limit checks
 * @pins:		live pins
 * @pinned_bytes:	bytes pinned by the live pins, each in full (as
 *			mm->pinned_vm counts them)
 * @distinct_bytes:	the union of the live pins' pages in each address
 *			space, summed (distinct.c); kept for the machine and
 *			the process only, 0 for the other owners
 * @peer_bytes:		bytes of the live peer registrations (GPU memory a
 *			peer client serves): in @pins, not in the host bytes,
 *			bound by no byte limit
 */
struct mrpin_counter {
	atomic64_t pins;
	atomic64_t pinned_bytes;
	atomic64_t distinct_bytes;
	atomic64_t peer_bytes;
};

/**
 * struct mrpin_dev - one RDMA device as mrpin sees it
 * @node:	on mrpin_devs while the device is registered
 * @ref:	one for list membership, one per live pin on the device
 * @name_lock:	protects @name (a device can be renamed)
 * @name:	the device's name
 * @node_guid:	the device's node GUID (host order)
 * @max_mr:	attrs.max_mr: the size of the device's MR table
 * @usage:	live pins and bytes on this device
 * @mr_table_warned: the table crossed the mr_table_warn mark and has not
 *		gone back below it (one event per crossing)
 * @rcu:	frees the record after the last RCU reader
 *
 * The record outlives the ib_device when pins remain at removal: their
 * release (often after the device is gone from ib_core's view) still needs
 * somewhere to uncharge.
 */
struct mrpin_dev {
	struct list_head node;
	struct kref ref;
	spinlock_t name_lock;	/* protects name */
	char name[IB_DEVICE_NAME_MAX];
	u64 node_guid;
	int max_mr;
	struct mrpin_counter usage;
	atomic_t mr_table_warned;
	struct rcu_head rcu;
};

/* The device records; mrpin_devs_lock: see "Notes on locking" above. */
extern struct list_head mrpin_devs;
extern struct mutex mrpin_devs_lock;

int mrpin_dev_add(struct ib_device *ibdev);
void mrpin_dev_remove(struct ib_device *ibdev);
void mrpin_dev_rename(struct ib_device *ibdev);
int mrpin_device_init(void);
void mrpin_device_exit(void);
struct mrpin_dev *mrpin_dev_get(struct ib_device *ibdev);
void mrpin_dev_put(struct mrpin_dev *dev);
void mrpin_dev_name(struct mrpin_dev *dev, char *buf, size_t len);

#define MRPIN_LIFE_BUCKETS 24

/**
 * struct mrpin_proc - the pins of one address space (one process)
 * @hnode:	in the owner table, keyed by @mm (RCU readers)
 * @node:	on mrpin_procs, in creation order, under mrpin_owners_lock
 *		(RCU readers)
 * @ref:	one per live pin, plus transient references from the pin path;
 *		zero: parked (see mrpin_proc_put()); an atomic_t for that reason
 * @mm:		the owning address space (the key; held with mmgrab())
 * @tgid:	the thread group id of the process, in the initial namespace
 * @uid:	the real uid of the first pinning task
 * @comm:	the process's command name
 * @usage:	live pins and bytes
 * @union_lock:	protects @points
 * @points:	the boundaries of the live pins' ranges (distinct.c)
 * @lock:	protects every field below it
 * @cgrp:	the cgroup (v2) of the latest pin, with a reference
 * @peak_bytes:	the highest pinned bytes so far
 * @registrations: pins made so far
 * @denials:	pins refused so far
 * @failures:	pins the kernel refused so far (failure.c)
 * @memlock:	RLIMIT_MEMLOCK soft limit as of the latest pin (bytes)
 * @bytes_2m:	bytes of the live pins backed by 2 MiB pages
 * @bytes_1g:	bytes of the live pins backed by 1 GiB pages
 * @stack_pins:	registrations of stack memory so far
 * @cleanup_releases: pins released by the kernel's cleanup (exit, close)
 * @deregistrations: pins released by a deregistration (the others)
 * @life_hist:	pins released so far, by lifetime: bucket i counts
 *		lifetimes of [2^i, 2^(i+1)) microseconds (the first below 2 us,
 *		the last everything longer)
 * @rate_start_ns: start of the current 10 s registration-rate window
 *		(local_clock())
 * @rate_count:	registrations in the current window
 * @rate:	registrations per second over the last full window
 * @rate_full:	a window has been completed: @rate is meaningful
 * @rcu:	frees the record after the last RCU reader
 *
 * A process record shows while it has pins (or a pin is being made).  When
 * its last pin goes it is parked, not freed, so that a process whose only
 * registration comes and goes does not make a record every time; parked
 * records of address spaces that are gone are freed when the next record is
 * made.
 */
struct mrpin_proc {
	struct rhash_head hnode;
	struct list_head node;
	atomic_t ref;
	struct mm_struct *mm;
	pid_t tgid;
	kuid_t uid;
	char comm[TASK_COMM_LEN];
	struct mrpin_counter usage;
	struct mutex union_lock;	/* protects points */
	struct rb_root points;

	spinlock_t lock;	/* protects the fields below */
	struct cgroup *cgrp;
	u64 peak_bytes;
	u64 registrations;
	u64 denials;
	u64 failures;
	u64 memlock;
	u64 bytes_2m;
	u64 bytes_1g;
	u64 stack_pins;
	u64 cleanup_releases;
	u64 deregistrations;
	u64 life_hist[MRPIN_LIFE_BUCKETS];
	u64 rate_start_ns;
	u64 rate_count;
	u64 rate;
	bool rate_full;
	struct rcu_head rcu;
};

/**
 * struct mrpin_user - the pins of one user, summed over its processes
 * @hnode:	in the owner table, keyed by @uid
 * @node:	on mrpin_users, under mrpin_owners_lock (RCU readers)
 * @ref:	one per live pin; zero: parked, freed by the reaper unless a
 *		pin finds it first (as a process record)
 * @uid:	the user
 * @usage:	live pins and bytes
 * @peer_lock:	held across each of the user's pins taken for peer memory,
 *		one at a time (peer.c)
 * @rcu:	frees the record after the last RCU reader
 */
struct mrpin_user {
	struct rhash_head hnode;
	struct list_head node;
	atomic_t ref;
	kuid_t uid;
	struct mrpin_counter usage;
	struct mutex peer_lock;		/* see peer.c */
	struct rcu_head rcu;
};

/**
 * struct mrpin_cg - the pins made in one cgroup (v2) and its descendants
 * @hnode:	in the owner table, keyed by @id
 * @pnode:	in account.c's table by @path, unless @superseded
 * @node:	on mrpin_cgs, under mrpin_owners_lock (RCU readers)
 * @ref:	one per live pin made in this very cgroup, one per child record;
 *		zero: parked, kept for the next pin (see mrpin_cg_put()).  An
 *		atomic_t, not a refcount_t: zero is a normal state here
 * @id:		the cgroup's id (cgroup_id()); outlives the cgroup itself
 * @path:	the cgroup's path from the root of the hierarchy when the
 *		record was made: what cgroup rules bind (policy.c)
 * @superseded:	a newer record has the same @path (the cgroup was removed
 *		and made again): a rule no longer keeps this one; under
 *		mrpin_owners_lock
 * @parent:	the parent cgroup's record, with a reference; NULL at the root
 * @usage:	live pins and bytes of the subtree
 * @peak_pinned_bytes: the highest pinned bytes of the subtree since the
 *		record was made, raised as each pin is made; never lowered
 * @rcu:	frees the record after the last RCU reader
 *
 * A pin charges its cgroup's record and every ancestor's, and stays charged
 * there even if its process moves or the cgroup is removed.  A parked
 * record whose path a cgroup rule names is kept, peak and all, while the
 * rule stands, even after the cgroup is removed, until a cgroup made again
 * at that path has a record (mrpin_cg_reap_locked()).
 */
struct mrpin_cg {
	struct rhash_head hnode;
	struct rhash_head pnode;
	struct list_head node;
	atomic_t ref;
	u64 id;
	const char *path;
	bool superseded;
	struct mrpin_cg *parent;
	struct mrpin_counter usage;
	atomic64_t peak_pinned_bytes;
	struct rcu_head rcu;
};

/* The owner records; mrpin_owners_lock: see "Notes on locking" above. */
extern struct list_head mrpin_procs;
extern struct list_head mrpin_users;
extern struct list_head mrpin_cgs;
extern struct mutex mrpin_owners_lock;

/**
 * struct mrpin_stats - global counters (all atomic, no lock)
 * @usage:		live pins and bytes
 * @peak_pinned_bytes:	the highest pinned bytes since load
 * @pins_total:		pins made since load
 * @odp_pins:		live ODP registrations (in @usage's pins, with no bytes)
 * @peer_pins:		live peer registrations (in @usage's pins, their bytes
 *			in @usage's peer_bytes)
 * @peer_races_total:	pins taken for peer memory that came back holding
 *			host pages (peer.c)
 * @releases_total:	tracked pins released since load
 * @untracked_releases_total: releases of umems mrpin did not see pinned
 * @denials_total:	pins refused since load
 * @warnings_total:	pins allowed over a limit in warn mode since load
 * @bytes_2m:		live bytes backed by 2 MiB pages
 * @bytes_1g:		live bytes backed by 1 GiB pages
 * @stack_pins_total:	registrations of stack memory since load
 * @oversized_pins_total: registrations at or above the oversize mark
 * @cleanup_releases_total: pins released by the kernel's cleanup (process
 *			exit, closing the device) instead of a deregistration
 * @nomem_denials_total: pins refused because mrpin could not allocate its
 *			records (global action=enforce)
 * @unrecorded_pins_total: pins made without a record, for want of memory
 *			(global action=warn): their releases are untracked
 * @failures_total:	pins the kernel refused since load, by cause
 *			(enum mrpin_fail_cause)
 */
struct mrpin_stats {
	struct mrpin_counter usage;
	atomic64_t peak_pinned_bytes;
	atomic64_t pins_total;
	atomic64_t odp_pins;
	atomic64_t peer_pins;
	atomic64_t peer_races_total;
	atomic64_t releases_total;
	atomic64_t untracked_releases_total;
	atomic64_t denials_total;
	atomic64_t warnings_total;
	atomic64_t bytes_2m;
	atomic64_t bytes_1g;
	atomic64_t stack_pins_total;
	atomic64_t oversized_pins_total;
	atomic64_t cleanup_releases_total;
	atomic64_t nomem_denials_total;
	atomic64_t unrecorded_pins_total;
	atomic64_t failures_total[MRPIN_NR_FAIL_CAUSES];
};

extern struct mrpin_stats mrpin_stats;

#define MRPIN_UNLIMITED U64_MAX

/**
 * struct mrpin_limits - the limits of one rule
 * @max:	per key; MRPIN_UNLIMITED when not limited.  max_pinned and
 *		max_pin_size are bytes, max_pins a count
 * @pct:	when max_pinned was given as a percentage of RAM: 1..100
 *		(0 otherwise, also for "0%"; see @pct_set)
 * @pct_set:	max_pinned was given as a percentage
 * @warn:	action=warn: allow, log and count instead of refusing
 * @distinct:	count=distinct (global and process rules): max_pinned bounds
 *		the counter's distinct_bytes, not its pinned_bytes
 * @stack:	global rule only: enum mrpin_stack_action for stack memory
 * @mr_table_pct: global rule only: warn when a device's MR table is this
 *		full (percent)
 * @callsites:	global rule only: record user call sites of new pins
 * @log_failures: global rule only: log the pins the kernel refused (failure.c)
 * @oversize:	global rule only: pins of this many bytes or more are
 *		flagged as oversized
 */
struct mrpin_limits {
	u64 max[MRPIN_NR_LIMIT_KEYS];
	u8 pct;
	bool pct_set;
	bool warn;
	bool distinct;
	u8 stack;
	u8 mr_table_pct;
	bool callsites;
	bool log_failures;
	u64 oversize;
};

/**
 * struct mrpin_violation - a limit a pin crossed
 * @scope:	the rule's scope
 * @id:		uid or cgroup id for those scopes
 * @path:	the cgroup rule's path (cgroup scope); the device's name
 *		(device scope)
 * @key:	the limit crossed (enum mrpin_limit_key); MRPIN_EVENT_FAIL
 *		plus the cause when the kernel refused the pin (failure.c),
 *		with @usage the process's VmPin and @limit its RLIMIT_MEMLOCK,
 *		in bytes
 * @asked:	the pin's bytes
 * @usage:	use before the pin, in the key's unit
 * @limit:	the limit, in the key's unit
 * @warn:	the rule is in warn mode: the pin was allowed
 * @err:	the errno the pin failed with (positive); 0 for a limit
 * @quiet:	not for the kernel log (a failure, without log_failures=on)
 */
struct mrpin_violation {
	enum mrpin_scope scope;
	u64 id;
	char path[MRPIN_PATH_MAX];
	enum mrpin_limit_key key;
	u64 asked;
	u64 usage;
	u64 limit;
	bool warn;
	bool quiet;
	int err;
};

/* Not a limit crossed: the kernel refused the pin (failure.c). */
static inline bool mrpin_violation_failed(const struct mrpin_violation *v)
{
	return v->key >= MRPIN_EVENT_FAIL;
}

int mrpin_account_init(void);
void mrpin_account_exit(void);
struct mrpin_proc *mrpin_proc_get_current(void);
void mrpin_proc_put(struct mrpin_proc *proc);
struct mrpin_user *mrpin_user_get(kuid_t uid);
void mrpin_user_put(struct mrpin_user *user);
unsigned int mrpin_owner_records(enum mrpin_scope scope);
struct mrpin_cg *mrpin_cg_get(struct cgroup *cgrp);
void mrpin_cg_put(struct mrpin_cg *cg);
u64 mrpin_proc_vm_pinned_bytes(const struct mrpin_proc *proc);

/**
 * struct mrpin_charge - what one pin is charged to
 * @user:	the owning user (user records stay until unload)
 * @cg:		the cgroup the pin was made in, with a reference
 * @proc:	the owning process, with a reference
 * @dev:	the device, with a reference
 *
 * The charge API (account.c) takes this and the bytes, never the pin: the
 * owners and the amount are all it needs.  The bytes are not stored: a
 * pin's are mrpin_pin_bytes() of its range, computed where needed.
 */
struct mrpin_charge {
	struct mrpin_user *user;
	struct mrpin_cg *cg;
	struct mrpin_proc *proc;
	struct mrpin_dev *dev;
};

/**
 * struct mrpin_pin - one live pin (one ib_umem)
 * @node:	in the umem-keyed table (found again at release)
 * @umem:	the key; compared, never dereferenced
 * @id:		unique, increasing
 * @created_ns:	local_clock() when the pin was made (while in flight: when
 *		it was charged): cheap to read (no clocksource access), good
 *		for ages and lifetimes
 * @charge:	the owners and device it is charged to
 * @rcu:	frees the record after the last RCU reader; overlays
 *		@charge's user and cg, which only the pin's own paths read,
 *		before they free it (RCU readers read its proc and dev)
 * @start:	the user address asked for
 * @length:	the length asked for, in bytes
 * @pages_2m:	pages of the pin backed by 2 MiB pages (THP or hugetlbfs)
 * @pages_1g:	pages of the pin backed by 1 GiB pages
 * @slot:	the pin's index in mrpin_pins (and in mrpin_callsites)
 * @align_shift: log2 of the start's alignment, at most 30 (1 GiB)
 * @flags:	MRPIN_PIN_* facts about the pin
 * @caller:	the kernel function that asked for it, as an index into a
 *		table of callers (mrpin_pin_caller())
 *
 * The facts (diag.c) are computed once, when the pin is made.
 *
 * 96 bytes: a live pin is the one thing mrpin keeps per registration, so
 * what a view can compute (the bytes charged, from the range) and what
 * few pins have (a call site: mrpin_callsites, by slot) stay out of it,
 * and what only a freed record needs (the rcu_head) takes the place of
 * what it no longer does.  The BUILD_BUG_ON()s in mrpin_pin_init() keep
 * it so.
 */
struct mrpin_pin {
	struct rhash_head node;
	const struct ib_umem *umem;
	u64 id;
	u64 created_ns;
	union {
		struct mrpin_charge charge;
		struct rcu_head rcu;
	};
	unsigned long start;
	size_t length;
	u32 pages_2m;
	u32 pages_1g;
	u32 slot;
	u8 align_shift;
	u8 flags;
	u8 caller;
};

#define MRPIN_PIN_STACK		BIT(0)	/* the range lies in a stack */
#define MRPIN_PIN_OVERSIZED	BIT(1)	/* at or above the oversize mark */
#define MRPIN_PIN_CALLSITE	BIT(2)	/* call site asked for; in mrpin_callsites */
#define MRPIN_PIN_ODP		BIT(3)	/* on-demand paging: pins no pages */
#define MRPIN_PIN_PINNING	BIT(4)	/* charged, the real pin not yet made */
#define MRPIN_PIN_PEER		BIT(5)	/* peer (GPU) memory: no host page */
#define MRPIN_PIN_PEER_TURN	BIT(6)	/* holds its user's peer turn (peer.c) */
#define MRPIN_PIN_DMABUF	BIT(7)	/* a dma-buf's (with PEER); start: offset */
/* No host page: no bytes charged, no place in the union. */
#define MRPIN_PIN_NO_HOST	(MRPIN_PIN_ODP | MRPIN_PIN_PEER)

#define MRPIN_CALLSITE_DEPTH 8

/**
 * struct mrpin_callsite - where in user space a pin was asked for
 * @pin:	the pin, whose slot in mrpin_callsites this is
 * @depth:	entries in @ip
 * @ip:		user return addresses, innermost first
 */
struct mrpin_callsite {
	const struct mrpin_pin *pin;
	unsigned int depth;
	unsigned long ip[MRPIN_CALLSITE_DEPTH];
};

/* Call sites of live pins by slot (callsites=on), for the view; RCU readers. */
extern struct xarray mrpin_callsites;

/* Live pins by slot (a small, reused index), for the views; RCU readers. */
extern struct xarray mrpin_pins;

int mrpin_pin_init(void);
void mrpin_pin_exit(void);
struct mrpin_pin *mrpin_pin_prepare(struct ib_device *ibdev,
				    unsigned long addr, size_t size,
				    unsigned long caller, u8 kind);
int mrpin_pin_record(struct mrpin_pin *pin, struct ib_umem *umem);
void mrpin_pin_abort(struct mrpin_pin *pin);
void mrpin_pin_failed(struct mrpin_pin *pin, unsigned long addr, size_t size,
		      bool writable, bool odp, int err);
struct mrpin_pin *mrpin_pin_unpublish(struct ib_umem *umem, bool *cleanup);
void mrpin_pin_released(struct mrpin_pin *pin, bool cleanup);
unsigned long mrpin_pin_caller(const struct mrpin_pin *pin);

/* peer.c */
u8 mrpin_peer_guess(unsigned long addr, size_t size);
int mrpin_peer_enter(struct mrpin_user *user);
void mrpin_peer_leave(struct mrpin_user *user);
void mrpin_peer_raced(struct mrpin_user *user, pid_t tgid,
		      unsigned long addr, size_t size);
void mrpin_peer_exit(void);

/**
 * mrpin_range_wraps() - whether a user range is one ib_umem_get() refuses
 * @start: user address
 * @length: length in bytes
 *
 * Return: true when the range, or its end rounded up to a page, wraps.
 */
static inline bool mrpin_range_wraps(unsigned long start, size_t length)
{
	return start + length < start ||
	       PAGE_ALIGN(start + length) < start + length;
}

/**
 * mrpin_pin_bytes() - bytes a pin charges to mm->pinned_vm
 * @start: user address
 * @length: length in bytes
 *
 * The pages spanned by [@start, @start + @length), times PAGE_SIZE: what
 * ib_umem_num_pages() counts.  The caller has checked that the range does
 * not wrap.
 *
 * Return: the number of bytes.
 */
static inline u64 mrpin_pin_bytes(unsigned long start, size_t length)
{
	return PAGE_ALIGN(start + length) - (start & PAGE_MASK);
}

/**
 * mrpin_pin_charged() - the bytes a recorded pin is charged
 * @pin: the pin
 *
 * Return: mrpin_pin_bytes() of its range; 0 for an ODP or peer
 * registration, which pins no host page.
 */
static inline u64 mrpin_pin_charged(const struct mrpin_pin *pin)
{
	if (pin->flags & MRPIN_PIN_NO_HOST)
		return 0;
	return mrpin_pin_bytes(pin->start, pin->length);
}

/**
 * mrpin_age_ns() - how long ago a local_clock() stamp was
 * @then_ns:	the stamp (a pin's created_ns)
 * @now_ns:	local_clock() now
 *
 * local_clock() is per CPU, and the stamp may have been taken on another
 * CPU, or after @now_ns was read: a stamp after @now_ns is an age of 0,
 * never a negative one read as a huge number.
 *
 * Return: the age, in nanoseconds.
 */
static inline u64 mrpin_age_ns(u64 then_ns, u64 now_ns)
{
	return now_ns > then_ns ? now_ns - then_ns : 0;
}

/* mrpin_age_ns() in whole milliseconds, as the views print ages. */
static inline u64 mrpin_age_ms(u64 then_ns, u64 now_ns)
{
	return div_u64(mrpin_age_ns(then_ns, now_ns), NSEC_PER_MSEC);
}

/**
 * mrpin_ram_bytes() - the RAM that "N% of RAM" limits are shares of
 *
 * totalram_pages(), in bytes: what sysinfo() and MemTotal report.  The
 * `stats` view shows it, so that a snapshot read on another machine is
 * read with the RAM of the machine it came from.
 *
 * Return: the number of bytes.
 */
static inline u64 mrpin_ram_bytes(void)
{
	return (u64)totalram_pages() << PAGE_SHIFT;
}

/* account.c: charging a pin to every owner, checking each limit */
int mrpin_try_charge(const struct mrpin_charge *c, u64 bytes, u64 distinct,
		     struct cgroup *cgrp);
void mrpin_count_registration(const struct mrpin_charge *c);
void mrpin_refund_host(const struct mrpin_charge *c, u64 bytes, u64 distinct);
void mrpin_account_peer(const struct mrpin_charge *c, s64 bytes);
void mrpin_uncharge(const struct mrpin_charge *c, u64 bytes, u64 distinct,
		    bool released);
void mrpin_deny(struct mrpin_proc *proc, const struct mrpin_violation *v);
void mrpin_fail(struct mrpin_proc *proc, const struct mrpin_violation *v);
void mrpin_account_pinned_facts(struct mrpin_proc *proc, u64 bytes_2m,
				u64 bytes_1g, u8 flags, u64 now);
void mrpin_account_released_facts(struct mrpin_proc *proc, u64 bytes_2m,
				  u64 bytes_1g, unsigned int life_bucket,
				  bool cleanup);

/* util.c */
struct kmem_cache *mrpin_cache_create(const char *name, unsigned int size);
extern const char mrpin_escape_set[];
char *mrpin_escape(char *dst, const char *src, size_t size);

/* distinct.c: the union of the ranges pinned in an address space */
int mrpin_distinct_init(void);
void mrpin_distinct_exit(void);
u64 mrpin_distinct_new_bytes(struct mrpin_proc *proc, unsigned long start,
			     size_t length);
int mrpin_distinct_add(struct mrpin_proc *proc, unsigned long start,
		       size_t length);
u64 mrpin_distinct_remove(struct mrpin_proc *proc, unsigned long start,
			  size_t length);

/**
 * enum mrpin_line_op - what a line of the `limits` grammar does
 * @MRPIN_LINE_EMPTY:	nothing (blank, or a comment)
 * @MRPIN_LINE_RESET:	back to the module parameters, no uid or cgroup rule
 * @MRPIN_LINE_SET:	set the keys it names, keep the others
 * @MRPIN_LINE_DELETE:	delete a uid or cgroup rule
 */
enum mrpin_line_op {
	MRPIN_LINE_EMPTY,
	MRPIN_LINE_RESET,
	MRPIN_LINE_SET,
	MRPIN_LINE_DELETE,
};

/**
 * struct mrpin_line - one line of the `limits` grammar, as read
 * @op:		what it does
 * @scope:	the rule it is about (set, delete)
 * @id:		the uid (initial namespace); 0 for a cgroup rule
 * @path:	a cgroup rule's path from the root of the hierarchy,
 *		unescaped, in the line's own buffer; "" otherwise
 * @set:	the keys it names (bits of enum mrpin_key)
 * @lim:	their values (the other fields mean nothing)
 */
struct mrpin_line {
	enum mrpin_line_op op;
	enum mrpin_scope scope;
	u64 id;
	const char *path;
	unsigned long set;
	struct mrpin_limits lim;
};

/* policy_parse.c: the grammar */
int mrpin_parse_key(struct mrpin_limits *lim, enum mrpin_key key,
		    const char *val, const char **why);
int mrpin_parse_line(char *line, struct mrpin_line *l, const char **why);
void mrpin_limits_merge(struct mrpin_limits *lim, const struct mrpin_line *l);
void mrpin_limits_unlimited(struct mrpin_limits *lim);
void mrpin_print_limits(struct seq_file *m, const struct mrpin_limits *lim,
			enum mrpin_scope scope);

/* params.c: the module parameters */
void mrpin_params_defaults(struct mrpin_limits *global,
			   struct mrpin_limits *process);

/* policy.c: the rules, an RCU snapshot */
int mrpin_policy_init(void);
void mrpin_policy_exit(void);
const struct mrpin_limits *mrpin_policy_limits(enum mrpin_scope scope, u64 id,
					       const char *path);
const struct mrpin_limits *mrpin_policy_global(void);
bool mrpin_policy_names_cgroup(const char *path);
int mrpin_policy_write(char *buf, bool commit, unsigned int *lineno,
		       const char **why);
int mrpin_policy_show(struct seq_file *m);

/* ctl.c: the control file `limits` */
extern const struct file_operations mrpin_limits_fops;

/* failure.c: why a pin the kernel refused failed */
void mrpin_fail_explain(struct mrpin_proc *proc, unsigned long addr,
			size_t size, bool writable, bool odp, int err);
void mrpin_fail_device(struct ib_device *ibdev, u64 start, u64 length,
		       bool odp, int err);

/* events.c */
int mrpin_events_init(void);
void mrpin_events_exit(void);
void mrpin_report(const struct mrpin_violation *v);
const char *mrpin_fail_cause_name(enum mrpin_fail_cause cause);
extern const struct file_operations mrpin_events_fops;

/* diag.c: facts about each pin, computed once */
int mrpin_diag_prepare(struct mrpin_pin *pin);
void mrpin_diag_pinned(struct mrpin_pin *pin, struct ib_umem *umem);
void mrpin_diag_release(struct mrpin_pin *pin, bool cleanup);
void mrpin_diag_free(struct mrpin_pin *pin);

/* callsites.c: the `callsites` view */
int mrpin_callsites_show(struct seq_file *m);

/* leaks.c: the `leaks` table */
void mrpin_leak_add(const struct mrpin_proc *proc, u64 bytes);
int mrpin_leaks_show(struct seq_file *m);

/* hook.c */
int mrpin_hook_init(void);
void mrpin_hook_exit(void);
bool mrpin_hook_driver_add(struct ib_device *ibdev);
void mrpin_hook_driver_remove(struct ib_device *ibdev);

/* client.c: the ib_client */
int mrpin_client_init(void);
void mrpin_client_exit(void);

/* debugfs.c */
void mrpin_debugfs_init(void);
void mrpin_debugfs_exit(void);

/* securityfs.c */
int mrpin_securityfs_init(void);
void mrpin_securityfs_exit(void);

#endif /* _MRPIN_H */
