// SPDX-License-Identifier: GPL-2.0
/*
 * Stress: 4 processes of 4 threads each register and deregister MRs on the
 * RDMA device under test (rxe0 unless $MRPIN_TEST_DEV says otherwise),
 * 20000 cycles per thread, while 2 processes read every file of mrpin's
 * debugfs directory over and over and another one writes a new policy to
 * `limits` every millisecond.
 *
 * Each registration is of 1 byte to 4 MiB (log-uniform), at a random,
 * unaligned offset in the thread's buffer; a thread keeps up to 4 MRs
 * alive and deregisters them in random order.  The workers run in cgroups
 * of their own, one as root and three as other users.  The policies
 * written are real (enforce and warn, process, uid and cgroup rules added
 * and deleted, reset, stack, oversize, mr_table_warn and callsites
 * changes) but never tight enough to bite.
 *
 * What it proves:
 *  - every registration and deregistration succeeds, every read of every
 *    debugfs file succeeds (and `limits` always reads as a whole policy),
 *    every write to `limits` succeeds;
 *  - twice, with every worker thread parked on its live MRs, each
 *    worker's VmPin equals its `procs` line, its `pins` lines, its user's
 *    and its cgroup's lines, and the sums agree with `stats`;
 *  - after the last deregistration each worker's VmPin is 0 and it has no
 *    line left; once they are gone, `stats` pins and pinned_bytes are back
 *    where they started (0 in a fresh VM, and then `procs`, `pins`,
 *    `users` and `cgroups` are empty), pins_total and releases_total grew
 *    by exactly the registrations made, and nothing was denied, warned
 *    about, released untracked or by cleanup;
 *  - the kernel log gained no line (but for those a slow virtual CPU makes
 *    the kernel print about its own timing, shown), and the policy found
 *    is restored.
 *
 * $MRPIN_STRESS_CYCLES sets the cycles per thread (default 20000; 200 on
 * the debug kernel, where KASAN, lockdep and kmemleak make this load some
 * fifty times slower), and $MRPIN_STRESS_SEED the seed (printed) to replay
 * a run.
 */
#include "mrpin_test.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

#define WORKERS		4
#define THREADS		4
#define READERS		2
#define RING		4		/* live MRs a thread may hold */
#define MAX_ORDER	22
#define MAX_LEN		(1UL << MAX_ORDER)	/* 4 MiB */
#define BUF_LEN		(2 * MAX_LEN)
#define CYCLES		20000
#define SHORT_CYCLES	2000
#define DEBUG_CYCLES	200	/* short loops on the debug kernel */
#define STRESS_UID	4200		/* workers 1..3: uid 4201..4203 */
#define CG_TOP		"/mrpin_stress"
#define POLICY_HEADER	"# mrpin limits: write this back to restore this policy\nreset\n"
#define EVENTS_HEADER	"# seq "
/* The most a worker (and all of them) can pin at once. */
#define WORKER_MAX_BYTES (THREADS * RING * (MAX_LEN + PAGE))
#define ALL_MAX_BYTES	(WORKERS * WORKER_MAX_BYTES)

/* The first failure of a worker thread. */
struct thread_res {
	uint64_t regs;
	uint64_t deregs;
	int err;		/* errno */
	const char *op;		/* "ibv_reg_mr" or "ibv_dereg_mr" */
	uint64_t cycle;
	uint64_t len;
	uint64_t offset;
};

/* What a worker reports, in memory shared with the test. */
struct worker_res {
	pid_t pid;
	uid_t uid;
	int stage;		/* set-up step that failed (see worker_main) */
	int stage_err;
	uint64_t live_pins;	/* at the latest park */
	uint64_t live_bytes;
	struct thread_res t[THREADS];
};

struct stress_shared {
	int stop;		/* the workers are done: readers, writer stop */
	struct worker_res w[WORKERS];
	uint64_t passes[READERS];
	int reader_err;
	char reader_file[NAME_MAX + 1];
	uint64_t writes;
	int writer_err;
	char writer_text[4096];
};

/* What the writer may set without ever biting. */
struct writer_cfg {
	uint64_t seed;
	unsigned int ram_pct_min;	/* global max_pinned=N% */
	unsigned int mr_table_pct_min;	/* mr_table_warn=N% */
	uid_t uids[WORKERS];
};

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned int rnd(uint64_t *rng, unsigned int n)
{
	return splitmix64(rng) % n;
}

/* 1 byte to 4 MiB, each power-of-two octave alike (4 MiB itself too). */
static size_t rand_len(uint64_t *rng)
{
	unsigned int order = rnd(rng, MAX_ORDER + 1);

	if (order == MAX_ORDER)
		return MAX_LEN;
	return (1UL << order) | (splitmix64(rng) & ((1UL << order) - 1));
}

