// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl doctor
 *
 * Reads every table of the module and reports the registration mistakes it
 * sees, worst first, each with its evidence and one line of advice:
 *
 *   high    the global limit nearly used up; an MR table past the module's
 *           mr_table_warn mark; buffers registered on a stack; refusals
 *   medium  MRs left to the kernel's cleanup (exit, close); processes that
 *           pin mostly 4 KiB pages; registration churn; oversized pins;
 *           limits crossed in warn mode; an MR table mark crossed before
 *   low     starts not aligned to a page, large pins not aligned to 2 MiB;
 *           with callsites=on, where each process registered its oldest
 *           and its biggest live pins (the leak suspects)
 *
 * The thresholds are the defines below (mrpinctl(8) documents them).  Call
 * sites are symbolized with elfutils' libdwfl: the object and offset from
 * /proc/PID/maps, and the function and line where there is debug info.
 * Exit status: 0 when nothing is found, 1 when something is.
 */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrpinctl.h"

/* The thresholds. */
#define SMALL_PAGES_MIN_BYTES	(64ULL << 20)	/* 4k-pages: a process pinning this */
#define SMALL_PAGES_PCT		50		/* ... with this much on 4 KiB pages */
#define CHURN_MIN_RELEASES	1000		/* churn: this many pins gone */
#define CHURN_PCT		50		/* ... this many of them under 1 ms */
#define CHURN_FAST_BUCKETS	10		/* life_hist 0-9: under 1024 us */
#define GLOBAL_PCT		80		/* of the global max_pinned */
#define RAM_PCT			80		/* of RAM, without a global limit */
#define MR_TABLE_PCT		80		/* when the module has no mr_table_warn */
#define PAGE_4K			4096ULL
#define HUGE_2M			(2ULL << 20)

#define MAX_EVIDENCE	16
#define MAX_FRAMES	16
#define MAX_CALLERS	3

enum severity { SEV_HIGH, SEV_MEDIUM, SEV_LOW, NR_SEVERITIES };

static const char *const severity_names[NR_SEVERITIES] = {
	"high", "medium", "low",
};

/* The kinds of finding, in the order they are printed within a severity. */
enum fkind {
	FK_GLOBAL_LIMIT, FK_MR_TABLE, FK_STACK, FK_DENIED, FK_LEAK_EXIT,
	FK_SMALL_PAGES, FK_CHURN, FK_OVERSIZED, FK_OVER_LIMIT, FK_MISALIGNED,
	FK_MISALIGNED_2M, FK_LEAK_SUSPECT, NR_FKINDS,
};

static const char *const kind_names[NR_FKINDS] = {
	[FK_GLOBAL_LIMIT] = "global-limit",
	[FK_MR_TABLE] = "mr-table",
	[FK_STACK] = "stack",
	[FK_DENIED] = "denied",
	[FK_LEAK_EXIT] = "leak-exit",
	[FK_SMALL_PAGES] = "4k-pages",
	[FK_CHURN] = "churn",
	[FK_OVERSIZED] = "oversized",
	[FK_OVER_LIMIT] = "over-limit",
	[FK_MISALIGNED] = "misaligned",
	[FK_MISALIGNED_2M] = "misaligned-2m",
	[FK_LEAK_SUSPECT] = "leak-suspect",
};

/* What a finding is about. */
enum subject { SUBJ_GLOBAL, SUBJ_PROCESS, SUBJ_PROGRAM, SUBJ_DEVICE };

static const char *const subject_names[] = {
	[SUBJ_GLOBAL] = "global",
	[SUBJ_PROCESS] = "process",
	[SUBJ_PROGRAM] = "program",
	[SUBJ_DEVICE] = "device",
};

enum ev_type { EV_COUNT, EV_BYTES, EV_PERCENT, EV_MS, EV_TIME, EV_HEX, EV_STR };

