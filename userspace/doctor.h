/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mrpinctl doctor: what its files share.
 *
 *   cmd_doctor.c       the command: loading the tables, the output, help
 *   doctor_checks.c    the checks: the tables in, findings out
 *   doctor_findings.c  the findings and their evidence; words for messages
 *   doctor_sym.c       call sites symbolized with elfutils' libdwfl
 *
 * Each of them uses only those below it in this list (and mrpinctl.h).
 */
#ifndef MRPINCTL_DOCTOR_H
#define MRPINCTL_DOCTOR_H

#include "mrpinctl.h"

#define MAX_EVIDENCE	16
#define MAX_FRAMES	16

/* SEV_INFO: worth knowing, not a mistake (doctor still exits 0). */
enum severity { SEV_HIGH, SEV_MEDIUM, SEV_LOW, SEV_INFO, NR_SEVERITIES };

/* The kinds of finding, in the order they are printed within a severity. */
enum fkind {
	FK_GLOBAL_LIMIT, FK_MR_TABLE, FK_STACK, FK_DENIED, FK_IN_FLIGHT,
	FK_FAILED,
	FK_GROWING_LEAK, FK_LEAK_EXIT, FK_SMALL_PAGES, FK_CHURN, FK_OVERSIZED,
	FK_OVER_LIMIT, FK_MISALIGNED, FK_MISALIGNED_2M, FK_LEAK_SUSPECT,
	FK_DUPLICATE, FK_STABLE_SET,
	NR_FKINDS,
};

/* What a finding is about. */
enum subject { SUBJ_GLOBAL, SUBJ_PROCESS, SUBJ_PROGRAM, SUBJ_DEVICE };

/*
 * EV_COUNT_LIMIT: a count or unlimited; EV_RATE: a number with a fraction;
 * EV_MRS: the finding's MRs (struct finding's mrs), a list in JSON.
 */
enum ev_type {
	EV_COUNT, EV_COUNT_LIMIT, EV_BYTES, EV_BYTES_LIMIT, EV_PERCENT,
	EV_RATE, EV_MS, EV_TIME, EV_HEX, EV_STR, EV_MRS,
};

/* One number (or word) of a finding's evidence. */
struct evidence {
	const char *key;
	enum ev_type type;
	uint64_t v;
	double x;		/* EV_PERCENT, EV_RATE */
	char *s;		/* EV_STR */
};

/* A live MR (pin) that a finding names. */
struct mr_ref {
	uint64_t id;
	uint64_t age_ms;
	uint64_t start;
	uint64_t length;
	const char *caller;	/* the driver's function, from `pins` */
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
	const char *why;	/* not symbolized: why not; NULL: it is */
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
	struct site *site;	/* call site findings */
	struct mr_ref *mrs;	/* EV_MRS */
	unsigned int nmrs;
	char *message;
	const char *advice;
	char *advice_buf;	/* the advice, when made for this finding */
};

/* The tables as read, and the findings. */
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

/* --- doctor_checks.c --- */
int doctor_check(struct doctor *d);

/* --- doctor_findings.c --- */
struct finding *finding_new(struct doctor *d, enum severity sev,
			    enum fkind kind, uint64_t weight);
void subject_process(struct finding *f, uint64_t pid, const char *comm);
struct evidence *ev_add(struct finding *f, const char *key,
			enum ev_type type, uint64_t v);
void ev_pct(struct finding *f, const char *key, double pct);
void ev_rate(struct finding *f, const char *key, double rate);
void ev_str(struct finding *f, const char *key, const char *s);
void findings_sort(struct doctor *d);
void findings_free(struct doctor *d);

const char *count_str(uint64_t v);
const char *bytes_str(uint64_t v);
const char *ms_str(uint64_t ms);
const char *time_str(uint64_t ns);
const char *limit_bytes_str(uint64_t v);
const char *errno_str(uint64_t v);
const char *plural(uint64_t n);
bool pct_at_least(uint64_t part, uint64_t whole, unsigned int pct);
uint64_t pct_floor(uint64_t part, uint64_t whole);
double pct_exact(uint64_t part, uint64_t whole);

/* --- doctor_sym.c --- */
struct proc_maps;
struct proc_maps *maps_open(uint64_t pid, const char *comm);
void maps_close(struct proc_maps *m);
struct site *site_resolve(const struct proc_maps *m, const char *frames);
void site_free(struct site *s);
char *frame_text(const struct frame *fr);

#endif /* MRPINCTL_DOCTOR_H */
