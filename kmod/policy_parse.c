// SPDX-License-Identifier: GPL-2.0
/*
 * The `limits` grammar: reading a line, the values of each key, and
 * writing a rule back in the same words.  No state: policy.c applies what
 * a line says to a policy, params.c checks the module parameters with the
 * same value grammar.
 *
 * Grammar (one rule per line; `#` starts a comment; blank lines are fine):
 *
 *	global|process KEY=VALUE...
 *	uid N KEY=VALUE... | uid N delete
 *	cgroup PATH KEY=VALUE... | cgroup PATH delete
 *	reset
 *
 * A line sets the keys it names and keeps the others; a new uid or cgroup
 * rule starts unlimited, in enforce mode.  `reset` restores the load-time
 * defaults (the module parameters) and deletes every uid and cgroup rule.
 * Sizes take a binary K, M, G or T suffix; max_pinned also takes a
 * percentage of RAM (0% to 100%); every limit takes `unlimited`.
 * count=registered|distinct (global and process rules) says what the rule's
 * max_pinned counts: every registration in full, or the union of the
 * ranges pinned in each address space (distinct.c).  Reading
 * `limits` prints the whole policy in this grammar, starting with `reset`,
 * so that writing it back restores exactly that policy.
 *
 * A cgroup rule names a path from the root of the cgroup v2 hierarchy,
 * and binds whatever cgroup is there (policy.c); a new rule needs a cgroup
 * at its path when it is written.
 *
 * A line is read into a struct mrpin_line: what it does (reset, set keys,
 * delete), the rule it is about, and the keys it names with their values;
 * mrpin_limits_merge() then sets exactly those keys of a rule.
 */
#include <linux/bitops.h>
#include <linux/cgroup.h>
#include <linux/ctype.h>
#include <linux/cred.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/uidgid.h>

#include "mrpin.h"

static const char *const mrpin_rule_scope_names[MRPIN_NR_RULE_SCOPES] = {
	MRPIN_RULE_SCOPE_NAMES
};

static const char *const mrpin_key_names[MRPIN_NR_KEYS] = {
	MRPIN_KEY_NAMES
};

static const char *const mrpin_stack_actions[MRPIN_NR_STACK_ACTIONS] = {
	MRPIN_STACK_ACTION_NAMES
};

/* --- values --- */

static u64 mrpin_ram_percent(unsigned int pct)
{
	return div_u64(mrpin_ram_bytes() * pct, 100);
}

/* Decimal digits only: no sign, no white space, no base prefix. */
static int mrpin_parse_u64(const char *s, const char **end, u64 *val)
{
	u64 v = 0;

	if (!isdigit(*s))
		return -EINVAL;
	for (; isdigit(*s); s++) {
		if (check_mul_overflow(v, (u64)10, &v) ||
		    check_add_overflow(v, (u64)(*s - '0'), &v))
			return -ERANGE;
	}
	*end = s;
	*val = v;
	return 0;
}

static int mrpin_parse_bytes(const char *s, u64 *val)
{
	static const char suffixes[] = "KMGT";
	const char *end, *p;
	u64 v;
	int ret;

	if (!strcmp(s, "unlimited")) {
		*val = MRPIN_UNLIMITED;
		return 0;
	}
	ret = mrpin_parse_u64(s, &end, &v);
	if (ret)
		return ret;
	if (*end) {
		p = strchr(suffixes, toupper(*end));
		if (!p || end[1])
			return -EINVAL;
		if (v > U64_MAX >> (10 * (p - suffixes + 1)))
			return -ERANGE;
		v <<= 10 * (p - suffixes + 1);
	}
	*val = v;
	return 0;
}

static int mrpin_parse_count(const char *s, u64 *val)
{
	const char *end;
	int ret;

	if (!strcmp(s, "unlimited")) {
		*val = MRPIN_UNLIMITED;
		return 0;
	}
	ret = mrpin_parse_u64(s, &end, val);
	return ret ? ret : *end ? -EINVAL : 0;
}

