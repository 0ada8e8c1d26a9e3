// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of mrpinctl's parsers and formatters, linked with its sources
 * (not with mrpinctl.c and the commands).  KTAP on stdout.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../mrpinctl.h"

struct options opts = { .debugfs = "/nonexistent" };

static int planned, run, failed;

#define CHECK(name, cond) check(name, (cond), __LINE__)

static void check(const char *name, bool ok, int line)
{
	run++;
	if (!ok)
		failed++;
	printf("%sok %d %s%s\n", ok ? "" : "not ", run, name,
	       ok ? "" : " # failed at line");
	if (!ok)
		printf("# unit.c:%d\n", line);
}

static bool str_is(const char *got, const char *want)
{
	if (!strcmp(got, want))
		return true;
	printf("# got '%s', want '%s'\n", got, want);
	return false;
}

static void test_fmt_bytes(void)
{
	static const struct { uint64_t v; const char *s; } t[] = {
		{ 0, "0 B" }, { 1023, "1023 B" }, { 1024, "1.0 KiB" },
		{ 1536, "1.5 KiB" }, { 12288, "12.0 KiB" },
		{ 1048575, "1.0 MiB" }, { 104857600, "100 MiB" },
		{ 34359738368ULL, "32.0 GiB" }, { UINT64_MAX, "16.0 EiB" },
	};
	char buf[32];
	size_t i;
	bool ok = true;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		ok &= str_is(fmt_bytes(buf, sizeof(buf), t[i].v), t[i].s);
	CHECK("fmt_bytes_binary_units", ok);
}

static void test_fmt_ms(void)
{
	static const struct { uint64_t v; const char *s; } t[] = {
		{ 0, "0ms" }, { 999, "999ms" }, { 1000, "1.0s" },
		{ 59999, "59.9s" }, { 60000, "1m00s" }, { 3599999, "59m59s" },
		{ 3600000, "1h00m" }, { 86400000, "1d00h" },
		{ 90061000, "1d01h" },
	};
	char buf[32];
	size_t i;
	bool ok = true;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		ok &= str_is(fmt_ms(buf, sizeof(buf), t[i].v), t[i].s);
	CHECK("fmt_ms_durations", ok);
}

static void test_fmt_errno(void)
{
	static const struct { uint64_t v; const char *s; } t[] = {
		{ 0, "-" }, { 1, "EPERM" }, { 12, "ENOMEM" }, { 14, "EFAULT" },
		{ 22, "EINVAL" }, { 75, "EOVERFLOW" }, { 4095, "errno 4095" },
		{ UINT64_MAX, "errno 18446744073709551615" },
	};
	char buf[32];
	size_t i;
	bool ok = true;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		ok &= str_is(fmt_errno(buf, sizeof(buf), t[i].v), t[i].s);
	CHECK("fmt_errno_names", ok);
}

static void test_parse_args(void)
{
	uint64_t v = 0;
	bool ok = true;

	ok &= !parse_size_arg("4096", &v) && v == 4096;
	ok &= !parse_size_arg("64K", &v) && v == 65536;
	ok &= !parse_size_arg("1.5M", &v) && v == 1572864;
	ok &= !parse_size_arg("2GiB", &v) && v == 2ULL << 30;
	ok &= !parse_size_arg("1t", &v) && v == 1ULL << 40;
	ok &= parse_size_arg("", &v) && parse_size_arg("K", &v) &&
	      parse_size_arg("1Q", &v) && parse_size_arg("-1", &v) &&
	      parse_size_arg("1e30", &v) && parse_size_arg("99999E", &v);
	CHECK("parse_size_arg", ok);
	ok = !parse_duration_arg("500ms", &v) && v == 500;
	ok &= !parse_duration_arg("30", &v) && v == 30000;
	ok &= !parse_duration_arg("5m", &v) && v == 300000;
	ok &= !parse_duration_arg("1d", &v) && v == 86400000;
	ok &= parse_duration_arg("5x", &v) && parse_duration_arg("", &v) &&
	      parse_duration_arg("99999999999999999999s", &v) &&
	      parse_duration_arg("9999999999999999d", &v);
	CHECK("parse_duration_arg", ok);
	ok = !parse_pid_arg("1", &v) && parse_pid_arg("0", &v) &&
	     parse_pid_arg("2147483648", &v) && parse_pid_arg("1x", &v);
	CHECK("parse_pid_arg", ok);
}

