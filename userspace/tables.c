// SPDX-License-Identifier: GPL-2.0
/*
 * Reading mrpin's tables under debugfs: every table's columns and the
 * loader that gives its rows (the row types are in mrpinctl.h), for every
 * command alike.
 *
 * A table is text: a first line "# " and the column names, then one row per
 * line, whitespace-separated.  Columns are found BY NAME in the header, so
 * that columns a later module adds (always at the end of a line) are
 * ignored, and a module that lacks a column this tool needs is named as
 * such; the columns older modules lack are optional, and a command that
 * needs one asks for it (tbl_require()).  comm and cgroup are escaped as
 * /proc/self/mountinfo escapes them (\ooo octal for space, tab, newline and
 * backslash): unescaped in place.  Anything else that does not parse is an
 * error that names the file, the line and the column.
 *
 * `stats` is "key value" lines instead; `events` is a stream with the same
 * header, read without blocking, whose "# lost N" lines are rows too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "mrpinctl.h"
#include "version.h"

#define DEBUGFS_MAGIC 0x64626720

char *debugfs_path(const char *name)
{
	size_t len = strlen(opts.debugfs) + strlen(name) + 2;
	char *path = xmalloc(len);

	snprintf(path, len, "%s/%s", opts.debugfs, name);
	return path;
}

/*
 * Is mrpin's directory there?  If not, say in one sentence why not and
 * what to do, and return EXIT_FAIL.
 */
int debugfs_check(void)
{
	const char *dir = opts.debugfs;
	struct statfs sfs;
	struct stat st;
	int err;

	if (stat(dir, &st))
		err = errno;
	else if (!S_ISDIR(st.st_mode))
		err = ENOTDIR;
	else
		return 0;
	if (err == EACCES) {
		pr_err("permission denied: %s is readable by root only: run mrpinctl as root (e.g. with sudo)",
		       dir);
	} else if (opts.debugfs_default &&
		   (statfs("/sys/kernel/debug", &sfs) ||
		    sfs.f_type != DEBUGFS_MAGIC)) {
		pr_err("debugfs is not mounted: run 'mount -t debugfs none /sys/kernel/debug'; %s was not found",
		       dir);
	} else if (err == ENOENT || err == ENOTDIR) {
		fprintf(stderr, "mrpin is not loaded: run 'modprobe mrpin' (or insmod kmod/mrpin.ko); %s was not found\n",
			dir);
	} else {
		pr_err("%s: %s", dir, strerror(err));
	}
	return EXIT_FAIL;
}

/* Explain a failed open of debugfs file @name (errno set). */
static int open_failed(const char *name, const char *path)
{
	int err = errno;

	if (debugfs_check())
		return EXIT_FAIL;
	if (err == EACCES || err == EPERM)
		pr_err("permission denied reading %s: run mrpinctl as root (e.g. with sudo)",
		       path);
	else if (err == ENOENT)
		pr_err("%s was not found: this mrpin module has no '%s' (mrpinctl %s needs it; update the module)",
		       path, name, MRPIN_VERSION);
	else
		pr_err("%s: %s", path, strerror(err));
	return EXIT_FAIL;
}

/*
 * Open debugfs file @name with @flags (and O_RDONLY): the descriptor, its
 * path in *path (to free); or -1 and the reason said.
 */
int debugfs_open(const char *name, int flags, char **path)
{
	int fd;

	*path = debugfs_path(name);
	fd = open(*path, O_RDONLY | O_CLOEXEC | flags);
	if (fd >= 0)
		return fd;
	open_failed(name, *path);
	free(*path);
	*path = NULL;
	return -1;
}

/* The whole of debugfs file @name, NUL-terminated, in *buf (to free). */
int debugfs_read(const char *name, char **buf, size_t *len)
{
	char *path = debugfs_path(name);
	int err, ret = 0;

	err = read_whole(path, buf, len);
	if (err) {
		errno = err;
		ret = open_failed(name, path);
	}
	free(path);
	return ret;
}

/* --- parsing --- */

