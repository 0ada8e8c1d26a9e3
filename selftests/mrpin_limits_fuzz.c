// SPDX-License-Identifier: GPL-2.0
/*
 * Malformed writes to /sys/kernel/security/mrpin/limits: every one fails with
 * EINVAL (the one errno the write documents for a refusal), leaves the
 * policy byte-for-byte as it was, read before and after each write (one
 * write is one transaction, even when its first lines are good), and the
 * kernel logs no warning.
 *
 *  - the corpus, mrpin_limits_bad.txt next to this program: several hundred
 *    hand-made cases, one per line;
 *  - lines over 256 bytes and writes over 64 KiB, made here;
 *  - over 10,000 generated writes, by generator:
 *	random_bytes	any bytes (NUL and high bytes too), any length;
 *	overlong	good rules and comments padded past 256 bytes, past a
 *			page, and whole writes past 64 KiB;
 *	overflow	numbers past U64_MAX, sizes that a K/M/G/T suffix
 *			would overflow, percentages and uids out of range;
 *	negative	negative numbers, sizes, percentages and uids;
 *	wrong_type	every scope x every key x every value of a type the
 *			key does not take (and the global rule's own keys on
 *			the other scopes), alone or next to a good key;
 *	bad_scope	scopes, uids and cgroup paths that are not one;
 *	transaction	good lines, then one bad line, maybe more good lines
 *			after it; and one rule more than the policy holds;
 *	mutated		good lines mutated byte by byte, with a bad one in;
 *    with an accepted write every 250 of them, so that the policy the
 *    refusals must keep changes.  $MRPIN_FUZZ_SEED sets the seed (printed),
 *    $MRPIN_FUZZ_SCALE (a percentage, default 100) the random generators'
 *    counts.
 *
 * Valid writes near the same bounds are accepted, so that the refusals are
 * the parser's.  Runs as root; the policy found is put back at the end.
 */
#include "mrpin_test.h"
#include "mrpin_limits_gen.h"


#define CORPUS		"mrpin_limits_bad.txt"
#define CORPUS_MIN	200
#define SHOW_MAX	20

/* The policy every case is tried against (see the corpus's header). */
static const char baseline[] =
	"reset\n"
	"global max_pinned=3G action=warn\n"
	"process max_pinned=1G max_pins=1000 max_pin_size=256M\n"
	"uid 1000 max_pinned=8G action=warn\n"
	"uid 2000 max_pins=5\n"
	"cgroup " FUZZ_CG " max_pinned=16G\n";

/* Count the new kernel log lines with @what; print those with a problem. */
static int kmsg_scan(int fd, const char *what, int *problems)
{
	static const char *const bad[] = {
		"WARNING:", "BUG:", "Oops", "general protection", "KASAN",
		"UBSAN", "refcount_t:", "corruption", "stack-protector",
		"soft lockup",
	};
	char *log, *line, *save;
	int hits = 0;
	size_t i;

	log = mrpin_kmsg_read(fd);
	if (!log) {
		(*problems)++;
		ksft_print_msg("kernel log: cannot read it\n");
		return 0;
	}
	for (line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (what && strstr(line, what))
			hits++;
		for (i = 0; i < MRPIN_ARRAY_SIZE(bad); i++) {
			if (!strstr(line, bad[i]))
				continue;
			(*problems)++;
			ksft_print_msg("kernel log: %s\n", line);
			break;
		}
	}
	free(log);
	return hits;
}

/* @buf as C would spell it, at most @max bytes of it, in @out. */
static void escape(const unsigned char *buf, size_t len, char *out,
		   size_t size, size_t max)
{
	size_t i, o = 0;

	for (i = 0; i < len && i < max && o + 8 < size; i++) {
		unsigned char c = buf[i];

		if (c == '\n')
			o += sprintf(out + o, "\\n");
		else if (c == '\\')
			o += sprintf(out + o, "\\\\");
		else if (c < 0x20 || c >= 0x7f)
			o += sprintf(out + o, "\\x%02x", c);
		else
			out[o++] = c;
	}
	if (i < len && o + 32 < size)
		o += sprintf(out + o, "...(%zu bytes)", len);
	out[o] = '\0';
}

