// SPDX-License-Identifier: GPL-2.0
/*
 * The policy: which limits apply to a pin.
 *
 * Rules.  `global` limits the whole machine, `process` every process alike,
 * `uid N` the sum over one user's processes and `cgroup PATH` the sum over
 * a cgroup v2 subtree (a pin charges its cgroup and every ancestor, so a
 * limit on any ancestor holds everything below it).  Every rule has the
 * same keys: max_pinned (bytes), max_pins (live pins), max_pin_size (the
 * bytes of one pin) and action (enforce, or warn: allow, log and count).
 * While a cgroup rule stands, account.c keeps the record of its cgroup,
 * with the subtree's peak, even once the cgroup is removed: what a job's
 * epilog reads before it deletes the job's rule.
 *
 * A cgroup rule binds a path, not a cgroup: whatever cgroup is at that path
 * from the root of the hierarchy, as `limits` shows it.  A service or
 * container restarted in a new cgroup at the same path is bound as the old
 * one was; a rule outlives its cgroup and binds the next one made there.
 * The path is that of the initial cgroup namespace: a line written from
 * another one, whose paths are relative to its own root, is refused
 * (policy_parse.c).  account.c takes each cgroup's path when it first sees
 * a pin in it; a cgroup renamed afterwards keeps its old path for mrpin.
 *
 * Storage.  The policy is one immutable snapshot, struct mrpin_policy,
 * published with RCU: the pin path reads it under rcu_read_lock() without
 * any lock, and a transaction on `limits` builds a complete new snapshot
 * from a copy of the current one and swaps it in: every line takes effect,
 * or (on the first error) none.  uid and cgroup rules sit in one array
 * sorted by (scope, uid, path), searched by halves.
 *
 * Changes come as the lines written through one open file of `limits`
 * (ctl.c), checked as they come and applied at its close, read by
 * policy_parse.c; `reset` goes back to the module parameters (params.c).
 *
 * Locking: mrpin_policy_lock (mutex) serialises writers (and the reader of
 * the whole policy, mrpin_policy_show()); the pin path reads under RCU.
 */
#include <linux/cgroup.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "compat.h"
#include "mrpin.h"

/**
 * struct mrpin_rule - a uid or cgroup rule
 * @scope:	MRPIN_SCOPE_UID or MRPIN_SCOPE_CGROUP
 * @id:		the uid (initial namespace); 0 for a cgroup rule
 * @path:	cgroup rules: the path from the root; "" for a uid rule
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
 * @rules:	uid and cgroup rules, sorted by (scope, id, path)
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

/* --- snapshots --- */

/* Rules sort by (scope, id, path): uid rules by uid, cgroup rules by path. */
static int mrpin_rule_key_cmp(const struct mrpin_rule *rule,
			      enum mrpin_scope scope, u64 id, const char *path)
{
	if (rule->scope != scope)
		return rule->scope < scope ? -1 : 1;
	if (rule->id != id)
		return rule->id < id ? -1 : 1;
	return strcmp(rule->path, path);
}

static int mrpin_rule_cmp(const void *a, const void *b)
{
	const struct mrpin_rule *y = b;

	return mrpin_rule_key_cmp(a, y->scope, y->id, y->path);
}

/*
 * A binary search by (scope, id, path), with no struct mrpin_rule for a
 * key: the pin path calls it, and a rule is over 300 bytes.
 */
