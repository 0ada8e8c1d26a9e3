// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's policy, checked with real registrations on the RDMA device under
 * test (rxe0 unless $MRPIN_TEST_DEV says otherwise): a rule written to
 * /sys/kernel/security/mrpin/limits refuses (action=enforce) or lets through
 * with a warning (action=warn) the pin that would cross it, and allows the
 * one that fits; every refusal or warning says why in `events`, in the
 * kernel log, in `procs` (denials) and `stats`, and through the mrpin_deny
 * tracepoint.  Concurrent registrations never overshoot a limit.
 *
 * The pins are made by helper processes that each test forks and drives
 * over a socket: a helper can start in a cgroup, drop to another uid (root
 * sets its RLIMIT_MEMLOCK first), be moved to another cgroup, and race with
 * threads.  Every test starts from the default policy and restores it
 * (`reset`), and leaves no pin and no kernel warning behind.
 *
 * The kernel log lines mrpin prints for refusals and warnings are
 * rate-limited: the tests that look for one space their logged events out
 * (mrpin_log_room()).
 */
/* The 6.1 harness has an unused parameter: keep -Wextra quiet about it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/magic.h>

#include "mrpin_test.h"

#define KiB		1024ULL
#define MiB		(1024 * KiB)
#define PAGE		4096ULL

#define LIMITS_FILE	MRPIN_LIMITS_FILE
#define EVENTS_FILE	MRPIN_DEBUGFS "/events"
#define EVENTS_HEADER	"# seq time_ns action pid comm uid scope key asked usage limit"
#define EVENTS_RING	1024
#define TRACING		"/sys/kernel/tracing"
#define CG_MNT		"/sys/fs/cgroup"
#define CG_TOP		"/mrpin_t"
#define USER_UID	1000
#define OTHER_UID	1001
/* A value the contract leaves open: not checked. */
#define ANY		UINT64_MAX

/* When this program made mrpin log (MAP_SHARED by the tests). */
static struct mrpin_log_budget *shared;

/* The policy file. */

/* Write the policy text; 0 or an errno. */
static int __attribute__((format(printf, 1, 2)))
limits_writef(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return E2BIG;
	return mrpin_limits_write(buf, n);
}

/* Write the policy text; assert that the write succeeds. */
static void __attribute__((format(printf, 2, 3)))
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

#define read_stats(s) ASSERT_EQ(0, mrpin_read_stats(s))

/* The kernel log, through /dev/kmsg. */

/*
 * Whether @log has a line equal to @line, or, with @suffix, a line that
 * starts with @line and ends with @suffix.
 */
static bool log_has_line(const char *log, const char *line,
			 const char *suffix)
{
	size_t llen = strlen(line), slen = suffix ? strlen(suffix) : 0, len;
	const char *pos = log, *end;

	while (*pos) {
		end = strchr(pos, '\n');
		len = end ? (size_t)(end - pos) : strlen(pos);
		if (!suffix && len == llen && !memcmp(pos, line, llen))
			return true;
		if (suffix && len >= llen + slen && !memcmp(pos, line, llen) &&
		    !memcmp(pos + len - slen, suffix, slen))
			return true;
		if (!end)
			break;
		pos = end + 1;
	}
	return false;
}

/* The events file. */

struct events {
	struct mrpin_event *ev;
	int n;
	uint64_t lost;		/* the sum of the "# lost N" lines */
	int lost_before;	/* the index of the event after the first one */
};

/*
 * Parse @text (events lines, with the header first if @header): 0 or
 * -EPROTO.  A line that is not complete is malformed.
 */
static int events_parse(char *text, bool header, struct events *e)
{
	struct mrpin_event *tmp;
	char *line = text, *next;
	uint64_t lost;

	memset(e, 0, sizeof(*e));
	e->lost_before = -1;
	if (header) {
		next = strchr(line, '\n');
		if (!next || (size_t)(next - line) != strlen(EVENTS_HEADER) ||
		    strncmp(line, EVENTS_HEADER, next - line))
			return -EPROTO;
		line = next + 1;
	}
	while (*line) {
		next = strchr(line, '\n');
		if (!next)
			return -EPROTO;
		*next = '\0';
		if (!strncmp(line, "# lost ", 7)) {
			if (mrpin_parse_u64(line + 7, &lost))
				return -EPROTO;
			if (e->lost_before < 0)
				e->lost_before = e->n;
			e->lost += lost;
		} else {
			tmp = realloc(e->ev, (e->n + 1) * sizeof(*tmp));
			if (!tmp)
				return -ENOMEM;
			e->ev = tmp;
			if (mrpin_parse_event(line, &e->ev[e->n]))
				return -EPROTO;
			e->n++;
		}
		line = next + 1;
	}
	return 0;
}

/* Every event the file holds now, from a new open. */
static void __read_events(struct __test_metadata *_metadata, struct events *e)
{
	char *text;
	int fd, ret;

	memset(e, 0, sizeof(*e));
	fd = open(EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd) {
		TH_LOG("%s: %s", EVENTS_FILE, strerror(errno));
	}
	ret = mrpin_read_available(fd, &text, NULL);
	close(fd);
	ASSERT_EQ(0, ret) {
		TH_LOG("reading %s: %s", EVENTS_FILE, strerror(-ret));
	}
	ret = events_parse(text, true, e);
	free(text);
	ASSERT_EQ(0, ret) {
		TH_LOG("%s does not start with \"%s\" or has a malformed line",
		       EVENTS_FILE, EVENTS_HEADER);
	}
}
#define read_events(e) __read_events(_metadata, e)

/*
 * The seq the next event will have at the earliest: the newest one's + 1,
 * or 0 when there is none (the first event may be numbered 0).
 */
static uint64_t __next_seq(struct __test_metadata *_metadata)
{
	struct events e;
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
 * The events numbered @from or later (of process @pid if > 0): their
 * number, and the first of them in *@first.
 */
static int events_since(const struct events *e, uint64_t from, pid_t pid,
			const struct mrpin_event **first)
{
	int i, n = 0;

	*first = NULL;
	for (i = 0; i < e->n; i++) {
		if (e->ev[i].seq < from || (pid > 0 && e->ev[i].pid != pid))
			continue;
		if (!n++)
			*first = &e->ev[i];
	}
	return n;
}

static void __check_event(struct __test_metadata *_metadata,
			  const struct mrpin_event *ev, const char *action,
			  pid_t pid, uint64_t uid, const char *scope,
			  const char *key, uint64_t asked, uint64_t usage,
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
	if (usage != ANY)
		EXPECT_EQ(usage, ev->usage);
	EXPECT_EQ(limit, ev->limit);
	EXPECT_NE(0ULL, (unsigned long long)ev->time_ns);
}
#define check_event(ev, action, pid, uid, scope, key, asked, usage, limit) \
	__check_event(_metadata, ev, action, pid, uid, scope, key, asked,   \
		      usage, limit)

/*
 * The kernel log (new lines of @kfd) says why process @pid was refused
 * (or warned): "mrpin: pid <pid> (<comm>) uid <uid>: refused <asked>
 * bytes: <scope> <key> in use <usage>, limit <limit>".
 */
static void __check_log(struct __test_metadata *_metadata, int kfd, bool warn,
			pid_t pid, uint64_t uid, const char *scope,
			const char *key, uint64_t asked, uint64_t usage,
			uint64_t limit)
{
	char comm[64], line[1024], suffix[64];
	bool found;
	char *log;

	ASSERT_EQ(0, mrpin_comm(pid, comm, sizeof(comm)));
	snprintf(line, sizeof(line),
		 "mrpin: pid %d (%s) uid %llu: %s %llu bytes: %s %s in use ",
		 pid, comm, (unsigned long long)uid,
		 warn ? "over limit, allowed (warn)" : "refused",
		 (unsigned long long)asked, scope, key);
	snprintf(suffix, sizeof(suffix), ", limit %llu",
		 (unsigned long long)limit);
	if (usage != ANY)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 "%llu%s", (unsigned long long)usage, suffix);
	log = mrpin_kmsg_read(kfd);
	ASSERT_NE(NULL, log);
	found = log_has_line(log, line, usage == ANY ? suffix : NULL);
	EXPECT_TRUE(found);
	if (!found) {
		ksft_print_msg("expected in the kernel log: %s%s\n", line,
			       usage == ANY ? "<usage>, limit ..." : "");
		mrpin_log_show(log);
	}
	free(log);
}
#define check_log(kfd, warn, pid, uid, scope, key, asked, usage, limit)  \
	__check_log(_metadata, kfd, warn, pid, uid, scope, key, asked,	 \
		    usage, limit)

/*
 * Process @pid, which pins only through RDMA, holds @pins pins of @bytes
 * and was refused @denials pins while it held some: its `procs` line and
 * its VmPin say so.
 */
