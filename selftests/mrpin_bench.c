// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_bench: the RDMA workloads behind bench.sh.
 *
 *   mrpin_bench [-d DEV] regdereg SIZE THREADS SECONDS
 *	ibv_reg_mr() + ibv_dereg_mr() in a loop on a pre-touched buffer of
 *	SIZE bytes (suffix K, M or G) per thread, one PD shared by the
 *	threads; prints the registrations per second over all threads.
 *   mrpin_bench [-d DEV] hold N
 *	registers N MRs of 4 KiB on distinct pages of one touched buffer,
 *	prints "ready", waits until stdin is closed, deregisters them.
 *   mrpin_bench [-d DEV] latency SECONDS
 *	one thread, 4 KiB ibv_reg_mr() + ibv_dereg_mr() in a loop; prints
 *	the median, 99th percentile and worst single reg+dereg in us.
 *   mrpin_bench [-d DEV] procs N
 *	N child processes, each holding one 4 KiB MR of its own: N lines in
 *	mrpin's `procs`; prints "ready", waits until stdin is closed, then
 *	the children deregister and exit.
 *   mrpin_bench [-d DEV] insns SIZE PAIRS WINDOW [HELD disjoint|same]
 *	one thread on CPU 0, SIZE ibv_reg_mr() + ibv_dereg_mr() PAIRS times
 *	on a touched buffer aligned to 2 MiB (transparent huge pages asked
 *	for from 2 MiB up), between the begin and end marks of window WINDOW
 *	that qemu_insns.c counts instructions in, after as many pairs again
 *	(at most 100) to warm up; prints the pairs and the buffer's huge
 *	pages.  With HELD, the process first registers HELD MRs of 4 KiB and
 *	holds them through the window: on distinct pages of another buffer
 *	(disjoint: HELD ranges in the process's union, none overlapping the
 *	measured one), or all on the first page of the measured buffer
 *	(same: the measured range registered HELD times already).
 *   mrpin_bench exec RUNS WINDOW COMMAND...
 *	on CPU 0, COMMAND run RUNS times, one after another (fork, exec,
 *	wait), between the begin and end marks of window WINDOW, after one
 *	run to warm up: what a process costs the kernel under test
 *	(scripts/vm-profile.sh); fails when a run of COMMAND fails.
 *   mrpin_bench [-d DEV] owners USERS CGROUPS SECONDS
 *	the latency of 4 KiB ibv_reg_mr() + ibv_dereg_mr() (as latency
 *	SECONDS) with mrpin's owner tables as they are, then again once
 *	USERS users hold a pin each (this process registers one 4 KiB MR as
 *	each uid from 1000000 on, setresuid() back and forth) and CGROUPS
 *	cgroups have a parked record each (the process joins each of
 *	CGROUPS new cgroups under /sys/fs/cgroup/mrpin_bench_owners.PID,
 *	registers and deregisters there, and comes back); then undoes it.
 *	Prints a latency line before and after, and how long each part took.
 *   mrpin_bench [-d DEV] first N STEP exit|park|cgroup
 *	N newcomers, one after another: each a new child process that opens
 *	the device and times its first 4 KiB ibv_reg_mr() (the first pin of
 *	a new process), then deregisters.  exit: it then exits.  park: it
 *	stays alive, without pins, until the end (its record stays in
 *	mrpin, parked).  cgroup: it runs in a cgroup of its own, made for
 *	it under /sys/fs/cgroup/mrpin_bench.PID and removed only at the end,
 *	and exits.  Prints, for each STEP newcomers, the count so far and the
 *	median, 90th percentile and worst first registration of those STEP,
 *	in us.
 *
 * DEV defaults to rxe0.  Results are printed as one line of key=value
 * pairs for the script to parse.  RLIMIT_MEMLOCK is raised to infinity
 * first, so run as root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>

#define BENCH_PAGE	4096UL
#define BENCH_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_WRITE)

