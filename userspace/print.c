// SPDX-License-Identifier: GPL-2.0
/*
 * Output: every field goes through one printer per field type
 * (print_bytes(), print_ms(), ...), which writes it as a JSON member with
 * -j, or as text: a "Title: value" line inside an object, a cell inside a
 * list.  So the text and the JSON of a command cannot drift apart: the
 * text is the columns of the JSON that the command's column table names.
 *
 * Text lists are kept until out_list_end() and then laid out in columns
 * that fit the terminal: columns marked COL_TRUNC* are cut first, then the
 * columns with the highest prio are left out.  Streamed lists (events
 * --follow) print each row at once with fixed widths; in JSON they are
 * JSON Lines, one object per line.
 *
 * Text never carries a control character or invalid UTF-8 from the kernel
 * to the terminal: such bytes are shown as \ooo, as the module escapes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mrpinctl.h"

#define MAX_LEVELS 8
#define COL_GAP 2
#define TRUNC_MIN 8
#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-$"

enum level_kind { LV_OBJ, LV_LIST, LV_ITEM };

struct level {
	enum level_kind kind;
	const struct column *cols;
	size_t ncols;
	bool inline_obj;	/* text: the fields on one line */
};

/* A text list being filled: nrows rows of ncols cells. */
struct text_list {
	const struct column *cols;
	size_t ncols;
	char **cells;
	size_t nrows;
	size_t cap;
	bool no_header;
	bool plain;
	bool stream;
};

static struct {
	bool json;
	void (*sink)(void *ctx, const char *s);
	void *ctx;
	unsigned int width;
	unsigned int max_rows;
	struct level stack[MAX_LEVELS];
	int depth;
	struct text_list list;
	char *inline_buf;	/* the line of an inline object */
} out;

static void stdout_sink(void *ctx, const char *s)
{
	(void)ctx;
	fputs(s, stdout);
	fputc('\n', stdout);
}

void out_init(bool json, bool pretty)
{
	memset(&out, 0, sizeof(out));
	out.json = json;
	out.sink = stdout_sink;
	out.width = term_width();
	if (json)
		jw_init(stdout, pretty);
}

/* Send text lines elsewhere (top's screen), @max_rows rows per list. */
void out_set_sink(void (*line)(void *ctx, const char *s), void *ctx,
		  unsigned int width, unsigned int max_rows)
{
	out.sink = line ? line : stdout_sink;
	out.ctx = ctx;
	out.width = width ? width : term_width();
	out.max_rows = max_rows;
}

void out_line(const char *s)
{
	out.sink(out.ctx, s);
}

void out_flush(void)
{
	fflush(stdout);
}

/* A blank line between the parts of a text screen; nothing in JSON. */
void out_gap(void)
{
	if (!out.json)
		out_line("");
}

/* A line of text that is no field (a comment, a caption); not in JSON. */
void out_caption(const char *s)
{
	if (!out.json)
		out_line(s);
}

static void push(enum level_kind kind, const struct column *cols, size_t n)
{
	if (out.depth < MAX_LEVELS)
		out.stack[out.depth] = (struct level){ kind, cols, n, false };
	out.depth++;
}

static void pop(void)
{
	if (out.depth > 0)
		out.depth--;
}

static struct level *top(void)
{
	if (!out.depth || out.depth > MAX_LEVELS)
		return NULL;
	return &out.stack[out.depth - 1];
}

/* --- display width and cutting, in UTF-8 characters --- */

static unsigned int text_width(const char *s)
{
	unsigned int w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* The bytes of the first @cols characters of @s. */
static size_t head_bytes(const char *s, unsigned int cols)
{
	size_t i = 0;

	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (!cols)
				break;
			cols--;
		}
	}
	return i;
}

/* @s cut to @w characters, marked with "...", into @buf. */
static const char *cut(const char *s, unsigned int w, bool keep_tail,
		       char *buf, size_t len)
{
	unsigned int sw = text_width(s);
	size_t n;

	if (sw <= w || w < 4)
		return s;
	if (keep_tail) {
		n = head_bytes(s, sw - (w - 3));
		snprintf(buf, len, "...%s", s + n);
	} else {
		n = head_bytes(s, w - 3);
		snprintf(buf, len, "%.*s...", (int)n, s);
	}
	return buf;
}

