/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Readers of mrpin's views for the selftests: the debugfs tables (`procs`,
 * `pins`, `devices`, `users`, `cgroups`, `leaks`) by column name, `stats`
 * by key, and the lines of `events`.  Each row type has every column the
 * tests look at; a view without one of them is malformed (-EPROTO).
 */
#ifndef __MRPIN_TABLES_H
#define __MRPIN_TABLES_H

#include "mrpin_utils.h"

/*
 * The debugfs tables: a first line "# " + column names, then one row per
 * line, fields separated by white space.  The readers below find each
 * field they want by its column's name and fail with -EPROTO when one is
 * missing or malformed; columns they do not know are ignored.
 */
struct mrpin_proc_row {
	pid_t pid;
	char comm[64];
	uint64_t uid;
	char cgroup[512];
	uint64_t pins;
	uint64_t pinned_bytes;
	uint64_t distinct_bytes;
	uint64_t peak_bytes;
	uint64_t vm_pinned_bytes;
	uint64_t memlock_bytes;	/* MRPIN_UNLIMITED: "unlimited" */
	uint64_t denials;
	uint64_t failures;
	uint64_t bytes_4k;
	uint64_t bytes_2m;
	uint64_t bytes_1g;
	uint64_t stack_pins;
	uint64_t cleanup_releases;
	uint64_t registrations;
	uint64_t reg_per_s;
	char life_hist[1024];
};

struct mrpin_pin_row {
	uint64_t id;
	pid_t pid;
	char comm[64];
	char device[64];
	uint64_t start;
	uint64_t length;
	uint64_t pinned_bytes;
	char caller[128];
	uint64_t age_ms;
	uint64_t stack;
	uint64_t bytes_4k;
	uint64_t bytes_2m;
	uint64_t bytes_1g;
	uint64_t align;
	uint64_t oversized;
	uint64_t odp;
};

struct mrpin_dev_row {
	char device[64];
	char node_guid[32];
	uint64_t max_mr;
	uint64_t pins;
	uint64_t pinned_bytes;
};

struct mrpin_stats {
	uint64_t pins;
	uint64_t odp_pins;
	uint64_t pinned_bytes;
	uint64_t distinct_bytes;
	uint64_t peak_pinned_bytes;
	uint64_t pins_total;
	uint64_t releases_total;
	uint64_t untracked_releases_total;
	uint64_t denials_total;
	uint64_t warnings_total;
	uint64_t bytes_4k;
	uint64_t bytes_2m;
	uint64_t bytes_1g;
	uint64_t stack_pins_total;
	uint64_t oversized_pins_total;
	uint64_t cleanup_releases_total;
	uint64_t failures_total;
	uint64_t failures_memlock_total;
	uint64_t failures_unmapped_total;
	uint64_t failures_readonly_total;
	uint64_t failures_iomem_total;
	uint64_t failures_fault_total;
	uint64_t failures_invalid_total;
	uint64_t failures_nomem_total;
	uint64_t failures_other_total;
	uint64_t failures_device_total;
};

/* `users` and `cgroups`: the pins of one user, or of one cgroup subtree. */
struct mrpin_owner_row {
	uint64_t uid;
	char cgroup[512];
	uint64_t pins;
	uint64_t pinned_bytes;
};

/* `leaks`: the pins released by the kernel's cleanup, by (comm, uid). */
struct mrpin_leak_row {
	char comm[64];
	uint64_t uid;
	uint64_t count;
	uint64_t bytes;
	uint64_t last_time_ns;
};

enum mrpin_col_type {
	MRPIN_COL_U64,
	MRPIN_COL_PID,
	MRPIN_COL_STR,		/* escaped like /proc/self/mountinfo */
	MRPIN_COL_LIMIT,	/* a number or "unlimited" */
};

struct mrpin_col {
	const char *name;
	enum mrpin_col_type type;
	size_t offset;
	size_t size;
};

