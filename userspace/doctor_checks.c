// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl doctor: the checks.
 *
 * Each check reads the tables of struct doctor and adds a finding for each
 * registration mistake it sees, with its evidence and one line of advice:
 *
 *   high    the global limit nearly used up; an MR table past the module's
 *           mr_table_warn mark (who holds it, and whether it is full);
 *           buffers registered on a stack; refusals; a registration
 *           charged and in flight for IN_FLIGHT_MS or more; registrations the
 *           kernel (or the device's driver) failed, by process and cause;
 *           with callsites=on, a call site that keeps registering in a
 *           process that never deregistered (a growing leak)
 *   medium  MRs left to the kernel's cleanup (exit, close); processes that
 *           pin mostly 4 KiB pages; registration churn; oversized pins;
 *           limits crossed in warn mode; an MR table mark crossed before;
 *           failures by cause that the events no longer show
 *   low     starts not aligned to a page, large pins not aligned to 2 MiB;
 *           with callsites=on, where each process registered its oldest
 *           and its biggest live pins (the leak suspects)
 *   info    processes that register the same memory several times (their
 *           registered bytes at least DUPLICATE_TIMES their distinct bytes):
 *           VmPin and RLIMIT_MEMLOCK count each registration; call sites
 *           that hold a stable set of MRs (a registration cache)
 *
 * The thresholds are the defines below (mrpinctl(8) documents them).  The
 * checks only read the tables, except check_pins(), which sorts the pins
 * by process.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

/* The thresholds. */
#define SMALL_PAGES_MIN_BYTES	(64ULL << 20)	/* 4k-pages: a process pinning this */
#define SMALL_PAGES_PCT		50		/* ... with this much on 4 KiB pages */
#define CHURN_MIN_RELEASES	1000		/* churn: this many pins gone */
#define CHURN_PCT		50		/* ... this many of them under 1 ms */
#define CHURN_FAST_BUCKETS	10		/* life_hist 0-9: under 1024 us */
#define GLOBAL_PCT		80		/* of the global max_pinned */
#define IN_FLIGHT_MS		10000		/* in-flight: charged this long */
#define RAM_PCT			80		/* of RAM, without a global limit */
#define MR_TABLE_PCT		80		/* when the module has no mr_table_warn */
#define PAGE_4K			4096ULL
#define HUGE_2M			(2ULL << 20)
#define DUPLICATE_TIMES		2		/* registered / distinct bytes */
#define MAX_DEVICES		64		/* told apart per process */
#define GROWTH_MIN_PINS		100		/* growing-leak, stable-set: a site's pins */
#define GROWING_NEWEST_DIV	4		/* growing: newest age <= oldest / 4 */
#define STABLE_NEWEST_DIV	2		/* stable: newest age >= oldest / 2 */

#define MAX_CALLERS	3
#define MAX_OLDEST	3		/* mr-table: the holder's oldest MRs */

#define PROC(d, i) TBL_ROW(&(d)->procs, struct proc_row, i)
#define PIN(d, i) TBL_ROW(&(d)->pins, struct pin_row, i)
#define DEV(d, i) TBL_ROW(&(d)->devs, struct dev_row, i)
#define LEAK(d, i) TBL_ROW(&(d)->leaks, struct leak_row, i)
#define SITE(d, i) TBL_ROW(&(d)->sites, struct site_row, i)
#define EVENT(d, i) TBL_ROW(&(d)->events, struct event, i)

/* --- the global limit, and RAM --- */

/*
 * The global limit nearly used up, by what it counts (count=distinct: the
 * distinct bytes, where the module gives them); without a limit, RAM
 * nearly full of pinned memory (distinct: RAM holds it once).
 */
static void check_global(struct doctor *d)
{
	const struct rule *g = &d->policy.global;
	uint64_t ram = d->stats.ram_bytes, max;
	uint64_t pinned = rule_usage(g, &d->stats);
	uint64_t in_ram = stats_ram_pinned(&d->stats);
	bool warn = g->val[K_ACTION], over;
	bool distinct = d->stats.distinct_known;
	const char *mode = warn ? "warn" : "enforce";
	const char *counted = rule_counts_distinct(g) && distinct ?
			      " (distinct)" : "";
	struct finding *f;

	if (!rule_max_pinned(g, ram, &max))
		return;		/* N% of a RAM the snapshot does not tell */
	over = pinned > max;
	if (max == UNLIMITED) {
		if (!pct_at_least(in_ram, ram, RAM_PCT))
			return;
		f = finding_new(d, SEV_HIGH, FK_GLOBAL_LIMIT, in_ram);
		ev_add(f, "pinned_bytes", EV_BYTES, d->stats.pinned_bytes);
		if (distinct)
			ev_add(f, "distinct_bytes", EV_BYTES, in_ram);
		ev_add(f, "ram_bytes", EV_BYTES, ram);
		ev_pct(f, "ram_percent", pct_exact(in_ram, ram));
		f->message = strfmt("pinned memory%s is %llu%% of RAM (%s), with no global limit",
				    distinct ? " (distinct)" : "",
				    (unsigned long long)pct_floor(in_ram, ram),
				    bytes_str(in_ram));
		f->advice = "set one: mrpinctl limit set global max_pinned=50%";
		return;
	}
	if (!pct_at_least(pinned, max, GLOBAL_PCT))
		return;
	f = finding_new(d, SEV_HIGH, FK_GLOBAL_LIMIT, pinned);
	ev_add(f, "pinned_bytes", EV_BYTES, d->stats.pinned_bytes);
	if (distinct)
		ev_add(f, "distinct_bytes", EV_BYTES, d->stats.distinct_bytes);
	ev_add(f, "global_max_pinned", EV_BYTES, max);
	if (g->is_pct)
		ev_add(f, "global_max_pinned_percent", EV_COUNT, g->pct);
	ev_pct(f, "limit_percent", pct_exact(pinned, max));
	ev_str(f, "action", mode);
	if (g->set & (1U << K_COUNT))
		ev_str(f, "count", rule_counts_distinct(g) ? "distinct" :
							      "registered");
	if (g->is_pct) {
		ev_add(f, "ram_bytes", EV_BYTES, ram);
		ev_pct(f, "ram_percent", pct_exact(in_ram, ram));
		f->message = strfmt("pinned memory%s is %llu%% of RAM (global limit %u%% in %s mode)",
				    counted,
				    (unsigned long long)pct_floor(pinned, ram),
				    g->pct, mode);
	} else {
		f->message = strfmt("pinned memory%s is %s, %llu%% of the global limit of %s (%s mode)",
				    counted, bytes_str(pinned),
				    (unsigned long long)pct_floor(pinned, max),
				    bytes_str(max), mode);
	}
	if (over && warn)
		f->advice = "only warn mode lets registrations past the limit: pin less or raise global max_pinned";
	else if (over)
		f->advice = "registrations are refused now: pin less or raise global max_pinned";
	else if (warn)
		f->advice = "pin less or raise global max_pinned before the limit is enforced";
	else
		f->advice = "registrations will be refused at the limit: pin less or raise global max_pinned";
}

/* --- events, as the checks read them --- */

static bool is_event(const struct event *e)
{
	return e->seq != EVENT_LOST;
}

/* The kernel's pin failed (key: the cause), not a limit. */
static bool is_fail(const struct event *e)
{
	return is_event(e) && !strcmp(e->action, "fail");
}

static bool event_key(const struct event *e, const char *key)
{
	return is_event(e) && !strcmp(e->key, key);
}

/* "rxe0" of scope "device:rxe0"; any other scope as it is. */
static const char *scope_device(const char *scope)
{
	return strncmp(scope, "device:", 7) ? scope : scope + 7;
}

/*
 * The registrations the driver of @device refused (cause device), the
 * last of them in *last (when not NULL).
 */
static uint64_t device_refusals(const struct doctor *d, const char *device,
				const struct event **last)
{
	const char *key = cause_names[MRPIN_FAIL_DEVICE];
	const struct event *e;
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < d->events.nrows; i++) {
		e = EVENT(d, i);
		if (!is_fail(e) || strcmp(e->key, key) ||
		    strncmp(e->scope, "device:", 7) ||
		    strcmp(e->scope + 7, device))
			continue;
		n++;
		if (last)
			*last = e;
	}
	return n;
}

