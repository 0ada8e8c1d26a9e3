// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl export prometheus [--per-process] [FILE]
 *
 * mrpin's state in the Prometheus text exposition format, for
 * node_exporter's textfile collector: names start with mrpin_, sizes are in
 * bytes (_bytes), counters end in _total, every family has HELP and TYPE
 * lines.  Series are per device, per user and per cgroup, the failed pins
 * per cause; per process only with --per-process (pids are unbounded:
 * cardinality).  Peer memory (a GPU's, which pins no host page) has
 * families of its own, machine-wide, per device and per process, from
 * modules that count it: the _pinned_bytes families are the host's.  With FILE, the output goes to a temporary file in FILE's
 * directory, renamed over FILE once complete, so that the collector never
 * reads half a file.
 */
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mrpinctl.h"
#include "version.h"

struct export {
	char version[32];
	struct stats stats;
	struct table devs;
	struct table users;
	struct table cgroups;
	struct table procs;
	struct policy policy;
};

/*
 * A label value: backslash, double quote and newline escaped; a byte that
 * is not UTF-8 (a comm may hold any) as U+FFFD, for the format is UTF-8.
 */
static void label_value(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;

	fputc('"', f);
	while (*s) {
		n = utf8_len(s);
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (!n)
			fputs("\xef\xbf\xbd", f);
		else
			fwrite(s, 1, n, f);
		s += n ? n : 1;
	}
	fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP mrpin_%s %s\n# TYPE mrpin_%s %s\n", name, help,
		name, type);
}

/* A sample: @labels is "name", value, "name", value, ..., NULL. */
static void sample(FILE *f, const char *name, uint64_t v, ...)
{
	const char *label;
	va_list ap;
	bool first = true;

	fprintf(f, "mrpin_%s", name);
	va_start(ap, v);
	while ((label = va_arg(ap, const char *))) {
		fprintf(f, "%s%s=", first ? "{" : ",", label);
		label_value(f, va_arg(ap, const char *));
		first = false;
	}
	va_end(ap);
	fprintf(f, "%s %llu\n", first ? "" : "}", (unsigned long long)v);
}

/*
 * One family, a series per cause (a module that counts them): each cause
 * the module counts (its failures_CAUSE_total line), so that a module
 * from before a cause, which did not count it, has no series of it.
 */
static void export_failures(FILE *f, const struct stats *s)
{
	size_t i;

	if (!s->failures_known)
		return;
	family(f, "failures_total", "counter",
	       "Registrations the kernel refused (mrpin let them through), by cause.");
	for (i = 0; i < NR_CAUSES; i++)
		if (s->cause_known[i] && cause_names[i])
			sample(f, "failures_total", s->failures[i], "cause",
			       cause_names[i], NULL);
}

