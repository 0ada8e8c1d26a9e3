/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The test harness side of mrpin's C selftests, in the style of
 * selftests/iommu's iommufd_utils.h: registration helpers in triplets
 * (_do_reg() returns 0 or -1 with errno, in mrpin_utils.h; do_reg()
 * asserts success; do_reg_err() asserts a given errno), the checks every
 * test makes against mrpin's views, and the fixture the tests share.
 *
 * The fixture (struct mrpin_fixture) opens the device under test and a PD,
 * lifts RLIMIT_MEMLOCK, starts from the default policy and notes `stats`
 * and the end of the kernel log.  At teardown, a test's fixture first
 * releases what the test may have left (children, MRs), then
 * fixture_close() closes the device and restores the default policy, and
 * fixture_check() checks that the totals are back where they were, every
 * pin made was released, no release went untracked and the kernel log has
 * no problem.  check_nothing_left() is the stronger check for a machine
 * where nothing was pinned before: no line in any table.
 *
 * Include this file first: it brings kselftest_harness.h, mrpin_utils.h
 * and mrpin_tables.h.
 */
#ifndef __MRPIN_TEST_H
#define __MRPIN_TEST_H

/* The 6.1 harness has an unused parameter: keep -Wextra quiet about it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

/*
 * The harness's SKIP() reports a test as skipped even after one of its
 * checks failed, and the failure never shows.  Here a skip after a failed
 * check leaves the test failed, and says so.  (The 6.1 harness keeps
 * passed and skip; later ones exit_code, and have XFAIL_ADD.)
 */
