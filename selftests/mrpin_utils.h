/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The helpers of mrpin's selftest programs that need no test harness: the
 * RDMA device under test and registration (_do_reg() returns 0 or -1 with
 * errno), readers of mrpin's debugfs tables and `stats`, of VmPin and
 * comm, of the kernel log and of `events`, the policy file, files and
 * cgroups.  mrpin_test.h builds the harness's checks and the fixture on
 * them; mrpin_pinner and the other helper programs use them alone.
 */
#ifndef __MRPIN_UTILS_H
#define __MRPIN_UTILS_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include <infiniband/verbs.h>

#define MRPIN_DEBUGFS		"/sys/kernel/debug/mrpin"
/* The policy's door lockdown leaves open; MRPIN_DEBUGFS "/limits" is the other. */
#define MRPIN_LIMITS_FILE	"/sys/kernel/security/mrpin/limits"
#define MRPIN_DEFAULT_DEV	"rxe0"
#define MRPIN_ACCESS		IBV_ACCESS_LOCAL_WRITE
#define MRPIN_EVENTS_FILE	MRPIN_DEBUGFS "/events"
#define MRPIN_EVENTS_HEADER	"# seq time_ns action pid comm uid scope key asked usage limit"
/* memlock_bytes of a process without a limit ("unlimited"). */
#define MRPIN_UNLIMITED		UINT64_MAX
/* Where the tests make their cgroups: the cgroup2 mount. */
#define MRPIN_CG_MNT		"/sys/fs/cgroup"

#define KiB		1024ULL
#define MiB		(1024 * KiB)
#define GiB		(1024 * MiB)
#define PAGE		4096ULL

/* The device under test: $MRPIN_TEST_DEV, default rxe0. */
static inline const char *mrpin_dev_name(void)
{
	const char *name = getenv("MRPIN_TEST_DEV");

	return name && *name ? name : MRPIN_DEFAULT_DEV;
}

/* Open the RDMA device called @name; NULL with errno set if impossible. */
static inline struct ibv_context *mrpin_open_dev(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int i, n, err = ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ctx = ibv_open_device(list[i]);
		err = errno;
		break;
	}
	ibv_free_device_list(list);
	if (!ctx)
		errno = err;
	return ctx;
}

/* The debug kernel (KASAN, lockdep, kmemleak). */
static inline bool mrpin_debug_kernel(void)
{
	return !access("/sys/kernel/debug/kmemleak", F_OK);
}

/*
 * Short loops: the loops that only repeat what they already checked run
 * fewer times, on the debug kernel (where every registration costs tens of
 * times more) and where MRPIN_LOOPS=short asks for it (`make check`, and
 * all but the first kernel of `make check-all`).  mrpin_short_loops_why()
 * says which, for the test's output.
 */
static inline bool mrpin_short_loops(void)
{
	const char *loops = getenv("MRPIN_LOOPS");

	return mrpin_debug_kernel() || (loops && !strcmp(loops, "short"));
}

static inline const char *mrpin_short_loops_why(void)
{
	return mrpin_debug_kernel() ? "the debug kernel" : "MRPIN_LOOPS=short";
}

/* Lift RLIMIT_MEMLOCK (root only; the guest's default is 8 MiB). */
static inline int mrpin_unlimit_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	return setrlimit(RLIMIT_MEMLOCK, &rl);
}

/* Bytes an MR of [start, start + length) pins: the pages it spans. */
static inline uint64_t mrpin_span_bytes(uintptr_t start, uint64_t length)
{
	uint64_t page = sysconf(_SC_PAGESIZE);

	return ((start + length + page - 1) & ~(page - 1)) - (start & ~(page - 1));
}

/* Register [addr, addr + length): 0, or -1 with errno set. */
static inline int _do_reg(struct ibv_pd *pd, void *addr, size_t length,
			  struct ibv_mr **mr)
{
	*mr = ibv_reg_mr(pd, addr, length, MRPIN_ACCESS);
	return *mr ? 0 : -1;
}

