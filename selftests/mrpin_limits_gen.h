/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The generators of mrpin_limits_fuzz: malformed writes to the policy,
 * made from the grammar's scopes, keys and types of value (random_bytes,
 * overlong, overflow, negative, wrong_type, bad_scope, transaction,
 * mutated; see mrpin_limits_fuzz.c), and the good lines they hide their
 * bad ones among.  gen_*(buf, i) writes the @i-th case of its kind into
 * @buf and returns its length; rnd_state seeds them.
 */
#ifndef __MRPIN_LIMITS_GEN_H
#define __MRPIN_LIMITS_GEN_H

#include "mrpin_utils.h"
#include "mrpin_abi.h"

/* The cgroups the policy's rules name (made by the test). */
#define FUZZ_CG		"/mrpin_fuzz"
#define FUZZ_CG_NORULE	FUZZ_CG "/norule"
/* The longest write the policy takes, and its longest line. */
#define MAX_WRITE	MRPIN_WRITE_MAX
#define MAX_LINE	MRPIN_LINE_MAX

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

/* Every rule scope, the global rule first. */
static const char *const scopes[] = {
	"global", "process", "uid 0", "uid 1000", "uid 2000", "uid 31337",
	"cgroup " FUZZ_CG, "cgroup " FUZZ_CG_NORULE,
};

/* The types of value; each key takes some of them. */
enum {
	T_NUM = 1 << 0,		/* decimal */
	T_SIZE = 1 << 1,	/* decimal and a K, M, G or T suffix */
	T_PCT = 1 << 2,		/* N% */
	T_UNL = 1 << 3,		/* unlimited */
	T_ACTION = 1 << 4,	/* enforce, warn */
	T_STACK = 1 << 5,	/* allow, warn, deny */
	T_SWITCH = 1 << 6,	/* on, off */
	T_COUNT = 1 << 7,	/* registered, distinct */
};

/* The rules a key is valid on: the first this many of scopes[]; 0: all. */
enum { ANY_RULE, GLOBAL_RULE, PER_MM_RULES };

struct key {
	const char *name;
	unsigned int takes;
	unsigned int nr_scopes;
	const char *good;	/* a value it takes */
};

/*
 * Every key of the grammar, by the module's own index (mrpin_abi.h): every
 * rule's first, then count= (global and process), then the global rule's.
 */
static const struct key keys[] = {
	[MRPIN_KEY_MAX_PINNED] = { MRPIN_KEY_NAME_MAX_PINNED,
				   T_NUM | T_SIZE | T_PCT | T_UNL, ANY_RULE, "2G" },
	[MRPIN_KEY_MAX_PINS] = { MRPIN_KEY_NAME_MAX_PINS, T_NUM | T_UNL,
				 ANY_RULE, "100" },
	[MRPIN_KEY_MAX_PIN_SIZE] = { MRPIN_KEY_NAME_MAX_PIN_SIZE,
				     T_NUM | T_SIZE | T_UNL, ANY_RULE, "64M" },
	[MRPIN_KEY_ACTION] = { MRPIN_KEY_NAME_ACTION, T_ACTION, ANY_RULE,
			       "warn" },
	[MRPIN_KEY_COUNT] = { MRPIN_KEY_NAME_COUNT, T_COUNT, PER_MM_RULES,
			      "distinct" },
	[MRPIN_KEY_STACK] = { MRPIN_KEY_NAME_STACK, T_STACK, GLOBAL_RULE,
			      "deny" },
	[MRPIN_KEY_OVERSIZE] = { MRPIN_KEY_NAME_OVERSIZE,
				 T_NUM | T_SIZE | T_UNL, GLOBAL_RULE, "512M" },
	[MRPIN_KEY_MR_TABLE_WARN] = { MRPIN_KEY_NAME_MR_TABLE_WARN, T_PCT,
				      GLOBAL_RULE, "90%" },
	[MRPIN_KEY_CALLSITES] = { MRPIN_KEY_NAME_CALLSITES, T_SWITCH,
				  GLOBAL_RULE, "on" },
	[MRPIN_KEY_LOG_FAILURES] = { MRPIN_KEY_NAME_LOG_FAILURES, T_SWITCH,
				     GLOBAL_RULE, "on" },
};
_Static_assert(MRPIN_ARRAY_SIZE(keys) == MRPIN_NR_KEYS,
	       "every key of the grammar has its generator entry");

