// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's accounting, checked against the kernel's own: real MRs on the
 * RDMA device under test (rxe0 unless $MRPIN_TEST_DEV says otherwise),
 * registered by this process, by its threads and by mrpin_pinner children.
 *
 * The oracle, sampled whenever no registration is in flight:
 *  - a process that pins only through RDMA has `procs` pinned_bytes (and
 *    vm_pinned_bytes) equal to its VmPin;
 *  - the sum over `procs` equals `stats` pinned_bytes equals the sum over
 *    `devices` (and the same for pins);
 *  - every `pins` line has the range that was registered, the pages it
 *    spans, the registering process (its tgid) and rxe's caller.
 * After every test (the fixture teardown) the test's processes have left
 * no trace, `stats` pins and pinned_bytes are back where they started,
 * every pin made was released and no release went untracked.
 *
 * Every test runs as root: RLIMIT_MEMLOCK is lifted first.
 */
#include "mrpin_test.h"

#include <pthread.h>
#include <rdma/ib_user_verbs.h>
#include <signal.h>

#define RXE_CALLER	"rxe_mr_init_user"

struct mr_range {
	uint64_t start;
	uint64_t length;
};

static uint64_t range_bytes(const struct mr_range *mrs, int n)
{
	uint64_t bytes = 0;
	int i;

	for (i = 0; i < n; i++)
		bytes += mrpin_span_bytes(mrs[i].start, mrs[i].length);
	return bytes;
}

static struct mr_range mr_range(const void *addr, size_t length)
{
	return (struct mr_range){ (uintptr_t)addr, length };
}

/*
 * `pins` holds exactly the MRs @mrs of process @pid (in any order; the
 * same range may appear more than once), each with the pages it spans,
 * device @dev, the process's comm and rxe's caller.
 */
static void __check_pins(struct __test_metadata *_metadata, pid_t pid,
			 const char *dev, const struct mr_range *mrs, int n)
{
	struct mrpin_pin_row *rows;
	char comm[64];
	bool used[64] = { false };
	int nrows, mine, i, j;

	ASSERT_GE(64, n);
	ASSERT_EQ(0, mrpin_comm(pid, comm, sizeof(comm)));
	nrows = mrpin_read_pins(&rows);
	ASSERT_LE(0, nrows);
	/* Ids are unique (listed in no particular order). */
	for (i = 0; i < nrows; i++)
		for (j = i + 1; j < nrows; j++)
			EXPECT_NE(rows[i].id, rows[j].id);
	mine = mrpin_pins_of(rows, nrows, pid);
	EXPECT_EQ(n, mine);
	for (i = 0; i < n; i++) {
		for (j = 0; j < mine; j++)
			if (!used[j] && rows[j].start == mrs[i].start &&
			    rows[j].length == mrs[i].length)
				break;
		EXPECT_GT(mine, j) {
			TH_LOG("pid %d: no pin of [%#" PRIx64 ", +%" PRIu64 ")",
			       pid, mrs[i].start, mrs[i].length);
		}
		if (j == mine)
			continue;
		used[j] = true;
		EXPECT_EQ(mrpin_span_bytes(mrs[i].start, mrs[i].length),
			  rows[j].pinned_bytes);
		EXPECT_STREQ(dev, rows[j].device);
		EXPECT_STREQ(comm, rows[j].comm);
		EXPECT_STREQ(RXE_CALLER, rows[j].caller);
		EXPECT_GT(600000UL, rows[j].age_ms);
	}
	free(rows);
}
#define check_pins(pid, dev, mrs, n) __check_pins(_metadata, pid, dev, mrs, n)

/* The pins and bytes `devices` shows for @dev. */
static void __dev_counts(struct __test_metadata *_metadata, const char *dev,
			 uint64_t *pins, uint64_t *bytes)
{
	struct mrpin_dev_row d;

	dev_row(dev, &d);
	*pins = d.pins;
	*bytes = d.pinned_bytes;
}
#define dev_counts(dev, pins, bytes) __dev_counts(_metadata, dev, pins, bytes)

/* mrpin_pinner children, driven through their stdin and stdout. */
#define MAX_PINNER_MRS 16

struct pinner {
	struct mrpin_child c;	/* says "mr START LENGTH"..., "ready" */
	int nmrs;
	struct mr_range mrs[MAX_PINNER_MRS];
};

/* Start mrpin_pinner (next to this program) with @argv; wait for "ready". */
static void __pinner_start(struct __test_metadata *_metadata,
			   struct pinner *p, const char **argv)
{
	char line[128];

