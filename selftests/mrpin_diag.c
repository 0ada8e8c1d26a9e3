// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's diagnostics of what a pin is, each case made on purpose by a
 * real program on the RDMA device under test (rxe0 unless $MRPIN_TEST_DEV
 * says otherwise): this program, its threads, or mrpin_mistakes children.
 *
 *  - the views show the diagnostics' columns last, and the global rule's
 *    own keys read back;
 *  - stack memory (main thread, pthread) is flagged in `pins`, counted in
 *    `procs` and `stats`, and allowed, warned about or refused as the global
 *    rule's stack= says, with an event and a kernel log line;
 *  - the page backing of every pin (4 KiB, 2 MiB THP or hugetlbfs, 1 GiB
 *    hugetlbfs) agrees with what pagemap and kpageflags say of the pages;
 *  - align is the largest power of two dividing the start, up to 1 GiB;
 *  - oversized: the pinned bytes reach the global oversize= mark;
 *  - a device's MR table warns once per crossing of mr_table_warn=.
 *
 * mrpin_leaks.c checks how pins end.  Every test starts from the default
 * policy and restores it (`reset`), and leaves no pin, no huge-page backed
 * byte and no kernel warning behind.  The kernel log lines of warnings and
 * refusals are rate-limited: the tests that look for one space their
 * logged events out (mrpin_log_room()).
 */
#include "mrpin_diag.h"

#include <ucontext.h>

FIXTURE(diag) {
	struct diag_test t;
};

FIXTURE_SETUP(diag)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(diag)
{
	test_teardown(&self->t);
}

/*
 * 1. The views: the new columns come last, in the contract's order; the
 * new tables have their headers; `stats` has the new keys; the global
 * rule shows the new keys' defaults.
 */
TEST_F(diag, views_show_the_new_columns_last_and_the_new_tables)
{
	struct mrpin_stats stats;
	char line[1024];

	header_of("pins", line, sizeof(line));
	EXPECT_TRUE(ends_with(line, PINS_TAIL)) {
		TH_LOG("pins header: %s", line);
	}
	header_of("procs", line, sizeof(line));
	EXPECT_TRUE(ends_with(line, PROCS_TAIL)) {
		TH_LOG("procs header: %s", line);
	}
	header_of("leaks", line, sizeof(line));
	EXPECT_STREQ(LEAKS_HEADER, line);
	header_of("callsites", line, sizeof(line));
	EXPECT_STREQ(CALLSITES_HEADER, line);
	EXPECT_EQ(0, mrpin_read_stats(&stats));
	EXPECT_EQ(stats.pinned_bytes,
		  stats.bytes_4k + stats.bytes_2m + stats.bytes_1g);
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, " " GLOBAL_DEFAULTS)) {
		TH_LOG("global line after reset: %s", line);
	}
}

/*
 * 2. The global rule's own keys: written, read back, kept by a line that
 * does not name them, refused on any other rule or with a bad value (the
 * policy unchanged), and restored by reset.
 */
TEST_F(diag, global_keys_read_back_and_are_refused_on_other_rules)
{
	static const char *const bad[] = {
		"process stack=deny\n", "uid 1000 oversize=1M\n",
		"process mr_table_warn=1%\n", "process callsites=on\n",
		"global stack=maybe\n", "global stack=\n",
		"global oversize=1X\n", "global oversize=-1\n",
		"global mr_table_warn=101%\n", "global mr_table_warn=5\n",
		"global callsites=yes\n", "global stack=allow stack=deny\n",
		"process log_failures=on\n", "global log_failures=1\n",
	};
	const char *want = " stack=deny oversize=1M mr_table_warn=1% callsites=on log_failures=off";
	char line[1024];
	size_t i;

	set_limits("%s", "global stack=deny oversize=1M mr_table_warn=1% callsites=on\n");
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, want)) {
		TH_LOG("global line: %s", line);
	}
	set_limits("global max_pins=1000\n");
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, want)) {
		TH_LOG("global line: %s", line);
	}
	set_limits("%s", "global stack=allow oversize=3G mr_table_warn=0% callsites=off log_failures=on\n");
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, " stack=allow oversize=3G mr_table_warn=0% callsites=off log_failures=on")) {
		TH_LOG("global line: %s", line);
	}
	for (i = 0; i < MRPIN_ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(EINVAL, mrpin_limits_write(bad[i], strlen(bad[i]))) {
			TH_LOG("accepted: %s", bad[i]);
		}
	}
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, " stack=allow oversize=3G mr_table_warn=0% callsites=off log_failures=on")) {
		TH_LOG("a refused write changed the policy: %s", line);
	}
	set_limits("reset\n");
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, " " GLOBAL_DEFAULTS)) {
		TH_LOG("global line after reset: %s", line);
	}
}

/*
 * 3. Stack memory, registered from the main thread or from a pthread, is
 * flagged; stack=warn (the default) allows it with an event and a log line,
 * stack=allow without a word, stack=deny refuses it with ENOMEM.  A heap
 * buffer registered from the same thread is not flagged, also when it is
 * in the same VMA as the thread's stack, just above it: the kernel merges
 * a thread stack with an anonymous mapping made before it, and the
 * variant with its own stack builds exactly that.
 */
FIXTURE(stack) {
	struct diag_test t;
};

FIXTURE_VARIANT(stack) {
	bool thread;
	bool heap_above_stack;	/* the thread's stack and the heap buffer: one VMA */
	const char *rule;	/* stack=...; NULL: the default (warn) */
};

