/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of mrpin's policy share (mrpin_limits.c, the rules;
 * mrpin_events.c, how a refusal is reported): helper processes that pin as
 * another uid or in another cgroup, the fixture that kills them and removes
 * the test's cgroups, and the checks of a refusal's log line and of a
 * holder's line in `procs`.
 */
#ifndef __MRPIN_LIMITS_H
#define __MRPIN_LIMITS_H

#include "mrpin_test.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#define TRACING		"/sys/kernel/tracing"
#define CG_TOP		"/mrpin_t"
#define USER_UID	1000
#define OTHER_UID	1001

/*
 * The kernel log (new lines of @kfd) says why process @pid was refused
 * (or warned): "mrpin: pid <pid> (<comm>) uid <uid>: refused <asked>
 * bytes: <scope> <key> in use <usage>, limit <limit>".
 */
static inline void __check_refusal_logged(struct __test_metadata *_metadata,
					  int kfd, bool warn, pid_t pid,
					  uint64_t uid, const char *scope,
					  const char *key, uint64_t asked,
					  uint64_t usage, uint64_t limit)
{
	char comm[64], line[1024], suffix[64];

	ASSERT_EQ(0, mrpin_comm(pid, comm, sizeof(comm)));
	snprintf(line, sizeof(line),
		 "mrpin: pid %d (%s) uid %llu: %s %llu bytes: %s %s in use ",
		 pid, comm, (unsigned long long)uid,
		 warn ? "over limit, allowed (warn)" : "refused",
		 (unsigned long long)asked, scope, key);
	snprintf(suffix, sizeof(suffix), ", limit %llu",
		 (unsigned long long)limit);
	if (usage != MRPIN_ANY)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 "%llu%s", (unsigned long long)usage, suffix);
	check_log_has(kfd, line, usage == MRPIN_ANY ? suffix : NULL);
}
#define check_refusal_logged(kfd, warn, pid, uid, scope, key, asked, usage, \
			     limit)						\
	__check_refusal_logged(_metadata, kfd, warn, pid, uid, scope, key,  \
			       asked, usage, limit)

/*
 * Process @pid, which pins only through RDMA, holds @pins pins of @bytes
 * and was refused @denials pins while it held some: its `procs` line and
 * its VmPin say so.
 */
static inline void __check_holder(struct __test_metadata *_metadata, pid_t pid,
				  uint64_t pins, uint64_t bytes,
				  uint64_t denials)
{
	struct mrpin_proc_row p;
	uint64_t vmpin;

	proc_row(pid, &p);
	EXPECT_EQ(pins, p.pins);
	EXPECT_EQ(bytes, p.pinned_bytes);
	EXPECT_EQ(denials, p.denials);
	ASSERT_EQ(0, mrpin_vmpin(pid, &vmpin));
	EXPECT_EQ(bytes, vmpin);
}
#define check_holder(pid, pins, bytes, denials)				\
	__check_holder(_metadata, pid, pins, bytes, denials)

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

static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline void race_drop(struct race_thread *rt)
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
static inline void *race_loop(void *arg)
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

static inline void child_reply(int sock, const struct helper_resp *resp);

/*
 * Arm the racing threads, say so, and let them go when the test says go
 * (so that both helpers start together): the threads' totals in *@resp.
 */
static inline void child_race(int sock, struct ibv_pd *pd,
			      const struct helper_req *q,
			      struct race_thread *rts, struct helper_resp *resp)
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

static inline void child_reply(int sock, const struct helper_resp *resp)
{
	if (send(sock, resp, sizeof(*resp), MSG_NOSIGNAL) != sizeof(*resp))
		_exit(1);
}

/* The helper process: never returns. */
static inline void helper_main(int sock, const struct helper_cfg *cfg)
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
	if (cfg->cgroup && (resp.err = mrpin_cg_write_procs(cfg->cgroup, getpid())))
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

static inline int helper_send(struct helper *h, const struct helper_req *q)
{
	if (send(h->sock, q, sizeof(*q), MSG_NOSIGNAL) != sizeof(*q))
		return errno ?: EPIPE;
	return 0;
}

/* The next answer of helper @h within @ms: 0, ETIMEDOUT or EPIPE. */
static inline int helper_recv(struct helper *h, struct helper_resp *resp,
			      int ms)
{
	struct pollfd pfd = { h->sock, POLLIN, 0 };
	ssize_t n;

	if (poll(&pfd, 1, ms) != 1)
		return ETIMEDOUT;
	n = recv(h->sock, resp, sizeof(*resp), 0);
	return n == sizeof(*resp) ? 0 : EPIPE;
}

