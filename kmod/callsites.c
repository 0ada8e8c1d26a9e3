// SPDX-License-Identifier: GPL-2.0
/*
 * The `callsites` view: the live pins that have a call site (callsites=on
 * when they were made; diag.c records it in mrpin_callsites), grouped by
 * process and call site, with their count, bytes and the ages of the
 * oldest and the newest: a site whose newest pin is young while its
 * oldest is old keeps registering (a leak, if its process never
 * deregisters), one whose newest is about as old as its oldest holds a
 * stable set (a registration cache).  A copy of each pin's call site is
 * taken under RCU, sorted, then counted: a diagnostic view, it walks every
 * pin, but never holds the pin path off while it prints.
 *
 * Locking: none of its own; RCU while it copies.
 */
#include <linux/mm.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "mrpin.h"

/* One live pin's call site, as copied for the `callsites` view. */
struct mrpin_site {
	pid_t pid;
	char comm[TASK_COMM_LEN];
	u64 bytes;
	u64 created_ns;
	unsigned int depth;
	unsigned long ip[MRPIN_CALLSITE_DEPTH];
};

static int mrpin_site_cmp(const void *a, const void *b)
{
	const struct mrpin_site *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(x->ip, y->ip, sizeof(x->ip));
}

/**
 * mrpin_callsites_show() - the `callsites` table
 * @m: the seq_file
 *
 * Context: process context, may sleep.
 * Return: 0, or -ENOMEM when there is no memory for the copy.
 */
int mrpin_callsites_show(struct seq_file *m)
{
	struct mrpin_site *sites, *s, *g;
	unsigned long id, n = 0, max = 0, i, j;
	u64 now, bytes, oldest, newest;
	const struct mrpin_callsite *cs;
	struct mrpin_pin *pin;
	unsigned int k;

	rcu_read_lock();
	xa_for_each(&mrpin_callsites, id, cs)
		max++;
	rcu_read_unlock();
	sites = kvmalloc_array(max + 1, sizeof(*sites), GFP_KERNEL);
	if (!sites)
		return -ENOMEM;
	rcu_read_lock();
	xa_for_each(&mrpin_pins, id, pin) {
		/* The slot's call site is this pin's, not a later one's. */
		cs = xa_load(&mrpin_callsites, id);
		if (!cs || cs->pin != pin || n > max)
			continue;
		s = &sites[n++];
		s->pid = pin->charge.proc->tgid;
		memcpy(s->comm, pin->charge.proc->comm, sizeof(s->comm));
		s->bytes = mrpin_pin_charged(pin);
		s->created_ns = pin->created_ns;
		s->depth = cs->depth;
		memcpy(s->ip, cs->ip, sizeof(s->ip));
	}
	rcu_read_unlock();
	/* After the copy: the pins it took were all made before it. */
	now = local_clock();
	sort(sites, n, sizeof(*sites), mrpin_site_cmp, NULL);

	seq_puts(m, "# pid comm pins bytes oldest_age_ms frames newest_age_ms\n");
	for (i = 0; i < n; i = j) {
		g = &sites[i];
		bytes = 0;
		oldest = g->created_ns;
		newest = g->created_ns;
		for (j = i; j < n && !mrpin_site_cmp(g, &sites[j]); j++) {
			bytes += sites[j].bytes;
			oldest = min(oldest, sites[j].created_ns);
			newest = max(newest, sites[j].created_ns);
		}
		seq_printf(m, "%d ", g->pid);
		seq_escape(m, g->comm, mrpin_escape_set);
		seq_printf(m, " %lu %llu %llu ", j - i, bytes,
			   mrpin_age_ms(oldest, now));
		for (k = 0; k < g->depth; k++)
			seq_printf(m, k ? ",0x%lx" : "0x%lx", g->ip[k]);
		seq_printf(m, " %llu\n", mrpin_age_ms(newest, now));
	}
	kvfree(sites);
	return 0;
}