/* One number (or word) of a finding's evidence. */
struct evidence {
	const char *key;
	enum ev_type type;
	uint64_t v;
	double pct;
	char *s;		/* EV_STR */
};

/* A user address of a call site, symbolized. */
struct frame {
	uint64_t addr;
	char *object;		/* the file mapped there; NULL: unknown */
	uint64_t offset;	/* into it, as addr2line takes it */
	char *function;
	char *file;
	int line;
};

/* A call site: its frames, innermost first, and which is the caller. */
struct site {
	struct frame frames[MAX_FRAMES];
	unsigned int nframes;
	unsigned int caller;
};

struct finding {
	enum severity sev;
	enum fkind kind;
	enum subject subj;
	uint64_t pid;
	const char *comm;	/* SUBJ_PROCESS, SUBJ_PROGRAM */
	uint64_t uid;		/* SUBJ_PROGRAM */
	const char *device;	/* SUBJ_DEVICE */
	uint64_t weight;	/* within a kind, the heaviest first */
	struct evidence ev[MAX_EVIDENCE];
	unsigned int nev;
	struct site *site;	/* FK_LEAK_SUSPECT */
	char *message;
	const char *advice;
};

/* The optional columns doctor needs. */
static const char *const proc_needs[] = {
	"bytes_4k", "bytes_2m", "bytes_1g", "stack_pins", "registrations",
	"reg_per_s", "life_hist",
};

static const char *const pin_needs[] = { "stack", "align", "oversized" };

struct doctor {
	struct stats stats;
	struct table procs;
	struct table pins;
	struct table devs;
	struct table leaks;
	struct table sites;
	struct table events;
	struct policy policy;
	struct finding *f;
	size_t nf;
};

#define PROC(d, i) TBL_ROW(&(d)->procs, struct proc_row, i)
#define PIN(d, i) TBL_ROW(&(d)->pins, struct pin_row, i)
#define DEV(d, i) TBL_ROW(&(d)->devs, struct dev_row, i)
#define LEAK(d, i) TBL_ROW(&(d)->leaks, struct leak_row, i)
#define SITE(d, i) TBL_ROW(&(d)->sites, struct site_row, i)
#define EVENT(d, i) TBL_ROW(&(d)->events, struct event, i)

/* --- words and numbers for the messages --- */

static char *strfmt(const char *fmt, ...) __printf(1, 2);