/* The keys every rule takes come first. */
#define NR_RULE_KEYS	MRPIN_KEY_COUNT

/* Whether the rule scopes[@scope] takes @key. */
static bool key_valid(unsigned int scope, unsigned int key)
{
	return !keys[key].nr_scopes || scope < keys[key].nr_scopes;
}

struct value {
	const char *text;
	unsigned int type;	/* 0: no key takes it */
};

static const struct value values[] = {
	{ "0", T_NUM }, { "4096", T_NUM }, { "123456789", T_NUM },
	{ "007", T_NUM }, { "18446744073709551614", T_NUM },
	{ "1K", T_SIZE }, { "64M", T_SIZE }, { "3G", T_SIZE }, { "2T", T_SIZE },
	{ "1g", T_SIZE }, { "16k", T_SIZE }, { "0T", T_SIZE },
	{ "0%", T_PCT }, { "50%", T_PCT }, { "100%", T_PCT }, { "007%", T_PCT },
	{ "unlimited", T_UNL },
	{ "enforce", T_ACTION }, { "warn", T_ACTION | T_STACK },
	{ "allow", T_STACK }, { "deny", T_STACK },
	{ "on", T_SWITCH }, { "off", T_SWITCH },
	{ "registered", T_COUNT }, { "distinct", T_COUNT },
	/* No key takes these. */
	{ "", 0 }, { "abc", 0 }, { "true", 0 }, { "false", 0 }, { "yes", 0 },
	{ "no", 0 }, { "none", 0 }, { "null", 0 }, { "1.5", 0 }, { "0.5G", 0 },
	{ "50.5%", 0 }, { ".5", 0 }, { "0x10", 0 }, { "0x1G", 0 },
	{ "0b1", 0 }, { "1e3", 0 }, { "+5", 0 }, { "1_000", 0 },
	{ "1,000", 0 }, { "\"1G\"", 0 }, { "'on'", 0 }, { "ENFORCE", 0 },
	{ "Warn", 0 }, { "ON", 0 }, { "Off", 0 }, { "Unlimited", 0 },
	{ "UNLIMITED", 0 }, { "unlimited%", 0 }, { "unlimitedK", 0 },
	{ "inf", 0 }, { "1KB", 0 }, { "1KiB", 0 }, { "1P", 0 }, { "1E", 0 },
	{ "1B", 0 }, { "K", 0 }, { "%", 0 }, { "50%%", 0 }, { "%50", 0 },
	{ "1K%", 0 }, { "50%K", 0 }, { "1GG", 0 }, { "=", 0 },
	{ "1G=2G", 0 }, { "enforce,warn", 0 }, { "on;", 0 }, { "1\\x", 0 },
	{ "\xff", 0 }, { "\x80", 0 }, { "1\xc3\xa9G", 0 },
	{ "\xef\xbc\x91G", 0 }, { "on\x01", 0 }, { "1G\x7f", 0 },
	{ "1G\v", 0 }, { "warn\f", 0 }, { "-1", 0 }, { "-0", 0 },
};

/* A value of @key's (for KEY=VALUE lines that must be good). */
static size_t gen_value(unsigned int key, char *out)
{
	static const char sfx[] = "KMGT";
	const char *name = keys[key].name;

	if (!strcmp(name, "action"))
		return sprintf(out, "%s", rnd_n(2) ? "warn" : "enforce");
	if (!strcmp(name, "stack"))
		return sprintf(out, "%s", rnd_n(3) ? rnd_n(2) ? "allow" : "deny" : "warn");
	if (keys[key].takes & T_SWITCH)
		return sprintf(out, "%s", rnd_n(2) ? "on" : "off");
	if (keys[key].takes & T_COUNT)
		return sprintf(out, "%s", rnd_n(2) ? "registered" : "distinct");
	if (!strcmp(name, "mr_table_warn"))
		return sprintf(out, "%u%%", rnd_n(101));
	if (!rnd_n(6))
		return sprintf(out, "unlimited");
	if (!strcmp(name, "max_pins"))
		return sprintf(out, "%u", rnd_n(100000));
	if (!strcmp(name, "max_pinned") && !rnd_n(4))
		return sprintf(out, "%u%%", rnd_n(101));
	if (rnd_n(2))
		return sprintf(out, "%u%c", 1 + rnd_n(1023), sfx[rnd_n(4)]);
	return sprintf(out, "%llu", (unsigned long long)(rnd() >> 24));
}