static void export_stats(FILE *f, const struct export *x)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} m[] = {
		{ "pinned_bytes", "gauge", "Bytes pinned by RDMA registrations now.", offsetof(struct stats, pinned_bytes) },
		{ "distinct_bytes", "gauge", "Bytes of memory pinned now: per process the union of its pinned ranges (memory registered several times counts once), summed.", offsetof(struct stats, distinct_bytes) },
		{ "pins", "gauge", "Live pins (memory regions and driver buffers).", offsetof(struct stats, pins) },
		{ "odp_pins", "gauge", "Live on-demand-paging (ODP) registrations: in mrpin_pins, each holds an MR table entry and pins no memory.", offsetof(struct stats, odp_pins) },
		{ "peer_pins", "gauge", "Live peer memory registrations (GPUDirect RDMA: a GPU's memory through a peer memory client such as nvidia-peermem, or a dma-buf registration): in mrpin_pins, each holds an MR table entry and pins no host page.", offsetof(struct stats, peer_pins) },
		{ "peer_bytes", "gauge", "Bytes of peer memory registered now: device (GPU) memory, which pins no host page; not in mrpin_pinned_bytes, and bounded by no host-bytes limit (max_pinned, max_pin_size).", offsetof(struct stats, peer_bytes) },
		{ "peak_pinned_bytes", "gauge", "Most bytes pinned at once since the module was loaded.", offsetof(struct stats, peak_pinned_bytes) },
		{ "pins_total", "counter", "Pins made.", offsetof(struct stats, pins_total) },
		{ "releases_total", "counter", "Pins released.", offsetof(struct stats, releases_total) },
		{ "untracked_releases_total", "counter", "Releases of pins made before the module was loaded.", offsetof(struct stats, untracked_releases_total) },
		{ "denials_total", "counter", "Pins refused by a limit.", offsetof(struct stats, denials_total) },
		{ "warnings_total", "counter", "Pins over a limit in warn mode (allowed).", offsetof(struct stats, warnings_total) },
		{ "stack_pins_total", "counter", "Registrations of stack memory.", offsetof(struct stats, stack_pins_total) },
		{ "cleanup_releases_total", "counter", "Pins the kernel's cleanup released (process exit, closing the device) instead of a deregistration: leaks.", offsetof(struct stats, cleanup_releases_total) },
		{ "peer_races_total", "counter", "Registrations taken for peer memory that held host pages (the process mapped memory under its own registration): each makes its user's registrations charged as host memory from then on.", offsetof(struct stats, peer_races_total) },
	};
	size_t i;

	family(f, "info", "gauge", "The mrpin module and its version.");
	sample(f, "info", 1, "version", x->version, NULL);
	for (i = 0; i < ARRAY_SIZE(m); i++) {
		/* Only from modules that count it. */
		if ((!strcmp(m[i].name, "distinct_bytes") &&
		     !x->stats.distinct_known) ||
		    (!strcmp(m[i].name, "odp_pins") && !x->stats.odp_known) ||
		    (!strcmp(m[i].name, "peer_pins") && !x->stats.peer_known) ||
		    (!strcmp(m[i].name, "peer_bytes") &&
		     !x->stats.peer_bytes_known) ||
		    (!strcmp(m[i].name, "stack_pins_total") &&
		     !x->stats.stack_known) ||
		    (!strcmp(m[i].name, "cleanup_releases_total") &&
		     !x->stats.cleanup_known) ||
		    (!strcmp(m[i].name, "peer_races_total") &&
		     !x->stats.races_known))
			continue;
		family(f, m[i].name, m[i].type, m[i].help);
		sample(f, m[i].name,
		       *(const uint64_t *)((const char *)&x->stats + m[i].off),
		       NULL);
	}
	export_failures(f, &x->stats);
	if (x->stats.ram_bytes) {
		family(f, "ram_bytes", "gauge",
		       "The machine's RAM, that N% limits are shares of.");
		sample(f, "ram_bytes", x->stats.ram_bytes, NULL);
	}
}

static void export_devs(FILE *f, struct table *t)
{
	size_t i;

#define DEV(i) TBL_ROW(t, struct dev_row, i)
	family(f, "device_info", "gauge", "An RDMA device mrpin follows.");
	for (i = 0; i < t->nrows; i++)
		sample(f, "device_info", 1, "device", DEV(i)->device,
		       "node_guid", DEV(i)->node_guid, NULL);
	family(f, "device_max_mr", "gauge", "The device's MR table size.");
	for (i = 0; i < t->nrows; i++)
		sample(f, "device_max_mr", DEV(i)->max_mr, "device",
		       DEV(i)->device, NULL);
	family(f, "device_pins", "gauge", "Live pins on the device.");
	for (i = 0; i < t->nrows; i++)
		sample(f, "device_pins", DEV(i)->pins, "device",
		       DEV(i)->device, NULL);
	family(f, "device_pinned_bytes", "gauge", "Bytes pinned on the device.");
	for (i = 0; i < t->nrows; i++)
		sample(f, "device_pinned_bytes", DEV(i)->pinned_bytes,
		       "device", DEV(i)->device, NULL);
	/* Modules that count it only. */
	if (!tbl_has(t, "peer_bytes"))
		return;
	family(f, "device_peer_bytes", "gauge",
	       "Bytes of peer memory registered on the device: device (GPU) memory, which pins no host page; not in mrpin_device_pinned_bytes.");
	for (i = 0; i < t->nrows; i++)
		sample(f, "device_peer_bytes", DEV(i)->peer_bytes, "device",
		       DEV(i)->device, NULL);
#undef DEV
}

/*
 * One row of a table of owners (users, cgroups, processes): its pins, its
 * bytes and the labels of its series, "name", value, ... NULL; @gone: the
 * row is summed with the other gone ones into one series.
 */
struct owner {
	uint64_t pins;
	uint64_t bytes;
	const char *labels[5];
	bool gone;
	char buf[24];
};

/*
 * Families @name_pins and @name_pinned_bytes with a series per row of @t
 * that row() describes, and one for the gone rows, if any.
 */