/* Undo mountinfo-style \ooo escapes in place; a bad escape stays as is. */
void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7' &&
		    (s[1] != '0' || s[2] != '0' || s[3] != '0')) {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Split @line in place at spaces and tabs; at most @max words. */
int split_words(char *line, char **words, int max)
{
	int n = 0;
	char *p = line;

	for (;;) {
		p += strspn(p, " \t");
		if (!*p || n == max)
			return n;
		words[n++] = p;
		p += strcspn(p, " \t");
		if (*p)
			*p++ = '\0';
	}
}

/* Store @word in the row as field @f says; false if it does not parse. */
static bool field_set(void *row, const struct tbl_field *f, char *word)
{
	uint64_t *v = (uint64_t *)((char *)row + f->off);

	switch (f->type) {
	case TF_STR:
		unescape(word);
		*(char **)((char *)row + f->off) = word;
		return true;
	case TF_LIMIT:
		if (!strcmp(word, "unlimited")) {
			*v = UNLIMITED;
			return true;
		}
		/* fall through */
	case TF_U64:
		return parse_u64_all(word, v);
	}
	return false;
}

/* The next line of *pos, NUL-terminated; NULL at the end. */
static char *next_line(char **pos, bool *complete)
{
	char *line = *pos, *nl;

	if (!*line)
		return NULL;
	nl = strchr(line, '\n');
	*complete = nl != NULL;
	if (nl) {
		*nl = '\0';
		*pos = nl + 1;
	} else {
		*pos = line + strlen(line);
	}
	return line;
}

/* Map each field to its column in the header @line; -1 when absent. */
int tbl_header_parse(struct tbl_header *h, char *line,
		     const struct tbl_field *f, size_t nf)
{
	char *words[TBL_MAX_COLUMNS];
	size_t i;
	int j, n;

	if (strncmp(line, "# ", 2)) {
		pr_err("%s:1: expected a header line starting with '# '",
		       h->path);
		return EXIT_FAIL;
	}
	n = split_words(line + 2, words, TBL_MAX_COLUMNS);
	for (i = 0; i < nf; i++) {
		h->col[i] = -1;
		for (j = 0; j < n && h->col[i] < 0; j++)
			if (!strcmp(words[j], f[i].name))
				h->col[i] = j;
		if (h->col[i] < 0 && !f[i].optional) {
			pr_err("%s:1: no column '%s' in the header (mrpinctl %s needs it; update the module)",
			       h->path, f[i].name, MRPIN_VERSION);
			return EXIT_FAIL;
		}
	}
	h->ncols = n;
	return 0;
}

/* Parse row @line (number @lineno) into @row. */
int tbl_row_parse(const struct tbl_header *h, unsigned int lineno, char *line,
		  const struct tbl_field *f, size_t nf, void *row)
{
	char *words[TBL_MAX_COLUMNS];
	size_t i;
	int n;

	n = split_words(line, words, TBL_MAX_COLUMNS);
	if (n < h->ncols) {
		pr_err("%s:%u: expected %d columns, found %d", h->path, lineno,
		       h->ncols, n);
		return EXIT_FAIL;
	}
	for (i = 0; i < nf; i++) {
		if (h->col[i] < 0)
			continue;
		if (!field_set(row, &f[i], words[h->col[i]])) {
			pr_err("%s:%u: column '%s': expected %s, found '%s'",
			       h->path, lineno, f[i].name,
			       f[i].type == TF_LIMIT ? "a number or 'unlimited'" :
						       "a number",
			       words[h->col[i]]);
			return EXIT_FAIL;
		}
	}
	return 0;
}

/* Parse t->buf (a whole table) into t->rows. */
static int tbl_parse(struct table *t, const struct tbl_field *f, size_t nf,
		     size_t row_size)
{
	struct tbl_header h = { .path = t->path };
	char *pos = t->buf, *line;
	unsigned int lineno = 1;
	size_t max = 1, i;
	bool complete;
	int ret;

	if (nf > TBL_MAX_COLUMNS)
		return EXIT_FAIL;
	t->fields = f;
	t->nfields = nf;
	for (line = t->buf; *line; line++)
		max += *line == '\n';
	t->rows = xrealloc(NULL, max * row_size);
	memset(t->rows, 0, max * row_size);
	t->nrows = 0;
	line = next_line(&pos, &complete);
	if (!line) {
		pr_err("%s: empty: expected a header line", t->path);
		return EXIT_FAIL;
	}
	ret = tbl_header_parse(&h, line, f, nf);
	for (i = 0; !ret && i < nf; i++)
		if (h.col[i] >= 0)
			t->have |= 1ULL << i;
	while (!ret && (line = next_line(&pos, &complete))) {
		lineno++;
		if (!complete) {
			pr_err("%s:%u: truncated line (no newline at the end)",
			       t->path, lineno);
			return EXIT_FAIL;
		}
		if (!line[strspn(line, " \t")])
			continue;
		ret = tbl_row_parse(&h, lineno, line, f, nf,
				    (char *)t->rows + t->nrows * row_size);
		t->nrows++;
	}
	return ret;
}

int tbl_load(struct table *t, const char *name, const struct tbl_field *f,
	     size_t nf, size_t row_size)
{
	size_t len;
	int ret;

	memset(t, 0, sizeof(*t));
	ret = debugfs_read(name, &t->buf, &len);
	if (ret)
		return ret;
	t->path = debugfs_path(name);
	if (strlen(t->buf) != len) {
		pr_err("%s: NUL byte in the table", t->path);
		return EXIT_FAIL;
	}
	return tbl_parse(t, f, nf, row_size);
}

/* Was field @name among @f there (bit i of @have: field i was)? */
static bool field_have(const struct tbl_field *f, size_t nf, uint64_t have,
		       const char *name)
{
	size_t i;

	for (i = 0; i < nf; i++)
		if (!strcmp(f[i].name, name))
			return have & (1ULL << i);
	return false;
}

/* Has @t column @name (an optional one: does the module give it)? */
bool tbl_has(const struct table *t, const char *name)
{
	return field_have(t->fields, t->nfields, t->have, name);
}

/*
 * The optional columns @names that a command needs: each of them in the
 * header of @t, or the first that is not named as missing.
 */
int tbl_require(const struct table *t, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (tbl_has(t, names[i]))
			continue;
		pr_err("%s:1: no column '%s' in the header (mrpinctl %s needs it; update the module)",
		       t->path, names[i], MRPIN_VERSION);
		return EXIT_FAIL;
	}
	return 0;
}

