// SPDX-License-Identifier: GPL-2.0
/*
 * Malformed writes to /sys/kernel/debug/mrpin/limits: every one fails with
 * EINVAL, leaves the policy byte-for-byte as it was (one write is one
 * transaction, even when its first lines are good), and the kernel logs no
 * warning.
 *
 *  - the corpus, mrpin_limits_bad.txt next to this program: several hundred
 *    hand-made cases, one per line;
 *  - lines over 256 bytes and writes over 64 KiB, made here;
 *  - thousands of random writes: good, mutated and random lines, with one
 *    line that is bad whatever comes before it (or a NUL byte) put in at a
 *    random place.  $MRPIN_FUZZ_SEED and $MRPIN_FUZZ_ITERATIONS change the
 *    seed (printed) and the count.
 *
 * Valid writes near the same bounds are accepted, so that the refusals are
 * the parser's.  Runs as root; the policy is reset at the end.
 */
/* The 6.1 harness has an unused parameter: keep -Wextra quiet about it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#include <libgen.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "mrpin_test.h"

#define LIMITS_FILE	MRPIN_LIMITS_FILE
#define CORPUS		"mrpin_limits_bad.txt"
#define CORPUS_MIN	200
#define CG_MNT		"/sys/fs/cgroup"
#define FUZZ_CG		"/mrpin_fuzz"
#define FUZZ_CG_NORULE	FUZZ_CG "/norule"
#define MAX_WRITE	(64 * 1024)
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
	char rec[8192], *msg;
	int hits = 0;
	size_t i;
	ssize_t n;

	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			break;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		if (what && strstr(msg, what))
			hits++;
		for (i = 0; i < MRPIN_ARRAY_SIZE(bad); i++) {
			if (!strstr(msg, bad[i]))
				continue;
			(*problems)++;
			ksft_print_msg("kernel log: %.*s\n",
				       (int)strcspn(msg, "\n"), msg);
			break;
		}
	}
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
	char *saved;		/* the policy every case must leave */
	size_t saved_len;
	int failures;		/* cases that did not fail as they must */
};

/*
 * Try one malformed write: true if it failed with EINVAL and left the
 * policy as it was.  Otherwise say how (the first SHOW_MAX times), put
 * the policy back, and count the failure.
 */
static bool try_bad(struct fuzz *f, const char *what, const void *buf,
		    size_t len)
{
	char shown[1024], *now = NULL;
	int err, ret;
	bool same;

	err = mrpin_limits_write(buf, len);
	ret = mrpin_read_file(LIMITS_FILE, &now);
	same = !ret && strlen(now) == f->saved_len &&
	       !memcmp(now, f->saved, f->saved_len);
	if (err == EINVAL && same) {
		free(now);
		return true;
	}
	if (f->failures++ < SHOW_MAX) {
		escape(buf, len, shown, sizeof(shown), 300);
		ksft_print_msg("%s \"%s\": %s%s\n", what, shown,
			       err ? strerror(err) : "accepted",
			       same ? "" : ", and the policy changed");
		if (!same && now)
			ksft_print_msg("policy now:\n%s", now);
	}
	free(now);
	if (!same)
		mrpin_limits_write(f->saved, f->saved_len);
	return false;
}

static int cg_mkdir(const char *cg)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), CG_MNT "%s", cg);
	return mkdir(path, 0755) && errno != EEXIST ? errno : 0;
}

static void cg_rmdir(const char *cg)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), CG_MNT "%s", cg);
	rmdir(path);
}

FIXTURE(bad_input) {
	struct fuzz f;
};