static const char *dev_name = "rxe0";
static struct ibv_context *ctx;
static struct ibv_pd *pd;

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mrpin_bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: mrpin_bench [-d DEV] regdereg SIZE THREADS SECONDS\n"
		"       mrpin_bench [-d DEV] hold N\n"
		"       mrpin_bench [-d DEV] latency SECONDS\n"
		"       mrpin_bench [-d DEV] procs N\n"
		"       mrpin_bench [-d DEV] insns SIZE PAIRS WINDOW [HELD disjoint|same]\n"
		"       mrpin_bench exec RUNS WINDOW COMMAND...\n"
		"       mrpin_bench [-d DEV] owners USERS CGROUPS SECONDS\n"
		"       mrpin_bench [-d DEV] first N STEP exit|park|cgroup\n");
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A size with an optional K, M or G suffix (powers of 1024). */
static size_t parse_size(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		die("bad size '%s'", s);
	switch (*end) {
	case 'G': case 'g':
		v <<= 10;
		/* fall through */
	case 'M': case 'm':
		v <<= 10;
		/* fall through */
	case 'K': case 'k':
		v <<= 10;
		end++;
		break;
	}
	if (*end && strcmp(end, "iB") && strcmp(end, "B"))
		die("bad size '%s'", s);
	if (!v)
		die("size must not be zero");
	return v;
}

static long parse_long(const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min)
		die("bad number '%s'", s);
	return v;
}

static double parse_seconds(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0))
		die("bad duration '%s'", s);
	return v;
}

static void raise_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		die("setrlimit(RLIMIT_MEMLOCK, infinity): %s", strerror(errno));
}

/* The device to open: found once, opened by each child of its own. */
static struct ibv_device *find_device(struct ibv_device ***listp)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			break;
	}
	if (i == n)
		die("RDMA device %s not found", dev_name);
	*listp = list;
	return list[i];
}

static void open_found_device(struct ibv_device *dev)
{
	ctx = ibv_open_device(dev);
	if (!ctx)
		die("ibv_open_device(%s): %s", dev_name, strerror(errno));
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd: %s", strerror(errno));
}

static void open_device(void)
{
	struct ibv_device **list;

	open_found_device(find_device(&list));
	ibv_free_device_list(list);
}

static void close_device(void)
{
	if (ibv_dealloc_pd(pd))
		die("ibv_dealloc_pd failed");
	if (ibv_close_device(ctx))
		die("ibv_close_device failed");
}

/* An anonymous mapping of @len bytes, every page touched. */
static void *touched_buffer(size_t len)
{
	void *buf;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap(%zu): %s", len, strerror(errno));
	memset(buf, 0x5a, len);
	return buf;
}