/* Deregister: 0, or -1 with errno set. */
static inline int _do_dereg(struct ibv_mr *mr)
{
	int ret = ibv_dereg_mr(mr);

	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

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
	uint64_t peak_bytes;
	uint64_t vm_pinned_bytes;
	uint64_t memlock_bytes;	/* MRPIN_UNLIMITED: "unlimited" */
	uint64_t denials;
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
	uint64_t pinned_bytes;
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

/*
 * Read a whole (debugfs) file into *@bufp (NUL-terminated, to free()).
 * Return: 0 or a negative errno.
 */
static inline int mrpin_read_file(const char *path, char **bufp)
{
	size_t len = 0, size = 16384;
	char *buf, *tmp;
	ssize_t n;
	int fd;

	*bufp = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(size);
	while (buf) {
		n = read(fd, buf + len, size - len - 1);
		if (n <= 0) {
			if (!n)
				break;
			n = -errno;
			free(buf);
			close(fd);
			return n;
		}
		len += n;
		if (size - len > 1)
			continue;
		size *= 2;
		tmp = realloc(buf, size);
		if (!tmp)
			free(buf);
		buf = tmp;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	buf[len] = '\0';
	*bufp = buf;
	return 0;
}

/* Undo seq_escape(): "\ooo" octal escapes. */
static inline int mrpin_unescape(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; *src; src++) {
		char c = *src;

		if (c == '\\' && src[1] >= '0' && src[1] <= '3' &&
		    src[2] >= '0' && src[2] <= '7' &&
		    src[3] >= '0' && src[3] <= '7') {
			c = (src[1] - '0') << 6 | (src[2] - '0') << 3 |
			    (src[3] - '0');
			src += 3;
		}
		if (i + 1 >= size)
			return -EPROTO;
		dst[i++] = c;
	}
	dst[i] = '\0';
	return 0;
}

static inline int mrpin_parse_u64(const char *s, uint64_t *val)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EPROTO;
	errno = 0;
	*val = strtoull(s, &end, 10);
	return errno || *end ? -EPROTO : 0;
}

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
	MRPIN_PROC_COL(peak_bytes, MRPIN_COL_U64),
	MRPIN_PROC_COL(vm_pinned_bytes, MRPIN_COL_U64),
	MRPIN_PROC_COL(memlock_bytes, MRPIN_COL_LIMIT),
	MRPIN_PROC_COL(denials, MRPIN_COL_U64),
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
};

#define MRPIN_LEAK_COL(f, kind) MRPIN_COL(struct mrpin_leak_row, f, kind)

static const struct mrpin_col mrpin_leak_cols[] = {
	MRPIN_LEAK_COL(comm, MRPIN_COL_STR),
	MRPIN_LEAK_COL(uid, MRPIN_COL_U64),
	MRPIN_LEAK_COL(count, MRPIN_COL_U64),
	MRPIN_LEAK_COL(bytes, MRPIN_COL_U64),
	MRPIN_LEAK_COL(last_time_ns, MRPIN_COL_U64),
};

#define MRPIN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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

/*
 * The number of line "@key:" of the /proc file @path in *@val: decimal,
 * or hexadecimal with @hex; a number in kB is turned into bytes.
 * Return: 0, -EPROTO when the line is missing, or a negative errno.
 */
