// SPDX-License-Identifier: GPL-2.0
/*
 * The views under /sys/kernel/debug/mrpin/.
 *
 * Every table is text: a first line "# " followed by the column names,
 * then one object per line, columns separated by white space, numbers in
 * decimal (bytes for sizes).  Names their owners choose (comm, cgroup
 * path) are escaped as /proc/self/mountinfo escapes white space, octal
 * \ooo, for every byte but printable ASCII (mrpin_escape_set).  No kernel pointer is ever printed.
 * New columns are only ever added at the end of a line.  Files are 0400:
 * root only.
 *
 * `limits` (0600) is the policy's control file (policy.c; its other door,
 * the one lockdown leaves open, is in securityfs.c) and `events` the
 * stream of refusals and warnings (events.c).  A kernel in lockdown
 * refuses to open `limits` here; the 0400 files, `events` included (no
 * ioctl, no mmap), stay readable.
 *
 * Cost: `devices`, `procs`, `users`, `cgroups` and `stats` print from the
 * per-device, per-process and global counters and never walk the pins;
 * `procs`, `users` and `cgroups` walk the owner records under RCU, never
 * holding the lock that the first pin of a new process takes.  `pins` walks the live pins
 * in slot order under RCU, one seq_file chunk at a time, so a reader of a
 * large table never holds off registrations.
 */
#include <linux/cgroup.h>
#include <linux/hashtable.h>
#include <linux/debugfs.h>
#include <linux/kallsyms.h>
#include <linux/ktime.h>
#include <linux/resource.h>
#include <linux/seq_file.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>

#include "mrpin.h"

static struct dentry *mrpin_debugfs_dir;

static int version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "mrpin %s\n", MRPIN_VERSION);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(version);

static void mrpin_seq_guid(struct seq_file *m, u64 guid)
{
	seq_printf(m, "%04llx:%04llx:%04llx:%04llx", guid >> 48,
		   (guid >> 32) & 0xffff, (guid >> 16) & 0xffff, guid & 0xffff);
}