FIXTURE_VARIANT_ADD(stack, main_thread_default_warn) {
	.thread = false, .rule = NULL,
};
FIXTURE_VARIANT_ADD(stack, main_thread_allow) {
	.thread = false, .rule = "allow",
};
FIXTURE_VARIANT_ADD(stack, main_thread_deny) {
	.thread = false, .rule = "deny",
};
FIXTURE_VARIANT_ADD(stack, pthread_warn) {
	.thread = true, .rule = "warn",
};
FIXTURE_VARIANT_ADD(stack, pthread_allow) {
	.thread = true, .rule = "allow",
};
FIXTURE_VARIANT_ADD(stack, pthread_deny) {
	.thread = true, .rule = "deny",
};
FIXTURE_VARIANT_ADD(stack, pthread_heap_above_its_stack_deny) {
	.thread = true, .heap_above_stack = true, .rule = "deny",
};

FIXTURE_SETUP(stack)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(stack)
{
	test_teardown(&self->t);
}

#define STACK_REGION	(1UL << 20)	/* a thread stack of the test's own */

struct stack_job {
	struct ibv_pd *pd;
	bool thread;
	pthread_barrier_t bar;
	/* what the registering thread did */
	char *stack_buf;
	struct ibv_mr *stack_mr;
	int stack_err;
	char *heap_buf;
	struct ibv_mr *heap_mr;
	int heap_err;
	char *heap_above;	/* the heap buffer to use; NULL: map one */
	/* the state before */
	struct mrpin_stats before;
	struct mrpin_proc_row proc_before;
	uint64_t from;
	int kfd;
};

/* The checks while the registering frame (and its stack buffer) lives. */
static void stack_checks(struct __test_metadata *_metadata,
			 const FIXTURE_VARIANT(stack) *variant,
			 struct stack_job *job)
{
	const char *rule = variant->rule ?: "warn";
	bool deny = !strcmp(rule, "deny"), warn = !strcmp(rule, "warn");
	uint64_t asked = mrpin_span_bytes((uintptr_t)job->stack_buf, PAGE);
	struct mrpin_event ev[4];
	struct mrpin_proc_row proc;
	struct mrpin_pin_row pin = { 0 };
	struct mrpin_stats after;
	char comm[64], line[256], *log;
	int n;

	ASSERT_EQ(2 * PAGE, asked);
	ASSERT_NE(NULL, job->heap_mr) {
		TH_LOG("heap buffer: %s", strerror(job->heap_err));
	}
	pin_row(getpid(), job->heap_buf, PAGE, &pin);
	EXPECT_EQ(0ULL, (unsigned long long)pin.stack) {
		TH_LOG("a heap buffer registered from the %s is flagged as stack",
		       job->thread ? "pthread" : "main thread");
	}
	if (deny) {
		EXPECT_EQ(NULL, job->stack_mr);
		EXPECT_EQ(ENOMEM, job->stack_err) {
			TH_LOG("stack=deny: %s, not ENOMEM",
			       job->stack_mr ? "registered" :
			       strerror(job->stack_err));
		}
	} else {
		ASSERT_NE(NULL, job->stack_mr) {
			TH_LOG("stack=%s: %s", rule, strerror(job->stack_err));
		}
		pin_row(getpid(), job->stack_buf, PAGE, &pin);
		EXPECT_EQ(1ULL, (unsigned long long)pin.stack);
		EXPECT_EQ(asked, pin.pinned_bytes);
	}

	proc_row(getpid(), &proc);
	read_stats(&after);
	EXPECT_EQ(job->proc_before.stack_pins + !deny, proc.stack_pins);
	EXPECT_EQ(job->proc_before.denials + deny, proc.denials);
	EXPECT_EQ(job->before.stack_pins_total + !deny, after.stack_pins_total);
	EXPECT_EQ(job->before.denials_total + deny, after.denials_total);
	EXPECT_EQ(job->before.warnings_total + warn, after.warnings_total);

	ASSERT_EQ(0, mrpin_comm(getpid(), comm, sizeof(comm)));
	n = events_since(job->from, getpid(), NULL, ev, 4);
	if (!deny && !warn) {
		EXPECT_EQ(0, n) {
			TH_LOG("stack=allow: %d events, the first %s %s", n,
			       ev[0].action, ev[0].key);
		}
		log = mrpin_kmsg_read(job->kfd);
		ASSERT_NE(NULL, log);
		snprintf(line, sizeof(line), "mrpin: pid %d (", getpid());
		EXPECT_EQ(NULL, strstr(log, line)) {
			mrpin_log_show(log);
		}
		free(log);
		return;
	}
	mrpin_note_logged(mrpin_budget, 1);
	ASSERT_EQ(1, n);
	check_event(&ev[0], deny ? "deny" : "warn", getpid(), getuid(),
		    "global", "stack", asked, 0, 0);
	snprintf(line, sizeof(line),
		 "mrpin: pid %d (%s) uid %u: %s %llu bytes of stack memory",
		 getpid(), comm, getuid(), deny ? "refused" : "registered",
		 (unsigned long long)asked);
	check_log_has(job->kfd, line, NULL);
}

/*
 * Register a heap buffer, then a page-long range of a buffer on this
 * frame's stack (from byte 100: two pages); check (main thread) or let the
 * main thread check (pthread); deregister.
 */
static void stack_frame(struct __test_metadata *_metadata,
			const FIXTURE_VARIANT(stack) *variant,
			struct stack_job *job)
{
	char buf[3 * PAGE] __attribute__((aligned(64)));