static char *strfmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = xmalloc(n < 0 ? 1 : (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, n < 0 ? 1 : (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* The values of one message, formatted: a few at a time, from a ring. */
#define RING_LEN 64
static char *ring(void)
{
	static char bufs[8][RING_LEN];
	static unsigned int next;

	return bufs[next++ % ARRAY_SIZE(bufs)];
}

/* 5,312: a count in groups of three digits. */
static const char *count_str(uint64_t v)
{
	char digits[32], *buf = ring();
	size_t n, i, j = 0;

	n = (size_t)snprintf(digits, sizeof(digits), "%llu",
			     (unsigned long long)v);
	for (i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = digits[i];
	}
	buf[j] = '\0';
	return buf;
}

static const char *bytes_str(uint64_t v)
{
	return fmt_bytes(ring(), RING_LEN, v);
}

static const char *ms_str(uint64_t ms)
{
	return fmt_ms(ring(), RING_LEN, ms);
}

static const char *time_str(uint64_t ns)
{
	return fmt_time_ns(ring(), RING_LEN, ns);
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* Is @part at least @pct percent of @whole (a non-zero whole)? */
static bool pct_at_least(uint64_t part, uint64_t whole, unsigned int pct)
{
	return whole && (__uint128_t)part * 100 >=
			(__uint128_t)whole * pct;
}

/* @part of @whole in whole percent, rounded down, for the text. */
static uint64_t pct_floor(uint64_t part, uint64_t whole)
{
	return whole ? (uint64_t)((__uint128_t)part * 100 / whole) : 0;
}

static double pct_exact(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : NAN;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* --- findings --- */

static struct finding *finding_new(struct doctor *d, enum severity sev,
				   enum fkind kind, uint64_t weight)
{
	struct finding *f;

	d->f = xrealloc(d->f, (d->nf + 1) * sizeof(*d->f));
	f = &d->f[d->nf++];
	memset(f, 0, sizeof(*f));
	f->sev = sev;
	f->kind = kind;
	f->weight = weight;
	return f;
}

static void subject_process(struct finding *f, uint64_t pid,
			    const char *comm)
{
	f->subj = SUBJ_PROCESS;
	f->pid = pid;
	f->comm = comm;
}

static struct evidence *ev_add(struct finding *f, const char *key,
			       enum ev_type type, uint64_t v)
{
	struct evidence *e;

	if (f->nev == MAX_EVIDENCE)
		return NULL;
	e = &f->ev[f->nev++];
	*e = (struct evidence){ .key = key, .type = type, .v = v };
	return e;
}

static void ev_pct(struct finding *f, const char *key, double pct)
{
	struct evidence *e = ev_add(f, key, EV_PERCENT, 0);

	if (e)
		e->pct = pct;
}

static void ev_str(struct finding *f, const char *key, const char *s)
{
	struct evidence *e = ev_add(f, key, EV_STR, 0);

	if (e)
		e->s = xstrdup(s);
}

static void site_free(struct site *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < s->nframes; i++) {
		free(s->frames[i].object);
		free(s->frames[i].function);
		free(s->frames[i].file);
	}
	free(s);
}

static void finding_free(struct finding *f)
{
	unsigned int i;

	for (i = 0; i < f->nev; i++)
		free(f->ev[i].s);
	site_free(f->site);
	free(f->message);
}

/* Worst first: by severity, kind, weight, then pid and message. */
static int finding_cmp(const void *a, const void *b)
{
	const struct finding *x = a, *y = b;

	if (x->sev != y->sev)
		return x->sev < y->sev ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->message, y->message);
}

/* --- the global limit, and RAM --- */

static void check_global(struct doctor *d)
{
	const struct rule *g = &d->policy.global;
	uint64_t ram = d->stats.ram_bytes, pinned = d->stats.pinned_bytes, max;
	bool warn = g->val[K_ACTION], over;
	const char *mode = warn ? "warn" : "enforce";
	struct finding *f;

	if (!rule_max_pinned(g, ram, &max))
		return;		/* N% of a RAM the snapshot does not tell */
	over = pinned > max;
	if (max == UNLIMITED) {
		if (!pct_at_least(pinned, ram, RAM_PCT))
			return;
		f = finding_new(d, SEV_HIGH, FK_GLOBAL_LIMIT, pinned);
		ev_add(f, "pinned_bytes", EV_BYTES, pinned);
		ev_add(f, "ram_bytes", EV_BYTES, ram);
		ev_pct(f, "ram_percent", pct_exact(pinned, ram));
		f->message = strfmt("pinned memory is %llu%% of RAM (%s), with no global limit",
				    (unsigned long long)pct_floor(pinned, ram),
				    bytes_str(pinned));
		f->advice = "set one: mrpinctl limit set global max_pinned=50%";
		return;
	}
	if (!pct_at_least(pinned, max, GLOBAL_PCT))
		return;
	f = finding_new(d, SEV_HIGH, FK_GLOBAL_LIMIT, pinned);
	ev_add(f, "pinned_bytes", EV_BYTES, pinned);
	ev_add(f, "global_max_pinned", EV_BYTES, max);
	if (g->is_pct)
		ev_add(f, "global_max_pinned_percent", EV_COUNT, g->pct);
	ev_pct(f, "limit_percent", pct_exact(pinned, max));
	ev_str(f, "action", mode);
	if (g->is_pct) {
		ev_add(f, "ram_bytes", EV_BYTES, ram);
		ev_pct(f, "ram_percent", pct_exact(pinned, ram));
		f->message = strfmt("pinned memory is %llu%% of RAM (global limit %u%% in %s mode)",
				    (unsigned long long)pct_floor(pinned, ram),
				    g->pct, mode);
	} else {
		f->message = strfmt("pinned memory is %s, %llu%% of the global limit of %s (%s mode)",
				    bytes_str(pinned),
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

static void check_devices(struct doctor *d)
{
	uint64_t pct = mr_table_pct(d);
	const struct dev_row *dev;
	struct finding *f;
	size_t i;

	for (i = 0; pct && i < d->devs.nrows; i++) {
		dev = DEV(d, i);
		if (!device_over_mark(d, dev->device))
			continue;
		f = finding_new(d, SEV_HIGH, FK_MR_TABLE, dev->pins);
		f->subj = SUBJ_DEVICE;
		f->device = dev->device;
		ev_add(f, "pins", EV_COUNT, dev->pins);
		ev_add(f, "max_mr", EV_COUNT, dev->max_mr);
		ev_pct(f, "mr_use_percent", pct_exact(dev->pins, dev->max_mr));
		ev_add(f, "mr_table_warn_percent", EV_COUNT, pct);
		ev_add(f, "pinned_bytes", EV_BYTES, dev->pinned_bytes);
		f->message = strfmt("%s: %llu%% of max_mr in use (%s of %s, mr_table_warn=%llu%%)",
				    dev->device,
				    (unsigned long long)pct_floor(dev->pins, dev->max_mr),
				    count_str(dev->pins), count_str(dev->max_mr),
				    (unsigned long long)pct);
		f->advice = "deregister the MRs you no longer use, or register fewer, larger buffers";
	}
}

/* --- events: stack registrations, refusals, limits crossed --- */

static bool is_event(const struct event *e)
{
	return e->seq != EVENT_LOST;
}

static bool event_key(const struct event *e, const char *key)
{
	return is_event(e) && !strcmp(e->key, key);
}

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

/* A limit in its key's unit. */
static const char *limit_str(const char *key, uint64_t v)
{
	if (!strcmp(key, "max_pins") || !strcmp(key, "mr_table"))
		return count_str(v);
	return bytes_str(v);
}

static bool same_mr_table(const struct event *a, const struct event *b)
{
	return event_key(a, "mr_table") && event_key(b, "mr_table") &&
	       !strcmp(a->scope, b->scope);
}

/* A device's mark crossed before, when it is not over it now. */
static void check_mr_table_events(struct doctor *d)
{
	uint64_t count, last, usage;
	const struct event *e;
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
		f->message = strfmt("%s: the MR table crossed its mr_table_warn mark %s time%s, the last at %s with %s pins",
				    f->device, count_str(count), plural(count),
				    time_str(last), count_str(usage));
		f->advice = "deregister the MRs you no longer use, or register fewer, larger buffers";
	}
}

static bool same_limit(const struct event *a, const struct event *b)
{
	return is_event(a) && is_event(b) && a->pid == b->pid &&
	       !strcmp(a->action, b->action) && !strcmp(a->comm, b->comm) &&
	       !strcmp(a->scope, b->scope) && !strcmp(a->key, b->key);
}

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
		if (!is_event(e) || event_key(e, "stack") ||
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
		ev_add(f, strcmp(e->key, "max_pins") ? "limit_bytes" : "limit",
		       strcmp(e->key, "max_pins") ? EV_BYTES : EV_COUNT,
		       x->limit);
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
	}
}

/* --- stack buffers --- */

static const struct proc_row *find_proc(const struct doctor *d, uint64_t pid)
{
	size_t i;

	for (i = 0; i < d->procs.nrows; i++)
		if (PROC(d, i)->pid == pid)
			return PROC(d, i);
	return NULL;
}

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
			if (p->oversized)
				pin_add(&big, p);
			if (p->align < PAGE_4K)
				pin_add(&unaligned, p);
			if (p->length >= HUGE_2M && p->align < HUGE_2M)
				pin_add(&unaligned_2m, p);
		}
		pin_findings(d, PIN(d, i), &big, &unaligned, &unaligned_2m);
	}
}

/* --- call sites, symbolized with libdwfl --- */

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

/* A process's mappings, when it is still the process @comm. */
struct proc_maps {
	Dwfl *dwfl;
	const char *why;	/* no dwfl: why not */
	char exe[4096];
};

static void maps_open(struct proc_maps *m, uint64_t pid, const char *comm)
{
	char path[64], name[64];
	ssize_t n;
	FILE *f;

	m->dwfl = NULL;
	m->why = "the process is gone";
	m->exe[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%llu/comm",
		 (unsigned long long)pid);
	f = pid <= INT32_MAX ? fopen(path, "re") : NULL;
	if (!f)
		return;
	if (!fgets(name, sizeof(name), f))
		name[0] = '\0';
	fclose(f);
	name[strcspn(name, "\n")] = '\0';
	if (strcmp(name, comm))
		return;		/* gone, and the pid used again */
	m->why = "its maps could not be read";
	snprintf(path, sizeof(path), "/proc/%llu/exe",
		 (unsigned long long)pid);
	n = readlink(path, m->exe, sizeof(m->exe) - 1);
	m->exe[n > 0 ? n : 0] = '\0';
	m->dwfl = dwfl_begin(&proc_callbacks);
	if (!m->dwfl)
		return;
	dwfl_report_begin(m->dwfl);
	if (dwfl_linux_proc_report(m->dwfl, (pid_t)pid) ||
	    dwfl_report_end(m->dwfl, NULL, NULL)) {
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
	}
}

static void maps_close(struct proc_maps *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl);
	m->dwfl = NULL;
}

