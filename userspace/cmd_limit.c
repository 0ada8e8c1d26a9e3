// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl limit [show] | set SCOPE KEY=VALUE... | delete SCOPE | reset
 *
 * The policy, through the module's `limits` file.  `limit show` prints it
 * in the grammar it is written in (see config.c), so that its output saved
 * to a file is a valid config for `mrpinctl apply`.  Every change is
 * checked here first, then written in one write(): one transaction.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrpinctl.h"

static const struct column limit_cols[] = {
	{ .key = "rule", .title = "RULE", .flags = COL_LEFT },
	{ .key = "max_pinned", .title = "MAX_PINNED", .flags = COL_LEFT },
	{ .key = "max_pins", .title = "MAX_PINS", .flags = COL_LEFT },
	{ .key = "max_pin_size", .title = "MAX_PIN_SIZE", .flags = COL_LEFT },
	{ .key = "action", .title = "ACTION", .flags = COL_LEFT },
	{ .key = "count", .title = "COUNT", .flags = COL_LEFT },
	{ .key = "stack", .title = "STACK", .flags = COL_LEFT },
	{ .key = "oversize", .title = "OVERSIZE", .flags = COL_LEFT },
	{ .key = "mr_table_warn", .title = "MR_TABLE_WARN", .flags = COL_LEFT },
	{ .key = "callsites", .title = "CALLSITES", .flags = COL_LEFT },
	{ .key = "log_failures", .title = "LOG_FAILURES", .flags = COL_LEFT },
	{ .key = "extra", .title = "EXTRA", .flags = COL_LEFT },
};

static void print_rule(const struct rule *r, uint64_t ram)
{
	int k;

	out_item_begin();
	print_rule_scope("rule", r);
	for (k = 0; k < NR_KEYS; k++)
		print_rule_key(r, k, ram);
	print_rule_extra("extra", r);
	out_item_end();
}

static int limit_show(int argc, char **argv)
{
	struct stats s = { 0 };
	struct policy p;
	size_t i;
	int ret;

	ret = options_only("limit show", 0);
	if (!ret)
		ret = kwargs_parse("limit show", NULL, 0, argc, argv);
	/* JSON gives N% of RAM in bytes too: the RAM is in stats. */
	if (!ret && opts.json)
		ret = load_stats(&s);
	if (!ret)
		ret = policy_load(&p);
	if (ret)
		return ret;
	out_caption("# mrpin limits (mrpinctl limit show): 'mrpinctl apply FILE' restores them");
	out_caption("reset");
	out_list_begin(NULL, limit_cols, ARRAY_SIZE(limit_cols));
	out_list_plain();
	print_rule(&p.global, s.ram_bytes);
	print_rule(&p.process, s.ram_bytes);
	for (i = 0; i < p.nrules; i++)
		print_rule(&p.rules[i], s.ram_bytes);
	out_list_end();
	policy_free(&p);
	return EXIT_OK;
}

/* --- writing --- */

/*
 * The module's reason for refusing a write: the line it logged,
 * "mrpin: limits: line N: REASON", read from /dev/kmsg after @kmsg's
 * position.  Returns N (0 when not found).
 */
static unsigned int kmsg_reason(int kmsg, char *why, size_t len)
{
	char rec[1024], *msg, *p;
	unsigned int line = 0;
	ssize_t n;

	while (kmsg >= 0 && (n = read(kmsg, rec, sizeof(rec) - 1)) > 0) {
		rec[n] = '\0';
		msg = strchr(rec, ';');
		if (!msg || strncmp(msg + 1, "mrpin: limits: line ", 20))
			continue;
		line = (unsigned int)strtoul(msg + 21, &p, 10);
		if (strncmp(p, ": ", 2))
			continue;
		snprintf(why, len, "%.*s", (int)strcspn(p + 2, "\n"), p + 2);
	}
	return line;
}

static int write_failed(int err, int kmsg, const char *path,
			const char *const *origin, size_t nlines)
{
	unsigned int line;
	char why[512];

	if (err != EINVAL)
		return limits_refused(path, err, true);
	line = kmsg_reason(kmsg, why, sizeof(why));
	if (line && line <= nlines)
		pr_err("%s: the module refused the rule: %s; nothing was applied",
		       origin[line - 1], why);
	else
		pr_err("the module refused the policy (%s); nothing was applied: see 'dmesg | grep mrpin'",
		       strerror(err));
	return EXIT_USAGE;
}

/*
 * Write a transaction to `limits` in one write(); @origin[i] names where
 * line i + 1 came from, to name it if the module refuses it.
 */
int limits_write(const char *text, size_t len, const char *const *origin)
{
	char *path = limits_path();
	size_t nlines = 0, i;
	int fd, kmsg, ret = 0;
	ssize_t n;

	for (i = 0; i < len; i++)
		nlines += text[i] == '\n';
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		ret = debugfs_check() ? EXIT_FAIL :
		      write_failed(err, -1, path, origin, nlines);
		free(path);
		return ret;
	}
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg >= 0)
		lseek(kmsg, 0, SEEK_END);
	n = write(fd, text, len);
	if (n < 0)
		ret = write_failed(errno, kmsg, path, origin, nlines);
	else if ((size_t)n != len)
		pr_err("writing %s: short write (%zd of %zu bytes)", path, n,
		       len);
	if (n >= 0 && (size_t)n != len)
		ret = EXIT_FAIL;
	if (close(fd) && !ret) {
		pr_err("writing %s: %s", path, strerror(errno));
		ret = EXIT_FAIL;
	}
	if (kmsg >= 0)
		close(kmsg);
	free(path);
	return ret;
}

