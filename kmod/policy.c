// SPDX-License-Identifier: GPL-2.0
/*
 * The policy: which limits apply to a pin, and the `limits` control file
 * (its file_operations serve two doors: /sys/kernel/security/mrpin/limits,
 * securityfs.c, which lockdown leaves alone, and debugfs' own, debugfs.c).
 *
 * Rules.  `global` limits the whole machine, `process` every process alike,
 * `uid N` the sum over one user's processes and `cgroup PATH` the sum over
 * a cgroup v2 subtree (a pin charges its cgroup and every ancestor, so a
 * limit on any ancestor holds everything below it).  Every rule has the
 * same keys: max_pinned (bytes), max_pins (live pins), max_pin_size (the
 * bytes of one pin) and action (enforce, or warn: allow, log and count).
 *
 * Storage.  The policy is one immutable snapshot, struct mrpin_policy,
 * published with RCU: the pin path reads it under rcu_read_lock() without
 * any lock, and a write to `limits` builds a complete new snapshot from a
 * copy of the current one and swaps it in.  That is what makes a write a
 * transaction: every line takes effect, or (on the first error) none.  uid
 * and cgroup rules sit in one array sorted by (scope, id), searched by
 * halves; a cgroup rule is keyed by the cgroup's id, resolved from its
 * path when the rule is written.
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
 * percentage of RAM (0% to 100%); every limit takes `unlimited`.  Reading
 * `limits` prints the whole policy in this grammar, starting with `reset`,
 * so that writing it back restores exactly that policy.
 *
 * Locking: mrpin_policy_lock (mutex) serialises writers; readers use RCU.
 */
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/ctype.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/ratelimit.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "mrpin.h"

#define MRPIN_WRITE_MAX SZ_64K
#define MRPIN_LINE_MAX 256
#define MRPIN_RULES_MAX 1024

const char *const mrpin_scope_names[MRPIN_NR_SCOPES] = {
	[MRPIN_SCOPE_GLOBAL] = "global",
	[MRPIN_SCOPE_PROCESS] = "process",
	[MRPIN_SCOPE_UID] = "uid",
	[MRPIN_SCOPE_CGROUP] = "cgroup",
	[MRPIN_SCOPE_DEVICE] = "device",
};

/*
 * The keys of the grammar: the limits (every rule), the action (every
 * rule), then the global rule's own keys (MRPIN_KEY_GLOBAL_ONLY and up).
 */
enum {
	MRPIN_KEY_ACTION = MRPIN_NR_LIMIT_KEYS,
	MRPIN_KEY_STACK,
	MRPIN_KEY_OVERSIZE,
	MRPIN_KEY_MR_TABLE_WARN,
	MRPIN_KEY_CALLSITES,
	MRPIN_NR_KEYS,
	MRPIN_KEY_GLOBAL_ONLY = MRPIN_KEY_STACK,
};

static const char *const mrpin_key_names[MRPIN_NR_KEYS] = {
	[MRPIN_MAX_PINNED] = "max_pinned",
	[MRPIN_MAX_PINS] = "max_pins",
	[MRPIN_MAX_PIN_SIZE] = "max_pin_size",
	[MRPIN_KEY_ACTION] = "action",
	[MRPIN_KEY_STACK] = "stack",
	[MRPIN_KEY_OVERSIZE] = "oversize",
	[MRPIN_KEY_MR_TABLE_WARN] = "mr_table_warn",
	[MRPIN_KEY_CALLSITES] = "callsites",
};

static const char *const mrpin_stack_actions[] = {
	[MRPIN_STACK_ALLOW] = "allow",
	[MRPIN_STACK_WARN] = "warn",
	[MRPIN_STACK_DENY] = "deny",
};

const char *const mrpin_event_key_names[MRPIN_NR_EVENT_KEYS] = {
	[MRPIN_MAX_PINNED] = "max_pinned",
	[MRPIN_MAX_PINS] = "max_pins",
	[MRPIN_MAX_PIN_SIZE] = "max_pin_size",
	[MRPIN_EVENT_STACK] = "stack",
	[MRPIN_EVENT_MR_TABLE] = "mr_table",
};

/**
 * struct mrpin_rule - a uid or cgroup rule
 * @scope:	MRPIN_SCOPE_UID or MRPIN_SCOPE_CGROUP
 * @id:		the uid (initial namespace) or the cgroup id
 * @path:	cgroup rules: the path as written
 * @lim:	the limits
 */