static inline int mrpin_proc_field(const char *path, const char *key,
				   bool hex, uint64_t *val)
{
	size_t klen = strlen(key);
	char *buf, *line, *end;
	int ret;

	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	line = buf;
	while (line && (strncmp(line, key, klen) || line[klen] != ':')) {
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	ret = -EPROTO;
	if (line) {
		errno = 0;
		*val = strtoull(line + klen + 1, &end, hex ? 16 : 10);
		if (!errno && end != line + klen + 1) {
			if (!strncmp(end, " kB", 3))
				*val *= 1024;
			ret = 0;
		}
	}
	free(buf);
	return ret;
}

/*
 * VmPin of process @pid in bytes (mm->pinned_vm): 0 or a negative errno
 * (-ESRCH when the process or its mm is gone).
 */
static inline int mrpin_vmpin(pid_t pid, uint64_t *bytes)
{
	char path[64];
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	ret = mrpin_proc_field(path, "VmPin", false, bytes);
	return ret == -ENOENT || ret == -EPROTO ? -ESRCH : ret;
}

/* The comm of process @pid, as the kernel keeps it. */
static inline int mrpin_comm(pid_t pid, char *comm, size_t size)
{
	char path[64], *buf;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(comm, size, "%s", buf);
	free(buf);
	return 0;
}

/* Write @text to the file at @path (truncating it): 0 or an errno. */
static inline int mrpin_write_file(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd, err = 0;
	ssize_t n;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, text, len);
	if (n != (ssize_t)len)
		err = n < 0 ? errno : EIO;
	close(fd);
	return err;
}

/* The number a one-line file such as a sysfs knob holds. */
static inline int mrpin_read_u64_file(const char *path, uint64_t *val)
{
	char *buf;
	int ret;

	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	buf[strcspn(buf, "\n")] = '\0';
	ret = mrpin_parse_u64(buf, val);
	free(buf);
	return ret;
}

/* Write @len bytes of policy text to the limits file: 0 or an errno. */
static inline int mrpin_limits_write(const void *buf, size_t len)
{
	int fd, err = 0;
	ssize_t n;

	fd = open(MRPIN_LIMITS_FILE, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, buf, len);
	if (n < 0)
		err = errno;
	else if ((size_t)n != len)
		err = EIO;
	close(fd);
	return err;
}

/* Write the policy text, printf-style: 0 or an errno. */
static inline int __attribute__((format(printf, 1, 2)))
mrpin_limits_writef(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return E2BIG;
	return mrpin_limits_write(buf, n);
}

/* CLOCK_MONOTONIC, in seconds. */
static inline double mrpin_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep @s seconds, through signals. */
static inline void mrpin_sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * The kernel's rate limit on mrpin's refusal/warning log lines: assumed to
 * let at least MRPIN_LOG_BURST lines through in any MRPIN_LOG_WINDOW
 * seconds (the module's is 10 in 5 s).
 */
#define MRPIN_LOG_BURST		10
#define MRPIN_LOG_WINDOW	5.5

/*
 * When a program made mrpin log its latest refusals and warnings; shared
 * (MAP_SHARED) by the harness's children, one per test.
 */
struct mrpin_log_budget {
	double logged[MRPIN_LOG_BURST];	/* CLOCK_MONOTONIC, circular */
	unsigned int next;
};

/* The program just made mrpin log @n refusals or warnings (@b may be NULL). */
static inline void mrpin_note_logged(struct mrpin_log_budget *b, unsigned int n)
{
	double t = mrpin_now_s();

	if (!b)
		return;
	if (n > MRPIN_LOG_BURST)
		n = MRPIN_LOG_BURST;
	while (n--)
		b->logged[b->next++ % MRPIN_LOG_BURST] = t;
}

/* Wait until the next logged refusal or warning cannot be rate-limited. */
static inline void mrpin_log_room(struct mrpin_log_budget *b)
{
	double oldest, wait;

	if (!b)
		return;
	oldest = b->logged[b->next % MRPIN_LOG_BURST];
	wait = oldest + MRPIN_LOG_WINDOW - mrpin_now_s();
	if (oldest > 0 && wait > 0)
		mrpin_sleep_s(wait);
}

/* A reader of /dev/kmsg that starts at the end of the log. */
static inline int mrpin_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * The messages logged since the last call, one a line (to free()), and a
 * line saying so where the log overwrote messages before they were read.
 */
static inline char *mrpin_kmsg_read(int fd)
{
	static const char lost[] =
		"kmsg_read: the kernel log overwrote messages before they were read";
	size_t len = 0, size = 16384, mlen;
	char rec[8192], *out, *tmp, *msg, *end;
	ssize_t n;

	out = malloc(size);
	if (!out)
		return NULL;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE) {
			/* Overwritten records: say so, go on from the oldest. */
			n = snprintf(rec, sizeof(rec), ";%s\n", lost);
		}
		if (n <= 0)
			break;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		end = strchr(msg, '\n');
		mlen = end ? (size_t)(end - msg) : strlen(msg);
		if (len + mlen + 2 > size) {
			size = 2 * (len + mlen + 2);
			tmp = realloc(out, size);
			if (!tmp) {
				free(out);
				return NULL;
			}
			out = tmp;
		}
		memcpy(out + len, msg, mlen);
		len += mlen;
		out[len++] = '\n';
	}
	out[len] = '\0';
	return out;
}