#define MRPIN_COL(type, field, kind)					\
	{ #field, kind, offsetof(type, field), sizeof(((type *)0)->field) }

static inline int mrpin_store(void *row, const struct mrpin_col *col,
			      const char *field)
{
	void *dst = (char *)row + col->offset;
	uint64_t val;

	switch (col->type) {
	case MRPIN_COL_STR:
		return mrpin_unescape(dst, col->size, field);
	case MRPIN_COL_LIMIT:
		if (!strcmp(field, "unlimited")) {
			*(uint64_t *)dst = MRPIN_UNLIMITED;
			return 0;
		}
		/* fall through */
	case MRPIN_COL_U64:
		return mrpin_parse_u64(field, dst);
	case MRPIN_COL_PID:
		if (mrpin_parse_u64(field, &val) || val > INT32_MAX)
			return -EPROTO;
		*(pid_t *)dst = val;
		return 0;
	}
	return -EPROTO;
}

#define MRPIN_MAX_COLS	32

/* Split the next line of *@pos into fields; 0 at the end of the text. */
static inline int mrpin_split_line(char **pos, char **fields)
{
	char *line = *pos, *end, *tok, *save;
	int n = 0;

	if (!*line)
		return 0;
	end = strchr(line, '\n');
	if (end) {
		*end = '\0';
		*pos = end + 1;
	} else {
		*pos = line + strlen(line);
	}
	for (tok = strtok_r(line, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		if (n == MRPIN_MAX_COLS)
			return -EPROTO;
		fields[n++] = tok;
	}
	return n ? n : -EPROTO;
}

/*
 * Parse the table in debugfs file @name into an array of @row_size rows
 * (*@rowsp, to free()), filling the columns of @cols.
 * Return: the number of rows, or a negative errno.
 */
static inline int mrpin_read_table(const char *name,
				   const struct mrpin_col *cols, int ncols,
				   size_t row_size, void **rowsp)
{
	char path[256], *buf, *pos, *fields[MRPIN_MAX_COLS];
	int idx[MRPIN_MAX_COLS], nhdr, nf, i, j, nrows = 0, ret;
	char *rows = NULL, *tmp;

	snprintf(path, sizeof(path), "%s/%s", MRPIN_DEBUGFS, name);
	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	pos = buf;
	ret = -EPROTO;
	nhdr = mrpin_split_line(&pos, fields);
	if (nhdr < 2 || strcmp(fields[0], "#"))
		goto out;
	for (i = 0; i < ncols; i++) {
		idx[i] = -1;
		for (j = 1; j < nhdr; j++)
			if (!strcmp(fields[j], cols[i].name))
				idx[i] = j - 1;
		if (idx[i] < 0)
			goto out;
	}
	while ((nf = mrpin_split_line(&pos, fields)) != 0) {
		if (nf != nhdr - 1)
			goto out;
		tmp = realloc(rows, (nrows + 1) * row_size);
		if (!tmp) {
			ret = -ENOMEM;
			goto out;
		}
		rows = tmp;
		memset(rows + nrows * row_size, 0, row_size);
		for (i = 0; i < ncols; i++)
			if (mrpin_store(rows + nrows * row_size, &cols[i],
					fields[idx[i]]))
				goto out;
		nrows++;
	}
	ret = nrows;
out:
	free(buf);
	if (ret < 0)
		free(rows);
	else
		*rowsp = rows;
	return ret;
}

#define MRPIN_PROC_COL(f, kind) MRPIN_COL(struct mrpin_proc_row, f, kind)
#define MRPIN_PIN_COL(f, kind) MRPIN_COL(struct mrpin_pin_row, f, kind)
#define MRPIN_DEV_COL(f, kind) MRPIN_COL(struct mrpin_dev_row, f, kind)
#define MRPIN_STAT(f) MRPIN_COL(struct mrpin_stats, f, MRPIN_COL_U64)
#define MRPIN_OWNER_COL(f, kind) MRPIN_COL(struct mrpin_owner_row, f, kind)

static const struct mrpin_col mrpin_user_cols[] = {
	MRPIN_OWNER_COL(uid, MRPIN_COL_U64),
	MRPIN_OWNER_COL(pins, MRPIN_COL_U64),
	MRPIN_OWNER_COL(pinned_bytes, MRPIN_COL_U64),
};

static const struct mrpin_col mrpin_cgroup_cols[] = {
	MRPIN_OWNER_COL(cgroup, MRPIN_COL_STR),
	MRPIN_OWNER_COL(pins, MRPIN_COL_U64),
	MRPIN_OWNER_COL(pinned_bytes, MRPIN_COL_U64),
};

static const struct mrpin_col mrpin_proc_cols[] = {
	MRPIN_PROC_COL(pid, MRPIN_COL_PID),
	MRPIN_PROC_COL(comm, MRPIN_COL_STR),
	MRPIN_PROC_COL(uid, MRPIN_COL_U64),
	MRPIN_PROC_COL(cgroup, MRPIN_COL_STR),
	MRPIN_PROC_COL(pins, MRPIN_COL_U64),
	MRPIN_PROC_COL(pinned_bytes, MRPIN_COL_U64),
	MRPIN_PROC_COL(distinct_bytes, MRPIN_COL_U64),
	MRPIN_PROC_COL(peak_bytes, MRPIN_COL_U64),
	MRPIN_PROC_COL(vm_pinned_bytes, MRPIN_COL_U64),
	MRPIN_PROC_COL(memlock_bytes, MRPIN_COL_LIMIT),
	MRPIN_PROC_COL(denials, MRPIN_COL_U64),
	MRPIN_PROC_COL(failures, MRPIN_COL_U64),
	MRPIN_PROC_COL(bytes_4k, MRPIN_COL_U64),
	MRPIN_PROC_COL(bytes_2m, MRPIN_COL_U64),
	MRPIN_PROC_COL(bytes_1g, MRPIN_COL_U64),
	MRPIN_PROC_COL(stack_pins, MRPIN_COL_U64),
	MRPIN_PROC_COL(cleanup_releases, MRPIN_COL_U64),
	MRPIN_PROC_COL(registrations, MRPIN_COL_U64),
	MRPIN_PROC_COL(reg_per_s, MRPIN_COL_U64),
	MRPIN_PROC_COL(life_hist, MRPIN_COL_STR),
};

static const struct mrpin_col mrpin_pin_cols[] = {
	MRPIN_PIN_COL(id, MRPIN_COL_U64),
	MRPIN_PIN_COL(pid, MRPIN_COL_PID),
	MRPIN_PIN_COL(comm, MRPIN_COL_STR),
	MRPIN_PIN_COL(device, MRPIN_COL_STR),
	MRPIN_PIN_COL(start, MRPIN_COL_U64),
	MRPIN_PIN_COL(length, MRPIN_COL_U64),
	MRPIN_PIN_COL(pinned_bytes, MRPIN_COL_U64),
	MRPIN_PIN_COL(caller, MRPIN_COL_STR),
	MRPIN_PIN_COL(age_ms, MRPIN_COL_U64),
	MRPIN_PIN_COL(stack, MRPIN_COL_U64),
	MRPIN_PIN_COL(bytes_4k, MRPIN_COL_U64),
	MRPIN_PIN_COL(bytes_2m, MRPIN_COL_U64),
	MRPIN_PIN_COL(bytes_1g, MRPIN_COL_U64),
	MRPIN_PIN_COL(align, MRPIN_COL_U64),
	MRPIN_PIN_COL(oversized, MRPIN_COL_U64),
	MRPIN_PIN_COL(odp, MRPIN_COL_U64),
};

static const struct mrpin_col mrpin_dev_cols[] = {
	MRPIN_DEV_COL(device, MRPIN_COL_STR),
	MRPIN_DEV_COL(node_guid, MRPIN_COL_STR),
	MRPIN_DEV_COL(max_mr, MRPIN_COL_U64),
	MRPIN_DEV_COL(pins, MRPIN_COL_U64),
	MRPIN_DEV_COL(pinned_bytes, MRPIN_COL_U64),
};

static const struct mrpin_col mrpin_stat_keys[] = {
	MRPIN_STAT(pins),
	MRPIN_STAT(pinned_bytes),
	MRPIN_STAT(odp_pins),
	MRPIN_STAT(distinct_bytes),
	MRPIN_STAT(peak_pinned_bytes),
	MRPIN_STAT(pins_total),
	MRPIN_STAT(releases_total),
	MRPIN_STAT(untracked_releases_total),
	MRPIN_STAT(denials_total),
	MRPIN_STAT(warnings_total),
	MRPIN_STAT(bytes_4k),
	MRPIN_STAT(bytes_2m),
	MRPIN_STAT(bytes_1g),
	MRPIN_STAT(stack_pins_total),
	MRPIN_STAT(oversized_pins_total),
	MRPIN_STAT(cleanup_releases_total),
	MRPIN_STAT(failures_total),
	MRPIN_STAT(failures_memlock_total),
	MRPIN_STAT(failures_unmapped_total),
	MRPIN_STAT(failures_readonly_total),
	MRPIN_STAT(failures_iomem_total),
	MRPIN_STAT(failures_fault_total),
	MRPIN_STAT(failures_invalid_total),
	MRPIN_STAT(failures_nomem_total),
	MRPIN_STAT(failures_other_total),
	MRPIN_STAT(failures_device_total),
};

#define MRPIN_LEAK_COL(f, kind) MRPIN_COL(struct mrpin_leak_row, f, kind)

static const struct mrpin_col mrpin_leak_cols[] = {
	MRPIN_LEAK_COL(comm, MRPIN_COL_STR),
	MRPIN_LEAK_COL(uid, MRPIN_COL_U64),
	MRPIN_LEAK_COL(count, MRPIN_COL_U64),
	MRPIN_LEAK_COL(bytes, MRPIN_COL_U64),
	MRPIN_LEAK_COL(last_time_ns, MRPIN_COL_U64),
};

/* `procs`: the number of rows in *@rows (to free()), or a negative errno. */
static inline int mrpin_read_procs(struct mrpin_proc_row **rows)
{
	return mrpin_read_table("procs", mrpin_proc_cols,
				MRPIN_ARRAY_SIZE(mrpin_proc_cols),
				sizeof(**rows), (void **)rows);
}

static inline int mrpin_read_pins(struct mrpin_pin_row **rows)
{
	return mrpin_read_table("pins", mrpin_pin_cols,
				MRPIN_ARRAY_SIZE(mrpin_pin_cols),
				sizeof(**rows), (void **)rows);
}

static inline int mrpin_read_devices(struct mrpin_dev_row **rows)
{
	return mrpin_read_table("devices", mrpin_dev_cols,
				MRPIN_ARRAY_SIZE(mrpin_dev_cols),
				sizeof(**rows), (void **)rows);
}

/* `users`: one row per user with live pins. */
static inline int mrpin_read_users(struct mrpin_owner_row **rows)
{
	return mrpin_read_table("users", mrpin_user_cols,
				MRPIN_ARRAY_SIZE(mrpin_user_cols),
				sizeof(**rows), (void **)rows);
}

/* `cgroups`: one row per cgroup holding pins in its subtree. */
static inline int mrpin_read_cgroups(struct mrpin_owner_row **rows)
{
	return mrpin_read_table("cgroups", mrpin_cgroup_cols,
				MRPIN_ARRAY_SIZE(mrpin_cgroup_cols),
				sizeof(**rows), (void **)rows);
}

static inline int mrpin_read_leaks(struct mrpin_leak_row **rows)
{
	return mrpin_read_table("leaks", mrpin_leak_cols,
				MRPIN_ARRAY_SIZE(mrpin_leak_cols),
				sizeof(**rows), (void **)rows);
}

/*
 * A "key value" file such as `stats`: every key of @keys (@nkeys of them)
 * must be there; other keys are ignored.  0 or a negative errno.
 */
static inline int mrpin_read_keys(const char *path,
				  const struct mrpin_col *keys, int nkeys,
				  void *out)
{
	bool seen[MRPIN_MAX_COLS * 2] = { false };
	char *buf, *pos, *fields[MRPIN_MAX_COLS];
	int n, i, ret;

	if (nkeys > (int)MRPIN_ARRAY_SIZE(seen))
		return -EINVAL;
	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	pos = buf;
	ret = -EPROTO;
	while ((n = mrpin_split_line(&pos, fields)) != 0) {
		if (n != 2)
			goto out;
		for (i = 0; i < nkeys; i++) {
			if (strcmp(fields[0], keys[i].name))
				continue;
			if (mrpin_store(out, &keys[i], fields[1]))
				goto out;
			seen[i] = true;
		}
	}
	for (i = 0; i < nkeys; i++)
		if (!seen[i])
			goto out;
	ret = 0;
out:
	free(buf);
	return ret;
}

/* `stats`: every key of struct mrpin_stats must be there. */
static inline int mrpin_read_stats(struct mrpin_stats *stats)
{
	return mrpin_read_keys(MRPIN_DEBUGFS "/stats", mrpin_stat_keys,
			       MRPIN_ARRAY_SIZE(mrpin_stat_keys), stats);
}

static inline const struct mrpin_proc_row *
mrpin_find_proc(const struct mrpin_proc_row *rows, int n, pid_t pid)
{
	int i;

	for (i = 0; i < n; i++)
		if (rows[i].pid == pid)
			return &rows[i];
	return NULL;
}

static inline const struct mrpin_dev_row *
mrpin_find_dev(const struct mrpin_dev_row *rows, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(rows[i].device, name))
			return &rows[i];
	return NULL;
}

static inline const struct mrpin_owner_row *
mrpin_find_cgroup(const struct mrpin_owner_row *rows, int n, const char *path)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(rows[i].cgroup, path))
			return &rows[i];
	return NULL;
}