/* A valid line that sets one to four keys of a random scope. */
static size_t gen_good(char *out)
{
	unsigned int scope = rnd_n(MRPIN_ARRAY_SIZE(scopes));
	unsigned int n = 1 + rnd_n(4), k;
	bool used[MRPIN_ARRAY_SIZE(keys)] = { false };
	size_t len;

	len = sprintf(out, "%s", scopes[scope]);
	while (n--) {
		do
			k = rnd_n(MRPIN_ARRAY_SIZE(keys));
		while (!key_valid(scope, k));
		if (used[k])
			continue;
		used[k] = true;
		len += sprintf(out + len, " %s=", keys[k].name);
		len += gen_value(k, out + len);
	}
	return len;
}

/* A line that is good whatever comes before it (maybe two lines). */
static size_t good_line(char *out)
{
	switch (rnd_n(12)) {
	case 0:
		return sprintf(out, "reset");
	case 1:
		return sprintf(out, "# a comment");
	case 2:
		return 0;
	case 3:
		return sprintf(out, "uid 555 max_pins=1\nuid 555 delete");
	default:
		return gen_good(out);
	}
}

static size_t good_lines(char *buf, size_t len, unsigned int n)
{
	while (n--) {
		len += good_line(buf + len);
		buf[len++] = '\n';
	}
	return len;
}

/* A bad line alone, after good lines, or between them. */
static size_t in_context(char *buf, const char *line, size_t n)
{
	unsigned int where = rnd_n(4);
	size_t len = 0;

	if (where >= 2)
		len = good_lines(buf, 0, 1 + rnd_n(4));
	memcpy(buf + len, line, n);
	len += n;
	if (where == 3 || rnd_n(2))
		buf[len++] = '\n';
	if (where == 3)
		len = good_lines(buf, len, 1 + rnd_n(3));
	return len;
}

/* Another key than @key that @scope takes. */
static unsigned int other_key(unsigned int scope, unsigned int key)
{
	unsigned int k;

	do
		k = rnd_n(MRPIN_ARRAY_SIZE(keys));
	while (k == key || !key_valid(scope, k));
	return k;
}

/* SCOPE KEY=@val, alone on the line or next to a good key. */
static size_t key_line(char *out, unsigned int scope, unsigned int key,
		       const char *val)
{
	unsigned int other = other_key(scope, key), where = rnd_n(3);
	size_t len = sprintf(out, "%s", scopes[scope]);

	if (where == 1)
		len += sprintf(out + len, " %s=%s", keys[other].name,
			       keys[other].good);
	len += sprintf(out + len, " %s=%s", keys[key].name, val);
	if (where == 2)
		len += sprintf(out + len, " %s=%s", keys[other].name,
			       keys[other].good);
	return len;
}

/* A scope @key is valid on. */
static unsigned int scope_for(unsigned int key)
{
	unsigned int n = keys[key].nr_scopes;

	return rnd_n(n ? n : MRPIN_ARRAY_SIZE(scopes));
}

/* random_bytes: any bytes, made bad by a NUL or by their first byte. */
static size_t gen_random_bytes(char *buf, unsigned int i)
{
	static const char no_scope[] = "!$%&*+,-.0123456789:;<=>?@[]^_`{|}~";
	size_t len = 1 + (rnd_n(8) ? rnd_n(300) : rnd_n(8000)), j;
	unsigned int how = i % 3;

	for (j = 0; j < len; j++) {
		if (how < 2)
			buf[j] = rnd_n(256);
		else
			buf[j] = rnd_n(20) ? 0x20 + rnd_n(0x5f) : '\n';
	}
	switch (how) {
	case 0:		/* a NUL somewhere */
		buf[rnd_n(len)] = '\0';
		break;
	case 1:		/* no NUL; a high first byte: no scope */
		for (j = 0; j < len; j++)
			if (!buf[j])
				buf[j] = 1 + rnd_n(255);
		buf[0] = 0x80 + rnd_n(0x80);
		break;
	default:	/* printable; a first byte no scope starts with */
		buf[0] = no_scope[rnd_n(sizeof(no_scope) - 1)];
	}
	return len;
}