static void __check_holder(struct __test_metadata *_metadata, pid_t pid,
			   uint64_t pins, uint64_t bytes, uint64_t denials)
{
	const struct mrpin_proc_row *p;
	struct mrpin_proc_row *procs;
	uint64_t vmpin;
	int n;

	n = mrpin_read_procs(&procs);
	ASSERT_LE(0, n);
	p = mrpin_find_proc(procs, n, pid);
	ASSERT_NE(NULL, p) {
		TH_LOG("pid %d has no line in procs", pid);
	}
	EXPECT_EQ(pins, p->pins);
	EXPECT_EQ(bytes, p->pinned_bytes);
	EXPECT_EQ(denials, p->denials);
	free(procs);
	ASSERT_EQ(0, mrpin_vmpin(pid, &vmpin));
	EXPECT_EQ(bytes, vmpin);
}
#define check_holder(pid, pins, bytes, denials)				\
	__check_holder(_metadata, pid, pins, bytes, denials)

/* cgroup v2. */

static bool cgroup2_mounted(void)
{
	struct statfs s;

	return !statfs(CG_MNT, &s) && s.f_type == CGROUP2_SUPER_MAGIC;
}

static int cg_write_procs(const char *cg, pid_t pid)
{
	char path[PATH_MAX], buf[32];
	int fd, n, err = 0;

	snprintf(path, sizeof(path), CG_MNT "%s/cgroup.procs", cg);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%d\n", pid);
	if (write(fd, buf, n) != n)
		err = errno ?: EIO;
	close(fd);
	return err;
}