	memset(buf, 0x5a, sizeof(buf));
	job->heap_buf = job->heap_above ?:
			mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (job->heap_buf == MAP_FAILED) {
		job->heap_buf = NULL;
		job->heap_err = errno;
	} else {
		memset(job->heap_buf, 0x5a, PAGE);
		if (_do_reg(job->pd, job->heap_buf, PAGE, &job->heap_mr))
			job->heap_err = errno;
	}
	job->stack_buf = buf + 100;
	if (_do_reg(job->pd, job->stack_buf, PAGE, &job->stack_mr))
		job->stack_err = errno;

	if (job->thread) {
		pthread_barrier_wait(&job->bar);	/* registered */
		pthread_barrier_wait(&job->bar);	/* checked */
	} else {
		stack_checks(_metadata, variant, job);
	}
	if (job->stack_mr)
		ibv_dereg_mr(job->stack_mr);
	if (job->heap_mr)
		ibv_dereg_mr(job->heap_mr);
	if (job->heap_buf && !job->heap_above)
		munmap(job->heap_buf, PAGE);
	job->stack_mr = job->heap_mr = NULL;
	/* The buffer must live until here. */
	__asm__ volatile("" : : "r"(buf) : "memory");
}

static void *stack_thread(void *arg)
{
	stack_frame(NULL, NULL, arg);
	return NULL;
}

TEST_F(stack, registration_of_stack_memory_is_flagged_and_warned_allowed_or_denied)
{
	struct diag_test *t = &self->t;
	struct stack_job job = { .pd = t->f.pd, .thread = variant->thread };
	struct mrpin_stats after;
	struct ibv_mr *anchor;
	char rule[64], *region = NULL;
	pthread_attr_t attr;
	pthread_t thread;
	void *heap;

	if (variant->rule) {
		snprintf(rule, sizeof(rule), "global stack=%s\n", variant->rule);
		set_limits("%s", rule);
	}
	/* The anchor keeps this process's `procs` line, and its denials. */
	heap = map_buf(PAGE);
	do_reg(t->f.pd, heap, PAGE, &anchor);
	read_stats(&job.before);
	proc_row(getpid(), &job.proc_before);
	job.from = next_seq();
	mrpin_log_room(mrpin_budget);
	job.kfd = mrpin_kmsg_open();
	ASSERT_LE(0, job.kfd);

	ASSERT_EQ(0, pthread_attr_init(&attr));
	if (variant->heap_above_stack) {
		/* One mapping: the stack below, then a page of heap. */
		region = mmap(NULL, STACK_REGION + PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, region);
		ASSERT_EQ(0, pthread_attr_setstack(&attr, region, STACK_REGION));
		job.heap_above = region + STACK_REGION;
		memset(job.heap_above, 0x5a, PAGE);
	}
	if (variant->thread) {
		ASSERT_EQ(0, pthread_barrier_init(&job.bar, NULL, 2));
		ASSERT_EQ(0, pthread_create(&thread, &attr, stack_thread, &job));
		pthread_barrier_wait(&job.bar);
		stack_checks(_metadata, variant, &job);
		pthread_barrier_wait(&job.bar);
		ASSERT_EQ(0, pthread_join(thread, NULL));
		pthread_barrier_destroy(&job.bar);
	} else {
		stack_frame(_metadata, variant, &job);
	}
	close(job.kfd);
	pthread_attr_destroy(&attr);
	if (region)
		munmap(region, STACK_REGION + PAGE);

	/* The flag went with the pin; the count stays. */
	read_stats(&after);
	EXPECT_EQ(job.before.pins, after.pins);
	EXPECT_EQ(job.before.stack_pins_total +
		  !(variant->rule && !strcmp(variant->rule, "deny")),
		  after.stack_pins_total);
	do_dereg(anchor);
	munmap(heap, PAGE);
}

/*
 * 3b. A user-level thread (makecontext(), as Argobots, bthread, seastar or
 * Boost.Context make them) runs on a stack its runtime cut from the heap:
 * from a pool it mapped, or from the brk heap.  Under stack=deny, a buffer
 * on that stack and a heap buffer in the same mapping above it are both
 * registered, neither is flagged as stack, and no event is made: mrpin
 * cannot know where such a stack ends, and never refuses on a guess.  The
 * user-level thread runs from the main thread or from a pthread (whose
 * thread pointer lies in its own stack block, not in the pool).
 */
FIXTURE(heap_stack) {
	struct diag_test t;
};

FIXTURE_VARIANT(heap_stack) {
	bool thread;	/* run by a pthread, not the main thread */
	bool brk;	/* the stack and the buffer from the brk heap */
};

FIXTURE_VARIANT_ADD(heap_stack, main_thread_pool) {
	.thread = false, .brk = false,
};
FIXTURE_VARIANT_ADD(heap_stack, main_thread_brk) {
	.thread = false, .brk = true,
};
FIXTURE_VARIANT_ADD(heap_stack, pthread_pool) {
	.thread = true, .brk = false,
};
FIXTURE_VARIANT_ADD(heap_stack, pthread_brk) {
	.thread = true, .brk = true,
};

FIXTURE_SETUP(heap_stack)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(heap_stack)
{
	test_teardown(&self->t);
}

#define ULT_STACK	(256UL << 10)	/* the user-level thread's stack */

/* makecontext() passes ints only: the job is the program's one. */
static struct ult_job {
	struct ibv_pd *pd;
	char *heap_buf;		/* above the stack, in the same mapping */
	char *frame_buf;	/* on the user-level thread's stack */
	struct ibv_mr *frame_mr, *heap_mr;
	int frame_err, heap_err;
	ucontext_t runner, ult;
} ult_job;

