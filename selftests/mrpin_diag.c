// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's diagnostics of the classic registration mistakes, each made on
 * purpose by a real program on the RDMA device under test (rxe0 unless
 * $MRPIN_TEST_DEV says otherwise): this program, its threads, or
 * mrpin_mistakes children.
 *
 *  - stack memory (main thread, pthread) is flagged in `pins`, counted in
 *    `procs` and `stats`, and allowed, warned about or refused as the global
 *    rule's stack= says, with an event and a kernel log line;
 *  - the page backing of every pin (4 KiB, 2 MiB THP or hugetlbfs, 1 GiB
 *    hugetlbfs) agrees with what pagemap and kpageflags say of the pages;
 *  - align is the largest power of two dividing the start, up to 1 GiB;
 *  - oversized: the pinned bytes reach the global oversize= mark;
 *  - pins left to the kernel's cleanup (exit, close() of the device file,
 *    dup2() over it, ibv_close_device()) are leaks, in `leaks`, `procs`
 *    and `stats`; an ibv_dereg_mr() never is;
 *  - churn shows in registrations, reg_per_s and the lifetime histogram;
 *  - callsites name the function that called ibv_reg_mr();
 *  - a device's MR table warns once per crossing of mr_table_warn=.
 *
 * Every test starts from the default policy and restores it (`reset`),
 * and leaves no pin, no huge-page backed byte and no kernel warning behind.
 * The kernel log lines of warnings and refusals are rate-limited: the tests
 * that look for one space their logged events out (mrpin_log_room()).
 */
/* The 6.1 harness has an unused parameter: keep -Wextra quiet about it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "mrpin_test.h"

#define KiB		1024ULL
#define MiB		(1024 * KiB)
#define GiB		(1024 * MiB)
#define PAGE		4096ULL

#define LIMITS_FILE	MRPIN_LIMITS_FILE
#define EVENTS_FILE	MRPIN_DEBUGFS "/events"
#define EVENTS_HEADER	"# seq time_ns action pid comm uid scope key asked usage limit"
#define PINS_TAIL	" age_ms stack bytes_4k bytes_2m bytes_1g align oversized"
#define PROCS_TAIL	" denials bytes_4k bytes_2m bytes_1g stack_pins cleanup_releases registrations reg_per_s life_hist"
#define LEAKS_HEADER	"# comm uid count bytes last_time_ns"
#define CALLSITES_HEADER "# pid comm pins bytes oldest_age_ms frames"
#define GLOBAL_DEFAULTS	"stack=warn oversize=1G mr_table_warn=80% callsites=off"

#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define HUGEPAGES_2M	"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
#define HUGEPAGES_1G	"/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"

#define MISTAKES	"mrpin_mistakes"
#define USER_UID	1000
#define LIFE_BUCKETS	24
#define MAX_FRAMES	8

/* When this program made mrpin log (MAP_SHARED by the tests). */
static struct mrpin_log_budget *shared;

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Files. */

static int write_file(const char *path, const char *text)
{
	int fd, err = 0;
	ssize_t n;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, text, strlen(text));
	if (n != (ssize_t)strlen(text))
		err = n < 0 ? errno : EIO;
	close(fd);
	return err;
}

static int read_u64_file(const char *path, uint64_t *val)
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

/* The policy. */

static int limits_write(const char *text)
{
	return write_file(LIMITS_FILE, text);
}

#define set_limits(text)						\
	do {								\
		int __err = limits_write(text);				\
									\
		ASSERT_EQ(0, __err) {					\
			TH_LOG("writing \"%s\" to limits: %s", text,	\
			       strerror(__err));			\
		}							\
	} while (0)

/* The `global` line of `limits`, without the newline. */
static void __global_line(struct __test_metadata *_metadata, char *line,
			  size_t size)
{
	char *buf, *pos;

	ASSERT_EQ(0, mrpin_read_file(LIMITS_FILE, &buf));
	pos = strstr(buf, "\nglobal ");
	ASSERT_NE(NULL, pos) {
		TH_LOG("no global line in limits: %s", buf);
	}
	pos++;
	pos[strcspn(pos, "\n")] = '\0';
	snprintf(line, size, "%s", pos);
	free(buf);
}
#define global_line(line, size) __global_line(_metadata, line, size)

/* The kernel log, through /dev/kmsg. */

/* Whether @log has a line equal to @line (or, with @sub, containing it). */
static bool log_has(const char *log, const char *line, bool sub)
{
	size_t llen = strlen(line), len;
	const char *pos = log, *end;

	while (*pos) {
		end = strchr(pos, '\n');
		len = end ? (size_t)(end - pos) : strlen(pos);
		if (!sub && len == llen && !memcmp(pos, line, llen))
			return true;
		if (sub && memmem(pos, len, line, llen))
			return true;
		if (!end)
			break;
		pos = end + 1;
	}
	return false;
}

/* Expect the new kernel log lines of @kfd to hold @line (exactly). */
static void __check_log(struct __test_metadata *_metadata, int kfd,
			const char *line)
{
	char *log = mrpin_kmsg_read(kfd);
	bool found;

	ASSERT_NE(NULL, log);
	found = log_has(log, line, false);
	EXPECT_TRUE(found);
	if (!found) {
		ksft_print_msg("expected in the kernel log: %s\n", line);
		mrpin_log_show(log);
	}
	free(log);
}
#define check_log(kfd, line) __check_log(_metadata, kfd, line)

/* The events file. */

struct events {
	struct mrpin_event *ev;
	int n;
};

/* Every event the file holds now, from a new open. */
static void __read_events(struct __test_metadata *_metadata, struct events *e)
{
	char *text, *line, *next;
	struct mrpin_event *tmp;
	int fd, ret;

	memset(e, 0, sizeof(*e));
	fd = open(EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd) {
		TH_LOG("%s: %s", EVENTS_FILE, strerror(errno));
	}
	ret = mrpin_read_available(fd, &text, NULL);
	close(fd);
	ASSERT_EQ(0, ret);
	line = text;
	next = strchr(line, '\n');
	ASSERT_NE(NULL, next);
	*next = '\0';
	ASSERT_STREQ(EVENTS_HEADER, line);
	for (line = next + 1; *line; line = next + 1) {
		next = strchr(line, '\n');
		ASSERT_NE(NULL, next);
		*next = '\0';
		if (!strncmp(line, "# lost ", 7))
			continue;
		tmp = realloc(e->ev, (e->n + 1) * sizeof(*tmp));
		ASSERT_NE(NULL, tmp);
		e->ev = tmp;
		ASSERT_EQ(0, mrpin_parse_event(line, &e->ev[e->n])) {
			TH_LOG("malformed event line: %s", line);
		}
		e->n++;
	}
	free(text);
}
#define read_events(e) __read_events(_metadata, e)

/* The seq the next event will have at the earliest. */
static uint64_t __next_seq(struct __test_metadata *_metadata)
{
	struct events e;
	uint64_t next = 0;
	int i;

	read_events(&e);
	for (i = 0; i < e.n; i++)
		if (e.ev[i].seq + 1 > next)
			next = e.ev[i].seq + 1;
	free(e.ev);
	return next;
}
#define next_seq() __next_seq(_metadata)

/*
 * The events numbered @from or later, of process @pid (if > 0) and about
 * @key (if not NULL): their number, and up to @max of them in @out.
 */
static int __events_since(struct __test_metadata *_metadata, uint64_t from,
			  pid_t pid, const char *key, struct mrpin_event *out,
			  int max)
{
	struct events e;
	int i, n = 0;

	read_events(&e);
	for (i = 0; i < e.n; i++) {
		if (e.ev[i].seq < from || (pid > 0 && e.ev[i].pid != pid) ||
		    (key && strcmp(e.ev[i].key, key)))
			continue;
		if (n < max)
			out[n] = e.ev[i];
		n++;
	}
	free(e.ev);
	return n;
}
#define events_since(from, pid, key, out, max)				\
	__events_since(_metadata, from, pid, key, out, max)

static void __check_event(struct __test_metadata *_metadata,
			  const struct mrpin_event *ev, const char *action,
			  pid_t pid, uint64_t uid, const char *scope,
			  const char *key, uint64_t asked, uint64_t usage,
			  uint64_t limit)
{
	char comm[64];

	EXPECT_STREQ(action, ev->action);
	EXPECT_EQ(pid, ev->pid);
	if (!mrpin_comm(pid, comm, sizeof(comm)))
		EXPECT_STREQ(comm, ev->comm);
	EXPECT_EQ(uid, ev->uid);
	EXPECT_STREQ(scope, ev->scope);
	EXPECT_STREQ(key, ev->key);
	EXPECT_EQ(asked, ev->asked);
	EXPECT_EQ(usage, ev->usage);
	EXPECT_EQ(limit, ev->limit);
	EXPECT_NE(0ULL, (unsigned long long)ev->time_ns);
}
#define check_event(ev, action, pid, uid, scope, key, asked, usage, limit) \
	__check_event(_metadata, ev, action, pid, uid, scope, key, asked,   \
		      usage, limit)

/* The tables, by column name, with the diagnostics' columns. */

struct diag_pin_row {
	uint64_t id;
	pid_t pid;
	uint64_t start;
	uint64_t length;
	uint64_t pinned_bytes;
	uint64_t stack;
	uint64_t bytes_4k;
	uint64_t bytes_2m;
	uint64_t bytes_1g;
	uint64_t align;
	uint64_t oversized;
};