#ifdef XFAIL_ADD
#define MRPIN_FAILED()		(_metadata->exit_code == KSFT_FAIL)
#define MRPIN_MARK_SKIPPED()	(_metadata->exit_code = KSFT_SKIP)
#else
#define MRPIN_FAILED()		(!_metadata->passed)
#define MRPIN_MARK_SKIPPED()	(_metadata->passed = 1, _metadata->skip = 1)
#endif
#undef SKIP
#define SKIP(statement, fmt, ...) do {					\
	if (MRPIN_FAILED()) {						\
		TH_LOG("not skipped, as a check failed before: " fmt,	\
		       ##__VA_ARGS__);					\
	} else {							\
		snprintf(_metadata->results->reason,			\
			 sizeof(_metadata->results->reason), fmt,	\
			 ##__VA_ARGS__);				\
		if (TH_LOG_ENABLED)					\
			fprintf(TH_LOG_STREAM, "#      SKIP      %s\n",	\
				_metadata->results->reason);		\
		MRPIN_MARK_SKIPPED();					\
		_metadata->trigger = 0;					\
	}								\
	statement;							\
} while (0)

#include "mrpin_tables.h"

#include <grp.h>
#include <libgen.h>
#include <sys/wait.h>

/* A value a check leaves open: not compared. */
#define MRPIN_ANY	UINT64_MAX

/*
 * Exit the program, before any test, unless mrpin can be tested: skip when
 * not root or mrpin is not loaded; fail when @need (a file a version of
 * mrpin with the feature under test has; NULL for none) is missing, saying
 * @lacking ("no policy in this mrpin").
 */
static inline void mrpin_require_loaded(const char *need, const char *lacking)
{
	if (geteuid())
		ksft_exit_skip("mrpin's debugfs files are for root only\n");
	if (access(MRPIN_DEBUGFS, F_OK))
		ksft_exit_skip("%s is missing: is mrpin loaded?\n",
			       MRPIN_DEBUGFS);
	if (need && access(need, F_OK))
		ksft_exit_fail_msg("%s is missing: %s\n", need, lacking);
}

/* Exit the program (skip) unless the RDMA device under test opens. */
static inline void mrpin_require_dev(void)
{
	const char *dev = mrpin_dev_name();
	struct ibv_context *ctx;

	ctx = mrpin_open_dev(dev);
	if (!ctx)
		ksft_exit_skip("RDMA device %s: %s\n", dev, strerror(errno));
	ibv_close_device(ctx);
}

/*
 * mrpin_require_loaded(), then fail unless `stats` reads and skip unless
 * the device opens: what a program that registers needs before any test
 * (the 6.1 harness would run a test's body after a SKIP() in its setup).
 */
static inline void mrpin_require_testable(const char *need,
					  const char *lacking)
{
	struct mrpin_stats stats;
	int ret;

	mrpin_require_loaded(need, lacking);
	ret = mrpin_read_stats(&stats);
	if (ret)
		ksft_exit_fail_msg("%s/stats: %s\n", MRPIN_DEBUGFS,
				   strerror(-ret));
	mrpin_require_dev();
}

/* Print mrpin's lines of @log, to show what was there instead. */
static inline void mrpin_log_show(const char *log)
{
	const char *pos = log, *end;
	int shown = 0;

	while (*pos && shown < 8) {
		end = strchr(pos, '\n');
		if (!end)
			break;
		if (!strncmp(pos, "mrpin", 5)) {
			ksft_print_msg("  log: %.*s\n", (int)(end - pos), pos);
			shown++;
		}
		pos = end + 1;
	}
	if (!shown)
		ksft_print_msg("  log: (no mrpin line)\n");
}

/* A page-aligned, touched anonymous buffer of @len bytes. */
static inline void *__map_buf(struct __test_metadata *_metadata, size_t len)
{
	void *buf;

	buf = mrpin_map_touched(len);
	ASSERT_NE(NULL, buf);
	return buf;
}
#define map_buf(len) __map_buf(_metadata, len)

#define do_reg(pd, addr, length, mr)					\
	ASSERT_EQ(0, _do_reg(pd, addr, length, mr)) {			\
		TH_LOG("ibv_reg_mr(%p, %zu): %s", (void *)(addr),	\
		       (size_t)(length), strerror(errno));		\
	}

#define do_reg_err(_errno, pd, addr, length)				\
	({								\
		struct ibv_mr *__mr;					\
									\
		ASSERT_EQ(-1, _do_reg(pd, addr, length, &__mr));	\
		ASSERT_EQ(_errno, errno) {				\
			TH_LOG("ibv_reg_mr(%p, %zu): %s", (void *)(addr),\
			       (size_t)(length), strerror(errno));	\
		}							\
	})

#define do_dereg(mr)							\
	ASSERT_EQ(0, _do_dereg(mr)) {					\
		TH_LOG("ibv_dereg_mr: %s", strerror(errno));		\
	}

/*
 * The checks below only EXPECT_*(), without handler blocks, and return
 * early when they cannot go on: the fixture teardowns use them too.  In the
 * 6.1 harness, an ASSERT_*() failing in a teardown makes it run the
 * teardown again, and one failing in a test leaves the next handler block
 * (the teardown's first) to run whether its check fails or not.
 */

/*
 * The users' sums and the root cgroup's row (every pin charges its cgroup
 * and every ancestor, the root last): *@user_* and *@root_* (0 without a
 * row); false when a view could not be read.
 */
static inline bool __owner_sums(struct __test_metadata *_metadata,
				uint64_t *user_pins, uint64_t *user_bytes,
				uint64_t *root_pins, uint64_t *root_bytes)
{
	struct mrpin_owner_row *rows;
	int n, i;

	n = mrpin_read_users(&rows);
	EXPECT_LE(0, n);
	if (n < 0)
		return false;
	for (i = 0; i < n; i++) {
		*user_pins += rows[i].pins;
		*user_bytes += rows[i].pinned_bytes;
	}
	free(rows);
	n = mrpin_read_cgroups(&rows);
	EXPECT_LE(0, n);
	if (n < 0)
		return false;
	for (i = 0; i < n; i++) {
		if (strcmp(rows[i].cgroup, "/"))
			continue;
		*root_pins = rows[i].pins;
		*root_bytes = rows[i].pinned_bytes;
	}
	free(rows);
	return true;
}

/*
 * The acceptance oracle, for a moment when no registration is in flight:
 * the sums of `procs`, of `devices` and of `users`, and the root cgroup's
 * row in `cgroups`, equal the totals of `stats`, both in pins and in
 * bytes; the sum of `procs` equals `stats` in distinct bytes, and no
 * process has more distinct bytes than pinned ones.
 */
static inline void __check_sums(struct __test_metadata *_metadata)
{
	uint64_t proc_pins = 0, proc_bytes = 0, dev_pins = 0, dev_bytes = 0;
	uint64_t user_pins = 0, user_bytes = 0, root_pins = 0, root_bytes = 0;
	uint64_t proc_distinct = 0;
	struct mrpin_proc_row *procs;
	struct mrpin_dev_row *devs;
	struct mrpin_stats stats;
	int nprocs, ndevs, ret, i;

	nprocs = mrpin_read_procs(&procs);
	EXPECT_LE(0, nprocs);
	if (nprocs < 0)
		return;
	for (i = 0; i < nprocs; i++) {
		proc_pins += procs[i].pins;
		proc_bytes += procs[i].pinned_bytes;
		proc_distinct += procs[i].distinct_bytes;
		EXPECT_LE(procs[i].distinct_bytes, procs[i].pinned_bytes);
	}
	free(procs);
	ret = mrpin_read_stats(&stats);
	EXPECT_EQ(0, ret);
	if (ret)
		return;
	ndevs = mrpin_read_devices(&devs);
	EXPECT_LE(0, ndevs);
	if (ndevs < 0)
		return;
	for (i = 0; i < ndevs; i++) {
		dev_pins += devs[i].pins;
		dev_bytes += devs[i].pinned_bytes;
	}
	free(devs);
	if (!__owner_sums(_metadata, &user_pins, &user_bytes, &root_pins,
			  &root_bytes))
		return;
	EXPECT_EQ(stats.pins, user_pins);
	EXPECT_EQ(stats.pinned_bytes, user_bytes);
	EXPECT_EQ(stats.pins, root_pins);
	EXPECT_EQ(stats.pinned_bytes, root_bytes);
	EXPECT_EQ(stats.pinned_bytes, proc_bytes);
	EXPECT_EQ(stats.distinct_bytes, proc_distinct);
	EXPECT_EQ(stats.pinned_bytes, dev_bytes);
	EXPECT_EQ(stats.pins, proc_pins);
	EXPECT_EQ(stats.pins, dev_pins);
	EXPECT_LE(stats.pinned_bytes, stats.peak_pinned_bytes);
}
#define check_sums() __check_sums(_metadata)

/*
 * Process @pid, which pins only through RDMA and has no registration in
 * flight, holds @pins pins of @bytes bytes: its `procs` line (none when
 * @pins is 0) says so and agrees with its VmPin, and so do the sums.
 */
static inline void __check_proc(struct __test_metadata *_metadata, pid_t pid,
				uint64_t pins, uint64_t bytes)
{
	const struct mrpin_proc_row *p;
	struct mrpin_proc_row *procs;
	uint64_t vmpin;
	int n, ret;

	n = mrpin_read_procs(&procs);
	EXPECT_LE(0, n);
	if (n < 0)
		return;
	p = mrpin_find_proc(procs, n, pid);
	ret = mrpin_vmpin(pid, &vmpin);
	EXPECT_EQ(0, ret);
	if (ret) {
		TH_LOG("VmPin of pid %d: %s", pid, strerror(-ret));
		goto out;
	}
	EXPECT_EQ(bytes, vmpin);
	if (!pins) {
		EXPECT_EQ(NULL, p);
		if (p)
			TH_LOG("pid %d: %" PRIu64 " pins of %" PRIu64 " bytes left",
			       pid, p->pins, p->pinned_bytes);
		goto out;
	}
	EXPECT_NE(NULL, p);
	if (!p) {
		TH_LOG("pid %d has no line in procs", pid);
		goto out;
	}
	EXPECT_EQ(pins, p->pins);
	EXPECT_EQ(bytes, p->pinned_bytes);
	EXPECT_EQ(vmpin, p->pinned_bytes);
	EXPECT_EQ(vmpin, p->vm_pinned_bytes);
	EXPECT_LE(p->pinned_bytes, p->peak_bytes);
out:
	free(procs);
	check_sums();
}
#define check_proc(pid, pins, bytes) __check_proc(_metadata, pid, pins, bytes)

/* Neither `procs` nor `pins` has anything of process @pid (gone or not). */
static inline void __check_no_trace(struct __test_metadata *_metadata,
				    pid_t pid)
{
	struct mrpin_proc_row *procs;
	struct mrpin_pin_row *pins;
	int n;

	n = mrpin_read_procs(&procs);
	EXPECT_LE(0, n);
	if (n < 0)
		return;
	EXPECT_EQ(NULL, mrpin_find_proc(procs, n, pid));
	free(procs);
	n = mrpin_read_pins(&pins);
	EXPECT_LE(0, n);
	if (n < 0)
		return;
	EXPECT_EQ(0, mrpin_pins_of(pins, n, pid));
	free(pins);
}
#define check_no_trace(pid) __check_no_trace(_metadata, pid)

#define read_stats(s)							\
	ASSERT_EQ(0, mrpin_read_stats(s)) {				\
		TH_LOG("%s/stats lacks a key or is malformed", MRPIN_DEBUGFS); \
	}

/* A debugfs table by its column list: the number of rows, or -errno. */
#define read_table(name, cols, rows)					\
	mrpin_read_table(name, cols, MRPIN_ARRAY_SIZE(cols),		\
			 sizeof(**(rows)), (void **)(rows))

/* Write the policy text, printf-style; assert that the write succeeds. */
static inline void __attribute__((format(printf, 2, 3)))
__set_limits(struct __test_metadata *_metadata, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ASSERT_GT((int)sizeof(buf), n);
	err = mrpin_limits_write(buf, n);
	ASSERT_EQ(0, err) {
		TH_LOG("writing \"%s\" to limits: %s", buf, strerror(err));
	}
}
#define set_limits(fmt, ...) __set_limits(_metadata, fmt, ##__VA_ARGS__)

/*
 * When this program made mrpin log its refusals and warnings, shared
 * (MAP_SHARED) by the harness's children, one per test; NULL (no waiting)
 * until mrpin_log_budget_setup().
 */
static struct mrpin_log_budget *mrpin_budget;

/*
 * Map mrpin_budget.  Refusals or warnings before this program (a run just
 * before it) may have used up the log's budget: where `events` holds any
 * (or cannot be read), assume they just did.
 */
static inline void mrpin_log_budget_setup(void)
{
	struct mrpin_events e;
	bool any;

	mrpin_budget = mmap(NULL, sizeof(*mrpin_budget),
			    PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mrpin_budget == MAP_FAILED)
		mrpin_budget = NULL;
	any = mrpin_read_events(&e) || e.n || e.lost;
	free(e.ev);
	if (any)
		mrpin_note_logged(mrpin_budget, MRPIN_LOG_BURST);
}

/*
 * The new kernel log lines of @kfd hold @line: exactly, or with @suffix
 * (not NULL) as a line that starts with @line and ends with @suffix.
 */
static inline void __check_log_has(struct __test_metadata *_metadata,
				   int kfd, const char *line,
				   const char *suffix)
{
	char *log = mrpin_kmsg_read(kfd);
	bool found;

	ASSERT_NE(NULL, log);
	found = mrpin_log_has(log, line, suffix);
	EXPECT_TRUE(found);
	if (!found) {
		ksft_print_msg("expected in the kernel log: %s%s\n", line,
			       suffix ? "..." : "");
		mrpin_log_show(log);
	}
	free(log);
}
#define check_log_has(kfd, line, suffix)				\
	__check_log_has(_metadata, kfd, line, suffix)

/*
 * The new kernel log lines of @kfd report no kernel problem and, if
 * @quiet, have no mrpin line either.
 */
static inline void __check_log_clean(struct __test_metadata *_metadata,
				     int kfd, bool quiet)
{
	const char *problem, *line;
	char *log;

	log = mrpin_kmsg_read(kfd);
	EXPECT_NE(NULL, log);
	if (!log)
		return;
	problem = mrpin_log_problem(log);
	EXPECT_EQ(NULL, problem);
	if (problem)
		ksft_print_msg("kernel log: %.*s\n",
			       (int)strcspn(problem, "\n"), problem);
	for (line = log; quiet && *line; line = strchr(line, '\n') + 1) {
		EXPECT_NE(0, strncmp(line, "mrpin", 5));
		if (!strncmp(line, "mrpin", 5))
			ksft_print_msg("kernel log: %.*s\n",
				       (int)strcspn(line, "\n"), line);
	}
	free(log);
}
#define check_log_clean(kfd, quiet) __check_log_clean(_metadata, kfd, quiet)

/* Every event `events` holds now, from a new open. */
static inline void __read_events(struct __test_metadata *_metadata,
				 struct mrpin_events *e)
{
	int ret = mrpin_read_events(e);

	ASSERT_EQ(0, ret) {
		TH_LOG("%s: %s (a header other than \"%s\" or a malformed line is EPROTO)",
		       MRPIN_EVENTS_FILE, strerror(-ret), MRPIN_EVENTS_HEADER);
	}
}
#define read_events(e) __read_events(_metadata, e)

/*
 * The seq the next event will have at the earliest: the newest one's + 1,
 * or 0 when there is none (the first event may be numbered 0).
 */
static inline uint64_t __next_seq(struct __test_metadata *_metadata)
{
	struct mrpin_events e;
	uint64_t next = 0;
	int i;

	read_events(&e);
	for (i = 0; i < e.n; i++)
		if (e.ev[i].seq + 1 > next)
			next = e.ev[i].seq + 1;
	free(e.ev);
	return next;
}
#define next_seq() __next_seq(_metadata)

/*
 * The events `events` holds now numbered @from or later, of process @pid
 * (if > 0) and about @key (if not NULL): their number, and up to @max of
 * them in @out.
 */
static inline int __events_since(struct __test_metadata *_metadata,
				 uint64_t from, pid_t pid, const char *key,
				 struct mrpin_event *out, int max)
{
	struct mrpin_events e;
	int i, n = 0;

	read_events(&e);
	for (i = 0; i < e.n; i++) {
		if (!mrpin_event_since(&e.ev[i], from, pid, key))
			continue;
		if (n < max)
			out[n] = e.ev[i];
		n++;
	}
	free(e.ev);
	return n;
}
#define events_since(from, pid, key, out, max)				\
	__events_since(_metadata, from, pid, key, out, max)

/* Event @ev says this; @usage MRPIN_ANY is not compared. */
static inline void __check_event(struct __test_metadata *_metadata,
				 const struct mrpin_event *ev,
				 const char *action, pid_t pid, uint64_t uid,
				 const char *scope, const char *key,
				 uint64_t asked, uint64_t usage,
				 uint64_t limit)
{
	char comm[64];

	EXPECT_STREQ(action, ev->action);
	EXPECT_EQ(pid, ev->pid);
	if (!mrpin_comm(pid, comm, sizeof(comm)))
		EXPECT_STREQ(comm, ev->comm);
	EXPECT_EQ(uid, ev->uid);
	EXPECT_STREQ(scope, ev->scope);
	EXPECT_STREQ(key, ev->key);
	EXPECT_EQ(asked, ev->asked);
	if (usage != MRPIN_ANY)
		EXPECT_EQ(usage, ev->usage);
	EXPECT_EQ(limit, ev->limit);
	EXPECT_NE(0ULL, (unsigned long long)ev->time_ns);
	/* What the pin got: refused with ENOMEM, or allowed. */
	if (!strcmp(action, "deny")) {
		EXPECT_EQ((uint64_t)ENOMEM, ev->err);
	} else if (!strcmp(action, "warn")) {
		EXPECT_EQ(0ULL, (unsigned long long)ev->err);
	}
}
#define check_event(ev, action, pid, uid, scope, key, asked, usage, limit) \
	__check_event(_metadata, ev, action, pid, uid, scope, key, asked,   \
		      usage, limit)

/*
 * Nothing is pinned through mrpin: no live pin in `stats`, no line in
 * `pins`, `procs`, `users` or `cgroups`, and every device at zero.
 */
static inline void __check_nothing_left(struct __test_metadata *_metadata)
{
	struct mrpin_owner_row *owners;
	struct mrpin_proc_row *procs;
	struct mrpin_pin_row *pins;
	struct mrpin_dev_row *devs;
	struct mrpin_stats s;
	int n, i;

	n = mrpin_read_stats(&s);
	EXPECT_EQ(0, n);
	if (!n) {
		EXPECT_EQ(0ULL, s.pins);
		EXPECT_EQ(0ULL, s.pinned_bytes);
	}
	n = mrpin_read_pins(&pins);
	EXPECT_EQ(0, n);
	for (i = 0; i < n; i++)
		TH_LOG("pin left: pid %d (%s) %" PRIu64 " bytes", pins[i].pid,
		       pins[i].comm, pins[i].pinned_bytes);
	if (n > 0)
		free(pins);
	n = mrpin_read_procs(&procs);
	EXPECT_EQ(0, n);
	if (n > 0)
		free(procs);
	n = mrpin_read_users(&owners);
	EXPECT_EQ(0, n);
	if (n > 0)
		free(owners);
	n = mrpin_read_cgroups(&owners);
	EXPECT_EQ(0, n);
	if (n > 0)
		free(owners);
	n = mrpin_read_devices(&devs);
	EXPECT_LE(1, n);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0ULL, devs[i].pins);
		EXPECT_EQ(0ULL, devs[i].pinned_bytes);
	}
	if (n > 0)
		free(devs);
}
#define check_nothing_left() __check_nothing_left(_metadata)