/* overlong: a line of MAX_LINE + 1 bytes to 64 KiB, or a write over 64 KiB. */
static size_t gen_overlong(char *buf, unsigned int i)
{
	static const size_t sizes[] = {
		MAX_LINE + 1, MAX_LINE + 2, 300, 511, 512, 1000, 4095, 4096, 4097, 8192,
		16384, 65000,
	};
	size_t len, start, want;

	if (!rnd_n(20)) {
		/* Good lines, up to 17 times the most a write takes. */
		want = MAX_WRITE + 1 + (rnd_n(4) ? rnd_n(64) : rnd_n(16 * MAX_WRITE));
		for (len = 0; len < want;)
			len += sprintf(buf + len, "uid %u max_pins=%u\n",
				       rnd_n(100), rnd_n(1000));
		return want;
	}
	start = good_lines(buf, 0, rnd_n(4));
	len = start;
	want = rnd_n(2) ? MAX_LINE + 1 + rnd_n(64) : sizes[rnd_n(MRPIN_ARRAY_SIZE(sizes))];
	switch (i % 5) {
	case 0:		/* a comment */
		len += sprintf(buf + len, "# ");
		while (len - start < want)
			buf[len++] = 0x20 + rnd_n(0x5f);
		break;
	case 1:		/* a rule and white space */
		len += sprintf(buf + len, "process max_pins=5");
		while (len - start < want)
			buf[len++] = " \t\r"[rnd_n(3)];
		break;
	case 2:		/* a number padded with zeros */
		len += sprintf(buf + len, "uid 1 max_pinned=");
		while (len - start < want - 2)
			buf[len++] = '0';
		len += sprintf(buf + len, "1M");
		break;
	case 3:		/* white space, then reset */
		while (len - start < want - 5)
			buf[len++] = rnd_n(2) ? ' ' : '\t';
		len += sprintf(buf + len, "reset");
		break;
	default:	/* a rule, then a comment */
		len += sprintf(buf + len, "global action=warn #");
		while (len - start < want)
			buf[len++] = 'x';
	}
	buf[len++] = '\n';
	return good_lines(buf, len, rnd_n(3));
}

/* A decimal number above U64_MAX. */
static size_t big_decimal(char *out)
{
	size_t len, i;

	switch (rnd_n(5)) {
	case 0:		/* U64_MAX + 1 to + 4 */
		return sprintf(out, "1844674407370955161%u", 6 + rnd_n(4));
	case 1:		/* U64_MAX and one more digit */
		return sprintf(out, "18446744073709551615%u", rnd_n(10));
	case 2:		/* 20 digits from 2 on */
		len = 20;
		out[0] = '2' + rnd_n(8);
		break;
	default:	/* 21 to 60 digits */
		len = 21 + rnd_n(40);
		out[0] = '1' + rnd_n(9);
	}
	for (i = 1; i < len; i++)
		out[i] = '0' + rnd_n(10);
	out[len] = '\0';
	return len;
}

/* A number in (@t, U64_MAX]. */
static uint64_t rnd_above(uint64_t t)
{
	switch (rnd_n(4)) {
	case 0:
		return t + 1;
	case 1:
		return UINT64_MAX;
	default:
		return t + 1 + rnd() % (UINT64_MAX - t);
	}
}

/* The keys that take bytes: max_pinned, max_pin_size, oversize. */
static unsigned int bytes_key(void)
{
	static const unsigned int k[] = {
		MRPIN_KEY_MAX_PINNED, MRPIN_KEY_MAX_PIN_SIZE, MRPIN_KEY_OVERSIZE
	};

	return k[rnd_n(3)];
}

