// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl: see and limit the memory RDMA pins, through mrpin's files
 * under /sys/kernel/debug/mrpin/.
 *
 * The grammar is OBJECT COMMAND [ARGS], as in `rdma` and `bpftool`: objects
 * and commands may be abbreviated to any unique prefix, and the options may
 * come anywhere on the line.  This file parses the options, dispatches
 * through tables of commands (cmd_select()) and parses keyword arguments
 * ("pid 42 sort peak") for the objects.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "mrpinctl.h"
#include "version.h"

#define DEFAULT_DEBUGFS "/sys/kernel/debug/mrpin"

struct options opts = { .delay = 2.0 };

static int do_help(int argc, char **argv);

static const struct cmd objects[] = {
	{ .name = "status", .fn = do_status },
	{ .name = "proc", .fn = do_proc },
	{ .name = "pin", .fn = do_pin },
	{ .name = "dev", .fn = do_dev },
	{ .name = "cgroup", .fn = do_cgroup },
	{ .name = "limit", .fn = do_limit },
	{ .name = "apply", .fn = do_apply },
	{ .name = "events", .fn = do_events },
	{ .name = "top", .fn = do_top },
	{ .name = "export", .fn = do_export },
	{ .name = "doctor", .fn = do_doctor },
	{ .name = "help", .fn = do_help },
	{ .name = "stats", .fn = do_status, .alias = true },
	{ .name = "procs", .fn = do_proc, .alias = true },
	{ .name = "process", .fn = do_proc, .alias = true },
	{ .name = "pins", .fn = do_pin, .alias = true },
	{ .name = "devices", .fn = do_dev, .alias = true },
	{ .name = "device", .fn = do_dev, .alias = true },
	{ .name = "cgroups", .fn = do_cgroup, .alias = true },
	{ .name = "limits", .fn = do_limit, .alias = true },
	{ .name = "event", .fn = do_events, .alias = true },
	{ .name = NULL },
};

static void usage(FILE *f)
{
	fputs("Usage: mrpinctl [OPTIONS] OBJECT [COMMAND [ARGS]]\n"
	      "       mrpinctl help | --version\n"
	      "\n"
	      "Objects and commands (any unique prefix will do: 'mrpinctl pr so peak'):\n"
	      "  status                  pinned memory, devices, top processes, denials\n"
	      "  proc [show] [pid N] [user U] [sort pinned|pins|peak]\n"
	      "  pin [show] [pid N] [dev D] [min-size SIZE] [older-than DURATION]\n"
	      "  dev [show]\n"
	      "  cgroup [show] [PATH|ID] pinned, peak pinned bytes per cgroup subtree\n"
	      "  limit [show] | set SCOPE KEY=VALUE... | delete SCOPE | reset\n"
	      "  apply [--check] [FILE...]\n"
	      "  events [--follow]\n"
	      "  top [--delay SECONDS] [--iterations N]\n"
	      "  export prometheus [--per-process] [FILE]\n"
	      "  doctor                  registration mistakes, worst first, with advice\n"
	      "\n"
	      "Options:\n"
	      "  -j, --json             JSON output, with exact numbers (bytes, ms, ns)\n"
	      "  -p, --pretty           indented JSON (implies --json)\n"
	      "      --debugfs DIR      mrpin's directory (default: $MRPIN_DEBUGFS, else\n"
	      "                         " DEFAULT_DEBUGFS ")\n"
	      "  -h, --help             help; after an object, that object's help\n"
	      "  -V, --version          the version\n"
	      "\n"
	      "'mrpinctl OBJECT help' describes an object; see also mrpinctl(8).\n",
	      f);
}

/* help [OBJECT]: the usage, or that object's help. */
static int do_help(int argc, char **argv)
{
	if (!argc) {
		usage(stdout);
		return EXIT_OK;
	}
	opts.help = true;
	return cmd_select(objects, NULL, argc, argv, NULL);
}

/* --- dispatch --- */

/* Is @word a prefix of @name?  (An empty word is not.) */
static bool is_prefix(const char *word, const char *name)
{
	return *word && !strncmp(word, name, strlen(word));
}

