// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_mr_fill: fill a device's MR table, for mrpin's tests.
 *
 *   mrpin_mr_fill [--dev NAME] COUNT...
 *
 * Registers one 4 KiB page again and again, as a program that forgets
 * ibv_dereg_mr() does.  For each COUNT in turn it registers until it holds
 * COUNT MRs, prints "mrs N" and waits for a line on stdin; with COUNT
 * "full", until the device refuses, and then prints "refused N ERRNO"
 * (N the MRs it holds, ERRNO the refusal's errno) and waits likewise.  At
 * EOF on stdin it exits with its MRs registered: the kernel releases
 * them.
 *
 * The device is NAME, else $MRPIN_TEST_DEV, else rxe0.  RLIMIT_MEMLOCK is
 * lifted (the same page is charged to VmPin once per MR).  Exit status: 0,
 * 1 on error (a registration refused before "full"), 2 on bad usage.
 */
#define _GNU_SOURCE
#include "mrpin_utils.h"

static int wait_line(void)
{
	char line[64];

	return fgets(line, sizeof(line), stdin) ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *dev = mrpin_dev_name();
	unsigned long held = 0, want;
	struct ibv_context *ctx;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	char *end;
	void *page;
	int i = 1;

	if (argc > 2 && !strcmp(argv[1], "--dev")) {
		dev = argv[2];
		i = 3;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: mrpin_mr_fill [--dev NAME] COUNT|full...\n");
		return 2;
	}
	mrpin_unlimit_memlock();
	ctx = mrpin_open_dev(dev);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	page = mrpin_map_touched(PAGE);
	if (!pd || !page) {
		fprintf(stderr, "mrpin_mr_fill: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (; i < argc; i++) {
		bool full = !strcmp(argv[i], "full");

		want = full ? ULONG_MAX : strtoul(argv[i], &end, 10);
		if (!full && (*end || end == argv[i])) {
			fprintf(stderr, "mrpin_mr_fill: bad COUNT '%s'\n",
				argv[i]);
			return 2;
		}
		while (held < want) {
			mr = ibv_reg_mr(pd, page, PAGE, MRPIN_ACCESS);
			if (!mr)
				break;
			held++;
		}
		if (held < want && !full) {
			fprintf(stderr, "mrpin_mr_fill: MR %lu: %s\n", held + 1,
				strerror(errno));
			return 1;
		}
		if (full)
			printf("refused %lu %d\n", held, errno);
		else
			printf("mrs %lu\n", held);
		if (wait_line())
			break;
	}
	while (!wait_line())
		;
	return 0;
}
