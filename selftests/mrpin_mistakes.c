// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_mistakes: an RDMA program that makes the classic registration
 * mistakes on purpose, for mrpin_diag.
 *
 *   mrpin_mistakes [--dev NAME] leak-exit N
 *	Register N MRs of 4 KiB, print "ready", wait for EOF on stdin and
 *	exit with the MRs still registered: the kernel releases them.
 *   mrpin_mistakes [--dev NAME] leak-close close|dup2|close-device N
 *	Register one MR (the anchor) on a first context and N MRs on a
 *	second one, then drop the second context's command file without
 *	deregistering: close() it, dup2() /dev/null over it, or
 *	ibv_close_device() the context.  Print "closed", wait for EOF, then
 *	deregister the anchor and exit cleanly.
 *   mrpin_mistakes [--dev NAME] dereg N
 *	The right way, for comparison: register the anchor and N MRs,
 *	deregister the N, print "ready", wait for EOF, deregister the anchor.
 *   mrpin_mistakes [--dev NAME] callsites NA NB
 *	Register NA MRs from reg_site_a() and NB from reg_site_b(); print
 *	"site a ADDR" and "site b ADDR" (the functions' addresses, hex), then
 *	"ready"; wait for EOF, deregister them all.
 *   mrpin_mistakes [--dev NAME] grow MS
 *	The worker that forgot ibv_dereg_mr(): print "site a ADDR" and
 *	"ready", then register one MR from reg_site_a() every MS ms (up to
 *	GROW_MAX) until EOF, and exit with them all registered.
 *   mrpin_mistakes [--dev NAME] grow-dereg MS
 *	The same, registering two MRs every MS ms and deregistering the
 *	oldest one: it grows, but it does deregister.
 *
 * Every buffer is its own page-aligned, touched anonymous mapping.  The
 * device is NAME, else $MRPIN_TEST_DEV, else rxe0.  RLIMIT_MEMLOCK is lifted
 * when allowed.  Exit status: 0, 1 on error, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <poll.h>
#include <sys/mman.h>

#include "mrpin_utils.h"

#define MR_LEN 4096

static struct ibv_mr *volatile last_mr;

#define die(what) mrpin_die("mrpin_mistakes", what)

static void usage(void)
{
	fprintf(stderr,
		"usage: mrpin_mistakes [--dev NAME] leak-exit N\n"
		"       mrpin_mistakes [--dev NAME] leak-close close|dup2|close-device N\n"
		"       mrpin_mistakes [--dev NAME] dereg N\n"
		"       mrpin_mistakes [--dev NAME] callsites NA NB\n"
		"       mrpin_mistakes [--dev NAME] grow|grow-dereg MS\n");
	exit(2);
}

static int count_arg(const char *s)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || *end || n < 0 || n > 100000)
		usage();
	return n;
}

static void *new_buf(void)
{
	void *buf = mrpin_map_touched(MR_LEN);

	if (!buf)
		die("mmap");
	return buf;
}

/*
 * The two call sites: not inlined, with a frame pointer, and not a tail
 * call (the store after ibv_reg_mr()), so that the return address into each
 * is on the stack while ibv_reg_mr() runs.
 */
__attribute__((noinline, optimize("no-omit-frame-pointer")))
static struct ibv_mr *reg_site_a(struct ibv_pd *pd, void *buf)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, MR_LEN, MRPIN_ACCESS);

	last_mr = mr;
	return mr;
}

__attribute__((noinline, optimize("no-omit-frame-pointer")))
static struct ibv_mr *reg_site_b(struct ibv_pd *pd, void *buf)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, MR_LEN, MRPIN_ACCESS);

	last_mr = mr;
	return mr;
}

static struct ibv_mr *reg(struct ibv_pd *pd)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, new_buf(), MR_LEN, MRPIN_ACCESS);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

static void dereg(struct ibv_mr *mr)
{
	void *buf = mr->addr;

	if (_do_dereg(mr))
		die("ibv_dereg_mr");
	munmap(buf, MR_LEN);
}

static void say(const char *line)
{
	printf("%s\n", line);
	fflush(stdout);
}

#define GROW_MAX 20000