static const char *const mrpin_on_off[] = { MRPIN_ON_OFF_NAMES };
static const char *const mrpin_counts[] = { MRPIN_COUNT_NAMES };

/* "on" or "off" into *@flag. */
static int mrpin_parse_on_off(const char *s, bool *flag, const char **why)
{
	int i = match_string(mrpin_on_off, ARRAY_SIZE(mrpin_on_off), s);

	if (i < 0) {
		*why = "bad value";
		return -EINVAL;
	}
	*flag = i;
	return 0;
}

/**
 * mrpin_parse_key() - set one key of a rule from its text
 * @lim: the rule's limits
 * @key: the key
 * @val: its value, as written
 * @why: set to what is wrong, on error
 *
 * Context: any context.
 * Return: 0, or -EINVAL (the value is bad or out of range).
 */
int mrpin_parse_key(struct mrpin_limits *lim, enum mrpin_key key,
		    const char *val, const char **why)
{
	size_t len = strlen(val);
	const char *end;
	u64 v;
	int ret;

	switch (key) {
	case MRPIN_KEY_MAX_PINNED:
		if (len && val[len - 1] == '%') {
			ret = mrpin_parse_u64(val, &end, &v);
			if (ret || end != val + len - 1)
				break;
			if (v > 100) {
				*why = "percentage above 100";
				return -EINVAL;
			}
			lim->pct = v;
			lim->pct_set = true;
			lim->max[key] = mrpin_ram_percent(v);
			return 0;
		}
		ret = mrpin_parse_bytes(val, &v);
		if (ret)
			break;
		lim->pct = 0;
		lim->pct_set = false;
		lim->max[key] = v;
		return 0;
	case MRPIN_KEY_MAX_PIN_SIZE:
		ret = mrpin_parse_bytes(val, &v);
		if (ret)
			break;
		lim->max[key] = v;
		return 0;
	case MRPIN_KEY_MAX_PINS:
		ret = mrpin_parse_count(val, &v);
		if (ret)
			break;
		lim->max[key] = v;
		return 0;
	case MRPIN_KEY_ACTION:
		ret = -EINVAL;
		if (!strcmp(val, "enforce"))
			lim->warn = false;
		else if (!strcmp(val, "warn"))
			lim->warn = true;
		else
			break;
		return 0;
	case MRPIN_KEY_COUNT:
		ret = match_string(mrpin_counts, ARRAY_SIZE(mrpin_counts), val);
		if (ret < 0)
			break;
		lim->distinct = ret;
		return 0;
	case MRPIN_KEY_STACK:
		ret = match_string(mrpin_stack_actions,
				   MRPIN_NR_STACK_ACTIONS, val);
		if (ret < 0)
			break;
		lim->stack = ret;
		return 0;
	case MRPIN_KEY_OVERSIZE:
		ret = mrpin_parse_bytes(val, &v);
		if (ret)
			break;
		lim->oversize = v;
		return 0;
	case MRPIN_KEY_MR_TABLE_WARN:
		ret = -EINVAL;
		if (!len || val[len - 1] != '%')
			break;
		ret = mrpin_parse_u64(val, &end, &v);
		if (ret || end != val + len - 1)
			break;
		if (v > 100) {
			*why = "percentage above 100";
			return -EINVAL;
		}
		lim->mr_table_pct = v;
		return 0;
	case MRPIN_KEY_CALLSITES:
		return mrpin_parse_on_off(val, &lim->callsites, why);
	case MRPIN_KEY_LOG_FAILURES:
		return mrpin_parse_on_off(val, &lim->log_failures, why);
	default:
		ret = -EINVAL;
	}
	*why = ret == -ERANGE ? "number too large" : "bad value";
	return -EINVAL;
}

/**
 * mrpin_limits_unlimited() - limits that limit nothing, in enforce mode
 * @lim: the limits to clear
 *
 * Context: any context.
 */