static int cg_rmdir(const char *cg)
{
	char path[PATH_MAX];
	int i;

	snprintf(path, sizeof(path), CG_MNT "%s", cg);
	for (i = 0; i < 100; i++) {
		if (!rmdir(path) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return errno;
		usleep(20000);
	}
	return EBUSY;
}

/* The cgroup (v2) process @pid is in, from /proc/PID/cgroup. */
static int cg_of(pid_t pid, char *cg, size_t size)
{
	char path[64], *buf, *line;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	line = strstr(buf, "0::");
	ret = -ENOENT;
	if (line) {
		line += 3;
		line[strcspn(line, "\n")] = '\0';
		snprintf(cg, size, "%s", line);
		ret = 0;
	}
	free(buf);
	return ret;
}

/*
 * Helper processes.  A helper is forked by the test, optionally enters a
 * cgroup, sets RLIMIT_MEMLOCK, drops to a uid, then opens the device
 * itself and serves requests on a SOCK_SEQPACKET socket until the test
 * says quit or goes away.  Its comm is this program's.
 */
#define HELPER_ROOT	((uid_t)-1)
#define HELPER_MRS	64
#define RACE_THREADS	4
#define RACE_HELD	2048

enum helper_op { HOP_REG = 1, HOP_DEREG, HOP_RACE, HOP_GO, HOP_QUIT };

struct helper_req {
	int op;
	int idx;
	uint64_t len;
	uint64_t off;
	uint32_t threads;
	uint32_t ms;		/* race: churn for ms; 0: fill up, then stop */
	uint32_t min_pages;
	uint32_t max_pages;
	uint64_t seed;
};

struct helper_resp {
	int err;		/* 0 or an errno */
	int idx;		/* reg: the MR's index; setup: the stage */
	uint64_t v[5];		/* race: regs, refusals, held, held_bytes */
};

struct helper {
	pid_t pid;
	int sock;
};

struct helper_cfg {
	uid_t uid;
	const char *cgroup;
	uint64_t memlock;
};

struct child_mr {
	void *buf;
	size_t buf_len;
	struct ibv_mr *mr;
};

#define RACE_MAX_S	30	/* the longest a churning race goes on */

struct race_thread {
	pthread_t thread;
	struct ibv_pd *pd;
	pthread_barrier_t *start;
	const struct helper_req *req;
	uint64_t seed;
	char *buf;
	struct ibv_mr **held;
	uint64_t *held_bytes;
	int nheld;
	uint64_t regs;
	uint64_t refusals;
	int err;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void race_drop(struct race_thread *rt)
{
	int i = rnd(&rt->seed) % rt->nheld;

	if (ibv_dereg_mr(rt->held[i]) && !rt->err)
		rt->err = errno ?: EIO;
	rt->held[i] = rt->held[--rt->nheld];
	rt->held_bytes[i] = rt->held_bytes[rt->nheld];
}

/*
 * Register MRs of min_pages..max_pages pages: with ms, for ms
 * milliseconds and until the first refusal (on a slow kernel the limit
 * takes longer to reach; RACE_MAX_S bounds it), dropping a random one
 * after each refusal; without, until the first refusal.
 */
static void *race_loop(void *arg)
{
	struct race_thread *rt = arg;
	const struct helper_req *q = rt->req;
	struct ibv_mr *mr;
	uint64_t pages;
	double start, now;

	pthread_barrier_wait(rt->start);
	start = mrpin_now_s();
	for (;;) {
		now = mrpin_now_s();
		if (q->ms && now >= start + q->ms / 1000.0 &&
		    (rt->refusals || now >= start + RACE_MAX_S))
			break;
		if (rt->nheld == RACE_HELD) {
			if (!q->ms) {
				rt->err = ENOSPC;
				break;
			}
			race_drop(rt);
		}
		pages = q->min_pages +
			rnd(&rt->seed) % (q->max_pages - q->min_pages + 1);
		mr = ibv_reg_mr(rt->pd, rt->buf, pages * PAGE, MRPIN_ACCESS);
		if (mr) {
			rt->held[rt->nheld] = mr;
			rt->held_bytes[rt->nheld++] = pages * PAGE;
			rt->regs++;
			continue;
		}
		if (errno != ENOMEM) {
			rt->err = errno;
			break;
		}
		rt->refusals++;
		if (!q->ms)
			break;
		if (rt->nheld)
			race_drop(rt);
	}
	return NULL;
}

static void child_reply(int sock, const struct helper_resp *resp);

/*
 * Arm the racing threads, say so, and let them go when the test says go
 * (so that both helpers start together): the threads' totals in *@resp.
 */
static void child_race(int sock, struct ibv_pd *pd,
		       const struct helper_req *q, struct race_thread *rts,
		       struct helper_resp *resp)
{
	pthread_barrier_t start;
	struct helper_req go;
	uint32_t i;
	int j;

	memset(resp, 0, sizeof(*resp));
	if (q->threads < 1 || q->threads > RACE_THREADS || !q->min_pages ||
	    q->max_pages < q->min_pages) {
		resp->err = EINVAL;
		return;
	}
	pthread_barrier_init(&start, NULL, q->threads + 1);
	for (i = 0; i < q->threads; i++) {
		struct race_thread *rt = &rts[i];

		rt->pd = pd;
		rt->start = &start;
		rt->req = q;
		rt->seed = q->seed * 2654435761ULL + i + 1;
		rt->buf = mmap(NULL, q->max_pages * PAGE,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		rt->held = calloc(RACE_HELD, sizeof(*rt->held));
		rt->held_bytes = calloc(RACE_HELD, sizeof(*rt->held_bytes));
		if (rt->buf == MAP_FAILED || !rt->held || !rt->held_bytes) {
			resp->err = ENOMEM;
			return;		/* the test gives up on this helper */
		}
		memset(rt->buf, 0x5a, q->max_pages * PAGE);
	}
	for (i = 0; i < q->threads; i++)
		if (pthread_create(&rts[i].thread, NULL, race_loop, &rts[i])) {
			resp->err = EAGAIN;
			return;
		}
	/* Armed: wait for the word. */
	child_reply(sock, resp);
	if (recv(sock, &go, sizeof(go), 0) != sizeof(go) || go.op != HOP_GO)
		_exit(1);
	pthread_barrier_wait(&start);
	for (i = 0; i < q->threads; i++) {
		pthread_join(rts[i].thread, NULL);
		resp->v[0] += rts[i].regs;
		resp->v[1] += rts[i].refusals;
		resp->v[2] += rts[i].nheld;
		for (j = 0; j < rts[i].nheld; j++)
			resp->v[3] += rts[i].held_bytes[j];
		if (!resp->err)
			resp->err = rts[i].err;
	}
	pthread_barrier_destroy(&start);
}

static void child_reply(int sock, const struct helper_resp *resp)
{
	if (send(sock, resp, sizeof(*resp), MSG_NOSIGNAL) != sizeof(*resp))
		_exit(1);
}

/* The helper process: never returns. */
static void helper_main(int sock, const struct helper_cfg *cfg)
{
	struct race_thread rts[RACE_THREADS] = { };
	struct child_mr mrs[HELPER_MRS] = { };
	struct helper_resp resp = { };
	struct ibv_context *ctx;
	struct helper_req q;
	struct rlimit rl;
	struct ibv_pd *pd;
	ssize_t n;
	int i;

	/* Stage 1: the cgroup; 2: RLIMIT_MEMLOCK; 3: the uid; 4: device. */
	resp.idx = 1;
	if (cfg->cgroup && (resp.err = cg_write_procs(cfg->cgroup, getpid())))
		goto fail;
	resp.idx = 2;
	rl.rlim_cur = rl.rlim_max = cfg->memlock;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		goto fail_errno;
	resp.idx = 3;
	if (cfg->uid != HELPER_ROOT &&
	    (setgroups(0, NULL) || setresgid(cfg->uid, cfg->uid, cfg->uid) ||
	     setresuid(cfg->uid, cfg->uid, cfg->uid)))
		goto fail_errno;
	resp.idx = 4;
	ctx = mrpin_open_dev(mrpin_dev_name());
	if (!ctx)
		goto fail_errno;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		goto fail_errno;
	child_reply(sock, &resp);

	for (;;) {
		n = recv(sock, &q, sizeof(q), 0);
		if (n != sizeof(q))
			break;
		memset(&resp, 0, sizeof(resp));
		switch (q.op) {
		case HOP_REG:
			for (i = 0; i < HELPER_MRS && mrs[i].buf; i++)
				;
			if (i == HELPER_MRS) {
				resp.err = ENOSPC;
				break;
			}
			mrs[i].buf_len = (q.off + q.len + PAGE - 1) & ~(PAGE - 1);
			mrs[i].buf = mmap(NULL, mrs[i].buf_len,
					  PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (mrs[i].buf == MAP_FAILED) {
				mrs[i].buf = NULL;
				resp.err = errno;
				break;
			}
			memset(mrs[i].buf, 0x5a, mrs[i].buf_len);
			if (_do_reg(pd, (char *)mrs[i].buf + q.off, q.len,
				    &mrs[i].mr)) {
				resp.err = errno;
				munmap(mrs[i].buf, mrs[i].buf_len);
				mrs[i].buf = NULL;
				break;
			}
			resp.idx = i;
			break;
		case HOP_DEREG:
			if (q.idx < 0 || q.idx >= HELPER_MRS || !mrs[q.idx].buf) {
				resp.err = EBADF;
				break;
			}
			if (_do_dereg(mrs[q.idx].mr)) {
				resp.err = errno;
				break;
			}
			munmap(mrs[q.idx].buf, mrs[q.idx].buf_len);
			mrs[q.idx].buf = NULL;
			break;
		case HOP_RACE:
			child_race(sock, pd, &q, rts, &resp);
			break;
		case HOP_QUIT:
			goto out;
		default:
			resp.err = EINVAL;
		}
		child_reply(sock, &resp);
	}
out:
	for (i = 0; i < HELPER_MRS; i++)
		if (mrs[i].buf)
			_do_dereg(mrs[i].mr);
	for (i = 0; i < RACE_THREADS; i++)
		while (rts[i].nheld)
			_do_dereg(rts[i].held[--rts[i].nheld]);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	resp.err = 0;
	child_reply(sock, &resp);
	_exit(0);

fail_errno:
	resp.err = errno ?: EIO;
fail:
	child_reply(sock, &resp);
	_exit(1);
}

static int helper_send(struct helper *h, const struct helper_req *q)
{
	if (send(h->sock, q, sizeof(*q), MSG_NOSIGNAL) != sizeof(*q))
		return errno ?: EPIPE;
	return 0;
}

/* The next answer of helper @h within @ms: 0, ETIMEDOUT or EPIPE. */
static int helper_recv(struct helper *h, struct helper_resp *resp, int ms)
{
	struct pollfd pfd = { h->sock, POLLIN, 0 };
	ssize_t n;

	if (poll(&pfd, 1, ms) != 1)
		return ETIMEDOUT;
	n = recv(h->sock, resp, sizeof(*resp), 0);
	return n == sizeof(*resp) ? 0 : EPIPE;
}

static int helper_call(struct helper *h, const struct helper_req *q,
		       struct helper_resp *resp)
{
	int err = helper_send(h, q);

	return err ?: helper_recv(h, resp, 60000);
}

/* Fork helper @h; 0, or an errno with the failed stage in *@stage. */
static int helper_spawn(struct helper *h, const struct helper_cfg *cfg,
			int *stage)
{
	struct helper_resp resp;
	int sv[2], err;

	*stage = 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return errno;
	fflush(stdout);
	fflush(stderr);
	h->pid = fork();
	if (h->pid < 0) {
		err = errno;
		close(sv[0]);
		close(sv[1]);
		h->pid = 0;
		return err;
	}
	if (!h->pid) {
		close(sv[0]);
		helper_main(sv[1], cfg);
	}
	close(sv[1]);
	h->sock = sv[0];
	err = helper_recv(h, &resp, 60000);
	if (err)
		return err;
	*stage = resp.idx;
	return resp.err;
}

/* Kill helper @h (its MRs go with it) and reap it. */
static void helper_kill(struct helper *h)
{
	if (h->pid <= 0)
		return;
	kill(h->pid, SIGKILL);
	waitpid(h->pid, NULL, 0);
	close(h->sock);
	h->pid = 0;
}

/* Let helper @h deregister everything and exit; 0 if it did. */
static int helper_quit(struct helper *h)
{
	struct helper_req q = { .op = HOP_QUIT };
	struct helper_resp resp;
	int status = -1, err;

	err = helper_call(h, &q, &resp);
	if (err) {
		helper_kill(h);
		return err;
	}
	waitpid(h->pid, &status, 0);
	close(h->sock);
	h->pid = 0;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? resp.err : ECHILD;
}

/*
 * Helper @h registers @len bytes from byte @off of a page-aligned buffer
 * of its own: 0 with the MR's index in *@idx, or the errno.  A refusal
 * (ENOMEM) is a line in the kernel log.
 */
static int helper_reg(struct helper *h, uint64_t len, uint64_t off, int *idx)
{
	struct helper_req q = { .op = HOP_REG, .len = len, .off = off };
	struct helper_resp resp;
	int err;

	err = helper_call(h, &q, &resp);
	if (err)
		return err;
	if (resp.err == ENOMEM)
		mrpin_note_logged(shared, 1);
	*idx = resp.idx;
	return resp.err;
}

static int helper_dereg(struct helper *h, int idx)
{
	struct helper_req q = { .op = HOP_DEREG, .idx = idx };
	struct helper_resp resp;
	int err;

	err = helper_call(h, &q, &resp);
	return err ?: resp.err;
}

#define helper_start(h, _uid, _cgroup, _memlock)			\
	({								\
		struct helper_cfg __cfg = {				\
			.uid = _uid, .cgroup = _cgroup,			\
			.memlock = _memlock,				\
		};							\
		int __stage, __err;					\
									\
		__err = helper_spawn(h, &__cfg, &__stage);		\
		ASSERT_EQ(0, __err) {					\
			TH_LOG("helper (uid %d, cgroup %s) failed at stage %d (1 cgroup, 2 memlock, 3 uid, 4 device): %s", \
			       (int)(_uid), (_cgroup) ?: "-", __stage,	\
			       strerror(__err));			\
		}							\
	})

/* Register; assert success; the MR's index. */
#define h_reg(h, len, off)						\
	({								\
		int __idx = -1, __err;					\
									\
		__err = helper_reg(h, len, off, &__idx);		\
		ASSERT_EQ(0, __err) {					\
			TH_LOG("pid %d: reg %llu bytes at +%llu: %s",	\
			       (h)->pid, (unsigned long long)(len),	\
			       (unsigned long long)(off),		\
			       strerror(__err));			\
		}							\
		__idx;							\
	})

/* Register; assert it fails with @_errno. */
#define h_reg_err(_errno, h, len, off)					\
	({								\
		int __idx, __err;					\
									\
		__err = helper_reg(h, len, off, &__idx);		\
		ASSERT_EQ(_errno, __err) {				\
			TH_LOG("pid %d: reg %llu bytes at +%llu: %s (expected %s)", \
			       (h)->pid, (unsigned long long)(len),	\
			       (unsigned long long)(off),		\
			       strerror(__err), strerror(_errno));	\
		}							\
	})

#define h_dereg(h, idx)							\
	({								\
		int __err = helper_dereg(h, idx);			\
									\
		ASSERT_EQ(0, __err) {					\
			TH_LOG("pid %d: dereg: %s", (h)->pid,		\
			       strerror(__err));			\
		}							\
	})

/* What every fixture holds. */
#define MAX_HELPERS	4
#define MAX_CGROUPS	8

struct limits_test {
	struct helper h[MAX_HELPERS];
	char cgroups[MAX_CGROUPS][64];	/* made by the test: removed */
	int ncgroups;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct mrpin_stats start;
	int kmsg;			/* kernel problems, at the end */
	bool tracing;
};

/* Make cgroup @cg (relative to the cgroup2 mount), removed at the end. */
static void __mkcg(struct __test_metadata *_metadata, struct limits_test *t,
		   const char *cg)
{
	char path[PATH_MAX];

	ASSERT_GT(MAX_CGROUPS, t->ncgroups);
	snprintf(path, sizeof(path), CG_MNT "%s", cg);
	ASSERT_EQ(0, mkdir(path, 0755)) {
		TH_LOG("mkdir %s: %s", path, strerror(errno));
	}
	snprintf(t->cgroups[t->ncgroups++], sizeof(t->cgroups[0]), "%s", cg);
}
#define mkcg(t, cg) __mkcg(_metadata, t, cg)

#define need_cgroup2()							\
	do {								\
		if (!cgroup2_mounted())					\
			SKIP(return, "%s is not a cgroup2 mount", CG_MNT); \
	} while (0)

/* Register in this process; on ENOMEM note the log line it makes. */
#define self_reg_err(pd, addr, len)					\
	({								\
		do_reg_err(ENOMEM, pd, addr, len);			\
		mrpin_note_logged(shared, 1);						\
	})

static void __test_setup(struct __test_metadata *_metadata,
			 struct limits_test *t)
{
	t->kmsg = -1;
	ASSERT_EQ(0, mrpin_unlimit_memlock());
	t->kmsg = mrpin_kmsg_open();
	ASSERT_LE(0, t->kmsg);
	ASSERT_EQ(0, limits_writef("reset\n"));
	read_stats(&t->start);
	t->ctx = mrpin_open_dev(mrpin_dev_name());
	ASSERT_NE(NULL, t->ctx) {
		TH_LOG("cannot open %s: %s", mrpin_dev_name(),
		       strerror(errno));
	}
	t->pd = ibv_alloc_pd(t->ctx);
	ASSERT_NE(NULL, t->pd);
}
#define test_setup(t) __test_setup(_metadata, t)

static int write_file(const char *path, const char *text)
{
	int fd, err = 0;
	ssize_t n;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, text, strlen(text));
	if (n != (ssize_t)strlen(text))
		err = n < 0 ? errno : EIO;
	close(fd);
	return err;
}

/* Only EXPECT_*() without handler blocks here (see mrpin_test.h). */
static void __test_teardown(struct __test_metadata *_metadata,
			    struct limits_test *t)
{
	struct mrpin_stats end;
	const char *problem;
	char *log;
	int i;

	for (i = 0; i < MAX_HELPERS; i++)
		helper_kill(&t->h[i]);
	if (t->pd)
		ibv_dealloc_pd(t->pd);
	if (t->ctx)
		ibv_close_device(t->ctx);
	t->pd = NULL;
	t->ctx = NULL;
	if (t->tracing) {
		write_file(TRACING "/events/mrpin/mrpin_deny/enable", "0");
		write_file(TRACING "/trace", "");
	}
	EXPECT_EQ(0, limits_writef("reset\n"));
	for (i = t->ncgroups - 1; i >= 0; i--)
		EXPECT_EQ(0, cg_rmdir(t->cgroups[i]));

	EXPECT_EQ(0, mrpin_read_stats(&end));
	EXPECT_EQ(t->start.pins, end.pins);
	EXPECT_EQ(t->start.pinned_bytes, end.pinned_bytes);

	if (t->kmsg < 0)
		return;
	log = mrpin_kmsg_read(t->kmsg);
	EXPECT_NE(NULL, log);
	if (!log)
		return;
	problem = mrpin_log_problem(log);
	EXPECT_EQ(NULL, problem);
	if (problem)
		ksft_print_msg("kernel log: %.*s\n",
			       (int)strcspn(problem, "\n"), problem);
	free(log);
	close(t->kmsg);
}
#define test_teardown(t) __test_teardown(_metadata, t)

/*
 * 1. Every rule, in both actions: the pin that would cross the limit is
 * refused with ENOMEM (enforce) or allowed with a warning (warn), and
 * `stats`, `procs`, `events` and the kernel log say which rule; the pins
 * within it are allowed without a word.
 */
FIXTURE(rule) {
	struct limits_test t;
};

FIXTURE_VARIANT(rule) {
	const char *scope;	/* as written to limits */
	const char *event_scope;/* as events and the log name it */
	const char *key;
	bool warn;
	uid_t uid;		/* of the pinning process */
	const char *cgroup;	/* where it pins */
};

#define RULE_VARIANT(name, _scope, _escope, _key, _warn, _uid, _cg)	\
	FIXTURE_VARIANT_ADD(rule, name) {				\
		.scope = _scope, .event_scope = _escope, .key = _key,	\
		.warn = _warn, .uid = _uid, .cgroup = _cg,		\
	}

RULE_VARIANT(global_enforce, "global", "global", "max_pinned", false,
	     HELPER_ROOT, NULL);
RULE_VARIANT(global_warn, "global", "global", "max_pinned", true,
	     HELPER_ROOT, NULL);
RULE_VARIANT(process_max_pinned_enforce, "process", "process", "max_pinned",
	     false, HELPER_ROOT, NULL);
RULE_VARIANT(process_max_pinned_warn, "process", "process", "max_pinned",
	     true, HELPER_ROOT, NULL);
RULE_VARIANT(process_max_pins_enforce, "process", "process", "max_pins",
	     false, HELPER_ROOT, NULL);
RULE_VARIANT(process_max_pins_warn, "process", "process", "max_pins",
	     true, HELPER_ROOT, NULL);
RULE_VARIANT(process_max_pin_size_enforce, "process", "process",
	     "max_pin_size", false, HELPER_ROOT, NULL);
RULE_VARIANT(process_max_pin_size_warn, "process", "process",
	     "max_pin_size", true, HELPER_ROOT, NULL);
RULE_VARIANT(uid_enforce, "uid 1000", "uid:1000", "max_pinned", false,
	     USER_UID, NULL);
RULE_VARIANT(uid_warn, "uid 1000", "uid:1000", "max_pinned", true,
	     USER_UID, NULL);
RULE_VARIANT(cgroup_enforce, "cgroup " CG_TOP "/rule",
	     "cgroup:" CG_TOP "/rule", "max_pinned", false, HELPER_ROOT,
	     CG_TOP "/rule");
RULE_VARIANT(cgroup_warn, "cgroup " CG_TOP "/rule",
	     "cgroup:" CG_TOP "/rule", "max_pinned", true, HELPER_ROOT,
	     CG_TOP "/rule");

FIXTURE_SETUP(rule)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(rule)
{
	test_teardown(&self->t);
}

TEST_F_TIMEOUT(rule, pin_over_the_limit_is_refused_or_warned_and_pins_within_it_allowed, 60)
{
	struct limits_test *t = &self->t;
	struct helper *h = &t->h[0];
	const char *action = variant->warn ? "warn" : "enforce";
	uint64_t uid = variant->uid == HELPER_ROOT ? 0 : variant->uid;
	uint64_t base = 0, limit, usage, asked, over_len, over_off;
	uint64_t pins, bytes;
	struct mrpin_stats before, after, end;
	const struct mrpin_event *ev;
	int first, err, idx, kfd;
	struct events e;
	uint64_t from;

	if (variant->cgroup) {
		need_cgroup2();
		mkcg(t, CG_TOP);
		mkcg(t, variant->cgroup);
	}
	helper_start(h, variant->uid, variant->cgroup, RLIM_INFINITY);
	read_stats(&before);

	if (!strcmp(variant->key, "max_pinned")) {
		if (!strcmp(variant->scope, "global"))
			base = before.pinned_bytes;
		limit = base + MiB;
		set_limits("%s max_pinned=%llu action=%s\n", variant->scope,
			   (unsigned long long)limit, action);
		first = h_reg(h, 512 * KiB, 0);
		pins = 1;
		bytes = 512 * KiB;
		usage = base + 512 * KiB;
		/* One page more than what is left. */
		over_len = asked = 512 * KiB + PAGE;
		over_off = 0;
	} else if (!strcmp(variant->key, "max_pins")) {
		limit = 3;
		set_limits("%s max_pins=3 action=%s\n", variant->scope, action);
		first = h_reg(h, PAGE, 0);
		h_reg(h, PAGE, 0);
		h_reg(h, PAGE, 0);
		pins = 3;
		bytes = 3 * PAGE;
		usage = 3;
		over_len = asked = PAGE;
		over_off = 0;
	} else {
		limit = 64 * KiB;
		set_limits("%s max_pin_size=64K action=%s\n", variant->scope,
			   action);
		first = h_reg(h, 64 * KiB, 0);	/* exactly the limit */
		pins = 1;
		bytes = 64 * KiB;
		usage = ANY;
		/* 64 KiB from byte 100: 17 pages, one more than allowed. */
		over_len = 64 * KiB;
		over_off = 100;
		asked = 68 * KiB;
	}
	check_holder(h->pid, pins, bytes, 0);

	from = next_seq();
	mrpin_log_room(shared);
	kfd = mrpin_kmsg_open();
	ASSERT_LE(0, kfd);
	err = helper_reg(h, over_len, over_off, &idx);
	if (variant->warn) {
		mrpin_note_logged(shared, 1);
		ASSERT_EQ(0, err) {
			TH_LOG("warn mode: the pin over the limit failed: %s",
			       strerror(err));
		}
		pins++;
		bytes += asked;
	} else {
		ASSERT_EQ(ENOMEM, err) {
			TH_LOG("the pin over the limit: %s",
			       err ? strerror(err) : "allowed");
		}
	}

	read_stats(&after);
	EXPECT_EQ(before.denials_total + !variant->warn, after.denials_total);
	EXPECT_EQ(before.warnings_total + variant->warn, after.warnings_total);
	check_holder(h->pid, pins, bytes, variant->warn ? 0 : 1);

	read_events(&e);
	EXPECT_EQ(1, events_since(&e, from, 0, &ev));
	ASSERT_NE(NULL, ev) {
		TH_LOG("no new line in events");
	}
	check_event(ev, variant->warn ? "warn" : "deny", h->pid, uid,
		    variant->event_scope, variant->key, asked, usage, limit);
	from = ev->seq + 1;
	free(e.ev);
	check_log(kfd, variant->warn, h->pid, uid, variant->event_scope,
		  variant->key, asked, usage, limit);
	close(kfd);

	if (variant->warn)
		return;

	/* Enforce: what still fits is allowed, without a word. */
	if (!strcmp(variant->key, "max_pinned")) {
		h_reg(h, 512 * KiB, 0);		/* up to the limit exactly */
		pins++;
		bytes += 512 * KiB;
	} else if (!strcmp(variant->key, "max_pins")) {
		h_dereg(h, first);
		h_reg(h, PAGE, 0);
	} else {
		/* 64 KiB - 100 from byte 100: 16 pages, the limit. */
		h_reg(h, 64 * KiB - 100, 100);
		pins++;
		bytes += 64 * KiB;
	}
	check_holder(h->pid, pins, bytes, 1);
	read_stats(&end);
	EXPECT_EQ(after.denials_total, end.denials_total);
	EXPECT_EQ(after.warnings_total, end.warnings_total);
	EXPECT_EQ(from, next_seq());
}

FIXTURE(limits) {
	struct limits_test t;
};

FIXTURE_SETUP(limits)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(limits)
{
	test_teardown(&self->t);
}

static int read_capeff(uint64_t *caps)
{
	char *buf, *line;
	int ret;

	ret = mrpin_read_file("/proc/self/status", &buf);
	if (ret)
		return ret;
	line = strstr(buf, "\nCapEff:");
	ret = -EPROTO;
	if (line && sscanf(line, "\nCapEff: %" SCNx64, caps) == 1)
		ret = 0;
	free(buf);
	return ret;
}

/*
 * 2. mrpin's limits hold for root with CAP_IPC_LOCK and no RLIMIT_MEMLOCK,
 * whom the kernel's own check lets through.
 */
TEST_F(limits, root_with_cap_ipc_lock_and_no_memlock_limit_is_still_refused)
{
	struct limits_test *t = &self->t;
	const struct mrpin_event *ev;
	struct ibv_mr *mr, *mr2;
	struct rlimit rl;
	struct events e;
	uint64_t caps, from;
	char *buf;

	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	ASSERT_EQ(RLIM_INFINITY, rl.rlim_cur);
	ASSERT_EQ(0, read_capeff(&caps));
	ASSERT_NE(0ULL, (unsigned long long)(caps & (1ULL << CAP_IPC_LOCK))) {
		TH_LOG("no CAP_IPC_LOCK: CapEff %llx", (unsigned long long)caps);
	}
	ASSERT_EQ(0U, geteuid());

	buf = map_buf(MiB + PAGE);
	set_limits("process max_pinned=1M\n");
	do_reg(t->pd, buf, MiB, &mr);
	from = next_seq();
	self_reg_err(t->pd, buf + MiB, PAGE);
	check_holder(getpid(), 1, MiB, 1);
	read_events(&e);
	EXPECT_EQ(1, events_since(&e, from, getpid(), &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", getpid(), 0, "process", "max_pinned", PAGE,
		    MiB, MiB);
	free(e.ev);

	/* The same pin without the rule: the refusal was mrpin's. */
	set_limits("reset\n");
	do_reg(t->pd, buf + MiB, PAGE, &mr2);
	do_dereg(mr2);
	do_dereg(mr);
	munmap(buf, MiB + PAGE);
}

static int memtotal_bytes(uint64_t *bytes)
{
	char *buf, *line;
	uint64_t kib;
	int ret;

	ret = mrpin_read_file("/proc/meminfo", &buf);
	if (ret)
		return ret;
	line = strstr(buf, "MemTotal:");
	ret = -EPROTO;
	if (line && sscanf(line, "MemTotal: %" SCNu64 " kB", &kib) == 1) {
		*bytes = kib * 1024;
		ret = 0;
	}
	free(buf);
	return ret;
}

/* 3. max_pinned=1% is 1% of the machine's RAM (MemTotal, within 2 MiB). */
TEST_F(limits, percentage_limit_is_that_share_of_ram)
{
	struct limits_test *t = &self->t;
	const struct mrpin_event *ev;
	uint64_t ram, share, under, from;
	struct ibv_mr *mr;
	struct events e;
	char *buf;

	ASSERT_EQ(0, memtotal_bytes(&ram));
	share = ram / 100;
	ASSERT_LT(8 * MiB, share);
	under = (share - 3 * MiB) & ~(PAGE - 1);
	buf = map_buf(under + 6 * MiB);

	set_limits("process max_pinned=1%%\n");
	do_reg(t->pd, buf, under, &mr);
	from = next_seq();
	self_reg_err(t->pd, buf + under, 6 * MiB);
	read_events(&e);
	EXPECT_EQ(1, events_since(&e, from, getpid(), &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", getpid(), 0, "process", "max_pinned", 6 * MiB,
		    under, ev->limit);
	EXPECT_LE(share - 2 * MiB, ev->limit);
	EXPECT_GE(share + 2 * MiB, ev->limit);
	TH_LOG("1%% of MemTotal %llu is %llu; mrpin's limit: %llu",
	       (unsigned long long)ram, (unsigned long long)share,
	       (unsigned long long)ev->limit);
	free(e.ev);
	do_dereg(mr);
	munmap(buf, under + 6 * MiB);
}

/*
 * 4. A uid rule holds the sum of every process of the user, and no other
 * user's; a release gives the room back to all of them.
 */
TEST_F(limits, processes_of_one_user_share_its_uid_limit)
{
	struct limits_test *t = &self->t;
	struct helper *a = &t->h[0], *b = &t->h[1];
	struct helper *other = &t->h[2], *root = &t->h[3];
	const struct mrpin_event *ev;
	struct mrpin_stats before, after;
	struct events e;
	uint64_t from;
	int b_idx;

	helper_start(a, USER_UID, NULL, RLIM_INFINITY);
	helper_start(b, USER_UID, NULL, RLIM_INFINITY);
	helper_start(other, OTHER_UID, NULL, RLIM_INFINITY);
	helper_start(root, HELPER_ROOT, NULL, RLIM_INFINITY);
	set_limits("uid 1000 max_pinned=1M\n");
	read_stats(&before);
	from = next_seq();

	h_reg(b, PAGE, 0);
	h_reg(a, 764 * KiB, 0);			/* together: 768K */
	h_reg_err(ENOMEM, b, 512 * KiB, 0);	/* 768K + 512K > 1M */
	b_idx = h_reg(b, 256 * KiB, 0);		/* exactly 1M */
	h_reg_err(ENOMEM, a, PAGE, 0);
	h_reg(other, 512 * KiB, 0);		/* not uid 1000's */
	h_reg(root, 512 * KiB, 0);

	check_holder(a->pid, 1, 764 * KiB, 1);
	check_holder(b->pid, 2, 260 * KiB, 1);
	check_holder(other->pid, 1, 512 * KiB, 0);
	read_stats(&after);
	EXPECT_EQ(before.denials_total + 2, after.denials_total);

	read_events(&e);
	EXPECT_EQ(2, events_since(&e, from, 0, &ev));
	EXPECT_EQ(1, events_since(&e, from, b->pid, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", b->pid, USER_UID, "uid:1000", "max_pinned",
		    512 * KiB, 768 * KiB, MiB);
	EXPECT_EQ(1, events_since(&e, from, a->pid, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", a->pid, USER_UID, "uid:1000", "max_pinned",
		    PAGE, MiB, MiB);
	free(e.ev);

	/* b's release makes room for a. */
	h_dereg(b, b_idx);
	h_reg(a, 256 * KiB, 0);
	h_reg_err(ENOMEM, a, 8 * KiB, 0);
	check_holder(a->pid, 2, 1020 * KiB, 2);
	EXPECT_EQ(0, helper_quit(a));
	EXPECT_EQ(0, helper_quit(b));
}

/*
 * 5. RLIMIT_MEMLOCK still refuses a user's pin under a policy that would
 * allow it, and that refusal is not mrpin's.
 */
TEST_F(limits, rlimit_memlock_still_applies_under_a_generous_policy)
{
	struct limits_test *t = &self->t;
	struct helper *h = &t->h[0];
	struct mrpin_stats before, after;
	struct mrpin_proc_row *procs;
	const struct mrpin_proc_row *p;
	uint64_t from;
	int n;

	set_limits("process max_pinned=16M\nuid 1000 max_pinned=16M\n");
	helper_start(h, USER_UID, NULL, 256 * KiB);
	read_stats(&before);
	from = next_seq();
	h_reg(h, 256 * KiB, 0);
	h_reg_err(ENOMEM, h, PAGE, 0);
	read_stats(&after);
	EXPECT_EQ(before.denials_total, after.denials_total);
	EXPECT_EQ(before.warnings_total, after.warnings_total);
	EXPECT_EQ(from, next_seq());
	check_holder(h->pid, 1, 256 * KiB, 0);
	n = mrpin_read_procs(&procs);
	ASSERT_LE(0, n);
	p = mrpin_find_proc(procs, n, h->pid);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(256 * KiB, p->memlock_bytes);
	EXPECT_EQ((uint64_t)USER_UID, p->uid);
	free(procs);
}

/*
 * 6. A cgroup's limit holds the sum of its whole subtree, children and
 * grandchildren, and nothing outside it.
 */
TEST_F(limits, cgroup_limit_holds_the_sum_of_its_descendants)
{
	struct limits_test *t = &self->t;
	struct helper *ha = &t->h[0], *hb = &t->h[1], *hd = &t->h[2];
	struct helper *out = &t->h[3];
	const struct mrpin_event *ev;
	struct events e;
	uint64_t from;
	int a_idx;

	need_cgroup2();
	mkcg(t, CG_TOP);
	mkcg(t, CG_TOP "/p");
	mkcg(t, CG_TOP "/p/a");
	mkcg(t, CG_TOP "/p/b");
	mkcg(t, CG_TOP "/p/a/deep");
	helper_start(ha, HELPER_ROOT, CG_TOP "/p/a", RLIM_INFINITY);
	helper_start(hb, HELPER_ROOT, CG_TOP "/p/b", RLIM_INFINITY);
	helper_start(hd, HELPER_ROOT, CG_TOP "/p/a/deep", RLIM_INFINITY);
	helper_start(out, HELPER_ROOT, CG_TOP, RLIM_INFINITY);
	set_limits("cgroup " CG_TOP "/p max_pinned=1M\n");
	from = next_seq();

	a_idx = h_reg(ha, 512 * KiB, 0);
	h_reg(hb, 256 * KiB, 0);
	h_reg(hd, 256 * KiB, 0);		/* the subtree: exactly 1M */
	h_reg_err(ENOMEM, hb, PAGE, 0);
	h_reg_err(ENOMEM, hd, PAGE, 0);
	h_reg(out, 512 * KiB, 0);		/* the parent of p: no limit */
	check_holder(hd->pid, 1, 256 * KiB, 1);

	read_events(&e);
	EXPECT_EQ(2, events_since(&e, from, 0, &ev));
	EXPECT_EQ(1, events_since(&e, from, hd->pid, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", hd->pid, 0, "cgroup:" CG_TOP "/p",
		    "max_pinned", PAGE, MiB, MiB);
	free(e.ev);

	/* A release in /p/a makes room in /p/b. */
	h_dereg(ha, a_idx);
	h_reg(hb, 512 * KiB, 0);
	h_reg_err(ENOMEM, hb, PAGE, 0);
}

/*
 * 7. A pin stays charged to the cgroup it was made in: a process that
 * moves out of a limited cgroup takes its new pins elsewhere but leaves its
 * old ones where they were, until it releases them.
 */
TEST_F(limits, moved_process_leaves_its_pins_charged_where_it_made_them)
{
	struct limits_test *t = &self->t;
	struct helper *x = &t->h[0], *y = &t->h[1];
	struct mrpin_proc_row *procs;
	const struct mrpin_proc_row *p;
	const struct mrpin_event *ev;
	char cg[256];
	struct events e;
	uint64_t from;
	int x_idx, n;

	need_cgroup2();
	mkcg(t, CG_TOP);
	mkcg(t, CG_TOP "/p");
	mkcg(t, CG_TOP "/p/a");
	mkcg(t, CG_TOP "/b");
	helper_start(x, HELPER_ROOT, CG_TOP "/p/a", RLIM_INFINITY);
	helper_start(y, HELPER_ROOT, CG_TOP "/p/a", RLIM_INFINITY);
	set_limits("cgroup " CG_TOP "/p max_pinned=1M\n");

	x_idx = h_reg(x, MiB, 0);		/* /p is full */
	h_reg_err(ENOMEM, y, PAGE, 0);

	ASSERT_EQ(0, cg_write_procs(CG_TOP "/b", x->pid));
	ASSERT_EQ(0, cg_of(x->pid, cg, sizeof(cg)));
	ASSERT_STREQ(CG_TOP "/b", cg);
	h_reg(x, PAGE, 0);			/* charged to /b */
	from = next_seq();
	h_reg_err(ENOMEM, y, PAGE, 0);		/* x's 1M is still /p's */
	read_events(&e);
	EXPECT_EQ(1, events_since(&e, from, y->pid, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", y->pid, 0, "cgroup:" CG_TOP "/p",
		    "max_pinned", PAGE, MiB, MiB);
	free(e.ev);
	check_holder(x->pid, 2, MiB + PAGE, 0);
	n = mrpin_read_procs(&procs);
	ASSERT_LE(0, n);
	p = mrpin_find_proc(procs, n, x->pid);
	ASSERT_NE(NULL, p);
	EXPECT_STREQ(CG_TOP "/b", p->cgroup);
	free(procs);

	/*
	 * The release of the pin made in /p/a uncharges /p, not /b: all of
	 * /p is free again (x's pin made in /b is not in it).
	 */
	h_dereg(x, x_idx);
	h_reg(y, MiB, 0);
	h_reg_err(ENOMEM, y, PAGE, 0);
}

/*
 * 8. A limit lowered below what is in use unpins nothing: the pins stay,
 * listed and in VmPin; only new pins are refused, until enough is released.
 */
TEST_F(limits, lowering_a_limit_below_use_unpins_nothing_and_refuses_new_pins)
{
	struct limits_test *t = &self->t;
	struct helper *h = &t->h[0];
	struct mrpin_stats before, after;
	struct mrpin_pin_row *rows;
	const struct mrpin_event *ev;
	struct events e;
	uint64_t from;
	int idx[4], i, n;

	helper_start(h, HELPER_ROOT, NULL, RLIM_INFINITY);
	for (i = 0; i < 4; i++)
		idx[i] = h_reg(h, 256 * KiB, 0);
	check_holder(h->pid, 4, MiB, 0);
	read_stats(&before);

	set_limits("process max_pinned=512K max_pins=2\n");
	check_holder(h->pid, 4, MiB, 0);
	n = mrpin_read_pins(&rows);
	ASSERT_LE(0, n);
	EXPECT_EQ(4, mrpin_pins_of(rows, n, h->pid));
	free(rows);
	read_stats(&after);
	EXPECT_EQ(before.pins, after.pins);
	EXPECT_EQ(before.pinned_bytes, after.pinned_bytes);
	EXPECT_EQ(before.releases_total, after.releases_total);

	from = next_seq();
	h_reg_err(ENOMEM, h, PAGE, 0);
	read_events(&e);
	EXPECT_EQ(1, events_since(&e, from, h->pid, &ev));
	ASSERT_NE(NULL, ev);
	EXPECT_STREQ("process", ev->scope);
	EXPECT_STREQ("deny", ev->action);
	free(e.ev);
	check_holder(h->pid, 4, MiB, 1);

	/* Down to the limits: still no room for one more. */
	h_dereg(h, idx[0]);
	h_dereg(h, idx[1]);
	h_reg_err(ENOMEM, h, PAGE, 0);
	/* Below both: one page fits; then the pin count is full. */
	h_dereg(h, idx[2]);
	h_reg(h, PAGE, 0);
	from = next_seq();
	h_reg_err(ENOMEM, h, PAGE, 0);
	read_events(&e);
	EXPECT_EQ(1, events_since(&e, from, h->pid, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", h->pid, 0, "process", "max_pins", PAGE, 2, 2);
	free(e.ev);
	check_holder(h->pid, 2, 256 * KiB + PAGE, 3);

	/* The global limit, lowered below what the machine pins. */
	read_stats(&before);
	set_limits("reset\nglobal max_pinned=%llu\n",
		   (unsigned long long)(before.pinned_bytes - PAGE));
	check_holder(h->pid, 2, 256 * KiB + PAGE, 3);
	from = next_seq();
	h_reg_err(ENOMEM, h, PAGE, 0);
	read_events(&e);
	EXPECT_EQ(1, events_since(&e, from, h->pid, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", h->pid, 0, "global", "max_pinned", PAGE,
		    before.pinned_bytes, before.pinned_bytes - PAGE);
	free(e.ev);
	check_holder(h->pid, 2, 256 * KiB + PAGE, 4);
	read_stats(&after);
	EXPECT_EQ(before.pins, after.pins);
	EXPECT_EQ(before.pinned_bytes, after.pinned_bytes);
}

/*
 * 9. events without O_NONBLOCK's wait: a read with nothing new fails with
 * EAGAIN, poll() says when a denial arrives, and the read then returns it.
 */
TEST_F(limits, nonblocking_events_reader_gets_EAGAIN_until_poll_reports_a_denial)
{
	struct limits_test *t = &self->t;
	struct pollfd pfd;
	struct ibv_mr *mr;
	struct events e;
	char *text, *buf, tmp[256];
	ssize_t n;
	int fd;

	buf = map_buf(2 * PAGE);
	set_limits("process max_pin_size=4K\n");
	fd = open(EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, mrpin_read_available(fd, &text, NULL));
	free(text);
	n = read(fd, tmp, sizeof(tmp));
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	pfd = (struct pollfd){ fd, POLLIN, 0 };
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	do_reg(t->pd, buf, PAGE, &mr);		/* allowed: no event */
	EXPECT_EQ(0, poll(&pfd, 1, 100));
	self_reg_err(t->pd, buf, 2 * PAGE);
	pfd.revents = 0;
	EXPECT_EQ(1, poll(&pfd, 1, 5000));
	EXPECT_TRUE(pfd.revents & POLLIN);

	ASSERT_EQ(0, mrpin_read_available(fd, &text, NULL));
	ASSERT_EQ(0, events_parse(text, false, &e)) {
		TH_LOG("not events lines: %s", text);
	}
	free(text);
	ASSERT_EQ(1, e.n);
	check_event(&e.ev[0], "deny", getpid(), 0, "process", "max_pin_size",
		    2 * PAGE, ANY, PAGE);
	free(e.ev);
	n = read(fd, tmp, sizeof(tmp));
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	close(fd);
	do_dereg(mr);
	munmap(buf, 2 * PAGE);
}

static char proc_state(pid_t pid)
{
	char path[64], *buf, *p, state = '?';

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (mrpin_read_file(path, &buf))
		return state;
	p = strrchr(buf, ')');
	if (p && p[1] == ' ')
		state = p[2];
	free(buf);
	return state;
}

/* 10. A reader blocked in read() wakes up with the new denial. */
TEST_F(limits, blocked_events_reader_wakes_up_with_the_denial)
{
	struct limits_test *t = &self->t;
	char *text, *buf, *line;
	struct pollfd pfd;
	struct events e;
	size_t len = 0;
	int p[2], fd, ret;
	pid_t reader;
	ssize_t n;

	buf = map_buf(2 * PAGE);
	set_limits("process max_pin_size=4K\n");
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	fflush(stdout);
	reader = fork();
	ASSERT_LE(0, reader);
	if (!reader) {
		char rbuf[4096];

		close(p[0]);
		fd = open(EVENTS_FILE, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(1);
		while ((n = read(fd, rbuf, sizeof(rbuf))) > 0)
			if (write(p[1], rbuf, n) != n)
				_exit(2);
		_exit(3);	/* read() must block, not end */
	}
	close(p[1]);
	pfd = (struct pollfd){ p[0], POLLIN, 0 };

	/* Drain what the file holds, until the reader has been quiet. */
	text = malloc(1 << 20);
	ASSERT_NE(NULL, text);
	while (poll(&pfd, 1, 500) == 1) {
		n = read(p[0], text, 1 << 20);
		if (n <= 0)
			break;
	}
	EXPECT_EQ('S', proc_state(reader)) {
		TH_LOG("the events reader is not asleep in read()");
	}

	self_reg_err(t->pd, buf, 2 * PAGE);
	pfd.revents = 0;
	ret = poll(&pfd, 1, 10000);
	EXPECT_EQ(1, ret) {
		TH_LOG("the blocked reader did not wake up with the denial");
	}
	if (ret == 1) {
		/* Whole lines, until the reader goes quiet again. */
		do {
			n = read(p[0], text + len, (1 << 20) - len - 1);
			if (n <= 0)
				break;
			len += n;
		} while (poll(&pfd, 1, 300) == 1);
		text[len] = '\0';
		line = text;
		ASSERT_EQ(0, events_parse(line, false, &e)) {
			TH_LOG("not events lines: %s", text);
		}
		ASSERT_EQ(1, e.n);
		check_event(&e.ev[0], "deny", getpid(), 0, "process",
			    "max_pin_size", 2 * PAGE, ANY, PAGE);
		free(e.ev);
	}
	kill(reader, SIGKILL);
	waitpid(reader, NULL, 0);
	close(p[0]);
	free(text);
	munmap(buf, 2 * PAGE);
}

/*
 * 11. The ring keeps the latest 1024 events: a reader that fell behind
 * is told how many it lost, then gets the rest in order.
 */
TEST_F_TIMEOUT(limits, events_reader_that_fell_behind_is_told_how_many_it_lost, 120)
{
	struct limits_test *t = &self->t;
	const int total = EVENTS_RING + 76;
	struct ibv_mr *mr;
	struct events e, fresh;
	uint64_t from;
	char *text, *buf;
	int fd, i, refused = 0;

	buf = map_buf(2 * PAGE);
	set_limits("process max_pin_size=4K\n");
	fd = open(EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, mrpin_read_available(fd, &text, NULL));
	free(text);
	from = next_seq();

	for (i = 0; i < total; i++) {
		mr = ibv_reg_mr(t->pd, buf, 2 * PAGE, MRPIN_ACCESS);
		if (mr) {
			ibv_dereg_mr(mr);
			continue;
		}
		refused += errno == ENOMEM;
	}
	mrpin_note_logged(shared, MRPIN_LOG_BURST);
	ASSERT_EQ(total, refused);

	ASSERT_EQ(0, mrpin_read_available(fd, &text, NULL));
	close(fd);
	ASSERT_EQ(0, events_parse(text, false, &e));
	free(text);
	EXPECT_EQ(0, e.lost_before);
	EXPECT_EQ((uint64_t)(total - EVENTS_RING), e.lost);
	ASSERT_EQ(EVENTS_RING, e.n);
	EXPECT_EQ(from + total - EVENTS_RING, e.ev[0].seq);
	for (i = 1; i < e.n; i++) {
		EXPECT_EQ(e.ev[i - 1].seq + 1, e.ev[i].seq);
		EXPECT_LE(e.ev[i - 1].time_ns, e.ev[i].time_ns);
		if (e.ev[i].seq != e.ev[i - 1].seq + 1)
			break;
	}
	EXPECT_EQ(from + total - 1, e.ev[e.n - 1].seq);
	EXPECT_EQ(getpid(), e.ev[e.n - 1].pid);

	/* A new reader: the header, then the ring from its oldest event. */
	read_events(&fresh);
	EXPECT_EQ(EVENTS_RING, fresh.n);
	if (fresh.n)
		EXPECT_EQ(from + total - 1, fresh.ev[fresh.n - 1].seq);
	free(fresh.ev);
	free(e.ev);
	munmap(buf, 2 * PAGE);
}

/* 12. A denial fires mrpin:mrpin_deny; an allowed pin does not. */
TEST_F(limits, denial_fires_the_mrpin_deny_tracepoint)
{
	struct limits_test *t = &self->t;
	char *trace, *line, *next, pat[32];
	int deny_lines = 0, mine = 0;
	struct ibv_mr *mr;
	char *buf;

	if (access(TRACING "/events", F_OK))
		SKIP(return, "tracefs is not mounted at %s", TRACING);
	ASSERT_EQ(0, access(TRACING "/events/mrpin/mrpin_pin", F_OK));
	ASSERT_EQ(0, access(TRACING "/events/mrpin/mrpin_unpin", F_OK));
	ASSERT_EQ(0, access(TRACING "/events/mrpin/mrpin_deny", F_OK));

	buf = map_buf(2 * PAGE);
	set_limits("process max_pin_size=4K\n");
	t->tracing = true;
	ASSERT_EQ(0, write_file(TRACING "/events/mrpin/mrpin_deny/enable",
				"1"));
	ASSERT_EQ(0, write_file(TRACING "/trace", ""));

	do_reg(t->pd, buf, PAGE, &mr);
	do_dereg(mr);
	self_reg_err(t->pd, buf, 2 * PAGE);
	ASSERT_EQ(0, write_file(TRACING "/events/mrpin/mrpin_deny/enable",
				"0"));

	ASSERT_EQ(0, mrpin_read_file(TRACING "/trace", &trace));
	snprintf(pat, sizeof(pat), "-%d ", getpid());
	for (line = trace; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (*line == '#' || !strstr(line, "mrpin_deny:"))
			continue;
		deny_lines++;
		mine += strstr(line, pat) != NULL;
		TH_LOG("trace: %s", line);
	}
	EXPECT_EQ(1, deny_lines);
	EXPECT_EQ(1, mine);
	free(trace);
	munmap(buf, 2 * PAGE);
}

/*
 * 13. Two processes of four threads each register toward one limit at
 * once: sampled all along, and at the end, the limit is never exceeded,
 * every refusal is counted, and the counts agree.
 */
enum race_metric {
	PROC_BYTES,	/* each process's pinned_bytes (and peak_bytes) */
	PROC_PINS,	/* each process's pins */
	GLOBAL_BYTES,	/* stats pinned_bytes */
	USER_BYTES,	/* `users` pinned_bytes of USER_UID */
	CGROUP_BYTES,	/* `cgroups` pinned_bytes of CG_TOP/race */
};

FIXTURE(race) {
	struct limits_test t;
};

FIXTURE_VARIANT(race) {
	const char *rule;	/* with %llu for the limit */
	enum race_metric metric;
	uint64_t limit;		/* GLOBAL_BYTES: above what is pinned */
	uid_t uid;
	const char *cgroup[2];
	unsigned int ms;	/* churn for ms; 0: fill up */
	unsigned int max_pages;
};

FIXTURE_VARIANT_ADD(race, process_max_pinned) {
	.rule = "process max_pinned=%llu\n", .metric = PROC_BYTES,
	.limit = 2 * MiB, .uid = HELPER_ROOT, .ms = 1500, .max_pages = 16,
};
FIXTURE_VARIANT_ADD(race, process_max_pins) {
	.rule = "process max_pins=%llu\n", .metric = PROC_PINS,
	.limit = 40, .uid = HELPER_ROOT, .ms = 1500, .max_pages = 4,
};
FIXTURE_VARIANT_ADD(race, global_max_pinned) {
	.rule = "global max_pinned=%llu\n", .metric = GLOBAL_BYTES,
	.limit = 4 * MiB, .uid = HELPER_ROOT, .ms = 1500, .max_pages = 16,
};
FIXTURE_VARIANT_ADD(race, uid_max_pinned) {
	.rule = "uid 1000 max_pinned=%llu\n", .metric = USER_BYTES,
	.limit = 8 * MiB, .uid = USER_UID, .ms = 0, .max_pages = 4,
};
FIXTURE_VARIANT_ADD(race, cgroup_max_pinned) {
	.rule = "cgroup " CG_TOP "/race max_pinned=%llu\n",
	.metric = CGROUP_BYTES, .limit = 8 * MiB, .uid = HELPER_ROOT,
	.cgroup = { CG_TOP "/race/a", CG_TOP "/race/b" }, .ms = 0,
	.max_pages = 4,
};

FIXTURE_SETUP(race)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(race)
{
	test_teardown(&self->t);
}

/* The pinned bytes of USER_UID (`users`) or of CG_TOP/race (`cgroups`). */
static uint64_t __owner_sample(struct __test_metadata *_metadata,
			       enum race_metric metric)
{
	struct mrpin_owner_row *rows;
	uint64_t v = 0;
	int n, i;

	n = metric == USER_BYTES ? mrpin_read_users(&rows) :
				   mrpin_read_cgroups(&rows);
	EXPECT_LE(0, n);
	for (i = 0; i < n; i++) {
		if (metric == USER_BYTES ? rows[i].uid == USER_UID :
		    !strcmp(rows[i].cgroup, CG_TOP "/race"))
			v = rows[i].pinned_bytes;
	}
	if (n > 0)
		free(rows);
	return v;
}

/* The variant's measure now, and each process's peak_bytes in @peak. */
static uint64_t __race_sample(struct __test_metadata *_metadata,
			      const FIXTURE_VARIANT(race) *variant,
			      struct helper *h, uint64_t *peak)
{
	const struct mrpin_proc_row *p;
	struct mrpin_proc_row *procs;
	struct mrpin_stats stats;
	uint64_t v = 0, x;
	int n, i;

	if (variant->metric == GLOBAL_BYTES) {
		EXPECT_EQ(0, mrpin_read_stats(&stats));
		return stats.pinned_bytes;
	}
	/*
	 * A user's or a cgroup's total is its own counter: the sum of two
	 * `procs` lines, read one after the other, is no instant's total.
	 */
	if (variant->metric == USER_BYTES || variant->metric == CGROUP_BYTES)
		return __owner_sample(_metadata, variant->metric);
	n = mrpin_read_procs(&procs);
	EXPECT_LE(0, n);
	if (n < 0)
		return 0;
	for (i = 0; i < 2; i++) {
		p = mrpin_find_proc(procs, n, h[i].pid);
		if (!p)
			continue;
		x = variant->metric == PROC_PINS ? p->pins : p->pinned_bytes;
		if (variant->metric == USER_BYTES ||
		    variant->metric == CGROUP_BYTES)
			v += x;
		else if (x > v)
			v = x;
		if (p->peak_bytes > *peak)
			*peak = p->peak_bytes;
	}
	free(procs);
	return v;
}

TEST_F_TIMEOUT(race, eight_threads_in_two_processes_never_overshoot_the_limit, 120)
{
	struct limits_test *t = &self->t;
	struct helper *h = t->h;
	struct helper_req q = {
		.op = HOP_RACE, .threads = RACE_THREADS, .ms = variant->ms,
		.min_pages = 1, .max_pages = variant->max_pages,
	};
	struct helper_req go = { .op = HOP_GO };
	struct helper_resp resp[2];
	struct mrpin_stats before, after;
	struct mrpin_proc_row *procs;
	const struct mrpin_proc_row *p;
	uint64_t limit, v, max_seen = 0, peak = 0, refusals = 0;
	bool done[2] = { false, false };
	int i, n, samples = 0, ndone = 0;
	double deadline;

	if (variant->cgroup[0]) {
		need_cgroup2();
		mkcg(t, CG_TOP);
		mkcg(t, CG_TOP "/race");
		mkcg(t, variant->cgroup[0]);
		mkcg(t, variant->cgroup[1]);
	}
	/*
	 * Each process holds an anchor pin throughout, so that its `procs`
	 * line, and its denials, live through the whole race.
	 */
	for (i = 0; i < 2; i++) {
		helper_start(&h[i], variant->uid, variant->cgroup[i],
			     RLIM_INFINITY);
		h_reg(&h[i], PAGE, 0);
	}
	read_stats(&before);
	limit = variant->limit;
	if (variant->metric == GLOBAL_BYTES)
		limit += before.pinned_bytes;
	set_limits(variant->rule, (unsigned long long)limit);

	/* Arm both, then let both go. */
	for (i = 0; i < 2; i++) {
		q.seed = 1 + i;
		ASSERT_EQ(0, helper_call(&h[i], &q, &resp[i]));
		ASSERT_EQ(0, resp[i].err);
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, helper_send(&h[i], &go));
	deadline = mrpin_now_s() + 90;
	while (ndone < 2) {
		v = __race_sample(_metadata, variant, h, &peak);
		if (v > max_seen)
			max_seen = v;
		samples++;
		for (i = 0; i < 2; i++) {
			if (done[i] || helper_recv(&h[i], &resp[i], 0))
				continue;
			done[i] = true;
			ndone++;
		}
		ASSERT_GT(deadline, mrpin_now_s()) {
			TH_LOG("the racing helpers did not finish");
		}
	}
	mrpin_note_logged(shared, MRPIN_LOG_BURST);
	v = __race_sample(_metadata, variant, h, &peak);
	if (v > max_seen)
		max_seen = v;
	TH_LOG("%d samples, highest %llu of limit %llu; %llu+%llu registrations, %llu+%llu refusals",
	       samples, (unsigned long long)max_seen,
	       (unsigned long long)limit, (unsigned long long)resp[0].v[0],
	       (unsigned long long)resp[1].v[0],
	       (unsigned long long)resp[0].v[1],
	       (unsigned long long)resp[1].v[1]);

	EXPECT_GE(limit, max_seen);
	if (variant->metric == PROC_BYTES) {
		EXPECT_GE(limit, peak);
	}

	n = mrpin_read_procs(&procs);
	ASSERT_LE(0, n);
	v = 0;
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, resp[i].err) {
			TH_LOG("helper %d: %s", i, strerror(resp[i].err));
		}
		/* The limit was met; when filling, once by each thread. */
		if (variant->ms) {
			EXPECT_LT(0ULL, (unsigned long long)resp[i].v[1]);
		} else {
			EXPECT_EQ((uint64_t)RACE_THREADS, resp[i].v[1]);
		}
		refusals += resp[i].v[1];
		p = mrpin_find_proc(procs, n, h[i].pid);
		EXPECT_NE(NULL, p);
		if (!p)
			continue;
		EXPECT_EQ(resp[i].v[2] + 1, p->pins);
		EXPECT_EQ(resp[i].v[3] + PAGE, p->pinned_bytes);
		EXPECT_EQ(resp[i].v[1], p->denials);
		if (variant->metric == PROC_BYTES)
			EXPECT_GE(limit, p->pinned_bytes);
		if (variant->metric == PROC_PINS)
			EXPECT_GE(limit, p->pins);
		v += p->pinned_bytes;
	}
	free(procs);
	read_stats(&after);
	EXPECT_EQ(before.denials_total + refusals, after.denials_total);
	if (variant->metric == GLOBAL_BYTES)
		EXPECT_GE(limit, after.pinned_bytes);
	if (variant->metric == USER_BYTES || variant->metric == CGROUP_BYTES) {
		/* Full: the last refusal of each thread was deserved. */
		EXPECT_GE(limit, v);
		EXPECT_LT(limit - variant->max_pages * PAGE, v);
	}
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, helper_quit(&h[i]));
}

/* Whether the events file holds any event (or cannot be read). */
static bool events_exist(void)
{
	struct events e;
	char *text;
	bool any;
	int fd;

	fd = open(EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return true;
	if (mrpin_read_available(fd, &text, NULL)) {
		close(fd);
		return true;
	}
	close(fd);
	any = events_parse(text, true, &e) || e.n || e.lost;
	free(e.ev);
	free(text);
	return any;
}

/*
 * Nothing to test without mrpin's policy or the device: skip the whole
 * program (the 6.1 harness would run a test's body after a SKIP() in its
 * setup).
 */
int main(int argc, char **argv)
{
	struct mrpin_stats stats;
	int ret;

	mrpin_require_loaded(LIMITS_FILE, "no policy in this mrpin");
	ret = mrpin_read_stats(&stats);
	if (ret)
		ksft_exit_fail_msg("%s/stats: %s\n", MRPIN_DEBUGFS,
				   strerror(-ret));
	mrpin_require_dev();
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		shared = NULL;
	/*
	 * Refusals or warnings before this program (a run just before it)
	 * may have used up the log's budget: assume they just did.
	 */
	if (events_exist())
		mrpin_note_logged(shared, MRPIN_LOG_BURST);
	return test_harness_run(argc, argv);
}