/* The modes grow and grow-dereg: a registration every @ms ms until EOF. */
static void grow(struct ibv_pd *pd, int ms, bool deregisters)
{
	static struct ibv_mr *mrs[GROW_MAX];
	struct pollfd in = { .fd = STDIN_FILENO, .events = POLLIN };
	int n = 0, first = 0, k;

	printf("site a %#lx\n", (unsigned long)(uintptr_t)reg_site_a);
	say("ready");
	while (!poll(&in, 1, ms)) {
		for (k = 0; k < 1 + deregisters && n < GROW_MAX; k++) {
			mrs[n] = reg_site_a(pd, new_buf());
			if (!mrs[n++])
				die("ibv_reg_mr");
		}
		if (deregisters && first < n - 1)
			dereg(mrs[first++]);
	}
	exit(0);	/* the mistake: the rest is left registered */
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ }
	};
	const char *dev = mrpin_dev_name(), *mode, *how = NULL;
	struct ibv_context *ctx, *ctx2;
	struct ibv_mr **mrs, *anchor;
	struct ibv_pd *pd, *pd2;
	int n, nb = 0, i, c, fd;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'd')
			usage();
		dev = optarg;
	}
	if (optind >= argc)
		usage();
	mode = argv[optind++];
	if (!strcmp(mode, "leak-close")) {
		if (optind >= argc)
			usage();
		how = argv[optind++];
		if (strcmp(how, "close") && strcmp(how, "dup2") &&
		    strcmp(how, "close-device"))
			usage();
	}
	if (optind >= argc)
		usage();
	n = count_arg(argv[optind++]);
	if (!strcmp(mode, "callsites")) {
		if (optind >= argc)
			usage();
		nb = count_arg(argv[optind++]);
	} else if (strcmp(mode, "leak-exit") && strcmp(mode, "leak-close") &&
		   strcmp(mode, "dereg") && strcmp(mode, "grow") &&
		   strcmp(mode, "grow-dereg")) {
		usage();
	}
	if (optind != argc)
		usage();
	mrs = calloc(n + nb + 1, sizeof(*mrs));
	if (!mrs)
		die("calloc");

	mrpin_unlimit_memlock();
	pd = mrpin_open_pd("mrpin_mistakes", dev, &ctx);

	if (!strncmp(mode, "grow", 4))
		grow(pd, n, !strcmp(mode, "grow-dereg"));

	if (!strcmp(mode, "leak-exit")) {
		for (i = 0; i < n; i++)
			mrs[i] = reg(pd);
		say("ready");
		mrpin_wait_eof();
		exit(0);	/* the mistake: nothing deregistered */
	}

	if (!strcmp(mode, "callsites")) {
		printf("site a %#lx\nsite b %#lx\n",
		       (unsigned long)(uintptr_t)reg_site_a,
		       (unsigned long)(uintptr_t)reg_site_b);
		for (i = 0; i < n + nb; i++) {
			mrs[i] = i < n ? reg_site_a(pd, new_buf()) :
					 reg_site_b(pd, new_buf());
			if (!mrs[i])
				die("ibv_reg_mr");
		}
		say("ready");
		mrpin_wait_eof();
		for (i = 0; i < n + nb; i++)
			dereg(mrs[i]);
		goto out;
	}

	anchor = reg(pd);
	if (!strcmp(mode, "dereg")) {
		for (i = 0; i < n; i++)
			mrs[i] = reg(pd);
		for (i = 0; i < n; i++)
			dereg(mrs[i]);
		say("ready");
	} else {
		pd2 = mrpin_open_pd("mrpin_mistakes", dev, &ctx2);
		for (i = 0; i < n; i++)
			mrs[i] = reg(pd2);
		/* The mistake: the MRs go with the device file. */
		if (!strcmp(how, "close")) {
			if (close(ctx2->cmd_fd))
				die("close");
		} else if (!strcmp(how, "dup2")) {
			fd = open("/dev/null", O_RDWR | O_CLOEXEC);
			if (fd < 0)
				die("/dev/null");
			if (dup2(fd, ctx2->cmd_fd) < 0)
				die("dup2");
			close(fd);
		} else if (ibv_close_device(ctx2)) {
			die("ibv_close_device");
		}
		say("closed");
	}
	mrpin_wait_eof();
	dereg(anchor);
out:
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(mrs);
	return 0;
}
