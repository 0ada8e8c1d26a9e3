// SPDX-License-Identifier: GPL-2.0
/*
 * Distinct pinned bytes: what an address space really pins, when it
 * registers the same memory several times.  On the RDMA device under test
 * (rxe0 unless $MRPIN_TEST_DEV says otherwise) and a second rxe device the
 * test makes on a dummy netdev of its own:
 *
 *  - one buffer registered on both devices: VmPin, and mrpin's
 *    pinned_bytes, count it twice; distinct_bytes once, in `procs` and in
 *    `stats`, until the last of the two MRs goes;
 *  - overlapping MRs on one device count the union of their pages;
 *  - random unaligned, overlapping MRs on both devices, registered and
 *    deregistered in a random order: after every step distinct_bytes is
 *    the size of the union of their pages, computed here page by page;
 *  - a forked child that registers the same addresses (its own copy of
 *    the pages) counts them in its own line, not its parent's; when it
 *    exits with its MRs registered, its distinct bytes go with them;
 *  - the global rule counts distinct bytes by default (count=distinct):
 *    the same buffer on two devices fits under a cap it would cross if
 *    each registration counted, and a new buffer does not; memory already
 *    pinned registers again even over a lowered cap; with
 *    count=registered, a third registration of the buffer is refused;
 *  - the process rule counts registrations by default, and distinct
 *    bytes with count=distinct; a uid or cgroup rule refuses count=.
 *
 * Every refusal is an `events` line whose usage is what the rule counts.
 */
#define _GNU_SOURCE
#include "mrpin_test.h"

#include <sys/mman.h>
#include <time.h>

#define SECOND_NETDEV	"mrpin_dd0"
#define SECOND_DEV	"mrpin_rxd0"

FIXTURE(distinct) {
	struct mrpin_fixture f;
	struct ibv_context *ctx2;	/* the second device, made by main() */
	struct ibv_pd *pd2;
};

/* The second rxe device, on a dummy netdev: 0, or -1. */
static int make_second_device(void)
{
	return system("ip link add " SECOND_NETDEV " type dummy &&"
		      " ip link set " SECOND_NETDEV " up &&"
		      " rdma link add " SECOND_DEV " type rxe netdev "
		      SECOND_NETDEV) ? -1 : 0;
}

static void remove_second_device(void)
{
	if (system("rdma link delete " SECOND_DEV " 2>/dev/null;"
		   " ip link delete " SECOND_NETDEV " 2>/dev/null"))
		return;
}

FIXTURE_SETUP(distinct)
{
	fixture_setup(&self->f);
	self->ctx2 = mrpin_open_dev(SECOND_DEV);
	ASSERT_NE(NULL, self->ctx2) {
		TH_LOG("cannot open %s: %s", SECOND_DEV, strerror(errno));
	}
	self->pd2 = ibv_alloc_pd(self->ctx2);
	ASSERT_NE(NULL, self->pd2);
}

FIXTURE_TEARDOWN(distinct)
{
	if (self->pd2)
		ibv_dealloc_pd(self->pd2);
	if (self->ctx2)
		ibv_close_device(self->ctx2);
	fixture_close(&self->f);
	check_sums();
	fixture_check(&self->f);
}

/*
 * This process's `procs` line (pins, pinned and distinct bytes) and its
 * VmPin, and the sums; whether they all held.
 */
static bool __check_distinct(struct __test_metadata *_metadata, uint64_t pins,
			     uint64_t pinned, uint64_t distinct)
{
	struct mrpin_proc_row row = { 0 };
	uint64_t vmpin = 0;

	if (pins)
		proc_row(getpid(), &row);
	EXPECT_EQ(pins, row.pins);
	EXPECT_EQ(pinned, row.pinned_bytes);
	EXPECT_EQ(distinct, row.distinct_bytes);
	EXPECT_EQ(0, mrpin_vmpin(getpid(), &vmpin));
	EXPECT_EQ(pinned, vmpin);
	check_sums();
	return row.pins == pins && row.pinned_bytes == pinned &&
	       row.distinct_bytes == distinct && vmpin == pinned;
}
#define check_distinct(pins, pinned, distinct)				\
	__check_distinct(_metadata, pins, pinned, distinct)