static void export_owners(FILE *f, struct table *t, const char *name,
			  const char *pins_help, const char *bytes_help,
			  void (*row)(struct table *t, size_t i, struct owner *o))
{
	struct owner o, gone;
	char fam[64];
	uint64_t sum;
	size_t i, k;

	for (k = 0; k < 2; k++) {
		snprintf(fam, sizeof(fam), "%s_%s", name,
			 k ? "pinned_bytes" : "pins");
		family(f, fam, "gauge", k ? bytes_help : pins_help);
		sum = 0;
		memset(&gone, 0, sizeof(gone));
		for (i = 0; i < t->nrows; i++) {
			memset(&o, 0, sizeof(o));
			row(t, i, &o);
			if (o.gone) {
				sum += k ? o.bytes : o.pins;
				gone = o;
				continue;
			}
			sample(f, fam, k ? o.bytes : o.pins, o.labels[0],
			       o.labels[1], o.labels[2], o.labels[3], NULL);
		}
		if (gone.gone)
			sample(f, fam, sum, gone.labels[0], gone.labels[1],
			       gone.labels[2], gone.labels[3], NULL);
	}
}

static void user_owner(struct table *t, size_t i, struct owner *o)
{
	const struct user_row *u = TBL_ROW(t, struct user_row, i);
	const char *name;

	snprintf(o->buf, sizeof(o->buf), "%llu", (unsigned long long)u->uid);
	name = u->uid < UINT32_MAX ? user_name((uint32_t)u->uid) : NULL;
	o->pins = u->pins;
	o->bytes = u->pinned_bytes;
	o->labels[0] = "uid";
	o->labels[1] = o->buf;
	o->labels[2] = "user";
	o->labels[3] = name ? name : "";
}

/* Cgroups by path; removed ones ("-") summed into one series. */
static void cgroup_owner(struct table *t, size_t i, struct owner *o)
{
	const struct cgroup_row *c = TBL_ROW(t, struct cgroup_row, i);

	o->pins = c->pins;
	o->bytes = c->pinned_bytes;
	o->labels[0] = "cgroup";
	o->labels[1] = c->cgroup;
	o->gone = !strcmp(c->cgroup, "-");
}

static void proc_owner(struct table *t, size_t i, struct owner *o)
{
	const struct proc_row *p = TBL_ROW(t, struct proc_row, i);

	snprintf(o->buf, sizeof(o->buf), "%llu", (unsigned long long)p->pid);
	o->pins = p->pins;
	o->bytes = p->pinned_bytes;
	o->labels[0] = "pid";
	o->labels[1] = o->buf;
	o->labels[2] = "comm";
	o->labels[3] = p->comm;
}

/*
 * Family @name of the column @col (offset @off in struct proc_row) with the
 * labels of mrpin_process_pinned_bytes: modules that give it only.
 */
static void export_proc_column(FILE *f, struct table *t, const char *name,
			       const char *col, size_t off, const char *help)
{
	const char *row;
	struct owner o;
	size_t i;

	if (!tbl_has(t, col))
		return;
	family(f, name, "gauge", help);
	for (i = 0; i < t->nrows; i++) {
		memset(&o, 0, sizeof(o));
		proc_owner(t, i, &o);
		row = (const char *)TBL_ROW(t, struct proc_row, i);
		sample(f, name, *(const uint64_t *)(row + off), o.labels[0],
		       o.labels[1], o.labels[2], o.labels[3], NULL);
	}
}

/* One limit of every rule that has it (unlimited: no sample). */
static void export_limit(FILE *f, const struct policy *p, uint64_t ram,
			 int k, const char *name, const char *help)
{
	const struct rule *r;
	char uid[24];
	uint64_t v;
	size_t i;

	family(f, name, "gauge", help);
	for (i = 0; i < p->nrules + 2; i++) {
		r = i == 0 ? &p->global : i == 1 ? &p->process : &p->rules[i - 2];
		v = r->val[k];
		if (k == K_MAX_PINNED && !rule_max_pinned(r, ram, &v))
			continue;	/* N% of an unknown RAM */
		if (v == UNLIMITED)
			continue;
		snprintf(uid, sizeof(uid), "%u", r->uid);
		if (r->scope == SC_UID)
			sample(f, name, v, "scope", "uid", "uid", uid, NULL);
		else if (r->scope == SC_CGROUP)
			sample(f, name, v, "scope", "cgroup", "cgroup",
			       r->cgroup, NULL);
		else
			sample(f, name, v, "scope", scope_names[r->scope], NULL);
	}
}

