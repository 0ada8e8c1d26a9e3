// SPDX-License-Identifier: GPL-2.0
/*
 * A small streaming JSON writer, in the manner of iproute2's and bpftool's
 * json_writer: values go out as they are printed, nothing is built in
 * memory, unsigned 64-bit numbers are exact.  Strings are UTF-8: a byte that
 * is not part of a valid UTF-8 sequence (a command name may hold any byte)
 * is written as \u00XX, so that the output is always valid JSON.
 *
 * Compact by default, one top-level value per line (so that a stream of
 * objects is JSON Lines); pretty (-p) indents by four spaces.
 *
 * Like bpftool's jsonw_end(), the writer refuses misuse rather than write
 * what is not JSON: a member of an object without a key, an element of an
 * array or a top-level value with one, a close that matches no open (or
 * an open of the other kind), nesting deeper than JW_MAX_DEPTH, or writing
 * before jw_init() are each a bug in the caller, and assert() says where.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "mrpinctl.h"

#define JW_MAX_DEPTH 32

/* Level 0 is the top; level i > 0, the object or array opened i-th. */
static struct {
	FILE *f;
	bool pretty;
	int depth;
	bool nonempty[JW_MAX_DEPTH];
	bool array[JW_MAX_DEPTH];
} jw;

void jw_init(FILE *f, bool pretty)
{
	assert(f);
	memset(&jw, 0, sizeof(jw));
	jw.f = f;
	jw.pretty = pretty;
}

int jw_depth(void)
{
	return jw.depth;
}

static void jw_newline(void)
{
	int i;

	fputc('\n', jw.f);
	for (i = 0; i < jw.depth; i++)
		fputs("    ", jw.f);
}

/* The length of the valid UTF-8 sequence at @s, or 0. */
size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;		/* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;		/* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;		/* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f;		/* above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

static void jw_string(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;

	fputc('"', jw.f);
	while (*s) {
		n = utf8_len(s);
		if (*s == '"' || *s == '\\') {
			fprintf(jw.f, "\\%c", *s);
		} else if (*s == '\n') {
			fputs("\\n", jw.f);
		} else if (*s == '\t') {
			fputs("\\t", jw.f);
		} else if (*s < 0x20 || *s == 0x7f || !n) {
			fprintf(jw.f, "\\u%04x", *s);
		} else {
			fwrite(s, 1, n, jw.f);
			s += n;
			continue;
		}
		s++;
	}
	fputc('"', jw.f);
}

/*
 * Before a value: the comma, the indentation and "key": as needed.  A key
 * is a must in an object, and wrong anywhere else.
 */
static void jw_member(const char *key)
{
	assert(jw.f);
	assert(jw.depth > 0 && !jw.array[jw.depth] ? key != NULL :
						      key == NULL);
	if (jw.depth > 0) {
		if (jw.nonempty[jw.depth])
			fputc(',', jw.f);
		jw.nonempty[jw.depth] = true;
		if (jw.pretty)
			jw_newline();
	}
	if (key) {
		jw_string(key);
		fputs(jw.pretty ? ": " : ":", jw.f);
	}
}

static void jw_open(const char *key, char c)
{
	assert(jw.depth + 1 < JW_MAX_DEPTH);
	jw_member(key);
	fputc(c, jw.f);
	jw.depth++;
	jw.nonempty[jw.depth] = false;
	jw.array[jw.depth] = c == '[';
}

static void jw_close(char c)
{
	bool nonempty = jw.nonempty[jw.depth];

	assert(jw.f);
	assert(jw.depth > 0);
	assert(jw.array[jw.depth] == (c == ']'));
	jw.depth--;
	if (jw.pretty && nonempty)
		jw_newline();
	fputc(c, jw.f);
	if (!jw.depth)
		fputc('\n', jw.f);
}

void jw_obj_open(const char *key)
{
	jw_open(key, '{');
}

void jw_obj_close(void)
{
	jw_close('}');
}

void jw_arr_open(const char *key)
{
	jw_open(key, '[');
}

void jw_arr_close(void)
{
	jw_close(']');
}

void jw_str(const char *key, const char *s)
{
	jw_member(key);
	jw_string(s);
}

void jw_u64(const char *key, uint64_t v)
{
	jw_member(key);
	fprintf(jw.f, "%llu", (unsigned long long)v);
}

/* A number with a fraction, to @digits significant digits. */
void jw_real(const char *key, double v, int digits)
{
	if (!isfinite(v)) {
		jw_null(key);
		return;
	}
	jw_member(key);
	fprintf(jw.f, "%.*g", digits, v);
}

void jw_double(const char *key, double v)
{
	jw_real(key, v, 6);
}

void jw_null(const char *key)
{
	jw_member(key);
	fputs("null", jw.f);
}

void jw_bool(const char *key, bool v)
{
	jw_member(key);
	fputs(v ? "true" : "false", jw.f);
}
