// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl pin [show] [pid N] [dev D] [min-size SIZE] [older-than DURATION]
 *
 * Every live pin: its owner, device, range, the kernel function that made
 * it and its age; in the module's order (by id: oldest first).  An
 * on-demand-paging registration (a module with the odp column) pins
 * nothing: PINNED says so, "0 B (odp)"; JSON "odp" from such a module only.
 * Nor does one of peer memory (a GPU's, registered through a peer memory
 * client; a module with the peer column): "0 B (peer)", its size in
 * LENGTH; JSON "peer" from such a module only.
 * A registration in flight (a module with the state column), charged but
 * not yet pinned, reads "(pinning)" after its bytes, its AGE the time since
 * it was charged; JSON "state" ("pinning" or "pinned") from such a module.
 */
#include <string.h>

#include "mrpinctl.h"

static const struct column pin_cols[] = {
	{ .key = "id", .title = "ID", .prio = 5 },
	{ .key = "pid", .title = "PID" },
	{ .key = "comm", .title = "COMM", .flags = COL_LEFT | COL_TRUNC, .width = 15 },
	{ .key = "device", .title = "DEVICE", .flags = COL_LEFT | COL_TRUNC, .width = 8 },
	{ .key = "start", .title = "START", .prio = 3 },
	{ .key = "length", .title = "LENGTH", .prio = 4 },
	{ .key = "pinned_bytes", .title = "PINNED" },
	{ .key = "caller", .title = "CALLER", .flags = COL_LEFT | COL_TRUNC, .prio = 2, .width = 16 },
	{ .key = "age_ms", .title = "AGE" },
};

/* Which columns the module gives, of those older modules lack. */
struct pin_known {
	bool odp;
	bool peer;
};

static void print_pin(const struct pin_row *p, const struct pin_known *k)
{
	bool pinning = p->state && !strcmp(p->state, "pinning");
	char bytes[32], text[48];

	out_item_begin();
	print_u64("id", p->id);
	print_u64("pid", p->pid);
	print_str("comm", p->comm);
	print_str("device", p->device);
	print_hex("start", p->start);
	print_bytes("length", p->length);
	if (p->odp || p->peer || pinning) {
		snprintf(text, sizeof(text), "%s (%s)",
			 fmt_bytes(bytes, sizeof(bytes), p->pinned_bytes),
			 pinning ? "pinning" : p->odp ? "odp" : "peer");
		print_num_text("pinned_bytes", p->pinned_bytes, text);
	} else {
		print_bytes("pinned_bytes", p->pinned_bytes);
	}
	print_str("caller", p->caller);
	print_ms("age_ms", p->age_ms);
	if (k->odp)
		print_bool("odp", p->odp);
	if (p->state)
		print_str("state", p->state);
	if (k->peer)
		print_bool("peer", p->peer);
	out_item_end();
}

struct pin_filter {
	uint64_t pid;
	const char *dev;
	uint64_t min_size;
	uint64_t older_ms;
};

static bool pin_match(const struct pin_row *p, const struct pin_filter *f)
{
	return (!f->pid || p->pid == f->pid) &&
	       (!f->dev || !strcmp(p->device, f->dev)) &&
	       p->pinned_bytes >= f->min_size && p->age_ms >= f->older_ms;
}

static int pin_show(int argc, char **argv)
{
	struct pin_filter f = { 0 };
	struct kwarg kw[] = {
		{ .name = "pid", .parse = parse_pid_arg, .dst = &f.pid },
		{ .name = "dev", .parse = parse_str_arg, .dst = &f.dev },
		{ .name = "min-size", .parse = parse_size_arg, .dst = &f.min_size },
		{ .name = "older-than", .parse = parse_duration_arg, .dst = &f.older_ms },
	};
	struct table t = { 0 };
	struct pin_known known;
	size_t i;
	int ret;

	ret = options_only("pin show", 0);
	if (!ret)
		ret = kwargs_parse("pin show", kw, ARRAY_SIZE(kw), argc, argv);
	if (!ret)
		ret = load_pins(&t);
	if (ret)
		goto out;
	known.odp = tbl_has(&t, "odp");
	known.peer = tbl_has(&t, "peer");
	out_list_begin(NULL, pin_cols, ARRAY_SIZE(pin_cols));
	for (i = 0; i < t.nrows; i++)
		if (pin_match(TBL_ROW(&t, struct pin_row, i), &f))
			print_pin(TBL_ROW(&t, struct pin_row, i), &known);
	out_list_end();
out:
	tbl_free(&t);
	return ret;
}

static int pin_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl pin [show] [pid N] [dev DEVICE] [min-size SIZE]\n"
	      "                    [older-than DURATION]\n"
	      "\n"
	      "Every live pin, oldest first.  SIZE: 4096, 64K, 1.5M, 2GiB (binary units),\n"
	      "compared with the pinned bytes; DURATION: 500ms, 30s, 5m, 2h, 1d (a plain\n"
	      "number is seconds).  START and LENGTH are the range as registered, PINNED the\n"
	      "pages it spans (\"0 B (odp)\": an on-demand-paging registration, which pins\n"
	      "nothing but holds an entry in the device's MR table; \"0 B (peer)\": peer\n"
	      "memory, a GPU's registered through a peer memory client, which pins no\n"
	      "host page, its size in LENGTH; \"(pinning)\": a registration charged and\n"
	      "in flight, AGE since it was charged), CALLER the kernel function that\n"
	      "asked for the pin.\n",
	      stdout);
	return EXIT_OK;
}

static const struct cmd pin_cmds[] = {
	{ .name = "show", .fn = pin_show },
	{ .name = "list", .fn = pin_show, .alias = true },
	{ .name = "help", .fn = pin_help },
	{ .name = NULL },
};

int do_pin(int argc, char **argv)
{
	if (opts.help)
		return pin_help(0, NULL);
	return cmd_select(pin_cmds, "pin", argc, argv, pin_show);
}