FIXTURE_SETUP(bad_input)
{
	struct fuzz *f = &self->f;
	struct statfs s;
	char *again;
	int err;

	f->kmsg = mrpin_kmsg_open();
	ASSERT_LE(0, f->kmsg);
	f->cgroups = !statfs(CG_MNT, &s) && s.f_type == CGROUP2_SUPER_MAGIC;
	ASSERT_TRUE(f->cgroups) {
		TH_LOG("%s is not a cgroup2 mount", CG_MNT);
	}
	ASSERT_EQ(0, cg_mkdir(FUZZ_CG));
	ASSERT_EQ(0, cg_mkdir(FUZZ_CG_NORULE));
	err = mrpin_limits_write(baseline, strlen(baseline));
	ASSERT_EQ(0, err) {
		TH_LOG("the baseline policy: %s", strerror(err));
	}
	ASSERT_EQ(0, mrpin_read_file(LIMITS_FILE, &f->saved));
	f->saved_len = strlen(f->saved);
	/* What it reads is what it takes. */
	ASSERT_EQ(0, mrpin_limits_write(f->saved, f->saved_len));
	ASSERT_EQ(0, mrpin_read_file(LIMITS_FILE, &again));
	ASSERT_STREQ(f->saved, again);
	free(again);
}

FIXTURE_TEARDOWN(bad_input)
{
	struct fuzz *f = &self->f;

	EXPECT_EQ(0, mrpin_limits_write("reset\n", 6));
	cg_rmdir(FUZZ_CG_NORULE);
	cg_rmdir(FUZZ_CG);
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

	/* A comment line of 257 bytes. */
	len = put(buf, 0, "# ");
	memset(buf + len, 'y', 255);
	len += 255;
	len = put(buf, len, "\n");
	try_bad(f, "257-byte comment", buf, len);

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
	char *buf, *now;
	size_t len;

	buf = malloc(MAX_WRITE);
	ASSERT_NE(NULL, buf);

	/* A 200-byte comment, then a rule. */
	len = put(buf, 0, "# ");
	memset(buf + len, 'x', 197);
	len += 197;
	len = put(buf, len, "\nuid 1 max_pins=1\n");
	ASSERT_EQ(0, mrpin_limits_write(buf, len));
	ASSERT_EQ(0, mrpin_read_file(LIMITS_FILE, &now));
	EXPECT_NE(NULL, strstr(now, "\nuid 1 max_pinned=unlimited max_pins=1 "));
	free(now);

	/* 60 KiB of comments and rules in one write. */
	len = 0;
	while (len + 40 < 60 * 1024) {
		len = put(buf, len, "# padding, padding, padding\n");
		len = put(buf, len, "uid 3 max_pins=3\n");
	}
	ASSERT_EQ(0, mrpin_limits_write(buf, len));
	ASSERT_EQ(0, mrpin_read_file(LIMITS_FILE, &now));
	EXPECT_NE(NULL, strstr(now, "\nuid 3 max_pinned=unlimited max_pins=3 "));
	free(now);

	/* A line of 256 bytes (a comment), and exactly 64 KiB. */
	len = put(buf, 0, "# ");
	memset(buf + len, 'y', 254);
	len += 254;
	len = put(buf, len, "\nuid 4 max_pins=4\n");
	ASSERT_EQ(0, mrpin_limits_write(buf, len)) {
		TH_LOG("a 256-byte line was refused");
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
	ASSERT_EQ(0, mrpin_read_file(LIMITS_FILE, &now));
	EXPECT_NE(NULL, strstr(now, "\nuid 4 max_pinned=unlimited max_pins=4 "));
	EXPECT_NE(NULL, strstr(now, "\nuid 5 max_pinned=unlimited max_pins=5 "));
	free(now);

	ASSERT_EQ(0, mrpin_limits_write(f->saved, f->saved_len));
	free(buf);
}

/* The random writes. */
static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static unsigned int rnd_n(unsigned int n)
{
	return rnd() % n;
}

static const char *const scopes[] = {
	"global", "process", "uid 0", "uid 1000", "uid 2000", "uid 31337",
	"cgroup " FUZZ_CG, "cgroup " FUZZ_CG_NORULE,
};

static const char *const keys[] = {
	"max_pinned", "max_pins", "max_pin_size", "action",
};

static const char *const fixed_good[] = {
	"global max_pinned=50%", "global max_pinned=2G action=enforce",
	"global action=warn", "process max_pins=unlimited",
	"process max_pinned=4G max_pins=10000 max_pin_size=1G",
	"uid 1000 max_pinned=8G action=warn", "uid 0 max_pin_size=64K",
	"cgroup " FUZZ_CG " max_pinned=16G", "reset", "# a comment", "",
	"uid 1000 delete", "uid 2000 delete", "cgroup " FUZZ_CG " delete",
};

/* Bad whatever the lines before them did. */
static const char *const always_bad[] = {
	"bogus", "globals max_pinned=1G", "user 1000 max_pinned=1G",
	"global bogus=1", "process max_pinned=abc", "process max_pins=-1",
	"uid 1000 max_pinned=101%", "global max_pinned=1P",
	"process max_pin_size=50%", "global action=deny",
	"global max_pinned=1G max_pinned=1G", "process max_pins=1 max_pins=2",
	"global delete", "process delete", "uid -1 max_pinned=1G",
	"uid 4294967296 max_pins=1", "cgroup /mrpin_does_not_exist max_pins=1",
	"cgroup /mrpin_does_not_exist delete", "global max_pinned=16777216T",
	"process max_pins=18446744073709551616", "global max_pinned",
	"uid 1000", "cgroup " FUZZ_CG, "global =1G", "process max_pinned=1G=2G",
};

static size_t gen_value(const char *key, char *out)
{
	static const char sfx[] = "KMGT";

	if (!strcmp(key, "action"))
		return sprintf(out, "%s", rnd_n(2) ? "warn" : "enforce");
	if (!rnd_n(6))
		return sprintf(out, "unlimited");
	if (!strcmp(key, "max_pins"))
		return sprintf(out, "%u", rnd_n(100000));
	if (!strcmp(key, "max_pinned") && !rnd_n(4))
		return sprintf(out, "%u%%", rnd_n(101));
	if (rnd_n(2))
		return sprintf(out, "%u%c", 1 + rnd_n(1023), sfx[rnd_n(4)]);
	return sprintf(out, "%llu", (unsigned long long)(rnd() >> 24));
}

/* A valid line that sets one to four keys of a random scope. */
static size_t gen_good(char *out)
{
	bool used[4] = { false };
	unsigned int n = 1 + rnd_n(4), k;
	size_t len;

	len = sprintf(out, "%s", scopes[rnd_n(MRPIN_ARRAY_SIZE(scopes))]);
	while (n--) {
		k = rnd_n(4);
		if (used[k])
			continue;
		used[k] = true;
		len += sprintf(out + len, " %s=", keys[k]);
		len += gen_value(keys[k], out + len);
	}
	return len;
}

/* Mess with a line in place (room for 64 more bytes). */
static size_t mutate(char *s, size_t len)
{
	unsigned int i = len ? rnd_n(len) : 0, n = 1 + rnd_n(3);
	static const char *const bits[] = {
		"=", " ", "%", "K", "-", "99999999999999999999", "unlimited",
		"delete", "#", "\n", "/", "..", "max_pins=",
	};
	const char *b;

	while (n--) {
		i = len ? rnd_n(len) : 0;
		switch (rnd_n(6)) {
		case 0:		/* replace a byte with any byte */
			if (len)
				s[i] = rnd_n(256);
			break;
		case 1:		/* insert a piece of the grammar */
			b = bits[rnd_n(MRPIN_ARRAY_SIZE(bits))];
			if (len + strlen(b) > 200)
				break;
			memmove(s + i + strlen(b), s + i, len - i);
			memcpy(s + i, b, strlen(b));
			len += strlen(b);
			break;
		case 2:		/* delete a byte */
			if (len) {
				memmove(s + i, s + i + 1, len - i - 1);
				len--;
			}
			break;
		case 3:		/* truncate */
			len = i;
			break;
		case 4:		/* a printable byte */
			if (len)
				s[i] = 0x20 + rnd_n(0x5f);
			break;
		default:	/* double a byte */
			if (len && len < 200) {
				memmove(s + i + 1, s + i, len - i);
				len++;
			}
		}
	}
	return len;
}

static size_t gen_random_bytes(char *out)
{
	size_t len = rnd_n(40), i;

	for (i = 0; i < len; i++)
		out[i] = rnd_n(3) ? 0x20 + rnd_n(0x5f) : rnd_n(256);
	return len;
}

/* A line bad whatever came before: no newline in it. */
static size_t gen_bad(char *out)
{
	size_t len, i;

	switch (rnd_n(5)) {
	case 0:		/* an unknown scope, then anything printable */
		out[0] = 'Z';
		len = 1 + rnd_n(60);
		for (i = 1; i < len; i++)
			out[i] = 0x20 + rnd_n(0x5f);
		return len;
	case 1:		/* over 256 bytes */
		len = 257 + rnd_n(200);
		memcpy(out, "# ", 2);
		for (i = 2; i < len; i++)
			out[i] = 0x20 + rnd_n(0x5f);
		return len;
	case 2:		/* a key twice */
		len = sprintf(out, "%s ", scopes[rnd_n(MRPIN_ARRAY_SIZE(scopes))]);
		i = rnd_n(4);
		len += sprintf(out + len, "%s=", keys[i]);
		len += gen_value(keys[i], out + len);
		len += sprintf(out + len, " %s=", keys[i]);
		len += gen_value(keys[i], out + len);
		return len;
	default:
		return sprintf(out, "%s",
			       always_bad[rnd_n(MRPIN_ARRAY_SIZE(always_bad))]);
	}
}

/*
 * One random write into @buf: 1 to 8 lines, good, mutated or random, and
 * a bad one (or a NUL byte) somewhere.  Sometimes over 64 KiB.
 */
static size_t gen_write(char *buf)
{
	unsigned int nlines = 1 + rnd_n(8), bad_at = rnd_n(nlines + 1), i;
	bool nul = !rnd_n(10);
	size_t len = 0, n;
	char line[512];

	for (i = 0; i <= nlines; i++) {
		if (i == bad_at && !nul) {
			n = gen_bad(line);
		} else if (i == bad_at) {
			continue;
		} else {
			switch (rnd_n(10)) {
			case 0: case 1: case 2: case 3:
				n = gen_good(line);
				break;
			case 4: case 5: case 6:
				n = mutate(line, gen_good(line));
				break;
			case 7:
				n = gen_random_bytes(line);
				break;
			default:
				n = sprintf(line, "%s", fixed_good[rnd_n(
					MRPIN_ARRAY_SIZE(fixed_good))]);
			}
		}
		memcpy(buf + len, line, n);
		len += n;
		if (i < nlines || rnd_n(5))
			buf[len++] = '\n';
	}
	if (nul) {
		if (!len)
			buf[len++] = 'x';
		buf[rnd_n(len)] = '\0';
	}
	if (!rnd_n(500)) {
		/* Over 64 KiB of good lines after it. */
		while (len <= MAX_WRITE)
			len += sprintf(buf + len, "process max_pins=%u\n",
				       rnd_n(1000));
	}
	return len;
}

TEST_F_TIMEOUT(bad_input, thousands_of_random_writes_fail_with_EINVAL_and_change_nothing, 400)
{
	struct fuzz *f = &self->f;
	unsigned long iterations = 5000, i;
	const char *env;
	char *buf, what[64];
	uint64_t seed;
	size_t len;

	env = getenv("MRPIN_FUZZ_ITERATIONS");
	if (env && *env)
		iterations = strtoul(env, NULL, 0);
	env = getenv("MRPIN_FUZZ_SEED");
	seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	rnd_state = seed ?: 1;
	TH_LOG("seed %llu (MRPIN_FUZZ_SEED), %lu writes",
	       (unsigned long long)seed, iterations);

	buf = malloc(MAX_WRITE + 16384);
	ASSERT_NE(NULL, buf);
	for (i = 0; i < iterations; i++) {
		len = gen_write(buf);
		snprintf(what, sizeof(what), "random write %lu", i);
		try_bad(f, what, buf, len);
		if (f->failures > 100)
			break;
	}
	free(buf);
	EXPECT_EQ(0, f->failures) {
		TH_LOG("%d of %lu random writes did not fail as they must (seed %llu)",
		       f->failures, i, (unsigned long long)seed);
	}
}

int main(int argc, char **argv)
{
	mrpin_require_loaded(LIMITS_FILE, "no policy in this mrpin");
	return test_harness_run(argc, argv);
}
