// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl top [--delay SECONDS] [--iterations N]
 *
 * The processes by pinned bytes, refreshed every --delay seconds (2 by
 * default), like top(1); the peer memory (a GPU's) apart, when there is
 * some.  On a terminal: a full-screen view with ncurses (q quits, s
 * changes the sort); it works over ssh as any curses program does.  When
 * stdout is not a terminal (or with --json, or when the terminal is
 * unknown): the same, printed again at each refresh, JSON Lines with
 * --json.
 */
#include <curses.h>
#include <locale.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mrpinctl.h"

static const struct column top_fields[] = {
	{ .key = "time_ns", .title = "Time" },
	{ .key = "pinned_bytes", .title = "Pinned" },
	{ .key = "distinct_bytes", .title = "Distinct" },
	{ .key = "ram_percent", .title = "of RAM" },
	{ .key = "peer_bytes", .title = "Peer" },
	{ .key = "pins", .title = "Pins" },
	{ .key = "peak_pinned_bytes", .title = "Peak" },
	{ .key = "denials_total", .title = "Denials" },
	{ .key = "failures_total", .title = "Failures" },
	{ .key = "warnings_total", .title = "Warnings" },
};

struct top {
	enum proc_sort sort;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One refresh: the totals on one line, then the processes. */
static int top_print(struct top *tp)
{
	struct table procs = { 0 };
	struct stats s;
	int ret;

	ret = load_stats(&s);
	if (!ret)
		ret = load_procs(&procs);
	if (ret)
		goto out;
	procs_sort(&procs, tp->sort);
	out_obj_begin(NULL, top_fields, ARRAY_SIZE(top_fields));
	out_obj_inline();
	print_time_ns("time_ns", now_ns());
	print_bytes("pinned_bytes", s.pinned_bytes);
	if (s.distinct_known)
		print_bytes("distinct_bytes", s.distinct_bytes);
	print_percent("ram_percent", s.ram_bytes ? 100.0 *
		      (double)stats_ram_pinned(&s) / (double)s.ram_bytes : NAN);
	/* Peer memory (a GPU's): when there is some; in JSON, 0 too. */
	if (s.peer_bytes_known && (opts.json || s.peer_bytes))
		print_bytes("peer_bytes", s.peer_bytes);
	print_u64("pins", s.pins);
	print_bytes("peak_pinned_bytes", s.peak_pinned_bytes);
	print_u64("denials_total", s.denials_total);
	if (s.failures_known)
		print_u64("failures_total", s.failures_total);
	print_u64("warnings_total", s.warnings_total);
	print_procs("procs", &procs, 0);
	out_obj_end();
out:
	tbl_free(&procs);
	return ret;
}

static void pause_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };

	nanosleep(&ts, NULL);
}

/* Not a terminal: print a refresh, wait, again. */
static int top_plain(struct top *tp)
{
	unsigned long i;
	int ret = 0;

	for (i = 0; !ret && (!opts.iterations || i < opts.iterations); i++) {
		if (i) {
			pause_s(opts.delay);
			out_gap();
		}
		ret = top_print(tp);
		out_flush();
	}
	return ret;
}

static void curses_line(void *ctx, const char *s)
{
	int *row = ctx;

	if (*row < LINES)
		mvaddnstr(*row, 0, s, COLS);
	(*row)++;
}

/* q quits, s sorts by the next key; false to quit. */
static bool top_key(struct top *tp, int ch)
{
	if (ch == 'q' || ch == 'Q')
		return false;
	if (ch == 's')
		tp->sort = (enum proc_sort)((tp->sort + 1) % 3);
	return true;
}

static int top_screen(struct top *tp)
{
	unsigned long i;
	char help[96];
	int row, ch = ERR, ret = 0;

	timeout((int)(opts.delay * 1000));
	for (i = 0; !opts.iterations || i < opts.iterations; i++) {
		erase();
		row = 0;
		snprintf(help, sizeof(help),
			 "mrpinctl top: sorted by %s (s: sort, q: quit)",
			 proc_sort_names[tp->sort]);
		curses_line(&row, help);
		out_set_sink(curses_line, &row, (unsigned int)COLS,
			     LINES > 4 ? (unsigned int)LINES - 4 : 1);
		ret = top_print(tp);
		out_set_sink(NULL, NULL, 0, 0);
		if (ret)
			break;
		refresh();
		ch = getch();
		if (ch != ERR && !top_key(tp, ch))
			break;
	}
	return ret;
}

/* Messages while the screen is curses': kept, shown after endwin(). */
static FILE *stderr_hold(int *saved)
{
	FILE *f = tmpfile();

	fflush(stderr);
	*saved = f ? dup(STDERR_FILENO) : -1;
	if (*saved >= 0)
		dup2(fileno(f), STDERR_FILENO);
	return f;
}

static void stderr_release(FILE *f, int saved)
{
	char buf[4096];
	size_t n;

	if (saved < 0)
		return;
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

static int top_curses(struct top *tp)
{
	SCREEN *scr;
	FILE *held;
	int ret, saved;

	setlocale(LC_CTYPE, "");
	scr = newterm(NULL, stdout, stdin);
	if (!scr)
		return top_plain(tp);
	held = stderr_hold(&saved);
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	ret = top_screen(tp);
	endwin();
	delscreen(scr);
	stderr_release(held, saved);
	return ret;
}

static int top_run(int argc, char **argv)
{
	struct top tp = { SORT_PINNED };
	int ret;

	ret = options_only("top", OPT_DELAY | OPT_ITERATIONS);
	if (!ret)
		ret = kwargs_parse("top", NULL, 0, argc, argv);
	if (!ret)
		ret = debugfs_check();
	if (ret)
		return ret;
	if (!opts.json && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO))
		return top_curses(&tp);
	return top_plain(&tp);
}

static int top_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("Usage: mrpinctl top [--delay SECONDS] [--iterations N]\n"
	      "\n"
	      "The processes by pinned bytes, refreshed every SECONDS (default 2), until\n"
	      "q (or N refreshes).  s sorts by pinned bytes, pins or peak in turn.  Peer\n"
	      "memory (a GPU's, which pins no host page) is shown apart, Peer and PEER,\n"
	      "when there is some.  When stdout is not a terminal, or with --json (one\n"
	      "JSON object a line), the view is printed again at each refresh instead.\n",
	      stdout);
	return EXIT_OK;
}

int do_top(int argc, char **argv)
{
	static const struct cmd top_cmds[] = {
		{ .name = "show", .fn = top_run, .alias = true },
		{ .name = "help", .fn = top_help },
		{ .name = NULL },
	};

	if (opts.help)
		return top_help(0, NULL);
	return cmd_select(top_cmds, "top", argc, argv, top_run);
}