/* The user-level thread: register, let the checks run, deregister. */
static void ult_body(void)
{
	char buf[3 * PAGE] __attribute__((aligned(64)));
	struct ult_job *j = &ult_job;

	memset(buf, 0x5a, sizeof(buf));
	j->frame_buf = buf + 100;
	if (_do_reg(j->pd, j->frame_buf, PAGE, &j->frame_mr))
		j->frame_err = errno;
	if (_do_reg(j->pd, j->heap_buf, PAGE, &j->heap_mr))
		j->heap_err = errno;
	swapcontext(&j->ult, &j->runner);	/* checked while it lives */
	if (j->frame_mr)
		ibv_dereg_mr(j->frame_mr);
	if (j->heap_mr)
		ibv_dereg_mr(j->heap_mr);
	j->frame_mr = j->heap_mr = NULL;
	__asm__ volatile("" : : "r"(buf) : "memory");
}	/* to uc_link: the runner */

/*
 * Set the user-level thread up on @stack, and switch to it: out of the
 * test's body, which must not call a function that returns twice.
 */
static int ult_make(struct ult_job *j, char *stack)
{
	if (getcontext(&j->ult))
		return -1;
	j->ult.uc_stack.ss_sp = stack;
	j->ult.uc_stack.ss_size = ULT_STACK;
	j->ult.uc_link = &j->runner;
	makecontext(&j->ult, ult_body, 0);
	return 0;
}

static int ult_switch(struct ult_job *j)
{
	return swapcontext(&j->runner, &j->ult);
}

static void *ult_runner(void *arg)
{
	struct ult_job *j = arg;

	ult_switch(j);	/* back once registered */
	return NULL;
}

TEST_F(heap_stack, user_level_thread_stack_on_the_heap_is_not_stack)
{
	struct ult_job *j = &ult_job;
	struct mrpin_stats before, after;
	struct mrpin_pin_row pin;
	struct mrpin_event ev[2];
	pthread_t thread;
	uint64_t from;
	char *block;
	size_t size = ULT_STACK + 2 * PAGE;
	int n;

	memset(j, 0, sizeof(*j));
	j->pd = self->t.f.pd;
	if (variant->brk) {
		block = sbrk(size);
		ASSERT_NE((void *)-1, block);
	} else {
		block = mmap(NULL, size, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, block);
	}
	j->heap_buf = block + ULT_STACK + PAGE;
	memset(j->heap_buf, 0x5a, PAGE);
	ASSERT_EQ(0, ult_make(j, block));

	set_limits("%s", "global stack=deny\n");
	read_stats(&before);
	from = next_seq();
	/* Run it up to its checkpoint, from this thread or a pthread. */
	if (variant->thread) {
		ASSERT_EQ(0, pthread_create(&thread, NULL, ult_runner, j));
		ASSERT_EQ(0, pthread_join(thread, NULL));
	} else {
		ASSERT_EQ(0, ult_switch(j));
	}

	ASSERT_NE(NULL, j->frame_mr) {
		TH_LOG("a buffer on the user-level thread's stack, from the %s's %s: %s",
		       variant->thread ? "pthread" : "main thread",
		       variant->brk ? "brk heap" : "pool", strerror(j->frame_err));
	}
	ASSERT_NE(NULL, j->heap_mr) {
		TH_LOG("a heap buffer above the user-level thread's stack: %s",
		       strerror(j->heap_err));
	}
	pin_row(getpid(), j->frame_buf, PAGE, &pin);
	EXPECT_EQ(0ULL, (unsigned long long)pin.stack);
	pin_row(getpid(), j->heap_buf, PAGE, &pin);
	EXPECT_EQ(0ULL, (unsigned long long)pin.stack);
	read_stats(&after);
	EXPECT_EQ(before.stack_pins_total, after.stack_pins_total);
	EXPECT_EQ(before.denials_total, after.denials_total);
	n = events_since(from, getpid(), NULL, ev, 2);
	EXPECT_EQ(0, n) {
		TH_LOG("%d events, the first %s %s", n, ev[0].action, ev[0].key);
	}

	/* Let it deregister and end (from any thread: a context is data). */
	ASSERT_EQ(0, ult_switch(j));
	EXPECT_EQ(NULL, j->frame_mr);
	if (!variant->brk)
		munmap(block, size);
}

/*
 * 4. The page backing of a pin, against what pagemap and kpageflags say of
 * the pinned pages: a buffer with MADV_NOHUGEPAGE (4 KiB pages), a THP
 * buffer (aligned_alloc + MADV_HUGEPAGE), hugetlbfs with 2 MiB and 1 GiB
 * pages.  Two MRs each: the first two huge pages' worth from the start, and
 * four pages across the boundary between the first two huge pages.
 */
enum backing { BACK_4K, BACK_THP, BACK_HUGETLB_2M, BACK_HUGETLB_1G };

FIXTURE(backing) {
	struct diag_test t;
};

FIXTURE_VARIANT(backing) {
	enum backing kind;
};

FIXTURE_VARIANT_ADD(backing, madv_nohugepage_4k) {
	.kind = BACK_4K,
};
FIXTURE_VARIANT_ADD(backing, thp_2m) {
	.kind = BACK_THP,
};
FIXTURE_VARIANT_ADD(backing, hugetlbfs_2m) {
	.kind = BACK_HUGETLB_2M,
};
FIXTURE_VARIANT_ADD(backing, hugetlbfs_1g) {
	.kind = BACK_HUGETLB_1G,
};

