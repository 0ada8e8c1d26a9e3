// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl events [--follow]
 *
 * The refusals and warnings, oldest first, from the module's `events`
 * stream.  Each open of it starts with a header line, then the events the
 * ring still holds; a read blocks when there is nothing new (O_NONBLOCK:
 * EAGAIN), like trace_pipe.  So without --follow the stream is read
 * non-blocking until EAGAIN; with --follow, poll() waits for more (a plain
 * file, as in tests, is polled every 250 ms).  "# lost N" tells that the
 * reader fell behind the ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mrpinctl.h"

#define F(name, t) { #name, t, offsetof(struct event, name), false }
static const struct tbl_field event_fields[] = {
	F(seq, TF_U64), F(time_ns, TF_U64), F(action, TF_STR), F(pid, TF_U64),
	F(comm, TF_STR), F(uid, TF_U64), F(scope, TF_STR), F(key, TF_STR),
	F(asked, TF_U64), F(usage, TF_U64), F(limit, TF_U64),
};
#undef F

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
};

/* An event's usage and limit are in its key's unit: pins or bytes. */
static void print_in_unit(const char *key, const struct event *e, uint64_t v)
{
	if (!strcmp(e->key, "max_pins") || !strcmp(e->key, "mr_table"))
		print_u64(key, v);
	else
		print_bytes(key, v);
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
	out_item_end();
}

/*
 * The reader of the stream: whole lines out of read() chunks.  Without
 * --follow, the events are kept (@keep) and printed once all are read
 * and parsed, so that a broken stream prints nothing but the problem.
 */
struct reader {
	int fd;
	struct tbl_header h;
	unsigned int lineno;
	bool keep;
	char *buf;
	size_t len;
	size_t size;
	struct event *events;	/* kept; lost: seq EVENT_LOST, asked N */
	size_t nevents;
};

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

static void reader_event(struct reader *r, const struct event *e)
{
	if (!r->keep) {
		if (e->seq == EVENT_LOST)
			print_lost(e->asked);
		else
			print_event(e);
		return;
	}
	r->events = xrealloc(r->events, (r->nevents + 1) * sizeof(*e));
	r->events[r->nevents++] = *e;
}

/* One line of the stream: the header first, then events. */
static int reader_line(struct reader *r, char *line)
{
	struct event e;

	memset(&e, 0, sizeof(e));
	if (++r->lineno == 1)
		return tbl_header_parse(&r->h, line, event_fields,
					ARRAY_SIZE(event_fields));
	if (!strncmp(line, "# lost ", 7) && parse_u64_all(line + 7, &e.asked)) {
		e.seq = EVENT_LOST;
		reader_event(r, &e);
		return 0;
	}
	if (line[0] == '#' || !line[strspn(line, " \t")])
		return 0;
	if (tbl_row_parse(&r->h, r->lineno, line, event_fields,
			  ARRAY_SIZE(event_fields), &e))
		return EXIT_FAIL;
	reader_event(r, &e);
	return 0;
}

/* Handle the whole lines; keep the rest (following). */
static int reader_lines(struct reader *r)
{
	char *start = r->buf, *nl;
	int ret = 0;

	while (!ret && (nl = memchr(start, '\n', r->len - (size_t)(start - r->buf)))) {
		*nl = '\0';
		ret = reader_line(r, start);
		start = nl + 1;
	}
	if (r->keep)
		return ret;
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

/* Read what there is (without --follow: until EAGAIN or the end). */
static int reader_run(struct reader *r, bool follow)
{
	ssize_t n;
	int ret = 0;

	while (!ret) {
		if (r->len + 4096 > r->size) {
			if (!r->keep && r->len >= 65536) {
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
			if (!r->keep)
				ret = reader_lines(r);
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno != EAGAIN) {
			pr_err("reading %s: %s", r->h.path, strerror(errno));
			ret = EXIT_FAIL;
		} else if (follow) {
			ret = reader_wait(r, n == 0);
		} else {
			break;
		}
	}
	if (!ret && r->keep && r->len && r->buf[r->len - 1] != '\n') {
		pr_err("%s: truncated (no newline at the end)", r->h.path);
		ret = EXIT_FAIL;
	}
	if (!ret && r->keep)
		ret = reader_lines(r);
	if (!ret && !r->lineno) {
		pr_err("%s: empty: expected a header line", r->h.path);
		ret = EXIT_FAIL;
	}
	return ret;
}

static int events_open(struct reader *r)
{
	char *path = debugfs_path("events");
	int err;

	r->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->fd >= 0) {
		r->h.path = path;
		return 0;
	}
	err = errno;
	if (!debugfs_check()) {
		if (err == EACCES || err == EPERM)
			pr_err("permission denied reading %s: run mrpinctl as root (e.g. with sudo)",
			       path);
		else
			pr_err("%s: %s", path, strerror(err));
	}
	free(path);
	return EXIT_FAIL;
}

static void print_kept(const struct reader *r)
{
	size_t i;

	out_list_begin(NULL, event_cols, ARRAY_SIZE(event_cols));
	for (i = 0; i < r->nevents; i++) {
		if (r->events[i].seq == EVENT_LOST)
			print_lost(r->events[i].asked);
		else
			print_event(&r->events[i]);
	}
	out_list_end();
}

static int events_show(int argc, char **argv)
{
	bool follow = opts.given & OPT_FOLLOW;
	struct reader r = { .fd = -1, .keep = !follow };
	int ret;

	ret = options_only("events", OPT_FOLLOW);
	if (!ret)
		ret = kwargs_parse("events", NULL, 0, argc, argv);
	if (!ret)
		ret = events_open(&r);
	if (ret)
		return ret;
	if (follow)
		out_stream_begin(event_cols, ARRAY_SIZE(event_cols));
	ret = reader_run(&r, follow);
	if (!ret && !follow)
		print_kept(&r);
	close(r.fd);
	free((char *)r.h.path);
	free(r.buf);
	free(r.events);
	return ret;
}

/*
 * The events the ring holds, oldest first, without waiting (for doctor):
 * *events point into *buf; the caller frees both.
 */
int events_load(struct event **events, size_t *n, char **buf)
{
	struct reader r = { .fd = -1, .keep = true };
	int ret;

	ret = events_open(&r);
	if (ret)
		return ret;
	ret = reader_run(&r, false);
	close(r.fd);
	free((char *)r.h.path);
	if (ret) {
		free(r.buf);
		free(r.events);
		return ret;
	}
	*events = r.events;
	*n = r.nevents;
	*buf = r.buf;
	return 0;
}

static int events_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl events [--follow]\n"
	      "\n"
	      "The pins mrpin refused (deny) or allowed over a limit in warn mode (warn),\n"
	      "oldest first; the module keeps the last 1024.  --follow waits for new ones.\n"
	      "SCOPE is the rule crossed (global, process, uid:N, cgroup:PATH), KEY its\n"
	      "limit, ASKED the bytes of the pin, USAGE and LIMIT in KEY's unit.\n",
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