struct mrpin_rule {
	enum mrpin_scope scope;
	u64 id;
	char path[MRPIN_PATH_MAX];
	struct mrpin_limits lim;
};

/**
 * struct mrpin_policy - one complete, immutable policy
 * @global:	the machine's limits
 * @process:	every process's limits
 * @nr_rules:	entries in @rules
 * @rules:	uid and cgroup rules, sorted by (scope, id)
 * @rcu:	frees the snapshot after the last reader
 */
struct mrpin_policy {
	struct mrpin_limits global;
	struct mrpin_limits process;
	unsigned int nr_rules;
	struct mrpin_rule *rules;
	struct rcu_head rcu;
};

static struct mrpin_policy __rcu *mrpin_policy;
/* Serialises writers of mrpin_policy. */
static DEFINE_MUTEX(mrpin_policy_lock);
static DEFINE_RATELIMIT_STATE(mrpin_limits_rs, 5 * HZ, 20);

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

/* Set one key of @lim from its text; on error, *why says what is wrong. */
static int mrpin_set_key(struct mrpin_limits *lim, int key, const char *val,
			 const char **why)
{
	size_t len = strlen(val);
	const char *end;
	u64 v;
	int ret;

	switch (key) {
	case MRPIN_MAX_PINNED:
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
	case MRPIN_MAX_PIN_SIZE:
		ret = mrpin_parse_bytes(val, &v);
		if (ret)
			break;
		lim->max[key] = v;
		return 0;
	case MRPIN_MAX_PINS:
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
	case MRPIN_KEY_STACK:
		ret = match_string(mrpin_stack_actions,
				   ARRAY_SIZE(mrpin_stack_actions), val);
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
		ret = -EINVAL;
		if (!strcmp(val, "on"))
			lim->callsites = true;
		else if (!strcmp(val, "off"))
			lim->callsites = false;
		else
			break;
		return 0;
	default:
		ret = -EINVAL;
	}
	*why = ret == -ERANGE ? "number too large" : "bad value";
	return -EINVAL;
}

static void mrpin_limits_unlimited(struct mrpin_limits *lim)
{
	int key;

	memset(lim, 0, sizeof(*lim));
	for (key = 0; key < MRPIN_NR_LIMIT_KEYS; key++)
		lim->max[key] = MRPIN_UNLIMITED;
}

/* --- module parameters: the load-time defaults --- */

/**
 * struct mrpin_param - a module parameter that sets one key of a rule
 * @scope:	MRPIN_SCOPE_GLOBAL or MRPIN_SCOPE_PROCESS
 * @key:	the key
 * @value:	its text, as given (validated)
 */
struct mrpin_param {
	enum mrpin_scope scope;
	int key;
	char value[32];
};

static int mrpin_param_set(const char *val, const struct kernel_param *kp)
{
	struct mrpin_param *param = kp->arg;
	struct mrpin_limits lim;
	char buf[sizeof(param->value)], *value;
	const char *why;

	if (strscpy(buf, val, sizeof(buf)) < 0) {
		pr_err("mrpin: %s=%.*s...: longer than %zu bytes\n", kp->name,
		       (int)sizeof(buf) - 1, val, sizeof(buf) - 1);
		return -EINVAL;
	}
	value = strim(buf);
	if (mrpin_set_key(&lim, param->key, value, &why)) {
		pr_err("mrpin: %s=%s: %s\n", kp->name, value, why);
		return -EINVAL;
	}
	strscpy(param->value, value, sizeof(param->value));
	return 0;
}

static int mrpin_param_get(char *buffer, const struct kernel_param *kp)
{
	const struct mrpin_param *param = kp->arg;

	return sysfs_emit(buffer, "%s\n", param->value);
}

static const struct kernel_param_ops mrpin_param_ops = {
	.set = mrpin_param_set,
	.get = mrpin_param_get,
};

#define MRPIN_PARAM(_name, _scope, _key, _default, _desc)		\
	static struct mrpin_param mrpin_param_##_name = {		\
		.scope = MRPIN_SCOPE_##_scope,				\
		.key = _key,						\
		.value = _default,					\
	};								\
	module_param_cb(_name, &mrpin_param_ops, &mrpin_param_##_name,	\
			0444);						\
	MODULE_PARM_DESC(_name, _desc)

