// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's diagnostics of how pins end, each case made on purpose by a real
 * program on the RDMA device under test (rxe0 unless $MRPIN_TEST_DEV says
 * otherwise): this program or mrpin_mistakes children.
 *
 *  - pins left to the kernel's cleanup (exit, close() of the device file,
 *    dup2() over it, ibv_close_device()) are leaks, in `leaks`, `procs`
 *    and `stats`; an ibv_dereg_mr() never is;
 *  - churn shows in registrations, reg_per_s and the lifetime histogram;
 *  - callsites name the function that called ibv_reg_mr().
 *
 * Every test starts from the default policy and restores it (`reset`),
 * and leaves no pin and no kernel warning behind.
 */
#include "mrpin_diag.h"

#include <sched.h>
#include <sys/stat.h>

FIXTURE(lifetime) {
	struct diag_test t;
};

FIXTURE_SETUP(lifetime)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(lifetime)
{
	test_teardown(&self->t);
}

/*
 * 7. A program that exits with 100 live MRs: the kernel releases them, a
 * leak of 100 pins for (its comm, its uid), with the time it happened.
 */
FIXTURE(leak_at_exit) {
	struct diag_test t;
};

FIXTURE_VARIANT(leak_at_exit) {
	uid_t uid;
};

FIXTURE_VARIANT_ADD(leak_at_exit, as_root) {
	.uid = 0,
};
FIXTURE_VARIANT_ADD(leak_at_exit, as_uid_1000) {
	.uid = USER_UID,
};

FIXTURE_SETUP(leak_at_exit)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(leak_at_exit)
{
	test_teardown(&self->t);
}

TEST_F_TIMEOUT(leak_at_exit, program_exiting_with_100_live_mrs_is_a_leak_of_100, 90)
{
	struct diag_test *t = &self->t;
	struct mistakes *m = &t->kids[0];
	struct mrpin_stats before, after;
	struct mrpin_leak_row lbefore, lafter, other;
	struct mrpin_proc_row proc;
	uint64_t t0, t1;
	pid_t pid;

	leak_row(MISTAKES, variant->uid, &lbefore);
	leak_row(MISTAKES, variant->uid ? 0 : USER_UID, &other);
	mistakes_start(m, variant->uid, "leak-exit", "100");
	mistakes_wait(m, "ready");
	pid = m->c.pid;
	proc_row(pid, &proc);
	EXPECT_EQ(100ULL, (unsigned long long)proc.pins);
	EXPECT_EQ(variant->uid, proc.uid);
	EXPECT_EQ(0ULL, (unsigned long long)proc.cleanup_releases);
	read_stats(&before);

	t0 = realtime_ns();
	mistakes_exit_ok(m);
	t1 = realtime_ns();

	check_no_trace(pid);
	read_stats(&after);
	EXPECT_EQ(before.pins - 100, after.pins);
	EXPECT_EQ(before.releases_total + 100, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total + 100,
		  after.cleanup_releases_total);
	leak_row(MISTAKES, variant->uid, &lafter);
	EXPECT_EQ(lbefore.count + 100, lafter.count);
	EXPECT_EQ(lbefore.bytes + 100 * PAGE, lafter.bytes);
	EXPECT_LE(t0, lafter.last_time_ns);
	EXPECT_GE(t1, lafter.last_time_ns);
	/* The other uid's line, if any, is another program's. */
	leak_row(MISTAKES, variant->uid ? 0 : USER_UID, &lafter);
	EXPECT_EQ(other.count, lafter.count);
}

/*
 * 8. A program that drops its device file without deregistering: close()
 * of the command fd, dup2() of /dev/null over it, or ibv_close_device().
 * The MRs go with the file: leaks, counted as cleanup releases in its
 * `procs` line (kept by an anchor MR on another context) and in `stats`;
 * its later explicit deregistration of the anchor is none.
 */
FIXTURE(leak_at_close) {
	struct diag_test t;
};

FIXTURE_VARIANT(leak_at_close) {
	const char *how;
};

FIXTURE_VARIANT_ADD(leak_at_close, close_cmd_fd) {
	.how = "close",
};
FIXTURE_VARIANT_ADD(leak_at_close, dup2_over_cmd_fd) {
	.how = "dup2",
};
FIXTURE_VARIANT_ADD(leak_at_close, ibv_close_device) {
	.how = "close-device",
};