static void export_all(FILE *f, struct export *x)
{
	uint64_t ram = x->stats.ram_bytes;

	export_stats(f, x);
	export_devs(f, &x->devs);
	export_owners(f, &x->users, "user", "Live pins of the user's processes.",
		      "Bytes pinned by the user's processes.", user_owner);
	export_owners(f, &x->cgroups, "cgroup",
		      "Live pins in the cgroup v2 subtree (removed cgroups: \"-\").",
		      "Bytes pinned in the cgroup v2 subtree (removed cgroups: \"-\").",
		      cgroup_owner);
	if (opts.given & OPT_PER_PROCESS) {
		export_owners(f, &x->procs, "process", "Live pins of the process.",
			      "Bytes pinned by the process.", proc_owner);
		export_proc_column(f, &x->procs, "process_distinct_bytes",
				   "distinct_bytes",
				   offsetof(struct proc_row, distinct_bytes),
				   "Bytes of memory the process pins: the union of its pinned ranges (memory registered several times counts once).");
		export_proc_column(f, &x->procs, "process_peer_bytes",
				   "peer_bytes",
				   offsetof(struct proc_row, peer_bytes),
				   "Bytes of peer memory the process registered: device (GPU) memory, which pins no host page; not in mrpin_process_pinned_bytes.");
	}
	if (!x->policy.known)
		return;
	export_limit(f, &x->policy, ram, K_MAX_PINNED, "limit_max_pinned_bytes",
		     "The max_pinned limit of each rule that has one.");
	export_limit(f, &x->policy, ram, K_MAX_PINS, "limit_max_pins",
		     "The max_pins limit of each rule that has one.");
	export_limit(f, &x->policy, ram, K_MAX_PIN_SIZE,
		     "limit_max_pin_size_bytes",
		     "The max_pin_size limit of each rule that has one.");
}

static int export_load(struct export *x)
{
	int ret;

	ret = load_version(x->version, sizeof(x->version));
	if (!ret)
		ret = load_stats(&x->stats);
	if (!ret)
		ret = load_devs(&x->devs);
	if (!ret)
		ret = load_users(&x->users);
	if (!ret)
		ret = load_cgroups(&x->cgroups);
	if (!ret && (opts.given & OPT_PER_PROCESS))
		ret = load_procs(&x->procs);
	/* Without the policy (refused: said why), the rest. */
	if (!ret && policy_load(&x->policy))
		policy_init(&x->policy);
	return ret;
}

/* Write to a temporary file beside @file, then rename it over @file. */
static int export_file(struct export *x, const char *file)
{
	char *copy = xstrdup(file), *tmp;
	size_t len = strlen(file) + 32;
	int fd, ret = EXIT_FAIL;
	FILE *f;

	tmp = xmalloc(len);
	snprintf(tmp, len, "%s/.%s.XXXXXX", dirname(copy),
		 basename((char *)file));
	fd = mkstemp(tmp);
	if (fd < 0) {
		pr_err("%s: %s", tmp, strerror(errno));
		goto out;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		goto fail;
	}
	export_all(f, x);
	if (fchmod(fd, 0644) || fflush(f) || ferror(f) || fsync(fd)) {
		fclose(f);
		goto fail;
	}
	if (fclose(f) || rename(tmp, file))
		goto fail;
	ret = EXIT_OK;
	goto out;
fail:
	pr_err("writing %s: %s", file, strerror(errno));
	unlink(tmp);
out:
	free(tmp);
	free(copy);
	return ret;
}

static int export_prometheus(int argc, char **argv)
{
	struct export x;
	int ret;

	memset(&x, 0, sizeof(x));
	policy_init(&x.policy);
	ret = options_only("export prometheus", OPT_PER_PROCESS);
	if (!ret && argc > 1)
		ret = usage_err("export prometheus: unexpected argument '%s'",
				argv[1]);
	if (!ret)
		ret = export_load(&x);
	if (!ret && argc == 1)
		ret = export_file(&x, argv[0]);
	else if (!ret)
		export_all(stdout, &x);
	tbl_free(&x.devs);
	tbl_free(&x.users);
	tbl_free(&x.cgroups);
	tbl_free(&x.procs);
	policy_free(&x.policy);
	return ret;
}

static int export_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl export prometheus [--per-process] [FILE]\n"
	      "\n"
	      "mrpin's counters in the Prometheus text format (node_exporter's textfile\n"
	      "collector): totals (the failed pins by cause), and series per device,\n"
	      "user, cgroup and limit; per process (pid and comm labels) only with\n"
	      "--per-process.  Peer memory (a GPU's, which pins no host page) apart:\n"
	      "mrpin_peer_pins, mrpin_peer_bytes, per device and per process too.  FILE\n"
	      "is replaced atomically (a temporary file in its directory, renamed).\n",
	      stdout);
	return EXIT_OK;
}

int do_export(int argc, char **argv)
{
	static const struct cmd export_cmds[] = {
		{ .name = "prometheus", .fn = export_prometheus },
		{ .name = "help", .fn = export_help },
		{ .name = NULL },
	};

	if (opts.help)
		return export_help(0, NULL);
	return cmd_select(export_cmds, "export", argc, argv, NULL);
}