/*
 * The first line of @log that reports a kernel problem, or NULL: a line
 * matching one of the extended regular expressions in kernel_problems,
 * the file beside this program that vm-run.sh and lib.sh read too.  A
 * list that cannot be read is itself the problem reported.
 */
static inline const char *mrpin_log_problem(const char *log)
{
	static const char unread[] = "cannot read or compile kernel_problems";
	char path[4096], line[256], pattern[4096] = "", *dir_end;
	const char *hit = NULL;
	regmatch_t match;
	regex_t re;
	ssize_t n;
	FILE *list;

	/* Room left for the file's name in place of this program's. */
	n = readlink("/proc/self/exe", path,
		     sizeof(path) - sizeof("kernel_problems"));
	if (n <= 0)
		return unread;
	path[n] = '\0';
	dir_end = strrchr(path, '/');
	if (!dir_end)
		return unread;
	strcpy(dir_end + 1, "kernel_problems");
	list = fopen(path, "re");
	if (!list)
		return unread;
	while (fgets(line, sizeof(line), list)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (strlen(pattern) + strlen(line) + 2 > sizeof(pattern)) {
			fclose(list);
			return unread;
		}
		if (pattern[0])
			strcat(pattern, "|");
		strcat(pattern, line);
	}
	fclose(list);
	if (!pattern[0] ||
	    regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE))
		return unread;
	if (!regexec(&re, log, 1, &match, 0)) {
		hit = log + match.rm_so;
		while (hit > log && hit[-1] != '\n')
			hit--;
	}
	regfree(&re);
	return hit;
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
	uint64_t limit;
};

/*
 * Read what @fd has now (non-blocking fd) into *@textp (to free(); NULL on
 * error) and its length into *@lenp (if not NULL): 0 or a negative errno.
 */
static inline int mrpin_read_available(int fd, char **textp, size_t *lenp)
{
	size_t len = 0, size = 65536;
	char *buf, *tmp;
	ssize_t n;

	*textp = NULL;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (size - len < 8192) {
			size *= 2;
			tmp = realloc(buf, size);
			if (!tmp) {
				free(buf);
				return -ENOMEM;
			}
			buf = tmp;
		}
		n = read(fd, buf + len, size - len - 1);
		if (n > 0) {
			len += n;
			continue;
		}
		if (!n || errno == EAGAIN)
			break;
		n = -errno;
		free(buf);
		return n;
	}
	buf[len] = '\0';
	*textp = buf;
	if (lenp)
		*lenp = len;
	return 0;
}

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
	if (n != 11 || strlen(f[2]) >= sizeof(ev->action) ||
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
	    mrpin_parse_u64(f[10], &ev->limit))
		return -EPROTO;
	ev->pid = pid;
	return 0;
}

/*
 * For the helper programs the tests drive (mrpin_pinner, mrpin_mistakes,
 * mrpin_misuse): say that @what failed, with errno, as program @prog, and
 * exit 1.
 */