struct diag_proc_row {
	pid_t pid;
	char comm[64];
	uint64_t uid;
	uint64_t pins;
	uint64_t pinned_bytes;
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

struct diag_stats {
	uint64_t pins;
	uint64_t pinned_bytes;
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

struct leak_row {
	char comm[64];
	uint64_t uid;
	uint64_t count;
	uint64_t bytes;
	uint64_t last_time_ns;
};

struct callsite_row {
	pid_t pid;
	char comm[64];
	uint64_t pins;
	uint64_t bytes;
	uint64_t oldest_age_ms;
	char frames[512];
};

#define PIN_COL(f, k)	MRPIN_COL(struct diag_pin_row, f, k)
#define PROC_COL(f, k)	MRPIN_COL(struct diag_proc_row, f, k)
#define STAT(f)		MRPIN_COL(struct diag_stats, f, MRPIN_COL_U64)
#define LEAK_COL(f, k)	MRPIN_COL(struct leak_row, f, k)
#define SITE_COL(f, k)	MRPIN_COL(struct callsite_row, f, k)

static const struct mrpin_col diag_pin_cols[] = {
	PIN_COL(id, MRPIN_COL_U64),
	PIN_COL(pid, MRPIN_COL_PID),
	PIN_COL(start, MRPIN_COL_U64),
	PIN_COL(length, MRPIN_COL_U64),
	PIN_COL(pinned_bytes, MRPIN_COL_U64),
	PIN_COL(stack, MRPIN_COL_U64),
	PIN_COL(bytes_4k, MRPIN_COL_U64),
	PIN_COL(bytes_2m, MRPIN_COL_U64),
	PIN_COL(bytes_1g, MRPIN_COL_U64),
	PIN_COL(align, MRPIN_COL_U64),
	PIN_COL(oversized, MRPIN_COL_U64),
};

static const struct mrpin_col diag_proc_cols[] = {
	PROC_COL(pid, MRPIN_COL_PID),
	PROC_COL(comm, MRPIN_COL_STR),
	PROC_COL(uid, MRPIN_COL_U64),
	PROC_COL(pins, MRPIN_COL_U64),
	PROC_COL(pinned_bytes, MRPIN_COL_U64),
	PROC_COL(denials, MRPIN_COL_U64),
	PROC_COL(bytes_4k, MRPIN_COL_U64),
	PROC_COL(bytes_2m, MRPIN_COL_U64),
	PROC_COL(bytes_1g, MRPIN_COL_U64),
	PROC_COL(stack_pins, MRPIN_COL_U64),
	PROC_COL(cleanup_releases, MRPIN_COL_U64),
	PROC_COL(registrations, MRPIN_COL_U64),
	PROC_COL(reg_per_s, MRPIN_COL_U64),
	PROC_COL(life_hist, MRPIN_COL_STR),
};

static const struct mrpin_col diag_stat_keys[] = {
	STAT(pins),
	STAT(pinned_bytes),
	STAT(pins_total),
	STAT(releases_total),
	STAT(untracked_releases_total),
	STAT(denials_total),
	STAT(warnings_total),
	STAT(bytes_4k),
	STAT(bytes_2m),
	STAT(bytes_1g),
	STAT(stack_pins_total),
	STAT(oversized_pins_total),
	STAT(cleanup_releases_total),
};

static const struct mrpin_col leak_cols[] = {
	LEAK_COL(comm, MRPIN_COL_STR),
	LEAK_COL(uid, MRPIN_COL_U64),
	LEAK_COL(count, MRPIN_COL_U64),
	LEAK_COL(bytes, MRPIN_COL_U64),
	LEAK_COL(last_time_ns, MRPIN_COL_U64),
};

static const struct mrpin_col callsite_cols[] = {
	SITE_COL(pid, MRPIN_COL_PID),
	SITE_COL(comm, MRPIN_COL_STR),
	SITE_COL(pins, MRPIN_COL_U64),
	SITE_COL(bytes, MRPIN_COL_U64),
	SITE_COL(oldest_age_ms, MRPIN_COL_U64),
	SITE_COL(frames, MRPIN_COL_STR),
};

#define read_table(name, cols, rows)					\
	mrpin_read_table(name, cols, MRPIN_ARRAY_SIZE(cols),		\
			 sizeof(**(rows)), (void **)(rows))

/* `stats`: every key of struct diag_stats must be there. */
static int diag_read_stats(struct diag_stats *stats)
{
	return mrpin_read_keys(MRPIN_DEBUGFS "/stats", diag_stat_keys,
			       MRPIN_ARRAY_SIZE(diag_stat_keys), stats);
}
#define read_stats(s)							\
	ASSERT_EQ(0, diag_read_stats(s)) {				\
		TH_LOG("%s/stats lacks a key or is malformed", MRPIN_DEBUGFS); \
	}

/* The `procs` line of @pid in *@row: whether there is one. */
static bool __proc_row(struct __test_metadata *_metadata, pid_t pid,
		       struct diag_proc_row *row)
{
	struct diag_proc_row *rows;
	bool found = false;
	int n, i;

	n = read_table("procs", diag_proc_cols, &rows);
	ASSERT_LE(0, n) {
		TH_LOG("procs: %s", strerror(-n));
	}
	for (i = 0; i < n; i++) {
		if (rows[i].pid != pid)
			continue;
		*row = rows[i];
		found = true;
	}
	free(rows);
	return found;
}

#define proc_row(pid, row)						\
	ASSERT_TRUE(__proc_row(_metadata, pid, row)) {			\
		TH_LOG("pid %d has no line in procs", (int)(pid));	\
	}

/* The `pins` line of @pid for [@start, +@length) in *@row. */
static bool __pin_row(struct __test_metadata *_metadata, pid_t pid,
		      uintptr_t start, uint64_t length,
		      struct diag_pin_row *row)
{
	struct diag_pin_row *rows;
	bool found = false;
	int n, i;

	n = read_table("pins", diag_pin_cols, &rows);
	ASSERT_LE(0, n) {
		TH_LOG("pins: %s", strerror(-n));
	}
	for (i = 0; i < n; i++) {
		if (rows[i].pid != pid || rows[i].start != start ||
		    rows[i].length != length)
			continue;
		*row = rows[i];
		found = true;
	}
	free(rows);
	return found;
}

#define pin_row(pid, start, length, row)				\
	ASSERT_TRUE(__pin_row(_metadata, pid, (uintptr_t)(start),	\
			      length, row)) {				\
		TH_LOG("pid %d has no pin of [%#lx, +%llu)", (int)(pid), \
		       (unsigned long)(uintptr_t)(start),		\
		       (unsigned long long)(length));			\
	}

/* The `leaks` line of (@comm, @uid): its count and bytes (0 if none). */
static void __leak_row(struct __test_metadata *_metadata, const char *comm,
		       uint64_t uid, struct leak_row *row)
{
	struct leak_row *rows;
	int n, i, found = 0;

	memset(row, 0, sizeof(*row));
	n = read_table("leaks", leak_cols, &rows);
	ASSERT_LE(0, n) {
		TH_LOG("leaks: %s", strerror(-n));
	}
	for (i = 0; i < n; i++) {
		if (strcmp(rows[i].comm, comm) || rows[i].uid != uid)
			continue;
		*row = rows[i];
		found++;
	}
	free(rows);
	EXPECT_GE(1, found) {
		TH_LOG("%d leaks lines for (%s, %llu)", found, comm,
		       (unsigned long long)uid);
	}
}
#define leak_row(comm, uid, row) __leak_row(_metadata, comm, uid, row)

/* The 24 buckets of a life_hist field. */
static int parse_hist(const char *s, uint64_t *hist)
{
	char *end;
	int i;

	for (i = 0; i < LIFE_BUCKETS; i++) {
		if (*s < '0' || *s > '9')
			return -EPROTO;
		errno = 0;
		hist[i] = strtoull(s, &end, 10);
		if (errno || *end != (i == LIFE_BUCKETS - 1 ? '\0' : ','))
			return -EPROTO;
		s = end + 1;
	}
	return 0;
}

#define hist_of(row, hist)						\
	ASSERT_EQ(0, parse_hist((row)->life_hist, hist)) {		\
		TH_LOG("life_hist \"%s\" is not 24 comma-separated counts", \
		       (row)->life_hist);				\
	}

/* The first line of debugfs file @name, without the newline. */
static void __header_of(struct __test_metadata *_metadata, const char *name,
			char *line, size_t size)
{
	char path[256], *buf;

	snprintf(path, sizeof(path), "%s/%s", MRPIN_DEBUGFS, name);
	ASSERT_EQ(0, mrpin_read_file(path, &buf)) {
		TH_LOG("%s: %s", path, strerror(errno));
	}
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(line, size, "%s", buf);
	free(buf);
}
#define header_of(name, line, size) __header_of(_metadata, name, line, size)

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

/* The device's line in `devices`. */
static void __dev_row(struct __test_metadata *_metadata,
		      struct mrpin_dev_row *row)
{
	const struct mrpin_dev_row *d;
	struct mrpin_dev_row *rows;
	int n;