	child_start(&p->c, 0, argv);
	for (p->nmrs = 0;; p->nmrs++) {
		ASSERT_NE(NULL, fgets(line, sizeof(line), p->c.out)) {
			TH_LOG("mrpin_pinner %d died before it was ready",
			       p->c.pid);
		}
		if (!strcmp(line, "ready\n"))
			break;
		ASSERT_GT(MAX_PINNER_MRS, p->nmrs);
		ASSERT_EQ(2, sscanf(line, "mr %" SCNu64 " %" SCNu64,
				    &p->mrs[p->nmrs].start,
				    &p->mrs[p->nmrs].length));
	}
}
#define pinner_start(p, ...)						\
	__pinner_start(_metadata, p,					\
		       (const char *[]){ "mrpin_pinner", __VA_ARGS__, NULL })

/* What every fixture holds. */
struct mrpin_test {
	struct mrpin_fixture f;
	const char *dev;
	struct pinner pinners[2];
};

static void __test_setup(struct __test_metadata *_metadata,
			 struct mrpin_test *t)
{
	t->dev = mrpin_dev_name();
	fixture_setup(&t->f);
	check_no_trace(getpid());
	check_sums();
}
#define test_setup(t) __test_setup(_metadata, t)

/*
 * Release what the test may have left (kill its children, close the
 * device, which deregisters any MR still there), then check that nothing
 * is left.  Only EXPECT_*() without handler blocks here (see mrpin_test.h).
 */
static void __test_teardown(struct __test_metadata *_metadata,
			    struct mrpin_test *t)
{
	struct mrpin_stats end;
	int i;

	for (i = 0; i < (int)ARRAY_SIZE(t->pinners); i++)
		if (t->pinners[i].c.pid > 0)
			child_finish(&t->pinners[i].c, SIGKILL);
	fixture_close(&t->f);
	check_proc(getpid(), 0, 0);
	check_no_trace(getpid());
	fixture_check(&t->f);
	if (!mrpin_read_stats(&end))
		EXPECT_EQ(t->f.start.denials_total, end.denials_total);
	/* Nothing was pinned before: nothing may be listed now. */
	if (!t->f.start.pins)
		check_nothing_left();
}
#define test_teardown(t) __test_teardown(_metadata, t)

/*
 * Register one MR of @length bytes, @offset bytes into a page-aligned
 * buffer, expected to pin @bytes; check every view while it lives and
 * after it is gone.
 */
static void __check_one_mr(struct __test_metadata *_metadata,
			   struct mrpin_test *t, size_t offset, size_t length,
			   uint64_t bytes)
{
	size_t map_len = (offset + length + PAGE - 1) & ~(PAGE - 1);
	uint64_t dev_pins, dev_bytes, pins_now, bytes_now;
	struct mrpin_stats before, during, after;
	const struct mrpin_proc_row *p;
	struct mrpin_proc_row *procs;
	char comm[64], cgroup[512];
	struct mr_range r;
	struct ibv_mr *mr;
	char *buf;
	int n;

	ASSERT_EQ(PAGE, (unsigned long)sysconf(_SC_PAGESIZE));
	buf = map_buf(map_len);
	r = mr_range(buf + offset, length);
	/* The test's own arithmetic against the numbers it was given. */
	ASSERT_EQ(bytes, mrpin_span_bytes(r.start, r.length));

	read_stats(&before);
	dev_counts(t->dev, &dev_pins, &dev_bytes);

	do_reg(t->f.pd, buf + offset, length, &mr);
	check_pins(getpid(), t->dev, &r, 1);
	check_proc(getpid(), 1, bytes);

	/* The rest of this process's line. */
	ASSERT_EQ(0, mrpin_comm(getpid(), comm, sizeof(comm)));
	ASSERT_EQ(0, mrpin_cg_of(0, cgroup, sizeof(cgroup)));
	n = mrpin_read_procs(&procs);
	ASSERT_LE(0, n);
	p = mrpin_find_proc(procs, n, getpid());
	ASSERT_NE(NULL, p);
	EXPECT_STREQ(comm, p->comm);
	EXPECT_EQ(getuid(), p->uid);
	EXPECT_STREQ(cgroup, p->cgroup);
	EXPECT_EQ(bytes, p->peak_bytes);
	EXPECT_EQ(MRPIN_UNLIMITED, p->memlock_bytes);
	EXPECT_EQ(0UL, p->denials);
	free(procs);

	read_stats(&during);
	EXPECT_EQ(before.pins + 1, during.pins);
	EXPECT_EQ(before.pinned_bytes + bytes, during.pinned_bytes);
	EXPECT_EQ(before.pins_total + 1, during.pins_total);
	EXPECT_EQ(before.releases_total, during.releases_total);
	EXPECT_LE(during.pinned_bytes, during.peak_pinned_bytes);
	dev_counts(t->dev, &pins_now, &bytes_now);
	EXPECT_EQ(dev_pins + 1, pins_now);
	EXPECT_EQ(dev_bytes + bytes, bytes_now);

	do_dereg(mr);
	check_proc(getpid(), 0, 0);
	check_no_trace(getpid());
	read_stats(&after);
	check_stats_moved(&before, &after, 0, 0, 1, 1);
	dev_counts(t->dev, &pins_now, &bytes_now);
	EXPECT_EQ(dev_pins, pins_now);
	EXPECT_EQ(dev_bytes, bytes_now);
	munmap(buf, map_len);
}
#define check_one_mr(t, offset, length, bytes)				\
	__check_one_mr(_metadata, t, offset, length, bytes)