FIXTURE_SETUP(leak_at_close)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(leak_at_close)
{
	test_teardown(&self->t);
}

TEST_F(leak_at_close, device_file_dropped_with_live_mrs_is_a_leak)
{
	struct diag_test *t = &self->t;
	struct mistakes *m = &t->kids[0];
	struct mrpin_stats before, after;
	struct mrpin_leak_row lbefore, lafter;
	struct mrpin_proc_row proc;
	uint64_t t0, t1;
	pid_t pid;

	leak_row(MISTAKES, 0, &lbefore);
	read_stats(&before);
	t0 = realtime_ns();
	mistakes_start(m, 0, "leak-close", variant->how, "10");
	mistakes_wait(m, "closed");
	t1 = realtime_ns();
	pid = m->c.pid;

	proc_row(pid, &proc);
	EXPECT_EQ(1ULL, (unsigned long long)proc.pins);
	EXPECT_EQ(11ULL, (unsigned long long)proc.registrations);
	EXPECT_EQ(10ULL, (unsigned long long)proc.cleanup_releases);
	read_stats(&after);
	EXPECT_EQ(before.pins + 1, after.pins);
	EXPECT_EQ(before.releases_total + 10, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total + 10,
		  after.cleanup_releases_total);
	leak_row(MISTAKES, 0, &lafter);
	EXPECT_EQ(lbefore.count + 10, lafter.count);
	EXPECT_EQ(lbefore.bytes + 10 * PAGE, lafter.bytes);
	EXPECT_LE(t0, lafter.last_time_ns);
	EXPECT_GE(t1, lafter.last_time_ns);

	mistakes_exit_ok(m);
	check_no_trace(pid);
	read_stats(&after);
	EXPECT_EQ(before.releases_total + 11, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total + 10,
		  after.cleanup_releases_total);
	leak_row(MISTAKES, 0, &lafter);
	EXPECT_EQ(lbefore.count + 10, lafter.count);
}

/* 9. ibv_dereg_mr() is never a leak, in a child or in this process. */
TEST_F(lifetime, explicit_deregistration_is_not_a_leak)
{
	struct diag_test *t = &self->t;
	struct mistakes *m = &t->kids[0];
	struct mrpin_stats before, after;
	struct mrpin_leak_row lbefore, lafter, sbefore, safter;
	struct mrpin_proc_row proc;
	struct ibv_mr *mr[2];
	char comm[64], *buf;
	pid_t pid;

	ASSERT_EQ(0, mrpin_comm(getpid(), comm, sizeof(comm)));
	leak_row(MISTAKES, 0, &lbefore);
	leak_row(comm, getuid(), &sbefore);
	read_stats(&before);

	mistakes_start(m, 0, "dereg", "10");
	mistakes_wait(m, "ready");
	pid = m->c.pid;
	proc_row(pid, &proc);
	EXPECT_EQ(1ULL, (unsigned long long)proc.pins);
	EXPECT_EQ(11ULL, (unsigned long long)proc.registrations);
	EXPECT_EQ(0ULL, (unsigned long long)proc.cleanup_releases);
	mistakes_exit_ok(m);
	check_no_trace(pid);

	buf = map_buf(2 * PAGE);
	do_reg(t->f.pd, buf, PAGE, &mr[0]);
	do_reg(t->f.pd, buf + PAGE, PAGE, &mr[1]);
	do_dereg(mr[1]);
	proc_row(getpid(), &proc);
	EXPECT_EQ(0ULL, (unsigned long long)proc.cleanup_releases);
	do_dereg(mr[0]);
	munmap(buf, 2 * PAGE);

	read_stats(&after);
	EXPECT_EQ(before.releases_total + 13, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total, after.cleanup_releases_total);
	leak_row(MISTAKES, 0, &lafter);
	EXPECT_EQ(lbefore.count, lafter.count);
	leak_row(comm, getuid(), &safter);
	EXPECT_EQ(sbefore.count, safter.count);
}

