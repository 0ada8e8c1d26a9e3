// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl dev [show]
 *
 * The RDMA devices mrpin follows, their pins and their MR table use, and
 * the peer memory (a GPU's) registered on them, when some is.
 */
#include <math.h>

#include "mrpinctl.h"

static const struct column dev_cols[] = {
	{ .key = "device", .title = "DEVICE", .flags = COL_LEFT | COL_TRUNC, .width = 8 },
	{ .key = "node_guid", .title = "NODE_GUID", .flags = COL_LEFT, .prio = 2 },
	{ .key = "pins", .title = "PINS" },
	{ .key = "max_mr", .title = "MAX_MR", .prio = 1 },
	{ .key = "mr_use_percent", .title = "MR_USE" },
	{ .key = "pinned_bytes", .title = "PINNED" },
	{ .key = "peer_bytes", .title = "PEER" },
};

/* @peer: the module gives the peer bytes (else none). */
static void print_dev(const struct dev_row *d, bool peer)
{
	out_item_begin();
	print_str("device", d->device);
	print_str("node_guid", d->node_guid);
	print_u64("pins", d->pins);
	print_u64("max_mr", d->max_mr);
	print_percent("mr_use_percent",
		      d->max_mr ? 100.0 * (double)d->pins / (double)d->max_mr :
				  NAN);
	print_bytes("pinned_bytes", d->pinned_bytes);
	if (peer)
		print_bytes("peer_bytes", d->peer_bytes);
	out_item_end();
}

/*
 * The devices of @t as list @key: PEER only when a device has peer memory
 * registered, so that a machine without any has the list it had; JSON
 * "peer_bytes" from a module that gives them.
 */
void print_devs(const char *key, struct table *t)
{
	bool peer = tbl_has(t, "peer_bytes"), shown = false;
	size_t i, n = ARRAY_SIZE(dev_cols);

	for (i = 0; peer && i < t->nrows; i++)
		shown |= TBL_ROW(t, struct dev_row, i)->peer_bytes != 0;
	if (!shown)
		n--;	/* PEER is the last column */
	out_list_begin(key, dev_cols, n);
	for (i = 0; i < t->nrows; i++)
		print_dev(TBL_ROW(t, struct dev_row, i), peer);
	out_list_end();
}

static int dev_show(int argc, char **argv)
{
	struct table t = { 0 };
	int ret;

	ret = options_only("dev show", 0);
	if (!ret)
		ret = kwargs_parse("dev show", NULL, 0, argc, argv);
	if (!ret)
		ret = load_devs(&t);
	if (!ret)
		print_devs(NULL, &t);
	tbl_free(&t);
	return ret;
}

static int dev_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl dev [show]\n"
	      "\n"
	      "The RDMA devices mrpin follows: PINS live pins (MRs, and the CQ and QP\n"
	      "buffers some drivers pin), MAX_MR the device's MR table size, MR_USE the\n"
	      "share of it the pins take, PINNED the bytes they pin, PEER the peer\n"
	      "memory registered on the device (a GPU's, through a peer memory client:\n"
	      "no host page, not in PINNED; shown when a device has some).\n",
	      stdout);
	return EXIT_OK;
}

static const struct cmd dev_cmds[] = {
	{ .name = "show", .fn = dev_show },
	{ .name = "list", .fn = dev_show, .alias = true },
	{ .name = "help", .fn = dev_help },
	{ .name = NULL },
};

int do_dev(int argc, char **argv)
{
	if (opts.help)
		return dev_help(0, NULL);
	return cmd_select(dev_cmds, "dev", argc, argv, dev_show);
}