/* overflow: past U64_MAX, before or after a suffix; out-of-range %, uid. */
static size_t gen_overflow(char *buf, unsigned int i)
{
	static const char sfx[] = "KMGTkmgt";
	char line[512], val[128];
	unsigned int key, s;
	size_t n;

	switch (i % 6) {
	case 0:		/* bytes past U64_MAX */
		key = bytes_key();
		n = big_decimal(val);
		if (rnd_n(2))
			sprintf(val + n, "%c", sfx[rnd_n(8)]);
		break;
	case 1:		/* bytes that the suffix takes past U64_MAX */
	case 2:
		key = bytes_key();
		s = rnd_n(8);
		sprintf(val, "%llu%c", (unsigned long long)
			rnd_above(UINT64_MAX >> (10 * (s % 4 + 1))), sfx[s]);
		break;
	case 3:		/* a count past U64_MAX */
		key = MRPIN_KEY_MAX_PINS;
		big_decimal(val);
		break;
	case 4:		/* a percentage over 100 */
		key = rnd_n(2) ? MRPIN_KEY_MAX_PINNED : MRPIN_KEY_MR_TABLE_WARN;
		if (rnd_n(2))
			n = sprintf(val, "%llu", (unsigned long long)rnd_above(100));
		else
			n = big_decimal(val);
		sprintf(val + n, "%%");
		break;
	default:	/* a uid past U32_MAX - 1 */
		if (rnd_n(2))
			sprintf(val, "%llu", (unsigned long long)rnd_above(4294967294ULL));
		else
			big_decimal(val);
		n = sprintf(line, "uid %s max_pins=%u", val, rnd_n(10));
		return in_context(buf, line, n);
	}
	n = key_line(line, scope_for(key), key, val);
	return in_context(buf, line, n);
}

/* negative: numbers, sizes, percentages, uids with a minus. */
static size_t gen_negative(char *buf, unsigned int i)
{
	static const char *const minus[] = { "-", "-", "--", "\xe2\x88\x92" };
	static const unsigned int numeric[] = {
		MRPIN_KEY_MAX_PINNED, MRPIN_KEY_MAX_PINS, MRPIN_KEY_MAX_PIN_SIZE,
		MRPIN_KEY_OVERSIZE, MRPIN_KEY_MR_TABLE_WARN
	};
	static const char sfx[] = "KMGT";
	const char *m = minus[rnd_n(MRPIN_ARRAY_SIZE(minus))];
	char line[512], val[128];
	unsigned int key;
	size_t n;

	if (i % 8 == 7) {
		n = sprintf(line, "uid %s%u max_pins=1", m, rnd_n(70000));
		return in_context(buf, line, n);
	}
	key = numeric[rnd_n(MRPIN_ARRAY_SIZE(numeric))];
	switch (rnd_n(6)) {
	case 0:
		sprintf(val, "%s%u", m, rnd_n(100000));
		break;
	case 1:
		sprintf(val, "%s%u%c", m, 1 + rnd_n(1023), sfx[rnd_n(4)]);
		break;
	case 2:
		sprintf(val, "%s%u%%", m, rnd_n(101));
		break;
	case 3:
		sprintf(val, "%s0", m);
		break;
	case 4:
		sprintf(val, "%sunlimited", m);
		break;
	default:
		n = sprintf(val, "%s", m);
		big_decimal(val + n);
	}
	n = key_line(line, scope_for(key), key, val);
	return in_context(buf, line, n);
}

/* wrong_type: (scope, key, value) for every value the key refuses there. */
struct combo {
	unsigned char scope, key, value;
};

static struct combo combos[MRPIN_ARRAY_SIZE(scopes) * MRPIN_ARRAY_SIZE(keys) *
			   MRPIN_ARRAY_SIZE(values)];
static unsigned int nr_combos;

