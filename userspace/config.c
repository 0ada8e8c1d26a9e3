// SPDX-License-Identifier: GPL-2.0
/*
 * The policy grammar: the module's `limits` file, and config files.
 *
 *	global|process KEY=VALUE...
 *	uid UID|USER KEY=VALUE...     uid UID|USER delete
 *	cgroup PATH KEY=VALUE...      cgroup PATH delete
 *	reset
 *
 * `#` starts a comment, blank lines are fine; keys are max_pinned (bytes
 * with a K/M/G/T binary suffix, N% of RAM, or unlimited), max_pins (a count
 * or unlimited), max_pin_size (bytes or unlimited) and action (enforce or
 * warn); the global and process rules also take count (registered or
 * distinct: what their max_pinned counts), the global rule its own keys
 * (stack, oversize, mr_table_warn, callsites, log_failures).  Config files
 * add user names to the module's grammar: the module takes uids only.
 * This file checks everything the module checks, and more (users,
 * cgroups that exist, rules to delete that exist), so that a problem is
 * reported as FILE:LINE:COLUMN before anything is written; each line is
 * then normalised (uid numbers, exact values) into one transaction for one
 * write().
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mrpinctl.h"

#define RULES_MAX MRPIN_RULES_MAX
#define MAX_TOKENS 128
#define MAX_ERRORS 20

const char *const scope_names[NR_SCOPES] = { MRPIN_RULE_SCOPE_NAMES };

static const char *const actions[] = { MRPIN_ACTION_NAMES, NULL };
static const char *const stack_actions[] = { MRPIN_STACK_ACTION_NAMES, NULL };
static const char *const on_off[] = { MRPIN_ON_OFF_NAMES, NULL };
static const char *const count_modes[] = { MRPIN_COUNT_NAMES, NULL };

/*
 * The keys; K_COUNT is the global and process rules' only, and from
 * K_GLOBAL_ONLY on, the global rule's own.
 */
const struct key_desc keys[NR_KEYS] = {
	[K_MAX_PINNED] = { MRPIN_KEY_NAME_MAX_PINNED, KT_BYTES_PCT, NULL,
		"bytes with an optional K, M, G or T suffix, N% of RAM, or unlimited" },
	[K_MAX_PINS] = { MRPIN_KEY_NAME_MAX_PINS, KT_COUNT, NULL,
		"a number of pins or unlimited" },
	[K_MAX_PIN_SIZE] = { MRPIN_KEY_NAME_MAX_PIN_SIZE, KT_BYTES, NULL,
		"bytes with an optional K, M, G or T suffix, or unlimited" },
	[K_ACTION] = { MRPIN_KEY_NAME_ACTION, KT_WORD, actions, "enforce or warn" },
	[K_COUNT] = { MRPIN_KEY_NAME_COUNT, KT_WORD, count_modes, "registered or distinct" },
	[K_STACK] = { MRPIN_KEY_NAME_STACK, KT_WORD, stack_actions, "allow, warn or deny" },
	[K_OVERSIZE] = { MRPIN_KEY_NAME_OVERSIZE, KT_BYTES, NULL,
		"bytes with an optional K, M, G or T suffix, or unlimited" },
	[K_MR_TABLE_WARN] = { MRPIN_KEY_NAME_MR_TABLE_WARN, KT_PCT, NULL,
		"a percentage, 0% to 100%" },
	[K_CALLSITES] = { MRPIN_KEY_NAME_CALLSITES, KT_WORD, on_off, "on or off" },
	[K_LOG_FAILURES] = { MRPIN_KEY_NAME_LOG_FAILURES, KT_WORD, on_off, "on or off" },
};

/*
 * Keys that a newer module has and this tool does not know, learned from
 * the module's own `limits`: taken as they are, for the module to check.
 */
static char learned_keys[512] = " ";
static bool learning;