static int devices_show(struct seq_file *m, void *v)
{
	struct mrpin_dev *dev;
	char name[IB_DEVICE_NAME_MAX];

	seq_puts(m, "# device node_guid max_mr pins pinned_bytes peer_bytes\n");
	mutex_lock(&mrpin_devs_lock);
	list_for_each_entry(dev, &mrpin_devs, node) {
		mrpin_dev_name(dev, name, sizeof(name));
		seq_escape(m, name, mrpin_escape_set);
		seq_putc(m, ' ');
		mrpin_seq_guid(m, dev->node_guid);
		seq_printf(m, " %d %lld %lld %lld\n", dev->max_mr,
			   atomic64_read(&dev->usage.pins),
			   atomic64_read(&dev->usage.pinned_bytes),
			   atomic64_read(&dev->usage.peer_bytes));
	}
	mutex_unlock(&mrpin_devs_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(devices);

static int stats_show(struct seq_file *m, void *v)
{
	const struct mrpin_stats *s = &mrpin_stats;
	s64 failures = 0;
	int cause;

	seq_printf(m, "pins %lld\n", atomic64_read(&s->usage.pins));
	seq_printf(m, "odp_pins %lld\n", atomic64_read(&s->odp_pins));
	seq_printf(m, "peer_pins %lld\n", atomic64_read(&s->peer_pins));
	seq_printf(m, "peer_bytes %lld\n",
		   atomic64_read(&s->usage.peer_bytes));
	seq_printf(m, "peer_races_total %lld\n",
		   atomic64_read(&s->peer_races_total));
	seq_printf(m, "pinned_bytes %lld\n",
		   atomic64_read(&s->usage.pinned_bytes));
	seq_printf(m, "distinct_bytes %lld\n",
		   atomic64_read(&s->usage.distinct_bytes));
	seq_printf(m, "peak_pinned_bytes %lld\n",
		   atomic64_read(&s->peak_pinned_bytes));
	seq_printf(m, "pins_total %lld\n", atomic64_read(&s->pins_total));
	seq_printf(m, "releases_total %lld\n",
		   atomic64_read(&s->releases_total));
	seq_printf(m, "untracked_releases_total %lld\n",
		   atomic64_read(&s->untracked_releases_total));
	seq_printf(m, "denials_total %lld\n", atomic64_read(&s->denials_total));
	seq_printf(m, "warnings_total %lld\n",
		   atomic64_read(&s->warnings_total));
	seq_printf(m, "bytes_4k %lld\n", atomic64_read(&s->usage.pinned_bytes) -
		   atomic64_read(&s->bytes_2m) - atomic64_read(&s->bytes_1g));
	seq_printf(m, "bytes_2m %lld\n", atomic64_read(&s->bytes_2m));
	seq_printf(m, "bytes_1g %lld\n", atomic64_read(&s->bytes_1g));
	seq_printf(m, "stack_pins_total %lld\n",
		   atomic64_read(&s->stack_pins_total));
	seq_printf(m, "oversized_pins_total %lld\n",
		   atomic64_read(&s->oversized_pins_total));
	seq_printf(m, "cleanup_releases_total %lld\n",
		   atomic64_read(&s->cleanup_releases_total));
	seq_printf(m, "nomem_denials_total %lld\n",
		   atomic64_read(&s->nomem_denials_total));
	seq_printf(m, "unrecorded_pins_total %lld\n",
		   atomic64_read(&s->unrecorded_pins_total));
	for (cause = 0; cause < MRPIN_NR_FAIL_CAUSES; cause++)
		failures += atomic64_read(&s->failures_total[cause]);
	seq_printf(m, "failures_total %lld\n", failures);
	for (cause = 0; cause < MRPIN_NR_FAIL_CAUSES; cause++)
		seq_printf(m, "failures_%s_total %lld\n",
			   mrpin_fail_cause_name(cause),
			   atomic64_read(&s->failures_total[cause]));
	seq_printf(m, "ram_bytes %llu\n", mrpin_ram_bytes());
	seq_printf(m, "proc_records %u\nuser_records %u\ncgroup_records %u\n",
		   mrpin_owner_records(MRPIN_SCOPE_PROCESS),
		   mrpin_owner_records(MRPIN_SCOPE_UID),
		   mrpin_owner_records(MRPIN_SCOPE_CGROUP));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

static void mrpin_seq_limit(struct seq_file *m, u64 bytes)
{
	if (bytes == RLIM_INFINITY)
		seq_puts(m, " unlimited");
	else
		seq_printf(m, " %llu", bytes);
}

/* One line of `procs`; the caller holds a reference on @proc. */
static void mrpin_proc_show(struct seq_file *m, struct mrpin_proc *proc,
			    char *path, size_t path_len)
{
	u64 pins, bytes, distinct, peak, memlock, denials, failures, b2m, b1g;
	u64 stack, cleanup, dereg;
	u64 regs, rate, elapsed, now = local_clock();
	u64 hist[MRPIN_LIFE_BUCKETS];
	struct cgroup *cgrp;
	int i;

	pins = atomic64_read(&proc->usage.pins);
	bytes = atomic64_read(&proc->usage.pinned_bytes);
	distinct = atomic64_read(&proc->usage.distinct_bytes);
	spin_lock(&proc->lock);
	peak = proc->peak_bytes;
	memlock = proc->memlock;
	denials = proc->denials;
	failures = proc->failures;
	b2m = proc->bytes_2m;
	b1g = proc->bytes_1g;
	stack = proc->stack_pins;
	cleanup = proc->cleanup_releases;
	dereg = proc->deregistrations;
	regs = proc->registrations;
	memcpy(hist, proc->life_hist, sizeof(hist));
	/*
	 * Registrations per second over the last full 10 s window: the
	 * current window once it is that old (a window closes only at a
	 * registration), else the previous one; before any window is full,
	 * the current one's rate once it is a second old.
	 */
	elapsed = mrpin_age_ns(proc->rate_start_ns, now);
	if (elapsed >= 10 * NSEC_PER_SEC ||
	    (!proc->rate_full && elapsed >= NSEC_PER_SEC))
		rate = div64_u64(proc->rate_count * NSEC_PER_SEC, elapsed);
	else
		rate = proc->rate_full ? proc->rate : 0;
	cgrp = proc->cgrp;
	if (cgrp)
		cgroup_get(cgrp);
	spin_unlock(&proc->lock);

	if (!cgrp || cgroup_path(cgrp, path, path_len) < 0)
		strscpy(path, "-", path_len);
	if (cgrp)
		cgroup_put(cgrp);

	seq_printf(m, "%d ", proc->tgid);
	seq_escape(m, proc->comm, mrpin_escape_set);
	seq_printf(m, " %u ", from_kuid_munged(&init_user_ns, proc->uid));
	seq_escape(m, path, mrpin_escape_set);
	seq_printf(m, " %llu %llu %llu %llu", pins, bytes, peak,
		   mrpin_proc_vm_pinned_bytes(proc));
	mrpin_seq_limit(m, memlock);
	seq_printf(m, " %llu %llu %llu %llu %llu %llu %llu %llu %llu ", denials,
		   failures, bytes - b2m - b1g, b2m, b1g, stack, cleanup, regs,
		   rate);
	for (i = 0; i < MRPIN_LIFE_BUCKETS; i++)
		seq_printf(m, i ? ",%llu" : "%llu", hist[i]);
	seq_printf(m, " %llu %llu %lld\n", distinct, dereg,
		   atomic64_read(&proc->usage.peer_bytes));
}

static int procs_show(struct seq_file *m, void *v)
{
	struct mrpin_proc *proc;
	char *path;

	path = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!path)
		return -ENOMEM;
	seq_puts(m, "# pid comm uid cgroup pins pinned_bytes peak_bytes vm_pinned_bytes memlock_bytes denials failures bytes_4k bytes_2m bytes_1g stack_pins cleanup_releases registrations reg_per_s life_hist distinct_bytes deregistrations peer_bytes\n");
	/*
	 * Under RCU, never mrpin_owners_lock: a reader of a long table must
	 * not hold off the first pin of a new process.  A reference keeps a
	 * record on the list (only parked records leave it) and its mm held
	 * while it prints outside RCU; a parked record has no pin to show.
	 */
	rcu_read_lock();
	list_for_each_entry_rcu(proc, &mrpin_procs, node) {
		if (!atomic64_read(&proc->usage.pins) ||
		    !atomic_inc_not_zero(&proc->ref))
			continue;
		rcu_read_unlock();
		if (atomic64_read(&proc->usage.pins))
			mrpin_proc_show(m, proc, path, PATH_MAX);
		rcu_read_lock();
		mrpin_proc_put(proc);
	}
	rcu_read_unlock();
	kfree(path);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(procs);

static int users_show(struct seq_file *m, void *v)
{
	struct mrpin_user *user;

	seq_puts(m, "# uid pins pinned_bytes\n");
	/* Records are freed through RCU: the walk is safe under it. */
	rcu_read_lock();
	list_for_each_entry_rcu(user, &mrpin_users, node) {
		/* Parked records wait for the reaper: show the ones in use. */
		if (!atomic64_read(&user->usage.pins))
			continue;
		seq_printf(m, "%u %lld %lld\n",
			   from_kuid_munged(&init_user_ns, user->uid),
			   atomic64_read(&user->usage.pins),
			   atomic64_read(&user->usage.pinned_bytes));
	}
	rcu_read_unlock();
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(users);

/*
 * One line of `cgroups`: the path rules bind (the record's), or "-" once
 * the cgroup is gone.  Under RCU or not: cgroup_get_from_id() takes a
 * spinlock and a reference, never sleeps (BPF's bpf_cgroup_from_id() calls
 * it from programs that may not).
 */
static void mrpin_cg_show(struct seq_file *m, struct mrpin_cg *cg)
{
	struct cgroup *cgrp;

	cgrp = cgroup_get_from_id(cg->id);
	seq_printf(m, "%llu ", cg->id);
	if (IS_ERR(cgrp)) {
		seq_putc(m, '-');
	} else {
		seq_escape(m, cg->path, mrpin_escape_set);
		cgroup_put(cgrp);
	}
	seq_printf(m, " %lld %lld %lld\n", atomic64_read(&cg->usage.pins),
		   atomic64_read(&cg->usage.pinned_bytes),
		   atomic64_read(&cg->peak_pinned_bytes));
}

/*
 * Subtree totals per cgroup: the records with pins, and those without
 * that a cgroup rule names (kept for their peak); "-" for a removed cgroup.
 */
static int cgroups_show(struct seq_file *m, void *v)
{
	struct mrpin_cg *cg;

	seq_puts(m, "# id cgroup pins pinned_bytes peak_pinned_bytes\n");
	/*
	 * As `procs`: under RCU, a reference on each record with pins while
	 * it prints outside RCU, which keeps it on the list (only parked
	 * records leave it); a record with pins in its subtree has a pin or a
	 * child, hence references.  A record without pins may be parked (no
	 * reference to take from zero but under mrpin_owners_lock): one that
	 * a rule keeps (its path named, no newer record of that path) prints
	 * inside the RCU read section that found it, which keeps it from
	 * being freed should the rule go meanwhile.
	 */
	rcu_read_lock();
	list_for_each_entry_rcu(cg, &mrpin_cgs, node) {
		if (!atomic64_read(&cg->usage.pins)) {
			if (!READ_ONCE(cg->superseded) &&
			    mrpin_policy_names_cgroup(cg->path))
				mrpin_cg_show(m, cg);
			continue;
		}
		if (!atomic_inc_not_zero(&cg->ref))
			continue;
		rcu_read_unlock();
		mrpin_cg_show(m, cg);
		rcu_read_lock();
		mrpin_cg_put(cg);
	}
	rcu_read_unlock();
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cgroups);

static int leaks_show(struct seq_file *m, void *v)
{
	return mrpin_leaks_show(m);
}
DEFINE_SHOW_ATTRIBUTE(leaks);

static int callsites_show(struct seq_file *m, void *v)
{
	return mrpin_callsites_show(m);
}
DEFINE_SHOW_ATTRIBUTE(callsites);

/*
 * `pins`: *pos is 0 for the header, then the pin's slot + 1, so that a
 * restart at the same position (next chunk) finds the same pin again.
 */
static void *mrpin_pins_find(loff_t *pos)
{
	unsigned long slot = *pos - 1;
	struct mrpin_pin *pin;

	pin = xa_find(&mrpin_pins, &slot, ULONG_MAX, XA_PRESENT);
	*pos = pin ? (loff_t)slot + 1 : *pos + 1;
	return pin;
}

/*
 * Per open file: the name of the last caller shown, looked up once for the
 * pins of a chunk that share it (most do: one driver's registration path).
 * A symbol lookup in a module walks its symbol table, the cost of most of a
 * row; start() forgets it (an empty name), so no name outlives the read()
 * that looked it up.
 */
struct mrpin_pins_iter {
	unsigned long caller;
	char name[KSYM_SYMBOL_LEN];
};

static void *pins_start(struct seq_file *m, loff_t *pos)
	__acquires(RCU)
{
	struct mrpin_pins_iter *it = m->private;

	it->name[0] = '\0';
	rcu_read_lock();
	if (*pos == 0)
		return SEQ_START_TOKEN;
	return mrpin_pins_find(pos);
}

static void *pins_next(struct seq_file *m, void *v, loff_t *pos)
{
	*pos = v == SEQ_START_TOKEN ? 1 : ((struct mrpin_pin *)v)->slot + 2;
	return mrpin_pins_find(pos);
}

static void pins_stop(struct seq_file *m, void *v)
	__releases(RCU)
{
	rcu_read_unlock();
}

static int pins_show(struct seq_file *m, void *v)
{
	struct mrpin_pins_iter *it = m->private;
	struct mrpin_pin *pin = v;
	char name[IB_DEVICE_NAME_MAX];
	unsigned long caller;
	u64 bytes, huge;
	u8 flags;

	if (v == SEQ_START_TOKEN) {
		seq_puts(m, "# id pid comm device start length pinned_bytes caller age_ms stack bytes_4k bytes_2m bytes_1g align oversized odp state peer\n");
		return 0;
	}
	mrpin_dev_name(pin->charge.dev, name, sizeof(name));
	caller = mrpin_pin_caller(pin);
	if (caller != it->caller || !it->name[0]) {
		/* "%ps" adds " [module]": keep the function name, one column. */
		snprintf(it->name, sizeof(it->name), "%ps", (void *)caller);
		it->name[strcspn(it->name, " ")] = '\0';
		it->caller = caller;
	}
	seq_printf(m, "%llu %d ", pin->id, pin->charge.proc->tgid);
	seq_escape(m, pin->charge.proc->comm, mrpin_escape_set);
	seq_putc(m, ' ');
	seq_escape(m, name, mrpin_escape_set);
	bytes = mrpin_pin_charged(pin);
	huge = ((u64)pin->pages_2m + pin->pages_1g) << PAGE_SHIFT;
	flags = READ_ONCE(pin->flags);
	seq_printf(m, " %lu %zu %llu %s %llu %d %llu %llu %llu %lu %d %d %s %d\n",
		   pin->start, pin->length, bytes, it->name,
		   mrpin_age_ms(READ_ONCE(pin->created_ns), local_clock()),
		   !!(flags & MRPIN_PIN_STACK), bytes - huge,
		   (u64)pin->pages_2m << PAGE_SHIFT,
		   (u64)pin->pages_1g << PAGE_SHIFT, 1UL << pin->align_shift,
		   !!(flags & MRPIN_PIN_OVERSIZED), !!(flags & MRPIN_PIN_ODP),
		   flags & MRPIN_PIN_PINNING ? "pinning" : "pinned",
		   !!(flags & MRPIN_PIN_PEER));
	return 0;
}

static const struct seq_operations pins_sops = {
	.start = pins_start,
	.next = pins_next,
	.stop = pins_stop,
	.show = pins_show,
};

static int pins_open(struct inode *inode, struct file *file)
{
	return seq_open_private(file, &pins_sops,
				sizeof(struct mrpin_pins_iter)) ? -ENOMEM : 0;
}

static const struct file_operations pins_fops = {
	.owner = THIS_MODULE,
	.open = pins_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release_private,
};

/**
 * mrpin_debugfs_init() - create /sys/kernel/debug/mrpin/
 *
 * Context: process context.
 */
void mrpin_debugfs_init(void)
{
	struct dentry *dir = debugfs_create_dir("mrpin", NULL);

	debugfs_create_file("version", 0400, dir, NULL, &version_fops);
	debugfs_create_file("devices", 0400, dir, NULL, &devices_fops);
	debugfs_create_file("procs", 0400, dir, NULL, &procs_fops);
	debugfs_create_file("pins", 0400, dir, NULL, &pins_fops);
	debugfs_create_file("stats", 0400, dir, NULL, &stats_fops);
	debugfs_create_file("users", 0400, dir, NULL, &users_fops);
	debugfs_create_file("cgroups", 0400, dir, NULL, &cgroups_fops);
	debugfs_create_file("leaks", 0400, dir, NULL, &leaks_fops);
	debugfs_create_file("callsites", 0400, dir, NULL, &callsites_fops);
	debugfs_create_file("events", 0400, dir, NULL, &mrpin_events_fops);
	debugfs_create_file("limits", 0600, dir, NULL, &mrpin_limits_fops);
	mrpin_debugfs_dir = dir;
}

/**
 * mrpin_debugfs_exit() - remove /sys/kernel/debug/mrpin/
 *
 * Waits for readers still inside a file.
 *
 * Context: process context.
 */
void mrpin_debugfs_exit(void)
{
	debugfs_remove(mrpin_debugfs_dir);
}
