// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin through the life of the processes that pin, on the RDMA device
 * under test (rxe0 unless $MRPIN_TEST_DEV says otherwise):
 *
 *  - kill: 200 processes (or $MRPIN_KILLS), four at a time, each killed
 *    with SIGKILL at a random moment, 0 to 50 ms after it started or after
 *    it registered its first MRs, while it registers and deregisters MRs
 *    of random sizes.  Afterwards no live pin is left anywhere (`stats`,
 *    `pins`, `procs`, `users`, `cgroups`, `devices`), every pin made was
 *    released, none untracked; the MRs they held when killed are cleanup
 *    releases, in `stats` and in their `leaks` line, and the kernel log has
 *    no problem and no mrpin line;
 *  - fork: the child of a process holding MRs inherits no pin (VmPin 0,
 *    nothing in `procs` or `pins`), its own MR is accounted to it alone,
 *    the parent's line does not change, and nothing is left when both are
 *    done;
 *  - exec: a process that execs with live MRs loses them with its device
 *    file, which rdma-core opens close-on-exec: the new program has no pin
 *    and the releases are the kernel's cleanup (the releasing task is no
 *    longer in the address space that pinned), counted in the `leaks` line
 *    of the program that registered.  With the file kept across exec, the
 *    pins stay charged to the old address space, under the same pid, until
 *    the process exits.
 *
 * The program is also the churn of mrpin_reload_churn.sh:
 *
 *   mrpin_lifecycle --churn THREADS
 *
 * THREADS threads each fill CHURN_SLOTS MRs of random sizes, then print
 * "ready" (once, for all), then over and over deregister one slot and
 * register it again, until SIGTERM or SIGINT; then they deregister
 * everything and it prints "churn regs R deregs D failed F".  On SIGUSR1
 * it prints "regs R", the registrations made so far.  At any moment
 * each thread holds at least CHURN_SLOTS - 1 live MRs.  Exit status: 0, 1
 * if any registration or deregistration failed, 2 on bad usage.
 *
 * (`mrpin_lifecycle --after-exec` is the exec test's program after exec.)
 */
#define _GNU_SOURCE
#include "mrpin_test.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

/* MRs of random sizes: up to MAX_MR bytes, anywhere in the first page. */
#define MAX_MR		(256 * KiB)
#define SLOT_SIZE	(MAX_MR + 2 * PAGE)
#define CHURN_SLOTS	4

#define KILLS_DEFAULT	200
#define KILL_BATCH	4
#define KILL_MAX_DELAY	0.050	/* seconds */
#define KILLED_COMM	"mrpin_killed"
#define EXECER_COMM	"mrpin_execer"

static uint64_t xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/* The counts of one registering task, shared with whoever watches it. */
struct churn_counts {
	uint64_t regs;
	uint64_t deregs;
	uint64_t failed;
	int err;		/* the first errno of a failure */
};

static void count(uint64_t *counter)
{
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

static void count_failure(struct churn_counts *c, int err)
{
	count(&c->failed);
	if (!__atomic_load_n(&c->err, __ATOMIC_RELAXED))
		__atomic_store_n(&c->err, err, __ATOMIC_RELAXED);
}

/* One task's slots: a buffer each, an MR of random size in it or none. */
struct churn {
	struct ibv_pd *pd;
	char *bufs;
	struct ibv_mr *mr[CHURN_SLOTS];
	uint64_t rand;
	struct churn_counts *counts;
};

/*
 * The slots' buffers, between two inaccessible pages: a writable anonymous
 * mapping next to a thread's stack would merge into its VMA, and mrpin
 * would take the MRs for stack memory.
 */
static int churn_map(struct churn *ch)
{
	char *area;

	area = mmap(NULL, CHURN_SLOTS * SLOT_SIZE + 2 * PAGE, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return -1;
	ch->bufs = area + PAGE;
	if (mprotect(ch->bufs, CHURN_SLOTS * SLOT_SIZE,
		     PROT_READ | PROT_WRITE))
		return -1;
	memset(ch->bufs, 0x5a, CHURN_SLOTS * SLOT_SIZE);
	return 0;
}

/* Register slot @slot: 1 to MAX_MR bytes, 0 to PAGE - 1 bytes in. */
static int churn_reg(struct churn *ch, int slot)
{
	size_t offset = xorshift(&ch->rand) % PAGE;
	size_t length = 1 + xorshift(&ch->rand) % MAX_MR;

	if (_do_reg(ch->pd, ch->bufs + slot * SLOT_SIZE + offset, length,
		    &ch->mr[slot])) {
		ch->mr[slot] = NULL;
		count_failure(ch->counts, errno);
		return -1;
	}
	count(&ch->counts->regs);
	return 0;
}

static int churn_dereg(struct churn *ch, int slot)
{
	struct ibv_mr *mr = ch->mr[slot];

	if (!mr)
		return 0;
	ch->mr[slot] = NULL;
	if (_do_dereg(mr)) {
		count_failure(ch->counts, errno);
		return -1;
	}
	count(&ch->counts->deregs);
	return 0;
}

static int churn_fill(struct churn *ch)
{
	int slot;

	for (slot = 0; slot < CHURN_SLOTS; slot++)
		if (churn_reg(ch, slot))
			return -1;
	return 0;
}

/* One round: each slot in turn deregistered and registered again. */
static void churn_round(struct churn *ch)
{
	int slot;

	for (slot = 0; slot < CHURN_SLOTS; slot++) {
		churn_dereg(ch, slot);
		churn_reg(ch, slot);
	}
}

static void churn_drain(struct churn *ch)
{
	int slot;

	for (slot = 0; slot < CHURN_SLOTS; slot++)
		churn_dereg(ch, slot);
}

/* --churn: threads churning until SIGTERM or SIGINT. */
struct churn_thread {
	pthread_t thread;
	struct churn ch;
	pthread_barrier_t *filled;
	bool *stop;
};

static void *churn_thread(void *arg)
{
	struct churn_thread *t = arg;

	churn_fill(&t->ch);
	pthread_barrier_wait(t->filled);
	while (!__atomic_load_n(t->stop, __ATOMIC_RELAXED))
		churn_round(&t->ch);
	churn_drain(&t->ch);
	return NULL;
}

static int churn_main(int nthreads)
{
	struct churn_counts counts = { };
	struct churn_thread *threads;
	pthread_barrier_t filled;
	bool stop = false;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	sigset_t set;
	int i, sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	mrpin_unlimit_memlock();
	ctx = mrpin_open_dev(mrpin_dev_name());
	if (!ctx) {
		fprintf(stderr, "mrpin_lifecycle: cannot open %s: %s\n",
			mrpin_dev_name(), strerror(errno));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	threads = calloc(nthreads, sizeof(*threads));
	if (!pd || !threads ||
	    pthread_barrier_init(&filled, NULL, nthreads + 1))
		return 1;
	for (i = 0; i < nthreads; i++) {
		threads[i].ch.pd = pd;
		threads[i].ch.counts = &counts;
		threads[i].ch.rand = 0x9e3779b97f4a7c15ULL * (i + 1) ^ getpid();
		threads[i].filled = &filled;
		threads[i].stop = &stop;
		if (churn_map(&threads[i].ch) ||
		    pthread_create(&threads[i].thread, NULL, churn_thread,
				   &threads[i]))
			return 1;
	}
	pthread_barrier_wait(&filled);
	printf("ready\n");
	fflush(stdout);
	while (!sigwait(&set, &sig) && sig == SIGUSR1) {
		printf("regs %" PRIu64 "\n",
		       __atomic_load_n(&counts.regs, __ATOMIC_RELAXED));
		fflush(stdout);
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i].thread, NULL);
	printf("churn regs %" PRIu64 " deregs %" PRIu64 " failed %" PRIu64 "\n",
	       counts.regs, counts.deregs, counts.failed);
	if (counts.failed)
		fprintf(stderr, "mrpin_lifecycle: first failure: %s\n",
			strerror(counts.err));
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return counts.failed ? 1 : 0;
}

/* --after-exec: what this process holds now, on stdout. */
static int after_exec_main(void)
{
	struct mrpin_proc_row *procs;
	struct mrpin_pin_row *pins;
	uint64_t vmpin = UINT64_MAX;
	int npins, nprocs, mine = -1, own = -1;
	char buf[64];

	mrpin_vmpin(getpid(), &vmpin);
	npins = mrpin_read_pins(&pins);
	if (npins >= 0) {
		mine = mrpin_pins_of(pins, npins, getpid());
		free(pins);
	}
	nprocs = mrpin_read_procs(&procs);
	if (nprocs >= 0) {
		own = !!mrpin_find_proc(procs, nprocs, getpid());
		free(procs);
	}
	printf("after-exec vmpin %" PRIu64 " pins %d procs %d\n", vmpin, mine,
	       own);
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	return 0;
}

/* The `leaks` line of (@comm, uid 0): count and bytes, 0 if none. */
static void __leak_of(struct __test_metadata *_metadata, const char *comm,
		      struct mrpin_leak_row *row)
{
	struct mrpin_leak_row *rows;
	int n, i;

	memset(row, 0, sizeof(*row));
	n = mrpin_read_leaks(&rows);
	ASSERT_LE(0, n) {
		TH_LOG("leaks: %s", strerror(-n));
	}
	for (i = 0; i < n; i++)
		if (!strcmp(rows[i].comm, comm) && !rows[i].uid)
			*row = rows[i];
	free(rows);
}
#define leak_of(comm, row) __leak_of(_metadata, comm, row)

/* The `pins` line of process @pid; false if it has none or more. */
static bool only_pin_of(pid_t pid, struct mrpin_pin_row *row)
{
	struct mrpin_pin_row *rows;
	int n, mine;

	n = mrpin_read_pins(&rows);
	if (n < 0)
		return false;
	mine = mrpin_pins_of(rows, n, pid);
	if (mine == 1)
		*row = rows[0];
	free(rows);
	return mine == 1;
}

/* The ids of the `pins` lines of process @pid, sorted; their number. */
static int pin_ids_of(pid_t pid, uint64_t *ids, int max)
{
	struct mrpin_pin_row *rows;
	int n, mine, i, j;
	uint64_t id;

	n = mrpin_read_pins(&rows);
	if (n < 0)
		return n;
	mine = mrpin_pins_of(rows, n, pid);
	for (i = 0; i < mine && i < max; i++) {
		id = rows[i].id;
		for (j = i; j > 0 && ids[j - 1] > id; j--)
			ids[j] = ids[j - 1];
		ids[j] = id;
	}
	free(rows);
	return mine;
}

/*
 * The tests pin in children only: the fixture has no device, starts and
 * ends with nothing pinned, and mrpin logs nothing in between.
 */
static void __lc_setup(struct __test_metadata *_metadata,
		       struct mrpin_fixture *f)
{
	f->quiet = true;
	fixture_start(f);
	check_nothing_left();
}
#define lc_setup(f) __lc_setup(_metadata, f)

/* Only EXPECT_*() without handler blocks here (see mrpin_test.h). */
static void __lc_teardown(struct __test_metadata *_metadata,
			  struct mrpin_fixture *f)
{
	fixture_close(f);
	check_nothing_left();
	fixture_check(f);
}
#define lc_teardown(f) __lc_teardown(_metadata, f)

FIXTURE(lifecycle) {
	struct mrpin_fixture f;
};

FIXTURE_SETUP(lifecycle)
{
	lc_setup(&self->f);
}

FIXTURE_TEARDOWN(lifecycle)
{
	lc_teardown(&self->f);
}

/*
 * A child of the kill test: registers its slots, says so on @ready, then
 * churns until it is killed.  Exits 1 if it cannot.
 */
static void killed_child(int ready, struct churn_counts *counts,
			 uint64_t seed)
{
	struct churn ch = { .counts = counts, .rand = seed };
	struct ibv_context *ctx;

	prctl(PR_SET_NAME, KILLED_COMM);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	mrpin_unlimit_memlock();
	ctx = mrpin_open_dev(mrpin_dev_name());
	if (!ctx) {
		counts->err = errno;
		_exit(1);
	}
	ch.pd = ibv_alloc_pd(ctx);
	if (!ch.pd || churn_map(&ch)) {
		counts->err = errno;
		_exit(1);
	}
	if (churn_fill(&ch))
		_exit(1);
	write_line(ready, "r");
	for (;;) {
		churn_round(&ch);
		if (__atomic_load_n(&counts->failed, __ATOMIC_RELAXED))
			_exit(1);
	}
}

struct victim {
	pid_t pid;
	int ready;	/* read end of its pipe, -1 once read */
	double delay;	/* after it starts or after it says ready */
	double kill_at;	/* 0 until known */
	bool waited_ready;
	bool was_ready;
};

static unsigned int env_count(const char *name, unsigned int def)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : def;
}

/*
 * Processes registering and deregistering MRs of random sizes, killed at
 * random moments: nothing of theirs is left, and what they held when they
 * died went to the kernel's cleanup.
 */
TEST_F_TIMEOUT(lifecycle, sigkill_at_random_moments_leaves_nothing, 580)
{
	unsigned int kills = env_count("MRPIN_KILLS", mrpin_short_loops() ?
					KILLS_DEFAULT / 4 : KILLS_DEFAULT);
	unsigned int seed = env_count("MRPIN_SEED", time(NULL) ^ getpid());
	uint64_t regs = 0, deregs = 0, ready_kills = 0, rand = seed | 1;
	struct mrpin_leak_row leak_before, leak_after;
	struct victim v[KILL_BATCH];
	struct churn_counts *counts;
	struct mrpin_stats before, after;
	unsigned int done, b, i, n;
	int pipefd[2], status;
	double now, next;

	TH_LOG("%u processes killed; seed %u (MRPIN_SEED)%s%s%s", kills, seed,
	       mrpin_short_loops() ? "; short loops (" : "",
	       mrpin_short_loops() ? mrpin_short_loops_why() : "",
	       mrpin_short_loops() ? ")" : "");
	counts = mmap(NULL, kills * sizeof(*counts), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, counts);
	read_stats(&before);
	leak_of(KILLED_COMM, &leak_before);

	for (done = 0; done < kills; done += n) {
		n = kills - done < KILL_BATCH ? kills - done : KILL_BATCH;
		for (b = 0; b < n; b++) {
			i = done + b;
			ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
			fflush(stdout);
			fflush(stderr);
			v[b] = (struct victim){
				.delay = KILL_MAX_DELAY *
					 (xorshift(&rand) % 1001) / 1000,
				/* One in four from its start, on. */
				.waited_ready = i % 4 != 0,
			};
			v[b].pid = fork();
			ASSERT_LE(0, v[b].pid);
			if (!v[b].pid) {
				close(pipefd[0]);
				killed_child(pipefd[1], &counts[i],
					     (xorshift(&rand) ^ i) | 1);
			}
			close(pipefd[1]);
			v[b].ready = pipefd[0];
			if (!v[b].waited_ready)
				v[b].kill_at = mrpin_now_s() + v[b].delay;
		}
		/* Kill each at its moment; learn when they get ready. */
		for (;;) {
			struct pollfd pfd[KILL_BATCH];
			int npfd = 0, timeout;
			char c;

			now = mrpin_now_s();
			next = 0;
			for (b = 0; b < n; b++) {
				if (v[b].kill_at && v[b].pid > 0 &&
				    v[b].kill_at <= now) {
					v[b].was_ready = v[b].ready < 0;
					ASSERT_EQ(0, kill(v[b].pid, SIGKILL));
					v[b].pid = -v[b].pid;
				}
				if (v[b].pid > 0 && v[b].kill_at &&
				    (!next || v[b].kill_at < next))
					next = v[b].kill_at;
				if (v[b].ready >= 0) {
					pfd[npfd].fd = v[b].ready;
					pfd[npfd].events = POLLIN;
					npfd++;
				}
			}
			if (!next && !npfd)
				break;
			timeout = next ? (int)((next - now) * 1000) + 1 : -1;
			if (!poll(pfd, npfd, timeout))
				continue;
			for (b = 0; b < n; b++) {
				struct pollfd *p = pfd;

				if (v[b].ready < 0)
					continue;
				while (p->fd != v[b].ready)
					p++;
				if (!p->revents)
					continue;
				/* "r", or EOF: it died (or was killed). */
				ASSERT_TRUE(read(v[b].ready, &c, 1) == 1 ||
					    v[b].pid < 0) {
					TH_LOG("process %u ended before it was ready: %s",
					       done + b,
					       strerror(counts[done + b].err));
				}
				close(v[b].ready);
				v[b].ready = -1;
				if (v[b].waited_ready && v[b].pid > 0)
					v[b].kill_at = mrpin_now_s() +
						       v[b].delay;
			}
		}
		for (b = 0; b < n; b++) {
			i = done + b;
			ASSERT_EQ(-v[b].pid, waitpid(-v[b].pid, &status, 0));
			ASSERT_TRUE(WIFSIGNALED(status) &&
				    WTERMSIG(status) == SIGKILL) {
				TH_LOG("process %u: wait status %#x: %s", i,
				       status, strerror(counts[i].err));
			}
			check_no_trace(-v[b].pid);
			ready_kills += v[b].was_ready;
			regs += counts[i].regs;
			deregs += counts[i].deregs;
		}
	}
	munmap(counts, kills * sizeof(*counts));

	check_nothing_left();
	check_sums();
	read_stats(&after);
	TH_LOG("%" PRIu64 " killed with their MRs registered; %" PRIu64 " registrations, %" PRIu64 " deregistrations, %" PRIu64 " cleanup releases",
	       ready_kills, after.pins_total - before.pins_total,
	       after.releases_total - before.releases_total -
	       (after.cleanup_releases_total - before.cleanup_releases_total),
	       after.cleanup_releases_total - before.cleanup_releases_total);
	/* Every pin made was released, by a deregistration or the cleanup. */
	EXPECT_EQ(after.pins_total - before.pins_total,
		  after.releases_total - before.releases_total);
	EXPECT_EQ(before.untracked_releases_total,
		  after.untracked_releases_total);
	/*
	 * A process counts a registration once ibv_reg_mr() returned: each
	 * may have made one more that it did not count (and the same for
	 * deregistrations), never fewer.
	 */
	EXPECT_LE(regs, after.pins_total - before.pins_total);
	EXPECT_GE(regs + kills, after.pins_total - before.pins_total);
	EXPECT_LE(deregs, after.releases_total - before.releases_total -
		  (after.cleanup_releases_total -
		   before.cleanup_releases_total));
	EXPECT_GE(deregs + kills,
		  after.releases_total - before.releases_total -
		  (after.cleanup_releases_total -
		   before.cleanup_releases_total));
	/* Killed after it was ready: it held CHURN_SLOTS - 1 MRs at least. */
	EXPECT_LE(ready_kills * (CHURN_SLOTS - 1),
		  after.cleanup_releases_total - before.cleanup_releases_total);
	EXPECT_GE(kills * CHURN_SLOTS,
		  after.cleanup_releases_total - before.cleanup_releases_total);
	leak_of(KILLED_COMM, &leak_after);
	EXPECT_EQ(after.cleanup_releases_total - before.cleanup_releases_total,
		  leak_after.count - leak_before.count);
}

/*
 * fork() with live MRs: the child has no pin, its own MR is its own, the
 * parent's line stays as it was.
 */
TEST_F(lifecycle, fork_child_inherits_no_pins)
{
	static const struct {
		size_t offset;
		size_t length;
	} own[] = { { 0, 4 * KiB }, { 100, 64 * KiB }, { 0, MiB } };
	uint64_t own_bytes = 0, child_bytes, vmpin, ids[8], ids_now[8];
	struct mrpin_proc_row row_before, row;
	struct mrpin_pin_row pin;
	struct ibv_context *ctx;
	struct ibv_mr *mr[3];
	uint64_t start, length;
	int in, out, status, i;
	struct ibv_pd *pd;
	char line[128];
	pid_t pid;
	char *buf;

	ctx = mrpin_open_dev(mrpin_dev_name());
	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	buf = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0x5a, 2 * MiB);
	for (i = 0; i < 3; i++) {
		do_reg(pd, buf + i * 512 * KiB + own[i].offset, own[i].length,
		       &mr[i]);
		own_bytes += mrpin_span_bytes((uintptr_t)mr[i]->addr,
					      own[i].length);
	}
	check_proc(getpid(), 3, own_bytes);
	ASSERT_EQ(3, pin_ids_of(getpid(), ids, 8));
	proc_row(getpid(), &row_before);

	pid = fork_talking(&in, &out);
	if (!pid) {
		struct ibv_context *cctx;
		struct ibv_pd *cpd;
		struct ibv_mr *cmr;
		char *cbuf;

		write_line(out, "forked\n");
		if (read_line(in, line, sizeof(line)) ||
		    strcmp(line, "reg"))
			_exit(1);
		cctx = mrpin_open_dev(mrpin_dev_name());
		cpd = cctx ? ibv_alloc_pd(cctx) : NULL;
		cbuf = mmap(NULL, 128 * KiB, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (!cpd || cbuf == MAP_FAILED)
			_exit(1);
		memset(cbuf, 0x5a, 128 * KiB);
		if (_do_reg(cpd, cbuf + 100, 64 * KiB, &cmr))
			_exit(1);
		snprintf(line, sizeof(line), "mr %" PRIuPTR " %zu\n",
			 (uintptr_t)cmr->addr, cmr->length);
		write_line(out, line);
		/* Exit with its MR registered when the parent says so. */
		while (read(in, line, sizeof(line)) > 0)
			;
		_exit(0);
	}

	/* Just forked: nothing of the parent's is the child's. */
	ASSERT_EQ(0, read_line(in, line, sizeof(line)));
	ASSERT_STREQ("forked", line);
	ASSERT_EQ(0, mrpin_vmpin(pid, &vmpin));
	EXPECT_EQ(0ULL, vmpin);
	check_no_trace(pid);
	check_proc(getpid(), 3, own_bytes);
	EXPECT_EQ(3, pin_ids_of(getpid(), ids_now, 8));
	EXPECT_EQ(0, memcmp(ids, ids_now, 3 * sizeof(ids[0])));

	/* The child's own MR: charged to it, not to its parent. */
	write_line(out, "reg\n");
	ASSERT_EQ(0, read_line(in, line, sizeof(line))) {
		TH_LOG("the child could not register");
	}
	ASSERT_EQ(2, sscanf(line, "mr %" SCNu64 " %" SCNu64, &start,
			    &length));
	child_bytes = mrpin_span_bytes(start, length);
	EXPECT_EQ(68 * KiB, child_bytes);
	check_proc(pid, 1, child_bytes);
	ASSERT_TRUE(only_pin_of(pid, &pin));
	EXPECT_EQ(start, pin.start);
	EXPECT_EQ(length, pin.length);
	EXPECT_EQ(child_bytes, pin.pinned_bytes);
	EXPECT_STREQ(mrpin_dev_name(), pin.device);
	check_proc(getpid(), 3, own_bytes);
	EXPECT_EQ(3, pin_ids_of(getpid(), ids_now, 8));
	EXPECT_EQ(0, memcmp(ids, ids_now, 3 * sizeof(ids[0])));
	proc_row(getpid(), &row);
	EXPECT_EQ(row_before.pins, row.pins);
	EXPECT_EQ(row_before.pinned_bytes, row.pinned_bytes);
	EXPECT_EQ(row_before.peak_bytes, row.peak_bytes);
	EXPECT_EQ(row_before.vm_pinned_bytes, row.vm_pinned_bytes);

	/* The child exits with its MR and the parent's device file. */
	close(out);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(in);
	check_no_trace(pid);
	check_proc(getpid(), 3, own_bytes);
	EXPECT_EQ(3, pin_ids_of(getpid(), ids_now, 8));
	EXPECT_EQ(0, memcmp(ids, ids_now, 3 * sizeof(ids[0])));

	for (i = 0; i < 3; i++)
		do_dereg(mr[i]);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	munmap(buf, 2 * MiB);
	check_proc(getpid(), 0, 0);
}

FIXTURE(exec) {
	struct mrpin_fixture f;
};

FIXTURE_VARIANT(exec) {
	bool keep_file;
};

/* rdma-core opens the device file close-on-exec. */
FIXTURE_VARIANT_ADD(exec, device_file_closed_on_exec) {
	.keep_file = false,
};
FIXTURE_VARIANT_ADD(exec, device_file_kept_across_exec) {
	.keep_file = true,
};

FIXTURE_SETUP(exec)
{
	lc_setup(&self->f);
}

FIXTURE_TEARDOWN(exec)
{
	lc_teardown(&self->f);
}

#define EXEC_MRS 4

static const struct {
	size_t offset;
	size_t length;
} exec_mrs[EXEC_MRS] = {
	{ 0, 4 * KiB }, { 100, 64 * KiB }, { 0, MiB }, { PAGE - 1, 2 },
};

/*
 * The child of the exec test: registers exec_mrs, prints them and "ready",
 * execs this program with --after-exec when told "exec".
 */
static void execer_child(bool keep_file)
{
	char line[64], exe[PATH_MAX];
	struct ibv_context *ctx;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	int i, flags;
	ssize_t len;
	char *buf;

	prctl(PR_SET_NAME, EXECER_COMM);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		_exit(1);
	exe[len] = '\0';
	ctx = mrpin_open_dev(mrpin_dev_name());
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	buf = mmap(NULL, EXEC_MRS * 2 * MiB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pd || buf == MAP_FAILED)
		_exit(1);
	memset(buf, 0x5a, EXEC_MRS * 2 * MiB);
	for (i = 0; i < EXEC_MRS; i++) {
		if (_do_reg(pd, buf + i * 2 * MiB + exec_mrs[i].offset,
			    exec_mrs[i].length, &mr))
			_exit(1);
		printf("mr %" PRIuPTR " %zu\n", (uintptr_t)mr->addr,
		       mr->length);
	}
	flags = fcntl(ctx->cmd_fd, F_GETFD);
	printf("cloexec %d\nready\n", flags >= 0 && (flags & FD_CLOEXEC));
	fflush(stdout);
	if (read_line(STDIN_FILENO, line, sizeof(line)) ||
	    strcmp(line, "exec"))
		_exit(1);
	if (keep_file)
		fcntl(ctx->cmd_fd, F_SETFD, flags & ~FD_CLOEXEC);
	execl(exe, "mrpin_lifecycle", "--after-exec", NULL);
	_exit(127);
}

TEST_F(exec, live_mrs_go_with_the_device_file)
{
	struct mrpin_leak_row leak_before, leak_after;
	struct mrpin_stats before, after;
	uint64_t start, length, bytes = 0, vmpin;
	int in, out, status, i, n, cloexec, pins, procs;
	char line[128], comm[64];
	pid_t pid;

	pid = fork_talking(&in, &out);
	if (!pid) {
		dup2(in, STDIN_FILENO);
		dup2(out, STDOUT_FILENO);
		execer_child(variant->keep_file);
	}
	for (i = 0; i < EXEC_MRS; i++) {
		ASSERT_EQ(0, read_line(in, line, sizeof(line))) {
			TH_LOG("the child could not register");
		}
		ASSERT_EQ(2, sscanf(line, "mr %" SCNu64 " %" SCNu64, &start,
				    &length));
		bytes += mrpin_span_bytes(start, length);
	}
	ASSERT_EQ(0, read_line(in, line, sizeof(line)));
	n = sscanf(line, "cloexec %d", &cloexec);
	ASSERT_EQ(1, n);
	EXPECT_EQ(1, cloexec) {
		TH_LOG("rdma-core opened the device file without O_CLOEXEC");
	}
	ASSERT_EQ(0, read_line(in, line, sizeof(line)));
	ASSERT_STREQ("ready", line);
	check_proc(pid, EXEC_MRS, bytes);
	read_stats(&before);
	leak_of(EXECER_COMM, &leak_before);

	write_line(out, "exec\n");
	ASSERT_EQ(0, read_line(in, line, sizeof(line)));
	n = sscanf(line, "after-exec vmpin %" SCNu64 " pins %d procs %d",
		   &vmpin, &pins, &procs);
	ASSERT_EQ(3, n) {
		TH_LOG("after exec: \"%s\"", line);
	}
	/* The new program: a new address space, without a pin. */
	EXPECT_EQ(0ULL, vmpin);
	ASSERT_EQ(0, mrpin_comm(pid, comm, sizeof(comm)));
	EXPECT_STREQ("mrpin_lifecycle", comm);
	read_stats(&after);
	if (!variant->keep_file) {
		/* What it saw of itself, and what the others see. */
		EXPECT_EQ(0, pins);
		EXPECT_EQ(0, procs);
		check_no_trace(pid);
		EXPECT_EQ(before.pins - EXEC_MRS, after.pins);
		EXPECT_EQ(before.pinned_bytes - bytes, after.pinned_bytes);
		EXPECT_EQ(before.releases_total + EXEC_MRS,
			  after.releases_total);
		/* Released by exec, not by the program: cleanup, a leak. */
		EXPECT_EQ(before.cleanup_releases_total + EXEC_MRS,
			  after.cleanup_releases_total);
		leak_of(EXECER_COMM, &leak_after);
		EXPECT_EQ(leak_before.count + EXEC_MRS, leak_after.count);
		EXPECT_EQ(leak_before.bytes + bytes, leak_after.bytes);
	} else {
		/* Still charged to the old address space, under its pid. */
		EXPECT_EQ(EXEC_MRS, pins);
		EXPECT_EQ(1, procs);
		EXPECT_EQ(before.pins, after.pins);
		EXPECT_EQ(before.pinned_bytes, after.pinned_bytes);
		EXPECT_EQ(before.releases_total, after.releases_total);
	}
	EXPECT_EQ(before.untracked_releases_total,
		  after.untracked_releases_total);

	close(out);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
		TH_LOG("wait status %#x", status);
	}
	close(in);
	check_no_trace(pid);
	read_stats(&after);
	EXPECT_EQ(before.pins - EXEC_MRS, after.pins);
	EXPECT_EQ(before.releases_total + EXEC_MRS, after.releases_total);
	/* Either way the kernel's cleanup released them: exec or exit. */
	EXPECT_EQ(before.cleanup_releases_total + EXEC_MRS,
		  after.cleanup_releases_total);
	leak_of(EXECER_COMM, &leak_after);
	EXPECT_EQ(leak_before.count + EXEC_MRS, leak_after.count);
	EXPECT_EQ(leak_before.bytes + bytes, leak_after.bytes);
	EXPECT_EQ(before.untracked_releases_total,
		  after.untracked_releases_total);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--after-exec"))
		return after_exec_main();
	if (argc == 3 && !strcmp(argv[1], "--churn")) {
		int n = atoi(argv[2]);

		if (n < 1) {
			fprintf(stderr, "usage: mrpin_lifecycle --churn THREADS\n");
			return 2;
		}
		return churn_main(n);
	}
	mrpin_require_testable(NULL, NULL);
	return test_harness_run(argc, argv);
}