/* @file of compilation unit @cu, made absolute with its directory. */
static char *cu_path(Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir;

	dir = file[0] != '/' ?
	      dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : NULL;
	return dir ? strfmt("%s/%s", dir, file) : xstrdup(file);
}

/*
 * The function at @pc as the source has it, from the DWARF scopes: the
 * innermost function that was not inlined there and, when functions were
 * inlined into it at @pc (ibv_reg_mr() is one), the line of that call.
 */
static void frame_scope(Dwfl_Module *mod, Dwarf_Addr pc, struct frame *fr)
{
	Dwarf_Die *cu, *scopes = NULL, inner;
	Dwarf_Word line = 0, idx = 0;
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	const char *name, *file;
	Dwarf_Addr bias;
	int n, i, inl = -1;
	size_t nfiles;

	cu = dwfl_module_addrdie(mod, pc, &bias);
	n = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
	/*
	 * Inside an inlined instance, dwarf_getscopes() follows it with the
	 * scopes of its abstract origin: the functions around it are wanted.
	 */
	if (n > 0 && dwarf_tag(&scopes[0]) == DW_TAG_inlined_subroutine) {
		inner = scopes[0];
		free(scopes);
		scopes = NULL;
		n = dwarf_getscopes_die(&inner, &scopes);
	}
	for (i = 0; i < n; i++) {
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			break;
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine)
			inl = i;
	}
	if (i >= n)
		goto out;
	name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_name,
						     &attr));
	if (name) {
		free(fr->function);
		fr->function = xstrdup(name);
	}
	if (inl < 0 ||
	    dwarf_formudata(dwarf_attr(&scopes[inl], DW_AT_call_line, &attr),
			    &line) || !line ||
	    dwarf_formudata(dwarf_attr(&scopes[inl], DW_AT_call_file, &attr),
			    &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		goto out;
	file = dwarf_filesrc(files, idx, NULL, NULL);
	if (file) {
		free(fr->file);
		fr->file = cu_path(cu, file);
		fr->line = (int)line;
	}
out:
	free(scopes);
}

/*
 * Symbolize @fr; @ret: a return address, whose call is the byte before.
 */
static void frame_resolve(const struct proc_maps *m, struct frame *fr,
			  bool ret)
{
	Dwarf_Addr pc = fr->addr - (ret ? 1 : 0), rel = fr->addr;
	const char *name, *file, *dir;
	Dwfl_Module *mod;
	Dwfl_Line *line;
	GElf_Off off;
	GElf_Sym sym;
	int lineno;

	mod = m->dwfl ? dwfl_addrmodule(m->dwfl, pc) : NULL;
	if (!mod)
		return;
	name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL,
				NULL);
	if (!name || dwfl_module_relocate_address(mod, &rel) < 0)
		return;
	fr->object = xstrdup(name);
	fr->offset = rel;
	name = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
	if (name)
		fr->function = xstrdup(name);
	line = dwfl_module_getsrc(mod, pc);
	file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) :
		      NULL;
	if (file && lineno > 0) {
		dir = file[0] != '/' ? dwfl_line_comp_dir(line) : NULL;
		fr->file = dir ? strfmt("%s/%s", dir, file) : xstrdup(file);
		fr->line = lineno;
	}
	frame_scope(mod, pc, fr);
}