static bool key_learned(const char *key, size_t len)
{
	char word[80];

	if (len + 3 > sizeof(word))
		return false;
	snprintf(word, sizeof(word), " %.*s ", (int)len, key);
	if (strstr(learned_keys, word))
		return true;
	if (!learning || strlen(learned_keys) + len + 2 > sizeof(learned_keys))
		return false;
	strcat(learned_keys, word + 1);
	return true;
}

static int err_at(struct cfg_err *e, int tok, size_t off, const char *fmt, ...)
	__printf(4, 5);

static int err_at(struct cfg_err *e, int tok, size_t off, const char *fmt, ...)
{
	va_list ap;

	e->tok = tok;
	e->off = off;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static int lookup(const char *const *names, int n, const char *s, size_t len)
{
	int i;

	for (i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(names[i], s, len))
			return i;
	return -1;
}

/* --- values --- */

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/* Bytes: digits with an optional K/M/G/T suffix, or unlimited. */
static const char *parse_bytes(const char *s, uint64_t *v)
{
	static const char suffixes[] = "KMGT";
	const char *end, *p;
	int shift;

	if (!strcmp(s, "unlimited")) {
		*v = UNLIMITED;
		return NULL;
	}
	if (!parse_u64(s, &end, v))
		return *s >= '0' && *s <= '9' ? "number too large" : "";
	if (!*end)
		return NULL;
	p = strchr(suffixes, end[0] & ~0x20);
	if (!p || !end[0] || end[1])
		return "";
	shift = 10 * (int)(p - suffixes + 1);
	if (*v > UINT64_MAX >> shift)
		return "number too large";
	*v <<= shift;
	return NULL;
}

/* A percentage: N%, 0 to 100. */
static const char *parse_pct(const char *val, uint64_t *v)
{
	size_t len = strlen(val);
	const char *end;

	if (!len || val[len - 1] != '%')
		return "";
	if (!parse_u64(val, &end, v))
		return all_digits(val) ? "number too large" : "";
	if (end != val + len - 1)
		return "";
	return *v > 100 ? "percentage above 100" : NULL;
}

/* Set key @k of @r from @val; on error, a message (empty: bad value). */
static const char *set_value(struct rule *r, int k, const char *val)
{
	const char *why;
	uint64_t v = 0;
	int i;

	switch (keys[k].type) {
	case KT_BYTES_PCT:
		r->is_pct = strchr(val, '%') != NULL;
		if (!r->is_pct)
			return parse_bytes(val, &r->val[k]);
		why = parse_pct(val, &v);
		r->pct = (unsigned int)v;
		r->val[k] = 0;
		return why;
	case KT_BYTES:
		return parse_bytes(val, &r->val[k]);
	case KT_PCT:
		return parse_pct(val, &r->val[k]);
	case KT_COUNT:
		if (!strcmp(val, "unlimited")) {
			r->val[k] = UNLIMITED;
			return NULL;
		}
		if (!parse_u64_all(val, &r->val[k]))
			return all_digits(val) ? "number too large" : "";
		return NULL;
	case KT_WORD:
		for (i = 0; keys[k].words[i]; i++) {
			if (!strcmp(val, keys[k].words[i])) {
				r->val[k] = (uint64_t)i;
				return NULL;
			}
		}
		return "";
	}
	return "";
}

/* A key learned from the module: " key=value" kept as it is. */
static int extra_key(const char *tok, size_t klen, int i, struct rule *r,
		     struct cfg_err *e)
{
	size_t len = strlen(r->extra);
	char word[80];

	snprintf(word, sizeof(word), " %.*s=", (int)klen, tok);
	if (strstr(r->extra, word))
		return err_at(e, i, 0, "'%.*s' given twice", (int)klen, tok);
	if (len + strlen(tok) + 2 > sizeof(r->extra))
		return err_at(e, i, 0, "too many keys");
	snprintf(r->extra + len, sizeof(r->extra) - len, " %s", tok);
	return 0;
}

static int find_key(const char *tok, size_t len)
{
	int k;

	for (k = 0; k < NR_KEYS; k++)
		if (strlen(keys[k].name) == len && !strncmp(keys[k].name, tok, len))
			return k;
	return -1;
}

/* The keys a rule of @scope takes besides the four of every rule. */
static const char *scope_keys(enum scope scope)
{
	if (scope == SC_GLOBAL)
		return " (global also: count, stack, oversize, mr_table_warn, callsites, log_failures)";
	if (scope == SC_PROCESS)
		return " (process also: count)";
	return "";
}

/* Is key @k one that rules of @scope do not take?  Then why, in @e. */
static int key_out_of_scope(int k, enum scope scope, int i,
			    struct cfg_err *e)
{
	if (k >= K_GLOBAL_ONLY && scope != SC_GLOBAL)
		return err_at(e, i, 0, "'%s' is a key of the global rule only",
			      keys[k].name);
	if (k == K_COUNT && scope != SC_GLOBAL && scope != SC_PROCESS)
		return err_at(e, i, 0,
			      "'%s' is a key of the global and process rules only",
			      keys[k].name);
	return 0;
}

/* Token @i, "KEY=VALUE", into @r. */
static int parse_key(char *tok, int i, struct rule *r, struct cfg_err *e)
{
	char *eq = strchr(tok, '=');
	const char *why;
	size_t len;
	int k;

	if (!eq)
		return err_at(e, i, 0,
			      "expected KEY=VALUE, found '%s' (keys: max_pinned, max_pins, max_pin_size, action)",
			      tok);
	len = (size_t)(eq - tok);
	k = find_key(tok, len);
	if (k < 0 && len && key_learned(tok, len))
		return extra_key(tok, len, i, r, e);
	if (k < 0)
		return err_at(e, i, 0,
			      "unknown key '%.*s': expected max_pinned, max_pins, max_pin_size or action%s",
			      (int)len, tok, scope_keys(r->scope));
	if (key_out_of_scope(k, r->scope, i, e))
		return -1;
	if (r->set & (1U << k))
		return err_at(e, i, 0, "'%s' given twice", keys[k].name);
	why = set_value(r, k, eq + 1);
	if (why && *why)
		return err_at(e, i, len + 1, "bad value '%s' for %s: %s", eq + 1,
			      keys[k].name, why);
	if (why)
		return err_at(e, i, len + 1, "bad value '%s' for %s: expected %s",
			      eq + 1, keys[k].name, keys[k].expected);
	r->set |= 1U << k;
	return 0;
}

/* --- scopes --- */

/*
 * A cgroup path as the module takes it: starts with '/', \ooo escapes,
 * at most 255 bytes; normalised here (no repeated or trailing '/').
 */
static int parse_cgroup(const char *tok, int i, struct rule *r,
			struct cfg_err *e)
{
	char *d = r->cgroup, *end = r->cgroup + sizeof(r->cgroup) - 1;
	const char *s = tok, *comp;
	char c;

	if (*s != '/')
		return err_at(e, i, 0,
			      "expected a cgroup path starting with '/', found '%s'",
			      tok);
	while (*s) {
		c = *s;
		if (c == '\\') {
			if (s[1] < '0' || s[1] > '3' || s[2] < '0' ||
			    s[2] > '7' || s[3] < '0' || s[3] > '7' ||
			    !((s[1] - '0') | (s[2] - '0') | (s[3] - '0')))
				return err_at(e, i, (size_t)(s - tok),
					      "bad escape in the cgroup path: expected \\ooo (octal, as in /proc/self/mountinfo)");
			c = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				   (s[3] - '0'));
			s += 3;
		}
		s++;
		if (c == '/' && d > r->cgroup && d[-1] == '/')
			continue;
		if (d == end)
			return err_at(e, i, 0,
				      "cgroup path longer than %d bytes",
				      CGROUP_PATH_MAX - 1);
		*d++ = c;
	}
	if (d > r->cgroup + 1 && d[-1] == '/')
		d--;
	*d = '\0';
	for (comp = r->cgroup; comp; comp = strchr(comp + 1, '/')) {
		if (!strcmp(comp, "/.") || !strncmp(comp, "/./", 3) ||
		    !strcmp(comp, "/..") || !strncmp(comp, "/../", 4))
			return err_at(e, i, 0,
				      "'.' and '..' are not allowed in a cgroup path");
	}
	return 0;
}