/* The `pins` rows of process @pid, moved to the front; their number. */
static inline int mrpin_pins_of(struct mrpin_pin_row *rows, int n, pid_t pid)
{
	struct mrpin_pin_row tmp;
	int i, found = 0;

	for (i = 0; i < n; i++) {
		if (rows[i].pid != pid)
			continue;
		tmp = rows[found];
		rows[found++] = rows[i];
		rows[i] = tmp;
	}
	return found;
}

/* A line of mrpin's `events`. */
struct mrpin_event {
	uint64_t seq;
	uint64_t time_ns;
	char action[16];
	pid_t pid;
	char comm[64];
	uint64_t uid;
	char scope[512];
	char key[32];
	uint64_t asked;
	uint64_t usage;
	uint64_t limit;		/* MRPIN_UNLIMITED: "unlimited" */
	uint64_t err;		/* the errno the pin got, positive; 0: allowed */
};

/* Parse an `events` line (modified in place) into *@ev: 0 or -EPROTO. */
static inline int mrpin_parse_event(char *line, struct mrpin_event *ev)
{
	char *f[16], *save, *tok;
	uint64_t pid;
	int n = 0;

	for (tok = strtok_r(line, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		if (n == 16)
			return -EPROTO;
		f[n++] = tok;
	}
	if (n != 12 || strlen(f[2]) >= sizeof(ev->action) ||
	    strlen(f[7]) >= sizeof(ev->key))
		return -EPROTO;
	memset(ev, 0, sizeof(*ev));
	strcpy(ev->action, f[2]);
	strcpy(ev->key, f[7]);
	if (mrpin_parse_u64(f[0], &ev->seq) ||
	    mrpin_parse_u64(f[1], &ev->time_ns) ||
	    mrpin_parse_u64(f[3], &pid) || pid > INT32_MAX ||
	    mrpin_unescape(ev->comm, sizeof(ev->comm), f[4]) ||
	    mrpin_parse_u64(f[5], &ev->uid) ||
	    mrpin_unescape(ev->scope, sizeof(ev->scope), f[6]) ||
	    mrpin_parse_u64(f[8], &ev->asked) ||
	    mrpin_parse_u64(f[9], &ev->usage) ||
	    mrpin_parse_u64(f[11], &ev->err))
		return -EPROTO;
	if (!strcmp(f[10], "unlimited"))
		ev->limit = MRPIN_UNLIMITED;
	else if (mrpin_parse_u64(f[10], &ev->limit))
		return -EPROTO;
	ev->pid = pid;
	return 0;
}

/* What `events` held at one read. */
struct mrpin_events {
	struct mrpin_event *ev;
	int n;
	uint64_t lost;		/* the sum of the "# lost N" lines */
	int lost_before;	/* the index of the event after the first one */
};

/*
 * Parse @text (events lines, with the header first if @header) into *@e
 * (e->ev to free(), also on error): 0, -ENOMEM or -EPROTO.  A line that
 * is not complete is malformed.
 */
static inline int mrpin_events_parse(char *text, bool header,
				     struct mrpin_events *e)
{
	size_t hlen = strlen(MRPIN_EVENTS_HEADER);
	struct mrpin_event *tmp;
	char *line = text, *next;
	uint64_t lost;

	memset(e, 0, sizeof(*e));
	e->lost_before = -1;
	if (header) {
		next = strchr(line, '\n');
		if (!next || (size_t)(next - line) != hlen ||
		    strncmp(line, MRPIN_EVENTS_HEADER, hlen))
			return -EPROTO;
		line = next + 1;
	}
	while (*line) {
		next = strchr(line, '\n');
		if (!next)
			return -EPROTO;
		*next = '\0';
		if (!strncmp(line, "# lost ", 7)) {
			if (mrpin_parse_u64(line + 7, &lost))
				return -EPROTO;
			if (e->lost_before < 0)
				e->lost_before = e->n;
			e->lost += lost;
		} else {
			tmp = realloc(e->ev, (e->n + 1) * sizeof(*tmp));
			if (!tmp)
				return -ENOMEM;
			e->ev = tmp;
			if (mrpin_parse_event(line, &e->ev[e->n]))
				return -EPROTO;
			e->n++;
		}
		line = next + 1;
	}
	return 0;
}

/* Every event `events` holds now, from a new open: 0 or a negative errno. */
static inline int mrpin_read_events(struct mrpin_events *e)
{
	char *text;
	int fd, ret;

	memset(e, 0, sizeof(*e));
	fd = open(MRPIN_EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = mrpin_read_available(fd, &text, NULL);
	close(fd);
	if (ret)
		return ret;
	ret = mrpin_events_parse(text, true, e);
	free(text);
	return ret;
}

/* Event @ev is numbered @from or later, of @pid (if > 0), about @key. */
static inline bool mrpin_event_since(const struct mrpin_event *ev,
				     uint64_t from, pid_t pid, const char *key)
{
	return ev->seq >= from && (pid <= 0 || ev->pid == pid) &&
	       (!key || !strcmp(ev->key, key));
}

/*
 * The events of @e numbered @from or later (of process @pid if > 0,
 * about @key if not NULL): their number, and the first in *@first.
 */
static inline int mrpin_events_since(const struct mrpin_events *e,
				     uint64_t from, pid_t pid,
				     const char *key,
				     const struct mrpin_event **first)
{
	int i, n = 0;

	*first = NULL;
	for (i = 0; i < e->n; i++) {
		if (!mrpin_event_since(&e->ev[i], from, pid, key))
			continue;
		if (!n++)
			*first = &e->ev[i];
	}
	return n;
}

#endif /* __MRPIN_TABLES_H */