/* "a, b or c": the names of @cmds that @word is a prefix of (or all). */
static void list_names(const struct cmd *cmds, const char *word, char *buf,
		       size_t len)
{
	size_t i, n = 0, count = 0, k = 0;

	for (i = 0; cmds[i].name; i++)
		count += !cmds[i].alias && (!word || is_prefix(word, cmds[i].name));
	buf[0] = '\0';
	for (i = 0; cmds[i].name && n < len; i++) {
		if (cmds[i].alias || (word && !is_prefix(word, cmds[i].name)))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      !k ? "" : k + 1 == count ? " or " : ", ",
				      cmds[i].name);
		k++;
	}
}

/* The command @word names: exactly, or as the prefix of only one. */
static const struct cmd *cmd_find(const struct cmd *cmds, const char *word,
				  bool *ambiguous)
{
	const struct cmd *found = NULL;
	size_t i;

	*ambiguous = false;
	for (i = 0; cmds[i].name; i++)
		if (!strcmp(word, cmds[i].name))
			return &cmds[i];
	for (i = 0; cmds[i].name; i++) {
		if (!is_prefix(word, cmds[i].name))
			continue;
		if (found && found->fn != cmds[i].fn)
			*ambiguous = true;
		found = &cmds[i];
	}
	return *ambiguous ? NULL : found;
}

/*
 * Run the command argv[0] of @object's table @cmds.  Without a command, or
 * when argv[0] is none (the keywords of the default command), @dflt.
 */
int cmd_select(const struct cmd *cmds, const char *object, int argc,
	       char **argv, int (*dflt)(int argc, char **argv))
{
	const struct cmd *c;
	bool ambiguous;
	char names[256];

	if (argc < 1) {
		if (dflt)
			return dflt(argc, argv);
		list_names(cmds, NULL, names, sizeof(names));
		return usage_err("%s: expected a command: %s", object, names);
	}
	c = cmd_find(cmds, argv[0], &ambiguous);
	if (c)
		return c->fn(argc - 1, argv + 1);
	if (ambiguous) {
		list_names(cmds, argv[0], names, sizeof(names));
		return usage_err("%s%s'%s' is ambiguous: %s", object ? object : "",
				 object ? ": " : "", argv[0], names);
	}
	if (dflt)
		return dflt(argc, argv);
	list_names(cmds, NULL, names, sizeof(names));
	if (!object)
		return usage_err("unknown object '%s': expected %s (see 'mrpinctl help')",
				 argv[0], names);
	return usage_err("%s: unknown command '%s': expected %s", object,
			 argv[0], names);
}

/* --- keyword arguments --- */

static void list_kwargs(const struct kwarg *kw, size_t n, char *buf,
			size_t len)
{
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 !i ? "" : i + 1 == n ? " or " : ", ",
					 kw[i].name);
}

static struct kwarg *kwarg_find(struct kwarg *kw, size_t n, const char *word,
				bool *ambiguous)
{
	struct kwarg *found = NULL;
	size_t i;

	*ambiguous = false;
	for (i = 0; i < n; i++)
		if (!strcmp(word, kw[i].name))
			return &kw[i];
	for (i = 0; i < n; i++) {
		if (!is_prefix(word, kw[i].name))
			continue;
		*ambiguous = found != NULL;
		found = &kw[i];
	}
	return *ambiguous ? NULL : found;
}

/* "NAME VALUE" pairs for command @cmd; each NAME at most once. */
int kwargs_parse(const char *cmd, struct kwarg *kw, size_t n, int argc,
		 char **argv)
{
	struct kwarg *k;
	const char *why;
	bool ambiguous;
	char names[256];
	int i;

	for (i = 0; i < argc; i += 2) {
		k = kwarg_find(kw, n, argv[i], &ambiguous);
		if (!k) {
			list_kwargs(kw, n, names, sizeof(names));
			if (!n)
				return usage_err("%s: unexpected argument '%s'",
						 cmd, argv[i]);
			return usage_err("%s: %s argument '%s': expected %s",
					 cmd, ambiguous ? "ambiguous" :
					 "unknown", argv[i], names);
		}
		if (k->seen)
			return usage_err("%s: '%s' given twice", cmd, k->name);
		if (i + 1 >= argc)
			return usage_err("%s: '%s' needs a value", cmd, k->name);
		why = k->parse(argv[i + 1], k->dst);
		if (why)
			return usage_err("%s: %s '%s': %s", cmd, k->name,
					 argv[i + 1], why);
		k->seen = true;
	}
	return 0;
}