FIXTURE_SETUP(backing)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(backing)
{
	test_teardown(&self->t);
}

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB	(21 << MAP_HUGE_SHIFT)
#define MAP_HUGE_1GB	(30 << MAP_HUGE_SHIFT)
#endif

#define KPF_HUGE	17
#define KPF_THP		22

/*
 * Bytes of the pages spanned by [@addr, +@len) that sit in huge pages (THP
 * or hugetlbfs), from /proc/self/pagemap and /proc/kpageflags: 0 or a
 * negative errno.
 */
static int huge_bytes(uintptr_t addr, uint64_t len, uint64_t *bytes)
{
	uint64_t va, e, flags, pfn;
	int pm, kf, ret = 0;

	*bytes = 0;
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	kf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (pm < 0 || kf < 0) {
		ret = -errno;
		goto out;
	}
	for (va = addr & ~(PAGE - 1); va < addr + len; va += PAGE) {
		if (pread(pm, &e, sizeof(e), va / PAGE * sizeof(e)) != sizeof(e)) {
			ret = -EIO;
			break;
		}
		pfn = e & ((1ULL << 55) - 1);
		if (!(e >> 63) || !pfn) {
			ret = -ENOENT;	/* not present, or no PFN shown */
			break;
		}
		if (pread(kf, &flags, sizeof(flags), pfn * sizeof(flags)) !=
		    sizeof(flags)) {
			ret = -EIO;
			break;
		}
		if (flags & (1ULL << KPF_THP | 1ULL << KPF_HUGE))
			*bytes += PAGE;
	}
out:
	if (pm >= 0)
		close(pm);
	if (kf >= 0)
		close(kf);
	return ret;
}

/* Ask for @n more huge pages in @file; what it has now in *@have. */
static int reserve_huge(struct diag_test *t, const char *file, uint64_t n,
			uint64_t *have)
{
	char num[32];
	int err;

	err = mrpin_read_u64_file(file, &t->huge_saved);
	if (err)
		return -err;
	t->huge_file = file;
	snprintf(num, sizeof(num), "%llu",
		 (unsigned long long)(t->huge_saved + n));
	err = mrpin_write_file(file, num);
	if (err)
		return err;
	err = mrpin_read_u64_file(file, have);
	return err < 0 ? -err : err;
}

/*
 * The buffer of @map_len bytes for backing @kind (its mapping in *@memp for
 * munmap(), NULL for free()), touched; or NULL with the reason to skip in
 * @skip.
 */
static char *__backing_buf(struct __test_metadata *_metadata,
			   struct diag_test *t, enum backing kind,
			   uint64_t map_len, uint64_t huge, char **memp,
			   char *skip, size_t skip_len)
{
	char *buf = NULL, *mem, *text, word[16];
	const char *sel;
	uint64_t have = 0;
	int ret;

	*memp = NULL;
	switch (kind) {
	case BACK_4K:
		mem = mmap(NULL, map_len + 2 * MiB, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, mem);
		*memp = mem;
		buf = (char *)(((uintptr_t)mem + 2 * MiB - 1) & ~(2 * MiB - 1));
		/* Without THP (PREEMPT_RT), anonymous memory is 4 KiB anyway. */
		if (access(THP_ENABLED, F_OK) == 0)
			ASSERT_EQ(0, madvise(buf, map_len, MADV_NOHUGEPAGE));
		break;
	case BACK_THP:
		if (mrpin_read_file(THP_ENABLED, &text)) {
			snprintf(skip, skip_len,
				 "no transparent huge pages: %s is missing",
				 THP_ENABLED);
			return NULL;
		}
		sel = strchr(text, '[');
		ret = sel ? sscanf(sel, "[%15[a-z]]", word) : 0;
		free(text);
		ASSERT_EQ(1, ret);
		snprintf(t->thp_saved, sizeof(t->thp_saved), "%s", word);
		ASSERT_EQ(0, mrpin_write_file(THP_ENABLED, "always"));
		buf = aligned_alloc(2 * MiB, map_len);
		ASSERT_NE(NULL, buf);
		ASSERT_EQ(0, madvise(buf, map_len, MADV_HUGEPAGE));
		break;
	case BACK_HUGETLB_2M:
	case BACK_HUGETLB_1G:
		sel = kind == BACK_HUGETLB_2M ? HUGEPAGES_2M : HUGEPAGES_1G;
		if (access(sel, F_OK)) {
			snprintf(skip, skip_len,
				 "no hugetlbfs pages of %llu MiB: %s is missing",
				 (unsigned long long)(huge / MiB), sel);
			return NULL;
		}
		if (kind == BACK_HUGETLB_1G) {
			/* The best chance for 1 GiB of contiguous memory. */
			mrpin_write_file("/proc/sys/vm/drop_caches", "3");
			mrpin_write_file("/proc/sys/vm/compact_memory", "1");
		}
		ret = reserve_huge(t, sel, map_len / huge, &have);
		if (ret || have < t->huge_saved + map_len / huge) {
			snprintf(skip, skip_len,
				 "cannot reserve %llu more huge pages of %llu MiB (%s: %llu, now %llu): %s",
				 (unsigned long long)(map_len / huge),
				 (unsigned long long)(huge / MiB), sel,
				 (unsigned long long)t->huge_saved,
				 (unsigned long long)have,
				 ret ? strerror(ret) : "not enough memory");
			return NULL;
		}
		mem = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			   (kind == BACK_HUGETLB_1G ? MAP_HUGE_1GB :
						      MAP_HUGE_2MB), -1, 0);
		if (mem == MAP_FAILED) {
			snprintf(skip, skip_len,
				 "mmap(MAP_HUGETLB) of %llu MiB: %s",
				 (unsigned long long)(map_len / MiB),
				 strerror(errno));
			return NULL;
		}
		*memp = buf = mem;
		break;
	}
	memset(buf, 0x5a, map_len);
	return buf;
}
#define backing_buf(t, kind, map_len, huge, memp, skip)			\
	__backing_buf(_metadata, t, kind, map_len, huge, memp, skip,	\
		      sizeof(skip))