/* 1. MRs of every size, page-aligned. */
FIXTURE(mr_of_size) {
	struct mrpin_test t;
};

FIXTURE_VARIANT(mr_of_size) {
	size_t length;
	uint64_t bytes;
};

FIXTURE_VARIANT_ADD(mr_of_size, 1B) {
	.length = 1, .bytes = 4 * KiB,
};
FIXTURE_VARIANT_ADD(mr_of_size, 4KiB) {
	.length = 4 * KiB, .bytes = 4 * KiB,
};
FIXTURE_VARIANT_ADD(mr_of_size, 64KiB) {
	.length = 64 * KiB, .bytes = 64 * KiB,
};
FIXTURE_VARIANT_ADD(mr_of_size, 2MiB) {
	.length = 2 * MiB, .bytes = 2 * MiB,
};
FIXTURE_VARIANT_ADD(mr_of_size, 64MiB) {
	.length = 64 * MiB, .bytes = 64 * MiB,
};

FIXTURE_SETUP(mr_of_size)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(mr_of_size)
{
	test_teardown(&self->t);
}

TEST_F(mr_of_size, is_charged_the_pages_it_spans)
{
	check_one_mr(&self->t, 0, variant->length, variant->bytes);
}

/* 2. MRs whose start or end is not on a page boundary. */
FIXTURE(unaligned_mr) {
	struct mrpin_test t;
};

FIXTURE_VARIANT(unaligned_mr) {
	size_t offset;
	size_t length;
	uint64_t bytes;
};

FIXTURE_VARIANT_ADD(unaligned_mr, page_long_from_byte_100) {
	.offset = PAGE + 100, .length = 4 * KiB, .bytes = 8 * KiB,
};
FIXTURE_VARIANT_ADD(unaligned_mr, two_bytes_across_a_boundary) {
	.offset = PAGE - 1, .length = 2, .bytes = 8 * KiB,
};
FIXTURE_VARIANT_ADD(unaligned_mr, last_byte_of_a_page) {
	.offset = PAGE - 1, .length = 1, .bytes = 4 * KiB,
};
FIXTURE_VARIANT_ADD(unaligned_mr, inside_one_page) {
	.offset = 100, .length = 200, .bytes = 4 * KiB,
};
FIXTURE_VARIANT_ADD(unaligned_mr, ending_on_a_boundary) {
	.offset = 100, .length = PAGE - 100, .bytes = 4 * KiB,
};
FIXTURE_VARIANT_ADD(unaligned_mr, ending_one_byte_past_a_boundary) {
	.offset = 100, .length = PAGE - 99, .bytes = 8 * KiB,
};
FIXTURE_VARIANT_ADD(unaligned_mr, 64KiB_from_byte_100) {
	.offset = 100, .length = 64 * KiB, .bytes = 68 * KiB,
};

FIXTURE_SETUP(unaligned_mr)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(unaligned_mr)
{
	test_teardown(&self->t);
}

TEST_F(unaligned_mr, is_charged_every_page_it_touches)
{
	check_one_mr(&self->t, variant->offset, variant->length,
		     variant->bytes);
}

FIXTURE(accounting) {
	struct mrpin_test t;
};

FIXTURE_SETUP(accounting)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(accounting)
{
	test_teardown(&self->t);
}

