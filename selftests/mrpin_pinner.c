// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_pinner: register memory regions and hold them, for mrpin's tests.
 *
 *   mrpin_pinner [--dev NAME] [--also NAME]... [--threads N] [--hold]
 *                [--no-dereg] [--linger SECONDS] [--map PATH] SIZE[@OFFSET]...
 *
 * Each SIZE[@OFFSET] is one MR of SIZE bytes that starts OFFSET bytes into
 * a buffer of its own (page-aligned, mmap'd and touched); sizes take a K,
 * M or G suffix.  With --threads N, N threads register the MRs, MR i in
 * thread i % N.  Prints "mr START LENGTH" (decimal) per MR and then
 * "ready" once they are all registered, then waits until stdin reaches
 * EOF, or with --hold until SIGTERM or SIGINT.  It then deregisters them,
 * unless --no-dereg: it exits (0) with the MRs still registered.  With
 * --linger S it lives S seconds more after deregistering them (a process
 * that goes on without MRs), then exits.
 *
 * With --map PATH, each buffer is a shared mapping of the file or device
 * PATH instead of anonymous memory (the OFED lane's peer memory device).
 *
 * With --also NAME, each MR's range is registered once more on device
 * NAME, after the first device's MRs are made (the same buffer on several
 * devices, as a node with several rails does); up to ALSO_MAX devices.
 *
 * The device is NAME, else $MRPIN_TEST_DEV, else rxe0.  RLIMIT_MEMLOCK is
 * lifted when allowed.  Exit status: 0, 1 on error, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include "mrpin_utils.h"

struct pinner_mr {
	void *buf;
	size_t buf_len;
	size_t offset;
	size_t length;
	struct ibv_mr *mr;
	int err;
};

#define ALSO_MAX	8

/* Another device every MR is registered on too (--also). */
struct pinner_also {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr **mrs;
};

struct pinner_thread {
	pthread_t thread;
	struct ibv_pd *pd;
	struct pinner_mr *mrs;
	int nmrs;
	int first;
	int step;
};

static int parse_size(const char *s, size_t *size)
{
	unsigned long long val;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	val = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'G':
		val <<= 10;
		/* fall through */
	case 'M':
		val <<= 10;
		/* fall through */
	case 'K':
		val <<= 10;
		end++;
	}
	*size = val;
	return *end && *end != '@' ? -1 : end - s;
}

static int parse_mr(const char *arg, struct pinner_mr *m)
{
	long page = sysconf(_SC_PAGESIZE);
	int n;

	n = parse_size(arg, &m->length);
	if (n < 0 || !m->length)
		return -1;
	m->offset = 0;
	if (arg[n] == '@' && parse_size(arg + n + 1, &m->offset) < 0)
		return -1;
	m->buf_len = (m->offset + m->length + page - 1) & ~(page - 1);
	return 0;
}

/* --map: the file each buffer maps, or NULL for anonymous memory. */
static const char *map_path;

static void *map_buf(size_t len)
{
	void *buf;
	int fd;

	if (!map_path)
		return mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fd = open(map_path, O_RDWR);
	if (fd < 0)
		return MAP_FAILED;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return buf;
}