static struct mrpin_rule *mrpin_rule_find(const struct mrpin_policy *policy,
					  enum mrpin_scope scope, u64 id,
					  const char *path)
{
	unsigned int lo = 0, hi = policy->nr_rules, mid;
	int cmp;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		cmp = mrpin_rule_key_cmp(&policy->rules[mid], scope, id, path);
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
 * @id: the uid (ignored for the other scopes)
 * @path: the cgroup's path from the root (cgroup scope; else ignored)
 *
 * Context: under rcu_read_lock(), which keeps the returned limits.
 * Return: the limits, or NULL when no rule applies.
 */
const struct mrpin_limits *mrpin_policy_limits(enum mrpin_scope scope, u64 id,
					       const char *path)
{
	struct mrpin_policy *policy = rcu_dereference(mrpin_policy);
	struct mrpin_rule *rule;

	switch (scope) {
	case MRPIN_SCOPE_GLOBAL:
		return &policy->global;
	case MRPIN_SCOPE_PROCESS:
		return &policy->process;
	case MRPIN_SCOPE_UID:
		rule = mrpin_rule_find(policy, scope, id, "");
		break;
	default:
		rule = mrpin_rule_find(policy, scope, 0, path);
		break;
	}
	return rule ? &rule->lim : NULL;
}

/**
 * mrpin_policy_names_cgroup() - whether a cgroup rule names a path
 * @path: a cgroup's path from the root
 *
 * What account.c's reaper asks before it frees the record of a removed
 * cgroup, and the `cgroups` view before it lists a record without pins.
 *
 * Context: any context; takes rcu_read_lock() itself.
 * Return: true when the current policy has a rule `cgroup @path`.
 */
bool mrpin_policy_names_cgroup(const char *path)
{
	bool named;

	rcu_read_lock();
	named = mrpin_rule_find(rcu_dereference(mrpin_policy),
				MRPIN_SCOPE_CGROUP, 0, path);
	rcu_read_unlock();
	return named;
}

/* --- changes --- */

/* Apply one line (comment and newline removed) to the policy being built. */
static int mrpin_policy_apply_line(struct mrpin_policy *policy, char *text,
				   const char **why)
{
	struct mrpin_rule *rule;
	struct mrpin_line l;

	if (mrpin_parse_line(text, &l, why))
		return -EINVAL;
	switch (l.op) {
	case MRPIN_LINE_EMPTY:
		return 0;
	case MRPIN_LINE_RESET:
		mrpin_params_defaults(&policy->global, &policy->process);
		policy->nr_rules = 0;
		return 0;
	default:
		break;
	}
	if (l.scope == MRPIN_SCOPE_GLOBAL) {
		mrpin_limits_merge(&policy->global, &l);
		return 0;
	}
	if (l.scope == MRPIN_SCOPE_PROCESS) {
		mrpin_limits_merge(&policy->process, &l);
		return 0;
	}

	rule = mrpin_rule_find(policy, l.scope, l.id, l.path);
	if (l.op == MRPIN_LINE_DELETE) {
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
		rule->scope = l.scope;
		rule->id = l.id;
		strscpy(rule->path, l.path, sizeof(rule->path));
		mrpin_limits_unlimited(&rule->lim);
		/* Keep the array sorted for mrpin_rule_find(). */
		sort(policy->rules, policy->nr_rules, sizeof(*rule),
		     mrpin_rule_cmp, NULL);
		rule = mrpin_rule_find(policy, l.scope, l.id, l.path);
	}
	mrpin_limits_merge(&rule->lim, &l);
	return 0;
}

/**
 * mrpin_policy_write() - apply lines of policy text, as one transaction
 * @buf: the text, NUL-terminated, without NUL bytes; cut in place
 * @commit: publish the result; false: only check that every line applies
 * @lineno: set to the number of the line that failed
 * @why: set to what is wrong with it
 *
 * Builds a new snapshot from a copy of the current one, line by line, and
 * publishes it only if every line applies and @commit: on the first error
 * nothing changes.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad line (*lineno, *why); -ENOMEM.
 */
int mrpin_policy_write(char *buf, bool commit, unsigned int *lineno,
		       const char **why)
{
	struct mrpin_policy *old, *policy;
	unsigned int lines = 1;
	char *pos, *line;
	int ret = 0;

	for (pos = buf; *pos; pos++)
		lines += *pos == '\n';
	*lineno = 0;

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
		++*lineno;
		if (strlen(line) > MRPIN_LINE_MAX) {
			*why = "line longer than 256 bytes";
			ret = -EINVAL;
			break;
		}
		line[strcspn(line, "#")] = '\0';
		ret = mrpin_policy_apply_line(policy, line, why);
		if (ret)
			break;
	}
	if (ret || !commit) {
		mrpin_policy_free(policy);
		goto out_unlock;
	}
	rcu_assign_pointer(mrpin_policy, policy);
	call_rcu(&old->rcu, mrpin_policy_free_rcu);
out_unlock:
	mutex_unlock(&mrpin_policy_lock);
	return ret;
}

/* --- reading it back --- */

/**
 * mrpin_policy_show() - the whole policy, in the grammar
 * @m: the seq_file
 *
 * Starts with `reset`, so that writing it back restores exactly this
 * policy; cgroup rules sorted by path.
 *
 * Context: process context, may sleep.
 * Return: 0.
 */
int mrpin_policy_show(struct seq_file *m)
{
	struct mrpin_policy *policy;
	unsigned int i;

	mutex_lock(&mrpin_policy_lock);
	policy = rcu_dereference_protected(mrpin_policy,
					   lockdep_is_held(&mrpin_policy_lock));
	seq_puts(m, "# mrpin limits: write this back to restore this policy\n");
	seq_puts(m, "reset\nglobal");
	mrpin_print_limits(m, &policy->global, MRPIN_SCOPE_GLOBAL);
	seq_puts(m, "\nprocess");
	mrpin_print_limits(m, &policy->process, MRPIN_SCOPE_PROCESS);
	seq_putc(m, '\n');
	/* In the array's order: uid rules by uid, then cgroup rules by path. */
	for (i = 0; i < policy->nr_rules; i++) {
		const struct mrpin_rule *rule = &policy->rules[i];

		if (rule->scope == MRPIN_SCOPE_CGROUP) {
			seq_puts(m, "cgroup ");
			seq_escape(m, rule->path, mrpin_escape_set);
		} else {
			seq_printf(m, "uid %llu", rule->id);
		}
		mrpin_print_limits(m, &rule->lim, rule->scope);
		seq_putc(m, '\n');
	}
	mutex_unlock(&mrpin_policy_lock);
	return 0;
}

/**
 * mrpin_policy_init() - the load-time policy, from the module parameters
 *
 * Context: process context.
 * Return: 0 or -ENOMEM.
 */
int mrpin_policy_init(void)
{
	struct mrpin_policy *policy;

	policy = kzalloc_obj(*policy, GFP_KERNEL);
	if (!policy)
		return -ENOMEM;
	mrpin_params_defaults(&policy->global, &policy->process);
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
