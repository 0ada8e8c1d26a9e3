// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand-paging registrations (ibv_reg_mr() with IBV_ACCESS_ON_DEMAND)
 * pin no pages, but each holds an entry in the device's MR table and can
 * leak like any other.  On the RDMA device under test (rxe0 unless
 * $MRPIN_TEST_DEV says otherwise), when it supports ODP:
 *
 *  - an ODP MR is a line of `pins` with odp 1, pinned_bytes 0 and the
 *    driver's ODP path as its caller; it counts in `stats` pins and
 *    odp_pins, in its process's and its device's pins, and in no byte
 *    count, distinct bytes or VmPin, even over memory a plain MR pins;
 *    its deregistration is a tracked release, not an untracked one (the
 *    release ib_umem_release() passes to ib_umem_odp_release() is seen
 *    once);
 *  - max_pins counts it (refused with ENOMEM and a max_pins event of 0
 *    bytes asked), max_pinned does not;
 *  - its lifetime goes to its process's life_hist and registrations;
 *  - a process that exits with it registered leaks it: a cleanup release
 *    and a leak of 0 bytes in `leaks`;
 *  - a range that wraps fails with EOVERFLOW, told as invalid.
 *
 * rxe gained ODP in later kernels than Debian 12's: where the device does
 * not report it, the whole program skips, saying so.
 */
#define _GNU_SOURCE
#include "mrpin_diag.h"

#include <sys/mman.h>
#include <sys/utsname.h>

#define ODP_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND)

FIXTURE(odp) {
	struct mrpin_fixture f;
};

FIXTURE_SETUP(odp)
{
	fixture_setup(&self->f);
	self->f.quiet = true;
}

FIXTURE_TEARDOWN(odp)
{
	fixture_close(&self->f);
	check_sums();
	fixture_check(&self->f);
}

/* An ODP registration: 0, or -1 with errno set. */
static int _do_reg_odp(struct ibv_pd *pd, void *addr, size_t length,
		       struct ibv_mr **mr)
{
	*mr = ibv_reg_mr(pd, addr, length, ODP_ACCESS);
	return *mr ? 0 : -1;
}

#define do_reg_odp(pd, addr, length, mr)				\
	ASSERT_EQ(0, _do_reg_odp(pd, addr, length, mr)) {		\
		TH_LOG("ODP ibv_reg_mr(%p, %zu): %s", (void *)(addr),	\
		       (size_t)(length), strerror(errno));		\
	}

/* This process's pins of `pins` with odp 1 and @start: their number. */
static int __odp_pins_at(struct __test_metadata *_metadata, void *start,
			 struct mrpin_pin_row *found)
{
	struct mrpin_pin_row *rows;
	int n, i, count = 0;

	n = mrpin_read_pins(&rows);
	EXPECT_LE(0, n) {
		TH_LOG("pins: %s", strerror(-n));
	}
	for (i = 0; i < n; i++) {
		if (rows[i].pid != getpid() || !rows[i].odp ||
		    rows[i].start != (uintptr_t)start)
			continue;
		*found = rows[i];
		count++;
	}
	free(rows);
	return count;
}
#define odp_pins_at(start, found) __odp_pins_at(_metadata, start, found)