static void *register_mrs(void *arg)
{
	struct pinner_thread *t = arg;
	struct pinner_mr *m;
	int i;

	for (i = t->first; i < t->nmrs; i += t->step) {
		m = &t->mrs[i];
		m->buf = map_buf(m->buf_len);
		if (m->buf == MAP_FAILED) {
			m->buf = NULL;
			m->err = errno;
			continue;
		}
		memset(m->buf, 0x5a, m->buf_len);
		if (_do_reg(t->pd, (char *)m->buf + m->offset, m->length,
			    &m->mr))
			m->err = errno;
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: mrpin_pinner [--dev NAME] [--also NAME]... [--threads N] [--hold] [--no-dereg] [--linger SECONDS] [--map PATH] SIZE[@OFFSET]...\n");
	exit(2);
}

/* Register every MR's range on @a's device too: 0, or -1 (said why). */
static int register_also(struct pinner_also *a, struct pinner_mr *mrs,
			 int nmrs)
{
	int i;

	a->ctx = mrpin_open_dev(a->name);
	a->pd = a->ctx ? ibv_alloc_pd(a->ctx) : NULL;
	a->mrs = calloc(nmrs, sizeof(*a->mrs));
	if (!a->pd || !a->mrs) {
		fprintf(stderr, "mrpin_pinner: cannot use %s: %s\n", a->name,
			strerror(errno));
		return -1;
	}
	for (i = 0; i < nmrs; i++) {
		if (_do_reg(a->pd, (char *)mrs[i].buf + mrs[i].offset,
			    mrs[i].length, &a->mrs[i])) {
			fprintf(stderr, "mrpin_pinner: MR %d on %s: %s\n", i,
				a->name, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static int release_also(struct pinner_also *a, int nmrs)
{
	int i, ret = 0;

	for (i = 0; i < nmrs; i++) {
		if (_do_dereg(a->mrs[i])) {
			fprintf(stderr, "mrpin_pinner: ibv_dereg_mr on %s: %s\n",
				a->name, strerror(errno));
			ret = 1;
		}
	}
	ibv_dealloc_pd(a->pd);
	ibv_close_device(a->ctx);
	free(a->mrs);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "also", required_argument, NULL, 'a' },
		{ "threads", required_argument, NULL, 't' },
		{ "hold", no_argument, NULL, 'h' },
		{ "no-dereg", no_argument, NULL, 'n' },
		{ "linger", required_argument, NULL, 'l' },
		{ "map", required_argument, NULL, 'm' },
		{ }
	};
	const char *dev = mrpin_dev_name();
	struct pinner_also also[ALSO_MAX];
	int nalso = 0;
	bool hold = false, dereg = true;
	struct pinner_thread *threads;
	struct ibv_context *ctx;
	struct pinner_mr *mrs;
	int nthreads = 1, linger = 0, nmrs, i, c, sig, ret = 0;
	struct ibv_pd *pd;
	char buf[64];
	sigset_t set;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'a':
			if (nalso == ALSO_MAX)
				usage();
			also[nalso++] = (struct pinner_also){ .name = optarg };
			break;
		case 't':
			nthreads = atoi(optarg);
			if (nthreads < 1)
				usage();
			break;
		case 'h':
			hold = true;
			break;
		case 'n':
			dereg = false;
			break;
		case 'm':
			map_path = optarg;
			break;
		case 'l':
			linger = atoi(optarg);
			if (linger < 1)
				usage();
			break;
		default:
			usage();
		}
	}
	nmrs = argc - optind;
	if (!nmrs)
		usage();
	mrs = calloc(nmrs, sizeof(*mrs));
	threads = calloc(nthreads, sizeof(*threads));
	if (!mrs || !threads)
		return 1;
	for (i = 0; i < nmrs; i++)
		if (parse_mr(argv[optind + i], &mrs[i]))
			usage();

	/* SIGTERM and SIGINT end --hold, through sigwait(). */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (hold)
		sigprocmask(SIG_BLOCK, &set, NULL);

	mrpin_unlimit_memlock();
	ctx = mrpin_open_dev(dev);
	if (!ctx) {
		fprintf(stderr, "mrpin_pinner: cannot open %s: %s\n", dev,
			strerror(errno));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fprintf(stderr, "mrpin_pinner: ibv_alloc_pd: %s\n",
			strerror(errno));
		return 1;
	}

	for (i = 0; i < nthreads; i++) {
		threads[i] = (struct pinner_thread) {
			.pd = pd, .mrs = mrs, .nmrs = nmrs,
			.first = i, .step = nthreads,
		};
		if (pthread_create(&threads[i].thread, NULL, register_mrs,
				   &threads[i])) {
			fprintf(stderr, "mrpin_pinner: pthread_create failed\n");
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i].thread, NULL);
	for (i = 0; i < nmrs; i++) {
		if (mrs[i].err) {
			fprintf(stderr, "mrpin_pinner: MR %d (%zu@%zu): %s\n",
				i, mrs[i].length, mrs[i].offset,
				strerror(mrs[i].err));
			return 1;
		}
		printf("mr %" PRIuPTR " %zu\n",
		       (uintptr_t)mrs[i].buf + mrs[i].offset, mrs[i].length);
	}
	for (i = 0; i < nalso; i++)
		if (register_also(&also[i], mrs, nmrs))
			return 1;
	printf("ready\n");
	fflush(stdout);

	if (hold)
		sigwait(&set, &sig);
	else
		while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
			;
	if (!dereg)
		exit(0);	/* the kernel releases the MRs at exit */

	for (i = 0; i < nalso; i++)
		ret |= release_also(&also[i], nmrs);
	for (i = 0; i < nmrs; i++) {
		if (_do_dereg(mrs[i].mr)) {
			fprintf(stderr, "mrpin_pinner: ibv_dereg_mr: %s\n",
				strerror(errno));
			ret = 1;
		}
		munmap(mrs[i].buf, mrs[i].buf_len);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(threads);
	free(mrs);
	if (linger) {
		printf("deregistered\n");
		fflush(stdout);
		sleep(linger);
	}
	return ret;
}