	n = mrpin_read_devices(&rows);
	ASSERT_LE(0, n);
	d = mrpin_find_dev(rows, n, mrpin_dev_name());
	ASSERT_NE(NULL, d) {
		TH_LOG("%s has no line in devices", mrpin_dev_name());
	}
	*row = *d;
	free(rows);
}
#define dev_row(row) __dev_row(_metadata, row)

/* mrpin_mistakes children, driven through their stdin and stdout. */

struct mistakes {
	pid_t pid;
	int in;		/* its stdin: EOF lets it finish */
	FILE *out;
	uintptr_t site[2];
};

static void __mistakes_start(struct __test_metadata *_metadata,
			     struct mistakes *m, uid_t uid, const char **argv)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	int in[2], out[2];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/" MISTAKES, dirname(exe));
	ASSERT_EQ(0, access(path, X_OK)) {
		TH_LOG("%s: %s", path, strerror(errno));
	}
	ASSERT_EQ(0, pipe2(in, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(out, O_CLOEXEC));
	fflush(stdout);
	fflush(stderr);
	m->pid = fork();
	ASSERT_LE(0, m->pid);
	if (!m->pid) {
		if (uid && (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
			    setresuid(uid, uid, uid)))
			_exit(126);
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execv(path, (char **)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	m->in = in[1];
	m->out = fdopen(out[0], "r");
	ASSERT_NE(NULL, m->out);
}
#define mistakes_start(m, uid, ...)					\
	__mistakes_start(_metadata, m, uid,				\
			 (const char *[]){ MISTAKES, __VA_ARGS__, NULL })

/* Read what child @m says until the line @want; "site X ADDR" is kept. */
static void __mistakes_wait(struct __test_metadata *_metadata,
			    struct mistakes *m, const char *want)
{
	char line[128], which;
	unsigned long addr;

	for (;;) {
		ASSERT_NE(NULL, fgets(line, sizeof(line), m->out)) {
			TH_LOG(MISTAKES " %d ended before it said \"%s\"",
			       m->pid, want);
		}
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, want))
			return;
		ASSERT_EQ(2, sscanf(line, "site %c %lx", &which, &addr)) {
			TH_LOG(MISTAKES ": unexpected \"%s\"", line);
		}
		ASSERT_TRUE(which == 'a' || which == 'b');
		m->site[which - 'a'] = addr;
	}
}
#define mistakes_wait(m, want) __mistakes_wait(_metadata, m, want)

/* Close child @m's stdin (or send @sig) and reap it: its wait status. */
static int mistakes_finish(struct mistakes *m, int sig)
{
	int status = -1;

	if (m->pid <= 0)
		return status;
	if (sig)
		kill(m->pid, sig);
	close(m->in);
	waitpid(m->pid, &status, 0);
	if (m->out)
		fclose(m->out);
	m->out = NULL;
	m->pid = 0;
	return status;
}

#define mistakes_exit_ok(m)						\
	do {								\
		int __status = mistakes_finish(m, 0);			\
									\
		ASSERT_TRUE(WIFEXITED(__status) && !WEXITSTATUS(__status)) { \
			TH_LOG(MISTAKES ": wait status %#x", __status);	\
		}							\
	} while (0)

/* What every fixture holds. */
#define MAX_CHILDREN	2

struct diag_test {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct diag_stats start;
	int kmsg;
	struct mistakes kids[MAX_CHILDREN];
	char thp_saved[16];		/* THP "enabled" to restore */
	const char *huge_file;		/* nr_hugepages to restore */
	uint64_t huge_saved;
};

static void __test_setup(struct __test_metadata *_metadata,
			 struct diag_test *t)
{
	t->kmsg = -1;
	ASSERT_EQ(0, mrpin_unlimit_memlock());
	t->kmsg = mrpin_kmsg_open();
	ASSERT_LE(0, t->kmsg);
	ASSERT_EQ(0, limits_write("reset\n"));
	read_stats(&t->start);
	t->ctx = mrpin_open_dev(mrpin_dev_name());
	ASSERT_NE(NULL, t->ctx) {
		TH_LOG("cannot open %s: %s", mrpin_dev_name(),
		       strerror(errno));
	}
	t->pd = ibv_alloc_pd(t->ctx);
	ASSERT_NE(NULL, t->pd);
}
#define test_setup(t) __test_setup(_metadata, t)

/*
 * Release what the test may have left, restore the policy and the
 * huge-page settings, and check that the totals are back where they were.
 * Only EXPECT_*() without handler blocks here (see mrpin_test.h).
 */
static void __test_teardown(struct __test_metadata *_metadata,
			    struct diag_test *t)
{
	struct diag_stats end;
	const char *problem;
	char num[32], *log;
	int i;

	for (i = 0; i < MAX_CHILDREN; i++)
		mistakes_finish(&t->kids[i], SIGKILL);
	if (t->pd)
		ibv_dealloc_pd(t->pd);
	if (t->ctx)
		ibv_close_device(t->ctx);
	t->pd = NULL;
	t->ctx = NULL;
	EXPECT_EQ(0, limits_write("reset\n"));
	if (t->thp_saved[0])
		EXPECT_EQ(0, write_file(THP_ENABLED, t->thp_saved));
	if (t->huge_file) {
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)t->huge_saved);
		EXPECT_EQ(0, write_file(t->huge_file, num));
	}

	check_no_trace(getpid());
	EXPECT_EQ(0, diag_read_stats(&end));
	EXPECT_EQ(t->start.pins, end.pins);
	EXPECT_EQ(t->start.pinned_bytes, end.pinned_bytes);
	EXPECT_EQ(t->start.bytes_2m, end.bytes_2m);
	EXPECT_EQ(t->start.bytes_1g, end.bytes_1g);
	EXPECT_EQ(t->start.bytes_4k, end.bytes_4k);
	EXPECT_EQ(t->start.untracked_releases_total,
		  end.untracked_releases_total);

	if (t->kmsg < 0)
		return;
	log = mrpin_kmsg_read(t->kmsg);
	EXPECT_NE(NULL, log);
	if (!log)
		return;
	problem = mrpin_log_problem(log);
	EXPECT_EQ(NULL, problem);
	if (problem)
		ksft_print_msg("kernel log: %.*s\n",
			       (int)strcspn(problem, "\n"), problem);
	free(log);
	close(t->kmsg);
}
#define test_teardown(t) __test_teardown(_metadata, t)

FIXTURE(diag) {
	struct diag_test t;
};

FIXTURE_SETUP(diag)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(diag)
{
	test_teardown(&self->t);
}

/*
 * 1. The views: the new columns come last, in the contract's order; the
 * new tables have their headers; `stats` has the new keys; the global
 * rule shows the new keys' defaults.
 */
TEST_F(diag, views_show_the_new_columns_last_and_the_new_tables)
{
	struct diag_stats stats;
	char line[1024];

	header_of("pins", line, sizeof(line));
	EXPECT_TRUE(ends_with(line, PINS_TAIL)) {
		TH_LOG("pins header: %s", line);
	}
	header_of("procs", line, sizeof(line));
	EXPECT_TRUE(ends_with(line, PROCS_TAIL)) {
		TH_LOG("procs header: %s", line);
	}
	header_of("leaks", line, sizeof(line));
	EXPECT_STREQ(LEAKS_HEADER, line);
	header_of("callsites", line, sizeof(line));
	EXPECT_STREQ(CALLSITES_HEADER, line);
	EXPECT_EQ(0, diag_read_stats(&stats));
	EXPECT_EQ(stats.pinned_bytes,
		  stats.bytes_4k + stats.bytes_2m + stats.bytes_1g);
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, " " GLOBAL_DEFAULTS)) {
		TH_LOG("global line after reset: %s", line);
	}
}

/*
 * 2. The global rule's own keys: written, read back, kept by a line that
 * does not name them, refused on any other rule or with a bad value (the
 * policy unchanged), and restored by reset.
 */
TEST_F(diag, global_keys_read_back_and_are_refused_on_other_rules)
{
	static const char *const bad[] = {
		"process stack=deny\n", "uid 1000 oversize=1M\n",
		"process mr_table_warn=1%\n", "process callsites=on\n",
		"global stack=maybe\n", "global stack=\n",
		"global oversize=1X\n", "global oversize=-1\n",
		"global mr_table_warn=101%\n", "global mr_table_warn=5\n",
		"global callsites=yes\n", "global stack=allow stack=deny\n",
	};
	const char *want = " stack=deny oversize=1M mr_table_warn=1% callsites=on";
	char line[1024];
	size_t i;

	set_limits("global stack=deny oversize=1M mr_table_warn=1% callsites=on\n");
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, want)) {
		TH_LOG("global line: %s", line);
	}
	set_limits("global max_pins=1000\n");
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, want)) {
		TH_LOG("global line: %s", line);
	}
	set_limits("global stack=allow oversize=3G mr_table_warn=0% callsites=off\n");
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, " stack=allow oversize=3G mr_table_warn=0% callsites=off")) {
		TH_LOG("global line: %s", line);
	}
	for (i = 0; i < MRPIN_ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(EINVAL, limits_write(bad[i])) {
			TH_LOG("accepted: %s", bad[i]);
		}
	}
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, " stack=allow oversize=3G mr_table_warn=0% callsites=off")) {
		TH_LOG("a refused write changed the policy: %s", line);
	}
	set_limits("reset\n");
	global_line(line, sizeof(line));
	EXPECT_TRUE(ends_with(line, " " GLOBAL_DEFAULTS)) {
		TH_LOG("global line after reset: %s", line);
	}
}

/*
 * 3. Stack memory, registered from the main thread or from a pthread, is
 * flagged; stack=warn (the default) allows it with an event and a log line,
 * stack=allow without a word, stack=deny refuses it with ENOMEM.  A heap
 * buffer registered from the same thread is not flagged, also when it is
 * in the same VMA as the thread's stack, just above it: the kernel merges
 * a thread stack with an anonymous mapping made before it, and the
 * variant with its own stack builds exactly that.
 */
FIXTURE(stack) {
	struct diag_test t;
};

FIXTURE_VARIANT(stack) {
	bool thread;
	bool heap_above_stack;	/* the thread's stack and the heap buffer: one VMA */
	const char *rule;	/* stack=...; NULL: the default (warn) */
};

FIXTURE_VARIANT_ADD(stack, main_thread_default_warn) {
	.thread = false, .rule = NULL,
};
FIXTURE_VARIANT_ADD(stack, main_thread_allow) {
	.thread = false, .rule = "allow",
};
FIXTURE_VARIANT_ADD(stack, main_thread_deny) {
	.thread = false, .rule = "deny",
};
FIXTURE_VARIANT_ADD(stack, pthread_warn) {
	.thread = true, .rule = "warn",
};
FIXTURE_VARIANT_ADD(stack, pthread_allow) {
	.thread = true, .rule = "allow",
};
FIXTURE_VARIANT_ADD(stack, pthread_deny) {
	.thread = true, .rule = "deny",
};
FIXTURE_VARIANT_ADD(stack, pthread_heap_above_its_stack_deny) {
	.thread = true, .heap_above_stack = true, .rule = "deny",
};

FIXTURE_SETUP(stack)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(stack)
{
	test_teardown(&self->t);
}

#define STACK_REGION	(1UL << 20)	/* a thread stack of the test's own */

struct stack_job {
	struct ibv_pd *pd;
	bool thread;
	pthread_barrier_t bar;
	/* what the registering thread did */
	char *stack_buf;
	struct ibv_mr *stack_mr;
	int stack_err;
	char *heap_buf;
	struct ibv_mr *heap_mr;
	int heap_err;
	char *heap_above;	/* the heap buffer to use; NULL: map one */
	/* the state before */
	struct diag_stats before;
	struct diag_proc_row proc_before;
	uint64_t from;
	int kfd;
};

