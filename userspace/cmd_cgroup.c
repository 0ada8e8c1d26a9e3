// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl cgroup [show] [PATH|ID]
 *
 * The cgroups (v2) the module keeps a record of, each with its subtree's
 * pins, pinned bytes and peak pinned bytes: those with pins, and those a
 * cgroup rule names, kept with their peak after their last pin and after
 * the cgroup is removed ("-"), until the rule is deleted.  Sorted by path,
 * removed cgroups last (by id).  With PATH (or a cgroup's id, the number
 * its row shows, which names a removed cgroup too) that cgroup's row only;
 * none is a runtime failure, said on stderr.
 */
#include <stdlib.h>
#include <string.h>

#include "mrpinctl.h"

static const struct column cgroup_cols[] = {
	{ .key = "id", .title = "ID", .prio = 1 },
	{ .key = "cgroup", .title = "CGROUP", .flags = COL_LEFT | COL_TRUNC_TAIL, .width = 20 },
	{ .key = "pins", .title = "PINS" },
	{ .key = "pinned_bytes", .title = "PINNED" },
	{ .key = "peak_pinned_bytes", .title = "PEAK" },
};

/* @peak: the module gives it (else "-", and none in JSON). */
static void print_cgroup(const struct cgroup_row *c, bool peak)
{
	out_item_begin();
	print_u64("id", c->id);
	print_str("cgroup", c->cgroup);
	print_u64("pins", c->pins);
	print_bytes("pinned_bytes", c->pinned_bytes);
	if (peak)
		print_bytes("peak_pinned_bytes", c->peak_pinned_bytes);
	out_item_end();
}

/* Paths in order, "-" (removed cgroups) after them by id. */
static int cgroup_cmp(const void *a, const void *b)
{
	const struct cgroup_row *x = a, *y = b;
	bool xgone = !strcmp(x->cgroup, "-"), ygone = !strcmp(y->cgroup, "-");
	int cmp;

	if (xgone != ygone)
		return xgone ? 1 : -1;
	cmp = xgone ? 0 : strcmp(x->cgroup, y->cgroup);
	if (cmp)
		return cmp;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * What to show: @path normalised into *@want (no repeated or trailing
 * '/'), or a cgroup id into *@id (*@by_id set).
 */
static int parse_target(const char *arg, char **want, uint64_t *id,
			bool *by_id)
{
	char *d;

	if (arg[0] != '/') {
		if (!parse_u64_all(arg, id))
			return usage_err("cgroup show: '%s': expected a cgroup path starting with '/' or a cgroup id",
					 arg);
		*by_id = true;
		return 0;
	}
	*want = d = xstrdup(arg);
	for (; *arg; arg++)
		if (*arg != '/' || d == *want || d[-1] != '/')
			*d++ = *arg;
	if (d > *want + 1 && d[-1] == '/')
		d--;
	*d = '\0';
	return 0;
}

static int cgroup_show(int argc, char **argv)
{
	struct table t = { 0 };
	char *want = NULL;
	bool by_id = false;
	uint64_t id = 0;
	size_t i, n = 0;
	int ret;

	ret = options_only("cgroup show", 0);
	if (!ret && argc > 1)
		ret = usage_err("cgroup show: unexpected argument '%s'", argv[1]);
	if (!ret && argc == 1)
		ret = parse_target(argv[0], &want, &id, &by_id);
	if (!ret)
		ret = load_cgroups(&t);
	if (ret)
		goto out;
	for (i = 0; i < t.nrows; i++) {
		struct cgroup_row *c = TBL_ROW(&t, struct cgroup_row, i);

		if ((by_id && c->id != id) || (want && strcmp(c->cgroup, want)))
			continue;
		*TBL_ROW(&t, struct cgroup_row, n++) = *c;
	}
	t.nrows = n;
	if (!n && by_id) {
		pr_err("no cgroup with id %llu in %s: nothing is pinned in its subtree and no cgroup rule names it",
		       (unsigned long long)id, t.path);
		ret = EXIT_FAIL;
		goto out;
	}
	if (!n && want) {
		pr_err("no cgroup %s in %s: nothing is pinned in its subtree and no cgroup rule names it, or it was removed (a removed cgroup's row reads '-': name it by its id)",
		       want, t.path);
		ret = EXIT_FAIL;
		goto out;
	}
	qsort(t.rows, t.nrows, sizeof(struct cgroup_row), cgroup_cmp);
	out_list_begin(NULL, cgroup_cols, ARRAY_SIZE(cgroup_cols));
	for (i = 0; i < t.nrows; i++)
		print_cgroup(TBL_ROW(&t, struct cgroup_row, i),
			     tbl_has(&t, "peak_pinned_bytes"));
	out_list_end();
out:
	free(want);
	tbl_free(&t);
	return ret;
}

static int cgroup_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl cgroup [show] [PATH|ID]\n"
	      "\n"
	      "The cgroups (v2) with pinned memory in their subtree, and those a cgroup\n"
	      "rule names, by path: PINS and PINNED what the subtree holds now, PEAK the\n"
	      "most it held at once (modules that keep it).  A cgroup a rule names keeps\n"
	      "its row and peak after its last pin and after it is removed (CGROUP '-'),\n"
	      "until the rule is deleted: a job's epilog reads its peak, then deletes its\n"
	      "rule.  PATH (as under /sys/fs/cgroup) or ID (the cgroup's id, which names a\n"
	      "removed cgroup too) shows that cgroup only; exit status 1 when it has no\n"
	      "row.\n",
	      stdout);
	return EXIT_OK;
}

static const struct cmd cgroup_cmds[] = {
	{ .name = "show", .fn = cgroup_show },
	{ .name = "list", .fn = cgroup_show, .alias = true },
	{ .name = "help", .fn = cgroup_help },
	{ .name = NULL },
};

int do_cgroup(int argc, char **argv)
{
	if (opts.help)
		return cgroup_help(0, NULL);
	return cmd_select(cgroup_cmds, "cgroup", argc, argv, cgroup_show);
}