static void stop_on_parent_death(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
}

/* --- the workers --- */

struct stress_thread {
	pthread_t thread;
	struct thread_res *res;
	pthread_barrier_t *park;
	struct ibv_pd *pd;
	uint64_t rng;
	uint64_t cycles;
	char *buf;
	struct ibv_mr *mr[RING];
};

static bool thread_fail(struct stress_thread *st, const char *op,
			uint64_t cycle, size_t len, size_t offset)
{
	struct thread_res *r = st->res;

	r->err = errno ?: EIO;
	r->op = op;
	r->cycle = cycle;
	r->len = len;
	r->offset = offset;
	return false;
}

static bool thread_dereg(struct stress_thread *st, int slot, uint64_t cycle)
{
	struct ibv_mr *mr = st->mr[slot];

	st->mr[slot] = NULL;
	if (_do_dereg(mr))
		return thread_fail(st, "ibv_dereg_mr", cycle, mr->length,
				   (char *)mr->addr - st->buf);
	st->res->deregs++;
	return true;
}

/*
 * One cycle: deregister 0 to 2 live MRs (at least one when the ring is
 * full), picked at random, then register one.
 */
static bool thread_cycle(struct stress_thread *st, uint64_t cycle)
{
	unsigned int drop = rnd(&st->rng, 3), live = 0, pick;
	size_t len, offset;
	int slot;

	for (slot = 0; slot < RING; slot++)
		live += !!st->mr[slot];
	if (live == RING && !drop)
		drop = 1;
	for (; drop && live; drop--, live--) {
		pick = rnd(&st->rng, live);
		for (slot = 0; slot < RING; slot++)
			if (st->mr[slot] && !pick--)
				break;
		if (!thread_dereg(st, slot, cycle))
			return false;
	}
	for (slot = 0; st->mr[slot]; slot++)
		;
	len = rand_len(&st->rng);
	offset = rnd(&st->rng, BUF_LEN - len + 1);
	if (_do_reg(st->pd, st->buf + offset, len, &st->mr[slot])) {
		st->mr[slot] = NULL;
		return thread_fail(st, "ibv_reg_mr", cycle, len, offset);
	}
	st->res->regs++;
	return true;
}

/*
 * Half the cycles, a park, the other half, a park, then every MR left is
 * deregistered.  After a failure a thread stops cycling but still parks,
 * so that its process goes on to report it.
 */
static void *thread_main(void *arg)
{
	struct stress_thread *st = arg;
	bool ok = true;
	uint64_t i;
	int slot;

	for (i = 0; ok && i < st->cycles / 2; i++)
		ok = thread_cycle(st, i);
	pthread_barrier_wait(st->park);
	pthread_barrier_wait(st->park);
	for (; ok && i < st->cycles; i++)
		ok = thread_cycle(st, i);
	pthread_barrier_wait(st->park);
	pthread_barrier_wait(st->park);
	for (slot = 0; ok && slot < RING; slot++)
		if (st->mr[slot])
			ok = thread_dereg(st, slot, i);
	return NULL;
}

/* Tell the test @what (one byte); wait for its answer, which must be @go. */
static void worker_sync(int sock, char what, char go)
{
	char c;

	if (send(sock, &what, 1, MSG_NOSIGNAL) != 1 ||
	    recv(sock, &c, 1, 0) != 1 || c != go)
		_exit(2);
}

/* Report the MRs of the parked threads, then wait for the test's go. */
static void worker_park(struct worker_res *res, struct stress_thread *st,
			pthread_barrier_t *park, int sock, char what)
{
	uint64_t pins = 0, bytes = 0;
	int i, slot;

	pthread_barrier_wait(park);
	for (i = 0; i < THREADS; i++)
		for (slot = 0; slot < RING; slot++) {
			if (!st[i].mr[slot])
				continue;
			pins++;
			bytes += mrpin_span_bytes((uintptr_t)st[i].mr[slot]->addr,
						  st[i].mr[slot]->length);
		}
	res->live_pins = pins;
	res->live_bytes = bytes;
	worker_sync(sock, what, 'G');
	pthread_barrier_wait(park);
}

/*
 * An anonymous buffer of @len bytes between two PROT_NONE pages: a mapping
 * of its own.  The kernel merges adjacent anonymous mappings of the same
 * protection, and a thread stack is one: merged with it, the buffer would
 * be the thread's stack mapping to mrpin's stack check.
 */
static char *map_guarded(size_t len)
{
	char *p;

	p = mmap(NULL, len + 2 * PAGE, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + PAGE, len, PROT_READ | PROT_WRITE)) {
		munmap(p, len + 2 * PAGE);
		return NULL;
	}
	return p + PAGE;
}