/* The checks while the registering frame (and its stack buffer) lives. */
static void stack_checks(struct __test_metadata *_metadata,
			 const FIXTURE_VARIANT(stack) *variant,
			 struct stack_job *job)
{
	const char *rule = variant->rule ?: "warn";
	bool deny = !strcmp(rule, "deny"), warn = !strcmp(rule, "warn");
	uint64_t asked = mrpin_span_bytes((uintptr_t)job->stack_buf, PAGE);
	struct mrpin_event ev[4];
	struct diag_proc_row proc;
	struct diag_pin_row pin;
	struct diag_stats after;
	char comm[64], line[256], *log;
	int n;

	ASSERT_EQ(2 * PAGE, asked);
	ASSERT_NE(NULL, job->heap_mr) {
		TH_LOG("heap buffer: %s", strerror(job->heap_err));
	}
	pin_row(getpid(), job->heap_buf, PAGE, &pin);
	EXPECT_EQ(0ULL, (unsigned long long)pin.stack) {
		TH_LOG("a heap buffer registered from the %s is flagged as stack",
		       job->thread ? "pthread" : "main thread");
	}
	if (deny) {
		EXPECT_EQ(NULL, job->stack_mr);
		EXPECT_EQ(ENOMEM, job->stack_err) {
			TH_LOG("stack=deny: %s, not ENOMEM",
			       job->stack_mr ? "registered" :
			       strerror(job->stack_err));
		}
	} else {
		ASSERT_NE(NULL, job->stack_mr) {
			TH_LOG("stack=%s: %s", rule, strerror(job->stack_err));
		}
		pin_row(getpid(), job->stack_buf, PAGE, &pin);
		EXPECT_EQ(1ULL, (unsigned long long)pin.stack);
		EXPECT_EQ(asked, pin.pinned_bytes);
	}

	proc_row(getpid(), &proc);
	read_stats(&after);
	EXPECT_EQ(job->proc_before.stack_pins + !deny, proc.stack_pins);
	EXPECT_EQ(job->proc_before.denials + deny, proc.denials);
	EXPECT_EQ(job->before.stack_pins_total + !deny, after.stack_pins_total);
	EXPECT_EQ(job->before.denials_total + deny, after.denials_total);
	EXPECT_EQ(job->before.warnings_total + warn, after.warnings_total);

	ASSERT_EQ(0, mrpin_comm(getpid(), comm, sizeof(comm)));
	n = events_since(job->from, getpid(), NULL, ev, 4);
	if (!deny && !warn) {
		EXPECT_EQ(0, n) {
			TH_LOG("stack=allow: %d events, the first %s %s", n,
			       ev[0].action, ev[0].key);
		}
		log = mrpin_kmsg_read(job->kfd);
		ASSERT_NE(NULL, log);
		snprintf(line, sizeof(line), "mrpin: pid %d (", getpid());
		EXPECT_FALSE(log_has(log, line, true)) {
			mrpin_log_show(log);
		}
		free(log);
		return;
	}
	mrpin_note_logged(shared, 1);
	ASSERT_EQ(1, n);
	check_event(&ev[0], deny ? "deny" : "warn", getpid(), getuid(),
		    "global", "stack", asked, 0, 0);
	snprintf(line, sizeof(line),
		 "mrpin: pid %d (%s) uid %u: %s %llu bytes of stack memory",
		 getpid(), comm, getuid(), deny ? "refused" : "registered",
		 (unsigned long long)asked);
	check_log(job->kfd, line);
}

/*
 * Register a heap buffer, then a page-long range of a buffer on this
 * frame's stack (from byte 100: two pages); check (main thread) or let the
 * main thread check (pthread); deregister.
 */
static void stack_frame(struct __test_metadata *_metadata,
			const FIXTURE_VARIANT(stack) *variant,
			struct stack_job *job)
{
	char buf[3 * PAGE] __attribute__((aligned(64)));

	memset(buf, 0x5a, sizeof(buf));
	job->heap_buf = job->heap_above ?:
			mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (job->heap_buf == MAP_FAILED) {
		job->heap_buf = NULL;
		job->heap_err = errno;
	} else {
		memset(job->heap_buf, 0x5a, PAGE);
		if (_do_reg(job->pd, job->heap_buf, PAGE, &job->heap_mr))
			job->heap_err = errno;
	}
	job->stack_buf = buf + 100;
	if (_do_reg(job->pd, job->stack_buf, PAGE, &job->stack_mr))
		job->stack_err = errno;

	if (job->thread) {
		pthread_barrier_wait(&job->bar);	/* registered */
		pthread_barrier_wait(&job->bar);	/* checked */
	} else {
		stack_checks(_metadata, variant, job);
	}
	if (job->stack_mr)
		ibv_dereg_mr(job->stack_mr);
	if (job->heap_mr)
		ibv_dereg_mr(job->heap_mr);
	if (job->heap_buf && !job->heap_above)
		munmap(job->heap_buf, PAGE);
	job->stack_mr = job->heap_mr = NULL;
	/* The buffer must live until here. */
	__asm__ volatile("" : : "r"(buf) : "memory");
}

static void *stack_thread(void *arg)
{
	stack_frame(NULL, NULL, arg);
	return NULL;
}

TEST_F(stack, registration_of_stack_memory_is_flagged_and_warned_allowed_or_denied)
{
	struct diag_test *t = &self->t;
	struct stack_job job = { .pd = t->pd, .thread = variant->thread };
	struct diag_stats after;
	struct ibv_mr *anchor;
	char rule[64], *region = NULL;
	pthread_attr_t attr;
	pthread_t thread;
	void *heap;

	if (variant->rule) {
		snprintf(rule, sizeof(rule), "global stack=%s\n", variant->rule);
		set_limits(rule);
	}
	/* The anchor keeps this process's `procs` line, and its denials. */
	heap = map_buf(PAGE);
	do_reg(t->pd, heap, PAGE, &anchor);
	read_stats(&job.before);
	proc_row(getpid(), &job.proc_before);
	job.from = next_seq();
	mrpin_log_room(shared);
	job.kfd = mrpin_kmsg_open();
	ASSERT_LE(0, job.kfd);

	ASSERT_EQ(0, pthread_attr_init(&attr));
	if (variant->heap_above_stack) {
		/* One mapping: the stack below, then a page of heap. */
		region = mmap(NULL, STACK_REGION + PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, region);
		ASSERT_EQ(0, pthread_attr_setstack(&attr, region, STACK_REGION));
		job.heap_above = region + STACK_REGION;
		memset(job.heap_above, 0x5a, PAGE);
	}
	if (variant->thread) {
		ASSERT_EQ(0, pthread_barrier_init(&job.bar, NULL, 2));
		ASSERT_EQ(0, pthread_create(&thread, &attr, stack_thread, &job));
		pthread_barrier_wait(&job.bar);
		stack_checks(_metadata, variant, &job);
		pthread_barrier_wait(&job.bar);
		ASSERT_EQ(0, pthread_join(thread, NULL));
		pthread_barrier_destroy(&job.bar);
	} else {
		stack_frame(_metadata, variant, &job);
	}
	close(job.kfd);
	pthread_attr_destroy(&attr);
	if (region)
		munmap(region, STACK_REGION + PAGE);

	/* The flag went with the pin; the count stays. */
	read_stats(&after);
	EXPECT_EQ(job.before.pins, after.pins);
	EXPECT_EQ(job.before.stack_pins_total +
		  !(variant->rule && !strcmp(variant->rule, "deny")),
		  after.stack_pins_total);
	do_dereg(anchor);
	munmap(heap, PAGE);
}

/*
 * 4. The page backing of a pin, against what pagemap and kpageflags say of
 * the pinned pages: a buffer with MADV_NOHUGEPAGE (4 KiB pages), a THP
 * buffer (aligned_alloc + MADV_HUGEPAGE), hugetlbfs with 2 MiB and 1 GiB
 * pages.  Two MRs each: the first two huge pages' worth from the start, and
 * four pages across the boundary between the first two huge pages.
 */
enum backing { BACK_4K, BACK_THP, BACK_HUGETLB_2M, BACK_HUGETLB_1G };

FIXTURE(backing) {
	struct diag_test t;
};

FIXTURE_VARIANT(backing) {
	enum backing kind;
};

FIXTURE_VARIANT_ADD(backing, madv_nohugepage_4k) {
	.kind = BACK_4K,
};
FIXTURE_VARIANT_ADD(backing, thp_2m) {
	.kind = BACK_THP,
};
FIXTURE_VARIANT_ADD(backing, hugetlbfs_2m) {
	.kind = BACK_HUGETLB_2M,
};
FIXTURE_VARIANT_ADD(backing, hugetlbfs_1g) {
	.kind = BACK_HUGETLB_1G,
};

FIXTURE_SETUP(backing)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(backing)
{
	test_teardown(&self->t);
}

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB	(21 << MAP_HUGE_SHIFT)
#define MAP_HUGE_1GB	(30 << MAP_HUGE_SHIFT)
#endif

#define KPF_HUGE	17
#define KPF_THP		22

/*
 * Bytes of the pages spanned by [@addr, +@len) that sit in huge pages (THP
 * or hugetlbfs), from /proc/self/pagemap and /proc/kpageflags: 0 or a
 * negative errno.
 */
static int huge_bytes(uintptr_t addr, uint64_t len, uint64_t *bytes)
{
	uint64_t va, e, flags, pfn;
	int pm, kf, ret = 0;

	*bytes = 0;
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	kf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (pm < 0 || kf < 0) {
		ret = -errno;
		goto out;
	}
	for (va = addr & ~(PAGE - 1); va < addr + len; va += PAGE) {
		if (pread(pm, &e, sizeof(e), va / PAGE * sizeof(e)) != sizeof(e)) {
			ret = -EIO;
			break;
		}
		pfn = e & ((1ULL << 55) - 1);
		if (!(e >> 63) || !pfn) {
			ret = -ENOENT;	/* not present, or no PFN shown */
			break;
		}
		if (pread(kf, &flags, sizeof(flags), pfn * sizeof(flags)) !=
		    sizeof(flags)) {
			ret = -EIO;
			break;
		}
		if (flags & (1ULL << KPF_THP | 1ULL << KPF_HUGE))
			*bytes += PAGE;
	}
out:
	if (pm >= 0)
		close(pm);
	if (kf >= 0)
		close(kf);
	return ret;
}