MRPIN_PARAM(global_max_pinned, GLOBAL, MRPIN_MAX_PINNED, "50%",
	    "Most bytes pinned on the machine: bytes (K/M/G/T), N% of RAM or unlimited (default 50%)");
MRPIN_PARAM(global_max_pins, GLOBAL, MRPIN_MAX_PINS, "unlimited",
	    "Most live pins on the machine (default unlimited)");
MRPIN_PARAM(global_max_pin_size, GLOBAL, MRPIN_MAX_PIN_SIZE, "unlimited",
	    "Largest single pin on the machine, in bytes (default unlimited)");
MRPIN_PARAM(global_action, GLOBAL, MRPIN_KEY_ACTION, "enforce",
	    "enforce (refuse) or warn (allow, log, count) for the global rule");
MRPIN_PARAM(global_stack, GLOBAL, MRPIN_KEY_STACK, "warn",
	    "allow, warn or deny the registration of stack memory (default warn)");
MRPIN_PARAM(global_oversize, GLOBAL, MRPIN_KEY_OVERSIZE, "1G",
	    "Flag pins of this many bytes or more as oversized (default 1G)");
MRPIN_PARAM(global_mr_table_warn, GLOBAL, MRPIN_KEY_MR_TABLE_WARN, "80%",
	    "Warn when a device's MR table is this full (default 80%)");
MRPIN_PARAM(callsites, GLOBAL, MRPIN_KEY_CALLSITES, "off",
	    "Record up to 8 user return addresses per pin: on or off (default off)");
MRPIN_PARAM(process_max_pinned, PROCESS, MRPIN_MAX_PINNED, "unlimited",
	    "Most bytes pinned by one process (default unlimited)");
MRPIN_PARAM(process_max_pins, PROCESS, MRPIN_MAX_PINS, "unlimited",
	    "Most live pins of one process (default unlimited)");
MRPIN_PARAM(process_max_pin_size, PROCESS, MRPIN_MAX_PIN_SIZE, "unlimited",
	    "Largest single pin of a process, in bytes (default unlimited)");
MRPIN_PARAM(process_action, PROCESS, MRPIN_KEY_ACTION, "enforce",
	    "enforce (refuse) or warn (allow, log, count) for the process rule");

static struct mrpin_param *const mrpin_params[] = {
	&mrpin_param_global_max_pinned,
	&mrpin_param_global_max_pins,
	&mrpin_param_global_max_pin_size,
	&mrpin_param_global_action,
	&mrpin_param_global_stack,
	&mrpin_param_global_oversize,
	&mrpin_param_global_mr_table_warn,
	&mrpin_param_callsites,
	&mrpin_param_process_max_pinned,
	&mrpin_param_process_max_pins,
	&mrpin_param_process_max_pin_size,
	&mrpin_param_process_action,
};

/* The global and process rules as the module parameters set them. */
static void mrpin_policy_defaults(struct mrpin_policy *policy)
{
	const struct mrpin_param *param;
	const char *why;
	int i;

	mrpin_limits_unlimited(&policy->global);
	mrpin_limits_unlimited(&policy->process);
	policy->nr_rules = 0;
	for (i = 0; i < ARRAY_SIZE(mrpin_params); i++) {
		param = mrpin_params[i];
		/* Validated when set: cannot fail. */
		WARN_ON(mrpin_set_key(param->scope == MRPIN_SCOPE_GLOBAL ?
				      &policy->global : &policy->process,
				      param->key, param->value, &why));
	}
}

/* --- snapshots --- */

/* Rules sort by (scope, id). */
static int mrpin_rule_key_cmp(const struct mrpin_rule *rule,
			      enum mrpin_scope scope, u64 id)
{
	if (rule->scope != scope)
		return rule->scope < scope ? -1 : 1;
	if (rule->id != id)
		return rule->id < id ? -1 : 1;
	return 0;
}

static int mrpin_rule_cmp(const void *a, const void *b)
{
	const struct mrpin_rule *y = b;

	return mrpin_rule_key_cmp(a, y->scope, y->id);
}

/*
 * A binary search by (scope, id), with no struct mrpin_rule for a key: the
 * pin path calls it, and a rule is over 300 bytes.
 */
