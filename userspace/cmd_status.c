// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl status
 *
 * One screen: what is pinned (and, from modules that count it, the distinct
 * memory that is: what is registered several times counts once) against RAM
 * and the global limit, the pins (with the on-demand-paging and the peer
 * memory registrations among them, which pin no host page), the peer
 * memory registered (a GPU's, apart from the host's), the devices and their
 * MR tables, the processes that pin the most, and the denials, failures
 * (when the module counts them) and warnings so far.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrpinctl.h"

#define TOP_PROCS 5

static const struct column status_fields[] = {
	{ .key = "version", .title = "mrpin" },
	{ .key = "pinned_bytes", .title = "Pinned" },
	{ .key = "peer_bytes", .title = "Peer memory" },
	{ .key = "ram_bytes", .title = "RAM" },
	{ .key = "ram_percent", .title = "Pinned of RAM" },
	{ .key = "global_max_pinned", .title = "Global limit" },
	{ .key = "global_limit_percent", .title = "Limit used" },
	{ .key = "pins", .title = "Pins" },
	{ .key = "peak_pinned_bytes", .title = "Peak pinned" },
	{ .key = "denials_total", .title = "Denials" },
	{ .key = "failures_total", .title = "Failures" },
	{ .key = "warnings_total", .title = "Warnings" },
};

struct status {
	char version[32];
	struct stats stats;
	struct table devs;
	struct table procs;
	struct policy policy;
};

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : NAN;
}

/* ", count=distinct": what the global limit counts, when the module says. */
static void count_text(const struct rule *g, char *buf, size_t len)
{
	char val[32];

	*buf = '\0';
	if (!(g->set & (1U << K_COUNT)))
		return;
	rule_value(g, K_COUNT, val, sizeof(val));
	snprintf(buf, len, ", count=%s", val);
}

/* The global limit, when the policy could be read. */
static void print_global_limit(const struct status *s)
{
	const struct rule *g = &s->policy.global;
	const char *action = g->val[K_ACTION] ? "warn" : "enforce";
	char bytes[32], count[48], text[128], val[32];
	uint64_t max;
	bool known;

	if (!s->policy.known)
		return;
	known = rule_max_pinned(g, s->stats.ram_bytes, &max);
	count_text(g, count, sizeof(count));
	if (!known)
		snprintf(text, sizeof(text), "%u%% of RAM (not known), %s%s",
			 g->pct, action, count);
	else if (max == UNLIMITED)
		snprintf(text, sizeof(text), "unlimited");
	else if (g->is_pct)
		snprintf(text, sizeof(text), "%s (%u%% of RAM), %s%s",
			 fmt_bytes(bytes, sizeof(bytes), max), g->pct, action,
			 count);
	else
		snprintf(text, sizeof(text), "%s, %s%s",
			 fmt_bytes(bytes, sizeof(bytes), max), action, count);
	if (known)
		print_num_text("global_max_pinned", max, text);
	else
		print_str("global_max_pinned", text);
	print_count_limit("global_max_pinned_percent",
			  g->is_pct ? g->pct : UNLIMITED);
	print_str("global_action", action);
	if (g->set & (1U << K_COUNT)) {
		rule_value(g, K_COUNT, val, sizeof(val));
		print_str("global_count", val);
	}
	if (known && max != UNLIMITED)
		print_percent("global_limit_percent",
			      percent(rule_usage(g, &s->stats), max));
}

/*
 * " (2 ODP, 4 peer)": the registrations among the pins that pin no host
 * page, when there are some; else "".
 */
static void no_host_text(const struct stats *st, char *buf, size_t len)
{
	char odp[32] = "", peer[32] = "";

	if (st->odp_pins)
		snprintf(odp, sizeof(odp), "%llu ODP",
			 (unsigned long long)st->odp_pins);
	if (st->peer_pins)
		snprintf(peer, sizeof(peer), "%llu peer",
			 (unsigned long long)st->peer_pins);
	if (*odp || *peer)
		snprintf(buf, len, " (%s%s%s)", odp, *odp && *peer ? ", " : "",
			 peer);
	else
		*buf = '\0';
}

/*
 * "80.0 GiB in 16 registrations, 10.0 GiB distinct" when the module counts
 * the distinct bytes (JSON: "distinct_bytes" too), with "(2 ODP, 4 peer)"
 * after the registrations when some are on-demand-paging or peer memory
 * ones, which pin no host page (JSON: "odp_pins" and "peer_pins", from a
 * module that records them); else the bytes.
 */
