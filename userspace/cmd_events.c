// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl events [--follow]
 *
 * The refusals, warnings and failures, oldest first, from the module's
 * `events` stream.  Each open of it starts with a header line, then the
 * events the ring still holds; a read blocks when there is nothing new
 * (O_NONBLOCK: EAGAIN), like trace_pipe.  So without --follow the stream is
 * read non-blocking until EAGAIN (load_events()); with --follow, poll()
 * waits for more (a plain file, as in tests, is polled every 250 ms).
 * "# lost N" tells that the reader fell behind the ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mrpinctl.h"

static const struct column event_cols[] = {
	{ .key = "seq", .title = "SEQ", .prio = 4, .width = 3 },
	{ .key = "time_ns", .title = "TIME", .flags = COL_LEFT, .width = 15 },
	{ .key = "action", .title = "ACTION", .flags = COL_LEFT, .width = 6 },
	{ .key = "pid", .title = "PID", .width = 7 },
	{ .key = "comm", .title = "COMM", .flags = COL_LEFT | COL_TRUNC, .width = 15 },
	{ .key = "user", .title = "USER", .flags = COL_LEFT | COL_TRUNC, .prio = 3, .width = 8 },
	{ .key = "scope", .title = "SCOPE", .flags = COL_LEFT | COL_TRUNC_TAIL, .width = 12 },
	{ .key = "key", .title = "KEY", .flags = COL_LEFT, .width = 12 },
	{ .key = "asked", .title = "ASKED", .prio = 1, .width = 9 },
	{ .key = "usage", .title = "USAGE", .prio = 2, .width = 9 },
	{ .key = "limit", .title = "LIMIT", .width = 9 },
	{ .key = "errno", .title = "ERRNO", .flags = COL_LEFT, .prio = 5, .width = 6 },
};

/*
 * An event's usage and limit are in its key's unit: pins or bytes (a
 * failure's are VmPin and RLIMIT_MEMLOCK, which may be unlimited; but a
 * registration the device refused has the device's live pins and max_mr);
 * a key this tool does not know has plain numbers.
 */
static void print_in_unit(const char *key, const struct event *e, uint64_t v)
{
	if (event_in_bytes(e))
		print_bytes_limit(key, v);
	else
		print_count_limit(key, v);
}

static void print_event(const struct event *e)
{
	out_item_begin();
	print_u64("seq", e->seq);
	print_time_ns("time_ns", e->time_ns);
	print_str("action", e->action);
	print_u64("pid", e->pid);
	print_str("comm", e->comm);
	print_user("user", e->uid);
	print_str("scope", e->scope);
	print_str("key", e->key);
	print_bytes("asked", e->asked);
	print_in_unit("usage", e, e->usage);
	print_in_unit("limit", e, e->limit);
	if (e->errnum != ERRNO_UNKNOWN)
		print_errno("errno", e->errnum);
	out_item_end();
}

/* "# lost N": in text on stderr, as it happens; in JSON, an item. */
static void print_lost(uint64_t n)
{
	if (!opts.json) {
		pr_err("%llu events were lost: the module keeps the last 1024",
		       (unsigned long long)n);
		return;
	}
	out_item_begin();
	print_u64("lost", n);
	out_item_end();
}

static void print_any(const struct event *e)
{
	if (e->seq == EVENT_LOST)
		print_lost(e->asked);
	else
		print_event(e);
}

/* What the ring holds now, once all of it is read and parsed. */
static int events_list(void)
{
	struct table t;
	size_t i;
	int ret;

	ret = load_events(&t);
	if (!ret) {
		out_list_begin(NULL, event_cols, ARRAY_SIZE(event_cols));
		for (i = 0; i < t.nrows; i++)
			print_any(TBL_ROW(&t, struct event, i));
		out_list_end();
	}
	tbl_free(&t);
	return ret;
}

/* --follow: whole lines out of read() chunks, each printed as it comes. */
struct reader {
	int fd;
	struct tbl_header h;
	unsigned int lineno;
	char *buf;
	size_t len;
	size_t size;
};