/*
 * A worker process: set-up steps 1 (cgroup), 2 (RLIMIT_MEMLOCK), 3 (uid),
 * 4 (parent-death signal), 5 (device), 6 (PD), 7 (buffers), 8 (threads),
 * each reported in res->stage when it fails.  Then the cycles, with the
 * parks "P" (halfway), "Q" (end), and "D" once every MR is gone.
 */
static void worker_main(struct stress_shared *sh, int k, int sock,
			uint64_t seed, uint64_t cycles)
{
	pid_t parent = getppid();
	struct worker_res *res = &sh->w[k];
	struct stress_thread st[THREADS] = { };
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	pthread_barrier_t park;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	char cg[64];
	int i;

	res->stage = 1;
	snprintf(cg, sizeof(cg), CG_TOP "/w%d", k);
	if (mrpin_cg_write_procs(cg, getpid()))
		goto fail;
	res->stage = 2;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		goto fail;
	res->stage = 3;
	if (res->uid && (setgroups(0, NULL) ||
			 setresgid(res->uid, res->uid, res->uid) ||
			 setresuid(res->uid, res->uid, res->uid)))
		goto fail;
	/* After the uid: a change of credentials clears it. */
	res->stage = 4;
	stop_on_parent_death(parent);
	res->stage = 5;
	ctx = mrpin_open_dev(mrpin_dev_name());
	if (!ctx)
		goto fail;
	res->stage = 6;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		goto fail;
	res->stage = 7;
	for (i = 0; i < THREADS; i++) {
		st[i].buf = map_guarded(BUF_LEN);
		if (!st[i].buf)
			goto fail;
		memset(st[i].buf, 0x5a, BUF_LEN);
	}
	res->stage = 8;
	errno = pthread_barrier_init(&park, NULL, THREADS + 1);
	if (errno)
		goto fail;
	for (i = 0; i < THREADS; i++) {
		st[i].res = &res->t[i];
		st[i].park = &park;
		st[i].pd = pd;
		st[i].rng = seed ^ (uint64_t)(k * THREADS + i + 1) << 48;
		st[i].cycles = cycles;
		errno = pthread_create(&st[i].thread, NULL, thread_main, &st[i]);
		if (errno)
			goto fail;
	}
	res->stage = 0;

	worker_park(res, st, &park, sock, 'P');
	worker_park(res, st, &park, sock, 'Q');
	for (i = 0; i < THREADS; i++)
		pthread_join(st[i].thread, NULL);
	worker_sync(sock, 'D', 'X');
	_exit(0);
fail:
	res->stage_err = errno ?: EIO;
	_exit(1);
}

/* --- the readers and the writer --- */

/* A file that is not a table: read whole, `events` without waiting. */
static int read_text(const char *name)
{
	char path[PATH_MAX], *text;
	int fd, ret;

	snprintf(path, sizeof(path), MRPIN_DEBUGFS "/%s", name);
	if (!strcmp(name, "events")) {
		/* read() waits for an event unless O_NONBLOCK. */
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		ret = mrpin_read_available(fd, &text, NULL);
		close(fd);
		if (!ret && strncmp(text, EVENTS_HEADER, strlen(EVENTS_HEADER)))
			ret = -EPROTO;
	} else {
		ret = mrpin_read_file(path, &text);
		/* Whatever the writer does, a read is one whole policy. */
		if (!ret && !strcmp(name, "limits") &&
		    strncmp(text, POLICY_HEADER, strlen(POLICY_HEADER)))
			ret = -EPROTO;
	}
	free(text);
	return ret;
}

/* Read debugfs file @name; the tables through their parsers. */
static int read_entry(const char *name)
{
	struct mrpin_stats stats;
	void *rows = NULL;
	int ret;

	if (!strcmp(name, "procs"))
		ret = mrpin_read_procs((struct mrpin_proc_row **)&rows);
	else if (!strcmp(name, "pins"))
		ret = mrpin_read_pins((struct mrpin_pin_row **)&rows);
	else if (!strcmp(name, "devices"))
		ret = mrpin_read_devices((struct mrpin_dev_row **)&rows);
	else if (!strcmp(name, "users"))
		ret = mrpin_read_users((struct mrpin_owner_row **)&rows);
	else if (!strcmp(name, "cgroups"))
		ret = mrpin_read_cgroups((struct mrpin_owner_row **)&rows);
	else if (!strcmp(name, "stats"))
		ret = mrpin_read_stats(&stats);
	else
		ret = read_text(name);
	if (ret > 0)
		free(rows);
	return ret < 0 ? ret : 0;
}

