// SPDX-License-Identifier: GPL-2.0
/*
 * Refusals, warnings and failures: the kernel log, the `events` ring and
 * the mrpin:mrpin_deny and mrpin:mrpin_fail tracepoints.
 *
 * mrpin_report() is called once per limit crossed: with the pin refused
 * (action enforce) or allowed anyway (action warn); and once per pin the
 * kernel refused (failure.c says why).  It logs one rate-limited line
 * (not for a failure the global rule keeps out of the log), fires the
 * tracepoint and appends an event to a ring of MRPIN_EVENTS entries.
 * Each event says the errno its pin got: ENOMEM for a refusal, 0 for a
 * warning, the kernel's for a failure.
 *
 * The ring.  Events get increasing sequence numbers; slot seq % MRPIN_EVENTS
 * holds event seq.  A reader remembers the next sequence number it wants:
 * events older than the ring holds are lost to it, and it is told how many
 * with a line "# lost N".  read() blocks until there is an event (like
 * trace_pipe), unless O_NONBLOCK; poll() reports readable when there is.
 * Each open starts at the oldest event still in the ring and first reads a
 * header line naming the columns.
 *
 * A comm, a cgroup path and a device name are escaped (mrpin_escape())
 * wherever they go: the log line, the tracepoint's scope, the ring's text.
 *
 * Locking: mrpin_report_lock (spinlock) protects the escaped text of the
 * report being made (the log line and the tracepoint read it under it);
 * the ring's lock is never taken inside it.  mrpin_events_lock (spinlock)
 * protects the ring and mrpin_events_next; it is never held across a copy
 * to user space.  Each open file's reader state (the line being read,
 * where in it) is its reader->lock's (a mutex, as trace_pipe's
 * iter->mutex): two threads reading one descriptor take turns, never
 * interleave within a line.  It is dropped while a blocking read waits for
 * an event.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/ratelimit.h>
#include <linux/resource.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "compat.h"
#include "mrpin.h"
#include "trace.h"

#define MRPIN_EVENTS 1024
/*
 * The longest line: a cgroup path of MRPIN_PATH_MAX - 1 bytes and a comm,
 * each byte escaped in four (\ooo), and the numbers at their widest (about
 * 250 bytes), with its newline: a line is never cut.
 */
#define MRPIN_EVENT_LINE (4 * (MRPIN_PATH_MAX + TASK_COMM_LEN) + 256)

/**
 * struct mrpin_event - one refusal, warning or failure
 * @seq:	its sequence number
 * @time_ns:	CLOCK_REALTIME, in nanoseconds
 * @pid:	the process (tgid)
 * @uid:	its uid (initial namespace)
 * @comm:	its command name
 * @v:		the limit crossed, or why the pin failed
 */
struct mrpin_event {
	u64 seq;
	u64 time_ns;
	pid_t pid;
	u32 uid;
	char comm[TASK_COMM_LEN];
	struct mrpin_violation v;
};

static struct mrpin_event *mrpin_events;
static u64 mrpin_events_next;
/* Protects mrpin_events and mrpin_events_next. */
static DEFINE_SPINLOCK(mrpin_events_lock);
static DECLARE_WAIT_QUEUE_HEAD(mrpin_events_wait);
static DEFINE_RATELIMIT_STATE(mrpin_report_rs, 5 * HZ, 10);

static const char *const mrpin_scope_names[MRPIN_NR_SCOPES] = {
	MRPIN_SCOPE_NAMES
};

static const char *const mrpin_event_key_names[MRPIN_EVENT_FAIL] = {
	MRPIN_EVENT_KEY_NAMES
};

static const char *const mrpin_fail_cause_names[MRPIN_NR_FAIL_CAUSES] = {
	MRPIN_FAIL_CAUSE_NAMES
};

/**
 * mrpin_fail_cause_name() - a failure's cause, as events and stats name it
 * @cause: the cause
 *
 * Return: its name.
 */
const char *mrpin_fail_cause_name(enum mrpin_fail_cause cause)
{
	return mrpin_fail_cause_names[cause];
}

/* The key column: the limit or rule; a failure's cause. */
static const char *mrpin_event_key(const struct mrpin_violation *v)
{
	if (v->key >= MRPIN_EVENT_FAIL)
		return mrpin_fail_cause_name(v->key - MRPIN_EVENT_FAIL);
	return mrpin_event_key_names[v->key];
}