static int parse_uid(const char *tok, int i, struct rule *r,
		     struct cfg_err *e)
{
	if (user_lookup(tok, &r->uid))
		return 0;
	if (all_digits(tok))
		return err_at(e, i, 0, "uid %s out of range", tok);
	return err_at(e, i, 0, "no such user '%s'", tok);
}

/*
 * Parse one line of the grammar, already split into @ntok tokens (at least
 * one).  On error, @e says which token (@ntok: after the last one) and why.
 */
int rule_parse(char **toks, int ntok, struct rule *r, struct cfg_err *e)
{
	int i = 1, s;

	memset(r, 0, sizeof(*r));
	if (!strcmp(toks[0], "reset")) {
		r->op = OP_RESET;
		return ntok > 1 ? err_at(e, 1, 0, "'reset' takes no argument") :
				  0;
	}
	s = lookup(scope_names, NR_SCOPES, toks[0], strlen(toks[0]));
	if (s < 0)
		return err_at(e, 0, 0,
			      "unknown scope '%s': expected global, process, uid, cgroup or reset",
			      toks[0]);
	r->scope = (enum scope)s;
	r->op = OP_SET;
	if (s == SC_UID || s == SC_CGROUP) {
		if (ntok < 2)
			return err_at(e, 1, 0, "expected %s after '%s'",
				      s == SC_UID ? "a user name or uid" :
						    "a cgroup path",
				      toks[0]);
		if (s == SC_UID ? parse_uid(toks[1], 1, r, e) :
				  parse_cgroup(toks[1], 1, r, e))
			return -1;
		i = 2;
	}
	if (i < ntok && !strcmp(toks[i], "delete")) {
		if (s == SC_GLOBAL || s == SC_PROCESS)
			return err_at(e, i, 0,
				      "the global and process rules cannot be deleted (set them, or use reset)");
		if (ntok > i + 1)
			return err_at(e, i + 1, 0, "'delete' takes no argument");
		r->op = OP_DELETE;
		return 0;
	}
	if (i == ntok)
		return err_at(e, i, 0, "expected KEY=VALUE%s after '%s'",
			      i > 1 ? " or delete" : "", toks[i - 1]);
	for (; i < ntok; i++)
		if (parse_key(toks[i], i, r, e))
			return -1;
	return 0;
}