/*
 * `stats` against @start, when everything pinned since has been released:
 * the live totals are back, every pin made was released, no release went
 * untracked.
 */
static inline void __check_stats_back(struct __test_metadata *_metadata,
				      const struct mrpin_stats *start)
{
	struct mrpin_stats end;
	int ret;

	ret = mrpin_read_stats(&end);
	EXPECT_EQ(0, ret);
	if (ret)
		return;
	EXPECT_EQ(start->pins, end.pins);
	EXPECT_EQ(start->pinned_bytes, end.pinned_bytes);
	EXPECT_EQ(start->bytes_4k, end.bytes_4k);
	EXPECT_EQ(start->bytes_2m, end.bytes_2m);
	EXPECT_EQ(start->bytes_1g, end.bytes_1g);
	EXPECT_EQ(end.pins_total - start->pins_total,
		  end.releases_total - start->releases_total);
	EXPECT_EQ(start->untracked_releases_total,
		  end.untracked_releases_total);
}
#define check_stats_back(start) __check_stats_back(_metadata, start)

/*
 * `stats` went from @before to @after by @pins live pins of @bytes (fewer
 * where negative), with @made pins made and @released released in between,
 * and no release went untracked.
 */
static inline void __check_stats_moved(struct __test_metadata *_metadata,
				       const struct mrpin_stats *before,
				       const struct mrpin_stats *after,
				       int64_t pins, int64_t bytes,
				       uint64_t made, uint64_t released)
{
	EXPECT_EQ(before->pins + pins, after->pins);
	EXPECT_EQ(before->pinned_bytes + bytes, after->pinned_bytes);
	EXPECT_EQ(before->pins_total + made, after->pins_total);
	EXPECT_EQ(before->releases_total + released, after->releases_total);
	EXPECT_EQ(before->untracked_releases_total,
		  after->untracked_releases_total);
}
#define check_stats_moved(before, after, pins, bytes, made, released)	\
	__check_stats_moved(_metadata, before, after, pins, bytes, made,	\
			    released)

