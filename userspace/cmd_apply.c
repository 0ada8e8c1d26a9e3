// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl apply [--check] [FILE...]
 *
 * Apply policy files: the grammar of the module's `limits` file, plus
 * comments, blank lines and user names (config.c).  Without FILE:
 * SYSCONFDIR/mrpin.conf, then the files SYSCONFDIR/mrpin.d/NAME.conf in
 * name order; a later line overrides the keys an earlier one set, as with
 * sysctl.d.
 * Every line of every file is checked first; then the whole is written in
 * one write(), one transaction: nothing is applied if anything is wrong.
 */
#include <fcntl.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrpinctl.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define MAIN_CONF SYSCONFDIR "/mrpin.conf"
#define CONF_GLOB SYSCONFDIR "/mrpin.d/*.conf"

/* The default files: mrpin.conf if there is one, then mrpin.d's. */
static int add_default_files(struct txn *t, struct policy *p, size_t *nfiles)
{
	glob_t g;
	size_t i;
	int ret = 0;

	if (!access(MAIN_CONF, F_OK)) {
		ret |= txn_add_file(t, p, MAIN_CONF);
		(*nfiles)++;
	}
	if (glob(CONF_GLOB, 0, NULL, &g))
		return ret;
	for (i = 0; i < g.gl_pathc; i++)
		ret |= txn_add_file(t, p, g.gl_pathv[i]);
	*nfiles += g.gl_pathc;
	globfree(&g);
	return ret;
}

/*
 * The module's policy, to check the files against (rules to delete must
 * exist).  With --check, the files are checked alone when the module's
 * policy cannot be read (no module, not root).
 */
static int apply_policy(struct policy *p, bool check)
{
	char *path = limits_path();
	int ret = 0, fd = -1;

	policy_init(p);
	/* An open, not access(): lockdown refuses debugfs' at open time. */
	if (check)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!check || fd >= 0)
		ret = policy_load(p);
	if (fd >= 0)
		close(fd);
	free(path);
	return ret;
}

static int apply_files(int argc, char **argv, bool check)
{
	size_t nfiles = 0;
	struct policy p;
	struct txn t;
	int i, ret;

	ret = apply_policy(&p, check);
	if (ret)
		return ret;
	txn_init(&t);
	for (i = 0; i < argc; i++)
		txn_add_file(&t, &p, argv[i]);
	nfiles = (size_t)argc;
	if (!argc)
		add_default_files(&t, &p, &nfiles);
	if (t.nerrors) {
		pr_err("%zu problem%s found: nothing applied", t.nerrors,
		       t.nerrors > 1 ? "s" : "");
		ret = EXIT_USAGE;
	} else if (t.len > LIMITS_WRITE_MAX) {
		ret = usage_err("the policy takes %zu bytes, more than the %d the module takes in one write: nothing applied",
				t.len, LIMITS_WRITE_MAX);
	} else if (!nfiles) {
		pr_err("no policy file (%s, %s): nothing to apply", MAIN_CONF,
		       CONF_GLOB);
	} else if (check) {
		printf("%zu file%s, %zu rule%s: OK\n", nfiles,
		       nfiles > 1 ? "s" : "", t.nlines,
		       t.nlines == 1 ? "" : "s");
	} else if (t.len) {
		ret = limits_write(t.text, t.len, (const char *const *)t.origin);
	}
	txn_free(&t);
	policy_free(&p);
	return ret;
}

static int apply(int argc, char **argv)
{
	int ret = options_only("apply", OPT_CHECK);

	if (ret)
		return ret;
	return apply_files(argc, argv, opts.given & OPT_CHECK);
}

static int apply_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl apply [--check] [FILE...]\n"
	      "\n"
	      "Apply policy files (FILE '-': standard input).  Without FILE:\n"
	      MAIN_CONF ", then " CONF_GLOB " in name order.\n"
	      "A file holds rules as 'mrpinctl limit show' prints them, one a line:\n"
	      "\n"
	      "    reset                        # start from the module's defaults\n"
	      "    global max_pinned=50%\n"
	      "    process max_pinned=64G max_pins=100000\n"
	      "    uid alice max_pinned=8G action=warn\n"
	      "    cgroup /jobs/job42 max_pinned=16G\n"
	      "    uid 1001 delete\n"
	      "\n"
	      "Later lines override the keys earlier ones set.  Every line is checked\n"
	      "first, then all are applied in one transaction: nothing is applied if\n"
	      "any line is wrong.  --check only checks.\n",
	      stdout);
	return EXIT_OK;
}

int do_apply(int argc, char **argv)
{
	if (opts.help)
		return apply_help(0, NULL);
	if (argc == 1 && !strcmp(argv[0], "help"))
		return apply_help(0, NULL);
	return apply(argc, argv);
}