/*
 * 10. Churn: 5000 registrations that live microseconds each.  registrations
 * grows by 5000, the lifetime histogram gets 5000 counts, most of them
 * below a millisecond, and once a second has passed reg_per_s shows the
 * rate of its window, as the registrations' own times reckon it.
 */
#define CHURN		5000
#define CHURN_FAST	10	/* buckets 0..9: lifetimes below 1024 us */

/* The life_hist bucket of a lifetime of @us microseconds: [2^i, 2^(i+1)). */
static int life_bucket(double us)
{
	return us >= 2 ? 63 - __builtin_clzll((uint64_t)us) : 0;
}

/*
 * reg_per_s as mrpin reckons it (account.c counts windows of 10 s that
 * close at a registration, debugfs.c shows the last full one), from the
 * times of a process's @n registrations, read at @t_read: what the view
 * must show, whatever the pace of the registrations was.
 */
static double expected_reg_per_s(const double *t, int n, double t_read)
{
	double start = t[0], rate = 0, elapsed;
	bool full = false;
	long count = 1;
	int i;

	for (i = 1; i < n; i++) {
		if (t[i] - start >= 10) {
			rate = count / (t[i] - start);
			full = true;
			start = t[i];
			count = 0;
		}
		count++;
	}
	elapsed = t_read - start;
	if (elapsed >= 10 || (!full && elapsed >= 1))
		return count / elapsed;
	return full ? rate : 0;
}

TEST_F_TIMEOUT(lifetime, churn_shows_in_registrations_reg_per_s_and_life_hist, 240)
{
	struct diag_test *t = &self->t;
	uint64_t hb[LIFE_BUCKETS], ha[LIFE_BUCKETS], total = 0, fast = 0;
	struct mrpin_proc_row before, after;
	struct ibv_mr *anchor, *mr, *last;
	cpu_set_t cpus, one_cpu;
	double t0, t1, t_read, churn_rate, expected, c0, cycle;
	double longest = 0, *stamp;
	char *buf;
	int i, slowest = 0, bound, ceiling;

	/* When each registration was made: the midst of its call. */
	stamp = calloc(CHURN + 2, sizeof(*stamp));
	ASSERT_NE(NULL, stamp);
	buf = map_buf(2 * PAGE);
	c0 = mrpin_now_s();
	do_reg(t->f.pd, buf, PAGE, &anchor);
	stamp[0] = (c0 + mrpin_now_s()) / 2;
	proc_row(getpid(), &before);
	hist_of(&before, hb);
	EXPECT_EQ(1ULL, (unsigned long long)before.registrations);
	EXPECT_EQ(0ULL, (unsigned long long)before.reg_per_s);

	/*
	 * On one CPU: mrpin stamps a pin's birth and end with local_clock(),
	 * which is per CPU; where the sched clock is unstable (a VM without
	 * a stable TSC) two CPUs' readings may differ by up to a tick, more
	 * than a cycle takes.  On one CPU they stay within a tick (below).
	 */
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(cpus), &cpus));
	CPU_ZERO(&one_cpu);
	CPU_SET(sched_getcpu(), &one_cpu);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one_cpu), &one_cpu));
	t0 = mrpin_now_s();
	for (i = 0; i < CHURN; i++) {
		c0 = mrpin_now_s();
		do_reg(t->f.pd, buf + PAGE, PAGE, &mr);
		stamp[i + 1] = (c0 + mrpin_now_s()) / 2;
		do_dereg(mr);
		cycle = mrpin_now_s() - c0;
		if (cycle > longest)
			longest = cycle;
	}
	t1 = mrpin_now_s();
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));
	/*
	 * No pin outlives its reg+dereg cycle: its bucket is the bound, one
	 * tick later.  Where the sched clock is unstable, local_clock() keeps
	 * within a tick of the time of day but may run that far ahead of it
	 * between two readings on one CPU: 10 ms covers HZ=100.
	 */
	bound = life_bucket(longest * 1e6);
	ceiling = life_bucket((longest + 0.01) * 1e6);
	churn_rate = CHURN / (t1 - t0);

	proc_row(getpid(), &after);
	hist_of(&after, ha);
	EXPECT_EQ(before.registrations + CHURN, after.registrations);
	EXPECT_EQ(0ULL, (unsigned long long)after.cleanup_releases);
	for (i = 0; i < LIFE_BUCKETS; i++) {
		ASSERT_LE(hb[i], ha[i]);
		total += ha[i] - hb[i];
		if (i < CHURN_FAST)
			fast += ha[i] - hb[i];
		if (ha[i] > hb[i])
			slowest = i;
	}
	TH_LOG("%d registrations in %.2f s; lifetimes: %llu below 1 ms, slowest in [2^%d, 2^%d) us; life_hist %s",
	       CHURN, t1 - t0, (unsigned long long)fast, slowest, slowest + 1,
	       after.life_hist);
	EXPECT_EQ((uint64_t)CHURN, total);
	EXPECT_GE(ceiling, slowest) {
		TH_LOG("longest reg+dereg cycle %.0f us: bucket %d, %d a tick later",
		       longest * 1e6, bound, ceiling);
	}
	/* On a kernel that registers within a millisecond, most do here. */
	if (bound < CHURN_FAST)
		EXPECT_LE((uint64_t)CHURN * 9 / 10, fast);

	/*
	 * A second later, one more: the window is old enough to show.  What
	 * it shows follows from when the registrations were made (the pace
	 * of an emulator on a busy host varies): within a tenth and two, for
	 * the time between a call's midst and mrpin's clock reading in it.
	 */
	mrpin_sleep_s(1.1);
	c0 = mrpin_now_s();
	do_reg(t->f.pd, buf + PAGE, PAGE, &last);
	stamp[CHURN + 1] = (c0 + mrpin_now_s()) / 2;
	c0 = mrpin_now_s();
	proc_row(getpid(), &after);
	t_read = (c0 + mrpin_now_s()) / 2;
	expected = expected_reg_per_s(stamp, CHURN + 2, t_read);
	TH_LOG("reg_per_s %llu; %.1f expected from the registrations' times; churn rate %.0f/s",
	       (unsigned long long)after.reg_per_s, expected, churn_rate);
	EXPECT_EQ(before.registrations + CHURN + 1, after.registrations);
	EXPECT_LT(0ULL, (unsigned long long)after.reg_per_s);
	EXPECT_GE(expected * 1.1 + 2, (double)after.reg_per_s);
	EXPECT_LE(expected / 1.1 - 2, (double)after.reg_per_s);
	do_dereg(last);
	do_dereg(anchor);
	munmap(buf, 2 * PAGE);
	free(stamp);
}