/* Check one rule given as words, against the current policy; write it. */
static int limit_apply(const char *cmd, char **words, int n)
{
	struct cfg_err e;
	struct policy p;
	struct txn t;
	struct rule r;
	int ret;

	ret = policy_load(&p);
	if (ret)
		return ret;
	if (rule_parse(words, n, &r, &e) || rule_check_cgroup(&r, &e) ||
	    policy_apply(&p, &r, &e)) {
		ret = usage_err("%s: %s", cmd, e.msg);
		goto out;
	}
	txn_init(&t);
	ret = txn_add_rule(&t, &r, cmd);
	if (!ret)
		ret = limits_write(t.text, t.len, (const char *const *)t.origin);
	txn_free(&t);
out:
	policy_free(&p);
	return ret;
}

static bool has_word(int argc, char **argv, const char *word)
{
	int i;

	for (i = 0; i < argc; i++)
		if (!strcmp(argv[i], word))
			return true;
	return false;
}

static int limit_set(int argc, char **argv)
{
	int ret = options_only("limit set", 0);

	if (ret)
		return ret;
	if (argc < 1)
		return usage_err("limit set: expected SCOPE KEY=VALUE... (SCOPE: global, process, uid USER, cgroup PATH)");
	if (has_word(argc, argv, "delete"))
		return usage_err("limit set: to delete a rule, use 'mrpinctl limit delete SCOPE'");
	if (!strcmp(argv[0], "reset"))
		return usage_err("limit set: to reset the policy, use 'mrpinctl limit reset'");
	return limit_apply("limit set", argv, argc);
}

static int limit_delete(int argc, char **argv)
{
	char *words[3];
	int ret = options_only("limit delete", 0);

	if (ret)
		return ret;
	if (argc < 1)
		return usage_err("limit delete: expected uid USER or cgroup PATH");
	if (argc > 2)
		return usage_err("limit delete: unexpected argument '%s'",
				 argv[2]);
	if (argc == 1 && (!strcmp(argv[0], "uid") || !strcmp(argv[0], "cgroup")))
		return usage_err("limit delete: expected %s after '%s'",
				 argv[0][0] == 'u' ? "a user name or uid" :
						     "a cgroup path", argv[0]);
	words[0] = argv[0];
	words[1] = argv[1];
	words[argc] = "delete";
	return limit_apply("limit delete", words, argc + 1);
}

static int limit_reset(int argc, char **argv)
{
	static const char *const origin[] = { "limit reset" };
	int ret = options_only("limit reset", 0);

	if (!ret)
		ret = kwargs_parse("limit reset", NULL, 0, argc, argv);
	if (!ret)
		ret = limits_write("reset\n", 6, origin);
	return ret;
}

static int limit_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl limit [show]\n"
	      "       mrpinctl limit set SCOPE KEY=VALUE...\n"
	      "       mrpinctl limit delete SCOPE\n"
	      "       mrpinctl limit reset\n"
	      "\n"
	      "SCOPE := global | process | uid USER | cgroup PATH\n"
	      "KEY   := max_pinned   bytes (K, M, G, T: binary), N% of RAM, or unlimited\n"
	      "         max_pins     live pins, or unlimited\n"
	      "         max_pin_size bytes of one pin, or unlimited\n"
	      "         action       enforce (refuse, ENOMEM) or warn (allow, log, count)\n"
	      "         count        global and process: what max_pinned counts, registered\n"
	      "                      (every registration in full, as VmPin and\n"
	      "                      RLIMIT_MEMLOCK do) or distinct (memory registered\n"
	      "                      several times once); default: global distinct,\n"
	      "                      process registered\n"
	      "global also: stack, oversize, mr_table_warn, callsites, log_failures\n"
	      "(mrpinctl(8))\n"
	      "\n"
	      "set changes only the keys it names; a new uid or cgroup rule starts\n"
	      "unlimited, enforced.  USER is a name or a uid; PATH a cgroup v2 path\n"
	      "(/jobs/job42).  global and process cannot be deleted; reset restores the\n"
	      "module's defaults and deletes every uid and cgroup rule.  'limit show'\n"
	      "prints the policy as a config for 'mrpinctl apply'.\n",
	      stdout);
	return EXIT_OK;
}

static const struct cmd limit_cmds[] = {
	{ .name = "show", .fn = limit_show },
	{ .name = "list", .fn = limit_show, .alias = true },
	{ .name = "set", .fn = limit_set },
	{ .name = "delete", .fn = limit_delete },
	{ .name = "del", .fn = limit_delete, .alias = true },
	{ .name = "reset", .fn = limit_reset },
	{ .name = "help", .fn = limit_help },
	{ .name = NULL },
};

int do_limit(int argc, char **argv)
{
	if (opts.help)
		return limit_help(0, NULL);
	return cmd_select(limit_cmds, "limit", argc, argv, limit_show);
}