/* --- the devices' MR tables --- */

/* The mr_table_warn mark, in percent of max_mr (0: off). */
static uint64_t mr_table_pct(const struct doctor *d)
{
	const struct rule *g = &d->policy.global;

	if (g->set & (1U << K_MR_TABLE_WARN))
		return g->val[K_MR_TABLE_WARN];
	return MR_TABLE_PCT;
}

static bool device_over_mark(const struct doctor *d, const char *name)
{
	uint64_t pct = mr_table_pct(d);
	const struct dev_row *dev;
	size_t i;

	for (i = 0; i < d->devs.nrows; i++) {
		dev = DEV(d, i);
		if (!strcmp(dev->device, name))
			return pct && dev->max_mr &&
			       pct_at_least(dev->pins, dev->max_mr,
					    (unsigned int)pct);
	}
	return false;
}

/* Who fills a device's MR table: the process with the most live pins. */
struct holder {
	uint64_t pid;
	const char *comm;
	uint64_t pins;
	struct mr_ref oldest[MAX_OLDEST];	/* the oldest first */
	unsigned int noldest;
};

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Pin @p among the holder's oldest, if it is: older, or as old and first. */
static void holder_oldest(struct holder *h, const struct pin_row *p)
{
	unsigned int k;

	for (k = 0; k < h->noldest; k++)
		if (p->age_ms > h->oldest[k].age_ms ||
		    (p->age_ms == h->oldest[k].age_ms && p->id < h->oldest[k].id))
			break;
	if (k == MAX_OLDEST)
		return;
	if (h->noldest < MAX_OLDEST)
		h->noldest++;
	memmove(&h->oldest[k + 1], &h->oldest[k],
		(h->noldest - 1 - k) * sizeof(h->oldest[0]));
	h->oldest[k] = (struct mr_ref){
		.id = p->id, .age_ms = p->age_ms, .start = p->start,
		.length = p->length, .caller = p->caller,
	};
}

/*
 * The holder of @device's MR table, from the live pins: the pid with the
 * most pins on it (the lowest pid of those with as many), and its oldest
 * pins there.  Sorting the pids of the device's pins keeps this
 * O(n log n) for a table of half a million MRs.  False: no pin on it.
 */
static bool device_holder(const struct doctor *d, const char *device,
			  struct holder *h)
{
	uint64_t *pids = xmalloc((d->pins.nrows + 1) * sizeof(*pids));
	const struct pin_row *p;
	size_t i, j, n = 0;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < d->pins.nrows; i++)
		if (!strcmp(PIN(d, i)->device, device))
			pids[n++] = PIN(d, i)->pid;
	if (n)
		qsort(pids, n, sizeof(*pids), u64_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && pids[j] == pids[i]; j++)
			;
		if (j - i > h->pins) {
			h->pins = j - i;
			h->pid = pids[i];
		}
	}
	free(pids);
	if (!h->pins)
		return false;
	for (i = 0; i < d->pins.nrows; i++) {
		p = PIN(d, i);
		if (p->pid != h->pid || strcmp(p->device, device))
			continue;
		if (!h->comm)
			h->comm = p->comm;
		holder_oldest(h, p);
	}
	return true;
}

/*
 * A device at or past its mark: who holds the table and its oldest MRs;
 * full when the driver refused a registration, or at max_mr.
 */
static void device_finding(struct doctor *d, const struct dev_row *dev,
			   uint64_t pct)
{
	uint64_t refused = device_refusals(d, dev->device, NULL);
	bool full = refused || dev->pins >= dev->max_mr;
	char refusals[64] = "";
	struct holder h;
	struct finding *f;
	bool held;
	char *who;

	held = device_holder(d, dev->device, &h);
	f = finding_new(d, SEV_HIGH, FK_MR_TABLE, dev->pins);
	f->subj = SUBJ_DEVICE;
	f->device = dev->device;
	ev_add(f, "pins", EV_COUNT, dev->pins);
	ev_add(f, "max_mr", EV_COUNT, dev->max_mr);
	ev_pct(f, "mr_use_percent", pct_exact(dev->pins, dev->max_mr));
	ev_add(f, "mr_table_warn_percent", EV_COUNT, pct);
	ev_add(f, "pinned_bytes", EV_BYTES, dev->pinned_bytes);
	if (held) {
		ev_add(f, "holder_pid", EV_COUNT, h.pid);
		ev_str(f, "holder_comm", h.comm);
		ev_add(f, "holder_pins", EV_COUNT, h.pins);
		ev_add(f, "oldest_age_ms", EV_MS, h.oldest[0].age_ms);
		ev_add(f, "oldest", EV_MRS, h.noldest);
		f->mrs = xmalloc(sizeof(h.oldest));
		memcpy(f->mrs, h.oldest, sizeof(h.oldest));
		f->nmrs = h.noldest;
		who = strfmt(": pid %llu (%s) holds %s, the oldest for %s",
			     (unsigned long long)h.pid, h.comm,
			     count_str(h.pins), ms_str(h.oldest[0].age_ms));
	} else {
		who = xstrdup("");
	}
	ev_add(f, "refused", EV_COUNT, refused);
	if (!full) {
		f->message = strfmt("%s: %llu%% of max_mr in use (%s of %s, mr_table_warn=%llu%%)%s",
				    dev->device,
				    (unsigned long long)pct_floor(dev->pins, dev->max_mr),
				    count_str(dev->pins), count_str(dev->max_mr),
				    (unsigned long long)pct, who);
		f->advice = "deregister the MRs you no longer use, or register fewer, larger buffers";
		free(who);
		return;
	}
	if (refused)
		snprintf(refusals, sizeof(refusals), ", %s registration%s refused",
			 count_str(refused), plural(refused));
	f->message = strfmt("%s: the MR table is full (%s of %s%s)%s",
			    dev->device, count_str(dev->pins),
			    count_str(dev->max_mr), refusals, who);
	free(who);
	if (held)
		f->advice_buf = strfmt("registrations on %s fail until MRs are freed: pid %llu (%s) must deregister the MRs it no longer uses (ibv_dereg_mr), or be restarted; register fewer, larger buffers",
				       dev->device, (unsigned long long)h.pid,
				       h.comm);
	else
		f->advice_buf = strfmt("registrations on %s fail until MRs are freed: deregister the MRs no longer used (ibv_dereg_mr), or restart the processes that hold them; register fewer, larger buffers",
				       dev->device);
	f->advice = f->advice_buf;
}

static void check_devices(struct doctor *d)
{
	uint64_t pct = mr_table_pct(d);
	const struct dev_row *dev;
	size_t i;

	for (i = 0; pct && i < d->devs.nrows; i++) {
		dev = DEV(d, i);
		if (device_over_mark(d, dev->device))
			device_finding(d, dev, pct);
	}
}

/* --- events: stack registrations, refusals, limits crossed --- */

/* Has an event before @i the same group as event @i (@same)? */
static bool seen_before(const struct doctor *d, size_t i,
			bool (*same)(const struct event *, const struct event *))
{
	size_t j;

	for (j = 0; j < i; j++)
		if (same(EVENT(d, j), EVENT(d, i)))
			return true;
	return false;
}

/* "global", "process", "uid 1000", "cgroup /jobs": an event's scope. */
static char *scope_text(const char *scope)
{
	const char *colon = strchr(scope, ':');

	if (colon)
		return strfmt("%.*s %s", (int)(colon - scope), scope,
			      colon + 1);
	return xstrdup(scope);
}