static inline void __attribute__((noreturn))
mrpin_die(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

/* A page-aligned anonymous buffer of @len bytes, touched; NULL if none. */
static inline void *mrpin_map_touched(size_t len)
{
	void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED)
		return NULL;
	memset(buf, 0x5a, len);
	return buf;
}

/* A PD on device @dev (opened in *@ctx), or mrpin_die(). */
static inline struct ibv_pd *mrpin_open_pd(const char *prog, const char *dev,
					   struct ibv_context **ctx)
{
	struct ibv_pd *pd;

	*ctx = mrpin_open_dev(dev);
	if (!*ctx)
		mrpin_die(prog, dev);
	pd = ibv_alloc_pd(*ctx);
	if (!pd)
		mrpin_die(prog, "ibv_alloc_pd");
	return pd;
}

/* Wait until the test closes this program's stdin. */
static inline void mrpin_wait_eof(void)
{
	char buf[64];

	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
}

/*
 * Whether @log has a line equal to @line, or, with @suffix, a line that
 * starts with @line and ends with @suffix ("" for any end).
 */
static inline bool mrpin_log_has(const char *log, const char *line,
				 const char *suffix)
{
	size_t llen = strlen(line), slen = suffix ? strlen(suffix) : 0, len;
	const char *pos = log, *end;

	while (*pos) {
		end = strchr(pos, '\n');
		len = end ? (size_t)(end - pos) : strlen(pos);
		if (!suffix && len == llen && !memcmp(pos, line, llen))
			return true;
		if (suffix && len >= llen + slen && !memcmp(pos, line, llen) &&
		    !memcmp(pos + len - slen, suffix, slen))
			return true;
		if (!end)
			break;
		pos = end + 1;
	}
	return false;
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

/* cgroup v2, by paths relative to its mount. */

static inline bool mrpin_cgroup2_mounted(void)
{
	struct statfs s;

	return !statfs(MRPIN_CG_MNT, &s) && s.f_type == CGROUP2_SUPER_MAGIC;
}

/* Make cgroup @cg (it may be there already): 0 or an errno. */
static inline int mrpin_cg_mkdir(const char *cg)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), MRPIN_CG_MNT "%s", cg);
	return mkdir(path, 0755) && errno != EEXIST ? errno : 0;
}

/*
 * Remove cgroup @cg (gone already is fine): 0 or an errno.  An exited
 * process leaves its cgroup a moment later: EBUSY is tried again.
 */
static inline int mrpin_cg_rmdir(const char *cg)
{
	char path[PATH_MAX];
	int i;

	snprintf(path, sizeof(path), MRPIN_CG_MNT "%s", cg);
	for (i = 0; i < 100; i++) {
		if (!rmdir(path) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return errno;
		usleep(20000);
	}
	return EBUSY;
}

/* Move process @pid into cgroup @cg: 0 or an errno. */
static inline int mrpin_cg_write_procs(const char *cg, pid_t pid)
{
	char path[PATH_MAX], buf[32];
	int fd, n, err = 0;

	snprintf(path, sizeof(path), MRPIN_CG_MNT "%s/cgroup.procs", cg);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%d\n", pid);
	if (write(fd, buf, n) != n)
		err = errno ?: EIO;
	close(fd);
	return err;
}

/* The cgroup (v2) of process @pid (0 for this one): 0 or a negative errno. */
static inline int mrpin_cg_of(pid_t pid, char *cg, size_t size)
{
	char path[64], *buf, *line;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid ? pid : getpid());
	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	line = strstr(buf, "0::");
	ret = -ENOENT;
	if (line && (line == buf || line[-1] == '\n')) {
		line += 3;
		line[strcspn(line, "\n")] = '\0';
		snprintf(cg, size, "%s", line);
		ret = 0;
	}
	free(buf);
	return ret;
}

#endif /* __MRPIN_UTILS_H */