/* System libraries (libc, libibverbs, providers) are not the caller. */
static bool system_object(const char *path)
{
	static const char *const dirs[] = {
		"/lib/", "/lib32/", "/lib64/", "/usr/lib/", "/usr/lib32/",
		"/usr/lib64/",
	};
	size_t i;

	if (path[0] != '/')
		return true;		/* [vdso] */
	for (i = 0; i < ARRAY_SIZE(dirs); i++)
		if (!strncmp(path, dirs[i], strlen(dirs[i])))
			return true;
	return false;
}

/*
 * The frames of @frames ("0x7f..,0x55..": the syscall's address, then
 * return addresses), symbolized; the caller is the first return address in
 * the main executable or in a library outside the system's directories.
 */
static struct site *site_resolve(const struct proc_maps *m,
				 const char *frames)
{
	struct site *s = xmalloc(sizeof(*s));
	const char *p = frames;
	struct frame *fr;
	unsigned int i;
	char *end;

	memset(s, 0, sizeof(*s));
	while (*p && s->nframes < MAX_FRAMES) {
		fr = &s->frames[s->nframes];
		fr->addr = strtoull(p, &end, 16);
		if (end == p)
			break;
		frame_resolve(m, fr, s->nframes > 0);
		s->nframes++;
		p = end + strspn(end, ",");
	}
	for (i = 1; i < s->nframes; i++) {
		fr = &s->frames[i];
		if (fr->object && (!strcmp(fr->object, m->exe) ||
				   !system_object(fr->object))) {
			s->caller = i;
			return s;
		}
	}
	for (i = 1; i < s->nframes && !s->frames[i].object; i++)
		;
	s->caller = i < s->nframes ? i : 0;
	return s;
}

