/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mrpin: the internal API between the files of the module.
 *
 * The pin path, top-down:
 *
 *   ib_umem_get() --ftrace--> hook.c --> pin.c: mrpin_pin_prepare()
 *                                               (owner, device, charge)
 *                                         real ib_umem_get()
 *                                         pin.c: mrpin_pin_commit() or
 *                                                mrpin_pin_abort()
 *   ib_umem_release() --ftrace--> hook.c --> pin.c: mrpin_pin_release()
 *
 * account.c owns the process records and the global counters, device.c the
 * per-device records, debugfs.c only reads them.  Every record is freed
 * through RCU so that the debugfs views can walk them without blocking the
 * pin path.
 */
#ifndef _MRPIN_H
#define _MRPIN_H

#include <linux/atomic.h>
#include <linux/cred.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/rhashtable-types.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "version.h"

struct cgroup;
struct dentry;
struct ib_umem;
struct mm_struct;
struct seq_file;

/**
 * struct mrpin_dev - one RDMA device as mrpin sees it
 * @node:	on mrpin_devs while the device is registered
 * @ref:	one for list membership, one per live pin on the device
 * @name_lock:	protects @name (a device can be renamed)
 * @name:	the device's name
 * @node_guid:	the device's node GUID (host order)
 * @max_mr:	attrs.max_mr: the size of the device's MR table
 * @pins:	live pins on this device
 * @pinned_bytes: bytes pinned on this device
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
	atomic64_t pins;
	atomic64_t pinned_bytes;
	struct rcu_head rcu;
};

/*
 * mrpin_devs_lock (a mutex) protects the mrpin_devs list; the debugfs view
 * holds it while it prints the (short) list.
 */
extern struct list_head mrpin_devs;
extern struct mutex mrpin_devs_lock;

int mrpin_device_init(void);
void mrpin_device_exit(void);
struct mrpin_dev *mrpin_dev_get(struct ib_device *ibdev);
void mrpin_dev_put(struct mrpin_dev *dev);
void mrpin_dev_name(struct mrpin_dev *dev, char *buf, size_t len);

/**
 * struct mrpin_proc - the pins of one address space (one process)
 * @hnode:	in the lookup hash, keyed by @mm (RCU readers)
 * @node:	on mrpin_procs, in creation order, under mrpin_procs_lock
 * @ref:	one per live pin, plus transient references from the pin path
 * @mm:		the owning address space (the key; held with mmgrab())
 * @tgid:	the thread group id of the process, in the initial namespace
 * @uid:	the real uid of the first pinning task
 * @comm:	the process's command name
 * @lock:	protects every field below it
 * @cgrp:	the cgroup (v2) of the latest pin, with a reference
 * @pins:	live pins
 * @pinned_bytes: bytes pinned by the live pins
 * @peak_bytes:	the highest @pinned_bytes so far
 * @registrations: pins made so far
 * @releases:	pins released so far
 * @denials:	pins refused so far
 * @memlock:	RLIMIT_MEMLOCK soft limit as of the latest pin (bytes)
 * @rcu:	frees the record after the last RCU reader
 *
 * A process record lives while it has pins (or a pin is being made).  The
 * last reference is dropped under mrpin_procs_lock, so a record with a zero
 * count is never found by a lookup made under that lock.
 */
struct mrpin_proc {
	struct hlist_node hnode;
	struct list_head node;
	refcount_t ref;
	struct mm_struct *mm;
	pid_t tgid;
	kuid_t uid;
	char comm[TASK_COMM_LEN];

	spinlock_t lock;	/* protects the fields below */
	struct cgroup *cgrp;
	u64 pins;
	u64 pinned_bytes;
	u64 peak_bytes;
	u64 registrations;
	u64 releases;
	u64 denials;
	u64 memlock;
	struct rcu_head rcu;
};

extern struct list_head mrpin_procs;
extern struct mutex mrpin_procs_lock;

/**
 * struct mrpin_stats - global counters (all atomic, no lock)
 * @pins:		live pins
 * @pinned_bytes:	bytes pinned by the live pins
 * @peak_pinned_bytes:	the highest @pinned_bytes since load
 * @pins_total:		pins made since load
 * @releases_total:	tracked pins released since load
 * @untracked_releases_total: releases of umems mrpin did not see pinned
 * @denials_total:	pins refused since load
 * @warnings_total:	pins allowed over a limit in warn mode since load
 */
struct mrpin_stats {
	atomic64_t pins;
	atomic64_t pinned_bytes;
	atomic64_t peak_pinned_bytes;
	atomic64_t pins_total;
	atomic64_t releases_total;
	atomic64_t untracked_releases_total;
	atomic64_t denials_total;
	atomic64_t warnings_total;
};

extern struct mrpin_stats mrpin_stats;

void mrpin_account_exit(void);
struct mrpin_proc *mrpin_proc_get_current(void);
void mrpin_proc_put(struct mrpin_proc *proc);
void mrpin_charge(struct mrpin_proc *proc, struct mrpin_dev *dev, u64 bytes,
		  struct cgroup *cgrp);
void mrpin_commit(struct mrpin_proc *proc);
void mrpin_uncharge(struct mrpin_proc *proc, struct mrpin_dev *dev,
		    u64 bytes, bool released);
u64 mrpin_proc_vm_pinned_bytes(const struct mrpin_proc *proc);

/**
 * struct mrpin_pin - one live pin (one ib_umem)
 * @node:	in the umem-keyed table (found again at release)
 * @umem:	the key; compared, never dereferenced
 * @id:		unique, increasing; the index in the id-keyed table
 * @proc:	the owner, with a reference
 * @dev:	the device, with a reference
 * @cgrp:	the cgroup the pin was made in, with a reference
 * @start:	the user address asked for
 * @length:	the length asked for, in bytes
 * @caller:	return address into the kernel function that asked for it
 * @created_ns:	CLOCK_MONOTONIC time of the pin
 * @rcu:	frees the record after the last RCU reader
 */
struct mrpin_pin {
	struct rhash_head node;
	const struct ib_umem *umem;
	u64 id;
	struct mrpin_proc *proc;
	struct mrpin_dev *dev;
	struct cgroup *cgrp;
	unsigned long start;
	size_t length;
	unsigned long caller;
	u64 created_ns;
	struct rcu_head rcu;
};

/* Live pins by id, for the `pins` view; RCU readers. */
extern struct xarray mrpin_pins_by_id;

int mrpin_pin_init(void);
void mrpin_pin_exit(void);
struct mrpin_pin *mrpin_pin_prepare(struct ib_device *ibdev,
				    unsigned long addr, size_t size,
				    unsigned long caller);
void mrpin_pin_commit(struct mrpin_pin *pin, struct ib_umem *umem);
void mrpin_pin_abort(struct mrpin_pin *pin);
struct ib_umem *mrpin_umem_get(struct ib_device *ibdev, unsigned long addr,
			       size_t size, int access);
void mrpin_umem_release(struct ib_umem *umem);

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

/* hook.c */
int mrpin_hook_init(void);
void mrpin_hook_exit(void);
void mrpin_hook_leave(void);

/* debugfs.c */
void mrpin_debugfs_init(void);
void mrpin_debugfs_exit(void);

#endif /* _MRPIN_H */