void tbl_free(struct table *t)
{
	free(t->path);
	free(t->buf);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

/*
 * A "key value" file (stats): the known keys into @dst, others ignored;
 * bit i of *have set when key @f[i] is there.
 */
int kv_load(const char *name, const struct tbl_field *f, size_t nf, void *dst,
	    uint64_t *have)
{
	char *buf, *pos, *line, *words[3], *path;
	unsigned int lineno = 0;
	uint64_t seen = 0;
	int ret = 0, n;
	bool complete;
	size_t len, i;

	ret = debugfs_read(name, &buf, &len);
	if (ret)
		return ret;
	path = debugfs_path(name);
	pos = buf;
	while (!ret && (line = next_line(&pos, &complete))) {
		lineno++;
		n = split_words(line, words, 3);
		if (!n)
			continue;
		for (i = 0; i < nf && strcmp(f[i].name, words[0]); i++)
			;
		if (i == nf)
			continue;
		if (n != 2 || !complete || !field_set(dst, &f[i], words[1])) {
			pr_err("%s:%u: expected '%s NUMBER'", path, lineno,
			       f[i].name);
			ret = EXIT_FAIL;
		}
		seen |= 1ULL << i;
	}
	for (i = 0; !ret && i < nf; i++) {
		if (!(seen & (1ULL << i)) && !f[i].optional) {
			pr_err("%s: no '%s' line (mrpinctl %s needs it; update the module)",
			       path, f[i].name, MRPIN_VERSION);
			ret = EXIT_FAIL;
		}
	}
	*have = seen;
	free(path);
	free(buf);
	return ret;
}

/* --- the tables --- */

/* A column, and one that older modules lack. */
#define F(type, name, t) { #name, t, offsetof(type, name), false }
#define F_OPT(type, name, t) { #name, t, offsetof(type, name), true }
/* failures_CAUSE_total (newer modules only), into failures[@c]. */
#define F_FAIL(cause, c) \
	{ "failures_" cause "_total", TF_U64, offsetof(struct stats, failures[c]), true }

/* Why the kernel's pin failed: a fail event's key, the stats' CAUSE. */
const char *const cause_names[NR_CAUSES] = { MRPIN_FAIL_CAUSE_NAMES };

static const struct tbl_field stats_fields[] = {
	F(struct stats, pins, TF_U64),
	F_OPT(struct stats, odp_pins, TF_U64),
	F_OPT(struct stats, peer_pins, TF_U64),
	F_OPT(struct stats, peer_bytes, TF_U64),
	F(struct stats, pinned_bytes, TF_U64),
	F_OPT(struct stats, distinct_bytes, TF_U64),
	F(struct stats, peak_pinned_bytes, TF_U64),
	F(struct stats, pins_total, TF_U64),
	F(struct stats, releases_total, TF_U64),
	F(struct stats, untracked_releases_total, TF_U64),
	F_OPT(struct stats, denials_total, TF_U64),
	F_OPT(struct stats, warnings_total, TF_U64),
	F_OPT(struct stats, stack_pins_total, TF_U64),
	F_OPT(struct stats, cleanup_releases_total, TF_U64),
	F_OPT(struct stats, peer_races_total, TF_U64),
	F_OPT(struct stats, ram_bytes, TF_U64),
	F_OPT(struct stats, failures_total, TF_U64),
	F_FAIL("memlock", MRPIN_FAIL_MEMLOCK),
	F_FAIL("unmapped", MRPIN_FAIL_UNMAPPED),
	F_FAIL("readonly", MRPIN_FAIL_READONLY),
	F_FAIL("iomem", MRPIN_FAIL_IOMEM),
	F_FAIL("fault", MRPIN_FAIL_FAULT),
	F_FAIL("invalid", MRPIN_FAIL_INVALID),
	F_FAIL("nomem", MRPIN_FAIL_NOMEM),
	F_FAIL("other", MRPIN_FAIL_OTHER),
	F_FAIL("device", MRPIN_FAIL_DEVICE),
};

static const struct tbl_field dev_fields[] = {
	F(struct dev_row, device, TF_STR),
	F(struct dev_row, node_guid, TF_STR),
	F(struct dev_row, max_mr, TF_U64),
	F(struct dev_row, pins, TF_U64),
	F(struct dev_row, pinned_bytes, TF_U64),
	F_OPT(struct dev_row, peer_bytes, TF_U64),
};

static const struct tbl_field proc_fields[] = {
	F(struct proc_row, pid, TF_U64),
	F(struct proc_row, comm, TF_STR),
	F(struct proc_row, uid, TF_U64),
	F(struct proc_row, cgroup, TF_STR),
	F(struct proc_row, pins, TF_U64),
	F(struct proc_row, pinned_bytes, TF_U64),
	F_OPT(struct proc_row, distinct_bytes, TF_U64),
	F(struct proc_row, peak_bytes, TF_U64),
	F(struct proc_row, vm_pinned_bytes, TF_U64),
	F(struct proc_row, memlock_bytes, TF_LIMIT),
	F_OPT(struct proc_row, denials, TF_U64),
	F_OPT(struct proc_row, failures, TF_U64),
	F_OPT(struct proc_row, bytes_4k, TF_U64),
	F_OPT(struct proc_row, bytes_2m, TF_U64),
	F_OPT(struct proc_row, bytes_1g, TF_U64),
	F_OPT(struct proc_row, stack_pins, TF_U64),
	F_OPT(struct proc_row, cleanup_releases, TF_U64),
	F_OPT(struct proc_row, registrations, TF_U64),
	F_OPT(struct proc_row, deregistrations, TF_U64),
	F_OPT(struct proc_row, reg_per_s, TF_U64),
	F_OPT(struct proc_row, life_hist, TF_STR),
	F_OPT(struct proc_row, peer_bytes, TF_U64),
};

static const struct tbl_field pin_fields[] = {
	F(struct pin_row, id, TF_U64),
	F(struct pin_row, pid, TF_U64),
	F(struct pin_row, comm, TF_STR),
	F(struct pin_row, device, TF_STR),
	F(struct pin_row, start, TF_U64),
	F(struct pin_row, length, TF_U64),
	F(struct pin_row, pinned_bytes, TF_U64),
	F(struct pin_row, caller, TF_STR),
	F(struct pin_row, age_ms, TF_U64),
	F_OPT(struct pin_row, stack, TF_U64),
	F_OPT(struct pin_row, align, TF_U64),
	F_OPT(struct pin_row, oversized, TF_U64),
	F_OPT(struct pin_row, odp, TF_U64),
	F_OPT(struct pin_row, state, TF_STR),
	F_OPT(struct pin_row, peer, TF_U64),
};

static const struct tbl_field user_fields[] = {
	F(struct user_row, uid, TF_U64),
	F(struct user_row, pins, TF_U64),
	F(struct user_row, pinned_bytes, TF_U64),
};

static const struct tbl_field cgroup_fields[] = {
	F(struct cgroup_row, id, TF_U64),
	F(struct cgroup_row, cgroup, TF_STR),
	F(struct cgroup_row, pins, TF_U64),
	F(struct cgroup_row, pinned_bytes, TF_U64),
	F_OPT(struct cgroup_row, peak_pinned_bytes, TF_U64),
};

static const struct tbl_field leak_fields[] = {
	F(struct leak_row, comm, TF_STR),
	F(struct leak_row, uid, TF_U64),
	F(struct leak_row, count, TF_U64),
	F(struct leak_row, bytes, TF_U64),
	F(struct leak_row, last_time_ns, TF_U64),
};

static const struct tbl_field site_fields[] = {
	F(struct site_row, pid, TF_U64),
	F(struct site_row, comm, TF_STR),
	F(struct site_row, pins, TF_U64),
	F(struct site_row, bytes, TF_U64),
	F(struct site_row, oldest_age_ms, TF_U64),
	F(struct site_row, frames, TF_STR),
	F_OPT(struct site_row, newest_age_ms, TF_U64),
};

static const struct tbl_field event_fields[] = {
	F(struct event, seq, TF_U64),
	F(struct event, time_ns, TF_U64),
	F(struct event, action, TF_STR),
	F(struct event, pid, TF_U64),
	F(struct event, comm, TF_STR),
	F(struct event, uid, TF_U64),
	F(struct event, scope, TF_STR),
	F(struct event, key, TF_STR),
	F(struct event, asked, TF_U64),
	F(struct event, usage, TF_U64),
	F(struct event, limit, TF_LIMIT),
	/* F_OPT(struct event, errno, ...) were errno not a macro. */
	{ "errno", TF_U64, offsetof(struct event, errnum), true },
};

#undef F_FAIL
#undef F_OPT
#undef F

/*
 * The RAM is the one of the machine whose mrpin is read, so that a snapshot
 * from another machine is read with that machine's RAM.  Modules from
 * before that line have none: on the live debugfs the RAM is this
 * machine's; a snapshot without it has no RAM to tell (0).  Those before
 * failures_total did not count the kernel's failed pins, those before
 * distinct_bytes the union of what is pinned, those before odp_pins the
 * on-demand-paging registrations (which they did not record), those before
 * peer_pins and peer_bytes the peer memory (GPU memory registered through
 * a peer memory client, which pins no host page).
 */
int load_stats(struct stats *s)
{
	uint64_t have = 0;
	char name[64];
	int ret, i;

	memset(s, 0, sizeof(*s));
	ret = kv_load("stats", stats_fields, ARRAY_SIZE(stats_fields), s,
		      &have);
	if (!ret && !s->ram_bytes && opts.debugfs_default)
		s->ram_bytes = host_ram_bytes();
	s->failures_known = field_have(stats_fields, ARRAY_SIZE(stats_fields),
				       have, "failures_total");
	for (i = 0; i < NR_CAUSES; i++) {
		snprintf(name, sizeof(name), "failures_%s_total",
			 cause_names[i]);
		s->cause_known[i] = field_have(stats_fields,
					       ARRAY_SIZE(stats_fields), have,
					       name);
	}
	s->distinct_known = field_have(stats_fields, ARRAY_SIZE(stats_fields),
				       have, "distinct_bytes");
	s->odp_known = field_have(stats_fields, ARRAY_SIZE(stats_fields), have,
				  "odp_pins");
	s->peer_known = field_have(stats_fields, ARRAY_SIZE(stats_fields),
				   have, "peer_pins");
	s->peer_bytes_known = field_have(stats_fields,
					 ARRAY_SIZE(stats_fields), have,
					 "peer_bytes");
	s->stack_known = field_have(stats_fields, ARRAY_SIZE(stats_fields),
				    have, "stack_pins_total");
	s->cleanup_known = field_have(stats_fields, ARRAY_SIZE(stats_fields),
				      have, "cleanup_releases_total");
	s->races_known = field_have(stats_fields, ARRAY_SIZE(stats_fields),
				    have, "peer_races_total");
	return ret;
}

/*
 * The RAM that pins hold: the distinct bytes, where the module counts them
 * (memory registered several times is in RAM once), else every pin's.
 */
uint64_t stats_ram_pinned(const struct stats *s)
{
	return s->distinct_known ? s->distinct_bytes : s->pinned_bytes;
}

int load_devs(struct table *t)
{
	return tbl_load(t, "devices", dev_fields, ARRAY_SIZE(dev_fields),
			sizeof(struct dev_row));
}

int load_procs(struct table *t)
{
	return tbl_load(t, "procs", proc_fields, ARRAY_SIZE(proc_fields),
			sizeof(struct proc_row));
}

int load_pins(struct table *t)
{
	return tbl_load(t, "pins", pin_fields, ARRAY_SIZE(pin_fields),
			sizeof(struct pin_row));
}

int load_users(struct table *t)
{
	return tbl_load(t, "users", user_fields, ARRAY_SIZE(user_fields),
			sizeof(struct user_row));
}

int load_cgroups(struct table *t)
{
	return tbl_load(t, "cgroups", cgroup_fields, ARRAY_SIZE(cgroup_fields),
			sizeof(struct cgroup_row));
}

int load_leaks(struct table *t)
{
	return tbl_load(t, "leaks", leak_fields, ARRAY_SIZE(leak_fields),
			sizeof(struct leak_row));
}

int load_callsites(struct table *t)
{
	return tbl_load(t, "callsites", site_fields, ARRAY_SIZE(site_fields),
			sizeof(struct site_row));
}

/*
 * Line @lineno of the `events` stream: line 1 is the header, into @h; then
 * an event or "# lost N" into @e (*got set), or nothing (other comments,
 * blank lines).
 */
int event_line(struct tbl_header *h, unsigned int lineno, char *line,
	       struct event *e, bool *got)
{
	*got = false;
	if (lineno == 1)
		return tbl_header_parse(h, line, event_fields,
					ARRAY_SIZE(event_fields));
	memset(e, 0, sizeof(*e));
	e->errnum = ERRNO_UNKNOWN;	/* older modules do not say it */
	if (!strncmp(line, "# lost ", 7) && parse_u64_all(line + 7, &e->asked)) {
		e->seq = EVENT_LOST;
		*got = true;
		return 0;
	}
	if (line[0] == '#' || !line[strspn(line, " \t")])
		return 0;
	if (tbl_row_parse(h, lineno, line, event_fields,
			  ARRAY_SIZE(event_fields), e))
		return EXIT_FAIL;
	*got = true;
	return 0;
}

/*
 * The events the ring holds now, oldest first, as rows of struct event:
 * `events` is a stream that blocks when it has nothing new, so it is read
 * non-blocking until it has no more.
 */
int load_events(struct table *t)
{
	struct tbl_header h = { 0 };
	unsigned int lineno = 0;
	char *line, *nl, *end;
	struct event e;
	size_t len;
	int fd, ret;
	bool got;

	memset(t, 0, sizeof(*t));
	fd = debugfs_open("events", O_NONBLOCK, &t->path);
	if (fd < 0)
		return EXIT_FAIL;
	h.path = t->path;
	ret = read_fd(fd, &t->buf, &len);
	close(fd);
	if (ret) {
		pr_err("reading %s: %s", t->path, strerror(ret));
		return EXIT_FAIL;
	}
	if (len && t->buf[len - 1] != '\n') {
		pr_err("%s: truncated (no newline at the end)", t->path);
		return EXIT_FAIL;
	}
	end = t->buf + len;
	for (line = t->buf; !ret && line < end; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(end - line));
		*nl = '\0';
		ret = event_line(&h, ++lineno, line, &e, &got);
		if (ret || !got)
			continue;
		t->rows = xrealloc(t->rows, (t->nrows + 1) * sizeof(e));
		((struct event *)t->rows)[t->nrows++] = e;
	}
	if (!ret && !lineno) {
		pr_err("%s: empty: expected a header line", t->path);
		ret = EXIT_FAIL;
	}
	return ret;
}