/* 3. Each registration is a pin of its own, as VmPin counts it. */
TEST_F(accounting, same_buffer_registered_twice_is_counted_twice)
{
	struct mrpin_test *t = &self->t;
	struct mrpin_stats before, after;
	struct ibv_mr *mr[3];
	struct mr_range r[3];
	char *buf;

	buf = map_buf(4 * PAGE);
	r[0] = r[1] = mr_range(buf + 100, 3 * PAGE);	/* 4 pages */
	r[2] = mr_range(buf + PAGE, PAGE);		/* overlaps both */
	read_stats(&before);

	do_reg(t->f.pd, buf + 100, 3 * PAGE, &mr[0]);
	do_reg(t->f.pd, buf + 100, 3 * PAGE, &mr[1]);
	check_pins(getpid(), t->dev, r, 2);
	check_proc(getpid(), 2, 2 * 16 * KiB);

	do_reg(t->f.pd, buf + PAGE, PAGE, &mr[2]);
	check_pins(getpid(), t->dev, r, 3);
	check_proc(getpid(), 3, 2 * 16 * KiB + 4 * KiB);

	do_dereg(mr[0]);
	check_pins(getpid(), t->dev, &r[1], 2);
	check_proc(getpid(), 2, 16 * KiB + 4 * KiB);
	do_dereg(mr[2]);
	check_proc(getpid(), 1, 16 * KiB);
	do_dereg(mr[1]);
	check_proc(getpid(), 0, 0);

	read_stats(&after);
	EXPECT_EQ(before.pins_total + 3, after.pins_total);
	EXPECT_EQ(before.releases_total + 3, after.releases_total);
	munmap(buf, 4 * PAGE);
}

/*
 * 4. A re-registration to another buffer moves the charge with it.  rxe
 * supports none (EOPNOTSUPP): the test skips there before it checks
 * anything (a SKIP() would hide a failed check before it), and 4b checks
 * what a refused one leaves.
 */
TEST_F(accounting, rereg_to_another_buffer_moves_the_charge)
{
	struct mrpin_test *t = &self->t;
	struct mrpin_stats before, after;
	char *old_buf, *new_buf;
	struct mr_range new;
	struct ibv_mr *mr;
	int ret, err;

	old_buf = map_buf(64 * KiB);
	new_buf = map_buf(2 * MiB + PAGE);
	new = mr_range(new_buf + 100, 2 * MiB);		/* 513 pages */
	read_stats(&before);

	do_reg(t->f.pd, old_buf, 64 * KiB, &mr);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			   new_buf + 100, 2 * MiB, 0);
	err = errno;
	if (ret && err == EOPNOTSUPP) {
		do_dereg(mr);
		munmap(old_buf, 64 * KiB);
		munmap(new_buf, 2 * MiB + PAGE);
		SKIP(return, "%s does not support ibv_rereg_mr(IBV_REREG_MR_CHANGE_TRANSLATION): %s",
		     t->dev, strerror(err));
	}
	ASSERT_EQ(0, ret) {
		TH_LOG("ibv_rereg_mr: %d (%s)", ret, strerror(err));
	}
	check_pins(getpid(), t->dev, &new, 1);
	check_proc(getpid(), 1, 2 * MiB + 4 * KiB);
	read_stats(&after);
	EXPECT_EQ(before.pins_total + 2, after.pins_total);
	EXPECT_EQ(before.releases_total + 1, after.releases_total);

	do_dereg(mr);
	check_proc(getpid(), 0, 0);
	munmap(old_buf, 64 * KiB);
	munmap(new_buf, 2 * MiB + PAGE);
}

/*
 * 4b. A re-registration the device refuses (rxe: a new translation; any
 * device: a new range that is not mapped) leaves the pin and its charge as
 * they were, and the deregistration releases them once.
 */
TEST_F(accounting, refused_rereg_leaves_the_charge)
{
	struct mrpin_test *t = &self->t;
	struct mrpin_stats before, after;
	struct mr_range old;
	struct ibv_mr *mr;
	char *buf, *gone;
	int ret;

	buf = map_buf(64 * KiB);
	gone = map_buf(64 * KiB);
	munmap(gone, 64 * KiB);
	old = mr_range(buf, 64 * KiB);
	read_stats(&before);

	do_reg(t->f.pd, buf, 64 * KiB, &mr);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, gone,
			   64 * KiB, 0);
	ASSERT_NE(0, ret) {
		TH_LOG("a re-registration to an unmapped range succeeded");
	}
	check_pins(getpid(), t->dev, &old, 1);
	check_proc(getpid(), 1, 64 * KiB);
	do_dereg(mr);
	check_proc(getpid(), 0, 0);
	read_stats(&after);
	EXPECT_EQ(before.pins_total + 1, after.pins_total);
	EXPECT_EQ(before.releases_total + 1, after.releases_total);
	munmap(buf, 64 * KiB);
}

