/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of mrpin's diagnostics share (mrpin_diag.c, what a pin
 * is: its columns, stack memory, page backing, align, oversized and the
 * MR table's mark; mrpin_leaks.c, how pins end: leaks, churn, lifetimes
 * and call sites): the headers and defaults the views must show, lookups
 * of one line of a table, and mrpin_mistakes children, which make the
 * mistakes on purpose, driven through their stdin and stdout.
 *
 * The fixture also restores the huge-page settings a test changed, and at
 * the end checks that no pin and no huge-page backed byte is left.
 */
#ifndef __MRPIN_DIAG_H
#define __MRPIN_DIAG_H

#include "mrpin_test.h"

#include <pthread.h>
#include <signal.h>

#define PINS_TAIL	" age_ms stack bytes_4k bytes_2m bytes_1g align oversized odp state peer"
#define PROCS_TAIL	" denials failures bytes_4k bytes_2m bytes_1g stack_pins cleanup_releases registrations reg_per_s life_hist distinct_bytes deregistrations peer_bytes"
#define LEAKS_HEADER	"# comm uid count bytes last_time_ns"
#define CALLSITES_HEADER "# pid comm pins bytes oldest_age_ms frames newest_age_ms"
#define GLOBAL_DEFAULTS	"stack=warn oversize=1G mr_table_warn=80% callsites=off log_failures=off"

#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define HUGEPAGES_2M	"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
#define HUGEPAGES_1G	"/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"

#define MISTAKES	"mrpin_mistakes"
#define USER_UID	1000
#define LIFE_BUCKETS	24
#define MAX_FRAMES	8

static inline uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The `global` line of `limits`, without the newline. */
static inline void __global_line(struct __test_metadata *_metadata, char *line,
				 size_t size)
{
	char *buf, *pos;

	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &buf));
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

/* The `pins` line of @pid for [@start, +@length) in *@row. */
static inline bool __pin_row(struct __test_metadata *_metadata, pid_t pid,
			     uintptr_t start, uint64_t length,
			     struct mrpin_pin_row *row)
{
	struct mrpin_pin_row *rows;
	bool found = false;
	int n, i;

	n = read_table("pins", mrpin_pin_cols, &rows);
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
static inline void __leak_row(struct __test_metadata *_metadata,
			      const char *comm, uint64_t uid,
			      struct mrpin_leak_row *row)
{
	struct mrpin_leak_row *rows;
	int n, i, found = 0;

	memset(row, 0, sizeof(*row));
	n = read_table("leaks", mrpin_leak_cols, &rows);
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
static inline int parse_hist(const char *s, uint64_t *hist)
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
static inline void __header_of(struct __test_metadata *_metadata,
			       const char *name, char *line, size_t size)
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

static inline bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

/* mrpin_mistakes children, driven through their stdin and stdout. */

struct mistakes {
	struct mrpin_child c;
	uintptr_t site[2];
};

#define mistakes_start(m, uid, ...)					\
	child_start(&m->c, uid,					\
		    (const char *[]){ MISTAKES, __VA_ARGS__, NULL })

/* Read what child @m says until the line @want; "site X ADDR" is kept. */
static inline void __mistakes_wait(struct __test_metadata *_metadata,
				   struct mistakes *m, const char *want)
{
	char line[128], which;
	unsigned long addr;

	for (;;) {
		ASSERT_NE(NULL, fgets(line, sizeof(line), m->c.out)) {
			TH_LOG(MISTAKES " %d ended before it said \"%s\"",
			       m->c.pid, want);
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

#define mistakes_exit_ok(m)						\
	do {								\
		int __status = child_finish(&(m)->c, 0);		\
									\
		ASSERT_TRUE(WIFEXITED(__status) && !WEXITSTATUS(__status)) { \
			TH_LOG(MISTAKES ": wait status %#x", __status);	\
		}							\
	} while (0)

/* What every fixture holds. */
#define MAX_CHILDREN	2

struct diag_test {
	struct mrpin_fixture f;
	struct mistakes kids[MAX_CHILDREN];
	char thp_saved[16];		/* THP "enabled" to restore */
	const char *huge_file;		/* nr_hugepages to restore */
	uint64_t huge_saved;
};

#define test_setup(t) fixture_setup(&(t)->f)

/*
 * Release what the test may have left, restore the policy and the
 * huge-page settings, and check that the totals are back where they were.
 * Only EXPECT_*() without handler blocks here (see mrpin_test.h).
 */
static inline void __test_teardown(struct __test_metadata *_metadata,
				   struct diag_test *t)
{
	char num[32];
	int i;

	for (i = 0; i < MAX_CHILDREN; i++)
		child_finish(&t->kids[i].c, SIGKILL);
	fixture_close(&t->f);
	if (t->thp_saved[0])
		EXPECT_EQ(0, mrpin_write_file(THP_ENABLED, t->thp_saved));
	if (t->huge_file) {
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)t->huge_saved);
		EXPECT_EQ(0, mrpin_write_file(t->huge_file, num));
	}
	check_no_trace(getpid());
	fixture_check(&t->f);
}
#define test_teardown(t) __test_teardown(_metadata, t)

#endif /* __MRPIN_DIAG_H */