/* "fn at file.c:12 (obj+0x1a2b)", "fn (obj+0x1a2b)", "obj+0x1a2b", "0x..". */
static char *frame_text(const struct frame *fr)
{
	const char *obj;

	if (!fr->object)
		return strfmt("0x%llx", (unsigned long long)fr->addr);
	obj = base_name(fr->object);
	if (fr->function && fr->file)
		return strfmt("%s at %s:%d (%s+0x%llx)", fr->function,
			      base_name(fr->file), fr->line, obj,
			      (unsigned long long)fr->offset);
	if (fr->function)
		return strfmt("%s (%s+0x%llx)", fr->function, obj,
			      (unsigned long long)fr->offset);
	return strfmt("%s+0x%llx", obj, (unsigned long long)fr->offset);
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
	f->site = site_resolve(m, row->frames);
	if (m->dwfl)
		where = frame_text(&f->site->frames[f->site->caller]);
	else
		where = strfmt("%s (not symbolized: %s)", row->frames, m->why);
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
	struct proc_maps m;
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
		maps_open(&m, oldest->pid, oldest->comm);
		if (oldest == biggest) {
			site_finding(d, &m, oldest, "oldest and biggest");
		} else {
			site_finding(d, &m, oldest, "oldest");
			site_finding(d, &m, biggest, "biggest");
		}
		maps_close(&m);
	}
}