/*
 * ibv_rereg_mr() as the kernel has it: the uverbs command written to the
 * device file, past the provider (rdma-core's rxe provider has no
 * rereg_mr(), and libibverbs answers EOPNOTSUPP without asking the
 * kernel).  @flags are IBV_REREG_MR_CHANGE_*, the kernel's IB_MR_REREG_*.
 * 0, or -1 with errno.
 */
static int uverbs_rereg_mr(struct ibv_context *ctx, struct ibv_mr *mr,
			   uint32_t flags, struct ibv_pd *pd, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_REREG_MR;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.mr_handle = mr->handle;
	req.cmd.flags = flags;
	req.cmd.start = (uintptr_t)mr->addr;
	req.cmd.length = mr->length;
	req.cmd.hca_va = (uintptr_t)mr->addr;
	req.cmd.pd_handle = pd ? pd->handle : 0;
	req.cmd.access_flags = access;
	return write(ctx->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : -1;
}

/*
 * 4c. A re-registration to another PD, then to other access rights, keeps
 * the pages it had: the same pin, the same charge, no new pin, no release
 * until the deregistration.  The kernel's rxe does both
 * (rxe_rereg_user_mr(), 6.2 on); where it does not (6.1: EOPNOTSUPP), the
 * test skips, saying so, before it checks anything.
 */
TEST_F(accounting, rereg_of_pd_or_access_keeps_the_charge)
{
	struct mrpin_test *t = &self->t;
	struct mrpin_stats before, after;
	struct mr_range r;
	struct ibv_pd *pd2;
	struct ibv_mr *mr;
	int ret, err;
	char *buf;

	buf = map_buf(64 * KiB);
	r = mr_range(buf + 100, 32 * KiB);
	pd2 = ibv_alloc_pd(t->f.ctx);
	ASSERT_NE(NULL, pd2);
	read_stats(&before);

	do_reg(t->f.pd, buf + 100, 32 * KiB, &mr);
	ret = uverbs_rereg_mr(t->f.ctx, mr, IBV_REREG_MR_CHANGE_PD, pd2, 0);
	err = errno;
	if (ret && err == EOPNOTSUPP) {
		do_dereg(mr);
		ibv_dealloc_pd(pd2);
		munmap(buf, 64 * KiB);
		SKIP(return, "the kernel's %s does not re-register an MR (IB_MR_REREG_PD): %s",
		     t->dev, strerror(err));
	}
	ASSERT_EQ(0, ret) {
		TH_LOG("rereg (IB_MR_REREG_PD): %s", strerror(err));
	}
	check_pins(getpid(), t->dev, &r, 1);
	check_proc(getpid(), 1, 32 * KiB + 4 * KiB);
	ret = uverbs_rereg_mr(t->f.ctx, mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_WRITE);
	EXPECT_EQ(0, ret) {
		TH_LOG("rereg (IB_MR_REREG_ACCESS): %s", strerror(errno));
	}
	check_pins(getpid(), t->dev, &r, 1);
	check_proc(getpid(), 1, 32 * KiB + 4 * KiB);
	read_stats(&after);
	EXPECT_EQ(before.pins_total + 1, after.pins_total);
	EXPECT_EQ(before.releases_total, after.releases_total);

	do_dereg(mr);
	check_proc(getpid(), 0, 0);
	read_stats(&after);
	EXPECT_EQ(before.releases_total + 1, after.releases_total);
	ibv_dealloc_pd(pd2);
	munmap(buf, 64 * KiB);
}

/* 5. Threads registering and deregistering at once. */
#define REG_THREADS	4
#define REG_ROUNDS	200
#define REG_SLOTS	4
#define REG_SLOT_SIZE	(MiB + 2 * PAGE)

static const struct {
	size_t offset;
	size_t length;
} mixed_mrs[] = {
	{ 0, 1 }, { 100, 4 * KiB }, { PAGE - 1, 2 }, { 0, 64 * KiB },
	{ 200, 3 * PAGE + 100 }, { 1000, 256 * KiB }, { 0, MiB },
};

struct reg_thread {
	pthread_t thread;
	int index;
	struct ibv_pd *pd;
	pthread_barrier_t *halfway;
	char *buf;
	struct ibv_mr *mr[REG_SLOTS];
	int regs;
	int deregs;
	int err;
};

/*
 * REG_ROUNDS registrations, each in slot round % REG_SLOTS after the
 * deregistration of what the slot held; halfway through, the threads wait
 * twice on @halfway so that the main thread can look at a still moment.
 */
static void *reg_dereg_loop(void *arg)
{
	struct reg_thread *rt = arg;
	int i, slot, m;

	for (i = 0; i < REG_ROUNDS; i++) {
		slot = i % REG_SLOTS;
		m = (3 * i + rt->index) % ARRAY_SIZE(mixed_mrs);
		if (i == REG_ROUNDS / 2) {
			pthread_barrier_wait(rt->halfway);
			pthread_barrier_wait(rt->halfway);
		}
		if (rt->mr[slot]) {
			if (_do_dereg(rt->mr[slot]))
				rt->err = rt->err ?: errno;
			else
				rt->deregs++;
			rt->mr[slot] = NULL;
		}
		if (_do_reg(rt->pd, rt->buf + slot * REG_SLOT_SIZE +
			    mixed_mrs[m].offset, mixed_mrs[m].length,
			    &rt->mr[slot]))
			rt->err = rt->err ?: errno;
		else
			rt->regs++;
	}
	for (slot = 0; slot < REG_SLOTS; slot++) {
		if (!rt->mr[slot])
			continue;
		if (_do_dereg(rt->mr[slot]))
			rt->err = rt->err ?: errno;
		else
			rt->deregs++;
	}
	return NULL;
}

/* A few seconds in the VM; room for a slow, shared host. */
TEST_F_TIMEOUT(accounting,
	       concurrent_threads_leave_the_totals_as_they_found_them, 120)
{
	struct mr_range live[REG_THREADS * REG_SLOTS];
	struct reg_thread rt[REG_THREADS] = { };
	struct mrpin_test *t = &self->t;
	struct mrpin_stats before, after;
	pthread_barrier_t halfway;
	int i, slot, nlive = 0, regs = 0, deregs = 0;
	uint64_t live_bytes;

	ASSERT_EQ(0, pthread_barrier_init(&halfway, NULL, REG_THREADS + 1));
	for (i = 0; i < REG_THREADS; i++) {
		rt[i].index = i;
		rt[i].pd = t->f.pd;
		rt[i].halfway = &halfway;
		rt[i].buf = map_buf(REG_SLOTS * REG_SLOT_SIZE);
	}
	read_stats(&before);
	for (i = 0; i < REG_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&rt[i].thread, NULL,
					    reg_dereg_loop, &rt[i]));

	/* Halfway: every thread holds its slots and waits. */
	pthread_barrier_wait(&halfway);
	for (i = 0; i < REG_THREADS; i++)
		for (slot = 0; slot < REG_SLOTS; slot++)
			if (rt[i].mr[slot])
				live[nlive++] = mr_range(rt[i].mr[slot]->addr,
							 rt[i].mr[slot]->length);
	live_bytes = range_bytes(live, nlive);
	EXPECT_EQ(REG_THREADS * REG_SLOTS, nlive);
	check_pins(getpid(), t->dev, live, nlive);
	check_proc(getpid(), nlive, live_bytes);
	pthread_barrier_wait(&halfway);

	for (i = 0; i < REG_THREADS; i++) {
		ASSERT_EQ(0, pthread_join(rt[i].thread, NULL));
		EXPECT_EQ(0, rt[i].err) {
			TH_LOG("thread %d: %s", i, strerror(rt[i].err));
		}
		regs += rt[i].regs;
		deregs += rt[i].deregs;
		munmap(rt[i].buf, REG_SLOTS * REG_SLOT_SIZE);
	}
	pthread_barrier_destroy(&halfway);
	EXPECT_EQ(REG_THREADS * REG_ROUNDS, regs);
	EXPECT_EQ(regs, deregs);

	check_proc(getpid(), 0, 0);
	check_no_trace(getpid());
	read_stats(&after);
	check_stats_moved(&before, &after, 0, 0, regs, deregs);
	EXPECT_LE(before.pinned_bytes + live_bytes, after.peak_pinned_bytes);
}