/*
 * The `pins` rows of the two MRs at @start, their process's row and
 * `stats` count in 2 MiB (1 GiB when @giant) pages what pagemap says,
 * @want_huge; `stats` moved from @before by their sums.  Not inlined in
 * the test: its locals would sit under the harness's setjmp().
 */
static void __attribute__((noinline))
__check_backing_rows(struct __test_metadata *_metadata,
		     pid_t pid, char *const start[2], const uint64_t len[2],
		     const uint64_t want_huge[2], bool giant,
		     const struct mrpin_stats *before)
{
	uint64_t sum_2m = 0, sum_1g = 0, hb;
	struct mrpin_proc_row proc;
	struct mrpin_stats during;
	struct mrpin_pin_row pin;
	int i;

	for (i = 0; i < 2; i++) {
		pin_row(pid, start[i], len[i], &pin);
		hb = giant ? pin.bytes_1g : pin.bytes_2m;
		EXPECT_EQ(want_huge[i], hb) {
			TH_LOG("MR %d: %llu bytes in %s pages, pagemap says %llu",
			       i, (unsigned long long)hb,
			       giant ? "1 GiB" : "2 MiB",
			       (unsigned long long)want_huge[i]);
		}
		EXPECT_EQ(0ULL, (unsigned long long)(giant ? pin.bytes_2m :
								 pin.bytes_1g));
		EXPECT_EQ(pin.pinned_bytes - want_huge[i], pin.bytes_4k);
		EXPECT_EQ(pin.pinned_bytes,
			  pin.bytes_4k + pin.bytes_2m + pin.bytes_1g);
		sum_2m += pin.bytes_2m;
		sum_1g += pin.bytes_1g;
	}
	proc_row(pid, &proc);
	EXPECT_EQ(sum_2m, proc.bytes_2m);
	EXPECT_EQ(sum_1g, proc.bytes_1g);
	EXPECT_EQ(proc.pinned_bytes - sum_2m - sum_1g, proc.bytes_4k);
	read_stats(&during);
	EXPECT_EQ(before->bytes_2m + sum_2m, during.bytes_2m);
	EXPECT_EQ(before->bytes_1g + sum_1g, during.bytes_1g);
	EXPECT_EQ(during.pinned_bytes,
		  during.bytes_4k + during.bytes_2m + during.bytes_1g);
}

/* `stats` counts in each page size what it did before the pins. */
static void __check_backing_gone(struct __test_metadata *_metadata,
				 const struct mrpin_stats *before)
{
	struct mrpin_stats after;

	read_stats(&after);
	EXPECT_EQ(before->bytes_4k, after.bytes_4k);
	EXPECT_EQ(before->bytes_2m, after.bytes_2m);
	EXPECT_EQ(before->bytes_1g, after.bytes_1g);
}
#define check_backing_rows(pid, start, len, want_huge, giant, before)	\
	__check_backing_rows(_metadata, pid, start, len, want_huge, giant, before)
#define check_backing_gone(before) __check_backing_gone(_metadata, before)

TEST_F_TIMEOUT(backing, bytes_by_page_size_match_the_pages_pinned, 90)
{
	struct diag_test *t = &self->t;
	uint64_t huge = variant->kind == BACK_HUGETLB_1G ? GiB : 2 * MiB;
	uint64_t map_len = variant->kind == BACK_HUGETLB_1G ? GiB : 4 * MiB;
	uint64_t len[2], want_huge[2];
	struct mrpin_stats before;
	struct ibv_mr *mr[2];
	char *mem, *buf, *start[2], skip[256];
	int i, ret;

	buf = backing_buf(t, variant->kind, map_len, huge, &mem, skip);
	if (!buf)
		SKIP(return, "%s", skip);

	/* From the start, and four pages across the first boundary. */
	start[0] = buf;
	len[0] = variant->kind == BACK_HUGETLB_1G ? 4 * MiB : map_len;
	start[1] = buf + huge - 2 * PAGE;
	len[1] = 4 * PAGE;
	if (variant->kind == BACK_HUGETLB_1G) {
		/* One 1 GiB page: four pages inside it instead. */
		start[1] = buf + 2 * MiB - 2 * PAGE;
	}
	read_stats(&before);
	do_reg(t->f.pd, start[0], len[0], &mr[0]);
	do_reg(t->f.pd, start[1], len[1], &mr[1]);

	/* The oracle, once the pages are pinned. */
	for (i = 0; i < 2; i++) {
		ret = huge_bytes((uintptr_t)start[i], len[i], &want_huge[i]);
		ASSERT_EQ(0, ret) {
			TH_LOG("pagemap/kpageflags: %s", strerror(-ret));
		}
	}
	if (variant->kind == BACK_4K)
		ASSERT_EQ(0ULL, (unsigned long long)want_huge[0]) {
			TH_LOG("MADV_NOHUGEPAGE memory sits in huge pages");
		}
	if (variant->kind == BACK_THP && !want_huge[0]) {
		for (i = 0; i < 2; i++)
			ibv_dereg_mr(mr[i]);
		free(buf);
		SKIP(return, "THP did not back the buffer (enabled=always, MADV_HUGEPAGE): no huge page to test");
	}
	if (variant->kind >= BACK_HUGETLB_2M) {
		ASSERT_EQ(len[0], want_huge[0]);
		ASSERT_EQ(len[1], want_huge[1]);
	}
	if (variant->kind == BACK_THP && want_huge[0] != len[0])
		TH_LOG("THP backs %llu of the %llu bytes",
		       (unsigned long long)want_huge[0],
		       (unsigned long long)len[0]);

	check_backing_rows(getpid(), start, len, want_huge,
			   variant->kind == BACK_HUGETLB_1G, &before);

	do_dereg(mr[0]);
	do_dereg(mr[1]);
	check_backing_gone(&before);
	if (!mem)
		free(buf);
	else
		munmap(mem, variant->kind == BACK_4K ? map_len + 2 * MiB :
						       map_len);
}