/* Control characters and invalid UTF-8 as \ooo, for the terminal. */
static char *sanitize(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	char *buf = xmalloc(strlen(str) * 4 + 1), *d = buf;
	size_t n;

	while (*s) {
		n = utf8_len(s);
		if (n == 1 && *s >= 0x20 && *s != 0x7f && *s != '\\') {
			*d++ = (char)*s++;
		} else if (n > 1 && !(s[0] == 0xc2 && s[1] < 0xa0)) {
			memcpy(d, s, n);
			d += n;
			s += n;
		} else {
			d += sprintf(d, "\\%03o", *s++);
		}
	}
	*d = '\0';
	return buf;
}

/* --- objects: "Title: value" lines --- */

static const struct column *find_col(const struct level *lv, const char *key,
				     size_t *idx)
{
	size_t i;

	for (i = 0; lv && i < lv->ncols; i++) {
		if (!strcmp(lv->cols[i].key, key)) {
			*idx = i;
			return &lv->cols[i];
		}
	}
	return NULL;
}

static unsigned int title_width(const struct level *lv)
{
	unsigned int w = 0, t;
	size_t i;

	for (i = 0; i < lv->ncols; i++) {
		t = text_width(lv->cols[i].title) + 1;
		if (t > w)
			w = t;
	}
	return w;
}

void out_obj_begin(const char *key, const struct column *fields, size_t n)
{
	if (out.json)
		jw_obj_open(key);
	push(LV_OBJ, fields, n);
}

/* Text: the fields of the current object on one line, not one a line. */
void out_obj_inline(void)
{
	struct level *lv = top();

	if (lv && lv->kind == LV_OBJ)
		lv->inline_obj = true;
}

static void inline_flush(void)
{
	if (out.inline_buf) {
		out_line(out.inline_buf);
		free(out.inline_buf);
		out.inline_buf = NULL;
	}
}

static void inline_add(const char *title, const char *text)
{
	size_t len = out.inline_buf ? strlen(out.inline_buf) : 0;

	out.inline_buf = xrealloc(out.inline_buf,
				  len + strlen(title) + strlen(text) + 8);
	sprintf(out.inline_buf + len, "%s%s: %s", len ? "  " : "", title,
		text);
}

void out_obj_end(void)
{
	inline_flush();
	pop();
	if (out.json)
		jw_obj_close();
}

/* --- lists --- */

static void list_reset(const struct column *cols, size_t n)
{
	out.list = (struct text_list){ .cols = cols, .ncols = n };
}

void out_list_begin(const char *key, const struct column *cols, size_t n)
{
	inline_flush();
	if (out.json)
		jw_arr_open(key);
	else
		list_reset(cols, n);
	push(LV_LIST, cols, n);
}

/* Text: no titles, and nothing for a missing cell (a config file). */
void out_list_plain(void)
{
	out.list.no_header = true;
	out.list.plain = true;
}

/* Append "cell" padded to @w (right-aligned unless COL_LEFT or last). */
static void put_cell(char **line, size_t *len, const char *cell,
		     const struct column *c, unsigned int w, bool first,
		     bool last)
{
	unsigned int pad = w - text_width(cell);
	size_t need = *len + strlen(cell) + w + COL_GAP + 1;
	char *p;

	*line = xrealloc(*line, need);
	p = *line + *len;
	if (!first)
		p += sprintf(p, "%*s", COL_GAP, "");
	if (c->flags & COL_LEFT)
		p += sprintf(p, "%s%*s", cell, last ? 0 : (int)pad, "");
	else
		p += sprintf(p, "%*s%s", (int)pad, "", cell);
	*len = (size_t)(p - *line);
}

/* One line of the list: the titles (@cells NULL) or a row. */
static void emit_row(const struct text_list *l, char **cells,
		     const unsigned int *w, const bool *show)
{
	char *line = xstrdup(""), buf[1024];
	const char *cell;
	size_t len = 0, i, last = 0;
	bool first = true;

	for (i = 0; i < l->ncols; i++)
		if (show[i])
			last = i;
	for (i = 0; i < l->ncols; i++) {
		if (!show[i])
			continue;
		cell = cells ? cells[i] : l->cols[i].title;
		if (!cell)
			cell = l->plain ? "" : "-";
		cell = cut(cell, w[i], l->cols[i].flags & COL_TRUNC_TAIL, buf,
			   sizeof(buf));
		put_cell(&line, &len, cell, &l->cols[i], w[i], first, i == last);
		first = false;
	}
	while (len && line[len - 1] == ' ')
		line[--len] = '\0';
	out_line(line);
	free(line);
}

static unsigned int line_width(const struct text_list *l, const unsigned int *w,
			       const bool *show)
{
	unsigned int total = 0, n = 0;
	size_t i;

	for (i = 0; i < l->ncols; i++) {
		if (show[i]) {
			total += w[i];
			n++;
		}
	}
	return total + (n ? (n - 1) * COL_GAP : 0);
}