/* Undo escape(): the corpus's \n \t \0 \\ \xHH.  Returns the length. */
static size_t unescape(const char *s, unsigned char *out)
{
	size_t o = 0;
	unsigned int v;

	while (*s) {
		if (*s != '\\' || !s[1]) {
			out[o++] = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case 'n':
			out[o++] = '\n';
			s++;
			break;
		case 't':
			out[o++] = '\t';
			s++;
			break;
		case '0':
			out[o++] = '\0';
			s++;
			break;
		case 'x':
			if (sscanf(s + 1, "%2x", &v) == 1 && s[1] && s[2]) {
				out[o++] = v;
				s += 3;
				break;
			}
			/* fall through */
		default:
			out[o++] = *s++;
		}
	}
	return o;
}

struct fuzz {
	int kmsg;
	int problems;
	bool cgroups;
	char *original;		/* the policy found, put back at the end */
	char *saved;		/* the policy every case must leave */
	size_t saved_len;
	int failures;		/* cases that did not fail as they must */
};

/*
 * Try one malformed write: true if the policy read just before it is the
 * expected one, the write failed with EINVAL, and the policy read just
 * after it is the same bytes.  Otherwise say how (the first SHOW_MAX
 * times), put the policy back, and count the failure.
 */
static bool try_bad(struct fuzz *f, const char *what, const void *buf,
		    size_t len)
{
	char shown[1024], *before = NULL, *now = NULL;
	bool same, was_same;
	int err, ret;

	ret = mrpin_read_file(MRPIN_LIMITS_FILE, &before);
	was_same = !ret && !strcmp(before, f->saved);
	err = mrpin_limits_write(buf, len);
	ret = mrpin_read_file(MRPIN_LIMITS_FILE, &now);
	same = !ret && before && !strcmp(now, before);
	if (err == EINVAL && same && was_same) {
		free(before);
		free(now);
		return true;
	}
	if (f->failures++ < SHOW_MAX) {
		escape(buf, len, shown, sizeof(shown), 300);
		ksft_print_msg("%s \"%s\": %s%s%s\n", what, shown,
			       err ? strerror(err) : "accepted",
			       same ? "" : ", and the policy changed",
			       was_same ? "" : " (it was not the expected one before)");
		if (!same && now)
			ksft_print_msg("policy now:\n%s", now);
		fflush(stdout);
	}
	free(before);
	free(now);
	if (!same || !was_same)
		mrpin_limits_write(f->saved, f->saved_len);
	return false;
}

FIXTURE(bad_input) {
	struct fuzz f;
};

FIXTURE_SETUP(bad_input)
{
	struct fuzz *f = &self->f;
	char *again;
	int err;

	f->kmsg = mrpin_kmsg_open();
	ASSERT_LE(0, f->kmsg);
	f->cgroups = mrpin_cgroup2_mounted();
	ASSERT_TRUE(f->cgroups) {
		TH_LOG("%s is not a cgroup2 mount", MRPIN_CG_MNT);
	}
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &f->original));
	ASSERT_EQ(0, mrpin_cg_mkdir(FUZZ_CG));
	ASSERT_EQ(0, mrpin_cg_mkdir(FUZZ_CG_NORULE));
	err = mrpin_limits_write(baseline, strlen(baseline));
	ASSERT_EQ(0, err) {
		TH_LOG("the baseline policy: %s", strerror(err));
	}
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &f->saved));
	f->saved_len = strlen(f->saved);
	/* What it reads is what it takes. */
	ASSERT_EQ(0, mrpin_limits_write(f->saved, f->saved_len));
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &again));
	ASSERT_STREQ(f->saved, again);
	free(again);
}

FIXTURE_TEARDOWN(bad_input)
{
	struct fuzz *f = &self->f;
	char *now = NULL;

	/* The policy found, back as it was. */
	if (f->original) {
		EXPECT_EQ(0, mrpin_limits_write(f->original,
						strlen(f->original)));
		EXPECT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &now));
		if (now)
			EXPECT_STREQ(f->original, now);
		free(now);
		free(f->original);
	}
	mrpin_cg_rmdir(FUZZ_CG_NORULE);
	mrpin_cg_rmdir(FUZZ_CG);
	free(f->saved);
	if (f->kmsg < 0)
		return;
	kmsg_scan(f->kmsg, NULL, &f->problems);
	EXPECT_EQ(0, f->problems);
	close(f->kmsg);
}

