// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_pressure: the global cap under memory pressure.
 *
 * With the global max_pinned at an eighth of RAM, one process registers
 * 32 MiB regions until mrpin refuses it at the cap; then, with some page
 * cache to reclaim (large files of the host's /usr read over 9p), another
 * process takes the free memory until the kernel starts to reclaim: most
 * of it at once as huge pages of the hugetlb pool, which the kernel sets
 * aside without faulting or zeroing a page (touching as much anonymous
 * memory costs a fault a page: minutes under emulation, more on the debug
 * kernel), the rest as anonymous memory it touches.  Neither can be
 * reclaimed (the VM has no swap): the pressure falls on the page cache.
 * The pinned total never passes the cap (sampled all along),
 * registrations past it are still refused with ENOMEM under pressure, the
 * pins agree with VmPin, and no process is OOM-killed: the memory the cap
 * kept from the pinner is there for the rest of the machine.
 */
#define _GNU_SOURCE
#include "mrpin_test.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>

#define CHUNK		(32UL << 20)	/* one registration */
#define HOG_STEP	(8UL << 20)	/* the hog's allocation step */
#define RETRIES		10		/* registrations tried under pressure */
#define PAGE_CACHE	(128UL << 20)	/* file pages read before the hog */
#define HUGE_PAGE	(2UL << 20)	/* the hugetlb pool's default size */
#define HOG_TOUCHES	(256UL << 20)	/* free memory left to touching */
#define NR_HUGEPAGES	"/proc/sys/vm/nr_hugepages"

#define BIG_FILE	(1UL << 20)	/* files read for the page cache */

/* Read @path whole into the page cache; return the bytes read. */
static uint64_t read_one_file(int dirfd, const char *name)
{
	static char buf[1 << 20];
	uint64_t done = 0;
	ssize_t n;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		done += n;
	close(fd);
	return done;
}

/* The directory libibverbs was loaded from (the system's libraries). */
static void library_dir(char *dir, size_t size)
{
	char *maps, *line, *path, *slash;

	snprintf(dir, size, "/usr/lib");
	if (mrpin_read_file("/proc/self/maps", &maps))
		return;
	line = strstr(maps, "/libibverbs.so");
	if (line) {
		while (line > maps && line[-1] != ' ')
			line--;
		path = line;
		slash = strstr(path, "/libibverbs.so");
		snprintf(dir, size, "%.*s", (int)(slash - path), path);
	}
	free(maps);
}

/*
 * Fill the page cache with clean file pages, memory the kernel can
 * reclaim: the files of at least BIG_FILE in the system's library and
 * program directories (over 9p in the VM, a file costs a round trip per
 * lookup: a few hundred large ones, not a tree of small ones), until
 * PAGE_CACHE bytes are read.
 */
static uint64_t fill_page_cache(void)
{
	char libdir[PATH_MAX];
	const char *dirs[] = { libdir, "/usr/bin", "/usr/sbin" };
	uint64_t cached = 0;
	struct dirent *de;
	struct stat st;
	unsigned int i;
	DIR *dir;

	library_dir(libdir, sizeof(libdir));
	for (i = 0; i < MRPIN_ARRAY_SIZE(dirs) && cached < PAGE_CACHE; i++) {
		dir = opendir(dirs[i]);
		if (!dir)
			continue;
		while (cached < PAGE_CACHE && (de = readdir(dir))) {
			if (fstatat(dirfd(dir), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) ||
			    !S_ISREG(st.st_mode) || st.st_size < (off_t)BIG_FILE)
				continue;
			cached += read_one_file(dirfd(dir), de->d_name);
		}
		closedir(dir);
	}
	return cached;
}

/* Anonymous memory in 2 MiB pages where the kernel has THP: fewer faults. */
static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		madvise(p, len, MADV_HUGEPAGE);
	return p;
}

/* A counter of /proc/vmstat, or -1. */
static long long vmstat(const char *key)
{
	char *buf, *line;
	long long val = -1;
	size_t klen = strlen(key);

	if (mrpin_read_file("/proc/vmstat", &buf))
		return -1;
	for (line = buf; line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			val = atoll(line + klen + 1);
			break;
		}
	}
	free(buf);
	return val;
}

/* Pages the kernel scanned to reclaim memory, so far. */
static long long reclaim_scans(void)
{
	return vmstat("pgscan_kswapd") + vmstat("pgscan_direct");
}

/* A line of /proc/meminfo, in bytes, or 0. */
static uint64_t meminfo(const char *key)
{
	uint64_t bytes;

	return mrpin_proc_field("/proc/meminfo", key, false, &bytes) ? 0 : bytes;
}

static uint64_t pinned_now(void)
{
	struct mrpin_stats s;

	return mrpin_read_stats(&s) ? UINT64_MAX : s.pinned_bytes;
}

struct pinner_report {
	int regs;		/* registrations made */
	int err;		/* errno of the one that failed */
	int refused;		/* of the RETRIES, refused with ENOMEM */
};

/*
 * The pinner: register CHUNKs until one fails, report, then on 'r' try
 * RETRIES more and report again, on 'q' (or EOF) deregister all and exit.
 */