TEST_F(distinct, one_buffer_on_two_devices_counts_once)
{
	size_t len = MiB;
	char *buf = mrpin_map_touched(len + 2 * PAGE);
	struct mrpin_stats before, during;
	struct ibv_mr *a, *b;
	uint64_t bytes;

	self->f.quiet = true;

	ASSERT_NE(NULL, buf);
	/* Unaligned: the pages it spans count, once. */
	bytes = mrpin_span_bytes((uintptr_t)buf + 100, len);
	read_stats(&before);
	do_reg(self->f.pd, buf + 100, len, &a);
	check_distinct(1, bytes, bytes);
	do_reg(self->pd2, buf + 100, len, &b);
	check_distinct(2, 2 * bytes, bytes);
	read_stats(&during);
	EXPECT_EQ(before.pinned_bytes + 2 * bytes, during.pinned_bytes);
	EXPECT_EQ(before.distinct_bytes + bytes, during.distinct_bytes);

	do_dereg(a);
	check_distinct(1, bytes, bytes);
	do_dereg(b);
	check_distinct(0, 0, 0);
	munmap(buf, len + 2 * PAGE);
}

TEST_F(distinct, overlapping_mrs_on_one_device_count_their_union)
{
	size_t len = 16 * PAGE;
	char *buf = mrpin_map_touched(len);
	struct ibv_mr *a, *b, *c;

	ASSERT_NE(NULL, buf);
	self->f.quiet = true;
	/* Pages 0-7 and 4-11; then 2-5, inside both, unaligned both ends. */
	do_reg(self->f.pd, buf, 8 * PAGE, &a);
	do_reg(self->f.pd, buf + 4 * PAGE, 8 * PAGE, &b);
	check_distinct(2, 16 * PAGE, 12 * PAGE);
	do_reg(self->f.pd, buf + 2 * PAGE + 100, 3 * PAGE, &c);
	check_distinct(3, 20 * PAGE, 12 * PAGE);
	/* Pages 0-3 are a's alone; 4-7 stay b's, 2-5 c's. */
	do_dereg(a);
	check_distinct(2, 12 * PAGE, 10 * PAGE);
	do_dereg(b);
	check_distinct(1, 4 * PAGE, 4 * PAGE);
	do_dereg(c);
	check_distinct(0, 0, 0);
	munmap(buf, len);
}

#define MODEL_PAGES	64
#define MODEL_MRS	24
#define MODEL_STEPS	300

struct model_mr {
	struct ibv_mr *mr;
	uintptr_t start;
	size_t length;
};

/* The pages [start, start + length) spans, as indexes into the buffer. */
static void model_pages(const char *buf, const struct model_mr *m,
			unsigned int *first, unsigned int *end)
{
	uintptr_t base = (uintptr_t)buf;

	*first = (m->start - base) / PAGE;
	*end = (m->start + m->length - base + PAGE - 1) / PAGE;
}

/* The union of the live MRs' pages, in bytes; their sum in *@pinned. */
static uint64_t model_union(const char *buf, const struct model_mr *mrs,
			    int n, uint64_t *pinned)
{
	bool covered[MODEL_PAGES] = { false };
	unsigned int first, end, p;
	uint64_t bytes = 0;
	int i;

	*pinned = 0;
	for (i = 0; i < n; i++) {
		model_pages(buf, &mrs[i], &first, &end);
		*pinned += (uint64_t)(end - first) * PAGE;
		for (p = first; p < end; p++)
			covered[p] = true;
	}
	for (p = 0; p < MODEL_PAGES; p++)
		bytes += covered[p] ? PAGE : 0;
	return bytes;
}

/* Its 300 steps take about 30 s on the debug kernel: past the default timeout. */
TEST_F_TIMEOUT(distinct, random_overlapping_mrs_match_the_union_of_their_pages, 300)
{
	size_t len = MODEL_PAGES * PAGE;
	char *buf = mrpin_map_touched(len);
	struct model_mr mrs[MODEL_MRS];
	unsigned int seed = time(NULL) ^ getpid();
	uint64_t want, pinned;
	size_t off, length;
	int n = 0, step, i;

	self->f.quiet = true;

	ASSERT_NE(NULL, buf);
	TH_LOG("seed %u", seed);
	srandom(seed);
	for (step = 0; step < MODEL_STEPS; step++) {
		if (n < MODEL_MRS && (n == 0 || random() % 5 < 3)) {
			/* Unaligned both ends, often inside another MR. */
			off = random() % (len - 1);
			length = 1 + random() % (random() % 4 ? 4 * PAGE :
						 len - off);
			if (off + length > len)
				length = len - off;
			ASSERT_EQ(0, _do_reg(random() % 2 ? self->f.pd :
					     self->pd2, buf + off, length,
					     &mrs[n].mr)) {
				TH_LOG("step %d: ibv_reg_mr(+%zu, %zu): %s",
				       step, off, length, strerror(errno));
			}
			mrs[n].start = (uintptr_t)buf + off;
			mrs[n].length = length;
			n++;
		} else {
			i = random() % n;
			do_dereg(mrs[i].mr);
			mrs[i] = mrs[--n];
		}
		want = model_union(buf, mrs, n, &pinned);
		if (!check_distinct(n, pinned, want)) {
			TH_LOG("step %d, %d MRs live", step, n);
			break;
		}
	}
	while (n)
		do_dereg(mrs[--n].mr);
	check_distinct(0, 0, 0);
	munmap(buf, len);
}