/* Is @key a limit of bytes (else a count, or a newer module's key)? */
static bool key_in_bytes(const char *key)
{
	return !strcmp(key, "max_pinned") || !strcmp(key, "max_pin_size");
}

/* A limit in its key's unit. */
static const char *limit_str(const char *key, uint64_t v)
{
	return key_in_bytes(key) ? bytes_str(v) : count_str(v);
}

static bool same_mr_table(const struct event *a, const struct event *b)
{
	return event_key(a, "mr_table") && event_key(b, "mr_table") &&
	       !strcmp(a->scope, b->scope);
}

/*
 * A device's mark crossed before, when it is not over it now; and the
 * registrations its driver refused, if any.
 */
static void check_mr_table_events(struct doctor *d)
{
	uint64_t count, last, usage, refused;
	const struct event *e, *x;
	char refusals[96];
	struct finding *f;
	size_t i, j;

	for (i = 0; i < d->events.nrows; i++) {
		e = EVENT(d, i);
		if (!event_key(e, "mr_table") || strncmp(e->scope, "device:", 7) ||
		    seen_before(d, i, same_mr_table) ||
		    device_over_mark(d, e->scope + 7))
			continue;
		count = last = usage = 0;
		for (j = i; j < d->events.nrows; j++) {
			if (!same_mr_table(e, EVENT(d, j)))
				continue;
			count++;
			last = EVENT(d, j)->time_ns;
			usage = EVENT(d, j)->usage;
		}
		f = finding_new(d, SEV_MEDIUM, FK_MR_TABLE, usage);
		f->subj = SUBJ_DEVICE;
		f->device = e->scope + 7;
		ev_add(f, "events", EV_COUNT, count);
		ev_add(f, "pins", EV_COUNT, usage);
		ev_add(f, "mark", EV_COUNT, e->limit);
		ev_add(f, "last_time_ns", EV_TIME, last);
		refusals[0] = '\0';
		refused = device_refusals(d, f->device, &x);
		if (refused) {
			ev_add(f, "refused", EV_COUNT, refused);
			ev_add(f, "last_refused_time_ns", EV_TIME, x->time_ns);
			snprintf(refusals, sizeof(refusals),
				 ", and it refused %s registration%s, the last at %s",
				 count_str(refused), plural(refused),
				 time_str(x->time_ns));
		}
		f->message = strfmt("%s: the MR table crossed its mr_table_warn mark %s time%s, the last at %s with %s pins%s",
				    f->device, count_str(count), plural(count),
				    time_str(last), count_str(usage), refusals);
		f->advice = "deregister the MRs you no longer use, or register fewer, larger buffers";
	}
}

static bool same_limit(const struct event *a, const struct event *b)
{
	return is_event(a) && is_event(b) && a->pid == b->pid &&
	       !strcmp(a->action, b->action) && !strcmp(a->comm, b->comm) &&
	       !strcmp(a->scope, b->scope) && !strcmp(a->key, b->key);
}

/*
 * Whether only the global rule bounds who pins: the process rule has no
 * max_pinned or max_pins, and no uid or cgroup rule stands.  One process
 * or user can then take the whole global budget and have every other
 * user's registrations refused.
 */
static bool only_global_bounds(const struct doctor *d)
{
	const struct rule *p = &d->policy.process;

	return d->policy.known && !d->policy.nrules && !p->is_pct &&
	       p->val[K_MAX_PINNED] == UNLIMITED &&
	       p->val[K_MAX_PINS] == UNLIMITED;
}

#define ONLY_GLOBAL_ADVICE "only the global rule bounds who pins, so one process or user can take all of it and have every other registration refused: give each a share below it (mrpinctl limit set process max_pinned=SIZE, or uid and cgroup rules)"

static const char *limit_advice(const char *key)
{
	if (!strcmp(key, "max_pins"))
		return "register fewer, larger buffers, or raise the limit";
	if (!strcmp(key, "max_pin_size"))
		return "register smaller buffers, or raise the limit";
	return "pin less, or raise the limit";
}

/* Refusals (deny) and limits crossed in warn mode, by process and limit. */
static void check_limit_events(struct doctor *d)
{
	uint64_t count, largest, last;
	const struct event *e, *x;
	struct finding *f;
	char *scope;
	bool deny;
	size_t i, j;

	for (i = 0; i < d->events.nrows; i++) {
		e = EVENT(d, i);
		/* Only refusals and warnings: not another action. */
		if (!is_event(e) || (strcmp(e->action, "deny") &&
				     strcmp(e->action, "warn")) ||
		    event_key(e, "stack") ||
		    event_key(e, "mr_table") || seen_before(d, i, same_limit))
			continue;
		count = largest = last = 0;
		x = e;
		for (j = i; j < d->events.nrows; j++) {
			if (!same_limit(e, EVENT(d, j)))
				continue;
			x = EVENT(d, j);
			count++;
			if (x->asked > largest)
				largest = x->asked;
			last = x->time_ns;
		}
		deny = !strcmp(e->action, "deny");
		f = finding_new(d, deny ? SEV_HIGH : SEV_MEDIUM,
				deny ? FK_DENIED : FK_OVER_LIMIT, count);
		subject_process(f, e->pid, e->comm);
		ev_str(f, "scope", e->scope);
		ev_str(f, "key", e->key);
		ev_add(f, "events", EV_COUNT, count);
		ev_add(f, "largest_asked", EV_BYTES, largest);
		ev_add(f, key_in_bytes(e->key) ? "limit_bytes" : "limit",
		       key_in_bytes(e->key) ? EV_BYTES : EV_COUNT, x->limit);
		ev_add(f, "last_time_ns", EV_TIME, last);
		scope = scope_text(e->scope);
		if (deny)
			f->message = strfmt("pid %llu (%s) was refused %s registration%s (up to %s) by the %s limit %s=%s, the last at %s",
					    (unsigned long long)e->pid, e->comm,
					    count_str(count), plural(count),
					    bytes_str(largest), scope,
					    e->key, limit_str(e->key, x->limit),
					    time_str(last));
		else
			f->message = strfmt("pid %llu (%s) went past the %s limit %s=%s %s time%s (allowed in warn mode), the last at %s",
					    (unsigned long long)e->pid, e->comm,
					    scope, e->key,
					    limit_str(e->key, x->limit),
					    count_str(count), plural(count),
					    time_str(last));
		free(scope);
		f->advice = limit_advice(e->key);
		if (!strcmp(e->scope, "global") && strcmp(e->key, "max_pin_size") &&
		    only_global_bounds(d))
			f->advice = ONLY_GLOBAL_ADVICE;
	}
}

#define IN_FLIGHT_ADVICE "unblock what it waits on (a FUSE or network file whose server does not answer, a userfaultfd, a frozen file system): its charge holds until then"

#define IN_FLIGHT_PEER_ADVICE "unblock what it waits on (the peer memory client, the GPU's driver; or, for memory mapped into the range meanwhile, a FUSE or network file whose server does not answer): until then it holds an MR, and host pages mapped there meanwhile are pinned uncharged"

/*
 * A registration charged and in flight for IN_FLIGHT_MS or more (a module
 * with the state column): its pin waits in the kernel, its charge held.
 * One taken for peer memory (a module with the peer column) is charged no
 * host bytes: its length is told instead.
 */