/* The corpus file, next to this program. */
static char *corpus_path(char *path, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	snprintf(path, size, "%s/" CORPUS, dirname(exe));
	return path;
}

TEST_F_TIMEOUT(bad_input, every_corpus_write_fails_with_EINVAL_and_changes_nothing, 300)
{
	struct fuzz *f = &self->f;
	char path[PATH_MAX + 32], *text, *line, *next, what[32];
	unsigned char *buf;
	int cases = 0, logged;
	size_t len;

	ASSERT_NE(NULL, corpus_path(path, sizeof(path)));
	ASSERT_EQ(0, mrpin_read_file(path, &text)) {
		TH_LOG("%s: cannot read it", path);
	}
	buf = malloc(strlen(text) + 1);
	ASSERT_NE(NULL, buf);
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!*line || !strncmp(line, ";;", 2))
			continue;
		len = unescape(line, buf);
		cases++;
		snprintf(what, sizeof(what), "corpus case %d", cases);
		try_bad(f, what, buf, len);
	}
	free(buf);
	free(text);
	logged = kmsg_scan(f->kmsg, "mrpin: limits: line ", &f->problems);
	TH_LOG("%d cases, %d failed as they must; %d log lines",
	       cases, cases - f->failures, logged);
	EXPECT_LE(CORPUS_MIN, cases);
	EXPECT_EQ(0, f->failures);
	/* Rate-limited, but at least the first ones are there. */
	EXPECT_LT(0, logged);
}

/* Append to a buffer of MAX_WRITE * 20 bytes. */
static size_t put(char *buf, size_t len, const char *s)
{
	size_t n = strlen(s);

	memcpy(buf + len, s, n);
	return len + n;
}

TEST_F(bad_input, lines_over_256_bytes_and_writes_over_64KiB_fail_with_EINVAL)
{
	struct fuzz *f = &self->f;
	size_t size = MAX_WRITE * 20, len, i;
	char *buf;

	buf = malloc(size);
	ASSERT_NE(NULL, buf);

	/* A rule of 300 bytes (its number padded with zeros). */
	len = put(buf, 0, "uid 1 max_pinned=");
	memset(buf + len, '0', 280);
	len += 280;
	len = put(buf, len, "1M\n");
	ASSERT_EQ(300UL, len);
	try_bad(f, "300-byte rule", buf, len);

	/* A comment line one byte over the longest. */
	len = put(buf, 0, "# ");
	memset(buf + len, 'y', MAX_LINE - 1);
	len += MAX_LINE - 1;
	len = put(buf, len, "\n");
	try_bad(f, "comment one byte too long", buf, len);

	/* A comment of 300 bytes. */
	len = put(buf, 0, "# ");
	memset(buf + len, 'x', 297);
	len += 297;
	len = put(buf, len, "\n");
	try_bad(f, "300-byte comment", buf, len);

	/* Good lines around a 1000-byte one. */
	len = put(buf, 0, "reset\nuid 1 max_pins=1\n");
	len = put(buf, len, "process max_pins=5");
	memset(buf + len, ' ', 1000);
	len += 1000;
	len = put(buf, len, "\nuid 2 max_pins=1\n");
	try_bad(f, "1000-byte line", buf, len);

	/* 64 KiB + 1 of good lines. */
	for (len = 0; len + 17 <= MAX_WRITE;)
		len = put(buf, len, "uid 7 max_pins=5\n");
	while (len <= MAX_WRITE)
		len = put(buf, len, "#\n");
	try_bad(f, "64 KiB + 1", buf, MAX_WRITE + 1);
	/* 1 MiB of them. */
	for (len = 0; len + 17 <= 16 * MAX_WRITE;)
		len = put(buf, len, "uid 7 max_pins=5\n");
	try_bad(f, "1 MiB", buf, len);

	/* A NUL deep in 40 KiB of good lines. */
	for (len = 0; len + 30 <= 40 * 1024;)
		len = put(buf, len, "process max_pinned=1G\n");
	for (i = 20000; buf[i] != '\n'; i++)
		;
	buf[i + 3] = '\0';
	try_bad(f, "NUL at 20 KiB", buf, len);
	free(buf);
	EXPECT_EQ(0, f->failures);
}