/* The `procs` line of @pid in *@row: whether there is one. */
static inline bool __proc_row(struct __test_metadata *_metadata, pid_t pid,
			      struct mrpin_proc_row *row)
{
	const struct mrpin_proc_row *p;
	struct mrpin_proc_row *rows;
	int n;

	n = mrpin_read_procs(&rows);
	ASSERT_LE(0, n) {
		TH_LOG("procs: %s", strerror(-n));
	}
	p = mrpin_find_proc(rows, n, pid);
	if (p)
		*row = *p;
	free(rows);
	return p;
}
#define proc_row(pid, row)						\
	ASSERT_TRUE(__proc_row(_metadata, pid, row)) {			\
		TH_LOG("pid %d has no line in procs", (int)(pid));	\
	}

/* The line of device @name in `devices`. */
static inline void __dev_row(struct __test_metadata *_metadata,
			     const char *name, struct mrpin_dev_row *row)
{
	const struct mrpin_dev_row *d;
	struct mrpin_dev_row *rows;
	int n;

	n = mrpin_read_devices(&rows);
	ASSERT_LE(0, n);
	d = mrpin_find_dev(rows, n, name);
	ASSERT_NE(NULL, d) {
		TH_LOG("%s has no line in devices", name);
	}
	*row = *d;
	free(rows);
}
#define dev_row(name, row) __dev_row(_metadata, name, row)