/*
 * 11. An idle process: reg_per_s is the rate of the last full 10 s window,
 * so it falls to zero once a whole window passes without registrations;
 * a pin that lived longer than 2^23 us lands in the last lifetime bucket.
 */
TEST_F_TIMEOUT(lifetime, idle_process_reg_per_s_falls_to_zero_and_long_lives_land_in_the_last_bucket, 90)
{
	struct diag_test *t = &self->t;
	uint64_t hb[LIFE_BUCKETS], ha[LIFE_BUCKETS];
	struct ibv_mr *anchor, *keeper, *mr;
	struct mrpin_proc_row row;
	double t0, rate;
	char *buf;
	int i;

	buf = map_buf(3 * PAGE);
	do_reg(t->f.pd, buf, PAGE, &anchor);
	t0 = mrpin_now_s();
	/* Up to 1000, within 8 s whatever the kernel's speed. */
	for (i = 0; i < 1000 && mrpin_now_s() < t0 + 8; i++) {
		do_reg(t->f.pd, buf + PAGE, PAGE, &mr);
		do_dereg(mr);
	}
	ASSERT_GT(t0 + 9.5, mrpin_now_s());

	/* Past the first full window: its i + 1 registrations. */
	mrpin_sleep_s(t0 + 10.5 - mrpin_now_s());
	proc_row(getpid(), &row);
	rate = (i + 1) / 10.0;
	TH_LOG("10.5 s after the first of %d registrations: reg_per_s %llu (%.0f expected)",
	       i + 1, (unsigned long long)row.reg_per_s, rate);
	EXPECT_LE(rate * 0.75, (double)row.reg_per_s);
	EXPECT_GE(rate * 1.25, (double)row.reg_per_s);
	do_reg(t->f.pd, buf + 2 * PAGE, PAGE, &keeper);

	/* A whole window later with one registration: below 1/s. */
	mrpin_sleep_s(t0 + 21 - mrpin_now_s());
	proc_row(getpid(), &row);
	EXPECT_GE(1ULL, (unsigned long long)row.reg_per_s) {
		TH_LOG("21 s after the burst, one registration in the last 10 s: reg_per_s %llu",
		       (unsigned long long)row.reg_per_s);
	}
	hist_of(&row, hb);

	/* The anchor lived about 21 s (2^24.3 us): the last bucket. */
	do_dereg(anchor);
	proc_row(getpid(), &row);
	hist_of(&row, ha);
	for (i = 0; i < LIFE_BUCKETS - 1; i++)
		EXPECT_EQ(hb[i], ha[i]);
	EXPECT_EQ(hb[LIFE_BUCKETS - 1] + 1, ha[LIFE_BUCKETS - 1]) {
		TH_LOG("life_hist %s", row.life_hist);
	}
	do_dereg(keeper);
	munmap(buf, 3 * PAGE);
}

