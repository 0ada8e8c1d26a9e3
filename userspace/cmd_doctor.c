// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl doctor
 *
 * Reads every table of the module and reports the registration mistakes it
 * sees (doctor_checks.c), worst first, each with its evidence and one line
 * of advice.  This file loads the tables, prints the findings (text: one
 * line each with its advice, then a count; JSON: a list of objects) and
 * gives the command's status.  Call sites are symbolized in doctor_sym.c.
 *
 * Exit status, as diff(1) and grep(1) give theirs: 0 when nothing is
 * found (or only findings for information), 1 when something is, 2 when
 * doctor failed (a bad command line, mrpin not loaded, a table missing or
 * that does not parse): a failure is never taken for a finding.
 */
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

enum {
	DOCTOR_CLEAN = 0,
	DOCTOR_FOUND = 1,
	DOCTOR_FAILED = 2,
};

static const char *const severity_names[NR_SEVERITIES] = {
	"high", "medium", "low", "info",
};

static const char *const kind_names[NR_FKINDS] = {
	[FK_GLOBAL_LIMIT] = "global-limit",
	[FK_MR_TABLE] = "mr-table",
	[FK_STACK] = "stack",
	[FK_DENIED] = "denied",
	[FK_IN_FLIGHT] = "in-flight",
	[FK_FAILED] = "failed",
	[FK_GROWING_LEAK] = "growing-leak",
	[FK_LEAK_EXIT] = "leak-exit",
	[FK_SMALL_PAGES] = "4k-pages",
	[FK_CHURN] = "churn",
	[FK_OVERSIZED] = "oversized",
	[FK_OVER_LIMIT] = "over-limit",
	[FK_MISALIGNED] = "misaligned",
	[FK_MISALIGNED_2M] = "misaligned-2m",
	[FK_LEAK_SUSPECT] = "leak-suspect",
	[FK_DUPLICATE] = "duplicate",
	[FK_STABLE_SET] = "stable-set",
};

static const char *const subject_names[] = {
	[SUBJ_GLOBAL] = "global",
	[SUBJ_PROCESS] = "process",
	[SUBJ_PROGRAM] = "program",
	[SUBJ_DEVICE] = "device",
};

/* The columns, optional in older modules, that the checks need. */
static const char *const proc_needs[] = {
	"bytes_4k", "bytes_2m", "bytes_1g", "stack_pins", "registrations",
	"reg_per_s", "life_hist",
};

static const char *const pin_needs[] = { "stack", "align", "oversized" };

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

/* JSON: the MRs a finding names, a list of objects. */
static void json_mrs(const char *key, const struct finding *f)
{
	const struct mr_ref *mr;
	unsigned int i;

	if (!opts.json)
		return;
	jw_arr_open(key);
	for (i = 0; i < f->nmrs; i++) {
		mr = &f->mrs[i];
		jw_obj_open(NULL);
		jw_u64("id", mr->id);
		jw_u64("age_ms", mr->age_ms);
		jw_u64("start", mr->start);
		jw_u64("length", mr->length);
		jw_str("caller", mr->caller);
		jw_obj_close();
	}
	jw_arr_close();
}

/* A rate: in JSON, to 10 digits (so that rate * time gives the count). */
static void print_rate(const char *key, double v)
{
	char buf[32];

	if (opts.json) {
		jw_real(key, v, 10);
		return;
	}
	snprintf(buf, sizeof(buf), "%.1f/s", v);
	print_str(key, buf);
}