/* What every fixture of a test that registers in this process holds. */
struct mrpin_fixture {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct mrpin_stats start;	/* `stats` at setup */
	int kmsg;			/* the kernel log since setup */
	bool quiet;			/* no mrpin line may be logged */
};

/* The fixture without the device, for tests that pin in children only. */
static inline void __fixture_start(struct __test_metadata *_metadata,
				   struct mrpin_fixture *f)
{
	f->kmsg = -1;
	ASSERT_EQ(0, mrpin_unlimit_memlock());
	f->kmsg = mrpin_kmsg_open();
	ASSERT_LE(0, f->kmsg);
	ASSERT_EQ(0, mrpin_limits_writef("reset\n"));
	read_stats(&f->start);
}
#define fixture_start(f) __fixture_start(_metadata, f)

static inline void __fixture_setup(struct __test_metadata *_metadata,
				   struct mrpin_fixture *f)
{
	fixture_start(f);
	f->ctx = mrpin_open_dev(mrpin_dev_name());
	ASSERT_NE(NULL, f->ctx) {
		TH_LOG("cannot open %s: %s", mrpin_dev_name(),
		       strerror(errno));
	}
	f->pd = ibv_alloc_pd(f->ctx);
	ASSERT_NE(NULL, f->pd);
}
#define fixture_setup(f) __fixture_setup(_metadata, f)