static const char *mrpin_event_action(const struct mrpin_violation *v)
{
	return mrpin_violation_failed(v) ? "fail" : v->warn ? "warn" : "deny";
}

/* The errno the event's pin got: positive, 0 when it was allowed. */
static int mrpin_event_errno(const struct mrpin_violation *v)
{
	return mrpin_violation_failed(v) ? v->err : v->warn ? 0 : ENOMEM;
}

/* A limit in bytes, or "unlimited" (a failure's RLIMIT_MEMLOCK). */
static void mrpin_limit_text(u64 limit, char *buf, size_t len)
{
	if (limit == RLIM_INFINITY)
		strscpy(buf, "unlimited", len);
	else
		snprintf(buf, len, "%llu", limit);
}

/* "uid:1000", "cgroup:/jobs/a", "global", "process" */
static void mrpin_scope_text(const struct mrpin_violation *v, char *buf,
			     size_t len)
{
	switch (v->scope) {
	case MRPIN_SCOPE_UID:
		snprintf(buf, len, "uid:%llu", v->id);
		break;
	case MRPIN_SCOPE_CGROUP:
	case MRPIN_SCOPE_DEVICE:
		snprintf(buf, len, "%s:%s", mrpin_scope_names[v->scope],
			 v->path);
		break;
	default:
		strscpy(buf, mrpin_scope_names[v->scope], len);
	}
}

/*
 * The kernel log's and the tracepoint's text of a comm, a scope and a
 * device name, escaped (mrpin_escape()): too big for the stack.
 * mrpin_report_lock protects it.
 */
static DEFINE_SPINLOCK(mrpin_report_lock);
static struct {
	char comm[4 * TASK_COMM_LEN + 1];
	char scope[4 * (MRPIN_PATH_MAX + 8) + 1];
	char name[4 * MRPIN_PATH_MAX + 1];
} mrpin_report_text;

/* The log line of @v; @scope escaped.  Under mrpin_report_lock. */
static void mrpin_report_log(const struct mrpin_violation *v, pid_t pid,
			     u32 uid, const char *scope)
{
	const char *comm = mrpin_report_text.comm;
	const char *name = mrpin_report_text.name;
	char comm_raw[TASK_COMM_LEN], limit[24];

	lockdep_assert_held(&mrpin_report_lock);
	get_task_comm(comm_raw, current);
	mrpin_escape(mrpin_report_text.comm, comm_raw,
		     sizeof(mrpin_report_text.comm));
	mrpin_escape(mrpin_report_text.name, v->path,
		     sizeof(mrpin_report_text.name));
	switch (v->key) {
	case MRPIN_EVENT_STACK:
		pr_warn("mrpin: pid %d (%s) uid %u: %s %llu bytes of stack memory\n",
			pid, comm, uid,
			v->warn ? "registered" : "refused", v->asked);
		break;
	case MRPIN_EVENT_MR_TABLE:
		pr_warn("mrpin: device %s: %llu live pins, past the mr_table_warn mark of %llu\n",
			name, v->usage, v->limit);
		break;
	default:
		if (v->key == MRPIN_EVENT_FAIL + MRPIN_FAIL_DEVICE) {
			pr_warn("mrpin: pid %d (%s) uid %u: device %s refused a registration of %llu bytes (errno %d): %llu live pins, max_mr %llu\n",
				pid, comm, uid, name, v->asked,
				v->err, v->usage, v->limit);
			break;
		}
		if (mrpin_violation_failed(v)) {
			mrpin_limit_text(v->limit, limit, sizeof(limit));
			pr_warn("mrpin: pid %d (%s) uid %u: the kernel refused %llu bytes (errno %d): %s; VmPin %llu, RLIMIT_MEMLOCK %s\n",
				pid, comm, uid, v->asked, v->err,
				mrpin_event_key(v), v->usage, limit);
			break;
		}
		pr_warn("mrpin: pid %d (%s) uid %u: %s %llu bytes: %s %s in use %llu, limit %llu\n",
			pid, comm, uid,
			v->warn ? "over limit, allowed (warn)" : "refused",
			v->asked, scope, mrpin_event_key(v),
			v->usage, v->limit);
	}
}

/**
 * mrpin_report() - tell that a pin crossed a limit, or failed
 * @v: the limit crossed, v->warn saying whether the pin was allowed; or
 *     why the kernel refused it (mrpin_violation_failed())
 *
 * Context: process context (the registering task), may be under
 * rcu_read_lock(); does not sleep.
 */