/* Ask for @n more huge pages in @file; what it has now in *@have. */
static int reserve_huge(struct diag_test *t, const char *file, uint64_t n,
			uint64_t *have)
{
	char num[32];
	int err;

	err = read_u64_file(file, &t->huge_saved);
	if (err)
		return -err;
	t->huge_file = file;
	snprintf(num, sizeof(num), "%llu",
		 (unsigned long long)(t->huge_saved + n));
	err = write_file(file, num);
	if (err)
		return err;
	err = read_u64_file(file, have);
	return err < 0 ? -err : err;
}

/*
 * The buffer of @map_len bytes for backing @kind (its mapping in *@memp for
 * munmap(), NULL for free()), touched; or NULL with the reason to skip in
 * @skip.
 */
static char *__backing_buf(struct __test_metadata *_metadata,
			   struct diag_test *t, enum backing kind,
			   uint64_t map_len, uint64_t huge, char **memp,
			   char *skip, size_t skip_len)
{
	char *buf = NULL, *mem, *text, word[16];
	const char *sel;
	uint64_t have = 0;
	int ret;

	*memp = NULL;
	switch (kind) {
	case BACK_4K:
		mem = mmap(NULL, map_len + 2 * MiB, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, mem);
		*memp = mem;
		buf = (char *)(((uintptr_t)mem + 2 * MiB - 1) & ~(2 * MiB - 1));
		/* Without THP (PREEMPT_RT), anonymous memory is 4 KiB anyway. */
		if (access(THP_ENABLED, F_OK) == 0)
			ASSERT_EQ(0, madvise(buf, map_len, MADV_NOHUGEPAGE));
		break;
	case BACK_THP:
		if (mrpin_read_file(THP_ENABLED, &text)) {
			snprintf(skip, skip_len,
				 "no transparent huge pages: %s is missing",
				 THP_ENABLED);
			return NULL;
		}
		sel = strchr(text, '[');
		ret = sel ? sscanf(sel, "[%15[a-z]]", word) : 0;
		free(text);
		ASSERT_EQ(1, ret);
		snprintf(t->thp_saved, sizeof(t->thp_saved), "%s", word);
		ASSERT_EQ(0, write_file(THP_ENABLED, "always"));
		buf = aligned_alloc(2 * MiB, map_len);
		ASSERT_NE(NULL, buf);
		ASSERT_EQ(0, madvise(buf, map_len, MADV_HUGEPAGE));
		break;
	case BACK_HUGETLB_2M:
	case BACK_HUGETLB_1G:
		sel = kind == BACK_HUGETLB_2M ? HUGEPAGES_2M : HUGEPAGES_1G;
		if (access(sel, F_OK)) {
			snprintf(skip, skip_len,
				 "no hugetlbfs pages of %llu MiB: %s is missing",
				 (unsigned long long)(huge / MiB), sel);
			return NULL;
		}
		if (kind == BACK_HUGETLB_1G) {
			/* The best chance for 1 GiB of contiguous memory. */
			write_file("/proc/sys/vm/drop_caches", "3");
			write_file("/proc/sys/vm/compact_memory", "1");
		}
		ret = reserve_huge(t, sel, map_len / huge, &have);
		if (ret || have < t->huge_saved + map_len / huge) {
			snprintf(skip, skip_len,
				 "cannot reserve %llu more huge pages of %llu MiB (%s: %llu, now %llu): %s",
				 (unsigned long long)(map_len / huge),
				 (unsigned long long)(huge / MiB), sel,
				 (unsigned long long)t->huge_saved,
				 (unsigned long long)have,
				 ret ? strerror(ret) : "not enough memory");
			return NULL;
		}
		mem = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			   (kind == BACK_HUGETLB_1G ? MAP_HUGE_1GB :
						      MAP_HUGE_2MB), -1, 0);
		if (mem == MAP_FAILED) {
			snprintf(skip, skip_len,
				 "mmap(MAP_HUGETLB) of %llu MiB: %s",
				 (unsigned long long)(map_len / MiB),
				 strerror(errno));
			return NULL;
		}
		*memp = buf = mem;
		break;
	}
	memset(buf, 0x5a, map_len);
	return buf;
}
#define backing_buf(t, kind, map_len, huge, memp, skip)			\
	__backing_buf(_metadata, t, kind, map_len, huge, memp, skip,	\
		      sizeof(skip))

TEST_F_TIMEOUT(backing, bytes_by_page_size_match_the_pages_pinned, 90)
{
	struct diag_test *t = &self->t;
	uint64_t huge = variant->kind == BACK_HUGETLB_1G ? GiB : 2 * MiB;
	uint64_t map_len = variant->kind == BACK_HUGETLB_1G ? GiB : 4 * MiB;
	uint64_t len[2], want_huge[2], sum_2m = 0, sum_1g = 0, hb;
	struct diag_stats before, during, after;
	struct diag_proc_row proc;
	struct diag_pin_row pin;
	struct ibv_mr *mr[2];
	char *mem, *buf, *start[2], skip[256];
	int i, ret;

	buf = backing_buf(t, variant->kind, map_len, huge, &mem, skip);
	if (!buf)
		SKIP(return, "%s", skip);

	/* From the start, and four pages across the first boundary. */
	start[0] = buf;
	len[0] = variant->kind == BACK_HUGETLB_1G ? 4 * MiB : map_len;
	start[1] = buf + huge - 2 * PAGE;
	len[1] = 4 * PAGE;
	if (variant->kind == BACK_HUGETLB_1G) {
		/* One 1 GiB page: four pages inside it instead. */
		start[1] = buf + 2 * MiB - 2 * PAGE;
	}
	read_stats(&before);
	do_reg(t->pd, start[0], len[0], &mr[0]);
	do_reg(t->pd, start[1], len[1], &mr[1]);

	/* The oracle, once the pages are pinned. */
	for (i = 0; i < 2; i++) {
		ret = huge_bytes((uintptr_t)start[i], len[i], &want_huge[i]);
		ASSERT_EQ(0, ret) {
			TH_LOG("pagemap/kpageflags: %s", strerror(-ret));
		}
	}
	if (variant->kind == BACK_4K)
		ASSERT_EQ(0ULL, (unsigned long long)want_huge[0]) {
			TH_LOG("MADV_NOHUGEPAGE memory sits in huge pages");
		}
	if (variant->kind == BACK_THP && !want_huge[0]) {
		for (i = 0; i < 2; i++)
			ibv_dereg_mr(mr[i]);
		free(buf);
		SKIP(return, "THP did not back the buffer (enabled=always, MADV_HUGEPAGE): no huge page to test");
	}
	if (variant->kind >= BACK_HUGETLB_2M) {
		ASSERT_EQ(len[0], want_huge[0]);
		ASSERT_EQ(len[1], want_huge[1]);
	}
	if (variant->kind == BACK_THP && want_huge[0] != len[0])
		TH_LOG("THP backs %llu of the %llu bytes",
		       (unsigned long long)want_huge[0],
		       (unsigned long long)len[0]);

	for (i = 0; i < 2; i++) {
		pin_row(getpid(), start[i], len[i], &pin);
		hb = variant->kind == BACK_HUGETLB_1G ? pin.bytes_1g :
							 pin.bytes_2m;
		EXPECT_EQ(want_huge[i], hb) {
			TH_LOG("MR %d: %llu bytes in %s pages, pagemap says %llu",
			       i, (unsigned long long)hb,
			       variant->kind == BACK_HUGETLB_1G ? "1 GiB" : "2 MiB",
			       (unsigned long long)want_huge[i]);
		}
		EXPECT_EQ(0ULL, (unsigned long long)(variant->kind ==
			  BACK_HUGETLB_1G ? pin.bytes_2m : pin.bytes_1g));
		EXPECT_EQ(pin.pinned_bytes - want_huge[i], pin.bytes_4k);
		EXPECT_EQ(pin.pinned_bytes,
			  pin.bytes_4k + pin.bytes_2m + pin.bytes_1g);
		sum_2m += pin.bytes_2m;
		sum_1g += pin.bytes_1g;
	}
	proc_row(getpid(), &proc);
	EXPECT_EQ(sum_2m, proc.bytes_2m);
	EXPECT_EQ(sum_1g, proc.bytes_1g);
	EXPECT_EQ(proc.pinned_bytes - sum_2m - sum_1g, proc.bytes_4k);
	read_stats(&during);
	EXPECT_EQ(before.bytes_2m + sum_2m, during.bytes_2m);
	EXPECT_EQ(before.bytes_1g + sum_1g, during.bytes_1g);
	EXPECT_EQ(during.pinned_bytes,
		  during.bytes_4k + during.bytes_2m + during.bytes_1g);

	do_dereg(mr[0]);
	do_dereg(mr[1]);
	read_stats(&after);
	EXPECT_EQ(before.bytes_4k, after.bytes_4k);
	EXPECT_EQ(before.bytes_2m, after.bytes_2m);
	EXPECT_EQ(before.bytes_1g, after.bytes_1g);
	if (!mem)
		free(buf);
	else
		munmap(mem, variant->kind == BACK_4K ? map_len + 2 * MiB :
						       map_len);
}

/*
 * 5. align: the largest power of two dividing the start, up to 1 GiB, from
 * a mapping at a 1 TiB-aligned address.
 */