void mrpin_limits_unlimited(struct mrpin_limits *lim)
{
	int key;

	memset(lim, 0, sizeof(*lim));
	for (key = 0; key < MRPIN_NR_LIMIT_KEYS; key++)
		lim->max[key] = MRPIN_UNLIMITED;
}

/* --- lines --- */

/* Undo the octal escapes (\ooo) the views use for white space. */
static int mrpin_unescape(char *dst, const char *src, size_t size)
{
	size_t n = 0;

	while (*src) {
		char c = *src++;

		if (c == '\\') {
			if (src[0] < '0' || src[0] > '3' ||
			    src[1] < '0' || src[1] > '7' ||
			    src[2] < '0' || src[2] > '7')
				return -EINVAL;
			c = (src[0] - '0') << 6 | (src[1] - '0') << 3 |
			    (src[2] - '0');
			src += 3;
			if (!c)
				return -EINVAL;
		}
		if (n + 1 >= size)
			return -EINVAL;
		dst[n++] = c;
	}
	dst[n] = '\0';
	return 0;
}

static int mrpin_parse_uid(const char *tok, u64 *id)
{
	const char *end;
	kuid_t kuid;
	u64 v;

	if (mrpin_parse_u64(tok, &end, &v) || *end || v > U32_MAX)
		return -EINVAL;
	kuid = make_kuid(current_user_ns(), v);
	if (!uid_valid(kuid))
		return -EINVAL;
	*id = from_kuid(&init_user_ns, kuid);
	return 0;
}

/* Runs of '/' made one, no '/' at the end: as cgroup_path() writes paths. */
static void mrpin_path_tidy(char *path)
{
	char *in, *out = path;

	for (in = path; *in; in++)
		if (*in != '/' || out == path || out[-1] != '/')
			*out++ = *in;
	if (out > path + 1 && out[-1] == '/')
		out--;
	*out = '\0';
}

/*
 * The cgroup path @tok, unescaped and tidied in place; it must fit a
 * rule's path.  Paths are from the root of the hierarchy, and the kernel
 * resolves them from the writer's cgroup namespace (cgroup_get_from_path()):
 * a writer whose namespace has another root is refused.  A new rule needs
 * a cgroup at its path (a typo is an error, not a rule that binds
 * nothing); a delete (@del) names a rule, whose cgroup may be gone.
 */
static int mrpin_parse_cgroup(char *tok, bool del, const char **why)
{
	struct cgroup *cgrp;
	bool root;

	if (mrpin_unescape(tok, tok, MRPIN_PATH_MAX) || tok[0] != '/') {
		*why = "expected a cgroup path starting with /";
		return -EINVAL;
	}
	mrpin_path_tidy(tok);
	cgrp = cgroup_get_from_path("/");
	root = !IS_ERR(cgrp) && !cgroup_parent(cgrp);
	if (!IS_ERR(cgrp))
		cgroup_put(cgrp);
	if (!root) {
		*why = "cgroup rules are written from the initial cgroup namespace";
		return -EINVAL;
	}
	if (del)
		return 0;
	cgrp = cgroup_get_from_path(tok);
	if (IS_ERR(cgrp)) {
		*why = "no such cgroup";
		return -EINVAL;
	}
	cgroup_put(cgrp);
	return 0;
}

/*
 * The KEY=VALUE words of a line into l->lim, each key at most once (noted
 * in l->set), the global rule's own keys only on the global rule, count=
 * only on the global and process rules (the union of pinned ranges is per
 * address space).
 */