/*
 * How narrow a cuttable column may get: first (@soft) its width hint, or
 * what it needs if less; then (hard) TRUNC_MIN.  Never below its title.
 */
static unsigned int min_width(const struct column *c, unsigned int natural,
			      bool soft)
{
	unsigned int t = text_width(c->title), m = TRUNC_MIN;

	if (soft && c->width > m)
		m = c->width;
	if (soft && natural < m)
		m = natural;
	return t > m ? t : m;
}

/* Cut the cuttable columns, widest first, until the line fits. */
static void fit_cut(const struct text_list *l, unsigned int *w,
		    const bool *show, const unsigned int *natural, bool soft)
{
	unsigned int total = line_width(l, w, show), best_room, room, m;
	size_t i, best = 0;

	while (total > out.width) {
		best_room = 0;
		for (i = 0; i < l->ncols; i++) {
			if (!show[i] ||
			    !(l->cols[i].flags & (COL_TRUNC | COL_TRUNC_TAIL)))
				continue;
			m = min_width(&l->cols[i], natural[i], soft);
			if (w[i] > m && w[i] - m > best_room) {
				best_room = w[i] - m;
				best = i;
			}
		}
		if (!best_room)
			return;
		room = total - out.width < best_room ? total - out.width :
						       best_room;
		w[best] -= room;
		total -= room;
	}
}

/* Leave out the columns of highest prio (the rightmost first) to fit. */
static void fit_drop(const struct text_list *l, const unsigned int *w,
		     bool *show)
{
	unsigned int total = line_width(l, w, show), prio;
	size_t i, drop = 0;

	while (total > out.width) {
		prio = 0;
		for (i = 0; i < l->ncols; i++) {
			if (show[i] && l->cols[i].prio &&
			    l->cols[i].prio >= prio) {
				prio = l->cols[i].prio;
				drop = i;
			}
		}
		if (!prio)
			return;
		show[drop] = false;
		total = line_width(l, w, show);
	}
}

/* Give the cut columns back what room is left. */
static void fit_grow(const struct text_list *l, unsigned int *w,
		     const bool *show, const unsigned int *natural)
{
	unsigned int total = line_width(l, w, show), grow;
	size_t i;

	for (i = 0; i < l->ncols && total < out.width; i++) {
		if (!show[i] || w[i] >= natural[i])
			continue;
		grow = natural[i] - w[i];
		if (grow > out.width - total)
			grow = out.width - total;
		w[i] += grow;
		total += grow;
	}
}

/*
 * Fit the line to the terminal: cut the cuttable columns to their width
 * hints, leave out optional columns, cut further, give back what is left.
 */
static void fit(const struct text_list *l, unsigned int *w, bool *show,
		const unsigned int *natural)
{
	fit_cut(l, w, show, natural, true);
	fit_drop(l, w, show);
	fit_cut(l, w, show, natural, false);
	fit_grow(l, w, show, natural);
}

static void list_render(struct text_list *l)
{
	unsigned int *w = calloc(l->ncols, sizeof(*w));
	unsigned int *natural = calloc(l->ncols, sizeof(*natural));
	bool *show = calloc(l->ncols, sizeof(*show));
	size_t i, r, rows = l->nrows;
	char *cell;

	if (!w || !natural || !show)
		goto out;
	for (i = 0; i < l->ncols; i++) {
		show[i] = true;
		w[i] = l->no_header ? 0 : text_width(l->cols[i].title);
		for (r = 0; r < l->nrows; r++) {
			cell = l->cells[r * l->ncols + i];
			if (cell && text_width(cell) > w[i])
				w[i] = text_width(cell);
		}
		natural[i] = w[i];
		/* Plain: a column empty in every row takes no room. */
		if (l->no_header && !w[i])
			show[i] = false;
	}
	fit(l, w, show, natural);
	if (!l->no_header)
		emit_row(l, NULL, w, show);
	if (out.max_rows && rows > out.max_rows)
		rows = out.max_rows;
	for (r = 0; r < rows; r++)
		emit_row(l, &l->cells[r * l->ncols], w, show);
out:
	free(w);
	free(natural);
	free(show);
}

static void list_free(struct text_list *l)
{
	size_t i;

	for (i = 0; i < l->nrows * l->ncols; i++)
		free(l->cells[i]);
	free(l->cells);
	l->cells = NULL;
	l->nrows = l->cap = 0;
}

void out_list_end(void)
{
	pop();
	if (out.json) {
		jw_arr_close();
		return;
	}
	list_render(&out.list);
	list_free(&out.list);
}