/* --- output --- */

static const struct column finding_cols[] = {
	{ .key = "severity", .title = "SEVERITY", .flags = COL_LEFT },
	{ .key = "finding", .title = "FINDING", .flags = COL_LEFT },
};

static void print_subject(const struct finding *f)
{
	out_obj_begin("subject", NULL, 0);
	print_str("scope", subject_names[f->subj]);
	switch (f->subj) {
	case SUBJ_PROCESS:
		print_u64("pid", f->pid);
		print_str("comm", f->comm);
		break;
	case SUBJ_PROGRAM:
		print_str("comm", f->comm);
		print_user("user", f->uid);
		break;
	case SUBJ_DEVICE:
		print_str("device", f->device);
		break;
	default:
		break;
	}
	out_obj_end();
}

static void print_evidence(const struct evidence *e)
{
	switch (e->type) {
	case EV_COUNT:
		print_u64(e->key, e->v);
		break;
	case EV_BYTES:
		print_bytes(e->key, e->v);
		break;
	case EV_PERCENT:
		print_percent(e->key, e->pct);
		break;
	case EV_MS:
		print_ms(e->key, e->v);
		break;
	case EV_TIME:
		print_time_ns(e->key, e->v);
		break;
	case EV_HEX:
		print_hex(e->key, e->v);
		break;
	case EV_STR:
		print_str(e->key, e->s);
		break;
	}
}

/* JSON: a frame, with null for what is not known. */
static void json_frame(const char *key, const struct frame *fr)
{
	jw_obj_open(key);
	jw_u64("address", fr->addr);
	if (fr->object) {
		jw_str("object", fr->object);
		jw_u64("offset", fr->offset);
	} else {
		jw_null("object");
		jw_null("offset");
	}
	if (fr->function)
		jw_str("function", fr->function);
	else
		jw_null("function");
	if (fr->file) {
		jw_str("file", fr->file);
		jw_u64("line", (uint64_t)fr->line);
	} else {
		jw_null("file");
		jw_null("line");
	}
	jw_obj_close();
}

static void json_site(const struct site *s)
{
	unsigned int i;

	if (!opts.json || !s->nframes)
		return;
	json_frame("caller", &s->frames[s->caller]);
	jw_arr_open("frames");
	for (i = 0; i < s->nframes; i++)
		json_frame(NULL, &s->frames[i]);
	jw_arr_close();
}

static void print_finding(const struct finding *f)
{
	unsigned int i;
	char *line;

	out_item_begin();
	print_str("severity", severity_names[f->sev]);
	print_str("kind", kind_names[f->kind]);
	print_subject(f);
	out_obj_begin("evidence", NULL, 0);
	for (i = 0; i < f->nev; i++)
		print_evidence(&f->ev[i]);
	if (f->site)
		json_site(f->site);
	out_obj_end();
	print_str("message", f->message);
	print_str("advice", f->advice);
	if (!opts.json) {
		/* Text: the finding and its advice, on one line. */
		line = strfmt("%s; %s", f->message, f->advice);
		print_str("finding", line);
		free(line);
	}
	out_item_end();
}