/* Read every file of the directory until told to stop; count the passes. */
static void reader_main(struct stress_shared *sh, int idx, int ready)
{
	struct dirent *de;
	DIR *dir;
	int ret;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		dir = opendir(MRPIN_DEBUGFS);
		if (!dir) {
			ret = -errno;
			snprintf(sh->reader_file, sizeof(sh->reader_file), ".");
			goto fail;
		}
		while ((de = readdir(dir))) {
			if (de->d_name[0] == '.')
				continue;
			ret = read_entry(de->d_name);
			if (ret) {
				snprintf(sh->reader_file,
					 sizeof(sh->reader_file), "%s",
					 de->d_name);
				goto fail;
			}
		}
		closedir(dir);
		if (!sh->passes[idx]++ && write(ready, "r", 1) != 1)
			_exit(2);
	}
	_exit(0);
fail:
	sh->reader_err = -ret;
	_exit(1);
}

static const char *const actions[] = { "enforce", "warn" };
static const char *const stacks[] = { "allow", "warn", "deny" };
static const char *const onoff[] = { "off", "on" };

/* Rules the writer may have added: uid, cgroup wK, and the top cgroup. */
#define RULE_UID(k)	(1U << (k))
#define RULE_CG(k)	(1U << (WORKERS + (k)))
#define RULE_CG_TOP	(1U << (2 * WORKERS))

static size_t put_global(char *p, size_t n, const struct writer_cfg *cfg,
			 uint64_t *rng)
{
	if (cfg->ram_pct_min <= 100 && rnd(rng, 2))
		return snprintf(p, n, "global max_pinned=%u%% max_pins=%u action=%s\n",
				cfg->ram_pct_min +
				rnd(rng, 101 - cfg->ram_pct_min),
				1000 + rnd(rng, 100000), actions[rnd(rng, 2)]);
	return snprintf(p, n, "global max_pinned=%uG max_pins=unlimited action=%s\n",
			2 + rnd(rng, 63), actions[rnd(rng, 2)]);
}

static size_t put_diag(char *p, size_t n, const struct writer_cfg *cfg,
		       uint64_t *rng)
{
	unsigned int pct = 0;	/* 0%: never */

	if (cfg->mr_table_pct_min <= 100)
		pct = cfg->mr_table_pct_min +
		      rnd(rng, 101 - cfg->mr_table_pct_min);
	return snprintf(p, n, "global stack=%s oversize=%uM mr_table_warn=%u%% callsites=%s\n",
			stacks[rnd(rng, 3)], 64 << rnd(rng, 5),
			pct,
			onoff[rnd(rng, 2)]);
}

static size_t put_process(char *p, size_t n, uint64_t *rng)
{
	if (!rnd(rng, 4))
		return snprintf(p, n, "process max_pinned=unlimited max_pins=unlimited max_pin_size=unlimited action=%s\n",
				actions[rnd(rng, 2)]);
	return snprintf(p, n, "process max_pinned=%uG max_pins=%u max_pin_size=%uM action=%s\n",
			1 + rnd(rng, 64), 1000 + rnd(rng, 100000),
			8 << rnd(rng, 8), actions[rnd(rng, 2)]);
}

/* Add or change a rule; or delete it (if @del and it is there). */
static size_t put_rule(char *p, size_t n, const struct writer_cfg *cfg,
		       unsigned int *rules, uint64_t *rng, bool del)
{
	unsigned int which = rnd(rng, 2 * WORKERS + 1), bit = 1U << which;
	char scope[64];

	if (which < WORKERS)
		snprintf(scope, sizeof(scope), "uid %u", cfg->uids[which]);
	else if (which < 2 * WORKERS)
		snprintf(scope, sizeof(scope), "cgroup " CG_TOP "/w%u",
			 which - WORKERS);
	else
		snprintf(scope, sizeof(scope), "cgroup " CG_TOP);
	if (del && (*rules & bit)) {
		*rules &= ~bit;
		return snprintf(p, n, "%s delete\n", scope);
	}
	*rules |= bit;
	return snprintf(p, n, "%s max_pinned=%uG max_pins=%u max_pin_size=%uM action=%s\n",
			scope, 1 + rnd(rng, 64), 1000 + rnd(rng, 100000),
			8 << rnd(rng, 8), actions[rnd(rng, 2)]);
}