/*
 * A child registers [@buf, @buf + @len) on both devices (its own copy of
 * the pages, after the fork), says "mr", and exits with both MRs
 * registered when the test closes its pipe.
 */
static void child_registers_twice(char *buf, size_t len, int in, int out)
{
	struct ibv_context *c1 = mrpin_open_dev(mrpin_dev_name());
	struct ibv_context *c2 = mrpin_open_dev(SECOND_DEV);
	struct ibv_pd *p1 = c1 ? ibv_alloc_pd(c1) : NULL;
	struct ibv_pd *p2 = c2 ? ibv_alloc_pd(c2) : NULL;
	struct ibv_mr *m1, *m2;
	char line[16];

	if (!p1 || !p2 || _do_reg(p1, buf, len, &m1) ||
	    _do_reg(p2, buf, len, &m2))
		_exit(1);
	write_line(out, "mr\n");
	while (read(in, line, sizeof(line)) > 0)
		;
	_exit(0);
}

TEST_F(distinct, a_forked_child_counts_its_own_and_exit_takes_it_back)
{
	size_t len = 256 * KiB;
	char *buf = mrpin_map_touched(len);
	struct mrpin_proc_row child;
	struct mrpin_stats before, during, after;
	struct ibv_mr *mr;
	int in, out, status;
	char line[16];
	pid_t pid;

	self->f.quiet = true;

	ASSERT_NE(NULL, buf);
	do_reg(self->f.pd, buf, len, &mr);
	check_distinct(1, len, len);
	read_stats(&before);

	pid = fork_talking(&in, &out);
	if (!pid)
		child_registers_twice(buf, len, in, out);
	ASSERT_EQ(0, read_line(in, line, sizeof(line)));
	ASSERT_STREQ("mr", line);

	proc_row(pid, &child);
	EXPECT_EQ(2ULL, child.pins);
	EXPECT_EQ(2ULL * len, child.pinned_bytes);
	EXPECT_EQ((uint64_t)len, child.distinct_bytes);
	check_distinct(1, len, len);
	read_stats(&during);
	EXPECT_EQ(before.distinct_bytes + len, during.distinct_bytes);

	close(out);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(in);
	check_no_trace(pid);
	read_stats(&after);
	EXPECT_EQ(before.distinct_bytes, after.distinct_bytes);
	EXPECT_EQ(before.pinned_bytes, after.pinned_bytes);
	check_distinct(1, len, len);
	do_dereg(mr);
	munmap(buf, len);
}

/* The first refusal of this process since @from. */
static void __check_refused(struct __test_metadata *_metadata, uint64_t from,
			    const char *scope, uint64_t asked, uint64_t usage,
			    uint64_t limit)
{
	struct mrpin_event ev;

	ASSERT_EQ(1, events_since(from, getpid(), "max_pinned", &ev, 1));
	check_event(&ev, "deny", getpid(), getuid(), scope, "max_pinned",
		    asked, usage, limit);
}
#define check_refused(from, scope, asked, usage, limit)			\
	__check_refused(_metadata, from, scope, asked, usage, limit)

/* Whether `limits` has a line that starts with @prefix and holds @word. */
static bool limits_line_has(const char *prefix, const char *word)
{
	char *text = NULL, *line, *save;
	bool found = false;

	if (mrpin_read_file(MRPIN_LIMITS_FILE, &text))
		return false;
	for (line = strtok_r(text, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save))
		found = !strncmp(line, prefix, strlen(prefix)) &&
			strstr(line, word);
	free(text);
	return found;
}