/* The mount point of cgroup v2 (root "/"), or NULL; looked up once. */
static const char *cgroup2_mount(void)
{
	static char mnt[4096];
	static bool done;
	char *line = NULL, *w[16], *dash;
	size_t cap = 0;
	FILE *f;

	if (done)
		return *mnt ? mnt : NULL;
	done = true;
	f = fopen("/proc/self/mountinfo", "re");
	while (f && getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		dash = strstr(line, " - ");
		if (!dash || strncmp(dash, " - cgroup2 ", 11))
			continue;
		*dash = '\0';
		if (split_words(line, w, 16) < 5 || strcmp(w[3], "/"))
			continue;
		unescape(w[4]);
		snprintf(mnt, sizeof(mnt), "%s", w[4]);
		break;
	}
	free(line);
	if (f)
		fclose(f);
	return *mnt ? mnt : NULL;
}

/*
 * A cgroup rule's cgroup must exist (the module resolves it), but for a
 * delete: the module finds by its path a rule that outlived its cgroup (a
 * job's rule, deleted after the job's cgroup was removed).
 */
int rule_check_cgroup(const struct rule *r, struct cfg_err *e)
{
	const char *mnt = cgroup2_mount();
	char path[4096 + CGROUP_PATH_MAX];
	struct stat st;

	if (r->op != OP_SET || r->scope != SC_CGROUP || !mnt)
		return 0;
	snprintf(path, sizeof(path), "%s%s", mnt, r->cgroup);
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return 0;
	return err_at(e, 1, 0, "no such cgroup '%s' (%s does not exist)",
		      r->cgroup, path);
}