static void test_unescape(void)
{
	char a[] = "pin\\040ner", b[] = "a\\134b\\011c", c[] = "bad\\9\\04",
	     d[] = "nul\\000x", e[] = "end\\";
	char w[] = "  one\ttwo   three ", *words[4];
	bool ok;

	unescape(a);
	unescape(b);
	unescape(c);
	unescape(d);
	unescape(e);
	ok = str_is(a, "pin ner") && str_is(b, "a\\b\tc") &&
	     str_is(c, "bad\\9\\04") && str_is(d, "nul\\000x") &&
	     str_is(e, "end\\");
	CHECK("unescape_mountinfo_octal", ok);
	ok = split_words(w, words, 4) == 3 && str_is(words[0], "one") &&
	     str_is(words[2], "three");
	CHECK("split_words", ok);
}

/* A cgroup path written as the module writes it, and read back. */
static void test_escape_path(void)
{
	const char *path = "/a b\t\033]0;x\a#\\\177\xc3\xa9\xc2\x9b/z";
	char buf[256], back[256];
	bool ok;

	escape_path(path, buf, sizeof(buf));
	snprintf(back, sizeof(back), "%s", buf);
	unescape(back);
	ok = str_is(buf, "/a\\040b\\011\\033]0;x\\007\\043\\134\\177\\303\\251\\302\\233/z") &&
	     str_is(back, path);
	CHECK("escape_path_leaves_only_printable_ascii", ok);
}

static char *json_of(void (*fn)(void), bool pretty)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	jw_init(f, pretty);
	fn();
	fclose(f);
	return buf;
}