/* A list whose rows print as they come: fixed widths, JSON Lines. */
void out_stream_begin(const struct column *cols, size_t n)
{
	unsigned int w[64];
	bool show[64];
	size_t i;

	push(LV_LIST, cols, n);
	if (out.json)
		return;
	list_reset(cols, n < 64 ? n : 64);
	out.list.stream = true;
	for (i = 0; i < out.list.ncols; i++) {
		w[i] = cols[i].width > text_width(cols[i].title) ?
		       cols[i].width : text_width(cols[i].title);
		show[i] = true;
	}
	emit_row(&out.list, NULL, w, show);
}

void out_item_begin(void)
{
	struct text_list *l = &out.list;

	push(LV_ITEM, l->cols, l->ncols);
	if (out.json) {
		jw_obj_open(NULL);
		return;
	}
	if (l->nrows == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->cells = xrealloc(l->cells, l->cap * l->ncols * sizeof(char *));
	}
	memset(&l->cells[l->nrows * l->ncols], 0, l->ncols * sizeof(char *));
	l->nrows++;
}

static void stream_row(struct text_list *l)
{
	unsigned int w[64];
	bool show[64];
	size_t i;
	char *cell;

	for (i = 0; i < l->ncols; i++) {
		cell = l->cells[i];
		w[i] = l->cols[i].width > text_width(l->cols[i].title) ?
		       l->cols[i].width : text_width(l->cols[i].title);
		if (cell && text_width(cell) > w[i])
			w[i] = text_width(cell);
		show[i] = true;
	}
	emit_row(l, l->cells, w, show);
	list_free(l);
}

void out_item_end(void)
{
	pop();
	if (out.json) {
		jw_obj_close();
		if (out.list.stream || !jw_depth())
			out_flush();
		return;
	}
	if (out.list.stream) {
		stream_row(&out.list);
		out_flush();
	}
}

/* --- the printers --- */

/* Text: @text as a cell of the current row, or a line of the object. */
static void put_text(const char *key, const char *text)
{
	struct level *lv = top();
	const struct column *c;
	char *line;
	size_t i, len;
	unsigned int w;

	c = lv ? find_col(lv, key, &i) : NULL;
	if (!c)
		return;
	if (lv->kind == LV_ITEM) {
		char **cell = &out.list.cells[(out.list.nrows - 1) *
					      out.list.ncols + i];
		free(*cell);
		*cell = xstrdup(text);
		return;
	}
	if (lv->kind != LV_OBJ)
		return;
	if (lv->inline_obj) {
		inline_add(c->title, text);
		return;
	}
	w = title_width(lv);
	len = strlen(c->title) + strlen(text) + w + 4;
	line = xmalloc(len);
	snprintf(line, len, "%s:%*s %s", c->title,
		 (int)(w - text_width(c->title) - 1), "", text);
	out_line(line);
	free(line);
}

void print_str(const char *key, const char *s)
{
	char *clean;

	if (out.json) {
		jw_str(key, s);
		return;
	}
	clean = sanitize(s);
	put_text(key, clean);
	free(clean);
}

/* A number: exact in JSON, @text in text. */
static void put_num(const char *key, uint64_t v, const char *text)
{
	if (out.json)
		jw_u64(key, v);
	else
		put_text(key, text);
}

/* A number (null when unlimited) whose text form the caller gives. */
void print_num_text(const char *key, uint64_t v, const char *text)
{
	if (out.json && v == UNLIMITED)
		jw_null(key);
	else
		put_num(key, v, text);
}

/* A fact: true or false in JSON, yes or no in text. */
void print_bool(const char *key, bool v)
{
	if (out.json)
		jw_bool(key, v);
	else
		put_text(key, v ? "yes" : "no");
}

/* A number: exact in JSON, as @fmt (one of the fmt_*()) writes it in text. */
static void put_fmt(const char *key, uint64_t v,
		    const char *(*fmt)(char *buf, size_t len, uint64_t v))
{
	char buf[64];

	put_num(key, v, fmt(buf, sizeof(buf), v));
}

static const char *fmt_dec(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static const char *fmt_hex(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "0x%llx", (unsigned long long)v);
	return buf;
}

void print_u64(const char *key, uint64_t v)
{
	put_fmt(key, v, fmt_dec);
}

/* Bytes: exact in JSON, in KiB/MiB/GiB in text. */
void print_bytes(const char *key, uint64_t v)
{
	put_fmt(key, v, fmt_bytes);
}

/* An address: 0x... in text. */
void print_hex(const char *key, uint64_t v)
{
	put_fmt(key, v, fmt_hex);
}

