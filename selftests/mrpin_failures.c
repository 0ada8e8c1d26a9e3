// SPDX-License-Identifier: GPL-2.0
/*
 * Registrations the kernel refuses, with the reason mrpin gives for each,
 * made for real on the RDMA device under test (rxe0 unless
 * $MRPIN_TEST_DEV says otherwise): RLIMIT_MEMLOCK of 0 without
 * CAP_IPC_LOCK (EPERM), a mapping of I/O memory (from /dev/mem), a page
 * past the end of its file, an empty range.  mrpin_limits.c checks
 * the RLIMIT_MEMLOCK refusal with a limit (ENOMEM) and mrpin_accounting.c
 * the holes and read-only mappings.
 *
 * Each failure is an `events` line (action fail, scope process, the cause
 * as its key, the process's VmPin and RLIMIT_MEMLOCK as usage and limit,
 * the errno), a count by cause in `stats`, the mrpin:mrpin_fail
 * tracepoint, and a kernel log line only with the global rule's
 * log_failures=on.  A pin mrpin refuses itself is a denial, never also a
 * failure.
 */
#include "mrpin_limits.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/mman.h>

FIXTURE(failure) {
	struct limits_test t;
};

FIXTURE_SETUP(failure)
{
	test_setup(&self->t);
	self->t.f.quiet = true;
}

FIXTURE_TEARDOWN(failure)
{
	test_teardown(&self->t);
}

/* This process's VmPin, in bytes. */
static uint64_t vm_pinned_bytes(void)
{
	uint64_t kib = 0;

	mrpin_proc_field("/proc/self/status", "VmPin", false, &kib);
	return kib * 1024;
}

/*
 * The only event since @from is process @pid's failure, for @cause, of
 * @asked bytes with @err; with @usage (MRPIN_ANY: any) and @limit.
 */
static void __check_failure(struct __test_metadata *_metadata, uint64_t from,
			    pid_t pid, uint64_t uid, const char *cause,
			    uint64_t asked, uint64_t usage, uint64_t limit,
			    int err)
{
	struct mrpin_event ev[2];

	ASSERT_EQ(1, events_since(from, 0, NULL, ev, 2));
	check_event(&ev[0], "fail", pid, uid, "process", cause, asked, usage,
		    limit);
	EXPECT_EQ((uint64_t)err, ev[0].err);
}
#define check_failure(from, pid, uid, cause, asked, usage, limit, err)	\
	__check_failure(_metadata, from, pid, uid, cause, asked, usage,	\
			limit, err)

/* The per-cause counters of `stats`. */
static const struct {
	const char *cause;
	size_t offset;
} fail_counters[] = {
#define FAIL_COUNTER(name)						\
	{ #name, offsetof(struct mrpin_stats, failures_##name##_total) }
	FAIL_COUNTER(memlock), FAIL_COUNTER(unmapped), FAIL_COUNTER(readonly),
	FAIL_COUNTER(iomem), FAIL_COUNTER(fault), FAIL_COUNTER(invalid),
	FAIL_COUNTER(nomem), FAIL_COUNTER(other), FAIL_COUNTER(device),
#undef FAIL_COUNTER
};

static uint64_t fail_counter(const struct mrpin_stats *s, int i)
{
	return *(const uint64_t *)((const char *)s + fail_counters[i].offset);
}

/* `stats` counted one failure, for @cause, from @before. */
static void __check_counted(struct __test_metadata *_metadata,
			    const struct mrpin_stats *before,
			    const char *cause)
{
	struct mrpin_stats after;
	int i;

	read_stats(&after);
	EXPECT_EQ(before->failures_total + 1, after.failures_total);
	EXPECT_EQ(before->denials_total, after.denials_total);
	for (i = 0; i < (int)MRPIN_ARRAY_SIZE(fail_counters); i++) {
		EXPECT_EQ(fail_counter(before, i) +
			  !strcmp(fail_counters[i].cause, cause),
			  fail_counter(&after, i)) {
			TH_LOG("failures_%s_total", fail_counters[i].cause);
		}
	}
}
#define check_counted(before, cause) __check_counted(_metadata, before, cause)

/*
 * A page of I/O memory mapped from /dev/mem (VM_IO | VM_PFNMAP): the
 * legacy VGA window at 0xa0000, which is no RAM and which /dev/mem maps on
 * every kernel (STRICT_DEVMEM lets the low 1 MiB through); or NULL, with
 * why in @why.
 */
#define IO_PAGE_PHYS	0xa0000

static void *map_io_page(char *why, size_t len)
{
	void *page;
	int fd;

	fd = open("/dev/mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "/dev/mem: %s", strerror(errno));
		return NULL;
	}
	page = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, IO_PAGE_PHYS);
	close(fd);
	if (page == MAP_FAILED) {
		snprintf(why, len, "mmap of /dev/mem at %#x: %s", IO_PAGE_PHYS,
			 strerror(errno));
		return NULL;
	}
	return page;
}