/* A valid change to the policy, which never makes a registration fail. */
static size_t policy_change(char *text, size_t size,
			    const struct writer_cfg *cfg, unsigned int *rules,
			    uint64_t *rng)
{
	size_t len = 0;
	int i, lines;

	switch (rnd(rng, 10)) {
	case 0:
		*rules = 0;
		return snprintf(text, size, "reset\n");
	case 1:
		return put_global(text, size, cfg, rng);
	case 2:
		return put_diag(text, size, cfg, rng);
	case 3:
		return put_process(text, size, rng);
	case 4:
	case 5:
	case 6:
		return put_rule(text, size, cfg, rules, rng, false);
	case 7:
	case 8:
		return put_rule(text, size, cfg, rules, rng, true);
	}
	/* One transaction of several lines, from a reset. */
	*rules = 0;
	len = snprintf(text, size, "reset\n");
	len += put_global(text + len, size - len, cfg, rng);
	len += put_diag(text + len, size - len, cfg, rng);
	len += put_process(text + len, size - len, rng);
	lines = rnd(rng, 2 * WORKERS + 2);
	for (i = 0; i < lines; i++)
		len += put_rule(text + len, size - len, cfg, rules, rng, true);
	return len;
}

/* Write a policy change every millisecond until told to stop. */
static void writer_main(struct stress_shared *sh, const struct writer_cfg *cfg,
			int ready)
{
	const struct sched_param fifo = { .sched_priority = 1 };
	unsigned int rules = 0;
	uint64_t rng = cfg->seed;
	struct timespec next, now;
	char text[4096];
	size_t len;
	int err;

	/*
	 * Real-time, so that 16 busy worker threads on two CPUs do not stretch
	 * the millisecond; a failure only makes the writer slower.
	 */
	sched_setscheduler(0, SCHED_FIFO, &fifo);
	/* Start from a known policy: the found one may have rules. */
	len = snprintf(text, sizeof(text), "reset\n");
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		err = mrpin_limits_write(text, len);
		if (err) {
			sh->writer_err = err;
			snprintf(sh->writer_text, sizeof(sh->writer_text),
				 "%s", text);
			_exit(1);
		}
		if (!sh->writes++ && write(ready, "w", 1) != 1)
			_exit(2);
		len = policy_change(text, sizeof(text), cfg, &rules, &rng);
		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000;
		}
		/* Late (a slow VM): the next write now, without a burst. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
				       NULL) == EINTR)
			;
	}
	_exit(0);
}

/* --- the test --- */

FIXTURE(stress) {
	struct stress_shared *sh;
	char *policy;		/* as found */
	bool policy_restored;
	bool cgroups_made;
	pid_t readers[READERS];
	pid_t writer;
	pid_t workers[WORKERS];
	int socks[WORKERS];
	int kfd;
};

FIXTURE_SETUP(stress)
{
	int i;

	self->kfd = -1;
	for (i = 0; i < WORKERS; i++)
		self->socks[i] = -1;
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &self->policy));
	ASSERT_EQ(0, strncmp(self->policy, POLICY_HEADER,
			     strlen(POLICY_HEADER))) {
		TH_LOG("limits does not start with its header and reset");
	}
	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
}

static void kill_reap(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
	*pid = 0;
}

/* Only EXPECT_*() without handler blocks here (see mrpin_test.h). */
FIXTURE_TEARDOWN(stress)
{
	char cg[64];
	int i;

	__atomic_store_n(&self->sh->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < WORKERS; i++) {
		kill_reap(&self->workers[i]);
		if (self->socks[i] >= 0)
			close(self->socks[i]);
	}
	for (i = 0; i < READERS; i++)
		kill_reap(&self->readers[i]);
	kill_reap(&self->writer);
	if (self->policy && !self->policy_restored)
		EXPECT_EQ(0, mrpin_limits_write(self->policy,
						strlen(self->policy)));
	if (self->cgroups_made) {
		for (i = 0; i < WORKERS; i++) {
			snprintf(cg, sizeof(cg), CG_TOP "/w%d", i);
			EXPECT_EQ(0, mrpin_cg_rmdir(cg));
		}
		EXPECT_EQ(0, mrpin_cg_rmdir(CG_TOP));
	}
	free(self->policy);
	if (self->kfd >= 0)
		close(self->kfd);
	munmap(self->sh, sizeof(*self->sh));
	/* The harness ends the test with _exit(): the diagnostics now. */
	fflush(stdout);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	uint64_t v;

	return s && *s && !mrpin_parse_u64(s, &v) ? v : def;
}

/* The smallest N% of @total that is still twice @bytes (101: none). */
static unsigned int pct_min(uint64_t bytes, uint64_t total)
{
	uint64_t pct;

	if (!total)
		return 101;
	pct = (2 * bytes * 100 + total - 1) / total;
	return pct > 100 ? 101 : pct ?: 1;
}

/*
 * fork(), the child to be killed with the test; -1 in the test when it
 * failed.  Neither returns to the test's code in the child.
 */
static pid_t fork_child(void)
{
	pid_t parent = getpid(), pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (!pid)
		stop_on_parent_death(parent);
	return pid;
}

/* One byte @what from every worker still there; false when one is gone. */
static bool __gather(struct __test_metadata *_metadata,
		     struct _test_data_stress *self, char what)
{
	bool ok = true;
	char c;
	int k;