static void find_combos(void)
{
	unsigned int s, k, v;

	nr_combos = 0;
	for (s = 0; s < MRPIN_ARRAY_SIZE(scopes); s++)
		for (k = 0; k < MRPIN_ARRAY_SIZE(keys); k++)
			for (v = 0; v < MRPIN_ARRAY_SIZE(values); v++) {
				if (key_valid(s, k) &&
				    (values[v].type & keys[k].takes))
					continue;
				combos[nr_combos++] = (struct combo){ s, k, v };
			}
}

static size_t gen_wrong_type(char *buf, unsigned int i)
{
	const struct combo *c = &combos[i % nr_combos];
	char line[512];
	size_t n;

	n = key_line(line, c->scope, c->key, values[c->value].text);
	return in_context(buf, line, n);
}

/* bad_scope: what is not a scope, a uid, a cgroup or a rule to delete. */
static const char *const bad_scopes[] = {
	"Global max_pins=5", "GLOBAL max_pins=5", "globa max_pins=5",
	"globall max_pins=5", "proc max_pins=5", "processes max_pins=5",
	"uid1000 max_pins=5", "uids 1000 max_pins=5", "user 1000 max_pins=5",
	"gid 1000 max_pins=5", "device rxe0 max_pins=5", "device max_pins=5",
	"cgroups " FUZZ_CG " max_pins=5", "cgroup=/ max_pins=5",
	"all max_pins=5", "* max_pins=5", "default max_pins=5",
	"max_pins=5", "=5", "Reset", "RESET", "reset reset", "reset now",
	"reset max_pins=1", "reset # a comment is fine\nreset 1",
	"uid", "uid abc max_pins=5", "uid -1 max_pins=5",
	"uid +1 max_pins=5", "uid 1.0 max_pins=5", "uid 0x10 max_pins=5",
	"uid 1K max_pins=5", "uid 4294967295 max_pins=5",
	"uid 4294967296 max_pins=5", "uid 18446744073709551616 max_pins=5",
	"uid 1000abc max_pins=5", "uid \xff max_pins=5", "uid 1000% max_pins=5",
	"uid unlimited max_pins=5", "uid 1e3 max_pins=5", "uid 1000",
	"uid 1000 1000", "uid 1000 max_pins", "uid \xef\xbc\x91 max_pins=5",
	"cgroup", "cgroup mrpin_fuzz max_pins=5",
	"cgroup ./mrpin_fuzz max_pins=5",
	"cgroup /mrpin_does_not_exist max_pins=5",
	"cgroup " FUZZ_CG "/.. max_pins=5", "cgroup " FUZZ_CG "/. max_pins=5",
	"cgroup " FUZZ_CG "/norule/x max_pins=5",
	"cgroup " FUZZ_CG "\\ max_pins=5", "cgroup " FUZZ_CG "\\0 max_pins=5",
	"cgroup " FUZZ_CG "\\400 max_pins=5",
	"cgroup " FUZZ_CG "\\000 max_pins=5",
	"cgroup " FUZZ_CG "\\08 max_pins=5",
	"cgroup " FUZZ_CG "\\x41 max_pins=5",
	"cgroup " FUZZ_CG "\\040 max_pins=5",
	"cgroup /cgroup.procs max_pins=5",
	"cgroup " FUZZ_CG "/cgroup.procs max_pins=5", "cgroup ~ max_pins=5",
	"cgroup " FUZZ_CG, "cgroup " FUZZ_CG " " FUZZ_CG " max_pins=5",
	"uid 4242 delete", "uid 1000 delete now", "uid 1000 delete delete",
	"global delete", "process delete", "global delete max_pins=5",
	"cgroup /mrpin_does_not_exist delete", "delete", "delete uid 1000",
};

static size_t gen_bad_scope(char *buf, unsigned int i)
{
	const char *line = bad_scopes[i % MRPIN_ARRAY_SIZE(bad_scopes)];

	return in_context(buf, line, strlen(line));
}

