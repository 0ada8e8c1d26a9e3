// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's policy, checked with real registrations on the RDMA device under
 * test (rxe0 unless $MRPIN_TEST_DEV says otherwise): a rule written to
 * /sys/kernel/security/mrpin/limits refuses (action=enforce) or lets through
 * with a warning (action=warn) the pin that would cross it, and allows the
 * one that fits; every refusal or warning says why in `events`, in the
 * kernel log, in `procs` (denials) and `stats`.  Each kind of owner's
 * limit holds where the kernel's own checks would not, and concurrent
 * registrations never overshoot a limit.  mrpin_events.c checks how the
 * refusals reach a reader of `events` and the mrpin_deny tracepoint.
 *
 * The pins are made by helper processes that each test forks and drives
 * over a socket (mrpin_limits.h): a helper can start in a cgroup, drop to
 * another uid (root sets its RLIMIT_MEMLOCK first), be moved to another
 * cgroup, and race with threads.  Every test starts from the default
 * policy and restores it (`reset`), and leaves no pin and no kernel
 * warning behind.
 *
 * The kernel log lines mrpin prints for refusals and warnings are
 * rate-limited: the tests that look for one space their logged events out
 * (mrpin_log_room()).
 */
#include "mrpin_limits.h"

#include <sys/stat.h>
#include <linux/capability.h>

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
	struct mrpin_events e;
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
		usage = MRPIN_ANY;
		/* 64 KiB from byte 100: 17 pages, one more than allowed. */
		over_len = 64 * KiB;
		over_off = 100;
		asked = 68 * KiB;
	}
	check_holder(h->pid, pins, bytes, 0);

	from = next_seq();
	mrpin_log_room(mrpin_budget);
	kfd = mrpin_kmsg_open();
	ASSERT_LE(0, kfd);
	err = helper_reg(h, over_len, over_off, &idx);
	if (variant->warn) {
		mrpin_note_logged(mrpin_budget, 1);
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
	EXPECT_EQ(1, mrpin_events_since(&e, from, 0, NULL, &ev));
	ASSERT_NE(NULL, ev) {
		TH_LOG("no new line in events");
	}
	check_event(ev, variant->warn ? "warn" : "deny", h->pid, uid,
		    variant->event_scope, variant->key, asked, usage, limit);
	from = ev->seq + 1;
	free(e.ev);
	check_refusal_logged(kfd, variant->warn, h->pid, uid, variant->event_scope,
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
	struct mrpin_events e;
	uint64_t caps, from;
	char *buf;

	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	ASSERT_EQ(RLIM_INFINITY, rl.rlim_cur);
	ASSERT_EQ(0, mrpin_proc_field("/proc/self/status", "CapEff", true,
				      &caps));
	ASSERT_NE(0ULL, (unsigned long long)(caps & (1ULL << CAP_IPC_LOCK))) {
		TH_LOG("no CAP_IPC_LOCK: CapEff %llx", (unsigned long long)caps);
	}
	ASSERT_EQ(0U, geteuid());

	buf = map_buf(MiB + PAGE);
	set_limits("process max_pinned=1M\n");
	do_reg(t->f.pd, buf, MiB, &mr);
	from = next_seq();
	self_reg_err(t->f.pd, buf + MiB, PAGE);
	check_holder(getpid(), 1, MiB, 1);
	read_events(&e);
	EXPECT_EQ(1, mrpin_events_since(&e, from, getpid(), NULL, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", getpid(), 0, "process", "max_pinned", PAGE,
		    MiB, MiB);
	free(e.ev);

	/* The same pin without the rule: the refusal was mrpin's. */
	set_limits("reset\n");
	do_reg(t->f.pd, buf + MiB, PAGE, &mr2);
	do_dereg(mr2);
	do_dereg(mr);
	munmap(buf, MiB + PAGE);
}

/*
 * 3. max_pinned=1% is 1% of the machine's RAM (MemTotal, within 2 MiB):
 * the process pins up to 3 MiB short of it, then 6 MiB more is refused.
 * It pins one 4 MiB buffer again and again (each registration counts in
 * full, as in VmPin): 40 MiB in a 4 GiB VM without touching 40 MiB.
 */
#define SHARE_CHUNK	(4 * MiB)
#define SHARE_MRS	256

TEST_F_TIMEOUT(limits, percentage_limit_is_that_share_of_ram, 180)
{
	struct limits_test *t = &self->t;
	const struct mrpin_event *ev;
	uint64_t ram, share, under, left, len, from;
	struct ibv_mr *mr[SHARE_MRS];
	struct mrpin_events e;
	int n = 0, i;
	char *buf;

	ASSERT_EQ(0, mrpin_proc_field("/proc/meminfo", "MemTotal", false, &ram));
	share = ram / 100;
	ASSERT_LT(8 * MiB, share);
	under = (share - 3 * MiB) & ~(PAGE - 1);
	ASSERT_GE(SHARE_MRS, (int)(under / SHARE_CHUNK) + 1);
	buf = map_buf(SHARE_CHUNK + 6 * MiB);

	set_limits("process max_pinned=1%%\n");
	for (left = under; left; left -= len) {
		len = left < SHARE_CHUNK ? left : SHARE_CHUNK;
		do_reg(t->f.pd, buf, len, &mr[n++]);
	}
	check_holder(getpid(), n, under, 0);
	from = next_seq();
	self_reg_err(t->f.pd, buf + SHARE_CHUNK, 6 * MiB);
	read_events(&e);
	EXPECT_EQ(1, mrpin_events_since(&e, from, getpid(), NULL, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", getpid(), 0, "process", "max_pinned", 6 * MiB,
		    under, ev->limit);
	EXPECT_LE(share - 2 * MiB, ev->limit);
	EXPECT_GE(share + 2 * MiB, ev->limit);
	TH_LOG("1%% of MemTotal %llu is %llu; mrpin's limit: %llu",
	       (unsigned long long)ram, (unsigned long long)share,
	       (unsigned long long)ev->limit);
	free(e.ev);
	for (i = 0; i < n; i++)
		do_dereg(mr[i]);
	munmap(buf, SHARE_CHUNK + 6 * MiB);
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
	struct mrpin_events e;
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
	EXPECT_EQ(2, mrpin_events_since(&e, from, 0, NULL, &ev));
	EXPECT_EQ(1, mrpin_events_since(&e, from, b->pid, NULL, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", b->pid, USER_UID, "uid:1000", "max_pinned",
		    512 * KiB, 768 * KiB, MiB);
	EXPECT_EQ(1, mrpin_events_since(&e, from, a->pid, NULL, &ev));
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
 * allow it, and that refusal is not mrpin's: it is told as a failure, with
 * the limit and VmPin that explain it.
 */
TEST_F(limits, rlimit_memlock_still_applies_under_a_generous_policy)
{
	struct limits_test *t = &self->t;
	struct helper *h = &t->h[0];
	struct mrpin_stats before, after;
	struct mrpin_proc_row *procs;
	const struct mrpin_proc_row *p;
	struct mrpin_event ev[2];
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
	/* The kernel's refusal, not mrpin's: told as a failure, and why. */
	EXPECT_EQ(before.failures_memlock_total + 1,
		  after.failures_memlock_total);
	EXPECT_EQ(before.failures_total + 1, after.failures_total);
	ASSERT_EQ(1, events_since(from, 0, NULL, ev, 2));
	check_event(&ev[0], "fail", h->pid, USER_UID, "process", "memlock",
		    PAGE, 256 * KiB, 256 * KiB);
	EXPECT_EQ((uint64_t)ENOMEM, ev[0].err);
	check_holder(h->pid, 1, 256 * KiB, 0);
	n = mrpin_read_procs(&procs);
	ASSERT_LE(0, n);
	p = mrpin_find_proc(procs, n, h->pid);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(256 * KiB, p->memlock_bytes);
	EXPECT_EQ((uint64_t)USER_UID, p->uid);
	EXPECT_EQ(0ULL, (unsigned long long)p->denials);
	EXPECT_EQ(1ULL, (unsigned long long)p->failures);
	free(procs);
}

/*
 * 6. A cgroup's limit holds the sum of its whole subtree, children and
 * grandchildren, and nothing outside it.
 */
/*
 * The `cgroups` row of @path: @pins pins, @bytes pinned in its subtree
 * (pages of 4 KiB: each registration here is whole pages).
 */
static void __check_cgroup(struct __test_metadata *_metadata,
			   const char *path, uint64_t pins, uint64_t bytes)
{
	const struct mrpin_owner_row *row;
	struct mrpin_owner_row *rows;
	int n;

	n = mrpin_read_cgroups(&rows);
	ASSERT_LE(0, n);
	row = mrpin_find_cgroup(rows, n, path);
	EXPECT_NE(NULL, row) {
		TH_LOG("no `cgroups` row for %s", path);
	}
	if (row) {
		EXPECT_EQ(pins, row->pins) {
			TH_LOG("%s", path);
		}
		EXPECT_EQ(bytes, row->pinned_bytes) {
			TH_LOG("%s", path);
		}
	}
	if (n > 0)
		free(rows);
}
#define check_cgroup(path, pins, bytes)	\
	__check_cgroup(_metadata, path, pins, bytes)

TEST_F(limits, cgroup_limit_holds_the_sum_of_its_descendants)
{
	struct limits_test *t = &self->t;
	struct helper *ha = &t->h[0], *hb = &t->h[1], *hd = &t->h[2];
	struct helper *out = &t->h[3];
	const struct mrpin_event *ev;
	struct mrpin_events e;
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
	/*
	 * Refused at /p, the page had been charged to /p/a/deep and /p/a
	 * first, and to /p/b: each is back to what it holds, each parent
	 * holds the sum of its children and its own, and the top the sum
	 * of all.
	 */
	check_cgroup(CG_TOP "/p/a/deep", 1, 256 * KiB);
	check_cgroup(CG_TOP "/p/a", 2, 768 * KiB);
	check_cgroup(CG_TOP "/p/b", 1, 256 * KiB);
	check_cgroup(CG_TOP "/p", 3, MiB);
	check_cgroup(CG_TOP, 4, MiB + 512 * KiB);

	read_events(&e);
	EXPECT_EQ(2, mrpin_events_since(&e, from, 0, NULL, &ev));
	EXPECT_EQ(1, mrpin_events_since(&e, from, hd->pid, NULL, &ev));
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
	struct mrpin_events e;
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

	ASSERT_EQ(0, mrpin_cg_write_procs(CG_TOP "/b", x->pid));
	ASSERT_EQ(0, mrpin_cg_of(x->pid, cg, sizeof(cg)));
	ASSERT_STREQ(CG_TOP "/b", cg);
	h_reg(x, PAGE, 0);			/* charged to /b */
	from = next_seq();
	h_reg_err(ENOMEM, y, PAGE, 0);		/* x's 1M is still /p's */
	read_events(&e);
	EXPECT_EQ(1, mrpin_events_since(&e, from, y->pid, NULL, &ev));
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
	struct mrpin_events e;
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
	EXPECT_EQ(1, mrpin_events_since(&e, from, h->pid, NULL, &ev));
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
	EXPECT_EQ(1, mrpin_events_since(&e, from, h->pid, NULL, &ev));
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
	EXPECT_EQ(1, mrpin_events_since(&e, from, h->pid, NULL, &ev));
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
 * A registration of 0 bytes inside a page pins that page: it counts
 * against max_pins and max_pinned like any other.
 */
TEST_F(limits, zero_length_registrations_count_against_the_limits)
{
	struct limits_test *t = &self->t;
	struct helper *h = &t->h[0];
	const struct mrpin_event *ev;
	struct mrpin_events e;
	uint64_t from;

	helper_start(h, HELPER_ROOT, NULL, RLIM_INFINITY);
	set_limits("process max_pins=2\n");
	h_reg(h, 0, 1);
	h_reg(h, 0, PAGE - 1);
	check_holder(h->pid, 2, 2 * PAGE, 0);
	from = next_seq();
	h_reg_err(ENOMEM, h, 0, 1);
	read_events(&e);
	EXPECT_EQ(1, mrpin_events_since(&e, from, h->pid, NULL, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", h->pid, 0, "process", "max_pins", PAGE, 2, 2);
	free(e.ev);

	set_limits("process max_pins=unlimited max_pinned=8K\n");
	from = next_seq();
	h_reg_err(ENOMEM, h, 0, 1);
	read_events(&e);
	EXPECT_EQ(1, mrpin_events_since(&e, from, h->pid, NULL, &ev));
	ASSERT_NE(NULL, ev);
	check_event(ev, "deny", h->pid, 0, "process", "max_pinned", PAGE,
		    2 * PAGE, 2 * PAGE);
	free(e.ev);
	check_holder(h->pid, 2, 2 * PAGE, 2);
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
	.rule = "global max_pinned=%llu count=registered\n",
	.metric = GLOBAL_BYTES,
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
	mrpin_note_logged(mrpin_budget, MRPIN_LOG_BURST);
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

MRPIN_TEST_MAIN(MRPIN_LIMITS_FILE, "no policy in this mrpin")