static void check_in_flight(struct doctor *d)
{
	const struct pin_row *p;
	struct finding *f;
	size_t i;

	for (i = 0; i < d->pins.nrows; i++) {
		p = PIN(d, i);
		if (!p->state || strcmp(p->state, "pinning") ||
		    p->age_ms < IN_FLIGHT_MS)
			continue;
		f = finding_new(d, SEV_HIGH, FK_IN_FLIGHT,
				p->peer ? p->length : p->pinned_bytes);
		subject_process(f, p->pid, p->comm);
		ev_add(f, "pin_id", EV_COUNT, p->id);
		ev_add(f, "pinned_bytes", EV_BYTES, p->pinned_bytes);
		if (p->peer)
			ev_add(f, "length_bytes", EV_BYTES, p->length);
		ev_add(f, "age_ms", EV_MS, p->age_ms);
		ev_str(f, "device", p->device);
		if (p->peer) {
			f->message = strfmt("pid %llu (%s) has a registration of %s taken for peer memory (no host bytes charged) in flight for %s: its pin waits in the kernel",
					    (unsigned long long)p->pid, p->comm,
					    bytes_str(p->length),
					    ms_str(p->age_ms));
			f->advice = IN_FLIGHT_PEER_ADVICE;
			continue;
		}
		f->message = strfmt("pid %llu (%s) has a registration of %s charged and in flight for %s: its pin waits in the kernel",
				    (unsigned long long)p->pid, p->comm,
				    bytes_str(p->pinned_bytes),
				    ms_str(p->age_ms));
		f->advice = only_global_bounds(d) ?
			IN_FLIGHT_ADVICE "; " ONLY_GLOBAL_ADVICE :
			IN_FLIGHT_ADVICE ", against its process's, user's and cgroup's limits";
	}
}

static const struct proc_row *find_proc(const struct doctor *d, uint64_t pid)
{
	size_t i;

	for (i = 0; i < d->procs.nrows; i++)
		if (PROC(d, i)->pid == pid)
			return PROC(d, i);
	return NULL;
}

/* --- registrations the kernel failed --- */

/*
 * Per cause: why, for the failures the events no longer show; what the
 * program registered, for the causes that are its bug (NULL: the others
 * are told otherwise); the advice.  Every cause of mrpin_abi.h has its
 * entry: the array's size is checked against NR_CAUSES below, and a cause
 * without words (or one a newer module has) gets those of unknown_cause.
 */
struct cause_words {
	const char *why;
	const char *what;
	const char *advice;
};

static const struct cause_words causes[] = {
	[MRPIN_FAIL_MEMLOCK] = {
		"RLIMIT_MEMLOCK was in the way", NULL,
		"raise RLIMIT_MEMLOCK where the program is started (systemd LimitMEMLOCK=, ulimit -l, a container's memlock ulimit such as docker run --ulimit memlock=-1: containerd's default is 8 MiB), and rather than leave it unlimited, bound the program with a mrpin rule (mrpinctl limit set uid USER max_pinned=SIZE), which binds root too" },
	[MRPIN_FAIL_UNMAPPED] = {
		"part of the range was not mapped", "memory it does not map",
		"a bug in the program or its library: register only memory that is mapped, and keep it mapped until the MR is deregistered" },
	[MRPIN_FAIL_READONLY] = {
		"a read-only mapping was registered for writing",
		"read-only memory with a write access",
		"a bug in the program or its library: register read-only memory without write access (IBV_ACCESS_LOCAL_WRITE, REMOTE_WRITE, REMOTE_ATOMIC), or map it writable" },
	[MRPIN_FAIL_IOMEM] = {
		"the range was device memory",
		"device memory (I/O memory or raw page frames)",
		"a bug in the program or its library: device memory is not user memory to pin (a device's memory goes through dma-buf: ibv_reg_dmabuf_mr)" },
	[MRPIN_FAIL_FAULT] = {
		"pages could not be faulted in",
		"memory whose pages could not be faulted in",
		"a bug in the program or its library: it registered a mapping that cannot be populated (a file mapping past the end of its file, hugetlbfs memory with no huge page left)" },
	[MRPIN_FAIL_INVALID] = {
		"the range was empty or overflowed", "an empty or overflowing range",
		"a bug in the program or its library: check the address and length it passes to ibv_reg_mr" },
	[MRPIN_FAIL_NOMEM] = {
		"the kernel was short of memory", NULL,
		"free memory on this machine (see /proc/meminfo), or register less at a time" },
	[MRPIN_FAIL_OTHER] = {
		"of another error", NULL,
		"an error mrpin does not tell apart: look for the driver's reason in the kernel log at that time" },
	[MRPIN_FAIL_DEVICE] = {
		"the device's driver refused them (its MR table full, or its own limits)",
		NULL,
		"the device's driver refused it, most often because its MR table (max_mr) is full: deregister the MRs no longer used (ibv_dereg_mr), or register fewer, larger buffers; see the mr-table finding and mrpinctl dev" },
};

static_assert(ARRAY_SIZE(causes) == NR_CAUSES,
	      "a cause of mrpin_abi.h without its words in causes[]");

static const struct cause_words unknown_cause = {
	"of a cause this mrpinctl does not know", NULL,
	"a cause this mrpinctl does not know (a newer module's): update mrpinctl, and look for the driver's reason in the kernel log at that time" };

/* The words of cause @c (-1: a cause this tool does not know). */
static const struct cause_words *cause_words(int c)
{
	if (c < 0 || c >= NR_CAUSES || !causes[c].why || !causes[c].advice)
		return &unknown_cause;
	return &causes[c];
}

/* A fail event's cause; -1: one this tool does not know. */
static int fail_cause(const struct event *e)
{
	return cause_index(e->key);
}

static bool same_failure(const struct event *a, const struct event *b)
{
	return is_fail(a) && is_fail(b) && a->pid == b->pid &&
	       !strcmp(a->comm, b->comm) && !strcmp(a->key, b->key) &&
	       !strcmp(a->scope, b->scope);
}

/* A failure of cause device: the driver refused, the MR table named. */
static void device_failure(struct finding *f, const struct event *e,
			   const struct event *x, uint64_t count)
{
	char with[48] = "";

	ev_str(f, "device", scope_device(e->scope));
	ev_add(f, "device_pins", EV_COUNT, x->usage);
	ev_add(f, "max_mr", EV_COUNT_LIMIT, x->limit);
	ev_add(f, "last_time_ns", EV_TIME, x->time_ns);
	if (x->errnum != ERRNO_UNKNOWN)
		snprintf(with, sizeof(with), " (%s)", errno_str(x->errnum));
	f->message = strfmt("pid %llu (%s): %s refused %s registration%s%s with %s of max_mr %s live, the last at %s",
			    (unsigned long long)e->pid, e->comm,
			    scope_device(e->scope), count_str(count),
			    plural(count), with, count_str(x->usage),
			    count_str(x->limit), time_str(x->time_ns));
}