/* Print the whole lines; keep the rest. */
static int reader_lines(struct reader *r)
{
	char *start = r->buf, *nl;
	struct event e;
	bool got;
	int ret = 0;

	while (!ret && (nl = memchr(start, '\n', r->len - (size_t)(start - r->buf)))) {
		*nl = '\0';
		ret = event_line(&r->h, ++r->lineno, start, &e, &got);
		if (!ret && got)
			print_any(&e);
		start = nl + 1;
	}
	r->len -= (size_t)(start - r->buf);
	memmove(r->buf, start, r->len);
	return ret;
}

/* Wait for more: poll() on the stream, a pause on a plain file. */
static int reader_wait(struct reader *r, bool eof)
{
	struct timespec pause = { 0, 250000000 };
	struct pollfd pfd = { r->fd, POLLIN, 0 };

	if (eof)
		return nanosleep(&pause, NULL) && errno != EINTR ? EXIT_FAIL : 0;
	if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
		pr_err("poll %s: %s", r->h.path, strerror(errno));
		return EXIT_FAIL;
	}
	return 0;
}

/* Read and print until an error (or a signal ends the process). */
static int reader_run(struct reader *r)
{
	ssize_t n;
	int ret = 0;

	while (!ret) {
		if (r->len + 4096 > r->size) {
			if (r->len >= 65536) {
				pr_err("%s:%u: line too long", r->h.path,
				       r->lineno + 1);
				return EXIT_FAIL;
			}
			r->size = r->size ? r->size * 2 : 16384;
			r->buf = xrealloc(r->buf, r->size + 1);
		}
		n = read(r->fd, r->buf + r->len, r->size - r->len);
		if (n > 0) {
			r->len += (size_t)n;
			ret = reader_lines(r);
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno != EAGAIN) {
			pr_err("reading %s: %s", r->h.path, strerror(errno));
			ret = EXIT_FAIL;
		} else {
			ret = reader_wait(r, n == 0);
		}
	}
	return ret;
}

static int events_follow(void)
{
	struct reader r = { .fd = -1 };
	char *path;
	int ret;

	r.fd = debugfs_open("events", O_NONBLOCK, &path);
	if (r.fd < 0)
		return EXIT_FAIL;
	r.h.path = path;
	out_stream_begin(event_cols, ARRAY_SIZE(event_cols));
	ret = reader_run(&r);
	close(r.fd);
	free(path);
	free(r.buf);
	return ret;
}

static int events_show(int argc, char **argv)
{
	int ret;

	ret = options_only("events", OPT_FOLLOW);
	if (!ret)
		ret = kwargs_parse("events", NULL, 0, argc, argv);
	if (ret)
		return ret;
	return opts.given & OPT_FOLLOW ? events_follow() : events_list();
}

static int events_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl events [--follow]\n"
	      "\n"
	      "The pins mrpin refused (deny) or allowed over a limit in warn mode (warn),\n"
	      "and those the kernel failed (fail), oldest first; the module keeps the\n"
	      "last 1024.  --follow waits for new ones.  SCOPE is the rule crossed\n"
	      "(global, process, uid:N, cgroup:PATH), KEY its limit, ASKED the bytes of\n"
	      "the pin, USAGE and LIMIT in KEY's unit.  For a failure, KEY is its cause\n"
	      "(memlock, unmapped, readonly, iomem, fault, invalid, nomem, other), USAGE\n"
	      "the process's VmPin and LIMIT its RLIMIT_MEMLOCK; or, for a registration\n"
	      "the device's driver refused (SCOPE device:NAME, KEY device), USAGE the\n"
	      "device's live pins and LIMIT its max_mr.  ERRNO is the kernel's error (a\n"
	      "refusal's is ENOMEM).\n",
	      stdout);
	return EXIT_OK;
}

int do_events(int argc, char **argv)
{
	static const struct cmd events_cmds[] = {
		{ .name = "show", .fn = events_show, .alias = true },
		{ .name = "help", .fn = events_help },
		{ .name = NULL },
	};

	if (opts.help)
		return events_help(0, NULL);
	return cmd_select(events_cmds, "events", argc, argv, events_show);
}