	for (k = 0; k < WORKERS; k++) {
		if (recv(self->socks[k], &c, 1, 0) == 1 && c == what)
			continue;
		TH_LOG("worker %d (pid %d) is gone, waiting for '%c'", k,
		       self->workers[k], what);
		ok = false;
	}
	return ok;
}
#define gather(what) __gather(_metadata, self, what)

static void release_all(struct _test_data_stress *self, char go)
{
	int k;

	for (k = 0; k < WORKERS; k++)
		send(self->socks[k], &go, 1, MSG_NOSIGNAL);
}

/* The `users` or `cgroups` line of @uid or @cgroup: pins, bytes (0 if none). */
static void owner_usage(const struct mrpin_owner_row *rows, int n, bool by_uid,
			uint64_t uid, const char *cgroup, uint64_t *pins,
			uint64_t *bytes)
{
	int i;

	*pins = *bytes = 0;
	for (i = 0; i < n; i++)
		if (by_uid ? rows[i].uid == uid : !strcmp(rows[i].cgroup, cgroup)) {
			*pins = rows[i].pins;
			*bytes = rows[i].pinned_bytes;
		}
}

/*
 * Every worker is parked on its live MRs: its VmPin, `procs` and `pins`
 * lines, its user's and its cgroup's lines all say what it holds.
 */
static void __check_parked(struct __test_metadata *_metadata,
			   struct stress_shared *sh, const char *when)
{
	uint64_t pins, bytes, all_pins = 0, all_bytes = 0;
	struct mrpin_owner_row *users, *cgroups;
	struct mrpin_pin_row *rows;
	int nusers, ncgroups, nrows, k;
	const struct worker_res *w;
	char cg[64];

	nusers = mrpin_read_users(&users);
	ASSERT_LE(0, nusers);
	ncgroups = mrpin_read_cgroups(&cgroups);
	ASSERT_LE(0, ncgroups);
	nrows = mrpin_read_pins(&rows);
	ASSERT_LE(0, nrows);
	for (k = 0; k < WORKERS; k++) {
		w = &sh->w[k];
		ksft_print_msg("%s: worker %d (pid %d, uid %u) holds %" PRIu64 " MRs, %" PRIu64 " bytes\n",
			       when, k, w->pid, w->uid, w->live_pins,
			       w->live_bytes);
		all_pins += w->live_pins;
		all_bytes += w->live_bytes;
		check_proc(w->pid, w->live_pins, w->live_bytes);
		EXPECT_EQ(w->live_pins,
			  (uint64_t)mrpin_pins_of(rows, nrows, w->pid));
		owner_usage(users, nusers, true, w->uid, NULL, &pins, &bytes);
		EXPECT_EQ(w->live_pins, pins);
		EXPECT_EQ(w->live_bytes, bytes);
		snprintf(cg, sizeof(cg), CG_TOP "/w%d", k);
		owner_usage(cgroups, ncgroups, false, 0, cg, &pins, &bytes);
		EXPECT_EQ(w->live_pins, pins);
		EXPECT_EQ(w->live_bytes, bytes);
	}
	owner_usage(cgroups, ncgroups, false, 0, CG_TOP, &pins, &bytes);
	EXPECT_EQ(all_pins, pins);
	EXPECT_EQ(all_bytes, bytes);
	free(users);
	free(cgroups);
	free(rows);
}
#define check_parked(sh, when) __check_parked(_metadata, sh, when)

/*
 * What a slow or stalled virtual CPU makes the kernel print, once per boot,
 * whatever it runs: a stalled timer interrupt, the RT bandwidth limit hit
 * (PREEMPT_RT runs kernel threads as RT tasks), a clocksource given up.
 */
