// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl proc [show] [pid N] [user U] [sort pinned|pins|peak]
 *
 * The processes (address spaces) holding pins, largest first.
 */
#include <string.h>

#include "mrpinctl.h"

static const struct column proc_cols[] = {
	{ .key = "pid", .title = "PID" },
	{ .key = "comm", .title = "COMM", .flags = COL_LEFT | COL_TRUNC, .width = 15 },
	{ .key = "user", .title = "USER", .flags = COL_LEFT | COL_TRUNC, .width = 8 },
	{ .key = "cgroup", .title = "CGROUP", .flags = COL_LEFT | COL_TRUNC_TAIL, .prio = 1, .width = 20 },
	{ .key = "pins", .title = "PINS" },
	{ .key = "pinned_bytes", .title = "PINNED" },
	{ .key = "distinct_bytes", .title = "DISTINCT", .prio = 2 },
	/* Shown only where there is peer memory: kept longer than DISTINCT. */
	{ .key = "peer_bytes", .title = "PEER", .prio = 1 },
	{ .key = "peak_bytes", .title = "PEAK", .prio = 3 },
	{ .key = "vm_pinned_bytes", .title = "VMPIN", .prio = 4 },
	{ .key = "memlock_bytes", .title = "MEMLOCK", .prio = 5 },
	{ .key = "denials", .title = "DENIALS", .prio = 2 },
	{ .key = "failures", .title = "FAILURES", .prio = 3 },
};

/* Which columns the module gives, of those older modules lack. */
struct proc_known {
	bool failures;
	bool distinct;
	bool peer;
};

/*
 * @k->failures: the module counts them (else "-", and none in JSON);
 * @k->distinct, @k->peer: the module gives the distinct bytes, the peer
 * memory's (else none).
 */
static void print_proc(const struct proc_row *p, const struct proc_known *k)
{
	out_item_begin();
	print_u64("pid", p->pid);
	print_str("comm", p->comm);
	print_user("user", p->uid);
	print_str("cgroup", p->cgroup);
	print_u64("pins", p->pins);
	print_bytes("pinned_bytes", p->pinned_bytes);
	if (k->distinct)
		print_bytes("distinct_bytes", p->distinct_bytes);
	if (k->peer)
		print_bytes("peer_bytes", p->peer_bytes);
	print_bytes("peak_bytes", p->peak_bytes);
	print_bytes("vm_pinned_bytes", p->vm_pinned_bytes);
	print_bytes_limit("memlock_bytes", p->memlock_bytes);
	print_u64("denials", p->denials);
	if (k->failures)
		print_u64("failures", p->failures);
	out_item_end();
}

/*
 * The columns of the list into @cols: all of them, but DISTINCT only when
 * the module gives it, so that an older module's list is as it was, and
 * PEER only when a process of the list holds peer memory (@peer), so that
 * a machine without any has the list it had.
 */
static size_t proc_columns(struct column *cols, bool distinct, bool peer)
{
	size_t i, n = 0;

	for (i = 0; i < ARRAY_SIZE(proc_cols); i++) {
		if ((!distinct && !strcmp(proc_cols[i].key, "distinct_bytes")) ||
		    (!peer && !strcmp(proc_cols[i].key, "peer_bytes")))
			continue;
		cols[n++] = proc_cols[i];
	}
	return n;
}

/* The first @max rows of @t (all with 0) as list @key. */
void print_procs(const char *key, struct table *t, size_t max)
{
	struct proc_known k = {
		.failures = tbl_has(t, "failures"),
		.distinct = tbl_has(t, "distinct_bytes"),
		.peer = tbl_has(t, "peer_bytes"),
	};
	struct column cols[ARRAY_SIZE(proc_cols)];
	size_t i, n = t->nrows;
	bool peer = false;

	if (max && max < n)
		n = max;
	for (i = 0; k.peer && i < n; i++)
		peer |= TBL_ROW(t, struct proc_row, i)->peer_bytes != 0;
	out_list_begin(key, cols, proc_columns(cols, k.distinct, peer));
	for (i = 0; i < n; i++)
		print_proc(TBL_ROW(t, struct proc_row, i), &k);
	out_list_end();
}

/* "sort pinned|pins|peak", or a unique prefix. */
static const char *parse_sort(const char *s, void *dst)
{
	int i, found = -1;

	for (i = 0; proc_sort_names[i]; i++) {
		if (!strcmp(s, proc_sort_names[i])) {
			found = i;
			break;
		}
		if (!strncmp(s, proc_sort_names[i], strlen(s)))
			found = found < 0 ? i : -2;
	}
	if (found < 0 || !*s)
		return "expected pinned, pins or peak";
	*(enum proc_sort *)dst = (enum proc_sort)found;
	return NULL;
}

static int proc_show(int argc, char **argv)
{
	uint64_t pid = 0, uid = 0;
	enum proc_sort sort = SORT_PINNED;
	struct kwarg kw[] = {
		{ .name = "pid", .parse = parse_pid_arg, .dst = &pid },
		{ .name = "user", .parse = parse_user_arg, .dst = &uid },
		{ .name = "sort", .parse = parse_sort, .dst = &sort },
	};
	struct table t = { 0 };
	size_t i, n = 0;
	int ret;

	ret = options_only("proc show", 0);
	if (!ret)
		ret = kwargs_parse("proc show", kw, ARRAY_SIZE(kw), argc, argv);
	if (!ret)
		ret = load_procs(&t);
	if (ret)
		goto out;
	for (i = 0; i < t.nrows; i++) {
		struct proc_row *p = TBL_ROW(&t, struct proc_row, i);

		if ((kw[0].seen && p->pid != pid) ||
		    (kw[1].seen && p->uid != uid))
			continue;
		*TBL_ROW(&t, struct proc_row, n++) = *p;
	}
	t.nrows = n;
	procs_sort(&t, sort);
	print_procs(NULL, &t, 0);
out:
	tbl_free(&t);
	return ret;
}

static int proc_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl proc [show] [pid N] [user USER] [sort pinned|pins|peak]\n"
	      "\n"
	      "The processes that hold pinned memory, the largest first (sort pinned).\n"
	      "USER is a name or a uid.  Columns: PINNED is what mrpin counts (the pages\n"
	      "the process's pins span, every registration in full, as VmPin counts),\n"
	      "DISTINCT the memory they pin (what is registered several times counts\n"
	      "once; modules that count it), PEER the peer memory it registered (a GPU's,\n"
	      "through a peer memory client: no host page, not in PINNED; shown when a\n"
	      "process has some), PEAK the highest PINNED, VMPIN the kernel's VmPin\n"
	      "(every pinner, not only RDMA; on NVIDIA OFED, peer memory too), MEMLOCK\n"
	      "its RLIMIT_MEMLOCK at its latest pin, DENIALS the pins mrpin refused it,\n"
	      "FAILURES those the kernel failed (why: mrpinctl events).\n",
	      stdout);
	return EXIT_OK;
}

static const struct cmd proc_cmds[] = {
	{ .name = "show", .fn = proc_show },
	{ .name = "list", .fn = proc_show, .alias = true },
	{ .name = "help", .fn = proc_help },
	{ .name = NULL },
};

int do_proc(int argc, char **argv)
{
	if (opts.help)
		return proc_help(0, NULL);
	return cmd_select(proc_cmds, "proc", argc, argv, proc_show);
}