/* A line of `callsites`. */
struct callsite_row {
	pid_t pid;
	char comm[64];
	uint64_t pins;
	uint64_t bytes;
	uint64_t oldest_age_ms;
	char frames[512];
};

#define SITE_COL(f, k)	MRPIN_COL(struct callsite_row, f, k)

static const struct mrpin_col callsite_cols[] = {
	SITE_COL(pid, MRPIN_COL_PID),
	SITE_COL(comm, MRPIN_COL_STR),
	SITE_COL(pins, MRPIN_COL_U64),
	SITE_COL(bytes, MRPIN_COL_U64),
	SITE_COL(oldest_age_ms, MRPIN_COL_U64),
	SITE_COL(frames, MRPIN_COL_STR),
};

/*
 * 12. callsites: with callsites=on, the live pins of a program grouped by
 * the function that called ibv_reg_mr(): the syscall's IP in libc first,
 * then return addresses into executable file mappings, one of them inside
 * that function.  Pins made with callsites=off have none.
 */
struct mapping {
	uintptr_t start;
	uintptr_t end;
	char perms[8];
	char path[PATH_MAX];
};

/* The mapping of process @pid that holds @addr: 0, or -ENOENT. */
static int mapping_of(pid_t pid, uintptr_t addr, struct mapping *map)
{
	char path[64], *buf, *line, *next;
	unsigned long start, end;
	int off = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (mrpin_read_file(path, &buf))
		return -ENOENT;
	for (line = buf; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end,
			   map->perms, &off) < 3)
			continue;
		if (addr < start || addr >= end)
			continue;
		map->start = start;
		map->end = end;
		snprintf(map->path, sizeof(map->path), "%s",
			 off ? line + off : "");
		free(buf);
		return 0;
	}
	free(buf);
	return -ENOENT;
}

static int parse_frames(const char *s, uintptr_t *frames)
{
	char *end;
	int n = 0;

	while (*s) {
		if (n == MAX_FRAMES + 1 || strncmp(s, "0x", 2))
			return -EPROTO;
		errno = 0;
		frames[n++] = strtoul(s, &end, 16);
		if (errno || end == s + 2 || (*end && *end != ','))
			return -EPROTO;
		s = *end ? end + 1 : end;
	}
	return n;
}

/* The `callsites` lines of @pid: their number, up to @max in @rows. */
static int __callsites_of(struct __test_metadata *_metadata, pid_t pid,
			  struct callsite_row *out, int max)
{
	struct callsite_row *rows;
	int n, i, found = 0;

	n = read_table("callsites", callsite_cols, &rows);
	ASSERT_LE(0, n) {
		TH_LOG("callsites: %s", strerror(-n));
	}
	for (i = 0; i < n; i++) {
		if (rows[i].pid != pid)
			continue;
		if (found < max)
			out[found] = rows[i];
		found++;
	}
	free(rows);
	return found;
}
#define callsites_of(pid, out, max) __callsites_of(_metadata, pid, out, max)

/* The end of reg_site_@site: 256 bytes on, or where the other one starts. */
static uintptr_t site_end(const struct mistakes *m, int site)
{
	uintptr_t end = m->site[site] + 256, other = m->site[!site];

	return other > m->site[site] && other < end ? other : end;
}