TEST_F(diag, align_is_the_largest_power_of_two_dividing_the_start)
{
	static const struct {
		uint64_t off;
		uint64_t align;
	} cases[] = {
		{ 0, GiB },		/* 1 TiB-aligned: capped */
		{ 2 * MiB, 2 * MiB },
		{ MiB, MiB },
		{ 0x18000, 0x8000 },
		{ PAGE, PAGE },
		{ 3 * PAGE, PAGE },
		{ 0x200, 0x200 },
		{ 4 * MiB - 64, 64 },
		{ 100, 4 },
		{ 6, 2 },
		{ 1, 1 },
		{ PAGE + 1, 1 },
	};
	const int n = MRPIN_ARRAY_SIZE(cases);
	struct diag_test *t = &self->t;
	struct ibv_mr *mr[MRPIN_ARRAY_SIZE(cases)];
	struct diag_pin_row pin;
	char *base = MAP_FAILED;
	uint64_t tib;
	int i;

	for (tib = 1; tib < 64 && base == MAP_FAILED; tib++) {
		base = mmap((void *)(uintptr_t)(tib << 40), 5 * MiB,
			    PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			    -1, 0);
		if (base != MAP_FAILED &&
		    (uintptr_t)base != (uintptr_t)(tib << 40)) {
			munmap(base, 5 * MiB);	/* an old kernel's hint */
			base = MAP_FAILED;
		}
	}
	ASSERT_NE(MAP_FAILED, base) {
		TH_LOG("no free 1 TiB-aligned address");
	}
	memset(base, 0x5a, 5 * MiB);
	for (i = 0; i < n; i++)
		do_reg(t->pd, base + cases[i].off, 64, &mr[i]);
	for (i = 0; i < n; i++) {
		pin_row(getpid(), base + cases[i].off, 64, &pin);
		EXPECT_EQ(cases[i].align, pin.align) {
			TH_LOG("start %p: align %llu, expected %llu",
			       base + cases[i].off,
			       (unsigned long long)pin.align,
			       (unsigned long long)cases[i].align);
		}
	}
	for (i = 0; i < n; i++)
		do_dereg(mr[i]);
	munmap(base, 5 * MiB);
}

/*
 * 6. oversized: the pinned bytes (the pages spanned, not the length asked)
 * reach the global oversize= mark, as it was when the pin was made.
 */
TEST_F(diag, oversized_flags_pins_whose_pinned_bytes_reach_the_mark)
{
	static const struct {
		uint64_t off;
		uint64_t len;
		uint64_t oversized;
	} cases[] = {
		{ 0, 2 * MiB, 1 },
		{ 0, MiB, 1 },			/* exactly the mark */
		{ 0, MiB - PAGE, 0 },
		{ 0, MiB - 1, 1 },		/* spans 256 pages */
		{ 1, MiB - PAGE, 1 },		/* likewise */
		{ 100, MiB - 2 * PAGE, 0 },	/* 255 pages */
	};
	const int n = MRPIN_ARRAY_SIZE(cases);
	struct diag_test *t = &self->t;
	struct ibv_mr *mr[MRPIN_ARRAY_SIZE(cases)], *early;
	struct diag_stats before, after;
	struct diag_pin_row pin;
	char *buf[MRPIN_ARRAY_SIZE(cases)], *big;
	uint64_t flagged = 0;
	int i;

	/* Under the default mark (1 GiB), 2 MiB is not oversized. */
	big = map_buf(2 * MiB);
	read_stats(&before);
	do_reg(t->pd, big, 2 * MiB, &early);
	pin_row(getpid(), big, 2 * MiB, &pin);
	EXPECT_EQ(0ULL, (unsigned long long)pin.oversized);

	set_limits("global oversize=1M\n");
	for (i = 0; i < n; i++) {
		buf[i] = map_buf(3 * MiB);
		do_reg(t->pd, buf[i] + cases[i].off, cases[i].len, &mr[i]);
		flagged += cases[i].oversized;
	}
	for (i = 0; i < n; i++) {
		pin_row(getpid(), buf[i] + cases[i].off, cases[i].len, &pin);
		EXPECT_EQ(cases[i].oversized, pin.oversized) {
			TH_LOG("%llu bytes from byte %llu (%llu pinned): oversized %llu",
			       (unsigned long long)cases[i].len,
			       (unsigned long long)cases[i].off,
			       (unsigned long long)pin.pinned_bytes,
			       (unsigned long long)pin.oversized);
		}
	}
	/* The early pin keeps the fact of its time. */
	pin_row(getpid(), big, 2 * MiB, &pin);
	EXPECT_EQ(0ULL, (unsigned long long)pin.oversized);
	read_stats(&after);
	EXPECT_EQ(before.oversized_pins_total + flagged,
		  after.oversized_pins_total);

	for (i = 0; i < n; i++) {
		do_dereg(mr[i]);
		munmap(buf[i], 3 * MiB);
	}
	do_dereg(early);
	munmap(big, 2 * MiB);
	read_stats(&after);
	EXPECT_EQ(before.oversized_pins_total + flagged,
		  after.oversized_pins_total);
}

/*
 * 7. A program that exits with 100 live MRs: the kernel releases them, a
 * leak of 100 pins for (its comm, its uid), with the time it happened.
 */
FIXTURE(leak_at_exit) {
	struct diag_test t;
};

FIXTURE_VARIANT(leak_at_exit) {
	uid_t uid;
};

FIXTURE_VARIANT_ADD(leak_at_exit, as_root) {
	.uid = 0,
};
FIXTURE_VARIANT_ADD(leak_at_exit, as_uid_1000) {
	.uid = USER_UID,
};

FIXTURE_SETUP(leak_at_exit)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(leak_at_exit)
{
	test_teardown(&self->t);
}

TEST_F_TIMEOUT(leak_at_exit, program_exiting_with_100_live_mrs_is_a_leak_of_100, 90)
{
	struct diag_test *t = &self->t;
	struct mistakes *m = &t->kids[0];
	struct diag_stats before, after;
	struct leak_row lbefore, lafter, other;
	struct diag_proc_row proc;
	uint64_t t0, t1;
	pid_t pid;

	leak_row(MISTAKES, variant->uid, &lbefore);
	leak_row(MISTAKES, variant->uid ? 0 : USER_UID, &other);
	mistakes_start(m, variant->uid, "leak-exit", "100");
	mistakes_wait(m, "ready");
	pid = m->pid;
	proc_row(pid, &proc);
	EXPECT_EQ(100ULL, (unsigned long long)proc.pins);
	EXPECT_EQ(variant->uid, proc.uid);
	EXPECT_EQ(0ULL, (unsigned long long)proc.cleanup_releases);
	read_stats(&before);

	t0 = realtime_ns();
	mistakes_exit_ok(m);
	t1 = realtime_ns();

	check_no_trace(pid);
	read_stats(&after);
	EXPECT_EQ(before.pins - 100, after.pins);
	EXPECT_EQ(before.releases_total + 100, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total + 100,
		  after.cleanup_releases_total);
	leak_row(MISTAKES, variant->uid, &lafter);
	EXPECT_EQ(lbefore.count + 100, lafter.count);
	EXPECT_EQ(lbefore.bytes + 100 * PAGE, lafter.bytes);
	EXPECT_LE(t0, lafter.last_time_ns);
	EXPECT_GE(t1, lafter.last_time_ns);
	/* The other uid's line, if any, is another program's. */
	leak_row(MISTAKES, variant->uid ? 0 : USER_UID, &lafter);
	EXPECT_EQ(other.count, lafter.count);
}

/*
 * 8. A program that drops its device file without deregistering: close()
 * of the command fd, dup2() of /dev/null over it, or ibv_close_device().
 * The MRs go with the file: leaks, counted as cleanup releases in its
 * `procs` line (kept by an anchor MR on another context) and in `stats`;
 * its later explicit deregistration of the anchor is none.
 */
FIXTURE(leak_at_close) {
	struct diag_test t;
};

FIXTURE_VARIANT(leak_at_close) {
	const char *how;
};

FIXTURE_VARIANT_ADD(leak_at_close, close_cmd_fd) {
	.how = "close",
};
FIXTURE_VARIANT_ADD(leak_at_close, dup2_over_cmd_fd) {
	.how = "dup2",
};
FIXTURE_VARIANT_ADD(leak_at_close, ibv_close_device) {
	.how = "close-device",
};

FIXTURE_SETUP(leak_at_close)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(leak_at_close)
{
	test_teardown(&self->t);
}

TEST_F(leak_at_close, device_file_dropped_with_live_mrs_is_a_leak)
{
	struct diag_test *t = &self->t;
	struct mistakes *m = &t->kids[0];
	struct diag_stats before, after;
	struct leak_row lbefore, lafter;
	struct diag_proc_row proc;
	uint64_t t0, t1;
	pid_t pid;

	leak_row(MISTAKES, 0, &lbefore);
	read_stats(&before);
	t0 = realtime_ns();
	mistakes_start(m, 0, "leak-close", variant->how, "10");
	mistakes_wait(m, "closed");
	t1 = realtime_ns();
	pid = m->pid;

	proc_row(pid, &proc);
	EXPECT_EQ(1ULL, (unsigned long long)proc.pins);
	EXPECT_EQ(11ULL, (unsigned long long)proc.registrations);
	EXPECT_EQ(10ULL, (unsigned long long)proc.cleanup_releases);
	read_stats(&after);
	EXPECT_EQ(before.pins + 1, after.pins);
	EXPECT_EQ(before.releases_total + 10, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total + 10,
		  after.cleanup_releases_total);
	leak_row(MISTAKES, 0, &lafter);
	EXPECT_EQ(lbefore.count + 10, lafter.count);
	EXPECT_EQ(lbefore.bytes + 10 * PAGE, lafter.bytes);
	EXPECT_LE(t0, lafter.last_time_ns);
	EXPECT_GE(t1, lafter.last_time_ns);

	mistakes_exit_ok(m);
	check_no_trace(pid);
	read_stats(&after);
	EXPECT_EQ(before.releases_total + 11, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total + 10,
		  after.cleanup_releases_total);
	leak_row(MISTAKES, 0, &lafter);
	EXPECT_EQ(lbefore.count + 10, lafter.count);
}