/* One 4 KiB (or @len) registration and deregistration; dies on failure. */
static void reg_dereg(void *buf, size_t len)
{
	struct ibv_mr *mr;
	int ret;

	mr = ibv_reg_mr(pd, buf, len, BENCH_ACCESS);
	if (!mr)
		die("ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
	ret = ibv_dereg_mr(mr);
	if (ret)
		die("ibv_dereg_mr: %s", strerror(ret));
}

/* regdereg */

struct regdereg_thread {
	pthread_t thread;
	void *buf;
	size_t size;
	unsigned long count;
};

static pthread_barrier_t regdereg_barrier;
static atomic_bool regdereg_stop;

static void *regdereg_fn(void *arg)
{
	struct regdereg_thread *t = arg;

	pthread_barrier_wait(&regdereg_barrier);
	while (!atomic_load_explicit(&regdereg_stop, memory_order_relaxed)) {
		reg_dereg(t->buf, t->size);
		t->count++;
	}
	return NULL;
}

static int cmd_regdereg(size_t size, long nthreads, double seconds)
{
	struct regdereg_thread *threads;
	struct timespec ts;
	unsigned long total = 0;
	double start, elapsed;
	long i;
	int ret;

	threads = calloc(nthreads, sizeof(*threads));
	if (!threads)
		die("out of memory");
	for (i = 0; i < nthreads; i++) {
		threads[i].size = size;
		threads[i].buf = touched_buffer(size);
	}
	/* Warm up: the first registration of a buffer can be slower. */
	for (i = 0; i < nthreads; i++)
		reg_dereg(threads[i].buf, size);

	pthread_barrier_init(&regdereg_barrier, NULL, nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		ret = pthread_create(&threads[i].thread, NULL, regdereg_fn,
				     &threads[i]);
		if (ret)
			die("pthread_create: %s", strerror(ret));
	}
	pthread_barrier_wait(&regdereg_barrier);
	start = now_s();
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	atomic_store(&regdereg_stop, true);
	for (i = 0; i < nthreads; i++) {
		pthread_join(threads[i].thread, NULL);
		total += threads[i].count;
	}
	elapsed = now_s() - start;

	printf("mode=regdereg size=%zu threads=%ld regs=%lu seconds=%.3f rate=%.1f\n",
	       size, nthreads, total, elapsed, total / elapsed);
	for (i = 0; i < nthreads; i++)
		munmap(threads[i].buf, size);
	free(threads);
	return 0;
}

/* hold */

/* Register @n MRs of a page, at @mem + i * @stride (0: all on one page). */
static struct ibv_mr **hold_mrs(long n, char *mem, size_t stride)
{
	struct ibv_mr **mrs = calloc(n ? n : 1, sizeof(*mrs));
	long i;

	if (!mrs)
		die("out of memory");
	for (i = 0; i < n; i++) {
		mrs[i] = ibv_reg_mr(pd, mem + i * stride, BENCH_PAGE,
				    BENCH_ACCESS);
		if (!mrs[i])
			die("ibv_reg_mr #%ld of %ld: %s", i, n, strerror(errno));
	}
	return mrs;
}

static void release_mrs(struct ibv_mr **mrs, long n)
{
	long i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = ibv_dereg_mr(mrs[i]);
		if (ret)
			die("ibv_dereg_mr #%ld: %s", i, strerror(ret));
	}
	free(mrs);
}

static int cmd_hold(long n)
{
	struct ibv_mr **mrs;
	double start, elapsed;
	char buf[256];
	char *mem;

	mem = touched_buffer(n * BENCH_PAGE);
	start = now_s();
	mrs = hold_mrs(n, mem, BENCH_PAGE);
	elapsed = now_s() - start;
	printf("ready mode=hold mrs=%ld seconds=%.3f rate=%.1f\n", n, elapsed,
	       n / elapsed);
	fflush(stdout);

	/* Hold until the controller closes our stdin. */
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;

	release_mrs(mrs, n);
	munmap(mem, n * BENCH_PAGE);
	return 0;
}

/* latency */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* @seconds of 4 KiB reg + dereg, one line of figures after @what. */
static void latency_run(double seconds, const char *what)
{
	size_t n = 0, cap = 1 << 16;
	uint64_t *lat, deadline, t0, t1;
	void *buf;

	lat = malloc(cap * sizeof(*lat));
	if (!lat)
		die("out of memory");
	buf = touched_buffer(BENCH_PAGE);
	reg_dereg(buf, BENCH_PAGE);

	deadline = now_ns() + (uint64_t)(seconds * 1e9);
	do {
		t0 = now_ns();
		reg_dereg(buf, BENCH_PAGE);
		t1 = now_ns();
		if (n == cap) {
			cap *= 2;
			lat = realloc(lat, cap * sizeof(*lat));
			if (!lat)
				die("out of memory");
		}
		lat[n++] = t1 - t0;
	} while (t1 < deadline);

	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("%s count=%zu median_us=%.1f p99_us=%.1f max_us=%.1f\n",
	       what, n, lat[n / 2] / 1e3, lat[n - 1 - n / 100] / 1e3,
	       lat[n - 1] / 1e3);
	munmap(buf, BENCH_PAGE);
	free(lat);
}

static int cmd_latency(double seconds)
{
	latency_run(seconds, "mode=latency");
	return 0;
}

/* insns */

#define INSNS_MARK_MAGIC	0x4d500000u	/* qemu_insns.c's MARK_MAGIC */
#define INSNS_MAX_WINDOW	0x3ffff
#define HUGE_2M			(2UL << 20)

/*
 * Run qemu_insns.c's mark, nopl IMM32(%rax), with @imm: made in a page of
 * its own, since the window's number is known only now.
 */
