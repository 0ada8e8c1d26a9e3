// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_misuse: registration mistakes that mrpin_mistakes does not make,
 * on purpose, for mrpinctl_doctor.sh.
 *
 *   mrpin_misuse [--dev NAME] stack
 *	Register 4 KiB of the main thread's stack (stack=warn allows it).
 *   mrpin_misuse [--dev NAME] nohuge SIZE
 *   mrpin_misuse [--dev NAME] huge SIZE
 *	Register SIZE bytes (K, M or G suffix) of a 2 MiB-aligned anonymous
 *	mapping, touched after madvise(MADV_NOHUGEPAGE) (4 KiB pages) or
 *	madvise(MADV_HUGEPAGE) (transparent huge pages, when there are some).
 *   mrpin_misuse [--dev NAME] churn N
 *	Register a 4 KiB anchor, then register and at once deregister a 4 KiB
 *	buffer N times: lifetimes of microseconds.
 *
 * Each prints "mr START LENGTH" (decimal) per MR it holds, then "ready",
 * waits for EOF on stdin, deregisters what it holds and exits 0.  The
 * device is NAME, else $MRPIN_TEST_DEV, else rxe0.  RLIMIT_MEMLOCK is
 * lifted when allowed.  Exit status: 0, 1 on error, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sys/mman.h>

#include "mrpin_utils.h"

#define HUGE		(2UL << 20)

#define die(what) mrpin_die("mrpin_misuse", what)

static void usage(void)
{
	fprintf(stderr,
		"Usage: mrpin_misuse [--dev NAME] stack\n"
		"       mrpin_misuse [--dev NAME] nohuge|huge SIZE\n"
		"       mrpin_misuse [--dev NAME] churn N\n");
	exit(2);
}

static size_t size_arg(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		usage();
	switch (*end) {
	case 'G':
		v <<= 10;
		/* fall through */
	case 'M':
		v <<= 10;
		/* fall through */
	case 'K':
		v <<= 10;
		end++;
	}
	if (*end || !v)
		usage();
	return v;
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *buf, size_t len)
{
	struct ibv_mr *mr;

	if (_do_reg(pd, buf, len, &mr))
		die("ibv_reg_mr");
	printf("mr %lu %zu\n", (unsigned long)(uintptr_t)buf, len);
	return mr;
}

static void dereg(struct ibv_mr *mr)
{
	if (_do_dereg(mr))
		die("ibv_dereg_mr");
}

static void hold(void)
{
	printf("ready\n");
	fflush(stdout);
	mrpin_wait_eof();
}

/* The mistake: a buffer on the stack, registered while its frame lives. */
static void stack_mode(struct ibv_pd *pd)
{
	char frame[2 * PAGE];
	char *buf = (char *)(((uintptr_t)frame + PAGE - 1) & ~(PAGE - 1));
	struct ibv_mr *mr;

	memset(frame, 0x5a, sizeof(frame));
	mr = reg(pd, buf, PAGE);
	hold();
	dereg(mr);
	__asm__ volatile("" : : "r"(frame) : "memory");
}

/* @len bytes of a 2 MiB-aligned mapping, with the huge page advice. */
static void pages_mode(struct ibv_pd *pd, size_t len, int advice)
{
	size_t map_len = len + HUGE;
	struct ibv_mr *mr;
	char *map, *buf;

	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		die("mmap");
	buf = (char *)(((uintptr_t)map + HUGE - 1) & ~(HUGE - 1));
	/* EINVAL: a kernel without THP (PREEMPT_RT), where pages are 4 KiB. */
	if (madvise(buf, len, advice) && errno != EINVAL)
		die("madvise");
	memset(buf, 0x5a, len);
	mr = reg(pd, buf, len);
	hold();
	dereg(mr);
	munmap(map, map_len);
}

static void *new_page(void)
{
	void *buf = mrpin_map_touched(PAGE);

	if (!buf)
		die("mmap");
	return buf;
}

/* The mistake: registrations that live microseconds (no cache). */
static void churn_mode(struct ibv_pd *pd, size_t n)
{
	void *anchor_buf = new_page(), *buf = new_page();
	struct ibv_mr *anchor, *mr;
	size_t i;

	anchor = reg(pd, anchor_buf, PAGE);
	for (i = 0; i < n; i++) {
		if (_do_reg(pd, buf, PAGE, &mr))
			die("ibv_reg_mr");
		dereg(mr);
	}
	hold();
	dereg(anchor);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ }
	};
	const char *dev = mrpin_dev_name(), *mode;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	size_t arg = 0;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'd')
			usage();
		dev = optarg;
	}
	if (optind >= argc)
		usage();
	mode = argv[optind++];
	if (strcmp(mode, "stack")) {
		if (optind >= argc)
			usage();
		arg = size_arg(argv[optind++]);
	}
	if (optind != argc ||
	    (strcmp(mode, "stack") && strcmp(mode, "nohuge") &&
	     strcmp(mode, "huge") && strcmp(mode, "churn")))
		usage();

	mrpin_unlimit_memlock();
	pd = mrpin_open_pd("mrpin_misuse", dev, &ctx);

	if (!strcmp(mode, "stack"))
		stack_mode(pd);
	else if (!strcmp(mode, "nohuge"))
		pages_mode(pd, arg, MADV_NOHUGEPAGE);
	else if (!strcmp(mode, "huge"))
		pages_mode(pd, arg, MADV_HUGEPAGE);
	else
		churn_mode(pd, arg);

	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