static int pinner(int cmd, int out, uint64_t max_regs)
{
	struct pinner_report rep = { 0 };
	struct ibv_context *ctx;
	struct ibv_mr **mrs;
	struct ibv_pd *pd;
	char c;
	void *buf;
	int i;

	mrpin_unlimit_memlock();
	ctx = mrpin_open_dev(mrpin_dev_name());
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	mrs = calloc(max_regs + 2 * RETRIES, sizeof(*mrs));
	if (!pd || !mrs)
		return 1;
	while ((uint64_t)rep.regs < max_regs + RETRIES) {
		buf = map_anon(CHUNK);
		if (buf == MAP_FAILED)
			return 1;
		if (_do_reg(pd, buf, CHUNK, &mrs[rep.regs])) {
			rep.err = errno;
			munmap(buf, CHUNK);
			break;
		}
		rep.regs++;
	}
	if (write(out, &rep, sizeof(rep)) != sizeof(rep))
		return 1;
	while (read(cmd, &c, 1) == 1 && c == 'r') {
		buf = map_anon(CHUNK);
		if (buf == MAP_FAILED)
			return 1;
		for (i = 0; i < RETRIES; i++) {
			struct ibv_mr *mr;

			if (!_do_reg(pd, buf, CHUNK, &mr)) {
				mrs[rep.regs++] = mr;
				continue;
			}
			if (errno == ENOMEM)
				rep.refused++;
		}
		if (write(out, &rep, sizeof(rep)) != sizeof(rep))
			return 1;
	}
	for (i = 0; i < rep.regs; i++)
		if (_do_dereg(mrs[i]))
			return 1;
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

/* The hugetlb pool's size in pages, or -1 without hugetlbfs. */
static long long nr_hugepages(void)
{
	long long n = -1;
	char *buf;

	if (mrpin_read_file(NR_HUGEPAGES, &buf))
		return -1;
	sscanf(buf, "%lld", &n);
	free(buf);
	return n;
}

static int set_nr_hugepages(long long n)
{
	char num[32];
	int fd, len, ret;

	fd = open(NR_HUGEPAGES, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = snprintf(num, sizeof(num), "%lld", n);
	ret = write(fd, num, len) == len ? 0 : -1;
	close(fd);
	return ret;
}

/*
 * The hog: grow the hugetlb pool (from @pool_pages, its size before) by
 * all the free memory but HOG_TOUCHES (the kernel gives what it can), then
 * allocate and touch memory until the kernel scans pages to reclaim (or, to
 * be safe, until MemAvailable is nearly gone); write the bytes it took,
 * and of them the pool's, then hold them until killed.  The pool outlives
 * the hog: the test shrinks it back.
 */
static int hog(int cmd, int out, uint64_t pool_pages)
{
	long long scans = reclaim_scans(), pool;
	uint64_t held = 0, avail = meminfo("MemFree"), huge = 0;
	char *p;

	(void)cmd;
	if ((long long)pool_pages >= 0 && avail > HOG_TOUCHES + HUGE_PAGE) {
		set_nr_hugepages(pool_pages + (avail - HOG_TOUCHES) / HUGE_PAGE);
		pool = nr_hugepages();
		if (pool > (long long)pool_pages)
			huge = (pool - pool_pages) * HUGE_PAGE;
		held = huge;
	}
	while (reclaim_scans() == scans && meminfo("MemAvailable") > HOG_STEP * 2) {
		p = map_anon(HOG_STEP);
		if (p == MAP_FAILED)
			break;
		memset(p, 0x5a, HOG_STEP);
		held += HOG_STEP;
	}
	if (write(out, &held, sizeof(held)) != sizeof(held) ||
	    write(out, &huge, sizeof(huge)) != sizeof(huge))
		return 1;
	pause();
	return 0;
}

static pid_t spawn(int (*fn)(int, int, uint64_t), int cmd, int out,
		   uint64_t arg)
{
	pid_t pid = fork();

	if (!pid)
		_exit(fn(cmd, out, arg));
	return pid;
}

FIXTURE(pressure) {
	char *saved_policy;
	long long saved_pool;	/* nr_hugepages before, or -1 */
	pid_t pinner, hog;
	int cmd[2], rep[2];
};

FIXTURE_SETUP(pressure)
{
	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &self->saved_policy));
	self->saved_pool = nr_hugepages();
	ASSERT_EQ(0, pipe(self->cmd));
	ASSERT_EQ(0, pipe(self->rep));
}

FIXTURE_TEARDOWN(pressure)
{
	if (self->hog > 0) {
		kill(self->hog, SIGKILL);
		waitpid(self->hog, NULL, 0);
	}
	if (self->pinner > 0) {
		kill(self->pinner, SIGKILL);
		waitpid(self->pinner, NULL, 0);
	}
	if (self->saved_pool >= 0)
		set_nr_hugepages(self->saved_pool);
	if (self->saved_policy)
		mrpin_limits_write(self->saved_policy,
				   strlen(self->saved_policy));
	free(self->saved_policy);
}