/* Refuse the command-specific options that @cmd does not take. */
int options_only(const char *cmd, unsigned int allowed)
{
	static const struct { unsigned int opt; const char *name; } names[] = {
		{ OPT_FOLLOW, "--follow" },
		{ OPT_CHECK, "--check" },
		{ OPT_DELAY, "--delay" },
		{ OPT_ITERATIONS, "--iterations" },
		{ OPT_PER_PROCESS, "--per-process" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (opts.given & ~allowed & names[i].opt)
			return usage_err("%s does not apply to '%s'",
					 names[i].name, cmd);
	return 0;
}

/* --- options --- */

static const struct option long_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "pretty", no_argument, NULL, 'p' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "debugfs", required_argument, NULL, 'D' },
	{ "follow", no_argument, NULL, 'f' },
	{ "check", no_argument, NULL, 'c' },
	{ "delay", required_argument, NULL, 'd' },
	{ "iterations", required_argument, NULL, 'n' },
	{ "per-process", no_argument, NULL, 'P' },
	{ NULL, 0, NULL, 0 },
};

static int parse_delay(const char *arg)
{
	char *end;

	errno = 0;
	opts.delay = strtod(arg, &end);
	if (errno || end == arg || *end || !(opts.delay >= 0.1) ||
	    opts.delay > 86400)
		return usage_err("--delay '%s': expected seconds, from 0.1 to 86400",
				 arg);
	return 0;
}

static int parse_iterations(const char *arg)
{
	uint64_t v;

	if (!parse_u64_all(arg, &v) || !v || v > 1000000000)
		return usage_err("--iterations '%s': expected a positive number",
				 arg);
	opts.iterations = (unsigned long)v;
	return 0;
}

static int bad_option(char **argv, int c)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		return usage_err("option '%s' needs a value", arg);
	if (optopt && optopt != '?')
		return usage_err("unknown option '-%c' (see 'mrpinctl help')",
				 optopt);
	return usage_err("unknown option '%s' (see 'mrpinctl help')", arg);
}

static int parse_options(int argc, char **argv)
{
	const char *env = getenv("MRPIN_DEBUGFS");
	int c, ret = 0;

	opts.debugfs = env && *env ? env : DEFAULT_DEBUGFS;
	opterr = 0;
	while (!ret &&
	       (c = getopt_long(argc, argv, ":jphVfd:n:", long_options,
				NULL)) != -1) {
		switch (c) {
		case 'j':
			opts.json = true;
			break;
		case 'p':
			opts.json = opts.pretty = true;
			break;
		case 'h':
			opts.help = true;
			break;
		case 'V':
			printf("mrpinctl %s\n", MRPIN_VERSION);
			exit(EXIT_OK);
		case 'D':
			opts.debugfs = optarg;
			break;
		case 'f':
			opts.given |= OPT_FOLLOW;
			break;
		case 'c':
			opts.given |= OPT_CHECK;
			break;
		case 'd':
			opts.given |= OPT_DELAY;
			ret = parse_delay(optarg);
			break;
		case 'n':
			opts.given |= OPT_ITERATIONS;
			ret = parse_iterations(optarg);
			break;
		case 'P':
			opts.given |= OPT_PER_PROCESS;
			break;
		default:
			ret = bad_option(argv, c);
		}
	}
	if (!ret && !*opts.debugfs)
		ret = usage_err("--debugfs: expected a directory");
	opts.debugfs_default = !strcmp(opts.debugfs, DEFAULT_DEBUGFS);
	return ret;
}

int main(int argc, char **argv)
{
	int ret;

	ret = parse_options(argc, argv);
	if (ret)
		return ret;
	argc -= optind;
	argv += optind;
	out_init(opts.json, opts.pretty);
	if (opts.help && !argc) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	ret = cmd_select(objects, NULL, argc, argv, NULL);
	if (fflush(stdout) || ferror(stdout)) {
		pr_err("writing the output: %s", strerror(errno));
		return ret > EXIT_FAIL ? ret : EXIT_FAIL;
	}
	return ret;
}