/* The failures of event @i's process and cause; *told counts them. */
static void failure_finding(struct doctor *d, size_t i, uint64_t *told)
{
	const struct event *e = EVENT(d, i), *x = e;
	unsigned long long pid = e->pid;
	uint64_t count = 0, largest = 0;
	const struct cause_words *w;
	const struct proc_row *p;
	struct finding *f;
	char upto[48] = "", with[48] = "";
	int c = fail_cause(e);
	size_t j;

	for (j = i; j < d->events.nrows; j++) {
		if (!same_failure(e, EVENT(d, j)))
			continue;
		x = EVENT(d, j);
		count++;
		if (x->asked > largest)
			largest = x->asked;
	}
	if (c >= 0)
		told[c] += count;
	w = cause_words(c);
	f = finding_new(d, SEV_HIGH, FK_FAILED, count);
	subject_process(f, e->pid, e->comm);
	ev_str(f, "cause", e->key);
	if (x->errnum != ERRNO_UNKNOWN)
		ev_add(f, "errno", EV_COUNT, x->errnum);
	ev_add(f, "events", EV_COUNT, count);
	ev_add(f, "asked_bytes", EV_BYTES, x->asked);
	ev_add(f, "largest_asked", EV_BYTES, largest);
	if (c == MRPIN_FAIL_DEVICE) {
		device_failure(f, e, x, count);
	} else if (c >= 0) {
		ev_add(f, "vm_pinned_bytes", EV_BYTES, x->usage);
		ev_add(f, "memlock_bytes", EV_BYTES_LIMIT, x->limit);
		ev_add(f, "last_time_ns", EV_TIME, x->time_ns);
	} else {
		/* A newer module's cause: its numbers as they are. */
		ev_str(f, "scope", e->scope);
		ev_add(f, "usage", EV_COUNT, x->usage);
		ev_add(f, "limit", EV_COUNT_LIMIT, x->limit);
		ev_add(f, "last_time_ns", EV_TIME, x->time_ns);
	}
	p = find_proc(d, e->pid);
	if (p && !strcmp(p->comm, e->comm) && tbl_has(&d->procs, "failures"))
		ev_add(f, "process_failures", EV_COUNT, p->failures);
	f->advice = w->advice;
	if (f->message)
		return;
	if (largest)
		snprintf(upto, sizeof(upto), " (up to %s)", bytes_str(largest));
	if (x->errnum != ERRNO_UNKNOWN)
		snprintf(with, sizeof(with), " with %s", errno_str(x->errnum));
	if (c < 0)
		f->message = strfmt("pid %llu (%s): %s registration%s failed (cause '%s', which this mrpinctl does not know)%s%s, the last at %s",
				    pid, e->comm, count_str(count),
				    plural(count), e->key, with, upto,
				    time_str(x->time_ns));
	else if (w->what)
		f->message = strfmt("pid %llu (%s) registered %s: %s registration%s failed%s%s, the last at %s",
				    pid, e->comm, w->what,
				    count_str(count), plural(count), with, upto,
				    time_str(x->time_ns));
	else if (c == MRPIN_FAIL_MEMLOCK)
		f->message = strfmt("pid %llu (%s) could not register %s: RLIMIT_MEMLOCK is %s and VmPin was %s (%s failure%s, the last at %s)",
				    pid, e->comm, bytes_str(x->asked),
				    limit_bytes_str(x->limit),
				    bytes_str(x->usage), count_str(count),
				    plural(count), time_str(x->time_ns));
	else if (c == MRPIN_FAIL_NOMEM)
		f->message = strfmt("pid %llu (%s) could not register %s: the kernel was short of memory (%s failure%s, the last at %s)",
				    pid, e->comm, bytes_str(x->asked),
				    count_str(count), plural(count),
				    time_str(x->time_ns));
	else
		f->message = strfmt("pid %llu (%s) could not register %s: the kernel failed it%s (%s failure%s, the last at %s)",
				    pid, e->comm, bytes_str(x->asked), with,
				    count_str(count), plural(count),
				    time_str(x->time_ns));
}

/*
 * The registrations the kernel failed: by process and cause from the
 * events; then, by cause, those the module counted (stats) that the events
 * no longer show.
 */
static void check_failures(struct doctor *d)
{
	uint64_t told[NR_CAUSES] = { 0 }, more;
	struct finding *f;
	size_t i;
	int c;

	for (i = 0; i < d->events.nrows; i++)
		if (is_fail(EVENT(d, i)) && !seen_before(d, i, same_failure))
			failure_finding(d, i, told);
	for (c = 0; c < NR_CAUSES; c++) {
		if (d->stats.failures[c] <= told[c])
			continue;
		more = d->stats.failures[c] - told[c];
		f = finding_new(d, SEV_MEDIUM, FK_FAILED, more);
		ev_str(f, "cause", cause_names[c]);
		ev_add(f, "failures", EV_COUNT, more);
		ev_add(f, "failures_total", EV_COUNT, d->stats.failures[c]);
		f->message = strfmt("%s more registration%s failed since mrpin was loaded because %s (%s), before the events the module keeps",
				    count_str(more), plural(more),
				    cause_words(c)->why, cause_names[c]);
		f->advice = cause_words(c)->advice;
	}
}

/* --- stack buffers --- */

/* The stack events of @pid: registered (warn), refused (deny). */
static void stack_events(const struct doctor *d, uint64_t pid,
			 uint64_t *warned, uint64_t *denied, uint64_t *last)
{
	const struct event *e;
	size_t i;

	*warned = *denied = *last = 0;
	for (i = 0; i < d->events.nrows; i++) {
		e = EVENT(d, i);
		if (!event_key(e, "stack") || e->pid != pid)
			continue;
		if (!strcmp(e->action, "deny"))
			(*denied)++;
		else
			(*warned)++;
		*last = e->time_ns;
	}
}

static void stack_finding(struct doctor *d, uint64_t pid, const char *comm,
			  uint64_t registered)
{
	uint64_t warned, refused, last, live = 0, live_bytes = 0;
	char callers[MAX_CALLERS * 40] = "", with[sizeof(callers) + 4] = "";
	char when[48] = "";
	unsigned int ncallers = 0;
	const struct pin_row *p;
	struct finding *f;
	size_t i;

	stack_events(d, pid, &warned, &refused, &last);
	if (!registered)
		registered = warned;
	for (i = 0; i < d->pins.nrows; i++) {
		p = PIN(d, i);
		if (p->pid != pid || !p->stack)
			continue;
		live++;
		live_bytes += p->pinned_bytes;
		if (ncallers == MAX_CALLERS || strstr(callers, p->caller))
			continue;
		snprintf(callers + strlen(callers),
			 sizeof(callers) - strlen(callers), "%s%s",
			 ncallers ? ", " : "", p->caller);
		ncallers++;
	}
	if (*callers)
		snprintf(with, sizeof(with), " (%s)", callers);
	/* A process that holds no pins now: when it did it. */
	if (last && !find_proc(d, pid))
		snprintf(when, sizeof(when), ", the last at %s",
			 time_str(last));
	f = finding_new(d, SEV_HIGH, FK_STACK, registered + refused);
	subject_process(f, pid, comm);
	ev_add(f, "stack_pins", EV_COUNT, registered);
	ev_add(f, "refused", EV_COUNT, refused);
	ev_add(f, "live_stack_pins", EV_COUNT, live);
	ev_add(f, "live_stack_bytes", EV_BYTES, live_bytes);
	if (*callers)
		ev_str(f, "callers", callers);
	if (last)
		ev_add(f, "last_time_ns", EV_TIME, last);
	if (registered && refused)
		f->message = strfmt("pid %llu (%s) registered %s buffer%s on its stack%s and was refused %s more (stack=deny)%s",
				    (unsigned long long)pid, comm,
				    count_str(registered), plural(registered),
				    with, count_str(refused), when);
	else if (registered)
		f->message = strfmt("pid %llu (%s) registered %s buffer%s on its stack%s%s",
				    (unsigned long long)pid, comm,
				    count_str(registered), plural(registered),
				    with, when);
	else
		f->message = strfmt("pid %llu (%s) was refused %s registration%s of its stack (stack=deny)%s",
				    (unsigned long long)pid, comm,
				    count_str(refused), plural(refused), when);
	f->advice = "use heap or mmap memory";
}

static bool same_stack_pid(const struct event *a, const struct event *b)
{
	return event_key(a, "stack") && event_key(b, "stack") &&
	       a->pid == b->pid;
}