/*
 * Close the device, which deregisters any MR still there, and restore the
 * default policy.  Only EXPECT_*() without handler blocks from here on.
 */
static inline void __fixture_close(struct __test_metadata *_metadata,
				   struct mrpin_fixture *f)
{
	if (f->pd)
		ibv_dealloc_pd(f->pd);
	if (f->ctx)
		ibv_close_device(f->ctx);
	f->pd = NULL;
	f->ctx = NULL;
	EXPECT_EQ(0, mrpin_limits_writef("reset\n"));
}
#define fixture_close(f) __fixture_close(_metadata, f)

/*
 * `stats` is back where it was and the kernel log has no problem (and, if
 * @f->quiet, no mrpin line).
 */
static inline void __fixture_check(struct __test_metadata *_metadata,
				   struct mrpin_fixture *f)
{
	check_stats_back(&f->start);
	if (f->kmsg < 0)
		return;
	check_log_clean(f->kmsg, f->quiet);
	close(f->kmsg);
	f->kmsg = -1;
}
#define fixture_check(f) __fixture_check(_metadata, f)

/* A line from @fd, without its newline: 0, or -1 at EOF or error. */
static inline int read_line(int fd, char *line, size_t size)
{
	size_t len = 0;
	char c;

	while (len + 1 < size) {
		if (read(fd, &c, 1) != 1)
			return -1;
		if (c == '\n')
			break;
		line[len++] = c;
	}
	line[len] = '\0';
	return 0;
}