/*
 * 6. A child killed while it holds MRs: they are released at its exit, by
 * the kernel, and uncharged from the child's own record.  This process
 * holds an MR throughout, which must not be touched.
 */
TEST_F(accounting, sigkilled_child_is_uncharged_at_its_exit)
{
	struct mrpin_test *t = &self->t;
	struct pinner *p = &t->pinners[0];
	struct mrpin_stats before, after;
	uint64_t child_bytes;
	struct mr_range own;
	struct ibv_mr *mr;
	int status, nmrs;
	pid_t pid;
	char *buf;

	buf = map_buf(2 * PAGE);
	own = mr_range(buf + 10, PAGE);
	do_reg(t->f.pd, buf + 10, PAGE, &mr);

	pinner_start(p, "--hold", "4K", "64K@100", "1M", "1@4095");
	pid = p->c.pid;
	nmrs = p->nmrs;
	ASSERT_EQ(4, nmrs);
	child_bytes = range_bytes(p->mrs, nmrs);
	check_pins(pid, t->dev, p->mrs, nmrs);
	check_proc(pid, nmrs, child_bytes);
	check_proc(getpid(), 1, 8 * KiB);
	read_stats(&before);

	status = child_finish(&p->c, SIGKILL);
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
		TH_LOG("mrpin_pinner: wait status %#x", status);
	}

	check_no_trace(pid);
	check_pins(getpid(), t->dev, &own, 1);
	check_proc(getpid(), 1, 8 * KiB);
	read_stats(&after);
	check_stats_moved(&before, &after, -(int64_t)nmrs,
			  -(int64_t)child_bytes, 0, nmrs);

	do_dereg(mr);
	munmap(buf, 2 * PAGE);
}