/*
 * 5. align: the largest power of two dividing the start, up to 1 GiB, from
 * a mapping at a 1 TiB-aligned address.
 */
TEST_F(diag, align_is_the_largest_power_of_two_dividing_the_start)
{
	static const struct {
		uint64_t off;
		uint64_t align;
	} cases[] = {
		{ 0, GiB },		/* 1 TiB-aligned: capped */
		{ 2 * MiB, 2 * MiB },
		{ MiB, MiB },
		{ 0x18000, 0x8000 },
		{ PAGE, PAGE },
		{ 3 * PAGE, PAGE },
		{ 0x200, 0x200 },
		{ 4 * MiB - 64, 64 },
		{ 100, 4 },
		{ 6, 2 },
		{ 1, 1 },
		{ PAGE + 1, 1 },
	};
	const int n = MRPIN_ARRAY_SIZE(cases);
	struct diag_test *t = &self->t;
	struct ibv_mr *mr[MRPIN_ARRAY_SIZE(cases)];
	struct mrpin_pin_row pin;
	char *base = MAP_FAILED;
	uint64_t tib;
	int i;

	for (tib = 1; tib < 64 && base == MAP_FAILED; tib++) {
		base = mmap((void *)(uintptr_t)(tib << 40), 5 * MiB,
			    PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			    -1, 0);
		if (base != MAP_FAILED &&
		    (uintptr_t)base != (uintptr_t)(tib << 40)) {
			munmap(base, 5 * MiB);	/* an old kernel's hint */
			base = MAP_FAILED;
		}
	}
	ASSERT_NE(MAP_FAILED, base) {
		TH_LOG("no free 1 TiB-aligned address");
	}
	memset(base, 0x5a, 5 * MiB);
	for (i = 0; i < n; i++)
		do_reg(t->f.pd, base + cases[i].off, 64, &mr[i]);
	for (i = 0; i < n; i++) {
		pin_row(getpid(), base + cases[i].off, 64, &pin);
		EXPECT_EQ(cases[i].align, pin.align) {
			TH_LOG("start %p: align %llu, expected %llu",
			       base + cases[i].off,
			       (unsigned long long)pin.align,
			       (unsigned long long)cases[i].align);
		}
	}
	for (i = 0; i < n; i++)
		do_dereg(mr[i]);
	munmap(base, 5 * MiB);
}

/*
 * 6. oversized: the pinned bytes (the pages spanned, not the length asked)
 * reach the global oversize= mark, as it was when the pin was made.
 */
TEST_F(diag, oversized_flags_pins_whose_pinned_bytes_reach_the_mark)
{
	static const struct {
		uint64_t off;
		uint64_t len;
		uint64_t oversized;
	} cases[] = {
		{ 0, 2 * MiB, 1 },
		{ 0, MiB, 1 },			/* exactly the mark */
		{ 0, MiB - PAGE, 0 },
		{ 0, MiB - 1, 1 },		/* spans 256 pages */
		{ 1, MiB - PAGE, 1 },		/* likewise */
		{ 100, MiB - 2 * PAGE, 0 },	/* 255 pages */
	};
	const int n = MRPIN_ARRAY_SIZE(cases);
	struct diag_test *t = &self->t;
	struct ibv_mr *mr[MRPIN_ARRAY_SIZE(cases)], *early;
	struct mrpin_stats before, after;
	struct mrpin_pin_row pin;
	char *buf[MRPIN_ARRAY_SIZE(cases)], *big;
	uint64_t flagged = 0;
	int i;

	/* Under the default mark (1 GiB), 2 MiB is not oversized. */
	big = map_buf(2 * MiB);
	read_stats(&before);
	do_reg(t->f.pd, big, 2 * MiB, &early);
	pin_row(getpid(), big, 2 * MiB, &pin);
	EXPECT_EQ(0ULL, (unsigned long long)pin.oversized);

	set_limits("global oversize=1M\n");
	for (i = 0; i < n; i++) {
		buf[i] = map_buf(3 * MiB);
		do_reg(t->f.pd, buf[i] + cases[i].off, cases[i].len, &mr[i]);
		flagged += cases[i].oversized;
	}
	for (i = 0; i < n; i++) {
		pin_row(getpid(), buf[i] + cases[i].off, cases[i].len, &pin);
		EXPECT_EQ(cases[i].oversized, pin.oversized) {
			TH_LOG("%llu bytes from byte %llu (%llu pinned): oversized %llu",
			       (unsigned long long)cases[i].len,
			       (unsigned long long)cases[i].off,
			       (unsigned long long)pin.pinned_bytes,
			       (unsigned long long)pin.oversized);
		}
	}
	/* The early pin keeps the fact of its time. */
	pin_row(getpid(), big, 2 * MiB, &pin);
	EXPECT_EQ(0ULL, (unsigned long long)pin.oversized);
	read_stats(&after);
	EXPECT_EQ(before.oversized_pins_total + flagged,
		  after.oversized_pins_total);

	for (i = 0; i < n; i++) {
		do_dereg(mr[i]);
		munmap(buf[i], 3 * MiB);
	}
	do_dereg(early);
	munmap(big, 2 * MiB);
	read_stats(&after);
	EXPECT_EQ(before.oversized_pins_total + flagged,
		  after.oversized_pins_total);
}