TEST_F(distinct, the_global_cap_counts_distinct_bytes_by_default)
{
	size_t len = MiB;
	char *buf = mrpin_map_touched(2 * len);
	struct mrpin_stats start, now;
	struct ibv_mr *a, *b, *c;
	uint64_t cap, from;

	ASSERT_NE(NULL, buf);
	EXPECT_TRUE(limits_line_has("global ", " count=distinct"));
	EXPECT_TRUE(limits_line_has("process ", " count=registered"));
	read_stats(&start);
	/* Room for the buffer once and a half: not for it twice. */
	cap = start.distinct_bytes + len + len / 2;
	set_limits("global max_pinned=%llu\n", (unsigned long long)cap);

	do_reg(self->f.pd, buf, len, &a);
	do_reg(self->pd2, buf, len, &b);
	read_stats(&now);
	EXPECT_LT(cap, now.pinned_bytes);
	EXPECT_EQ(start.distinct_bytes + len, now.distinct_bytes);
	check_distinct(2, 2 * len, len);

	/* A new MiB is more than the cap leaves. */
	from = next_seq();
	do_reg_err(ENOMEM, self->f.pd, buf + len, len);
	check_refused(from, "global", len, start.distinct_bytes + len, cap);
	check_distinct(2, 2 * len, len);

	/*
	 * Under a cap lowered below what is pinned, memory already pinned
	 * registers again: it adds nothing to what the cap counts.
	 */
	set_limits("global max_pinned=%llu\n",
		   (unsigned long long)start.distinct_bytes + len / 2);
	do_reg(self->pd2, buf + PAGE, len / 2, &c);
	check_distinct(3, 2 * len + len / 2, len);

	/* Counting registrations, the buffer a third time is refused. */
	set_limits("global max_pinned=%llu count=registered\n",
		   (unsigned long long)cap);
	from = next_seq();
	do_reg_err(ENOMEM, self->f.pd, buf, len);
	read_stats(&now);
	check_refused(from, "global", len, now.pinned_bytes, cap);

	do_dereg(a);
	do_dereg(b);
	do_dereg(c);
	check_distinct(0, 0, 0);
	munmap(buf, 2 * len);
}

TEST_F(distinct, the_process_rule_counts_as_it_says)
{
	size_t len = MiB;
	uint64_t limit = len + len / 4, from;
	char *buf = mrpin_map_touched(2 * len);
	struct ibv_mr *a, *b;

	ASSERT_NE(NULL, buf);
	set_limits("process max_pinned=%llu\n", (unsigned long long)limit);
	do_reg(self->f.pd, buf, len, &a);
	from = next_seq();
	do_reg_err(ENOMEM, self->pd2, buf, len);
	check_refused(from, "process", len, len, limit);

	set_limits("process count=distinct\n");
	do_reg(self->pd2, buf, len, &b);
	check_distinct(2, 2 * len, len);
	from = next_seq();
	do_reg_err(ENOMEM, self->pd2, buf + len / 2, len);
	/* Half of it is new: that half is what the rule weighs. */
	check_refused(from, "process", len / 2, len, limit);
	do_reg_err(ENOMEM, self->f.pd, buf + len, len);

	do_dereg(a);
	do_dereg(b);
	check_distinct(0, 0, 0);
	munmap(buf, 2 * len);
}

TEST_F(distinct, only_the_global_and_process_rules_take_count)
{
	char *before = NULL, *after = NULL;

	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &before));
	EXPECT_EQ(EINVAL, mrpin_limits_writef("uid 1000 count=distinct\n"));
	EXPECT_EQ(EINVAL, mrpin_limits_writef("cgroup / count=registered\n"));
	EXPECT_EQ(EINVAL, mrpin_limits_writef("process count=union\n"));
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &after));
	EXPECT_STREQ(before, after);
	free(before);
	free(after);
}

/*
 * The second device is made once, before the tests (a SKIP() in a fixture's
 * setup would not stop the 6.1 harness from running the test), and
 * removed after them.
 */
int main(int argc, char **argv)
{
	int ret;

	mrpin_require_testable(NULL, NULL);
	remove_second_device();
	if (make_second_device()) {
		remove_second_device();
		ksft_exit_skip("cannot add a second rxe device (%s on a dummy netdev): these tests need two devices\n",
			       SECOND_DEV);
	}
	mrpin_log_budget_setup();
	ret = test_harness_run(argc, argv);
	remove_second_device();
	return ret;
}