/* The writes above are refused for what they are: these are accepted. */
TEST_F(bad_input, valid_writes_near_those_bounds_are_accepted)
{
	struct fuzz *f = &self->f;
	char *buf, *now, last[64];
	size_t len;
	int i;

	buf = malloc(MAX_WRITE);
	ASSERT_NE(NULL, buf);

	/* A 200-byte comment, then a rule. */
	len = put(buf, 0, "# ");
	memset(buf + len, 'x', 197);
	len += 197;
	len = put(buf, len, "\nuid 1 max_pins=1\n");
	ASSERT_EQ(0, mrpin_limits_write(buf, len));
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &now));
	EXPECT_NE(NULL, strstr(now, "\nuid 1 max_pinned=unlimited max_pins=1 "));
	free(now);

	/* 60 KiB of comments and rules in one write. */
	len = 0;
	while (len + 40 < 60 * 1024) {
		len = put(buf, len, "# padding, padding, padding\n");
		len = put(buf, len, "uid 3 max_pins=3\n");
	}
	ASSERT_EQ(0, mrpin_limits_write(buf, len));
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &now));
	EXPECT_NE(NULL, strstr(now, "\nuid 3 max_pinned=unlimited max_pins=3 "));
	free(now);

	/* A line of the longest (a comment), and exactly 64 KiB. */
	len = put(buf, 0, "# ");
	memset(buf + len, 'y', MAX_LINE - 2);
	len += MAX_LINE - 2;
	len = put(buf, len, "\nuid 4 max_pins=4\n");
	ASSERT_EQ(0, mrpin_limits_write(buf, len)) {
		TH_LOG("a %d-byte line was refused", MAX_LINE);
	}
	len = put(buf, 0, "uid 5 max_pins=5\n");
	while (len + 2 <= MAX_WRITE)
		len = put(buf, len, "#\n");
	if (len < MAX_WRITE)
		len = put(buf, len, "\n");
	ASSERT_EQ((size_t)MAX_WRITE, len);
	ASSERT_EQ(0, mrpin_limits_write(buf, len)) {
		TH_LOG("a write of exactly 64 KiB was refused");
	}
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &now));
	EXPECT_NE(NULL, strstr(now, "\nuid 4 max_pinned=unlimited max_pins=4 "));
	EXPECT_NE(NULL, strstr(now, "\nuid 5 max_pinned=unlimited max_pins=5 "));
	free(now);

	/* As many rules as the policy holds, in one write. */
	len = put(buf, 0, "reset\n");
	for (i = 0; i < MRPIN_RULES_MAX; i++)
		len += sprintf(buf + len, "uid %u max_pins=1\n", 100000 + i);
	ASSERT_EQ(0, mrpin_limits_write(buf, len)) {
		TH_LOG("%d rules were refused", MRPIN_RULES_MAX);
	}
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &now));
	snprintf(last, sizeof(last), "\nuid %u max_pinned=unlimited max_pins=1 ",
		 100000 + MRPIN_RULES_MAX - 1);
	EXPECT_NE(NULL, strstr(now, last));
	free(now);

	ASSERT_EQ(0, mrpin_limits_write(f->saved, f->saved_len));
	free(buf);
}

/* --- the generated writes (mrpin_limits_gen.h) --- */

/*
 * An accepted write between the refused ones: reset and random good
 * lines.  Its policy is the one the next refusals must keep.  Returns 1 if
 * the policy changed, 0 if not, -1 if the write failed.
 */
static int accept_one(struct fuzz *f, char *buf)
{
	size_t len = good_lines(buf, sprintf(buf, "reset\n"), 1 + rnd_n(6));
	char shown[1024], *now;
	int err, changed;

	err = mrpin_limits_write(buf, len);
	if (err || mrpin_read_file(MRPIN_LIMITS_FILE, &now)) {
		escape((unsigned char *)buf, len, shown, sizeof(shown), 600);
		ksft_print_msg("good write \"%s\": %s\n", shown,
			       err ? strerror(err) : "policy unreadable");
		/* The assertion that follows ends the test without a flush. */
		fflush(stdout);
		return -1;
	}
	changed = strcmp(now, f->saved) != 0;
	free(f->saved);
	f->saved = now;
	f->saved_len = strlen(now);
	return changed;
}