/* A duration in milliseconds: 4m12s in text. */
void print_ms(const char *key, uint64_t ms)
{
	put_fmt(key, ms, fmt_ms);
}

/* CLOCK_REALTIME nanoseconds: local time in text. */
void print_time_ns(const char *key, uint64_t ns)
{
	put_fmt(key, ns, fmt_time_ns);
}

/* An errno: the number in JSON, its name (ENOMEM) in text. */
void print_errno(const char *key, uint64_t v)
{
	put_fmt(key, v, fmt_errno);
}

/* A limit as print() prints it; when unlimited, null in JSON. */
static void print_limit(const char *key, uint64_t v,
			void (*print)(const char *key, uint64_t v))
{
	if (v == UNLIMITED)
		print_num_text(key, v, "unlimited");
	else
		print(key, v);
}

void print_count_limit(const char *key, uint64_t v)
{
	print_limit(key, v, print_u64);
}

void print_bytes_limit(const char *key, uint64_t v)
{
	print_limit(key, v, print_bytes);
}

void print_percent(const char *key, double v)
{
	char buf[32];

	if (out.json) {
		jw_double(key, v);
		return;
	}
	if (isnan(v))
		snprintf(buf, sizeof(buf), "-");
	else if (v > 0 && v < 0.1)
		snprintf(buf, sizeof(buf), "<0.1%%");
	else
		snprintf(buf, sizeof(buf), "%.1f%%", v);
	put_text(key, buf);
}

/* A user: "uid" and @key (the name, or null) in JSON; the name in text. */
void print_user(const char *key, uint64_t uid)
{
	const char *name = uid < UINT32_MAX ? user_name((uint32_t)uid) : NULL;
	char buf[32];

	if (out.json) {
		jw_u64("uid", uid);
		if (name)
			jw_str(key, name);
		else
			jw_null(key);
		return;
	}
	if (name) {
		print_str(key, name);
		return;
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)uid);
	put_text(key, buf);
}

/*
 * A rule's scope: "uid alice" (the grammar) in text; in JSON "scope" and
 * "uid" and "user", or "cgroup".
 */
void print_rule_scope(const char *key, const struct rule *r)
{
	const char *name = r->scope == SC_UID ? user_name(r->uid) : NULL;
	uint32_t back;
	char buf[CGROUP_PATH_MAX * 4 + 16];

	if (out.json) {
		jw_str("scope", scope_names[r->scope]);
		if (r->scope == SC_UID)
			print_user("user", r->uid);
		else if (r->scope == SC_CGROUP)
			jw_str("cgroup", r->cgroup);
		return;
	}
	/* A name only when it is one word and leads back to the same uid. */
	if (name && strspn(name, NAME_CHARS) == strlen(name) &&
	    user_lookup(name, &back) && back == r->uid)
		snprintf(buf, sizeof(buf), "uid %s", name);
	else
		rule_scope(r, buf, sizeof(buf));
	put_text(key, buf);
}

/*
 * Key @k of a rule, when the rule has it: "max_pinned=50%" (the grammar)
 * in text; in JSON the number (bytes; null when unlimited) or the word, and
 * "max_pinned_percent" for N% of RAM (@ram; when it is unknown, only the
 * percentage).
 */
void print_rule_key(const struct rule *r, int k, uint64_t ram)
{
	const char *name = keys[k].name;
	char val[32], text[64];
	uint64_t max;

	if (!(r->set & (1U << k)))
		return;
	rule_value(r, k, val, sizeof(val));
	if (!out.json) {
		snprintf(text, sizeof(text), "%s=%s", name, val);
		put_text(name, text);
		return;
	}
	switch (keys[k].type) {
	case KT_BYTES_PCT:
		if (rule_max_pinned(r, ram, &max))
			print_num_text(name, max, val);
		print_count_limit("max_pinned_percent",
				  r->is_pct ? r->pct : UNLIMITED);
		break;
	case KT_WORD:
		jw_str(name, val);
		break;
	default:
		print_num_text(name, r->val[k], val);
	}
}

/* The keys of a rule this tool does not know: "key=value" as they are. */
void print_rule_extra(const char *key, const struct rule *r)
{
	char *copy, *tok, *pos, *eq;

	if (!out.json) {
		if (*r->extra)
			put_text(key, r->extra + 1);
		return;
	}
	pos = copy = xstrdup(r->extra);
	while ((tok = strsep(&pos, " "))) {
		eq = strchr(tok, '=');
		if (!eq)
			continue;
		*eq = '\0';
		jw_str(tok, eq + 1);
	}
	free(copy);
}