static void check_stack(struct doctor *d)
{
	uint64_t told = 0, warned, denied, last;
	const struct proc_row *p;
	const struct event *e;
	struct finding *f;
	size_t i;

	for (i = 0; i < d->procs.nrows; i++) {
		p = PROC(d, i);
		stack_events(d, p->pid, &warned, &denied, &last);
		if (!p->stack_pins && !denied)
			continue;
		stack_finding(d, p->pid, p->comm, p->stack_pins);
		told += p->stack_pins;
	}
	/* Processes that hold no pins now: from the events. */
	for (i = 0; i < d->events.nrows; i++) {
		e = EVENT(d, i);
		if (!event_key(e, "stack") || find_proc(d, e->pid) ||
		    seen_before(d, i, same_stack_pid))
			continue;
		stack_events(d, e->pid, &warned, &denied, &last);
		stack_finding(d, e->pid, e->comm, warned);
		told += warned;
	}
	/* And those the events ring no longer holds. */
	if (d->stats.stack_pins_total <= told)
		return;
	warned = d->stats.stack_pins_total - told;
	f = finding_new(d, SEV_MEDIUM, FK_STACK, warned);
	ev_add(f, "stack_pins", EV_COUNT, warned);
	ev_add(f, "stack_pins_total", EV_COUNT, d->stats.stack_pins_total);
	f->message = strfmt("%s more buffer%s registered on a stack since mrpin was loaded, by processes that hold no pins now",
			    count_str(warned), warned == 1 ? " was" : "s were");
	f->advice = "use heap or mmap memory";
}

/* --- MRs left to the kernel's cleanup --- */

static void check_leaks(struct doctor *d)
{
	const struct leak_row *l;
	struct finding *f;
	char who[64];
	const char *name;
	size_t i, j, same;

	for (i = 0; i < d->leaks.nrows; i++) {
		l = LEAK(d, i);
		if (!l->count)
			continue;
		for (j = same = 0; j < d->leaks.nrows; j++)
			same += !strcmp(LEAK(d, j)->comm, l->comm);
		name = l->uid < UINT32_MAX ? user_name((uint32_t)l->uid) : NULL;
		if (same < 2)
			snprintf(who, sizeof(who), "'%s'", l->comm);
		else if (name)
			snprintf(who, sizeof(who), "'%s' of %s", l->comm, name);
		else
			snprintf(who, sizeof(who), "'%s' of uid %llu", l->comm,
				 (unsigned long long)l->uid);
		f = finding_new(d, SEV_MEDIUM, FK_LEAK_EXIT, l->bytes);
		f->subj = SUBJ_PROGRAM;
		f->comm = l->comm;
		f->uid = l->uid;
		ev_add(f, "count", EV_COUNT, l->count);
		ev_add(f, "bytes", EV_BYTES, l->bytes);
		ev_add(f, "last_time_ns", EV_TIME, l->last_time_ns);
		f->message = strfmt("%s left %s MR%s (%s) to be cleaned up at exit or close since mrpin was loaded, the last at %s",
				    who, count_str(l->count), plural(l->count),
				    bytes_str(l->bytes), time_str(l->last_time_ns));
		f->advice = "deregister on every path";
	}
}

/* --- per process: page sizes, churn --- */

static void check_small_pages(struct doctor *d)
{
	const struct proc_row *p;
	struct finding *f;
	size_t i;

	for (i = 0; i < d->procs.nrows; i++) {
		p = PROC(d, i);
		if (p->pinned_bytes < SMALL_PAGES_MIN_BYTES ||
		    !pct_at_least(p->bytes_4k, p->pinned_bytes, SMALL_PAGES_PCT))
			continue;
		f = finding_new(d, SEV_MEDIUM, FK_SMALL_PAGES, p->bytes_4k);
		subject_process(f, p->pid, p->comm);
		ev_add(f, "pinned_bytes", EV_BYTES, p->pinned_bytes);
		ev_add(f, "bytes_4k", EV_BYTES, p->bytes_4k);
		ev_add(f, "bytes_2m", EV_BYTES, p->bytes_2m);
		ev_add(f, "bytes_1g", EV_BYTES, p->bytes_1g);
		ev_pct(f, "percent_4k", pct_exact(p->bytes_4k, p->pinned_bytes));
		f->message = strfmt("pid %llu (%s) pins %llu%% of its %s on 4 KiB pages",
				    (unsigned long long)p->pid, p->comm,
				    (unsigned long long)pct_floor(p->bytes_4k, p->pinned_bytes),
				    bytes_str(p->pinned_bytes));
		f->advice = "back it with 2 MiB huge pages (madvise MADV_HUGEPAGE, or hugetlbfs)";
	}
}

/* life_hist: comma-separated counts; false if it does not parse. */
static bool parse_hist(const char *s, uint64_t *released, uint64_t *fast)
{
	unsigned int n = 0;
	const char *end;
	uint64_t v;

	*released = *fast = 0;
	for (;;) {
		if (!parse_u64(s, &end, &v) || v > UINT64_MAX - *released)
			return false;
		*released += v;
		if (n++ < CHURN_FAST_BUCKETS)
			*fast += v;
		if (!*end)
			return n > CHURN_FAST_BUCKETS;
		if (*end != ',')
			return false;
		s = end + 1;
	}
}

static int check_churn(struct doctor *d)
{
	uint64_t released, fast;
	const struct proc_row *p;
	struct finding *f;
	char rate[64] = "";
	size_t i;

	for (i = 0; i < d->procs.nrows; i++) {
		p = PROC(d, i);
		if (!parse_hist(p->life_hist, &released, &fast)) {
			pr_err("%s: pid %llu: column 'life_hist': expected comma-separated counts, found '%s'",
			       d->procs.path, (unsigned long long)p->pid,
			       p->life_hist);
			return EXIT_FAIL;
		}
		if (released < CHURN_MIN_RELEASES ||
		    !pct_at_least(fast, released, CHURN_PCT))
			continue;
		f = finding_new(d, SEV_MEDIUM, FK_CHURN, fast);
		subject_process(f, p->pid, p->comm);
		ev_add(f, "released", EV_COUNT, released);
		ev_add(f, "under_1ms", EV_COUNT, fast);
		ev_pct(f, "under_1ms_percent", pct_exact(fast, released));
		ev_add(f, "registrations", EV_COUNT, p->registrations);
		ev_add(f, "reg_per_s", EV_COUNT, p->reg_per_s);
		if (p->reg_per_s)
			snprintf(rate, sizeof(rate), ", %s registrations/s now",
				 count_str(p->reg_per_s));
		else
			rate[0] = '\0';
		f->message = strfmt("pid %llu (%s): %llu%% of pins live under 1 ms (%s of %s released%s)",
				    (unsigned long long)p->pid, p->comm,
				    (unsigned long long)pct_floor(fast, released),
				    count_str(fast), count_str(released), rate);
		f->advice = "use a registration cache";
	}
	return 0;
}

/* --- per process, from the live pins: size and alignment --- */