/* The module's version ("0.1.0") from "mrpin 0.1.0". */
int load_version(char *out, size_t len)
{
	char *buf, *words[3];
	size_t n;
	int ret;

	ret = debugfs_read("version", &buf, &n);
	if (ret)
		return ret;
	buf[strcspn(buf, "\n")] = '\0';
	if (split_words(buf, words, 3) != 2 || strcmp(words[0], "mrpin")) {
		pr_err("%s/version: expected 'mrpin VERSION'", opts.debugfs);
		ret = EXIT_FAIL;
	} else {
		snprintf(out, len, "%s", words[1]);
	}
	free(buf);
	return ret;
}

/* The index of cause @key in cause_names[]; -1 if it is none. */
int cause_index(const char *key)
{
	int i;

	for (i = 0; i < NR_CAUSES; i++)
		if (cause_names[i] && !strcmp(cause_names[i], key))
			return i;
	return -1;
}

/*
 * Are event @e's usage and limit bytes: those of max_pinned, max_pin_size
 * and the stack rule, and a failure's VmPin and RLIMIT_MEMLOCK?  Else they
 * are counts (max_pins, a device's MR table and the registrations its
 * driver refused: its live pins and max_mr), or the numbers of a key or
 * cause this tool does not know, told as they are.
 */
bool event_in_bytes(const struct event *e)
{
	int c;

	if (!strcmp(e->action, "fail")) {
		c = cause_index(e->key);
		return c >= 0 && c != MRPIN_FAIL_DEVICE;
	}
	return !strcmp(e->key, "max_pinned") ||
	       !strcmp(e->key, "max_pin_size") || !strcmp(e->key, "stack");
}

/* --- sorting --- */

const char *const proc_sort_names[] = { "pinned", "pins", "peak", NULL };

static enum proc_sort sort_by;

static uint64_t proc_key(const struct proc_row *p)
{
	switch (sort_by) {
	case SORT_PINS:
		return p->pins;
	case SORT_PEAK:
		return p->peak_bytes;
	default:
		return p->pinned_bytes;
	}
}

/* Largest first; by pid for equal keys. */
static int proc_cmp(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;
	uint64_t kx = proc_key(x), ky = proc_key(y);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void procs_sort(struct table *t, enum proc_sort by)
{
	sort_by = by;
	if (t->nrows)
		qsort(t->rows, t->nrows, sizeof(struct proc_row), proc_cmp);
}