static void insns_mark(uint32_t imm)
{
	static const uint8_t nopl[] = { 0x0f, 0x1f, 0x80 };
	uint8_t *code;

	code = mmap(NULL, BENCH_PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memcpy(code, nopl, sizeof(nopl));
	memcpy(code + sizeof(nopl), &imm, sizeof(imm));
	code[sizeof(nopl) + sizeof(imm)] = 0xc3;	/* ret */
	if (mprotect(code, BENCH_PAGE, PROT_READ | PROT_EXEC))
		die("mprotect: %s", strerror(errno));
	((void (*)(void))code)();
	munmap(code, BENCH_PAGE);
}

/*
 * Check @window's number and move to CPU 0: qemu_insns.c counts the vCPU
 * that made the begin mark, so the work stays on it.
 */
static void insns_window_cpu(long window)
{
	cpu_set_t cpu0;

	if (window > INSNS_MAX_WINDOW)
		die("window %ld is over %d", window, INSNS_MAX_WINDOW);
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	if (sched_setaffinity(0, sizeof(cpu0), &cpu0))
		die("sched_setaffinity(CPU 0): %s", strerror(errno));
}

/* Run @argv once to its end; die unless it exits 0. */
static void run_command(char **argv)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		execvp(argv[0], argv);
		fprintf(stderr, "mrpin_bench: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("%s: exit status %#x", argv[0], status);
}

static int cmd_exec(long runs, long window, char **argv)
{
	long i;

	/* The children inherit CPU 0. */
	insns_window_cpu(window);
	run_command(argv);
	insns_mark(INSNS_MARK_MAGIC | window << 1);
	for (i = 0; i < runs; i++)
		run_command(argv);
	insns_mark(INSNS_MARK_MAGIC | window << 1 | 1);
	printf("mode=exec runs=%ld window=%ld\n", runs, window);
	return 0;
}

/* The kB of @buf's mapping that huge pages back (smaps' AnonHugePages). */
static long anon_huge_kb(void *buf)
{
	unsigned long lo, hi, addr = (unsigned long)buf;
	char line[256];
	long kb = -1;
	bool in = false;
	FILE *f;

	f = fopen("/proc/self/smaps", "r");
	if (!f)
		die("/proc/self/smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		/* A mapping's first line: "LO-HI perms ...". */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo <= addr && addr < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

static int cmd_insns(size_t size, long pairs, long window, long held,
		     bool same)
{
	size_t len = (size + HUGE_2M - 1) & ~(HUGE_2M - 1);
	uint8_t *map, *buf, *other = NULL;
	long i, warm = pairs < 100 ? pairs : 100;
	struct ibv_mr **mrs;

	insns_window_cpu(window);
	/* 2 MiB aligned: a 2 MiB buffer can be one huge page. */
	map = mmap(NULL, len + HUGE_2M, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		die("mmap(%zu): %s", len + HUGE_2M, strerror(errno));
	buf = (uint8_t *)(((uintptr_t)map + HUGE_2M - 1) & ~(HUGE_2M - 1));
	if (size >= HUGE_2M && madvise(buf, len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	memset(buf, 0x5a, len);
	if (same) {
		mrs = hold_mrs(held, (char *)buf, 0);
	} else {
		other = held ? touched_buffer(held * BENCH_PAGE) : NULL;
		mrs = hold_mrs(held, (char *)other, BENCH_PAGE);
	}

	for (i = 0; i < warm; i++)
		reg_dereg(buf, size);
	insns_mark(INSNS_MARK_MAGIC | window << 1);
	for (i = 0; i < pairs; i++)
		reg_dereg(buf, size);
	insns_mark(INSNS_MARK_MAGIC | window << 1 | 1);

	printf("mode=insns size=%zu pairs=%ld window=%ld held=%ld anon_huge_kb=%ld\n",
	       size, pairs, window, held, anon_huge_kb(buf));
	release_mrs(mrs, held);
	if (other)
		munmap(other, held * BENCH_PAGE);
	munmap(map, len + HUGE_2M);
	return 0;
}

/* procs and first: child processes */

/* Write all of @len bytes, or die. */
static void write_all(int fd, const void *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write: %s", strerror(errno));
		buf = (const char *)buf + n;
		len -= n;
	}
}

/* Read exactly @len bytes: 0, or -1 at EOF or on error. */
static int read_all(int fd, void *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = read(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf = (char *)buf + n;
		len -= n;
	}
	return 0;
}

/* Block until @fd reaches EOF (its writers closed it). */
static void wait_eof(int fd)
{
	char buf[64];

	while (read(fd, buf, sizeof(buf)) > 0 || errno == EINTR)
		;
}

/*
 * Reap @n children; die if one failed.  Each holds the read end of a pipe
 * whose write end the caller just closed (or has exited).
 */
static void reap_children(long n)
{
	int status;

	while (n-- > 0) {
		if (wait(&status) < 0)
			die("wait: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			die("a child failed (status %#x)", status);
	}
}

/*
 * A child holding one MR of its own: reports 0 on @ready once registered,
 * holds it until @release reaches EOF.
 */
static void procs_child(struct ibv_device *dev, int ready, int release)
{
	struct ibv_mr *mr;
	void *buf;
	int ok = 0;

	open_found_device(dev);
	buf = touched_buffer(BENCH_PAGE);
	mr = ibv_reg_mr(pd, buf, BENCH_PAGE, BENCH_ACCESS);
	if (!mr)
		die("ibv_reg_mr: %s", strerror(errno));
	write_all(ready, &ok, sizeof(ok));
	wait_eof(release);
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr failed");
	close_device();
	_exit(0);
}

static int cmd_procs(long n)
{
	struct ibv_device **list, *dev;
	int ready[2], release[2], ok;
	double start, elapsed;
	long i;

	dev = find_device(&list);
	if (pipe(ready) || pipe(release))
		die("pipe: %s", strerror(errno));
	start = now_s();
	for (i = 0; i < n; i++) {
		switch (fork()) {
		case -1:
			die("fork #%ld: %s", i, strerror(errno));
		case 0:
			close(ready[0]);
			close(release[1]);
			procs_child(dev, ready[1], release[0]);
		}
		/* One at a time: each registered before the next starts. */
		if (read_all(ready[0], &ok, sizeof(ok)))
			die("child #%ld failed", i);
	}
	elapsed = now_s() - start;
	printf("ready mode=procs procs=%ld seconds=%.3f\n", n, elapsed);
	fflush(stdout);

	wait_eof(STDIN_FILENO);
	close(release[1]);
	reap_children(n);
	ibv_free_device_list(list);
	return 0;
}

enum first_mode { FIRST_EXIT, FIRST_PARK, FIRST_CGROUP };

#define CGROUP_ROOT "/sys/fs/cgroup"

/* Move the calling process into cgroup @path: dies on failure. */
static void join_cgroup(const char *path)
{
	char file[256], pid[32];
	int fd, len;

	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die("%s: %s", file, strerror(errno));
	len = snprintf(pid, sizeof(pid), "%d", getpid());
	if (write(fd, pid, len) != len)
		die("%s: %s", file, strerror(errno));
	close(fd);
}

/*
 * A newcomer: its first registration, timed (ns, on @result), then as
 * @mode says.
 */
static void first_child(struct ibv_device *dev, enum first_mode mode,
			const char *cgroup, int result, int release)
{
	uint64_t t0, ns;
	struct ibv_mr *mr;
	void *buf;

	if (mode == FIRST_CGROUP)
		join_cgroup(cgroup);
	open_found_device(dev);
	buf = touched_buffer(BENCH_PAGE);
	t0 = now_ns();
	mr = ibv_reg_mr(pd, buf, BENCH_PAGE, BENCH_ACCESS);
	ns = now_ns() - t0;
	if (!mr)
		die("ibv_reg_mr: %s", strerror(errno));
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr failed");
	close_device();
	write_all(result, &ns, sizeof(ns));
	if (mode == FIRST_PARK)
		wait_eof(release);
	_exit(0);
}

/* owners */

#define OWNERS_UID0 1000000

/* The cgroup this process is in (cgroup v2), under CGROUP_ROOT. */
static void own_cgroup(char *path, size_t len)
{
	char line[400];
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "0::", 3))
		die("/proc/self/cgroup: no cgroup v2 line");
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	snprintf(path, len, "%s%s", CGROUP_ROOT, line + 3);
}

/* setresuid() of this thread alone (glibc's would signal every thread). */
static void set_uid(uid_t uid)
{
	if (syscall(SYS_setresuid, uid, uid, 0))
		die("setresuid(%u): %s", uid, strerror(errno));
}

static int cmd_owners(long users, long cgroups, double seconds)
{
	char home[512], dir[128], cg[160];
	struct ibv_mr **mrs;
	double t0, t_users, t_cgroups;
	void *buf;
	long i;

	own_cgroup(home, sizeof(home));
	latency_run(seconds, "mode=owners state=none");

	mrs = calloc(users, sizeof(*mrs));
	if (!mrs)
		die("out of memory");
	buf = touched_buffer(BENCH_PAGE);
	t0 = now_s();
	for (i = 0; i < users; i++) {
		set_uid(OWNERS_UID0 + i);
		mrs[i] = ibv_reg_mr(pd, buf, BENCH_PAGE, BENCH_ACCESS);
		if (!mrs[i])
			die("ibv_reg_mr as uid %ld: %s", OWNERS_UID0 + i,
			    strerror(errno));
		set_uid(0);
	}
	t_users = now_s() - t0;

	snprintf(dir, sizeof(dir), "%s/mrpin_bench_owners.%d", CGROUP_ROOT,
		 getpid());
	if (mkdir(dir, 0755))
		die("%s: %s", dir, strerror(errno));
	t0 = now_s();
	for (i = 0; i < cgroups; i++) {
		snprintf(cg, sizeof(cg), "%s/%ld", dir, i);
		if (mkdir(cg, 0755))
			die("%s: %s", cg, strerror(errno));
		join_cgroup(cg);
		reg_dereg(buf, BENCH_PAGE);
	}
	join_cgroup(home);
	t_cgroups = now_s() - t0;

	latency_run(seconds, "mode=owners state=full");
	printf("mode=owners users=%ld users_s=%.1f cgroups=%ld cgroups_s=%.1f\n",
	       users, t_users, cgroups, t_cgroups);

	for (i = 0; i < users; i++)
		if (ibv_dereg_mr(mrs[i]))
			die("ibv_dereg_mr failed");
	for (i = 0; i < cgroups; i++) {
		snprintf(cg, sizeof(cg), "%s/%ld", dir, i);
		if (rmdir(cg))
			die("%s: %s", cg, strerror(errno));
	}
	if (rmdir(dir))
		die("%s: %s", dir, strerror(errno));
	munmap(buf, BENCH_PAGE);
	free(mrs);
	return 0;
}

/* Print the batch of @n first registrations @lat (sorted here). */
static void first_batch(uint64_t *lat, long n, long done)
{
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("mode=first procs=%ld count=%ld median_us=%.1f p90_us=%.1f max_us=%.1f\n",
	       done, n, lat[n / 2] / 1e3, lat[n - 1 - n / 10] / 1e3,
	       lat[n - 1] / 1e3);
}

static int cmd_first(long n, long step, enum first_mode mode)
{
	struct ibv_device **list, *dev;
	int result[2], release[2];
	char dir[128], cg[160];
	uint64_t *lat;
	long i, k = 0;
	pid_t pid;

	dev = find_device(&list);
	lat = calloc(step, sizeof(*lat));
	if (!lat)
		die("out of memory");
	if (pipe(result) || pipe(release))
		die("pipe: %s", strerror(errno));
	snprintf(dir, sizeof(dir), CGROUP_ROOT "/mrpin_bench.%d", getpid());
	if (mode == FIRST_CGROUP && mkdir(dir, 0755))
		die("mkdir %s: %s", dir, strerror(errno));
	for (i = 0; i < n; i++) {
		snprintf(cg, sizeof(cg), "%s/%ld", dir, i);
		if (mode == FIRST_CGROUP && mkdir(cg, 0755))
			die("mkdir %s: %s", cg, strerror(errno));
		pid = fork();
		if (pid < 0)
			die("fork #%ld: %s", i, strerror(errno));
		if (!pid) {
			close(result[0]);
			close(release[1]);
			first_child(dev, mode, cg, result[1], release[0]);
		}
		if (read_all(result[0], &lat[k++], sizeof(*lat)))
			die("newcomer #%ld failed", i);
		/* Gone before the next one comes (park: alive until the end). */
		if (mode != FIRST_PARK)
			reap_children(1);
		if (k == step || i == n - 1) {
			first_batch(lat, k, i + 1);
			k = 0;
		}
	}
	close(release[1]);
	if (mode == FIRST_PARK)
		reap_children(n);
	if (mode == FIRST_CGROUP) {
		for (i = 0; i < n; i++) {
			snprintf(cg, sizeof(cg), "%s/%ld", dir, i);
			if (rmdir(cg))
				die("rmdir %s: %s", cg, strerror(errno));
		}
		if (rmdir(dir))
			die("rmdir %s: %s", dir, strerror(errno));
	}
	free(lat);
	ibv_free_device_list(list);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode;
	int opt, ret;

	while ((opt = getopt(argc, argv, "+d:h")) != -1) {
		switch (opt) {
		case 'd':
			dev_name = optarg;
			break;
		default:
			usage();
		}
	}
	argv += optind;
	argc -= optind;
	if (argc < 1)
		usage();
	mode = argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* No device and no pins: the command is the workload. */
	if (!strcmp(mode, "exec") && argc >= 4)
		return cmd_exec(parse_long(argv[1], 1), parse_long(argv[2], 0),
				argv + 3);

	raise_memlock();

	if (!strcmp(mode, "regdereg") && argc == 4) {
		size_t size = parse_size(argv[1]);
		long nthreads = parse_long(argv[2], 1);
		double seconds = parse_seconds(argv[3]);

		open_device();
		ret = cmd_regdereg(size, nthreads, seconds);
	} else if (!strcmp(mode, "hold") && argc == 2) {
		long n = parse_long(argv[1], 1);

		open_device();
		ret = cmd_hold(n);
	} else if (!strcmp(mode, "latency") && argc == 2) {
		double seconds = parse_seconds(argv[1]);

		open_device();
		ret = cmd_latency(seconds);
	} else if (!strcmp(mode, "owners") && argc == 4) {
		long users = parse_long(argv[1], 0);
		long cgroups = parse_long(argv[2], 0);
		double seconds = parse_seconds(argv[3]);

		open_device();
		ret = cmd_owners(users, cgroups, seconds);
	} else if (!strcmp(mode, "insns") && (argc == 4 || argc == 6)) {
		size_t size = parse_size(argv[1]);
		long pairs = parse_long(argv[2], 1);
		long window = parse_long(argv[3], 0);
		long held = argc == 6 ? parse_long(argv[4], 0) : 0;

		if (argc == 6 && strcmp(argv[5], "same") &&
		    strcmp(argv[5], "disjoint"))
			usage();
		open_device();
		ret = cmd_insns(size, pairs, window, held,
				argc == 6 && !strcmp(argv[5], "same"));
	} else if (!strcmp(mode, "procs") && argc == 2) {
		/* The children open the device, each its own. */
		return cmd_procs(parse_long(argv[1], 1));
	} else if (!strcmp(mode, "first") && argc == 4) {
		long n = parse_long(argv[1], 1);
		long step = parse_long(argv[2], 1);
		enum first_mode fm;

		if (!strcmp(argv[3], "exit"))
			fm = FIRST_EXIT;
		else if (!strcmp(argv[3], "park"))
			fm = FIRST_PARK;
		else if (!strcmp(argv[3], "cgroup"))
			fm = FIRST_CGROUP;
		else
			usage();
		return cmd_first(n, step, fm);
	} else {
		usage();
	}
	close_device();
	return ret;
}