void mrpin_report(const struct mrpin_violation *v)
{
	const char *key = mrpin_event_key(v);
	bool failed = mrpin_violation_failed(v), log, traced;
	char scope[MRPIN_PATH_MAX + 8];
	struct mrpin_event *e;
	pid_t pid = task_tgid_nr(current);
	u32 uid = from_kuid_munged(&init_user_ns, current_uid());

	/* The escaped text only for a log line or a traced denial. */
	log = !v->quiet && __ratelimit(&mrpin_report_rs);
	traced = !failed && trace_mrpin_deny_enabled();
	if (log || traced) {
		mrpin_scope_text(v, scope, sizeof(scope));
		spin_lock(&mrpin_report_lock);
		mrpin_escape(mrpin_report_text.scope, scope,
			     sizeof(mrpin_report_text.scope));
		if (log)
			mrpin_report_log(v, pid, uid, mrpin_report_text.scope);
		if (traced)
			trace_mrpin_deny(pid, mrpin_event_action(v),
					 mrpin_report_text.scope, key,
					 v->asked, v->usage, v->limit);
		spin_unlock(&mrpin_report_lock);
	}
	if (failed)
		trace_mrpin_fail(pid, key, v->err, v->asked, v->usage,
				 v->limit);

	spin_lock(&mrpin_events_lock);
	e = &mrpin_events[mrpin_events_next % MRPIN_EVENTS];
	e->seq = mrpin_events_next;
	WRITE_ONCE(mrpin_events_next, mrpin_events_next + 1);
	e->time_ns = ktime_get_real_ns();
	e->pid = pid;
	e->uid = uid;
	get_task_comm(e->comm, current);
	e->v = *v;
	spin_unlock(&mrpin_events_lock);
	wake_up_interruptible(&mrpin_events_wait);
}

/**
 * struct mrpin_events_reader - one open `events` file
 * @lock:	serialises reads (and polls) of this open file; protects
 *		every field below
 * @next:	the sequence number of the next event to read
 * @buf:	the text being read
 * @len:	bytes in @buf
 * @off:	bytes of @buf already read
 */
struct mrpin_events_reader {
	struct mutex lock;	/* protects the fields below */
	u64 next;
	char buf[MRPIN_EVENT_LINE];
	size_t len;
	size_t off;
};