/* One bad line of any generator above but random_bytes and overlong. */
static size_t bad_line(char *out)
{
	char tmp[4096];
	size_t n;

	/* Made alone (no good lines around it): take the first line. */
	do {
		switch (rnd_n(4)) {
		case 0:
			n = gen_overflow(tmp, rnd_n(6));
			break;
		case 1:
			n = gen_negative(tmp, rnd_n(8));
			break;
		case 2:
			n = gen_wrong_type(tmp, rnd_n(nr_combos));
			break;
		default:
			n = gen_bad_scope(tmp, rnd_n(MRPIN_ARRAY_SIZE(bad_scopes)));
		}
	} while (memchr(tmp, '\n', n) != memrchr(tmp, '\n', n) ||
		 (memchr(tmp, '\n', n) && tmp[n - 1] != '\n'));
	if (n && tmp[n - 1] == '\n')
		n--;
	memcpy(out, tmp, n);
	return n;
}

/* transaction: good lines, one bad line, maybe good lines after it. */
static size_t gen_transaction(char *buf, unsigned int i)
{
	unsigned int j;
	size_t len;

	if (i % 1000 == 999) {
		/* One rule more than the policy holds. */
		len = sprintf(buf, "reset\n");
		for (j = 0; j < 1025; j++)
			len += sprintf(buf + len, "uid %u max_pins=%u\n",
				       200000 + j, 1 + rnd_n(9));
		return good_lines(buf, len, rnd_n(3));
	}
	len = good_lines(buf, 0, 1 + rnd_n(8));
	len += bad_line(buf + len);
	if (rnd_n(2))
		buf[len++] = '\n';
	if (rnd_n(2) && buf[len - 1] == '\n')
		len = good_lines(buf, len, 1 + rnd_n(3));
	return len;
}

/* mutated: good lines mutated byte by byte, one bad line or NUL in. */
static const char *const fixed_good[] = {
	"global max_pinned=50%", "global max_pinned=2G action=enforce",
	"global action=warn", "process max_pins=unlimited",
	"process max_pinned=4G max_pins=10000 max_pin_size=1G",
	"uid 1000 max_pinned=8G action=warn", "uid 0 max_pin_size=64K",
	"cgroup " FUZZ_CG " max_pinned=16G", "reset", "# a comment", "",
	"uid 1000 delete", "uid 2000 delete", "cgroup " FUZZ_CG " delete",
	"global stack=allow callsites=off", "global mr_table_warn=50%",
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
	"process stack=deny", "uid 1000 callsites=on", "global callsites=1",
	"global mr_table_warn=80", "global oversize=1%",
};

/* Mess with a line in place (room for 64 more bytes). */
static size_t mutate(char *s, size_t len)
{
	unsigned int i, n = 1 + rnd_n(3);
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

static size_t random_line(char *out)
{
	size_t len = rnd_n(40), i;

	for (i = 0; i < len; i++)
		out[i] = rnd_n(3) ? 0x20 + rnd_n(0x5f) : rnd_n(256);
	return len;
}

/* A line bad whatever came before: no newline in it. */
static size_t mutated_bad(char *out)
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
		len = MAX_LINE + 1 + rnd_n(200);
		memcpy(out, "# ", 2);
		for (i = 2; i < len; i++)
			out[i] = 0x20 + rnd_n(0x5f);
		return len;
	case 2:		/* a key twice */
		len = sprintf(out, "%s ", scopes[rnd_n(MRPIN_ARRAY_SIZE(scopes))]);
		i = rnd_n(NR_RULE_KEYS);
		len += sprintf(out + len, "%s=", keys[i].name);
		len += gen_value(i, out + len);
		len += sprintf(out + len, " %s=", keys[i].name);
		len += gen_value(i, out + len);
		return len;
	default:
		return sprintf(out, "%s",
			       always_bad[rnd_n(MRPIN_ARRAY_SIZE(always_bad))]);
	}
}

/*
 * 1 to 8 lines, good, mutated or random, and a bad one (or a NUL byte)
 * somewhere.  Sometimes over 64 KiB.
 */
static size_t gen_mutated(char *buf, unsigned int k)
{
	unsigned int nlines = 1 + rnd_n(8), bad_at = rnd_n(nlines + 1), i;
	bool nul = k % 10 == 9;
	size_t len = 0, n;
	char line[512];

	for (i = 0; i <= nlines; i++) {
		if (i == bad_at && !nul) {
			n = mutated_bad(line);
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
				n = random_line(line);
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


#endif /* __MRPIN_LIMITS_GEN_H */