static void print_evidence(const struct finding *f, const struct evidence *e)
{
	switch (e->type) {
	case EV_COUNT:
		print_u64(e->key, e->v);
		break;
	case EV_COUNT_LIMIT:
		print_count_limit(e->key, e->v);
		break;
	case EV_BYTES:
		print_bytes(e->key, e->v);
		break;
	case EV_BYTES_LIMIT:
		print_bytes_limit(e->key, e->v);
		break;
	case EV_PERCENT:
		print_percent(e->key, e->x);
		break;
	case EV_RATE:
		print_rate(e->key, e->x);
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
	case EV_MRS:
		json_mrs(e->key, f);
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
	const char *advice = f->advice ? f->advice : "-";
	unsigned int i;
	char *line;

	out_item_begin();
	print_str("severity", severity_names[f->sev]);
	print_str("kind", kind_names[f->kind]);
	print_subject(f);
	out_obj_begin("evidence", NULL, 0);
	for (i = 0; i < f->nev; i++)
		print_evidence(f, &f->ev[i]);
	if (f->site)
		json_site(f->site);
	out_obj_end();
	print_str("message", f->message);
	print_str("advice", advice);
	if (!opts.json) {
		/* Text: the finding and its advice, on one line. */
		line = strfmt("%s; %s", f->message, advice);
		print_str("finding", line);
		free(line);
	}
	out_item_end();
}

/* The findings that are problems: all but the informational ones. */
static size_t problems(const struct doctor *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->nf; i++)
		n += d->f[i].sev != SEV_INFO;
	return n;
}

/*
 * The last line: the findings by severity ("3 findings: 1 high, 2 medium,
 * 0 low", then ", 1 info" when there is any); or that there is no problem,
 * and how many informational findings there are.
 */
static char *summary(const struct doctor *d)
{
	size_t i, n[NR_SEVERITIES] = { 0 };
	char info[48] = "";

	for (i = 0; i < d->nf; i++)
		n[d->f[i].sev]++;
	if (problems(d)) {
		if (n[SEV_INFO])
			snprintf(info, sizeof(info), ", %zu info", n[SEV_INFO]);
		return strfmt("%zu finding%s: %zu high, %zu medium, %zu low%s",
			      d->nf, plural(d->nf), n[SEV_HIGH], n[SEV_MEDIUM],
			      n[SEV_LOW], info);
	}
	if (n[SEV_INFO])
		snprintf(info, sizeof(info), ", %zu informational finding%s",
			 n[SEV_INFO], plural(n[SEV_INFO]));
	return strfmt("no problems found (%s process%s, %s pin%s, %s device%s)%s",
		      count_str(d->procs.nrows),
		      d->procs.nrows == 1 ? "" : "es",
		      count_str(d->pins.nrows), plural(d->pins.nrows),
		      count_str(d->devs.nrows), plural(d->devs.nrows), info);
}

static void print_findings(const struct doctor *d)
{
	char *text;
	size_t i;

	out_list_begin(NULL, finding_cols, ARRAY_SIZE(finding_cols));
	out_list_plain();
	for (i = 0; i < d->nf; i++)
		print_finding(&d->f[i]);
	out_list_end();
	text = summary(d);
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

static void doctor_free(struct doctor *d)
{
	findings_free(d);
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
	bool found;
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
	if (!ret)
		print_findings(&d);
	found = problems(&d);
	doctor_free(&d);
	/* A failed write: main() says so. */
	if (ret || fflush(stdout) || ferror(stdout))
		return DOCTOR_FAILED;
	return found ? DOCTOR_FOUND : DOCTOR_CLEAN;
}

static int doctor_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl doctor\n"
	      "\n"
	      "Reads every table of mrpin and reports the registration mistakes it sees,\n"
	      "worst first, each with its evidence and one line of advice: stack buffers,\n"
	      "refusals, registrations the kernel or the device failed and why, the global\n"
	      "limit or an MR table nearly full (and who holds it), MRs left to be cleaned\n"
	      "up at exit, 4 KiB pages, churn, oversized and misaligned pins and, with\n"
	      "callsites=on, where the oldest and biggest live pins were registered and\n"
	      "the call sites that leak MRs as they run; for information, memory\n"
	      "registered several times (VmPin and RLIMIT_MEMLOCK count it each time) and\n"
	      "the stable sets of MRs of registration caches.\n"
	      "Exit status: 0 when nothing is found (or only for information), 1 when\n"
	      "something is, 2 when doctor failed (a bad command line, mrpin not loaded,\n"
	      "a table it cannot read).\n"
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