/* --- output: the module's grammar --- */

/*
 * A path as the module writes it: \ooo for every byte but printable
 * ASCII, and for backslash and '#'.
 */
void escape_path(const char *path, char *buf, size_t len)
{
	size_t n = 0;

	for (; *path && n + 5 < len; path++) {
		unsigned char c = (unsigned char)*path;

		if (c <= ' ' || c >= 0x7f || c == '\\' || c == '#')
			n += (size_t)sprintf(buf + n, "\\%03o",
					     (unsigned char)*path);
		else
			buf[n++] = *path;
	}
	buf[n] = '\0';
}

/* Bytes with the largest exact binary suffix, as the module prints. */
static void fmt_size(uint64_t v, char *buf, size_t len)
{
	static const char suffixes[] = "KMGT";
	int i;

	if (v == UNLIMITED) {
		snprintf(buf, len, "unlimited");
		return;
	}
	for (i = 3; i >= 0 && v; i--) {
		if (!(v & ((1ULL << (10 * (i + 1))) - 1))) {
			snprintf(buf, len, "%llu%c",
				 (unsigned long long)(v >> (10 * (i + 1))),
				 suffixes[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* The value of key @k of @r, as the grammar writes it. */
void rule_value(const struct rule *r, int k, char *buf, size_t len)
{
	uint64_t v = r->val[k];

	switch (keys[k].type) {
	case KT_BYTES_PCT:
		if (r->is_pct) {
			snprintf(buf, len, "%u%%", r->pct);
			return;
		}
		/* fall through */
	case KT_BYTES:
		fmt_size(v, buf, len);
		return;
	case KT_COUNT:
		if (v == UNLIMITED)
			snprintf(buf, len, "unlimited");
		else
			snprintf(buf, len, "%llu", (unsigned long long)v);
		return;
	case KT_PCT:
		snprintf(buf, len, "%llu%%", (unsigned long long)v);
		return;
	case KT_WORD:
		snprintf(buf, len, "%s", keys[k].words[v]);
		return;
	}
}

/* "uid 1000", "cgroup /a\040b", "global": the rule's scope and argument. */
void rule_scope(const struct rule *r, char *buf, size_t len)
{
	char path[CGROUP_PATH_MAX * 4];

	if (r->scope == SC_UID) {
		snprintf(buf, len, "uid %u", r->uid);
	} else if (r->scope == SC_CGROUP) {
		escape_path(r->cgroup, path, sizeof(path));
		snprintf(buf, len, "cgroup %s", path);
	} else {
		snprintf(buf, len, "%s", scope_names[r->scope]);
	}
}

/* One normalised line; its length. */
int rule_format(const struct rule *r, char *buf, size_t len)
{
	char val[32];
	size_t n;
	int k;

	if (r->op == OP_RESET)
		return snprintf(buf, len, "reset");
	rule_scope(r, buf, len);
	n = strlen(buf);
	if (r->op == OP_DELETE)
		return snprintf(buf + n, len - n, " delete") + (int)n;
	for (k = 0; k < NR_KEYS; k++) {
		if (!(r->set & (1U << k)))
			continue;
		rule_value(r, k, val, sizeof(val));
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, " %s=%s",
				      keys[k].name, val);
	}
	n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s", r->extra);
	return (int)n;
}

/*
 * max_pinned of @r in bytes (UNLIMITED when unlimited), N% being a share of
 * @ram as the module computes it; false when it is N% of an unknown RAM.
 */
bool rule_max_pinned(const struct rule *r, uint64_t ram, uint64_t *max)
{
	*max = r->val[K_MAX_PINNED];
	if (!r->is_pct)
		return true;
	*max = ram / 100 * r->pct + ram % 100 * r->pct / 100;
	return ram;
}

/*
 * Does @r's max_pinned count distinct bytes (count=distinct)?  A module
 * that does not print count= counts every registration.
 */
bool rule_counts_distinct(const struct rule *r)
{
	return (r->set & (1U << K_COUNT)) && r->val[K_COUNT] == COUNT_DISTINCT;
}

/*
 * What the global rule @r holds against its max_pinned, from @s: the
 * distinct bytes when it counts them and the module gives them, else
 * every registration's.
 */
uint64_t rule_usage(const struct rule *r, const struct stats *s)
{
	if (rule_counts_distinct(r) && s->distinct_known)
		return s->distinct_bytes;
	return s->pinned_bytes;
}

/* --- the policy, to check a transaction against --- */

static void rule_unlimited(struct rule *r, enum scope s)
{
	memset(r, 0, sizeof(*r));
	r->scope = s;
	r->val[K_MAX_PINNED] = r->val[K_MAX_PINS] = UNLIMITED;
	r->val[K_MAX_PIN_SIZE] = r->val[K_OVERSIZE] = UNLIMITED;
	/* The keys of every rule; count= only once a module prints it. */
	r->set = (1U << K_MAX_PINNED) | (1U << K_MAX_PINS) |
		 (1U << K_MAX_PIN_SIZE) | (1U << K_ACTION);
}

void policy_init(struct policy *p)
{
	memset(p, 0, sizeof(*p));
	rule_unlimited(&p->global, SC_GLOBAL);
	rule_unlimited(&p->process, SC_PROCESS);
}

void policy_free(struct policy *p)
{
	free(p->rules);
	p->rules = NULL;
	p->nrules = 0;
}

static bool same_rule(const struct rule *a, const struct rule *b)
{
	if (a->scope != b->scope)
		return false;
	return a->scope == SC_UID ? a->uid == b->uid :
				    !strcmp(a->cgroup, b->cgroup);
}

static void merge(struct rule *dst, const struct rule *src)
{
	size_t len = strlen(dst->extra);
	int k;

	for (k = 0; k < NR_KEYS; k++)
		if (src->set & (1U << k))
			dst->val[k] = src->val[k];
	dst->set |= src->set;
	if (src->set & (1U << K_MAX_PINNED)) {
		dst->is_pct = src->is_pct;
		dst->pct = src->pct;
	}
	/* Keys learned from the module: the latest given last. */
	if (len + strlen(src->extra) < sizeof(dst->extra))
		strcat(dst->extra + len, src->extra);
}

/* Uid rules by uid, then cgroup rules by path, as the module lists them. */
static int rule_cmp(const void *a, const void *b)
{
	const struct rule *x = a, *y = b;

	if (x->scope != y->scope)
		return x->scope < y->scope ? -1 : 1;
	if (x->scope == SC_UID)
		return x->uid < y->uid ? -1 : x->uid > y->uid;
	return strcmp(x->cgroup, y->cgroup);
}

/* Apply one line to @p, as the module would; errors as the module's. */
int policy_apply(struct policy *p, const struct rule *r, struct cfg_err *e)
{
	char what[CGROUP_PATH_MAX * 4 + 16];
	struct rule *found = NULL;
	size_t i;

	if (r->op == OP_RESET) {
		policy_free(p);
		return 0;
	}
	if (r->scope == SC_GLOBAL || r->scope == SC_PROCESS) {
		merge(r->scope == SC_GLOBAL ? &p->global : &p->process, r);
		return 0;
	}
	for (i = 0; i < p->nrules && !found; i++)
		if (same_rule(&p->rules[i], r))
			found = &p->rules[i];
	if (r->op == OP_DELETE) {
		if (!found && p->known) {
			rule_scope(r, what, sizeof(what));
			return err_at(e, 1, 0, "no rule '%s' to delete", what);
		}
		if (found)
			memmove(found, found + 1, (size_t)(p->rules + p->nrules -
						 found - 1) * sizeof(*found));
		p->nrules -= found != NULL;
		return 0;
	}
	if (!found) {
		if (p->nrules >= RULES_MAX)
			return err_at(e, 0, 0, "too many rules: the module holds at most %d uid and cgroup rules",
				      RULES_MAX);
		p->rules = xrealloc(p->rules, (p->nrules + 1) * sizeof(*r));
		found = &p->rules[p->nrules++];
		rule_unlimited(found, r->scope);
		found->uid = r->uid;
		memcpy(found->cgroup, r->cgroup, sizeof(r->cgroup));
	}
	merge(found, r);
	qsort(p->rules, p->nrules, sizeof(*r), rule_cmp);
	return 0;
}

/* --- lines --- */

/*
 * Split a line at spaces, tabs and carriage returns (as the module does),
 * after cutting the comment; the 1-based column of each token in @cols.
 * Returns the number of tokens, MAX_TOKENS + 1 when there are too many.
 */
static int tokenize(char *line, char **toks, size_t *cols, size_t *end)
{
	char *p = line;
	int n = 0;

	line[strcspn(line, "#")] = '\0';
	*end = 1;
	for (;;) {
		p += strspn(p, " \t\r");
		if (!*p)
			return n;
		if (n == MAX_TOKENS)
			return n + 1;
		toks[n] = p;
		cols[n++] = (size_t)(p - line) + 1;
		p += strcspn(p, " \t\r");
		*end = (size_t)(p - line) + 1;
		if (*p)
			*p++ = '\0';
	}
}

/* Parse a policy text the module printed (the `limits` file) into @p. */
int policy_parse_text(struct policy *p, const char *src, char *text)
{
	char *toks[MAX_TOKENS + 1], *line, *pos = text;
	size_t cols[MAX_TOKENS + 1], end;
	unsigned int lineno = 0;
	struct cfg_err e;
	struct rule r;
	int n, ret = 0;

	learning = true;
	while (!ret && (line = strsep(&pos, "\n"))) {
		lineno++;
		n = tokenize(line, toks, cols, &end);
		if (!n)
			continue;
		if (n > MAX_TOKENS) {
			pr_err("%s:%u: too many words", src, lineno);
			ret = EXIT_FAIL;
		} else if (rule_parse(toks, n, &r, &e) ||
			   policy_apply(p, &r, &e)) {
			pr_err("%s:%u:%zu: %s", src, lineno,
			       e.tok < n ? cols[e.tok] + e.off : end, e.msg);
			ret = EXIT_FAIL;
		}
	}
	learning = false;
	return ret;
}

static unsigned int count_lines(const char *s)
{
	unsigned int n = 1;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The module's current policy. */
int policy_load(struct policy *p)
{
	char *buf, *path;
	size_t len;
	int ret;

	policy_init(p);
	path = limits_path();
	ret = read_whole(path, &buf, &len);
	if (ret) {
		ret = debugfs_check() ? EXIT_FAIL :
		      limits_refused(path, ret, false);
		free(path);
		return ret;
	}
	if (len && buf[len - 1] != '\n') {
		pr_err("%s:%u: truncated line (no newline at the end)", path,
		       count_lines(buf));
		ret = EXIT_FAIL;
	} else {
		ret = policy_parse_text(p, path, buf);
	}
	p->known = !ret;
	if (ret)
		policy_free(p);
	free(path);
	free(buf);
	return ret;
}

/* --- transactions --- */

void txn_init(struct txn *t)
{
	memset(t, 0, sizeof(*t));
	t->text = xstrdup("");
}

void txn_free(struct txn *t)
{
	size_t i;

	for (i = 0; i < t->nlines; i++)
		free(t->origin[i]);
	free(t->origin);
	free(t->text);
	memset(t, 0, sizeof(*t));
}

/* Append one parsed rule, normalised, with where it came from. */
int txn_add_rule(struct txn *t, const struct rule *r, const char *origin)
{
	char line[2 * LIMITS_LINE_MAX];
	int len = rule_format(r, line, sizeof(line));

	if (len > LIMITS_LINE_MAX) {
		pr_err("%s: the rule is longer than %d bytes: %.40s...", origin,
		       LIMITS_LINE_MAX, line);
		t->nerrors++;
		return EXIT_USAGE;
	}
	t->text = xrealloc(t->text, t->len + (size_t)len + 2);
	memcpy(t->text + t->len, line, (size_t)len);
	t->len += (size_t)len;
	t->text[t->len++] = '\n';
	t->text[t->len] = '\0';
	t->origin = xrealloc(t->origin, (t->nlines + 1) * sizeof(char *));
	t->origin[t->nlines++] = xstrdup(origin);
	return 0;
}

/* Report a problem at @file:@lineno:@col (when the line is a file's). */
static int report(struct txn *t, const char *file, unsigned int lineno,
		  size_t col, const char *msg)
{
	if (t->nerrors < MAX_ERRORS) {
		if (lineno)
			pr_err("%s:%u:%zu: %s", file, lineno, col, msg);
		else
			pr_err("%s: %s", file, msg);
	} else if (t->nerrors == MAX_ERRORS) {
		pr_err("too many errors; stopping");
	}
	t->nerrors++;
	return EXIT_USAGE;
}

/*
 * One line of a config file (or of the command line: @lineno 0): checked
 * against the grammar, the users, the cgroups and the policy @p, and added
 * to the transaction.
 */
int txn_add_line(struct txn *t, struct policy *p, const char *file,
		 unsigned int lineno, char *line)
{
	char *toks[MAX_TOKENS + 1], origin[4096];
	size_t cols[MAX_TOKENS + 1], end;
	struct cfg_err e;
	struct rule r;
	int n;

	n = tokenize(line, toks, cols, &end);
	if (!n)
		return 0;
	if (n > MAX_TOKENS)
		return report(t, file, lineno, 1, "too many words on the line");
	if (rule_parse(toks, n, &r, &e) || rule_check_cgroup(&r, &e) ||
	    policy_apply(p, &r, &e))
		return report(t, file, lineno,
			      e.tok < n ? cols[e.tok] + e.off : end, e.msg);
	if (lineno)
		snprintf(origin, sizeof(origin), "%s:%u", file, lineno);
	else
		snprintf(origin, sizeof(origin), "%s", file);
	return txn_add_rule(t, &r, origin);
}

/* Every line of @file ("-": standard input); all problems reported. */
int txn_add_file(struct txn *t, struct policy *p, const char *file)
{
	bool std = !strcmp(file, "-");
	const char *name = std ? "<stdin>" : file;
	unsigned int lineno = 0;
	size_t cap = 0, before = t->nerrors;
	char *line = NULL;
	ssize_t len;
	FILE *f;

	f = std ? stdin : fopen(file, "re");
	if (!f)
		return report(t, file, 0, 0, strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (strlen(line) != (size_t)len)
			report(t, name, lineno, strlen(line) + 1, "NUL byte");
		else
			txn_add_line(t, p, name, lineno, line);
	}
	if (ferror(f))
		report(t, name, 0, 0, strerror(errno));
	free(line);
	if (!std)
		fclose(f);
	return t->nerrors > before ? EXIT_USAGE : 0;
}