/*
 * 13. The MR table: with mr_table_warn=1%, the pin that brings the device
 * to ceil(max_mr / 100) live pins warns once; the next does not; falling
 * below the mark and coming back warns again.
 */
TEST_F_TIMEOUT(diag, mr_table_warns_once_per_crossing_of_the_mark, 300)
{
	struct diag_test *t = &self->t;
	struct mrpin_event ev[4];
	struct mrpin_dev_row dev;
	struct ibv_mr **mrs;
	uint64_t mark, need, i;
	char scope[128], line[256];
	int n, kfd;
	uint64_t from;
	char *buf;

	dev_row(mrpin_dev_name(), &dev);
	mark = (dev.max_mr + 99) / 100;
	ASSERT_LT(dev.pins + 2, mark) {
		TH_LOG("%s already holds %llu pins", mrpin_dev_name(),
		       (unsigned long long)dev.pins);
	}
	need = mark - dev.pins;
	TH_LOG("%s: max_mr %llu, mark %llu; registering %llu MRs",
	       mrpin_dev_name(), (unsigned long long)dev.max_mr,
	       (unsigned long long)mark, (unsigned long long)need + 1);
	snprintf(scope, sizeof(scope), "device:%s", mrpin_dev_name());
	mrs = calloc(need + 1, sizeof(*mrs));
	ASSERT_NE(NULL, mrs);
	buf = map_buf((need + 1) * PAGE);
	set_limits("%s", "global mr_table_warn=1%\n");
	from = next_seq();
	mrpin_log_room(mrpin_budget);
	kfd = mrpin_kmsg_open();
	ASSERT_LE(0, kfd);

	for (i = 0; i < need - 1; i++)
		do_reg(t->f.pd, buf + i * PAGE, PAGE, &mrs[i]);
	n = events_since(from, 0, "mr_table", ev, 4);
	EXPECT_EQ(0, n) {
		TH_LOG("an mr_table event below the mark (usage %llu)",
		       (unsigned long long)ev[0].usage);
	}

	/* The pin that reaches the mark. */
	do_reg(t->f.pd, buf + i * PAGE, PAGE, &mrs[i]);
	i++;
	dev_row(mrpin_dev_name(), &dev);
	EXPECT_EQ(mark, dev.pins);
	n = events_since(from, 0, "mr_table", ev, 4);
	ASSERT_EQ(1, n);
	mrpin_note_logged(mrpin_budget, 1);
	check_event(&ev[0], "warn", getpid(), getuid(), scope, "mr_table",
		    PAGE, mark, mark);
	snprintf(line, sizeof(line),
		 "mrpin: device %s: %llu live pins, past the mr_table_warn mark of %llu",
		 mrpin_dev_name(), (unsigned long long)mark,
		 (unsigned long long)mark);
	check_log_has(kfd, line, NULL);

	/* One more: still past the mark, no second event. */
	do_reg(t->f.pd, buf + i * PAGE, PAGE, &mrs[i]);
	i++;
	EXPECT_EQ(1, events_since(from, 0, "mr_table", ev, 4));

	/* Just below the mark (mark - 1), then back to it. */
	do_dereg(mrs[--i]);
	do_dereg(mrs[--i]);
	dev_row(mrpin_dev_name(), &dev);
	EXPECT_EQ(mark - 1, dev.pins);
	EXPECT_EQ(1, events_since(from, 0, "mr_table", ev, 4));
	mrpin_log_room(mrpin_budget);
	do_reg(t->f.pd, buf + i * PAGE, PAGE, &mrs[i]);
	i++;
	n = events_since(from, 0, "mr_table", ev, 4);
	EXPECT_EQ(2, n) {
		TH_LOG("back at the mark after falling to %llu: %d mr_table events, expected 2",
		       (unsigned long long)mark - 1, n);
	}
	if (n == 2) {
		mrpin_note_logged(mrpin_budget, 1);
		check_event(&ev[1], "warn", getpid(), getuid(), scope,
			    "mr_table", PAGE, mark, mark);
		check_log_has(kfd, line, NULL);
	} else if (n == 1) {
		/* Where does it re-arm?  For the report only. */
		do_dereg(mrs[--i]);
		do_dereg(mrs[--i]);
		do_reg(t->f.pd, buf + i * PAGE, PAGE, &mrs[i]);
		i++;
		do_reg(t->f.pd, buf + i * PAGE, PAGE, &mrs[i]);
		i++;
		n = events_since(from, 0, "mr_table", ev, 4);
		TH_LOG("after falling to %llu and coming back: %d mr_table events",
		       (unsigned long long)mark - 2, n);
		mrpin_note_logged(mrpin_budget, 1);
	}
	close(kfd);

	while (i)
		do_dereg(mrs[--i]);
	munmap(buf, (need + 1) * PAGE);
	free(mrs);
}

MRPIN_TEST_MAIN(MRPIN_DEBUGFS "/leaks", "no diagnostics in this mrpin")