TEST_F(odp, registration_counts_as_a_pin_of_no_bytes)
{
	struct mrpin_stats before, during, after;
	struct mrpin_dev_row dev_before, dev;
	struct mrpin_proc_row row;
	struct mrpin_pin_row pin;
	size_t len = MiB;
	char *buf = map_buf(len);
	struct ibv_mr *odp;
	uint64_t vmpin = 0;

	read_stats(&before);
	dev_row(mrpin_dev_name(), &dev_before);
	do_reg_odp(self->f.pd, buf, len, &odp);

	ASSERT_EQ(1, odp_pins_at(buf, &pin));
	EXPECT_EQ(len, pin.length);
	EXPECT_EQ(0ULL, (unsigned long long)pin.pinned_bytes);
	EXPECT_EQ(0ULL, (unsigned long long)pin.bytes_4k);
	EXPECT_EQ(0ULL, (unsigned long long)pin.oversized);
	EXPECT_STREQ(mrpin_dev_name(), pin.device);
	/* The driver's ODP registration path, not ib_core. */
	EXPECT_NE(NULL, strstr(pin.caller, "odp")) {
		TH_LOG("caller %s", pin.caller);
	}

	read_stats(&during);
	EXPECT_EQ(before.pins + 1, during.pins);
	EXPECT_EQ(before.odp_pins + 1, during.odp_pins);
	EXPECT_EQ(before.pins_total + 1, during.pins_total);
	EXPECT_EQ(before.pinned_bytes, during.pinned_bytes);
	EXPECT_EQ(before.distinct_bytes, during.distinct_bytes);
	proc_row(getpid(), &row);
	EXPECT_EQ(1ULL, (unsigned long long)row.pins);
	EXPECT_EQ(0ULL, (unsigned long long)row.pinned_bytes);
	EXPECT_EQ(0ULL, (unsigned long long)row.distinct_bytes);
	EXPECT_EQ(0, mrpin_vmpin(getpid(), &vmpin));
	EXPECT_EQ(0ULL, (unsigned long long)vmpin);
	dev_row(mrpin_dev_name(), &dev);
	EXPECT_EQ(dev_before.pins + 1, dev.pins);
	EXPECT_EQ(dev_before.pinned_bytes, dev.pinned_bytes);
	check_sums();

	do_dereg(odp);
	read_stats(&after);
	EXPECT_EQ(before.pins, after.pins);
	EXPECT_EQ(before.odp_pins, after.odp_pins);
	EXPECT_EQ(before.releases_total + 1, after.releases_total);
	EXPECT_EQ(before.untracked_releases_total,
		  after.untracked_releases_total);
	EXPECT_EQ(0, odp_pins_at(buf, &pin));
	munmap(buf, len);
}

TEST_F(odp, beside_a_plain_mr_adds_no_bytes)
{
	size_t len = 64 * PAGE;
	char *buf = map_buf(len);
	struct mrpin_proc_row row;
	struct ibv_mr *plain, *odp;
	uint64_t vmpin = 0;

	do_reg(self->f.pd, buf, len / 2, &plain);
	do_reg_odp(self->f.pd, buf, len, &odp);
	proc_row(getpid(), &row);
	EXPECT_EQ(2ULL, (unsigned long long)row.pins);
	EXPECT_EQ(len / 2, row.pinned_bytes);
	EXPECT_EQ(len / 2, row.distinct_bytes);
	EXPECT_EQ(0, mrpin_vmpin(getpid(), &vmpin));
	EXPECT_EQ(len / 2, vmpin);
	check_sums();

	/* The plain MR goes first: what is left pins nothing. */
	do_dereg(plain);
	proc_row(getpid(), &row);
	EXPECT_EQ(1ULL, (unsigned long long)row.pins);
	EXPECT_EQ(0ULL, (unsigned long long)row.pinned_bytes);
	EXPECT_EQ(0ULL, (unsigned long long)row.distinct_bytes);
	do_dereg(odp);
	munmap(buf, len);
}

TEST_F(odp, max_pins_counts_it_and_max_pinned_does_not)
{
	size_t len = 16 * PAGE;
	char *buf = map_buf(len);
	struct ibv_mr *plain, *odp, *mr;
	struct mrpin_event ev;
	uint64_t seq;

	self->f.quiet = false;		/* the refusals are logged */
	do_reg(self->f.pd, buf, PAGE, &plain);
	/* Nothing more may be pinned, yet an ODP MR pins nothing. */
	set_limits("process max_pinned=4K\n");
	do_reg_odp(self->f.pd, buf, len, &odp);
	do_reg_err(ENOMEM, self->f.pd, buf + PAGE, PAGE);

	/* Two MRs live: a third, ODP or not, crosses max_pins=2. */
	set_limits("process max_pinned=unlimited max_pins=2\n");
	seq = next_seq();
	ASSERT_EQ(-1, _do_reg_odp(self->f.pd, buf, len, &mr));
	EXPECT_EQ(ENOMEM, errno);
	ASSERT_EQ(1, events_since(seq, getpid(), "max_pins", &ev, 1));
	check_event(&ev, "deny", getpid(), 0, "process", "max_pins", 0, 2, 2);

	do_dereg(odp);
	do_reg_odp(self->f.pd, buf, len, &odp);
	do_dereg(odp);
	do_dereg(plain);
	munmap(buf, len);
}

