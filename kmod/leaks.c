// SPDX-License-Identifier: GPL-2.0
/*
 * The `leaks` table: pins that the kernel's cleanup released (process
 * exit, closing the device file) instead of a deregistration, counted per
 * program (comm, uid).  MRPIN_LEAKS programs at most: a new one takes the
 * free slot, or the one whose latest leak is the oldest.
 *
 * Locking: mrpin_leaks_lock (spinlock) protects the table; the view
 * copies it out under the lock and prints the copy.
 */
#include <linux/cred.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "mrpin.h"

#define MRPIN_LEAKS 64

/**
 * struct mrpin_leak - pins one program left to the kernel's cleanup
 * @comm:	the program's command name
 * @uid:	its user
 * @count:	pins released by cleanup
 * @bytes:	their bytes
 * @last_ns:	CLOCK_REALTIME of the latest one
 */
struct mrpin_leak {
	char comm[TASK_COMM_LEN];
	kuid_t uid;
	u64 count;
	u64 bytes;
	u64 last_ns;
};

static struct mrpin_leak mrpin_leaks[MRPIN_LEAKS];
/* Protects mrpin_leaks. */
static DEFINE_SPINLOCK(mrpin_leaks_lock);

/**
 * mrpin_leak_add() - count a pin the kernel's cleanup released
 * @proc: its process
 * @bytes: its bytes
 *
 * Context: any context; takes mrpin_leaks_lock.
 */
void mrpin_leak_add(const struct mrpin_proc *proc, u64 bytes)
{
	struct mrpin_leak *leak, *slot = NULL;
	int i;

	spin_lock(&mrpin_leaks_lock);
	for (i = 0; i < MRPIN_LEAKS; i++) {
		leak = &mrpin_leaks[i];
		if (leak->count && uid_eq(leak->uid, proc->uid) &&
		    !strcmp(leak->comm, proc->comm)) {
			slot = leak;
			break;
		}
		/* Else the free slot, or the one left longest ago. */
		if (!slot || leak->last_ns < slot->last_ns)
			slot = leak;
	}
	if (strcmp(slot->comm, proc->comm) || !uid_eq(slot->uid, proc->uid) ||
	    !slot->count) {
		memset(slot, 0, sizeof(*slot));
		strscpy(slot->comm, proc->comm, sizeof(slot->comm));
		slot->uid = proc->uid;
	}
	slot->count++;
	slot->bytes += bytes;
	slot->last_ns = ktime_get_real_ns();
	spin_unlock(&mrpin_leaks_lock);
}

/**
 * mrpin_leaks_show() - the `leaks` table
 * @m: the seq_file
 *
 * Context: process context.
 * Return: 0, or -ENOMEM when there is no memory for a copy of the table
 * (never a table cut short).
 */
int mrpin_leaks_show(struct seq_file *m)
{
	struct mrpin_leak *leaks;
	int i;

	leaks = kmalloc_objs(*leaks, MRPIN_LEAKS);
	if (!leaks)
		return -ENOMEM;
	seq_puts(m, "# comm uid count bytes last_time_ns\n");
	spin_lock(&mrpin_leaks_lock);
	memcpy(leaks, mrpin_leaks, sizeof(mrpin_leaks));
	spin_unlock(&mrpin_leaks_lock);
	for (i = 0; i < MRPIN_LEAKS; i++) {
		if (!leaks[i].count)
			continue;
		seq_escape(m, leaks[i].comm, mrpin_escape_set);
		seq_printf(m, " %u %llu %llu %llu\n",
			   from_kuid_munged(&init_user_ns, leaks[i].uid),
			   leaks[i].count, leaks[i].bytes, leaks[i].last_ns);
	}
	kfree(leaks);
	return 0;
}