/*
 * 1. RLIMIT_MEMLOCK of 0 and no CAP_IPC_LOCK: the kernel refuses any pin
 * with EPERM, told as memlock with the limit 0.
 */
TEST_F(failure, memlock_of_zero_is_named)
{
	struct helper *h = &self->t.h[0];
	struct mrpin_stats before;
	uint64_t from;

	helper_start(h, USER_UID, NULL, 0);
	read_stats(&before);
	from = next_seq();
	h_reg_err(EPERM, h, PAGE, 0);
	check_failure(from, h->pid, USER_UID, "memlock", PAGE, 0, 0, EPERM);
	check_counted(&before, "memlock");
}

/*
 * 2. A mapping of I/O memory (VM_IO | VM_PFNMAP), which the kernel never
 * pins: iomem.
 */
TEST_F(failure, io_mapping_is_named)
{
	struct mrpin_stats before;
	uint64_t from, vm_pinned;
	char why[128];
	void *io = map_io_page(why, sizeof(why));

	if (!io)
		SKIP(return, "%s", why);
	vm_pinned = vm_pinned_bytes();
	read_stats(&before);
	from = next_seq();
	do_reg_err(EFAULT, self->t.f.pd, io, PAGE);
	check_failure(from, getpid(), 0, "iomem", PAGE, vm_pinned,
		      mrpin_memlock_bytes(), EFAULT);
	check_counted(&before, "iomem");
	munmap(io, PAGE);
}

/*
 * 3. A shared mapping two pages long of a one-page file: the second page
 * cannot be faulted in (SIGBUS), though it is mapped and writable: fault.
 */
TEST_F(failure, page_past_the_end_of_its_file_is_named)
{
	struct mrpin_stats before;
	uint64_t from, vm_pinned;
	char *buf;
	int fd;

	fd = memfd_create("mrpin_failures", MFD_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, PAGE));
	buf = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, buf);
	buf[0] = 1;
	vm_pinned = vm_pinned_bytes();
	read_stats(&before);
	from = next_seq();
	do_reg_err(EFAULT, self->t.f.pd, buf, 2 * PAGE);
	check_failure(from, getpid(), 0, "fault", 2 * PAGE, vm_pinned,
		      mrpin_memlock_bytes(), EFAULT);
	check_counted(&before, "fault");
	munmap(buf, 2 * PAGE);
	close(fd);
}

/*
 * 4. An empty range, which mrpin does not track (it pins nothing): the
 * kernel's EINVAL is still told, as invalid, for 0 bytes.
 */
TEST_F(failure, empty_range_is_named)
{
	struct mrpin_stats before;
	uint64_t from, vm_pinned;
	char *buf = map_buf(PAGE);

	vm_pinned = vm_pinned_bytes();
	read_stats(&before);
	from = next_seq();
	do_reg_err(EINVAL, self->t.f.pd, buf, 0);
	check_failure(from, getpid(), 0, "invalid", 0, vm_pinned,
		      mrpin_memlock_bytes(), EINVAL);
	check_counted(&before, "invalid");
	munmap(buf, PAGE);
}

/*
 * 5. A failure is logged only with log_failures=on, one line that says
 * why; by default the kernel log stays quiet (the fixture checks it).
 */
TEST_F(failure, failures_are_logged_only_when_asked)
{
	char line[256], comm[64], why[128];
	uint64_t vm_pinned;
	void *io = map_io_page(why, sizeof(why));
	int kfd;

	if (!io)
		SKIP(return, "%s", why);
	kfd = mrpin_kmsg_open();
	ASSERT_LE(0, kfd);
	do_reg_err(EFAULT, self->t.f.pd, io, PAGE);
	check_log_clean(kfd, true);

	set_limits("global log_failures=on\n");
	mrpin_log_room(mrpin_budget);
	vm_pinned = vm_pinned_bytes();
	do_reg_err(EFAULT, self->t.f.pd, io, PAGE);
	mrpin_note_logged(mrpin_budget, 1);
	ASSERT_EQ(0, mrpin_comm(getpid(), comm, sizeof(comm)));
	/* The fixture lifted RLIMIT_MEMLOCK. */
	snprintf(line, sizeof(line),
		 "mrpin: pid %d (%s) uid 0: the kernel refused %llu bytes (errno %d): iomem; VmPin %llu, RLIMIT_MEMLOCK unlimited",
		 getpid(), comm, (unsigned long long)PAGE, EFAULT,
		 (unsigned long long)vm_pinned);
	check_log_has(kfd, line, NULL);
	close(kfd);
	self->t.f.quiet = false;
	munmap(io, PAGE);
}

/* 6. A pin mrpin refuses never reaches the kernel: a denial, no failure. */
TEST_F(failure, refusal_by_mrpin_is_not_a_failure)
{
	struct mrpin_stats before, after;
	struct mrpin_event ev[2];
	uint64_t from;
	char *buf = map_buf(2 * PAGE);

	set_limits("process max_pin_size=4K\n");
	read_stats(&before);
	from = next_seq();
	self_reg_err(self->t.f.pd, buf, 2 * PAGE);
	read_stats(&after);
	EXPECT_EQ(before.failures_total, after.failures_total);
	EXPECT_EQ(before.denials_total + 1, after.denials_total);
	ASSERT_EQ(1, events_since(from, 0, NULL, ev, 2));
	check_event(&ev[0], "deny", getpid(), 0, "process", "max_pin_size",
		    2 * PAGE, 2 * PAGE, 4 * KiB);
	self->t.f.quiet = false;
	munmap(buf, 2 * PAGE);
}