TEST_F(odp, lifetime_goes_to_life_hist_and_registrations)
{
	uint64_t hb[LIFE_BUCKETS], ha[LIFE_BUCKETS], sb = 0, sa = 0;
	struct mrpin_proc_row before, after;
	char *buf = map_buf(8 * PAGE);
	struct ibv_mr *keeper, *odp;
	int i;

	/* A plain MR keeps this process's line across the ODP MR's life. */
	do_reg(self->f.pd, buf, PAGE, &keeper);
	proc_row(getpid(), &before);
	hist_of(&before, hb);
	do_reg_odp(self->f.pd, buf + PAGE, 4 * PAGE, &odp);
	do_dereg(odp);
	proc_row(getpid(), &after);
	hist_of(&after, ha);
	for (i = 0; i < LIFE_BUCKETS; i++) {
		sb += hb[i];
		sa += ha[i];
	}
	EXPECT_EQ(sb + 1, sa) {
		TH_LOG("life_hist before %s, after %s", before.life_hist,
		       after.life_hist);
	}
	EXPECT_EQ(before.registrations + 1, after.registrations);
	EXPECT_EQ(before.cleanup_releases, after.cleanup_releases);
	do_dereg(keeper);
	munmap(buf, 8 * PAGE);
}

/*
 * The child registers an ODP MR on a device it opens itself and exits
 * with it: the kernel releases it, a leak of 0 bytes.
 */
static void child_leaks_odp(int in, int out)
{
	struct ibv_context *ctx = mrpin_open_dev(mrpin_dev_name());
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	void *buf = mrpin_map_touched(4 * PAGE);
	struct ibv_mr *mr = NULL;
	char line[16];

	if (pd && buf)
		mr = ibv_reg_mr(pd, buf, 4 * PAGE, ODP_ACCESS);
	write_line(out, mr ? "ready\n" : "failed\n");
	read_line(in, line, sizeof(line));
	_exit(0);
}

TEST_F(odp, exit_with_it_registered_is_a_leak_of_no_bytes)
{
	struct mrpin_leak_row lbefore, lafter;
	struct mrpin_stats before, after;
	char comm[64], line[16];
	int in, out, status;
	pid_t pid;

	ASSERT_EQ(0, mrpin_comm(getpid(), comm, sizeof(comm)));
	leak_row(comm, 0, &lbefore);
	read_stats(&before);
	pid = fork_talking(&in, &out);
	if (!pid)
		child_leaks_odp(in, out);
	ASSERT_EQ(0, read_line(in, line, sizeof(line)));
	ASSERT_STREQ("ready", line);
	check_proc(pid, 1, 0);
	write_line(out, "exit\n");
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	close(in);
	close(out);

	check_no_trace(pid);
	read_stats(&after);
	EXPECT_EQ(before.releases_total + 1, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total + 1,
		  after.cleanup_releases_total);
	EXPECT_EQ(before.untracked_releases_total,
		  after.untracked_releases_total);
	leak_row(comm, 0, &lafter);
	EXPECT_EQ(lbefore.count + 1, lafter.count);
	EXPECT_EQ(lbefore.bytes, lafter.bytes);
}

/*
 * An ODP registration of 0 bytes inside a page is, to the kernel, an ODP
 * range of that page: a pin of no bytes, which max_pins counts like any
 * other.
 */