/* Write @line to @fd, or end the (child) process. */
static inline void write_line(int fd, const char *line)
{
	if (write(fd, line, strlen(line)) < 0)
		_exit(1);
}

/*
 * Fork a child that talks with the test over two pipes: *@in reads what
 * the other side writes to *@out.  The child's pid in the test, 0 in the
 * child.
 */
static inline pid_t __fork_talking(struct __test_metadata *_metadata,
				   int *in, int *out)
{
	int to_child[2], to_parent[2];
	pid_t pid;

	ASSERT_EQ(0, pipe2(to_child, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(to_parent, O_CLOEXEC));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	close(pid ? to_child[0] : to_child[1]);
	close(pid ? to_parent[1] : to_parent[0]);
	*in = pid ? to_parent[0] : to_child[0];
	*out = pid ? to_child[1] : to_parent[1];
	return pid;
}
#define fork_talking(in, out) __fork_talking(_metadata, in, out)

/*
 * A helper program of this suite (mrpin_pinner, mrpin_mistakes), run as a
 * child of the test and driven through its stdin and stdout.
 */
struct mrpin_child {
	pid_t pid;
	int in;		/* its stdin: EOF lets it finish */
	FILE *out;	/* its stdout */
};

/* Start program @argv[0], next to this one, as @uid (0: as root). */
static inline void __child_start(struct __test_metadata *_metadata,
				 struct mrpin_child *c, uid_t uid,
				 const char **argv)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	int in[2], out[2];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dirname(exe), argv[0]);
	ASSERT_EQ(0, access(path, X_OK)) {
		TH_LOG("%s: %s", path, strerror(errno));
	}
	ASSERT_EQ(0, pipe2(in, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(out, O_CLOEXEC));
	fflush(stdout);
	fflush(stderr);
	c->pid = fork();
	ASSERT_LE(0, c->pid);
	if (!c->pid) {
		if (uid && (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
			    setresuid(uid, uid, uid)))
			_exit(126);
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execv(path, (char **)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = fdopen(out[0], "r");
	ASSERT_NE(NULL, c->out);
}
#define child_start(c, uid, ...) __child_start(_metadata, c, uid, __VA_ARGS__)

/*
 * Send @sig to child @c (0: close its stdin, to let it finish), reap it
 * and return its wait status (-1 when there is none).
 */
static inline int child_finish(struct mrpin_child *c, int sig)
{
	int status = -1;

	if (c->pid <= 0)
		return status;
	if (sig)
		kill(c->pid, sig);
	close(c->in);
	waitpid(c->pid, &status, 0);
	if (c->out)
		fclose(c->out);
	c->out = NULL;
	c->pid = 0;
	return status;
}

/*
 * The main() of a test program: nothing to test without mrpin (with the
 * file @need, for the feature under test) or the device, so skip or fail
 * the whole program before any test; then run the tests with the log's
 * budget shared between them.
 */
#define MRPIN_TEST_MAIN(need, lacking)					\
	int main(int argc, char **argv)					\
	{								\
		mrpin_require_testable(need, lacking);			\
		mrpin_log_budget_setup();				\
		return test_harness_run(argc, argv);			\
	}

#endif /* __MRPIN_TEST_H */