static int mrpin_events_open(struct inode *inode, struct file *file)
{
	struct mrpin_events_reader *r;

	r = kzalloc_obj(*r, GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	mutex_init(&r->lock);
	spin_lock(&mrpin_events_lock);
	r->next = mrpin_events_next > MRPIN_EVENTS ?
		  mrpin_events_next - MRPIN_EVENTS : 0;
	spin_unlock(&mrpin_events_lock);
	r->len = scnprintf(r->buf, sizeof(r->buf),
			   "# seq time_ns action pid comm uid scope key asked usage limit errno\n");
	file->private_data = r;
	return nonseekable_open(inode, file);
}

static int mrpin_events_release(struct inode *inode, struct file *file)
{
	struct mrpin_events_reader *r = file->private_data;

	mutex_destroy(&r->lock);
	kfree(r);
	return 0;
}

/* Append @s to r->buf, escaped as the views escape (mrpin_escape()). */
static void mrpin_events_put(struct mrpin_events_reader *r, const char *s)
{
	lockdep_assert_held(&r->lock);
	mrpin_escape(r->buf + r->len, s, sizeof(r->buf) - r->len);
	r->len += strlen(r->buf + r->len);
}

/* Format the next line into r->buf; false when there is nothing new. */
static bool mrpin_events_fill(struct mrpin_events_reader *r)
{
	struct mrpin_event e;
	u64 oldest, lost = 0;
	char limit[24];

	lockdep_assert_held(&r->lock);
	spin_lock(&mrpin_events_lock);
	if (r->next == mrpin_events_next) {
		spin_unlock(&mrpin_events_lock);
		return false;
	}
	oldest = mrpin_events_next > MRPIN_EVENTS ?
		 mrpin_events_next - MRPIN_EVENTS : 0;
	if (r->next < oldest) {
		lost = oldest - r->next;
		r->next = oldest;
	} else {
		e = mrpin_events[r->next % MRPIN_EVENTS];
		r->next++;
	}
	spin_unlock(&mrpin_events_lock);

	r->off = 0;
	if (lost) {
		r->len = scnprintf(r->buf, sizeof(r->buf), "# lost %llu\n",
				   lost);
		return true;
	}
	r->len = scnprintf(r->buf, sizeof(r->buf), "%llu %llu %s %d ", e.seq,
			   e.time_ns, mrpin_event_action(&e.v), e.pid);
	mrpin_events_put(r, e.comm);
	r->len += scnprintf(r->buf + r->len, sizeof(r->buf) - r->len, " %u ",
			    e.uid);
	if (e.v.scope == MRPIN_SCOPE_CGROUP || e.v.scope == MRPIN_SCOPE_DEVICE) {
		r->len += scnprintf(r->buf + r->len, sizeof(r->buf) - r->len,
				    "%s:", mrpin_scope_names[e.v.scope]);
		mrpin_events_put(r, e.v.path);
	} else if (e.v.scope == MRPIN_SCOPE_UID) {
		r->len += scnprintf(r->buf + r->len, sizeof(r->buf) - r->len,
				    "uid:%llu", e.v.id);
	} else {
		mrpin_events_put(r, mrpin_scope_names[e.v.scope]);
	}
	mrpin_limit_text(e.v.limit, limit, sizeof(limit));
	r->len += scnprintf(r->buf + r->len, sizeof(r->buf) - r->len,
			    " %s %llu %llu %s %d\n",
			    mrpin_event_key(&e.v), e.v.asked,
			    e.v.usage, limit, mrpin_event_errno(&e.v));
	return true;
}

/* Wait until an event after @seen is in the ring. */
static int mrpin_events_wait_for(u64 seen)
{
	return wait_event_interruptible(mrpin_events_wait,
					READ_ONCE(mrpin_events_next) != seen);
}

static ssize_t mrpin_events_read(struct file *file, char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	struct mrpin_events_reader *r = file->private_data;
	size_t done = 0, n;
	ssize_t ret;
	u64 seen;

	if (mutex_lock_interruptible(&r->lock))
		return -ERESTARTSYS;
	while (done < count) {
		if (r->off == r->len && !mrpin_events_fill(r)) {
			if (done)
				break;
			if (file->f_flags & O_NONBLOCK) {
				ret = -EAGAIN;
				goto out_unlock;
			}
			/*
			 * Wait for a new event, without the lock: another
			 * reader of this file may take it first, and this
			 * one then waits again.
			 */
			seen = r->next;
			mutex_unlock(&r->lock);
			ret = mrpin_events_wait_for(seen);
			if (ret)
				return ret;
			if (mutex_lock_interruptible(&r->lock))
				return -ERESTARTSYS;
			continue;
		}
		n = min(count - done, r->len - r->off);
		if (copy_to_user(ubuf + done, r->buf + r->off, n)) {
			ret = done ? done : -EFAULT;
			goto out_unlock;
		}
		r->off += n;
		done += n;
	}
	ret = done;
out_unlock:
	mutex_unlock(&r->lock);
	return ret;
}

static __poll_t mrpin_events_poll(struct file *file, poll_table *wait)
{
	struct mrpin_events_reader *r = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &mrpin_events_wait, wait);
	mutex_lock(&r->lock);
	spin_lock(&mrpin_events_lock);
	if (r->off < r->len || r->next != mrpin_events_next)
		mask = EPOLLIN | EPOLLRDNORM;
	spin_unlock(&mrpin_events_lock);
	mutex_unlock(&r->lock);
	return mask;
}

const struct file_operations mrpin_events_fops = {
	.owner = THIS_MODULE,
	.open = mrpin_events_open,
	.read = mrpin_events_read,
	.poll = mrpin_events_poll,
	.release = mrpin_events_release,
};

/**
 * mrpin_events_init() - allocate the ring
 *
 * Context: process context.
 * Return: 0 or -ENOMEM.
 */
int mrpin_events_init(void)
{
	mrpin_events = vzalloc(array_size(MRPIN_EVENTS, sizeof(*mrpin_events)));
	return mrpin_events ? 0 : -ENOMEM;
}

/**
 * mrpin_events_exit() - free the ring
 *
 * Context: process context, after the debugfs files are gone.
 */
void mrpin_events_exit(void)
{
	vfree(mrpin_events);
}