/* 7. A child that exits normally with its MRs still registered. */
TEST_F(accounting, child_exiting_with_live_mrs_is_uncharged)
{
	struct mrpin_test *t = &self->t;
	struct pinner *p = &t->pinners[0];
	struct mrpin_stats before, after;
	uint64_t child_bytes;
	int status, nmrs;
	pid_t pid;

	pinner_start(p, "--no-dereg", "8K@4000", "2M", "1");
	pid = p->c.pid;
	nmrs = p->nmrs;
	ASSERT_EQ(3, nmrs);
	child_bytes = range_bytes(p->mrs, nmrs);
	check_pins(pid, t->dev, p->mrs, nmrs);
	check_proc(pid, nmrs, child_bytes);
	read_stats(&before);

	status = child_finish(&p->c, 0);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("mrpin_pinner: wait status %#x", status);
	}

	check_no_trace(pid);
	check_proc(getpid(), 0, 0);
	read_stats(&after);
	check_stats_moved(&before, &after, -(int64_t)nmrs,
			  -(int64_t)child_bytes, 0, nmrs);
}

/*
 * 8. Processes pinning at once are accounted apart, each against its own
 * VmPin; the one whose threads register is one line, under its tgid.
 */
TEST_F(accounting, processes_pinning_at_once_are_accounted_apart)
{
	struct mrpin_test *t = &self->t;
	struct pinner *a = &t->pinners[0], *b = &t->pinners[1];
	uint64_t a_bytes, b_bytes;
	struct mrpin_stats before, during;
	struct mr_range own;
	struct ibv_mr *mr;
	pid_t a_pid, b_pid;
	int status;
	char *buf;

	read_stats(&before);
	buf = map_buf(64 * KiB);
	own = mr_range(buf, 64 * KiB);
	do_reg(t->f.pd, buf, 64 * KiB, &mr);
	pinner_start(a, "16K", "1M@4095");
	pinner_start(b, "--threads", "3", "4K", "64K@1", "2M", "1@4095",
		     "12K@100");
	a_pid = a->c.pid;
	b_pid = b->c.pid;
	ASSERT_EQ(2, a->nmrs);
	ASSERT_EQ(5, b->nmrs);
	a_bytes = range_bytes(a->mrs, a->nmrs);
	b_bytes = range_bytes(b->mrs, b->nmrs);

	check_pins(a_pid, t->dev, a->mrs, a->nmrs);
	check_pins(b_pid, t->dev, b->mrs, b->nmrs);
	check_pins(getpid(), t->dev, &own, 1);
	check_proc(a_pid, 2, a_bytes);
	check_proc(b_pid, 5, b_bytes);
	check_proc(getpid(), 1, 64 * KiB);
	read_stats(&during);
	EXPECT_EQ(before.pins + 8, during.pins);
	EXPECT_EQ(before.pinned_bytes + a_bytes + b_bytes + 64 * KiB,
		  during.pinned_bytes);

	status = child_finish(&b->c, 0);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	check_no_trace(b_pid);
	check_proc(a_pid, 2, a_bytes);
	check_proc(getpid(), 1, 64 * KiB);

	status = child_finish(&a->c, 0);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	check_no_trace(a_pid);
	check_proc(getpid(), 1, 64 * KiB);

	do_dereg(mr);
	check_proc(getpid(), 0, 0);
	munmap(buf, 64 * KiB);
}