/*
 * 6b. Over its RLIMIT_MEMLOCK, a process with CAP_IPC_LOCK (root) is not
 * refused for it; when the pages then cannot be had, the failure is nomem,
 * never memlock.  A child of the test's, in a memory cgroup of 16 MiB
 * with no swap, unkillable by the OOM killer (oom_score_adj -1000), with
 * RLIMIT_MEMLOCK of 64 KiB, registers 64 MiB it never touched: its memory
 * cgroup cannot hold the pages the pin faults in, and ibv_reg_mr() fails
 * with ENOMEM.  (Without CAP_IPC_LOCK, mrpin_limits checks memlock.)
 */
#define NOMEM_CG	CG_TOP "/nomem"
#define NOMEM_BYTES	(64 * MiB)

/* The child: 0, or the errno of the step that failed before the pin. */
static int nomem_child(const char *dev)
{
	struct rlimit rl = { 64 * KiB, 64 * KiB };
	struct ibv_context *ctx;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	char pid[16];
	void *buf;

	/* The OOM report names the task: not "mrpin...". */
	prctl(PR_SET_NAME, "nomem-child");
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (mrpin_write_file(MRPIN_CG_MNT NOMEM_CG "/cgroup.procs", pid) ||
	    mrpin_write_file("/proc/self/oom_score_adj", "-1000") ||
	    setrlimit(RLIMIT_MEMLOCK, &rl))
		return errno ?: EIO;
	ctx = mrpin_open_dev(dev);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd)
		return errno ?: ENODEV;
	buf = mmap(NULL, NOMEM_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return errno;
	mr = ibv_reg_mr(pd, buf, NOMEM_BYTES, IBV_ACCESS_LOCAL_WRITE);
	if (mr)
		return EEXIST;	/* registered: nothing to explain */
	return errno == ENOMEM ? 0 : errno;
}

TEST_F(failure, nomem_with_cap_ipc_lock_over_memlock_is_not_memlock)
{
	struct limits_test *t = &self->t;
	struct mrpin_stats before;
	uint64_t from;
	int status;
	pid_t pid;

	need_cgroup2();
	mkcg(t, CG_TOP);
	mkcg(t, NOMEM_CG);
	ASSERT_EQ(0, mrpin_write_file(MRPIN_CG_MNT "/cgroup.subtree_control",
				      "+memory"));
	ASSERT_EQ(0, mrpin_write_file(MRPIN_CG_MNT CG_TOP "/cgroup.subtree_control",
				      "+memory"));
	ASSERT_EQ(0, mrpin_write_file(MRPIN_CG_MNT NOMEM_CG "/memory.max",
				      "16M"));
	/* No swap in the test VM; where there is, none for this cgroup. */
	mrpin_write_file(MRPIN_CG_MNT NOMEM_CG "/memory.swap.max", "0");
	read_stats(&before);
	from = next_seq();
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(nomem_child(mrpin_dev_name()));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("the child ended by signal %d", WTERMSIG(status));
	}
	ASSERT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("the child: %s", strerror(WEXITSTATUS(status)));
	}
	check_failure(from, pid, 0, "nomem", NOMEM_BYTES, MRPIN_ANY, 64 * KiB,
		      ENOMEM);
	check_counted(&before, "nomem");
}

/* 7. A failure fires mrpin:mrpin_fail with its cause and errno. */
TEST_F(failure, failure_fires_the_mrpin_fail_tracepoint)
{
	char pat[48], why[128];
	int mine;
	void *io;

	if (access(TRACING "/events", F_OK))
		SKIP(return, "tracefs is not mounted at %s", TRACING);
	io = map_io_page(why, sizeof(why));
	if (!io)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, access(TRACING "/events/mrpin/mrpin_fail", F_OK));
	self->t.tracing = true;
	ASSERT_EQ(0, mrpin_write_file(TRACING "/trace", ""));
	ASSERT_EQ(0, mrpin_write_file(TRACING "/events/mrpin/mrpin_fail/enable",
				      "1"));
	do_reg_err(EFAULT, self->t.f.pd, io, PAGE);
	ASSERT_EQ(0, mrpin_write_file(TRACING "/events/mrpin/mrpin_fail/enable",
				      "0"));

	snprintf(pat, sizeof(pat), "pid=%d cause=iomem errno=%d ", getpid(),
		 EFAULT);
	EXPECT_EQ(1, trace_lines("mrpin_fail", pat, &mine));
	EXPECT_EQ(1, mine);
	munmap(io, PAGE);
}

MRPIN_TEST_MAIN(MRPIN_LIMITS_FILE, "no policy in this mrpin")