/* 9. ibv_dereg_mr() is never a leak, in a child or in this process. */
TEST_F(diag, explicit_deregistration_is_not_a_leak)
{
	struct diag_test *t = &self->t;
	struct mistakes *m = &t->kids[0];
	struct diag_stats before, after;
	struct leak_row lbefore, lafter, sbefore, safter;
	struct diag_proc_row proc;
	struct ibv_mr *mr[2];
	char comm[64], *buf;
	pid_t pid;

	ASSERT_EQ(0, mrpin_comm(getpid(), comm, sizeof(comm)));
	leak_row(MISTAKES, 0, &lbefore);
	leak_row(comm, getuid(), &sbefore);
	read_stats(&before);

	mistakes_start(m, 0, "dereg", "10");
	mistakes_wait(m, "ready");
	pid = m->pid;
	proc_row(pid, &proc);
	EXPECT_EQ(1ULL, (unsigned long long)proc.pins);
	EXPECT_EQ(11ULL, (unsigned long long)proc.registrations);
	EXPECT_EQ(0ULL, (unsigned long long)proc.cleanup_releases);
	mistakes_exit_ok(m);
	check_no_trace(pid);

	buf = map_buf(2 * PAGE);
	do_reg(t->pd, buf, PAGE, &mr[0]);
	do_reg(t->pd, buf + PAGE, PAGE, &mr[1]);
	do_dereg(mr[1]);
	proc_row(getpid(), &proc);
	EXPECT_EQ(0ULL, (unsigned long long)proc.cleanup_releases);
	do_dereg(mr[0]);
	munmap(buf, 2 * PAGE);

	read_stats(&after);
	EXPECT_EQ(before.releases_total + 13, after.releases_total);
	EXPECT_EQ(before.cleanup_releases_total, after.cleanup_releases_total);
	leak_row(MISTAKES, 0, &lafter);
	EXPECT_EQ(lbefore.count, lafter.count);
	leak_row(comm, getuid(), &safter);
	EXPECT_EQ(sbefore.count, safter.count);
}

/*
 * 10. Churn: 5000 registrations that live microseconds each.  registrations
 * grows by 5000, the lifetime histogram gets 5000 counts, most of them
 * below a millisecond, and once a second has passed reg_per_s shows the
 * rate.
 */
#define CHURN		5000
#define CHURN_FAST	10	/* buckets 0..9: lifetimes below 1024 us */

TEST_F_TIMEOUT(diag, churn_shows_in_registrations_reg_per_s_and_life_hist, 240)
{
	struct diag_test *t = &self->t;
	uint64_t hb[LIFE_BUCKETS], ha[LIFE_BUCKETS], total = 0, fast = 0;
	struct diag_proc_row before, after;
	struct ibv_mr *anchor, *mr, *last;
	double t_anchor, t0, t1, t_read, churn_rate, avg_rate, c0, cycle;
	double longest = 0;
	char *buf;
	int i, slowest = 0, bound;

	buf = map_buf(2 * PAGE);
	do_reg(t->pd, buf, PAGE, &anchor);
	t_anchor = mrpin_now_s();
	proc_row(getpid(), &before);
	hist_of(&before, hb);
	EXPECT_EQ(1ULL, (unsigned long long)before.registrations);
	EXPECT_EQ(0ULL, (unsigned long long)before.reg_per_s);

	t0 = mrpin_now_s();
	for (i = 0; i < CHURN; i++) {
		c0 = mrpin_now_s();
		do_reg(t->pd, buf + PAGE, PAGE, &mr);
		do_dereg(mr);
		cycle = mrpin_now_s() - c0;
		if (cycle > longest)
			longest = cycle;
	}
	t1 = mrpin_now_s();
	/* No pin outlives its reg+dereg cycle: its bucket is the bound. */
	bound = longest * 1e6 >= 2 ? 63 - __builtin_clzll((uint64_t)(longest * 1e6)) : 0;
	churn_rate = CHURN / (t1 - t0);

	proc_row(getpid(), &after);
	hist_of(&after, ha);
	EXPECT_EQ(before.registrations + CHURN, after.registrations);
	EXPECT_EQ(0ULL, (unsigned long long)after.cleanup_releases);
	for (i = 0; i < LIFE_BUCKETS; i++) {
		ASSERT_LE(hb[i], ha[i]);
		total += ha[i] - hb[i];
		if (i < CHURN_FAST)
			fast += ha[i] - hb[i];
		if (ha[i] > hb[i])
			slowest = i;
	}
	TH_LOG("%d registrations in %.2f s; lifetimes: %llu below 1 ms, slowest in [2^%d, 2^%d) us; life_hist %s",
	       CHURN, t1 - t0, (unsigned long long)fast, slowest, slowest + 1,
	       after.life_hist);
	EXPECT_EQ((uint64_t)CHURN, total);
	EXPECT_GE(bound, slowest) {
		TH_LOG("longest reg+dereg cycle %.0f us: bucket %d", longest * 1e6,
		       bound);
	}
	/* On a kernel that registers within a millisecond, most do here. */
	if (bound < CHURN_FAST)
		EXPECT_LE((uint64_t)CHURN * 9 / 10, fast);

	/* A second later, one more: the window is old enough to show. */
	mrpin_sleep_s(1.1);
	do_reg(t->pd, buf + PAGE, PAGE, &last);
	proc_row(getpid(), &after);
	t_read = mrpin_now_s();
	avg_rate = (CHURN + 2) / (t_read - t_anchor);
	TH_LOG("reg_per_s %llu; churn rate %.0f/s, average since the first registration %.0f/s",
	       (unsigned long long)after.reg_per_s, churn_rate, avg_rate);
	EXPECT_EQ(before.registrations + CHURN + 1, after.registrations);
	EXPECT_LT(0ULL, (unsigned long long)after.reg_per_s);
	EXPECT_GE(churn_rate * 1.5, (double)after.reg_per_s);
	EXPECT_LE(avg_rate / 1.5, (double)after.reg_per_s);
	do_dereg(last);
	do_dereg(anchor);
	munmap(buf, 2 * PAGE);
}

/*
 * 11. An idle process: reg_per_s is the rate of the last full 10 s window,
 * so it falls to zero once a whole window passes without registrations;
 * a pin that lived longer than 2^23 us lands in the last lifetime bucket.
 */
TEST_F_TIMEOUT(diag, idle_process_reg_per_s_falls_to_zero_and_long_lives_land_in_the_last_bucket, 90)
{
	struct diag_test *t = &self->t;
	uint64_t hb[LIFE_BUCKETS], ha[LIFE_BUCKETS];
	struct ibv_mr *anchor, *keeper, *mr;
	struct diag_proc_row row;
	double t0, rate;
	char *buf;
	int i;

	buf = map_buf(3 * PAGE);
	do_reg(t->pd, buf, PAGE, &anchor);
	t0 = mrpin_now_s();
	/* Up to 1000, within 8 s whatever the kernel's speed. */
	for (i = 0; i < 1000 && mrpin_now_s() < t0 + 8; i++) {
		do_reg(t->pd, buf + PAGE, PAGE, &mr);
		do_dereg(mr);
	}
	ASSERT_GT(t0 + 9.5, mrpin_now_s());

	/* Past the first full window: its i + 1 registrations. */
	mrpin_sleep_s(t0 + 10.5 - mrpin_now_s());
	proc_row(getpid(), &row);
	rate = (i + 1) / 10.0;
	TH_LOG("10.5 s after the first of %d registrations: reg_per_s %llu (%.0f expected)",
	       i + 1, (unsigned long long)row.reg_per_s, rate);
	EXPECT_LE(rate * 0.75, (double)row.reg_per_s);
	EXPECT_GE(rate * 1.25, (double)row.reg_per_s);
	do_reg(t->pd, buf + 2 * PAGE, PAGE, &keeper);

	/* A whole window later with one registration: below 1/s. */
	mrpin_sleep_s(t0 + 21 - mrpin_now_s());
	proc_row(getpid(), &row);
	EXPECT_GE(1ULL, (unsigned long long)row.reg_per_s) {
		TH_LOG("21 s after the burst, one registration in the last 10 s: reg_per_s %llu",
		       (unsigned long long)row.reg_per_s);
	}
	hist_of(&row, hb);

	/* The anchor lived about 21 s (2^24.3 us): the last bucket. */
	do_dereg(anchor);
	proc_row(getpid(), &row);
	hist_of(&row, ha);
	for (i = 0; i < LIFE_BUCKETS - 1; i++)
		EXPECT_EQ(hb[i], ha[i]);
	EXPECT_EQ(hb[LIFE_BUCKETS - 1] + 1, ha[LIFE_BUCKETS - 1]) {
		TH_LOG("life_hist %s", row.life_hist);
	}
	do_dereg(keeper);
	munmap(buf, 3 * PAGE);
}

/*
 * 12. callsites: with callsites=on, the live pins of a program grouped by
 * the function that called ibv_reg_mr(): the syscall's IP in libc first,
 * then return addresses into executable file mappings, one of them inside
 * that function.  Pins made with callsites=off have none.
 */
struct mapping {
	uintptr_t start;
	uintptr_t end;
	char perms[8];
	char path[PATH_MAX];
};

/* The mapping of process @pid that holds @addr: 0, or -ENOENT. */
static int mapping_of(pid_t pid, uintptr_t addr, struct mapping *map)
{
	char path[64], *buf, *line, *next;
	unsigned long start, end;
	int off = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (mrpin_read_file(path, &buf))
		return -ENOENT;
	for (line = buf; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end,
			   map->perms, &off) < 3)
			continue;
		if (addr < start || addr >= end)
			continue;
		map->start = start;
		map->end = end;
		snprintf(map->path, sizeof(map->path), "%s",
			 off ? line + off : "");
		free(buf);
		return 0;
	}
	free(buf);
	return -ENOENT;
}

static int parse_frames(const char *s, uintptr_t *frames)
{
	char *end;
	int n = 0;

	while (*s) {
		if (n == MAX_FRAMES + 1 || strncmp(s, "0x", 2))
			return -EPROTO;
		errno = 0;
		frames[n++] = strtoul(s, &end, 16);
		if (errno || end == s + 2 || (*end && *end != ','))
			return -EPROTO;
		s = *end ? end + 1 : end;
	}
	return n;
}

/* The `callsites` lines of @pid: their number, up to @max in @rows. */
static int __callsites_of(struct __test_metadata *_metadata, pid_t pid,
			  struct callsite_row *out, int max)
{
	struct callsite_row *rows;
	int n, i, found = 0;

	n = read_table("callsites", callsite_cols, &rows);
	ASSERT_LE(0, n) {
		TH_LOG("callsites: %s", strerror(-n));
	}
	for (i = 0; i < n; i++) {
		if (rows[i].pid != pid)
			continue;
		if (found < max)
			out[found] = rows[i];
		found++;
	}
	free(rows);
	return found;
}
#define callsites_of(pid, out, max) __callsites_of(_metadata, pid, out, max)