/*
 * A registration that fails (in part or whole) leaves no charge and no
 * record behind, only its failure, counted and explained; the next one is
 * accounted as usual.
 */
TEST_F(accounting, failed_registrations_leave_nothing_charged)
{
	static const char *const why[] = { "unmapped", "unmapped", "readonly" };
	const uint64_t asked[] = { 3 * PAGE, PAGE, PAGE };
	struct mrpin_test *t = &self->t;
	struct mrpin_stats before, after;
	struct mrpin_event ev[4];
	struct ibv_mr *mr;
	uint64_t from;
	char *buf, *ro;
	int i, n;

	/* The read-only page first: mmap() could put it in the hole. */
	ro = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	buf = map_buf(3 * PAGE);
	ASSERT_EQ(0, munmap(buf + 2 * PAGE, PAGE));
	read_stats(&before);
	from = next_seq();

	/* Two pages pinned, the third one missing: all rolled back. */
	do_reg_err(EFAULT, t->f.pd, buf, 3 * PAGE);
	do_reg_err(EFAULT, t->f.pd, buf + 2 * PAGE + 100, 1);
	/* Writable access to a read-only mapping. */
	do_reg_err(EFAULT, t->f.pd, ro, PAGE);
	check_proc(getpid(), 0, 0);
	check_no_trace(getpid());
	read_stats(&after);
	check_stats_moved(&before, &after, 0, 0, 0, 0);
	EXPECT_EQ(before.denials_total, after.denials_total);
	EXPECT_EQ(before.failures_total + 3, after.failures_total);
	EXPECT_EQ(before.failures_unmapped_total + 2,
		  after.failures_unmapped_total);
	EXPECT_EQ(before.failures_readonly_total + 1,
		  after.failures_readonly_total);
	n = events_since(from, getpid(), NULL, ev, 4);
	ASSERT_EQ(3, n);
	for (i = 0; i < n; i++) {
		check_event(&ev[i], "fail", getpid(), getuid(), "process",
			    why[i], asked[i], MRPIN_ANY, mrpin_memlock_bytes());
		EXPECT_EQ((uint64_t)EFAULT, ev[i].err);
	}

	do_reg(t->f.pd, buf + 1, 2 * PAGE - 1, &mr);
	check_proc(getpid(), 1, 8 * KiB);
	do_dereg(mr);
	check_proc(getpid(), 0, 0);
	munmap(buf, 2 * PAGE);
	munmap(ro, PAGE);
}

/*
 * A registration of 0 bytes at an address inside a page pins that page
 * (ib_umem_get() counts the pages a range spans): a pin like any other,
 * counted and charged as VmPin counts it (mrpin_limits: and bound by the
 * limits).  At a page boundary it spans none, and the kernel refuses it
 * before pinning anything.
 */
TEST_F(accounting, zero_length_mr_inside_a_page_is_a_pin_of_that_page)
{
	struct mrpin_test *t = &self->t;
	struct mrpin_stats before, after;
	struct ibv_mr *mr[2];
	char *buf;

	buf = map_buf(2 * PAGE);
	read_stats(&before);
	do_reg_err(EINVAL, t->f.pd, buf + PAGE, 0);
	check_proc(getpid(), 0, 0);

	do_reg(t->f.pd, buf + 1, 0, &mr[0]);
	check_proc(getpid(), 1, PAGE);
	do_reg(t->f.pd, buf + 2 * PAGE - 1, 0, &mr[1]);
	check_proc(getpid(), 2, 2 * PAGE);
	read_stats(&after);
	check_stats_moved(&before, &after, 2, 2 * PAGE, 2, 0);

	do_dereg(mr[0]);
	do_dereg(mr[1]);
	check_proc(getpid(), 0, 0);
	read_stats(&after);
	check_stats_moved(&before, &after, 0, 0, 2, 2);
	munmap(buf, 2 * PAGE);
}

MRPIN_TEST_MAIN(NULL, NULL)