static int mrpin_parse_keys(struct mrpin_line *l, char **toks, int n,
			    const char **why)
{
	bool global = l->scope == MRPIN_SCOPE_GLOBAL;
	bool per_mm = global || l->scope == MRPIN_SCOPE_PROCESS;
	char *val;
	int i, key;

	if (!n) {
		*why = "expected KEY=VALUE";
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		val = strchr(toks[i], '=');
		if (!val) {
			*why = "expected KEY=VALUE";
			return -EINVAL;
		}
		*val++ = '\0';
		key = match_string(mrpin_key_names, MRPIN_NR_KEYS, toks[i]);
		if (key < 0) {
			*why = "unknown key";
			return -EINVAL;
		}
		if (key >= MRPIN_KEY_GLOBAL_ONLY && !global) {
			*why = "key only valid on the global rule";
			return -EINVAL;
		}
		if (key == MRPIN_KEY_COUNT && !per_mm) {
			*why = "key only valid on the global and process rules";
			return -EINVAL;
		}
		if (__test_and_set_bit(key, &l->set)) {
			*why = "key given twice";
			return -EINVAL;
		}
		if (mrpin_parse_key(&l->lim, key, val, why))
			return -EINVAL;
	}
	return 0;
}

/*
 * The most words a line that can be valid has: a scope, a uid or cgroup,
 * each key once.  (Room for every word a 256-byte line can hold would put
 * a kilobyte of pointers on the stack.)
 */
#define MRPIN_MAX_TOKENS (2 + MRPIN_NR_KEYS)

/**
 * mrpin_parse_line() - read one line of the grammar
 * @line: the line, comment and newline removed; its words are cut in
 *	place, and l->path points into it
 * @l: what the line says
 * @why: set to what is wrong, on error
 *
 * Checks everything a line can get wrong by itself; whether a rule to
 * delete exists and whether there is room for a new one are for the
 * policy to say (mrpin_policy_apply_line()).
 *
 * Context: process context (a cgroup path is resolved).
 * Return: 0, or -EINVAL.
 */
int mrpin_parse_line(char *line, struct mrpin_line *l, const char **why)
{
	char *toks[MRPIN_MAX_TOKENS], *tok;
	int n = 0, scope;

	memset(l, 0, sizeof(*l));
	while ((tok = strsep(&line, " \t\r"))) {
		if (!*tok)
			continue;
		if (n == MRPIN_MAX_TOKENS) {
			*why = "too many words (each key at most once)";
			return -EINVAL;
		}
		toks[n++] = tok;
	}
	if (!n) {
		l->op = MRPIN_LINE_EMPTY;
		return 0;
	}

	if (!strcmp(toks[0], "reset")) {
		if (n > 1) {
			*why = "reset takes no argument";
			return -EINVAL;
		}
		l->op = MRPIN_LINE_RESET;
		return 0;
	}
	scope = match_string(mrpin_rule_scope_names, MRPIN_NR_RULE_SCOPES,
			     toks[0]);
	if (scope < 0) {
		*why = "unknown scope";
		return -EINVAL;
	}
	l->scope = scope;
	if (scope == MRPIN_SCOPE_GLOBAL || scope == MRPIN_SCOPE_PROCESS) {
		if (n > 1 && !strcmp(toks[1], "delete")) {
			*why = "the global and process rules cannot be deleted";
			return -EINVAL;
		}
		l->op = MRPIN_LINE_SET;
		return mrpin_parse_keys(l, toks + 1, n - 1, why);
	}

	if (n < 2) {
		*why = scope == MRPIN_SCOPE_UID ? "expected a uid" :
						  "expected a cgroup path";
		return -EINVAL;
	}
	if (scope == MRPIN_SCOPE_UID) {
		if (mrpin_parse_uid(toks[1], &l->id)) {
			*why = "expected a uid";
			return -EINVAL;
		}
	} else if (mrpin_parse_cgroup(toks[1], n > 2 &&
				      !strcmp(toks[2], "delete"), why)) {
		return -EINVAL;
	}
	l->path = scope == MRPIN_SCOPE_CGROUP ? toks[1] : "";

	if (n > 2 && !strcmp(toks[2], "delete")) {
		if (n > 3) {
			*why = "delete takes no argument";
			return -EINVAL;
		}
		l->op = MRPIN_LINE_DELETE;
		return 0;
	}
	l->op = MRPIN_LINE_SET;
	return mrpin_parse_keys(l, toks + 2, n - 2, why);
}

/**
 * mrpin_limits_merge() - set the keys a line names, keep the others
 * @lim: a rule's limits
 * @l: a line that sets keys (MRPIN_LINE_SET)
 *
 * Context: any context.
 */