TEST_F(odp, zero_length_registration_inside_a_page_counts_against_max_pins)
{
	char *buf = map_buf(2 * PAGE);
	struct mrpin_proc_row row;
	struct mrpin_pin_row pin;
	struct ibv_mr *odp, *mr;
	struct mrpin_event ev;
	uint64_t seq;

	self->f.quiet = false;		/* the refusal is logged */
	set_limits("process max_pins=1\n");
	do_reg_odp(self->f.pd, buf + 1, 0, &odp);
	ASSERT_EQ(1, odp_pins_at(buf + 1, &pin));
	EXPECT_EQ(0ULL, (unsigned long long)pin.pinned_bytes);
	proc_row(getpid(), &row);
	EXPECT_EQ(1ULL, (unsigned long long)row.pins);

	seq = next_seq();
	ASSERT_EQ(-1, _do_reg_odp(self->f.pd, buf + PAGE + 1, 0, &mr));
	EXPECT_EQ(ENOMEM, errno);
	ASSERT_EQ(1, events_since(seq, getpid(), "max_pins", &ev, 1));
	check_event(&ev, "deny", getpid(), 0, "process", "max_pins", 0, 1, 1);

	do_dereg(odp);
	EXPECT_EQ(0, odp_pins_at(buf + 1, &pin));
	munmap(buf, 2 * PAGE);
}

/*
 * A range that wraps past the top of the address space: ib_core's ODP
 * path refuses it with EOVERFLOW (the plain path says EINVAL), a failure
 * told as invalid, for the bytes asked, with nothing charged.
 */
TEST_F(odp, range_that_wraps_fails_as_invalid_with_eoverflow)
{
	void *top = (void *)~(uintptr_t)(PAGE - 1);
	struct mrpin_stats before, after;
	struct mrpin_event ev;
	struct ibv_mr *mr;
	uint64_t seq;

	read_stats(&before);
	seq = next_seq();
	ASSERT_EQ(-1, _do_reg_odp(self->f.pd, top, 2 * PAGE, &mr));
	EXPECT_EQ(EOVERFLOW, errno) {
		TH_LOG("ODP ibv_reg_mr(%p, %zu): %s", top, (size_t)(2 * PAGE),
		       strerror(errno));
	}
	ASSERT_EQ(1, events_since(seq, getpid(), NULL, &ev, 1));
	check_event(&ev, "fail", getpid(), 0, "process", "invalid", 2 * PAGE,
		    MRPIN_ANY, mrpin_memlock_bytes());
	EXPECT_EQ((uint64_t)EOVERFLOW, ev.err);
	read_stats(&after);
	EXPECT_EQ(before.failures_invalid_total + 1,
		  after.failures_invalid_total);
	EXPECT_EQ(before.failures_total + 1, after.failures_total);
	EXPECT_EQ(before.pins, after.pins);
	EXPECT_EQ(before.pinned_bytes, after.pinned_bytes);
}

/* Whether the device under test registers ODP MRs: 0, or why not. */
static const char *odp_unsupported(void)
{
	static char why[256];
	struct ibv_device_attr_ex attr = { 0 };
	struct ibv_context *ctx;
	struct utsname u;

	ctx = mrpin_open_dev(mrpin_dev_name());
	if (!ctx)
		return NULL;	/* mrpin_require_testable() said why */
	if (ibv_query_device_ex(ctx, NULL, &attr) ||
	    !(attr.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		uname(&u);
		snprintf(why, sizeof(why),
			 "%s on this kernel (%s) has no on-demand paging: its odp_caps lack IBV_ODP_SUPPORT",
			 mrpin_dev_name(), u.release);
		ibv_close_device(ctx);
		return why;
	}
	ibv_close_device(ctx);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *why;

	mrpin_require_testable(NULL, NULL);
	why = odp_unsupported();
	if (why)
		ksft_exit_skip("%s\n", why);
	mrpin_log_budget_setup();
	return test_harness_run(argc, argv);
}