static inline int helper_call(struct helper *h, const struct helper_req *q,
			      struct helper_resp *resp)
{
	int err = helper_send(h, q);

	return err ?: helper_recv(h, resp, 60000);
}

/* Fork helper @h; 0, or an errno with the failed stage in *@stage. */
static inline int helper_spawn(struct helper *h, const struct helper_cfg *cfg,
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
static inline void helper_kill(struct helper *h)
{
	if (h->pid <= 0)
		return;
	kill(h->pid, SIGKILL);
	waitpid(h->pid, NULL, 0);
	close(h->sock);
	h->pid = 0;
}

/* Let helper @h deregister everything and exit; 0 if it did. */
static inline int helper_quit(struct helper *h)
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
static inline int helper_reg(struct helper *h, uint64_t len, uint64_t off,
			     int *idx)
{
	struct helper_req q = { .op = HOP_REG, .len = len, .off = off };
	struct helper_resp resp;
	int err;

	err = helper_call(h, &q, &resp);
	if (err)
		return err;
	if (resp.err == ENOMEM)
		mrpin_note_logged(mrpin_budget, 1);
	*idx = resp.idx;
	return resp.err;
}

static inline int helper_dereg(struct helper *h, int idx)
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
	struct mrpin_fixture f;
	struct helper h[MAX_HELPERS];
	char cgroups[MAX_CGROUPS][64];	/* made by the test: removed */
	int ncgroups;
	bool tracing;
};

/* Make cgroup @cg (relative to the cgroup2 mount), removed at the end. */
static inline void __mkcg(struct __test_metadata *_metadata,
			  struct limits_test *t, const char *cg)
{
	char path[PATH_MAX];

	ASSERT_GT(MAX_CGROUPS, t->ncgroups);
	snprintf(path, sizeof(path), MRPIN_CG_MNT "%s", cg);
	ASSERT_EQ(0, mkdir(path, 0755)) {
		TH_LOG("mkdir %s: %s", path, strerror(errno));
	}
	snprintf(t->cgroups[t->ncgroups++], sizeof(t->cgroups[0]), "%s", cg);
}
#define mkcg(t, cg) __mkcg(_metadata, t, cg)

#define need_cgroup2()							\
	do {								\
		if (!mrpin_cgroup2_mounted())				\
			SKIP(return, "%s is not a cgroup2 mount",	\
			     MRPIN_CG_MNT);				\
	} while (0)

/* Register in this process; on ENOMEM note the log line it makes. */
#define self_reg_err(pd, addr, len)					\
	({								\
		do_reg_err(ENOMEM, pd, addr, len);			\
		mrpin_note_logged(mrpin_budget, 1);			\
	})

#define test_setup(t) fixture_setup(&(t)->f)

/*
 * The lines tracepoint mrpin:@event left in the trace buffer: their
 * number, and in *@matching how many hold @pat; each is logged.
 */
static inline int __trace_lines(struct __test_metadata *_metadata,
				const char *event, const char *pat,
				int *matching)
{
	char *trace, *line, *next, tag[64];
	int n = 0;

	*matching = 0;
	snprintf(tag, sizeof(tag), "%s:", event);
	if (mrpin_read_file(TRACING "/trace", &trace))
		return -1;
	for (line = trace; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (*line == '#' || !strstr(line, tag))
			continue;
		n++;
		*matching += strstr(line, pat) != NULL;
		TH_LOG("trace: %s", line);
	}
	free(trace);
	return n;
}
#define trace_lines(event, pat, matching)				\
	__trace_lines(_metadata, event, pat, matching)

/* Only EXPECT_*() without handler blocks here (see mrpin_test.h). */
static inline void __test_teardown(struct __test_metadata *_metadata,
				   struct limits_test *t)
{
	int i;

	for (i = 0; i < MAX_HELPERS; i++)
		helper_kill(&t->h[i]);
	if (t->tracing) {
		mrpin_write_file(TRACING "/events/mrpin/mrpin_deny/enable", "0");
		mrpin_write_file(TRACING "/events/mrpin/mrpin_fail/enable", "0");
		mrpin_write_file(TRACING "/trace", "");
	}
	fixture_close(&t->f);
	for (i = t->ncgroups - 1; i >= 0; i--)
		EXPECT_EQ(0, mrpin_cg_rmdir(t->cgroups[i]));
	fixture_check(&t->f);
}
#define test_teardown(t) __test_teardown(_metadata, t)

#endif /* __MRPIN_LIMITS_H */