struct generator {
	const char *name;
	size_t (*make)(char *buf, unsigned int i);
	unsigned int count;	/* at scale 100; 0: one of each case */
	unsigned int tried;
	unsigned int refused;
	double seconds;
};

#define ACCEPT_EVERY	250
#define GENERATED_MIN	10000U

TEST_F_TIMEOUT(bad_input, over_10000_generated_writes_fail_with_EINVAL_and_change_nothing, 500)
{
	struct generator gens[] = {
		{ .name = "random_bytes", .make = gen_random_bytes, .count = 1500 },
		{ .name = "overlong", .make = gen_overlong, .count = 600 },
		{ .name = "overflow", .make = gen_overflow, .count = 1500 },
		{ .name = "negative", .make = gen_negative, .count = 800 },
		{ .name = "wrong_type", .make = gen_wrong_type, .count = 0 },
		{ .name = "bad_scope", .make = gen_bad_scope, .count = 0 },
		{ .name = "transaction", .make = gen_transaction, .count = 2000 },
		{ .name = "mutated", .make = gen_mutated, .count = 1000 },
	};
	struct fuzz *f = &self->f;
	unsigned int scale = 100, total = 0, accepted = 0, changed = 0;
	unsigned int i, n;
	struct generator *g;
	const char *env;
	char *buf, what[64];
	uint64_t seed;
	int ret;

	if (mrpin_debug_kernel()) {
		scale = 5;
		TH_LOG("short loops (the debug kernel): a twentieth of the generated writes");
	} else if (mrpin_short_loops()) {
		scale = 20;
		TH_LOG("short loops (%s): a fifth of the generated writes",
		       mrpin_short_loops_why());
	}
	env = getenv("MRPIN_FUZZ_SCALE");
	if (env && *env)
		scale = strtoul(env, NULL, 0);
	env = getenv("MRPIN_FUZZ_SEED");
	seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	rnd_state = seed ?: 1;
	find_combos();
	TH_LOG("seed %llu (MRPIN_FUZZ_SEED), scale %u%% (MRPIN_FUZZ_SCALE)",
	       (unsigned long long)seed, scale);

	buf = malloc(20 * MAX_WRITE);
	ASSERT_NE(NULL, buf);
	for (g = gens; g < gens + MRPIN_ARRAY_SIZE(gens); g++) {
		if (g->make == gen_wrong_type)
			n = nr_combos;
		else if (g->make == gen_bad_scope)
			n = 3 * MRPIN_ARRAY_SIZE(bad_scopes);
		else
			n = (unsigned long)g->count * scale / 100;
		g->seconds = mrpin_now_s();
		for (i = 0; i < n && f->failures <= 100; i++) {
			snprintf(what, sizeof(what), "%s %u", g->name, i);
			g->tried++;
			g->refused += try_bad(f, what, buf, g->make(buf, i));
			if (++total % ACCEPT_EVERY)
				continue;
			ret = accept_one(f, buf);
			ASSERT_LE(0, ret);
			accepted++;
			changed += ret;
		}
		g->seconds = mrpin_now_s() - g->seconds;
	}
	free(buf);
	for (g = gens; g < gens + MRPIN_ARRAY_SIZE(gens); g++)
		ksft_print_msg("%-12s %5u writes, %5u refused with EINVAL, the policy unchanged (%.1f s)\n",
			       g->name, g->tried, g->refused, g->seconds);
	ksft_print_msg("%u generated writes; between them %u accepted, %u changing the policy\n",
		       total, accepted, changed);
	fflush(stdout);
	EXPECT_EQ(0, f->failures) {
		TH_LOG("%d of %u generated writes did not fail as they must (seed %llu)",
		       f->failures, total, (unsigned long long)seed);
	}
	if (scale >= 100)
		EXPECT_LE(GENERATED_MIN, total);
	/* The refusals kept policies that good lines would have changed. */
	EXPECT_LT(accepted / 2, changed);
}

int main(int argc, char **argv)
{
	mrpin_require_loaded(MRPIN_LIMITS_FILE, "no policy in this mrpin");
	return test_harness_run(argc, argv);
}