static int pin_cmp(const void *a, const void *b)
{
	const struct pin_row *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

struct pin_sums {
	uint64_t count;
	uint64_t length;
	uint64_t pinned;
	uint64_t largest;
};

static void pin_add(struct pin_sums *s, const struct pin_row *p)
{
	s->count++;
	s->length += p->length;
	s->pinned += p->pinned_bytes;
	if (p->pinned_bytes > s->largest)
		s->largest = p->pinned_bytes;
}

static void pin_findings(struct doctor *d, const struct pin_row *p,
			 const struct pin_sums *big,
			 const struct pin_sums *unaligned,
			 const struct pin_sums *unaligned_2m)
{
	const struct rule *g = &d->policy.global;
	char oversize[48] = "", val[32];
	struct finding *f;

	if (big->count) {
		if (g->set & (1U << K_OVERSIZE)) {
			rule_value(g, K_OVERSIZE, val, sizeof(val));
			snprintf(oversize, sizeof(oversize), " (oversize=%s)",
				 val);
		}
		f = finding_new(d, SEV_MEDIUM, FK_OVERSIZED, big->pinned);
		subject_process(f, p->pid, p->comm);
		ev_add(f, "count", EV_COUNT, big->count);
		ev_add(f, "pinned_bytes", EV_BYTES, big->pinned);
		ev_add(f, "largest_bytes", EV_BYTES, big->largest);
		if (g->set & (1U << K_OVERSIZE))
			ev_add(f, "oversize", EV_BYTES, g->val[K_OVERSIZE]);
		f->message = strfmt("pid %llu (%s) holds %s oversized registration%s%s: %s, the largest %s",
				    (unsigned long long)p->pid, p->comm,
				    count_str(big->count), plural(big->count),
				    oversize, bytes_str(big->pinned),
				    bytes_str(big->largest));
		f->advice = "register only the buffers the device uses";
	}
	if (unaligned->count) {
		f = finding_new(d, SEV_LOW, FK_MISALIGNED, unaligned->count);
		subject_process(f, p->pid, p->comm);
		ev_add(f, "count", EV_COUNT, unaligned->count);
		ev_add(f, "length_bytes", EV_BYTES, unaligned->length);
		ev_add(f, "pinned_bytes", EV_BYTES, unaligned->pinned);
		f->message = strfmt("pid %llu (%s): %s registration%s start%s inside a page (%s registered, %s pinned)",
				    (unsigned long long)p->pid, p->comm,
				    count_str(unaligned->count),
				    plural(unaligned->count),
				    unaligned->count == 1 ? "s" : "",
				    bytes_str(unaligned->length),
				    bytes_str(unaligned->pinned));
		f->advice = "align buffers to 4 KiB (posix_memalign or mmap)";
	}
	if (unaligned_2m->count) {
		f = finding_new(d, SEV_LOW, FK_MISALIGNED_2M,
				unaligned_2m->pinned);
		subject_process(f, p->pid, p->comm);
		ev_add(f, "count", EV_COUNT, unaligned_2m->count);
		ev_add(f, "pinned_bytes", EV_BYTES, unaligned_2m->pinned);
		f->message = strfmt("pid %llu (%s): %s registration%s of 2 MiB or more %s not 2 MiB-aligned (%s)",
				    (unsigned long long)p->pid, p->comm,
				    count_str(unaligned_2m->count),
				    plural(unaligned_2m->count),
				    unaligned_2m->count == 1 ? "is" : "are",
				    bytes_str(unaligned_2m->pinned));
		f->advice = "align large buffers to 2 MiB so that huge pages can back them";
	}
}

static void check_pins(struct doctor *d)
{
	struct pin_sums big, unaligned, unaligned_2m;
	const struct pin_row *p;
	size_t i, j;

	if (d->pins.nrows)
		qsort(d->pins.rows, d->pins.nrows, sizeof(struct pin_row),
		      pin_cmp);
	for (i = 0; i < d->pins.nrows; i = j) {
		memset(&big, 0, sizeof(big));
		memset(&unaligned, 0, sizeof(unaligned));
		memset(&unaligned_2m, 0, sizeof(unaligned_2m));
		for (j = i; j < d->pins.nrows && PIN(d, j)->pid == PIN(d, i)->pid;
		     j++) {
			p = PIN(d, j);
			/*
			 * Peer memory (a GPU's) is no host memory: oversize=
			 * is not about it, though a registration charged as
			 * host memory before its peer client served it was
			 * flagged.  It and an ODP registration pin no host
			 * page to misalign.
			 */
			if (p->peer)
				continue;
			if (p->oversized)
				pin_add(&big, p);
			if (p->odp)
				continue;
			if (p->align < PAGE_4K)
				pin_add(&unaligned, p);
			if (p->length >= HUGE_2M && p->align < HUGE_2M)
				pin_add(&unaligned_2m, p);
		}
		pin_findings(d, PIN(d, i), &big, &unaligned, &unaligned_2m);
	}
}

/* --- call sites --- */

/*
 * @row's call site, symbolized, into f->site (its frames in the JSON
 * evidence); how the message names it (to free): the caller, or the raw
 * frames and why they are not symbolized.
 */
static char *site_text(struct finding *f, const struct proc_maps *m,
		       const struct site_row *row)
{
	f->site = site_resolve(m, row->frames);
	if (!f->site->why)
		return frame_text(&f->site->frames[f->site->caller]);
	return strfmt("%s (not symbolized: %s)", row->frames, f->site->why);
}

static void site_finding(struct doctor *d, const struct proc_maps *m,
			 const struct site_row *row, const char *which)
{
	struct finding *f;
	char *where;

	f = finding_new(d, SEV_LOW, FK_LEAK_SUSPECT, row->bytes);
	subject_process(f, row->pid, row->comm);
	ev_str(f, "which", which);
	ev_add(f, "pins", EV_COUNT, row->pins);
	ev_add(f, "bytes", EV_BYTES, row->bytes);
	ev_add(f, "oldest_age_ms", EV_MS, row->oldest_age_ms);
	where = site_text(f, m, row);
	f->message = strfmt("pid %llu (%s): its %s live pins (%s pin%s, %s, the oldest %s old) were registered from %s",
			    (unsigned long long)row->pid, row->comm, which,
			    count_str(row->pins), plural(row->pins),
			    bytes_str(row->bytes), ms_str(row->oldest_age_ms),
			    where);
	free(where);
	f->advice = "deregister them once they are no longer used";
}

/* Per process, the call sites of its oldest and of its biggest pins. */
static void check_callsites(struct doctor *d)
{
	const struct site_row *row, *oldest, *biggest;
	struct proc_maps *m;
	size_t i, j;

	for (i = 0; i < d->sites.nrows; i++) {
		row = SITE(d, i);
		for (j = 0; j < i && SITE(d, j)->pid != row->pid; j++)
			;
		if (j < i)
			continue;
		oldest = biggest = row;
		for (j = i + 1; j < d->sites.nrows; j++) {
			row = SITE(d, j);
			if (row->pid != oldest->pid)
				continue;
			if (row->oldest_age_ms > oldest->oldest_age_ms ||
			    (row->oldest_age_ms == oldest->oldest_age_ms &&
			     row->bytes > oldest->bytes))
				oldest = row;
			if (row->bytes > biggest->bytes ||
			    (row->bytes == biggest->bytes &&
			     row->oldest_age_ms > biggest->oldest_age_ms))
				biggest = row;
		}
		m = maps_open(oldest->pid, oldest->comm);
		if (oldest == biggest) {
			site_finding(d, m, oldest, "oldest and biggest");
		} else {
			site_finding(d, m, oldest, "oldest");
			site_finding(d, m, biggest, "biggest");
		}
		maps_close(m);
	}
}

/*
 * A call site that keeps registering in a process that never
 * deregistered an MR: a live leak, growing.
 */
static void growing_finding(struct doctor *d, const struct site_row *row)
{
	uint64_t span = row->oldest_age_ms - row->newest_age_ms;
	char growth[96] = ", all within a millisecond";
	struct proc_maps *m;
	struct finding *f;
	double rate = 0;
	char *where;

	f = finding_new(d, SEV_HIGH, FK_GROWING_LEAK, row->pins);
	subject_process(f, row->pid, row->comm);
	ev_add(f, "pins", EV_COUNT, row->pins);
	ev_add(f, "bytes", EV_BYTES, row->bytes);
	if (span) {
		rate = (double)(row->pins - 1) * 1000 / (double)span;
		ev_rate(f, "rate_per_s", rate);
	}
	ev_add(f, "oldest_age_ms", EV_MS, row->oldest_age_ms);
	ev_add(f, "newest_age_ms", EV_MS, row->newest_age_ms);
	ev_add(f, "deregistrations", EV_COUNT, 0);
	m = maps_open(row->pid, row->comm);
	where = site_text(f, m, row);
	maps_close(m);
	if (span && rate >= 1)
		snprintf(growth, sizeof(growth), ", %.1f new a second for %s",
			 rate, ms_str(span));
	else if (span)
		snprintf(growth, sizeof(growth), ", one new every %s for %s",
			 ms_str(span / (row->pins - 1)), ms_str(span));
	f->message = strfmt("pid %llu (%s) leaks MRs from %s: %s live, none ever deregistered%s",
			    (unsigned long long)row->pid, row->comm, where,
			    count_str(row->pins), growth);
	free(where);
	f->advice = "deregister each MR with ibv_dereg_mr once it is done with it: until then every one holds an entry of the device's MR table (max_mr) and its pinned memory";
}

/* A call site whose MRs were all registered long ago: a cache's. */
static void stable_finding(struct doctor *d, const struct site_row *row,
			   const struct proc_row *p)
{
	struct proc_maps *m;
	struct finding *f;
	char *where;

	f = finding_new(d, SEV_INFO, FK_STABLE_SET, row->pins);
	subject_process(f, row->pid, row->comm);
	ev_add(f, "pins", EV_COUNT, row->pins);
	ev_add(f, "bytes", EV_BYTES, row->bytes);
	ev_add(f, "oldest_age_ms", EV_MS, row->oldest_age_ms);
	ev_add(f, "newest_age_ms", EV_MS, row->newest_age_ms);
	if (p)
		ev_add(f, "deregistrations", EV_COUNT, p->deregistrations);
	m = maps_open(row->pid, row->comm);
	where = site_text(f, m, row);
	maps_close(m);
	f->message = strfmt("pid %llu (%s) holds a stable set of %s MRs from %s, none new for %s (a registration cache)",
			    (unsigned long long)row->pid, row->comm,
			    count_str(row->pins), where,
			    ms_str(row->newest_age_ms));
	free(where);
	f->advice = "no fix needed for a registration cache: it reuses its MRs (they hold entries of the device's MR table all the same)";
}

/*
 * The call sites of at least GROWTH_MIN_PINS live pins (callsites=on):
 * one that still registers (its newest pin at most 1/GROWING_NEWEST_DIV
 * as old as its oldest) in a process that never deregistered an MR (all
 * it registered is live or was released by the kernel's cleanup) is a
 * growing leak; one whose newest pin is at least 1/STABLE_NEWEST_DIV as
 * old as its oldest is a stable set.  Only with the ages of the newest
 * pins (newer modules); the deregistrations are procs' own column, or on
 * older modules what registrations, pins and cleanup_releases leave.
 */
static void check_growth(struct doctor *d)
{
	bool counted = tbl_has(&d->procs, "deregistrations");
	bool dereg = tbl_has(&d->procs, "cleanup_releases");
	const struct proc_row *p, *known;
	struct proc_row derived;
	const struct site_row *row;
	size_t i;

	if (!tbl_has(&d->sites, "newest_age_ms"))
		return;
	for (i = 0; i < d->sites.nrows; i++) {
		row = SITE(d, i);
		/* A newest pin older than the oldest: no age to judge by. */
		if (row->pins < GROWTH_MIN_PINS ||
		    row->newest_age_ms > row->oldest_age_ms)
			continue;
		p = find_proc(d, row->pid);
		known = counted ? p : NULL;
		/*
		 * Older modules: registrations - pins - cleanup_releases, read
		 * apart (a registration under way makes it off by one).
		 */
		if (p && !counted && dereg && p->registrations >= p->pins &&
		    p->registrations - p->pins >= p->cleanup_releases) {
			derived = *p;
			derived.deregistrations = p->registrations - p->pins -
						  p->cleanup_releases;
			known = &derived;
		}
		if (known && !known->deregistrations &&
		    row->newest_age_ms <= row->oldest_age_ms / GROWING_NEWEST_DIV)
			growing_finding(d, row);
		else if (row->newest_age_ms >= row->oldest_age_ms -
					       row->oldest_age_ms / STABLE_NEWEST_DIV)
			stable_finding(d, row, known);
	}
}

/* --- memory registered several times --- */

/* The devices that @pid's live pins are on. */
static unsigned int proc_devices(const struct doctor *d, uint64_t pid)
{
	const char *seen[MAX_DEVICES];
	unsigned int n = 0, j;
	const struct pin_row *p;
	size_t i;

	for (i = 0; i < d->pins.nrows && n < MAX_DEVICES; i++) {
		p = PIN(d, i);
		if (p->pid != pid)
			continue;
		for (j = 0; j < n && strcmp(seen[j], p->device); j++)
			;
		if (j == n)
			seen[n++] = p->device;
	}
	return n;
}

/*
 * A process whose registrations count at least DUPLICATE_TIMES the memory
 * they pin: what it registers several times (on several devices, or in
 * overlapping MRs) is charged to VmPin and RLIMIT_MEMLOCK each time.
 * Not a mistake, but RLIMIT_MEMLOCK must allow it; only a module that
 * gives the distinct bytes tells.  Its peer memory (a GPU's) is in neither
 * side, but ib_core's peer path (NVIDIA OFED's) charges it to VmPin too:
 * RLIMIT_MEMLOCK must allow that as well.
 */
static void duplicate_finding(struct doctor *d, const struct proc_row *p)
{
	unsigned int devices = proc_devices(d, p->pid);
	char on[48] = "", peer[64] = "", with_peer[96] = "";
	struct finding *f;

	f = finding_new(d, SEV_INFO, FK_DUPLICATE,
			p->pinned_bytes - p->distinct_bytes);
	subject_process(f, p->pid, p->comm);
	ev_add(f, "pinned_bytes", EV_BYTES, p->pinned_bytes);
	ev_add(f, "distinct_bytes", EV_BYTES, p->distinct_bytes);
	if (p->peer_bytes)
		ev_add(f, "peer_bytes", EV_BYTES, p->peer_bytes);
	ev_add(f, "vm_pinned_bytes", EV_BYTES, p->vm_pinned_bytes);
	ev_add(f, "memlock_bytes", EV_BYTES_LIMIT, p->memlock_bytes);
	ev_add(f, "devices", EV_COUNT, devices);
	if (devices > 1)
		snprintf(on, sizeof(on), " on %u devices", devices);
	if (p->peer_bytes) {
		snprintf(peer, sizeof(peer), " and %s of peer memory",
			 bytes_str(p->peer_bytes));
		snprintf(with_peer, sizeof(with_peer),
			 " (its %s of peer memory included: ib_core's peer path charges it too)",
			 bytes_str(p->peer_bytes));
	}
	f->message = strfmt("pid %llu (%s) registers the same memory several times%s: VmPin and RLIMIT_MEMLOCK count %s%s, %s is pinned",
			    (unsigned long long)p->pid, p->comm, on,
			    bytes_str(p->pinned_bytes), peer,
			    bytes_str(p->distinct_bytes));
	f->advice_buf = strfmt("RLIMIT_MEMLOCK (systemd LimitMEMLOCK=, ulimit -l) is charged as VmPin is: it must allow %s%s, not %s; a mrpin rule with count=distinct bounds what is really pinned (mrpinctl limit set process count=distinct max_pinned=SIZE)",
			       bytes_str(p->pinned_bytes + p->peer_bytes),
			       with_peer, bytes_str(p->distinct_bytes));
	f->advice = f->advice_buf;
}

static void check_duplicates(struct doctor *d)
{
	const struct proc_row *p;
	size_t i;

	if (!tbl_has(&d->procs, "distinct_bytes"))
		return;
	for (i = 0; i < d->procs.nrows; i++) {
		p = PROC(d, i);
		if (p->distinct_bytes &&
		    pct_at_least(p->pinned_bytes, p->distinct_bytes,
				 DUPLICATE_TIMES * 100))
			duplicate_finding(d, p);
	}
}

/*
 * Every check, on the tables of @d: the findings in d->f, worst first.
 * Returns 0, or EXIT_FAIL when a table holds what does not parse (said).
 */
int doctor_check(struct doctor *d)
{
	int ret;

	check_global(d);
	check_devices(d);
	check_mr_table_events(d);
	check_stack(d);
	check_limit_events(d);
	check_failures(d);
	check_leaks(d);
	check_small_pages(d);
	ret = check_churn(d);
	if (ret)
		return ret;
	check_in_flight(d);
	check_pins(d);
	check_callsites(d);
	check_growth(d);
	check_duplicates(d);
	findings_sort(d);
	return 0;
}