static bool machine_timing(const char *line)
{
	static const char *const prefixes[] = {
		"hrtimer: interrupt took ",
		"sched: RT throttling activated",
		"clocksource: ",
		"tsc: Marking TSC unstable",
	};
	size_t i;

	for (i = 0; i < MRPIN_ARRAY_SIZE(prefixes); i++)
		if (!strncmp(line, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* A child's wait status is a clean exit; say what happened otherwise. */
static void __check_exit(struct __test_metadata *_metadata, const char *who,
			 int idx, pid_t *pid)
{
	int status = -1;

	ASSERT_EQ(*pid, waitpid(*pid, &status, 0));
	*pid = 0;
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
		if (WIFSIGNALED(status))
			TH_LOG("%s %d: killed by signal %d", who, idx,
			       WTERMSIG(status));
		else
			TH_LOG("%s %d: exit status %d", who, idx,
			       WEXITSTATUS(status));
	}
}
#define check_exit(who, idx, pid) __check_exit(_metadata, who, idx, pid)

/* Ten minutes is the program's timeout (settings): fail before it. */
TEST_F_TIMEOUT(stress, workers_readers_and_a_limits_writer_leave_nothing, 590)
{
	struct stress_shared *sh = self->sh;
	struct mrpin_stats before, after;
	struct mrpin_dev_row *devs;
	const struct mrpin_dev_row *d;
	struct writer_cfg wcfg = { };
	uint64_t cycles, seed, regs = 0, deregs = 0, dev_pins, dev_bytes;
	const char *dev = mrpin_dev_name();
	int ready[2], sv[2], i, k, n, ret;
	struct sysinfo si;
	double start, took;
	char cg[64], *log, *line, *save, *now, c;
	int logged = 0;
	bool ok;

	seed = env_u64("MRPIN_STRESS_SEED", (uint64_t)time(NULL) ^
					     ((uint64_t)getpid() << 32));
	cycles = env_u64("MRPIN_STRESS_CYCLES",
			 mrpin_debug_kernel() ? DEBUG_CYCLES :
			 mrpin_short_loops() ? SHORT_CYCLES : CYCLES);
	ksft_print_msg("seed %" PRIu64 " (MRPIN_STRESS_SEED=%" PRIu64 " replays it)\n",
		       seed, seed);
	ksft_print_msg("%d processes x %d threads x %" PRIu64 " cycles%s\n",
		       WORKERS, THREADS, cycles,
		       getenv("MRPIN_STRESS_CYCLES") ? " (MRPIN_STRESS_CYCLES)" :
		       mrpin_debug_kernel() ? " (short loops: the debug kernel)" :
		       mrpin_short_loops() ? " (short loops: MRPIN_LOOPS=short)" : "");
	ASSERT_LE(2UL, cycles);

	/* What the writer may set: limits far above what the workers pin. */
	ASSERT_EQ(0, sysinfo(&si));
	n = mrpin_read_devices(&devs);
	ASSERT_LE(0, n);
	d = mrpin_find_dev(devs, n, dev);
	ASSERT_NE(NULL, d) {
		TH_LOG("%s has no line in devices", dev);
	}
	dev_pins = d->pins;
	dev_bytes = d->pinned_bytes;
	wcfg.seed = seed ^ 0x5bd1e995;
	wcfg.ram_pct_min = pct_min(ALL_MAX_BYTES, (uint64_t)si.totalram *
					  si.mem_unit);
	wcfg.mr_table_pct_min = pct_min(WORKERS * THREADS * RING, d->max_mr);
	free(devs);
	for (k = 0; k < WORKERS; k++) {
		wcfg.uids[k] = k ? STRESS_UID + k : 0;
		sh->w[k].uid = wcfg.uids[k];
	}

	/* The cgroups of the workers (maybe left by a killed run). */
	for (k = -1; k < WORKERS; k++) {
		snprintf(cg, sizeof(cg), CG_TOP "/w%d", k);
		if (k < 0)
			cg[strlen(CG_TOP)] = '\0';
		ret = mrpin_cg_mkdir(cg);
		ASSERT_EQ(0, ret) {
			TH_LOG("mkdir %s: %s", cg, strerror(ret));
		}
		self->cgroups_made = true;
	}

	ASSERT_EQ(0, mrpin_read_stats(&before));
	self->kfd = mrpin_kmsg_open();
	ASSERT_LE(0, self->kfd);

	/* Readers and writer first; the workers once they are going. */
	ASSERT_EQ(0, pipe(ready));
	for (i = 0; i < READERS; i++) {
		self->readers[i] = fork_child();
		ASSERT_LE(0, self->readers[i]);
		if (!self->readers[i])
			reader_main(sh, i, ready[1]);
	}
	self->writer = fork_child();
	ASSERT_LE(0, self->writer);
	if (!self->writer)
		writer_main(sh, &wcfg, ready[1]);
	close(ready[1]);
	for (i = 0; i < READERS + 1; i++)
		ASSERT_EQ(1, read(ready[0], &c, 1)) {
			TH_LOG("a reader or the writer failed at once");
		}
	close(ready[0]);

	start = mrpin_now_s();
	for (k = 0; k < WORKERS; k++) {
		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
					sv));
		self->workers[k] = fork_child();
		ASSERT_LE(0, self->workers[k]);
		if (!self->workers[k]) {
			for (i = 0; i < k; i++)
				close(self->socks[i]);
			close(sv[0]);
			worker_main(sh, k, sv[1],
				    seed + k * 0x9e3779b97f4a7c15ULL, cycles);
		}
		close(sv[1]);
		self->socks[k] = sv[0];
		sh->w[k].pid = self->workers[k];
	}

	ok = gather('P');
	if (ok) {
		check_parked(sh, "halfway");
		release_all(self, 'G');
		ok = gather('Q');
	}
	if (ok) {
		check_parked(sh, "at the end");
		release_all(self, 'G');
		ok = gather('D');
	}
	if (ok) {
		/* Every MR deregistered, the workers still there. */
		for (k = 0; k < WORKERS; k++) {
			check_proc(sh->w[k].pid, 0, 0);
			check_no_trace(sh->w[k].pid);
		}
		release_all(self, 'X');
	}
	if (!ok)
		for (k = 0; k < WORKERS; k++)
			kill(self->workers[k], SIGKILL);
	for (k = 0; k < WORKERS; k++) {
		check_exit("worker", k, &self->workers[k]);
		EXPECT_EQ(0, sh->w[k].stage) {
			TH_LOG("worker %d (uid %u): set-up step %d (1 cgroup, 2 memlock, 3 uid, 4 parent-death signal, 5 device, 6 PD, 7 buffers, 8 threads): %s",
			       k, sh->w[k].uid, sh->w[k].stage,
			       strerror(sh->w[k].stage_err));
		}
		for (i = 0; i < THREADS; i++) {
			const struct thread_res *t = &sh->w[k].t[i];

			EXPECT_EQ(0, t->err) {
				TH_LOG("worker %d (uid %u) thread %d, cycle %" PRIu64 ": %s of %" PRIu64 " bytes at offset %" PRIu64 ": %s",
				       k, sh->w[k].uid, i, t->cycle, t->op,
				       t->len, t->offset, strerror(t->err));
			}
			regs += t->regs;
			deregs += t->deregs;
		}
	}
	took = mrpin_now_s() - start;

	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < READERS; i++) {
		check_exit("reader", i, &self->readers[i]);
		ksft_print_msg("reader %d: %" PRIu64 " passes over every file\n",
			       i, sh->passes[i]);
	}
	EXPECT_EQ(0, sh->reader_err) {
		TH_LOG("reading %s: %s", sh->reader_file,
		       strerror(sh->reader_err));
	}
	check_exit("writer", 0, &self->writer);
	ksft_print_msg("writer: %" PRIu64 " policy changes in %.0f s\n",
		       sh->writes, took);
	EXPECT_EQ(0, sh->writer_err) {
		TH_LOG("writing to limits: %s; the text:\n%s",
		       strerror(sh->writer_err), sh->writer_text);
	}
	ksft_print_msg("workers: %" PRIu64 " registrations, %" PRIu64 " deregistrations in %.0f s\n",
		       regs, deregs, took);
	EXPECT_EQ(WORKERS * THREADS * cycles, regs);
	EXPECT_EQ(regs, deregs);

	/* The policy found, byte for byte. */
	EXPECT_EQ(0, mrpin_limits_write(self->policy, strlen(self->policy)));
	self->policy_restored = true;
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &now));
	EXPECT_STREQ(self->policy, now);
	free(now);

	/* Back where it started; the totals count every pin. */
	ASSERT_EQ(0, mrpin_read_stats(&after));
	check_stats_moved(&before, &after, 0, 0, regs, deregs);
	EXPECT_EQ(before.denials_total, after.denials_total);
	EXPECT_EQ(before.warnings_total, after.warnings_total);
	EXPECT_EQ(before.stack_pins_total, after.stack_pins_total);
	EXPECT_EQ(before.cleanup_releases_total,
		  after.cleanup_releases_total);
	check_sums();
	n = mrpin_read_devices(&devs);
	ASSERT_LE(0, n);
	d = mrpin_find_dev(devs, n, dev);
	EXPECT_NE(NULL, d);
	if (d) {
		EXPECT_EQ(dev_pins, d->pins);
		EXPECT_EQ(dev_bytes, d->pinned_bytes);
	}
	free(devs);
	for (k = 0; k < WORKERS; k++)
		check_no_trace(sh->w[k].pid);
	if (!before.pins) {
		/* Nothing was pinned before: nothing may be listed now. */
		check_nothing_left();
	} else {
		ksft_print_msg("%" PRIu64 " pins were there before the stress\n",
			       before.pins);
	}

	/* Nothing was logged (but for the machine's clock, maybe). */
	log = mrpin_kmsg_read(self->kfd);
	ASSERT_NE(NULL, log);
	for (line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (machine_timing(line)) {
			ksft_print_msg("logged, about the machine's timing: %s\n",
				       line);
			continue;
		}
		logged++;
		TH_LOG("logged: %s", line);
	}
	EXPECT_EQ(0, logged);
	free(log);
}

MRPIN_TEST_MAIN(MRPIN_LIMITS_FILE, "no policy in this mrpin")