static struct mrpin_rule *mrpin_rule_find(const struct mrpin_policy *policy,
					  enum mrpin_scope scope, u64 id)
{
	unsigned int lo = 0, hi = policy->nr_rules, mid;
	int cmp;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		cmp = mrpin_rule_key_cmp(&policy->rules[mid], scope, id);
		if (!cmp)
			return &policy->rules[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void mrpin_policy_free(struct mrpin_policy *policy)
{
	if (policy) {
		kvfree(policy->rules);
		kfree(policy);
	}
}

static void mrpin_policy_free_rcu(struct rcu_head *rcu)
{
	mrpin_policy_free(container_of(rcu, struct mrpin_policy, rcu));
}

/* A copy of @old with room for @extra more rules. */
static struct mrpin_policy *mrpin_policy_dup(const struct mrpin_policy *old,
					     unsigned int extra)
{
	struct mrpin_policy *policy;
	unsigned int room;

	policy = kmemdup(old, sizeof(*old), GFP_KERNEL);
	if (!policy)
		return NULL;
	room = min_t(unsigned int, old->nr_rules + extra, MRPIN_RULES_MAX);
	policy->rules = kvcalloc(max(room, 1U), sizeof(*policy->rules),
				 GFP_KERNEL);
	if (!policy->rules) {
		kfree(policy);
		return NULL;
	}
	memcpy(policy->rules, old->rules,
	       old->nr_rules * sizeof(*policy->rules));
	return policy;
}

/**
 * mrpin_policy_global() - the global rule of the current policy
 *
 * Context: under rcu_read_lock(), which keeps the returned limits.
 * Return: the global rule's limits and settings.
 */
const struct mrpin_limits *mrpin_policy_global(void)
{
	return &rcu_dereference(mrpin_policy)->global;
}

/**
 * mrpin_policy_limits() - the limits of a scope in the current policy
 * @scope: the scope
 * @id: the uid or cgroup id (ignored for global and process)
 * @path: set to the cgroup rule's path (cgroup scope)
 *
 * Context: under rcu_read_lock(), which keeps the returned limits.
 * Return: the limits, or NULL when no rule applies.
 */
const struct mrpin_limits *mrpin_policy_limits(enum mrpin_scope scope, u64 id,
					       const char **path)
{
	struct mrpin_policy *policy = rcu_dereference(mrpin_policy);
	struct mrpin_rule *rule;

	switch (scope) {
	case MRPIN_SCOPE_GLOBAL:
		return &policy->global;
	case MRPIN_SCOPE_PROCESS:
		return &policy->process;
	default:
		rule = mrpin_rule_find(policy, scope, id);
		if (!rule)
			return NULL;
		*path = rule->path;
		return &rule->lim;
	}
}

/* --- the grammar --- */

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

/*
 * The cgroup path @tok, unescaped in place (an escape is never shorter than
 * what it stands for); it must fit a rule's path.
 */
static int mrpin_parse_cgroup(char *tok, u64 *id, const char **why)
{
	struct cgroup *cgrp;

	if (mrpin_unescape(tok, tok, MRPIN_PATH_MAX) || tok[0] != '/') {
		*why = "expected a cgroup path starting with /";
		return -EINVAL;
	}
	cgrp = cgroup_get_from_path(tok);
	if (IS_ERR(cgrp)) {
		*why = "no such cgroup";
		return -EINVAL;
	}
	*id = cgroup_id(cgrp);
	cgroup_put(cgrp);
	return 0;
}

/*
 * Apply the KEY=VALUE tokens to @lim; each key at most once, the global
 * rule's own keys only on the global rule.
 */
static int mrpin_apply_keys(struct mrpin_limits *lim, bool global,
			    char **toks, int n, const char **why)
{
	unsigned long seen = 0;
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
		if (__test_and_set_bit(key, &seen)) {
			*why = "key given twice";
			return -EINVAL;
		}
		if (mrpin_set_key(lim, key, val, why))
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

/* Apply one line (comment and newline removed) to the policy being built. */
static int mrpin_apply_line(struct mrpin_policy *policy, char *line,
			    const char **why)
{
	char *toks[MRPIN_MAX_TOKENS], *tok;
	struct mrpin_rule *rule;
	int n = 0, scope;
	u64 id;

	while ((tok = strsep(&line, " \t\r"))) {
		if (!*tok)
			continue;
		if (n == MRPIN_MAX_TOKENS) {
			*why = "too many words (each key at most once)";
			return -EINVAL;
		}
		toks[n++] = tok;
	}
	if (!n)
		return 0;

	if (!strcmp(toks[0], "reset")) {
		if (n > 1) {
			*why = "reset takes no argument";
			return -EINVAL;
		}
		mrpin_policy_defaults(policy);
		return 0;
	}
	scope = match_string(mrpin_scope_names, MRPIN_NR_RULE_SCOPES, toks[0]);
	if (scope < 0) {
		*why = "unknown scope";
		return -EINVAL;
	}
	if (scope == MRPIN_SCOPE_GLOBAL || scope == MRPIN_SCOPE_PROCESS) {
		if (n > 1 && !strcmp(toks[1], "delete")) {
			*why = "the global and process rules cannot be deleted";
			return -EINVAL;
		}
		return mrpin_apply_keys(scope == MRPIN_SCOPE_GLOBAL ?
					&policy->global : &policy->process,
					scope == MRPIN_SCOPE_GLOBAL,
					toks + 1, n - 1, why);
	}

	if (n < 2) {
		*why = scope == MRPIN_SCOPE_UID ? "expected a uid" :
						  "expected a cgroup path";
		return -EINVAL;
	}
	if (scope == MRPIN_SCOPE_UID) {
		if (mrpin_parse_uid(toks[1], &id)) {
			*why = "expected a uid";
			return -EINVAL;
		}
	} else if (mrpin_parse_cgroup(toks[1], &id, why)) {
		return -EINVAL;
	}
	rule = mrpin_rule_find(policy, scope, id);

	if (n > 2 && !strcmp(toks[2], "delete")) {
		if (n > 3) {
			*why = "delete takes no argument";
			return -EINVAL;
		}
		if (!rule) {
			*why = "no such rule to delete";
			return -EINVAL;
		}
		memmove(rule, rule + 1, (policy->rules + policy->nr_rules -
					 rule - 1) * sizeof(*rule));
		policy->nr_rules--;
		return 0;
	}
	if (!rule) {
		if (policy->nr_rules >= MRPIN_RULES_MAX) {
			*why = "too many rules";
			return -EINVAL;
		}
		rule = &policy->rules[policy->nr_rules++];
		memset(rule, 0, sizeof(*rule));
		rule->scope = scope;
		rule->id = id;
		if (scope == MRPIN_SCOPE_CGROUP)
			strscpy(rule->path, toks[1], sizeof(rule->path));
		mrpin_limits_unlimited(&rule->lim);
		/* Keep the array sorted for mrpin_rule_find(). */
		sort(policy->rules, policy->nr_rules, sizeof(*rule),
		     mrpin_rule_cmp, NULL);
		rule = mrpin_rule_find(policy, scope, id);
	}
	return mrpin_apply_keys(&rule->lim, false, toks + 2, n - 2, why);
}

static void mrpin_limits_error(unsigned int line, const char *why)
{
	if (__ratelimit(&mrpin_limits_rs))
		pr_warn("mrpin: limits: line %u: %s\n", line, why);
}

/*
 * Writing `limits` applies every line of one write() as one transaction;
 * see the grammar at the top of this file.  Needs CAP_SYS_ADMIN, whatever
 * the file's mode.  Anything wrong (unknown scope or key, bad number,
 * overflow, percentage above 100, a key given twice, a missing cgroup, a
 * rule to delete that does not exist, a line over 256 bytes, a write over
 * 64 KiB, a NUL byte) fails the whole write with -EINVAL, changes nothing
 * and logs "mrpin: limits: line N: <reason>".
 */
static ssize_t mrpin_limits_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	struct mrpin_policy *old, *policy;
	unsigned int lineno = 0, lines;
	const char *why = NULL;
	char *buf, *pos, *line;
	int ret = 0;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (len > MRPIN_WRITE_MAX) {
		mrpin_limits_error(0, "write over 64 KiB");
		return -EINVAL;
	}
	buf = memdup_user_nul(ubuf, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	if (strlen(buf) != len) {
		lineno = 1;
		for (pos = buf; *pos; pos++)
			lineno += *pos == '\n';
		mrpin_limits_error(lineno, "NUL byte");
		ret = -EINVAL;
		goto out_free;
	}
	lines = 1;
	for (pos = buf; *pos; pos++)
		lines += *pos == '\n';

	mutex_lock(&mrpin_policy_lock);
	old = rcu_dereference_protected(mrpin_policy,
					lockdep_is_held(&mrpin_policy_lock));
	policy = mrpin_policy_dup(old, lines);
	if (!policy) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	pos = buf;
	while ((line = strsep(&pos, "\n"))) {
		lineno++;
		if (strlen(line) > MRPIN_LINE_MAX) {
			why = "line longer than 256 bytes";
			break;
		}
		line[strcspn(line, "#")] = '\0';
		if (mrpin_apply_line(policy, line, &why))
			break;
		why = NULL;
	}
	if (why) {
		mrpin_limits_error(lineno, why);
		mrpin_policy_free(policy);
		ret = -EINVAL;
		goto out_unlock;
	}
	rcu_assign_pointer(mrpin_policy, policy);
	call_rcu(&old->rcu, mrpin_policy_free_rcu);
out_unlock:
	mutex_unlock(&mrpin_policy_lock);
out_free:
	kfree(buf);
	return ret ? ret : len;
}

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

static void mrpin_seq_limits(struct seq_file *m, const struct mrpin_limits *lim)
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
}

/* The global rule's own keys. */
static void mrpin_seq_global(struct seq_file *m, const struct mrpin_limits *lim)
{
	seq_printf(m, " stack=%s oversize=", mrpin_stack_actions[lim->stack]);
	mrpin_seq_size(m, lim->oversize);
	seq_printf(m, " mr_table_warn=%u%% callsites=%s", lim->mr_table_pct,
		   lim->callsites ? "on" : "off");
}

static int mrpin_rule_path_cmp(const void *a, const void *b)
{
	const struct mrpin_rule *const *x = a, *const *y = b;

	return strcmp((*x)->path, (*y)->path);
}

static int mrpin_limits_show(struct seq_file *m, void *v)
{
	const struct mrpin_rule **cgs;
	struct mrpin_policy *policy;
	unsigned int i, nr_cgs = 0;

	mutex_lock(&mrpin_policy_lock);
	policy = rcu_dereference_protected(mrpin_policy,
					   lockdep_is_held(&mrpin_policy_lock));
	cgs = kvcalloc(max(policy->nr_rules, 1U), sizeof(*cgs), GFP_KERNEL);
	if (!cgs) {
		mutex_unlock(&mrpin_policy_lock);
		return -ENOMEM;
	}
	seq_puts(m, "# mrpin limits: write this back to restore this policy\n");
	seq_puts(m, "reset\nglobal");
	mrpin_seq_limits(m, &policy->global);
	mrpin_seq_global(m, &policy->global);
	seq_puts(m, "\nprocess");
	mrpin_seq_limits(m, &policy->process);
	seq_putc(m, '\n');
	for (i = 0; i < policy->nr_rules; i++) {
		const struct mrpin_rule *rule = &policy->rules[i];

		if (rule->scope == MRPIN_SCOPE_CGROUP) {
			cgs[nr_cgs++] = rule;
			continue;
		}
		seq_printf(m, "uid %llu", rule->id);
		mrpin_seq_limits(m, &rule->lim);
		seq_putc(m, '\n');
	}
	sort(cgs, nr_cgs, sizeof(*cgs), mrpin_rule_path_cmp, NULL);
	for (i = 0; i < nr_cgs; i++) {
		seq_puts(m, "cgroup ");
		seq_escape(m, cgs[i]->path, " \t\n\\#");
		mrpin_seq_limits(m, &cgs[i]->lim);
		seq_putc(m, '\n');
	}
	mutex_unlock(&mrpin_policy_lock);
	kvfree(cgs);
	return 0;
}

static int mrpin_limits_open(struct inode *inode, struct file *file)
{
	return single_open(file, mrpin_limits_show, NULL);
}

const struct file_operations mrpin_limits_fops = {
	.owner = THIS_MODULE,
	.open = mrpin_limits_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.write = mrpin_limits_write,
	.release = single_release,
};

/**
 * mrpin_policy_init() - the load-time policy, from the module parameters
 *
 * Context: process context.
 * Return: 0 or -ENOMEM.
 */
int mrpin_policy_init(void)
{
	struct mrpin_policy *policy;

	policy = kzalloc_obj(*policy);
	if (!policy)
		return -ENOMEM;
	mrpin_policy_defaults(policy);
	RCU_INIT_POINTER(mrpin_policy, policy);
	return 0;
}

/**
 * mrpin_policy_exit() - free the policy
 *
 * Context: process context, once nothing reads the policy any more.
 */
void mrpin_policy_exit(void)
{
	mrpin_policy_free(rcu_dereference_protected(mrpin_policy, true));
	RCU_INIT_POINTER(mrpin_policy, NULL);
	/* Wait for snapshots replaced by writes. */
	rcu_barrier();
}