TEST_F(lifetime, callsites_name_the_function_that_registered)
{
	struct diag_test *t = &self->t;
	struct mistakes *m = &t->kids[0], *off = &t->kids[1];
	struct callsite_row rows[4];
	uintptr_t frames[MAX_FRAMES + 1];
	struct mapping map;
	int n, i, j, k, site, in_site[2];

	set_limits("global callsites=on\n");
	mistakes_start(m, 0, "callsites", "3", "2");
	mistakes_wait(m, "ready");
	ASSERT_NE(0UL, (unsigned long)m->site[0]);
	ASSERT_NE(0UL, (unsigned long)m->site[1]);

	n = callsites_of(m->c.pid, rows, 4);
	EXPECT_EQ(2, n) {
		TH_LOG("%d callsites lines for pid %d, expected 2 (one per function)",
		       n, m->c.pid);
	}
	for (i = 0; i < n && i < 4; i++) {
		/* The 3 MRs of reg_site_a, the 2 of reg_site_b. */
		site = rows[i].pins == 3 ? 0 : 1;
		TH_LOG("pid %d: %llu pins from site %c (%#lx): %s", m->c.pid,
		       (unsigned long long)rows[i].pins, 'a' + site,
		       (unsigned long)m->site[site], rows[i].frames);
		EXPECT_STREQ(MISTAKES, rows[i].comm);
		if (n == 2)
			EXPECT_EQ(site ? 2ULL : 3ULL,
				  (unsigned long long)rows[i].pins);
		EXPECT_EQ(rows[i].pins * PAGE, rows[i].bytes);
		EXPECT_GT(60000ULL, (unsigned long long)rows[i].oldest_age_ms);
		k = parse_frames(rows[i].frames, frames);
		ASSERT_LT(0, k) {
			TH_LOG("frames \"%s\": not hex addresses", rows[i].frames);
		}
		EXPECT_GE(MAX_FRAMES, k);
		/* The syscall's IP, in libc. */
		EXPECT_EQ(0, mapping_of(m->c.pid, frames[0], &map));
		EXPECT_NE(NULL, strstr(map.path, "libc")) {
			TH_LOG("first frame %#lx is in \"%s\", not libc",
			       (unsigned long)frames[0], map.path);
		}
		in_site[0] = in_site[1] = 0;
		for (j = 0; j < k; j++) {
			if (mapping_of(m->c.pid, frames[j], &map)) {
				EXPECT_TRUE(false) {
					TH_LOG("frame %#lx is in no mapping",
					       (unsigned long)frames[j]);
				}
				continue;
			}
			TH_LOG("  frame %d: %#lx in %s %s+%#lx", j,
			       (unsigned long)frames[j], map.perms, map.path,
			       (unsigned long)(frames[j] - map.start));
			EXPECT_TRUE(strchr(map.perms, 'x') && map.path[0] == '/') {
				TH_LOG("frame %#lx is in %s %s, not an executable file mapping",
				       (unsigned long)frames[j], map.perms,
				       map.path);
			}
			for (site = 0; site < 2; site++)
				in_site[site] += frames[j] >= m->site[site] &&
						 frames[j] < site_end(m, site);
		}
		site = rows[i].pins == 3 ? 0 : 1;
		if (n != 2)
			continue;
		EXPECT_LE(1, in_site[site]) {
			TH_LOG("no frame inside reg_site_%c [%#lx, %#lx)",
			       'a' + site, (unsigned long)m->site[site],
			       (unsigned long)site_end(m, site));
		}
		EXPECT_EQ(0, in_site[!site]);
	}

	/* callsites=off: new pins have none, the old ones keep theirs. */
	set_limits("global callsites=off\n");
	mistakes_start(off, 0, "callsites", "1", "1");
	mistakes_wait(off, "ready");
	EXPECT_EQ(0, callsites_of(off->c.pid, rows, 4));
	EXPECT_EQ(n, callsites_of(m->c.pid, rows, 4));
	mistakes_exit_ok(off);
	mistakes_exit_ok(m);
	EXPECT_EQ(0, callsites_of(m->c.pid, rows, 4));
}

MRPIN_TEST_MAIN(MRPIN_DEBUGFS "/leaks", "no diagnostics in this mrpin")