/* The end of reg_site_@site: 256 bytes on, or where the other one starts. */
static uintptr_t site_end(const struct mistakes *m, int site)
{
	uintptr_t end = m->site[site] + 256, other = m->site[!site];

	return other > m->site[site] && other < end ? other : end;
}

TEST_F(diag, callsites_name_the_function_that_registered)
{
	struct diag_test *t = &self->t;
	struct mistakes *m = &t->kids[0], *off = &t->kids[1];
	struct callsite_row rows[4];
	uintptr_t frames[MAX_FRAMES + 1];
	struct mapping map;
	int n, i, j, k, site, in_site[2];

	set_limits("global callsites=on\n");
	mistakes_start(m, 0, "callsites", "3", "2");
	mistakes_wait(m, "ready");
	ASSERT_NE(0UL, (unsigned long)m->site[0]);
	ASSERT_NE(0UL, (unsigned long)m->site[1]);

	n = callsites_of(m->pid, rows, 4);
	EXPECT_EQ(2, n) {
		TH_LOG("%d callsites lines for pid %d, expected 2 (one per function)",
		       n, m->pid);
	}
	for (i = 0; i < n && i < 4; i++) {
		/* The 3 MRs of reg_site_a, the 2 of reg_site_b. */
		site = rows[i].pins == 3 ? 0 : 1;
		TH_LOG("pid %d: %llu pins from site %c (%#lx): %s", m->pid,
		       (unsigned long long)rows[i].pins, 'a' + site,
		       (unsigned long)m->site[site], rows[i].frames);
		EXPECT_STREQ(MISTAKES, rows[i].comm);
		if (n == 2)
			EXPECT_EQ(site ? 2ULL : 3ULL,
				  (unsigned long long)rows[i].pins);
		EXPECT_EQ(rows[i].pins * PAGE, rows[i].bytes);
		EXPECT_GT(60000ULL, (unsigned long long)rows[i].oldest_age_ms);
		k = parse_frames(rows[i].frames, frames);
		ASSERT_LT(0, k) {
			TH_LOG("frames \"%s\": not hex addresses", rows[i].frames);
		}
		EXPECT_GE(MAX_FRAMES, k);
		/* The syscall's IP, in libc. */
		EXPECT_EQ(0, mapping_of(m->pid, frames[0], &map));
		EXPECT_NE(NULL, strstr(map.path, "libc")) {
			TH_LOG("first frame %#lx is in \"%s\", not libc",
			       (unsigned long)frames[0], map.path);
		}
		in_site[0] = in_site[1] = 0;
		for (j = 0; j < k; j++) {
			if (mapping_of(m->pid, frames[j], &map)) {
				EXPECT_TRUE(false) {
					TH_LOG("frame %#lx is in no mapping",
					       (unsigned long)frames[j]);
				}
				continue;
			}
			TH_LOG("  frame %d: %#lx in %s %s+%#lx", j,
			       (unsigned long)frames[j], map.perms, map.path,
			       (unsigned long)(frames[j] - map.start));
			EXPECT_TRUE(strchr(map.perms, 'x') && map.path[0] == '/') {
				TH_LOG("frame %#lx is in %s %s, not an executable file mapping",
				       (unsigned long)frames[j], map.perms,
				       map.path);
			}
			for (site = 0; site < 2; site++)
				in_site[site] += frames[j] >= m->site[site] &&
						 frames[j] < site_end(m, site);
		}
		site = rows[i].pins == 3 ? 0 : 1;
		if (n != 2)
			continue;
		EXPECT_LE(1, in_site[site]) {
			TH_LOG("no frame inside reg_site_%c [%#lx, %#lx)",
			       'a' + site, (unsigned long)m->site[site],
			       (unsigned long)site_end(m, site));
		}
		EXPECT_EQ(0, in_site[!site]);
	}

	/* callsites=off: new pins have none, the old ones keep theirs. */
	set_limits("global callsites=off\n");
	mistakes_start(off, 0, "callsites", "1", "1");
	mistakes_wait(off, "ready");
	EXPECT_EQ(0, callsites_of(off->pid, rows, 4));
	EXPECT_EQ(n, callsites_of(m->pid, rows, 4));
	mistakes_exit_ok(off);
	mistakes_exit_ok(m);
	EXPECT_EQ(0, callsites_of(m->pid, rows, 4));
}

/*
 * 13. The MR table: with mr_table_warn=1%, the pin that brings the device
 * to ceil(max_mr / 100) live pins warns once; the next does not; falling
 * below the mark and coming back warns again.
 */
TEST_F_TIMEOUT(diag, mr_table_warns_once_per_crossing_of_the_mark, 300)
{
	struct diag_test *t = &self->t;
	struct mrpin_event ev[4];
	struct mrpin_dev_row dev;
	struct ibv_mr **mrs;
	uint64_t mark, need, i;
	char scope[128], line[256];
	int n, kfd;
	uint64_t from;
	char *buf;

	dev_row(&dev);
	mark = (dev.max_mr + 99) / 100;
	ASSERT_LT(dev.pins + 2, mark) {
		TH_LOG("%s already holds %llu pins", mrpin_dev_name(),
		       (unsigned long long)dev.pins);
	}
	need = mark - dev.pins;
	TH_LOG("%s: max_mr %llu, mark %llu; registering %llu MRs",
	       mrpin_dev_name(), (unsigned long long)dev.max_mr,
	       (unsigned long long)mark, (unsigned long long)need + 1);
	snprintf(scope, sizeof(scope), "device:%s", mrpin_dev_name());
	mrs = calloc(need + 1, sizeof(*mrs));
	ASSERT_NE(NULL, mrs);
	buf = map_buf((need + 1) * PAGE);
	set_limits("global mr_table_warn=1%\n");
	from = next_seq();
	mrpin_log_room(shared);
	kfd = mrpin_kmsg_open();
	ASSERT_LE(0, kfd);

	for (i = 0; i < need - 1; i++)
		do_reg(t->pd, buf + i * PAGE, PAGE, &mrs[i]);
	n = events_since(from, 0, "mr_table", ev, 4);
	EXPECT_EQ(0, n) {
		TH_LOG("an mr_table event below the mark (usage %llu)",
		       (unsigned long long)ev[0].usage);
	}

	/* The pin that reaches the mark. */
	do_reg(t->pd, buf + i * PAGE, PAGE, &mrs[i]);
	i++;
	dev_row(&dev);
	EXPECT_EQ(mark, dev.pins);
	n = events_since(from, 0, "mr_table", ev, 4);
	ASSERT_EQ(1, n);
	mrpin_note_logged(shared, 1);
	check_event(&ev[0], "warn", getpid(), getuid(), scope, "mr_table",
		    PAGE, mark, mark);
	snprintf(line, sizeof(line),
		 "mrpin: device %s: %llu live pins, past the mr_table_warn mark of %llu",
		 mrpin_dev_name(), (unsigned long long)mark,
		 (unsigned long long)mark);
	check_log(kfd, line);

	/* One more: still past the mark, no second event. */
	do_reg(t->pd, buf + i * PAGE, PAGE, &mrs[i]);
	i++;
	EXPECT_EQ(1, events_since(from, 0, "mr_table", ev, 4));

	/* Just below the mark (mark - 1), then back to it. */
	do_dereg(mrs[--i]);
	do_dereg(mrs[--i]);
	dev_row(&dev);
	EXPECT_EQ(mark - 1, dev.pins);
	EXPECT_EQ(1, events_since(from, 0, "mr_table", ev, 4));
	mrpin_log_room(shared);
	do_reg(t->pd, buf + i * PAGE, PAGE, &mrs[i]);
	i++;
	n = events_since(from, 0, "mr_table", ev, 4);
	EXPECT_EQ(2, n) {
		TH_LOG("back at the mark after falling to %llu: %d mr_table events, expected 2",
		       (unsigned long long)mark - 1, n);
	}
	if (n == 2) {
		mrpin_note_logged(shared, 1);
		check_event(&ev[1], "warn", getpid(), getuid(), scope,
			    "mr_table", PAGE, mark, mark);
		check_log(kfd, line);
	} else if (n == 1) {
		/* Where does it re-arm?  For the report only. */
		do_dereg(mrs[--i]);
		do_dereg(mrs[--i]);
		do_reg(t->pd, buf + i * PAGE, PAGE, &mrs[i]);
		i++;
		do_reg(t->pd, buf + i * PAGE, PAGE, &mrs[i]);
		i++;
		n = events_since(from, 0, "mr_table", ev, 4);
		TH_LOG("after falling to %llu and coming back: %d mr_table events",
		       (unsigned long long)mark - 2, n);
		mrpin_note_logged(shared, 1);
	}
	close(kfd);

	while (i)
		do_dereg(mrs[--i]);
	munmap(buf, (need + 1) * PAGE);
	free(mrs);
}

/* Whether the events file holds any event (or cannot be read). */
static bool events_exist(void)
{
	char *text, *nl;
	bool any;
	int fd;

	fd = open(EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return true;
	if (mrpin_read_available(fd, &text, NULL)) {
		close(fd);
		return true;
	}
	close(fd);
	nl = strchr(text, '\n');
	any = !nl || nl[1];
	free(text);
	return any;
}

/*
 * Nothing to test without mrpin's diagnostics or the device: skip the
 * whole program (the 6.1 harness would run a test's body after a SKIP() in
 * its setup).
 */
int main(int argc, char **argv)
{
	struct diag_stats stats;
	int ret;

	mrpin_require_loaded(MRPIN_DEBUGFS "/leaks",
			     "no diagnostics in this mrpin");
	ret = diag_read_stats(&stats);
	if (ret)
		ksft_exit_fail_msg("%s/stats: %s\n", MRPIN_DEBUGFS,
				   strerror(-ret));
	mrpin_require_dev();
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		shared = NULL;
	/* Warnings before this program may have used up the log's budget. */
	if (events_exist())
		mrpin_note_logged(shared, MRPIN_LOG_BURST);
	return test_harness_run(argc, argv);
}