static void print_findings(const struct doctor *d)
{
	size_t i, n[NR_SEVERITIES] = { 0 };
	char *text;

	out_list_begin(NULL, finding_cols, ARRAY_SIZE(finding_cols));
	out_list_plain();
	for (i = 0; i < d->nf; i++) {
		print_finding(&d->f[i]);
		n[d->f[i].sev]++;
	}
	out_list_end();
	if (d->nf)
		text = strfmt("%zu finding%s: %zu high, %zu medium, %zu low",
			      d->nf, plural(d->nf), n[SEV_HIGH], n[SEV_MEDIUM],
			      n[SEV_LOW]);
	else
		text = strfmt("no problems found (%s process%s, %s pin%s, %s device%s)",
			      count_str(d->procs.nrows),
			      d->procs.nrows == 1 ? "" : "es",
			      count_str(d->pins.nrows), plural(d->pins.nrows),
			      count_str(d->devs.nrows), plural(d->devs.nrows));
	out_caption(text);
	free(text);
}

/* --- the command --- */

static int doctor_load(struct doctor *d)
{
	int ret;

	ret = load_stats(&d->stats);
	if (!ret)
		ret = load_procs(&d->procs);
	if (!ret)
		ret = tbl_require(&d->procs, proc_needs, ARRAY_SIZE(proc_needs));
	if (!ret)
		ret = load_pins(&d->pins);
	if (!ret)
		ret = tbl_require(&d->pins, pin_needs, ARRAY_SIZE(pin_needs));
	if (!ret)
		ret = load_devs(&d->devs);
	if (!ret)
		ret = load_leaks(&d->leaks);
	if (!ret)
		ret = load_callsites(&d->sites);
	if (!ret)
		ret = policy_load(&d->policy);
	if (!ret)
		ret = load_events(&d->events);
	return ret;
}

static int doctor_check(struct doctor *d)
{
	int ret;

	check_global(d);
	check_devices(d);
	check_mr_table_events(d);
	check_stack(d);
	check_limit_events(d);
	check_leaks(d);
	check_small_pages(d);
	ret = check_churn(d);
	if (ret)
		return ret;
	check_pins(d);
	check_callsites(d);
	if (d->nf)
		qsort(d->f, d->nf, sizeof(*d->f), finding_cmp);
	return 0;
}

static void doctor_free(struct doctor *d)
{
	size_t i;

	for (i = 0; i < d->nf; i++)
		finding_free(&d->f[i]);
	free(d->f);
	tbl_free(&d->procs);
	tbl_free(&d->pins);
	tbl_free(&d->devs);
	tbl_free(&d->leaks);
	tbl_free(&d->sites);
	tbl_free(&d->events);
	policy_free(&d->policy);
}

static int doctor_show(int argc, char **argv)
{
	struct doctor d;
	int ret;

	memset(&d, 0, sizeof(d));
	policy_init(&d.policy);
	ret = options_only("doctor", 0);
	if (!ret)
		ret = kwargs_parse("doctor", NULL, 0, argc, argv);
	if (!ret)
		ret = doctor_load(&d);
	if (!ret)
		ret = doctor_check(&d);
	if (!ret) {
		print_findings(&d);
		ret = d.nf ? EXIT_FAIL : EXIT_OK;
	}
	doctor_free(&d);
	return ret;
}

static int doctor_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl doctor\n"
	      "\n"
	      "Reads every table of mrpin and reports the registration mistakes it sees,\n"
	      "worst first, each with its evidence and one line of advice: stack buffers,\n"
	      "refusals, the global limit or an MR table nearly full, MRs left to be\n"
	      "cleaned up at exit, 4 KiB pages, churn, oversized and misaligned pins and,\n"
	      "with callsites=on, where the oldest and biggest live pins were registered.\n"
	      "Exit status: 0 when nothing is found, 1 when something is (or on error).\n"
	      "The thresholds are in mrpinctl(8).\n",
	      stdout);
	return EXIT_OK;
}

int do_doctor(int argc, char **argv)
{
	static const struct cmd doctor_cmds[] = {
		{ .name = "show", .fn = doctor_show, .alias = true },
		{ .name = "help", .fn = doctor_help },
		{ .name = NULL },
	};

	if (opts.help)
		return doctor_help(0, NULL);
	return cmd_select(doctor_cmds, "doctor", argc, argv, doctor_show);
}