void mrpin_limits_merge(struct mrpin_limits *lim, const struct mrpin_line *l)
{
	const struct mrpin_limits *src = &l->lim;
	unsigned int key;

	for_each_set_bit(key, &l->set, MRPIN_NR_KEYS) {
		switch (key) {
		case MRPIN_KEY_MAX_PINNED:
			lim->pct = src->pct;
			lim->pct_set = src->pct_set;
			fallthrough;
		case MRPIN_KEY_MAX_PINS:
		case MRPIN_KEY_MAX_PIN_SIZE:
			lim->max[key] = src->max[key];
			break;
		case MRPIN_KEY_ACTION:
			lim->warn = src->warn;
			break;
		case MRPIN_KEY_COUNT:
			lim->distinct = src->distinct;
			break;
		case MRPIN_KEY_STACK:
			lim->stack = src->stack;
			break;
		case MRPIN_KEY_OVERSIZE:
			lim->oversize = src->oversize;
			break;
		case MRPIN_KEY_MR_TABLE_WARN:
			lim->mr_table_pct = src->mr_table_pct;
			break;
		case MRPIN_KEY_CALLSITES:
			lim->callsites = src->callsites;
			break;
		case MRPIN_KEY_LOG_FAILURES:
			lim->log_failures = src->log_failures;
			break;
		}
	}
}

/* --- writing rules back --- */

static void mrpin_seq_size(struct seq_file *m, u64 v)
{
	static const char suffixes[] = "KMGT";
	int i;

	if (v == MRPIN_UNLIMITED) {
		seq_puts(m, "unlimited");
		return;
	}
	for (i = ARRAY_SIZE(suffixes) - 2; i >= 0 && v; i--) {
		if (!(v & ((1ULL << (10 * (i + 1))) - 1))) {
			seq_printf(m, "%llu%c", v >> (10 * (i + 1)), suffixes[i]);
			return;
		}
	}
	seq_printf(m, "%llu", v);
}

/**
 * mrpin_print_limits() - a rule's keys, as the grammar writes them
 * @m: the seq_file
 * @lim: the rule's limits
 * @scope: the rule's scope: the global and process rules have count=, the
 *	global rule its own keys too
 *
 * Prints " KEY=VALUE" for every key of the rule, sizes with the largest
 * binary suffix that divides them: what mrpin_parse_line() reads back to
 * the same limits.
 *
 * Context: process context.
 */
void mrpin_print_limits(struct seq_file *m, const struct mrpin_limits *lim,
			enum mrpin_scope scope)
{
	seq_puts(m, " max_pinned=");
	if (lim->pct_set)
		seq_printf(m, "%u%%", lim->pct);
	else
		mrpin_seq_size(m, lim->max[MRPIN_MAX_PINNED]);
	seq_puts(m, " max_pins=");
	if (lim->max[MRPIN_MAX_PINS] == MRPIN_UNLIMITED)
		seq_puts(m, "unlimited");
	else
		seq_printf(m, "%llu", lim->max[MRPIN_MAX_PINS]);
	seq_puts(m, " max_pin_size=");
	mrpin_seq_size(m, lim->max[MRPIN_MAX_PIN_SIZE]);
	seq_printf(m, " action=%s", lim->warn ? "warn" : "enforce");
	if (scope == MRPIN_SCOPE_GLOBAL || scope == MRPIN_SCOPE_PROCESS)
		seq_printf(m, " count=%s", mrpin_counts[lim->distinct]);
	if (scope != MRPIN_SCOPE_GLOBAL)
		return;
	seq_printf(m, " stack=%s oversize=", mrpin_stack_actions[lim->stack]);
	mrpin_seq_size(m, lim->oversize);
	seq_printf(m, " mr_table_warn=%u%% callsites=%s log_failures=%s",
		   lim->mr_table_pct, mrpin_on_off[lim->callsites],
		   mrpin_on_off[lim->log_failures]);
}