static void json_strings(void)
{
	jw_obj_open(NULL);
	jw_str("q", "a\"b\\c");
	jw_str("ctl", "\n\t\x01\x7f");
	jw_str("utf8", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	jw_str("bad", "\xff\xc3(\xed\xa0\x80\xc0\xaf");
	jw_u64("max", UINT64_MAX);
	jw_null("none");
	jw_bool("yes", true);
	jw_bool("no", false);
	jw_arr_open("empty");
	jw_arr_close();
	jw_obj_close();
}

static void test_json(void)
{
	char *s = json_of(json_strings, false);

	CHECK("json_escapes_and_keeps_utf8",
	      str_is(s, "{\"q\":\"a\\\"b\\\\c\",\"ctl\":\"\\n\\t\\u0001\\u007f\","
			"\"utf8\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
			"\"bad\":\"\\u00ff\\u00c3(\\u00ed\\u00a0\\u0080\\u00c0\\u00af\","
			"\"max\":18446744073709551615,\"none\":null,"
			"\"yes\":true,\"no\":false,\"empty\":[]}\n"));
	free(s);
	s = json_of(json_strings, true);
	CHECK("json_pretty_indents_by_four",
	      !strncmp(s, "{\n    \"q\": ", 11) && strstr(s, "\"empty\": []\n}\n"));
	free(s);
}

/* Nested as deep as the writer goes: 31 arrays, the innermost with 1. */
static void json_deepest(void)
{
	int i;

	for (i = 0; i < 31; i++)
		jw_arr_open(NULL);
	jw_u64(NULL, 1);
	for (i = 0; i < 31; i++)
		jw_arr_close();
}

/* An object in an array in an object, then a second top-level value. */
static void json_nested(void)
{
	jw_obj_open(NULL);
	jw_arr_open("a");
	jw_obj_open(NULL);
	jw_u64("n", 1);
	jw_obj_close();
	jw_str(NULL, "s");
	jw_arr_close();
	jw_obj_close();
	jw_u64(NULL, 2);
}

static void test_json_nesting(void)
{
	char want[128] = "", *s;
	int i;

	s = json_of(json_nested, false);
	CHECK("json_nested_values_and_top_level_lines",
	      str_is(s, "{\"a\":[{\"n\":1},\"s\"]}\n2"));
	free(s);
	for (i = 0; i < 31; i++)
		strcat(want, "[");
	strcat(want, "1");
	for (i = 0; i < 31; i++)
		strcat(want, "]");
	strcat(want, "\n");
	s = json_of(json_deepest, false);
	CHECK("json_nests_31_deep", str_is(s, want));
	free(s);
}

/* The misuses the writer must refuse, each in a child of its own. */
static void misuse_close_unopened(void)
{
	jw_obj_close();
}

static void misuse_close_other_kind(void)
{
	jw_obj_open(NULL);
	jw_arr_close();
}

static void misuse_value_without_key(void)
{
	jw_obj_open(NULL);
	jw_u64(NULL, 1);
}

static void misuse_open_without_key(void)
{
	jw_obj_open(NULL);
	jw_arr_open(NULL);
}

static void misuse_key_in_array(void)
{
	jw_arr_open(NULL);
	jw_str("k", "v");
}

static void misuse_key_at_top(void)
{
	jw_null("k");
}

static void misuse_too_deep(void)
{
	int i;

	for (i = 0; i < 32; i++)
		jw_arr_open(NULL);
}

/*
 * Run @fn in a child, its stderr on /dev/null, the writer on a memory
 * stream; true when the child was killed by SIGABRT, as assert() does.
 */
static bool aborts(void (*fn)(void))
{
	char *buf = NULL;
	size_t len = 0;
	int status, fd;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return false;
	if (!pid) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, STDERR_FILENO);
		jw_init(open_memstream(&buf, &len), false);
		fn();
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
		return true;
	printf("# the child %s %d\n",
	       WIFSIGNALED(status) ? "was killed by signal" : "exited with",
	       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return false;
}

static void test_json_misuse(void)
{
	CHECK("json_refuses_a_close_without_an_open",
	      aborts(misuse_close_unopened));
	CHECK("json_refuses_a_close_of_the_other_kind",
	      aborts(misuse_close_other_kind));
	CHECK("json_refuses_an_object_member_without_a_key",
	      aborts(misuse_value_without_key) &&
	      aborts(misuse_open_without_key));
	CHECK("json_refuses_a_key_in_an_array_or_at_the_top",
	      aborts(misuse_key_in_array) &&
	      aborts(misuse_key_at_top));
	CHECK("json_refuses_nesting_past_its_depth",
	      aborts(misuse_too_deep));
}

/* Parse a line of the grammar; its normalised form, or the error. */
static const char *grammar(const char *line, char *out, size_t len)
{
	char copy[512], *toks[64];
	struct cfg_err e;
	struct rule r;
	int n;

	snprintf(copy, sizeof(copy), "%s", line);
	n = split_words(copy, toks, 64);
	if (rule_parse(toks, n, &r, &e))
		snprintf(out, len, "error %d:%zu: %s", e.tok, e.off, e.msg);
	else
		rule_format(&r, out, len);
	return out;
}

static void test_grammar(void)
{
	static const struct { const char *in, *out; } t[] = {
		{ "reset", "reset" },
		{ "global max_pinned=50%", "global max_pinned=50%" },
		{ "global action=warn max_pinned=8g", "global max_pinned=8G action=warn" },
		{ "process max_pinned=1048576 max_pin_size=1536K",
		  "process max_pinned=1M max_pin_size=1536K" },
		{ "uid 0 max_pins=unlimited", "uid 0 max_pins=unlimited" },
		{ "uid root max_pins=10", "uid 0 max_pins=10" },
		{ "uid 7 delete", "uid 7 delete" },
		{ "cgroup /a\\040b//c/ max_pinned=0", "cgroup /a\\040b/c max_pinned=0" },
		{ "cgroup /x\\043y delete", "cgroup /x\\043y delete" },
		{ "global max_pinned=0%", "global max_pinned=0%" },
		{ "process max_pinned=16777215T", "process max_pinned=16777215T" },
		{ "process max_pinned=16777216T", "error 1:11: bad value '16777216T' for max_pinned: number too large" },
		{ "global max_pinned=101%", "error 1:11: bad value '101%' for max_pinned: percentage above 100" },
		{ "global max_pins=1K", "error 1:9: bad value '1K' for max_pins: expected a number of pins or unlimited" },
		{ "global max_pin_size=5%", "error 1:13: bad value '5%' for max_pin_size: expected bytes with an optional K, M, G or T suffix, or unlimited" },
		{ "global action=deny", "error 1:7: bad value 'deny' for action: expected enforce or warn" },
		{ "global log_failures=on callsites=off", "global callsites=off log_failures=on" },
		{ "global log_failures=1", "error 1:13: bad value '1' for log_failures: expected on or off" },
		{ "uid 1 log_failures=on", "error 2:0: 'log_failures' is a key of the global rule only" },
		{ "global count=distinct action=warn", "global action=warn count=distinct" },
		{ "process count=registered max_pinned=4G", "process max_pinned=4G count=registered" },
		{ "global stack=deny count=registered", "global count=registered stack=deny" },
		{ "process count=union", "error 1:6: bad value 'union' for count: expected registered or distinct" },
		{ "uid 1 count=distinct", "error 2:0: 'count' is a key of the global and process rules only" },
		{ "cgroup / max_pins=1 count=registered", "error 3:0: 'count' is a key of the global and process rules only" },
		{ "process frob=1", "error 1:0: unknown key 'frob': expected max_pinned, max_pins, max_pin_size or action (process also: count)" },
		{ "global max_pinned=1 max_pinned=2", "error 2:0: 'max_pinned' given twice" },
		{ "global", "error 1:0: expected KEY=VALUE after 'global'" },
		{ "uid 1", "error 2:0: expected KEY=VALUE or delete after '1'" },
		{ "uid 4294967295 max_pins=1", "error 1:0: uid 4294967295 out of range" },
		{ "uid 1 delete now", "error 3:0: 'delete' takes no argument" },
		{ "process delete", "error 1:0: the global and process rules cannot be deleted (set them, or use reset)" },
		{ "reset now", "error 1:0: 'reset' takes no argument" },
		{ "cgroup a max_pins=1", "error 1:0: expected a cgroup path starting with '/', found 'a'" },
		{ "cgroup /a\\9 max_pins=1", "error 1:2: bad escape in the cgroup path: expected \\ooo (octal, as in /proc/self/mountinfo)" },
		{ "cgroup /a/../b max_pins=1", "error 1:0: '.' and '..' are not allowed in a cgroup path" },
		{ "cgroup /a\\000 max_pins=1", "error 1:2: bad escape in the cgroup path: expected \\ooo (octal, as in /proc/self/mountinfo)" },
		{ "uid 1 =5", "error 2:0: unknown key '': expected max_pinned, max_pins, max_pin_size or action" },
		{ "global max_pinned=", "error 1:11: bad value '' for max_pinned: expected bytes with an optional K, M, G or T suffix, N% of RAM, or unlimited" },
		{ "frob", "error 0:0: unknown scope 'frob': expected global, process, uid, cgroup or reset" },
	};
	char out[512];
	size_t i;
	bool ok = true;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		ok &= str_is(grammar(t[i].in, out, sizeof(out)), t[i].out);
	CHECK("grammar_parses_and_normalises", ok);
}

static void test_long_path(void)
{
	char line[600] = "cgroup /", out[512];
	bool ok;

	memset(line + 8, 'a', 255);
	strcat(line, " max_pins=1");
	ok = !strncmp(grammar(line, out, sizeof(out)), "error 1:0: cgroup path longer than 255", 38);
	line[8 + 254] = ' ';
	ok &= !strncmp(grammar(line, out, sizeof(out)), "cgroup /aaa", 11);
	CHECK("cgroup_path_at_most_255_bytes", ok);
}

static void test_policy(void)
{
	char text[] = "# comment\nreset\nglobal max_pinned=50% action=enforce\n"
		      "uid 5 max_pins=3\ncgroup /b max_pinned=1M\n"
		      "cgroup /a max_pinned=2M\nuid 2 max_pins=1\nuid 5 action=warn\n";
	struct policy p;
	bool ok;

	policy_init(&p);
	ok = !policy_parse_text(&p, "test", text) && p.nrules == 4 &&
	     p.rules[0].uid == 2 && p.rules[1].uid == 5 && p.rules[1].val[K_ACTION] == 1 &&
	     p.rules[1].val[K_MAX_PINS] == 3 && !strcmp(p.rules[2].cgroup, "/a") &&
	     p.global.is_pct && p.global.pct == 50;
	CHECK("policy_applies_lines_in_order_and_sorts_rules", ok);
	policy_free(&p);
}

int main(void)
{
	planned = 21;
	/* A line at a time: a crash leaves the results before it. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	out_init(false, false);
	printf("TAP version 13\n1..%d\n", planned);
	test_fmt_bytes();
	test_fmt_ms();
	test_fmt_errno();
	test_parse_args();
	test_unescape();
	test_escape_path();
	test_json();
	test_json_nesting();
	test_json_misuse();
	test_grammar();
	test_long_path();
	test_policy();
	printf("# Totals: pass:%d fail:%d\n", run - failed, failed);
	return failed || run != planned;
}