static void print_pinned(const struct stats *st)
{
	char pinned[32], distinct[32], kinds[64], text[160];
	int len;

	if (!st->distinct_known && !st->odp_pins && !st->peer_pins) {
		print_bytes("pinned_bytes", st->pinned_bytes);
		return;
	}
	no_host_text(st, kinds, sizeof(kinds));
	len = snprintf(text, sizeof(text), "%s in %llu registration%s%s",
		       fmt_bytes(pinned, sizeof(pinned), st->pinned_bytes),
		       (unsigned long long)st->pins, st->pins == 1 ? "" : "s",
		       kinds);
	if (st->distinct_known)
		snprintf(text + len, sizeof(text) - (size_t)len,
			 ", %s distinct",
			 fmt_bytes(distinct, sizeof(distinct),
				   st->distinct_bytes));
	print_num_text("pinned_bytes", st->pinned_bytes, text);
	if (st->distinct_known)
		print_bytes("distinct_bytes", st->distinct_bytes);
}

/*
 * The peer memory (a GPU's, registered through a peer memory client),
 * apart from the host's: "32.0 GiB in 4 registrations (device memory, no
 * host page)" when there is some; JSON "peer_bytes" from a module that
 * counts it, 0 too.
 */
static void print_peer(const struct stats *st)
{
	char bytes[32], text[128];

	if (!st->peer_bytes_known ||
	    (!opts.json && !st->peer_bytes && !st->peer_pins))
		return;
	fmt_bytes(bytes, sizeof(bytes), st->peer_bytes);
	if (st->peer_known)
		snprintf(text, sizeof(text),
			 "%s in %llu registration%s (device memory, no host page)",
			 bytes, (unsigned long long)st->peer_pins,
			 st->peer_pins == 1 ? "" : "s");
	else
		snprintf(text, sizeof(text),
			 "%s (device memory, no host page)", bytes);
	print_num_text("peer_bytes", st->peer_bytes, text);
}

static void print_status(struct status *s)
{
	char text[64];

	out_obj_begin(NULL, status_fields, ARRAY_SIZE(status_fields));
	print_str("version", s->version);
	print_pinned(&s->stats);
	print_peer(&s->stats);
	if (s->stats.ram_bytes) {
		print_bytes("ram_bytes", s->stats.ram_bytes);
		print_percent("ram_percent", percent(stats_ram_pinned(&s->stats),
						     s->stats.ram_bytes));
	}
	print_global_limit(s);
	print_u64("pins", s->stats.pins);
	if (s->stats.odp_known)
		print_u64("odp_pins", s->stats.odp_pins);
	if (s->stats.peer_known)
		print_u64("peer_pins", s->stats.peer_pins);
	print_bytes("peak_pinned_bytes", s->stats.peak_pinned_bytes);
	print_u64("denials_total", s->stats.denials_total);
	if (s->stats.failures_known)
		print_u64("failures_total", s->stats.failures_total);
	print_u64("warnings_total", s->stats.warnings_total);
	out_gap();
	print_devs("devices", &s->devs);
	out_gap();
	procs_sort(&s->procs, SORT_PINNED);
	print_procs("top_procs", &s->procs, TOP_PROCS);
	if (s->procs.nrows > TOP_PROCS) {
		snprintf(text, sizeof(text), "(%zu more: mrpinctl proc)",
			 s->procs.nrows - TOP_PROCS);
		out_caption(text);
	}
	out_obj_end();
}

static int status_load(struct status *s)
{
	int ret;

	ret = load_version(s->version, sizeof(s->version));
	if (!ret)
		ret = load_stats(&s->stats);
	if (!ret)
		ret = load_devs(&s->devs);
	if (!ret)
		ret = load_procs(&s->procs);
	/* Without the policy (refused: said why), the rest. */
	if (!ret && policy_load(&s->policy))
		policy_init(&s->policy);
	return ret;
}

static int status_show(int argc, char **argv)
{
	struct status s;
	int ret;

	memset(&s, 0, sizeof(s));
	policy_init(&s.policy);
	ret = options_only("status", 0);
	if (!ret)
		ret = kwargs_parse("status", NULL, 0, argc, argv);
	if (!ret)
		ret = status_load(&s);
	if (!ret)
		print_status(&s);
	tbl_free(&s.devs);
	tbl_free(&s.procs);
	policy_free(&s.policy);
	return ret;
}

static int status_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl status\n"
	      "\n"
	      "One screen: the bytes pinned (every registration in full, and the\n"
	      "distinct bytes: memory registered several times once), against RAM and\n"
	      "the global limit (what it counts: count=); the pins (ODP: the\n"
	      "on-demand-paging registrations among them, which pin nothing; peer:\n"
	      "those of peer memory, a GPU's, which pin no host page); the peer\n"
	      "memory registered, apart from the host's; the devices and their MR\n"
	      "tables; the processes that pin the most; the denials (mrpin's\n"
	      "refusals), failures (the kernel's) and warnings so far (see 'mrpinctl\n"
	      "events').\n",
	      stdout);
	return EXIT_OK;
}

int do_status(int argc, char **argv)
{
	static const struct cmd status_cmds[] = {
		{ .name = "show", .fn = status_show, .alias = true },
		{ .name = "help", .fn = status_help },
		{ .name = NULL },
	};

	if (opts.help)
		return status_help(0, NULL);
	return cmd_select(status_cmds, "status", argc, argv, status_show);
}
