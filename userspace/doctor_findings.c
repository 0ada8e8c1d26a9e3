// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl doctor: the findings.
 *
 * A finding is what a check saw: its severity and kind, what it is about
 * (the subject), its evidence (exact numbers, for JSON) and a message with
 * one line of advice.  The checks add them in any order; they are printed
 * worst first (findings_sort()).  The words of the messages are here too:
 * counts in groups of three digits, sizes, durations, percentages.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

/* --- words and numbers for the messages --- */

/* The values of one message, formatted: a few at a time, from a ring. */
#define RING_LEN 64
static char *ring(void)
{
	static char bufs[8][RING_LEN];
	static unsigned int next;

	return bufs[next++ % ARRAY_SIZE(bufs)];
}

/* 5,312: a count in groups of three digits. */
const char *count_str(uint64_t v)
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

const char *bytes_str(uint64_t v)
{
	return fmt_bytes(ring(), RING_LEN, v);
}

const char *ms_str(uint64_t ms)
{
	return fmt_ms(ring(), RING_LEN, ms);
}

const char *time_str(uint64_t ns)
{
	return fmt_time_ns(ring(), RING_LEN, ns);
}

/* Bytes, or "unlimited". */
const char *limit_bytes_str(uint64_t v)
{
	return v == UNLIMITED ? "unlimited" : bytes_str(v);
}

/* ENOMEM. */
const char *errno_str(uint64_t v)
{
	return fmt_errno(ring(), RING_LEN, v);
}

const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* Is @part at least @pct percent of @whole (a non-zero whole)? */
bool pct_at_least(uint64_t part, uint64_t whole, unsigned int pct)
{
	return whole && (__uint128_t)part * 100 >=
			(__uint128_t)whole * pct;
}

/* @part of @whole in whole percent, rounded down, for the text. */
uint64_t pct_floor(uint64_t part, uint64_t whole)
{
	return whole ? (uint64_t)((__uint128_t)part * 100 / whole) : 0;
}

double pct_exact(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : NAN;
}

/* --- findings --- */

struct finding *finding_new(struct doctor *d, enum severity sev,
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

void subject_process(struct finding *f, uint64_t pid, const char *comm)
{
	f->subj = SUBJ_PROCESS;
	f->pid = pid;
	f->comm = comm;
}

struct evidence *ev_add(struct finding *f, const char *key,
			enum ev_type type, uint64_t v)
{
	struct evidence *e;

	if (f->nev == MAX_EVIDENCE)
		return NULL;
	e = &f->ev[f->nev++];
	*e = (struct evidence){ .key = key, .type = type, .v = v };
	return e;
}

void ev_pct(struct finding *f, const char *key, double pct)
{
	struct evidence *e = ev_add(f, key, EV_PERCENT, 0);

	if (e)
		e->x = pct;
}

void ev_rate(struct finding *f, const char *key, double rate)
{
	struct evidence *e = ev_add(f, key, EV_RATE, 0);

	if (e)
		e->x = rate;
}

void ev_str(struct finding *f, const char *key, const char *s)
{
	struct evidence *e = ev_add(f, key, EV_STR, 0);

	if (e)
		e->s = xstrdup(s);
}

static void finding_free(struct finding *f)
{
	unsigned int i;

	for (i = 0; i < f->nev; i++)
		free(f->ev[i].s);
	site_free(f->site);
	free(f->mrs);
	free(f->message);
	free(f->advice_buf);
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

void findings_sort(struct doctor *d)
{
	if (d->nf)
		qsort(d->f, d->nf, sizeof(*d->f), finding_cmp);
}

void findings_free(struct doctor *d)
{
	size_t i;

	for (i = 0; i < d->nf; i++)
		finding_free(&d->f[i]);
	free(d->f);
	d->f = NULL;
	d->nf = 0;
}