TEST_F_TIMEOUT(pressure, global_cap_holds_while_the_machine_reclaims, 600)
{
	uint64_t ram = meminfo("MemTotal"), cap, held, huge, pinned, vmpin = 0;
	uint64_t peak = 0, cached;
	long long oom_kills = vmstat("oom_kill"), scans;
	double t = mrpin_now_s();
	struct mrpin_proc_row *procs = NULL;
	const struct mrpin_proc_row *row;
	struct pinner_report rep;
	struct pollfd pfd;
	char policy[128];
	int n, status;

	ASSERT_GT(ram, 0UL);
	ASSERT_GE(oom_kills, 0);
	ASSERT_EQ(0UL, pinned_now()) TH_LOG("pins left by an earlier test");
	cap = ram / 8 / CHUNK * CHUNK + CHUNK / 2;
	snprintf(policy, sizeof(policy),
		 "global max_pinned=%" PRIu64 " action=enforce\n", cap);
	ASSERT_EQ(0, mrpin_limits_write(policy, strlen(policy)));

	/* Pin up to the cap. */
	self->pinner = spawn(pinner, self->cmd[0], self->rep[1], cap / CHUNK);
	ASSERT_GT(self->pinner, 0);
	ASSERT_EQ((ssize_t)sizeof(rep), read(self->rep[0], &rep, sizeof(rep)));
	TH_LOG("cap %" PRIu64 " MiB: %d registrations of 32 MiB, then errno %d (%.0f s)",
	       cap >> 20, rep.regs, rep.err, mrpin_now_s() - t);
	EXPECT_EQ((int)(cap / CHUNK), rep.regs);
	EXPECT_EQ(ENOMEM, rep.err);
	pinned = pinned_now();
	EXPECT_EQ(rep.regs * CHUNK, pinned);
	EXPECT_EQ(0, mrpin_vmpin(self->pinner, &vmpin));
	EXPECT_EQ(pinned, vmpin);

	/* Another process takes the rest until the kernel reclaims. */
	t = mrpin_now_s();
	cached = fill_page_cache();
	TH_LOG("%" PRIu64 " MiB of files read into the page cache (%.0f s)",
	       cached >> 20, mrpin_now_s() - t);
	t = mrpin_now_s();
	scans = reclaim_scans();
	self->hog = spawn(hog, -1, self->rep[1], self->saved_pool);
	ASSERT_GT(self->hog, 0);
	pfd = (struct pollfd){ .fd = self->rep[0], .events = POLLIN };
	while (poll(&pfd, 1, 20) == 0) {
		pinned = pinned_now();
		if (pinned > peak)
			peak = pinned;
	}
	ASSERT_EQ((ssize_t)sizeof(held),
		  read(self->rep[0], &held, sizeof(held)));
	ASSERT_EQ((ssize_t)sizeof(huge),
		  read(self->rep[0], &huge, sizeof(huge)));
	TH_LOG("the other process holds %" PRIu64 " MiB (%" PRIu64
	       " MiB of huge pages, %.0f s); MemAvailable %" PRIu64
	       " MiB; pages scanned for reclaim %lld", held >> 20, huge >> 20,
	       mrpin_now_s() - t, meminfo("MemAvailable") >> 20,
	       reclaim_scans() - scans);
	t = mrpin_now_s();
	EXPECT_GT(held, 0UL);
	EXPECT_GT(reclaim_scans(), scans) TH_LOG("no reclaim: no pressure");
	EXPECT_LE(peak, cap);

	/* Under pressure, the cap still refuses. */
	ASSERT_EQ(1, write(self->cmd[1], "r", 1));
	ASSERT_EQ((ssize_t)sizeof(rep), read(self->rep[0], &rep, sizeof(rep)));
	EXPECT_EQ(RETRIES, rep.refused);
	EXPECT_LE(pinned_now(), cap);
	n = mrpin_read_procs(&procs);
	ASSERT_GE(n, 0);
	row = mrpin_find_proc(procs, n, self->pinner);
	ASSERT_NE(NULL, row);
	EXPECT_EQ(0, mrpin_vmpin(self->pinner, &vmpin));
	EXPECT_EQ(row->pinned_bytes, vmpin);
	free(procs);

	/* Nobody was OOM-killed: both processes are alive. */
	EXPECT_EQ(oom_kills, vmstat("oom_kill"));
	EXPECT_EQ(0, waitpid(self->hog, &status, WNOHANG));
	EXPECT_EQ(0, waitpid(self->pinner, &status, WNOHANG));

	kill(self->hog, SIGKILL);
	ASSERT_EQ(self->hog, waitpid(self->hog, &status, 0));
	self->hog = 0;
	if (self->saved_pool >= 0) {
		EXPECT_EQ(0, set_nr_hugepages(self->saved_pool));
		EXPECT_EQ(self->saved_pool, nr_hugepages());
	}
	ASSERT_EQ(1, write(self->cmd[1], "q", 1));
	ASSERT_EQ(self->pinner, waitpid(self->pinner, &status, 0));
	self->pinner = 0;
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(0UL, pinned_now());
	TH_LOG("retries under pressure and teardown: %.0f s", mrpin_now_s() - t);
}

TEST_HARNESS_MAIN
