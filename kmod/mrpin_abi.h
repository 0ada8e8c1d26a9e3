/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mrpin_abi.h: what mrpin's files say, in one place for the module, for
 * mrpinctl and for the selftests, instead of a copy in each.
 *
 * Plain C: no kernel type or header, so that user space includes it as it
 * is (mrpinctl builds with -I../kmod).  Names come as lists of designated
 * initializers, so that each side declares its own array:
 *
 *	static const char *const names[MRPIN_NR_RULE_SCOPES] = {
 *		MRPIN_RULE_SCOPE_NAMES
 *	};
 *
 * The `limits` control file's grammar is in policy_parse.c.
 */
#ifndef _MRPIN_ABI_H
#define _MRPIN_ABI_H

/* `limits`: the longest line (without its newline) and the largest write. */
#define MRPIN_LINE_MAX		256
#define MRPIN_WRITE_MAX		65536
/* A cgroup rule's path, with its NUL; and the most uid and cgroup rules. */
#define MRPIN_PATH_MAX		256
#define MRPIN_RULES_MAX		1024

/* The scopes of rules, then the one of events only (a device). */
enum mrpin_scope {
	MRPIN_SCOPE_GLOBAL,
	MRPIN_SCOPE_PROCESS,
	MRPIN_SCOPE_UID,
	MRPIN_SCOPE_CGROUP,
	MRPIN_NR_RULE_SCOPES,
	MRPIN_SCOPE_DEVICE = MRPIN_NR_RULE_SCOPES,
	MRPIN_NR_SCOPES,
};

#define MRPIN_RULE_SCOPE_NAMES					\
	[MRPIN_SCOPE_GLOBAL] = "global",			\
	[MRPIN_SCOPE_PROCESS] = "process",			\
	[MRPIN_SCOPE_UID] = "uid",				\
	[MRPIN_SCOPE_CGROUP] = "cgroup"
#define MRPIN_SCOPE_NAMES					\
	MRPIN_RULE_SCOPE_NAMES,					\
	[MRPIN_SCOPE_DEVICE] = "device"

/*
 * The limits of every rule (indexes of struct mrpin_limits.max[] in the
 * module); then what else an event can be about: the stack rule, a
 * device's MR table, and why a pin the kernel refused failed (action
 * `fail`, MRPIN_EVENT_FAIL and up, in the order of enum mrpin_fail_cause).
 */
enum mrpin_limit_key {
	MRPIN_MAX_PINNED,
	MRPIN_MAX_PINS,
	MRPIN_MAX_PIN_SIZE,
	MRPIN_NR_LIMIT_KEYS,
	MRPIN_EVENT_STACK = MRPIN_NR_LIMIT_KEYS,
	MRPIN_EVENT_MR_TABLE,
	MRPIN_EVENT_FAIL,
};

/*
 * Why the kernel's pin failed, from facts checked after it did:
 *   memlock	RLIMIT_MEMLOCK: no CAP_IPC_LOCK, and VmPin plus the pin over
 *		the limit (or the limit is 0: EPERM)
 *   unmapped	part of the range is not mapped (EFAULT)
 *   readonly	a writable pin of a read-only mapping (EFAULT)
 *   iomem	the range maps I/O memory or raw page frames (EFAULT)
 *   fault	EFAULT on a mapped range that allows the access: its pages
 *		could not be faulted in (a file mapping past its end...)
 *   invalid	EINVAL or EOVERFLOW: an empty or overflowing range
 *   nomem	ENOMEM with RLIMIT_MEMLOCK not in the way
 *   other	any other errno
 * and, not a pin's failure but the registration's:
 *   device	the device's driver refused the registration (its
 *		reg_user_mr() failed: its MR table full, its own limits),
 *		with no failure of the pin or limit of mrpin's before it
 */
enum mrpin_fail_cause {
	MRPIN_FAIL_MEMLOCK,
	MRPIN_FAIL_UNMAPPED,
	MRPIN_FAIL_READONLY,
	MRPIN_FAIL_IOMEM,
	MRPIN_FAIL_FAULT,
	MRPIN_FAIL_INVALID,
	MRPIN_FAIL_NOMEM,
	MRPIN_FAIL_OTHER,
	MRPIN_FAIL_DEVICE,
	MRPIN_NR_FAIL_CAUSES,
};

#define MRPIN_FAIL_CAUSE_NAMES					\
	[MRPIN_FAIL_MEMLOCK] = "memlock",			\
	[MRPIN_FAIL_UNMAPPED] = "unmapped",			\
	[MRPIN_FAIL_READONLY] = "readonly",			\
	[MRPIN_FAIL_IOMEM] = "iomem",				\
	[MRPIN_FAIL_FAULT] = "fault",				\
	[MRPIN_FAIL_INVALID] = "invalid",			\
	[MRPIN_FAIL_NOMEM] = "nomem",				\
	[MRPIN_FAIL_OTHER] = "other",				\
	[MRPIN_FAIL_DEVICE] = "device"

/* The `key` column of `events` (a failure's: its cause's name). */
#define MRPIN_EVENT_KEY_NAMES					\
	[MRPIN_MAX_PINNED] = "max_pinned",			\
	[MRPIN_MAX_PINS] = "max_pins",				\
	[MRPIN_MAX_PIN_SIZE] = "max_pin_size",			\
	[MRPIN_EVENT_STACK] = "stack",				\
	[MRPIN_EVENT_MR_TABLE] = "mr_table"

/*
 * The keys of the grammar: the limits and the action (every rule), what
 * max_pinned counts (the global and process rules), then the global rule's
 * own (MRPIN_KEY_GLOBAL_ONLY and up).
 */
enum mrpin_key {
	MRPIN_KEY_MAX_PINNED = MRPIN_MAX_PINNED,
	MRPIN_KEY_MAX_PINS = MRPIN_MAX_PINS,
	MRPIN_KEY_MAX_PIN_SIZE = MRPIN_MAX_PIN_SIZE,
	MRPIN_KEY_ACTION = MRPIN_NR_LIMIT_KEYS,
	MRPIN_KEY_COUNT,
	MRPIN_KEY_STACK,
	MRPIN_KEY_OVERSIZE,
	MRPIN_KEY_MR_TABLE_WARN,
	MRPIN_KEY_CALLSITES,
	MRPIN_KEY_LOG_FAILURES,
	MRPIN_NR_KEYS,
	MRPIN_KEY_GLOBAL_ONLY = MRPIN_KEY_STACK,
};

/* Each key's name, for tables that hold more than the name. */
#define MRPIN_KEY_NAME_MAX_PINNED	"max_pinned"
#define MRPIN_KEY_NAME_MAX_PINS		"max_pins"
#define MRPIN_KEY_NAME_MAX_PIN_SIZE	"max_pin_size"
#define MRPIN_KEY_NAME_ACTION		"action"
#define MRPIN_KEY_NAME_COUNT		"count"
#define MRPIN_KEY_NAME_STACK		"stack"
#define MRPIN_KEY_NAME_OVERSIZE		"oversize"
#define MRPIN_KEY_NAME_MR_TABLE_WARN	"mr_table_warn"
#define MRPIN_KEY_NAME_CALLSITES	"callsites"
#define MRPIN_KEY_NAME_LOG_FAILURES	"log_failures"

#define MRPIN_KEY_NAMES						\
	[MRPIN_KEY_MAX_PINNED] = MRPIN_KEY_NAME_MAX_PINNED,	\
	[MRPIN_KEY_MAX_PINS] = MRPIN_KEY_NAME_MAX_PINS,		\
	[MRPIN_KEY_MAX_PIN_SIZE] = MRPIN_KEY_NAME_MAX_PIN_SIZE,	\
	[MRPIN_KEY_ACTION] = MRPIN_KEY_NAME_ACTION,		\
	[MRPIN_KEY_COUNT] = MRPIN_KEY_NAME_COUNT,		\
	[MRPIN_KEY_STACK] = MRPIN_KEY_NAME_STACK,		\
	[MRPIN_KEY_OVERSIZE] = MRPIN_KEY_NAME_OVERSIZE,		\
	[MRPIN_KEY_MR_TABLE_WARN] = MRPIN_KEY_NAME_MR_TABLE_WARN, \
	[MRPIN_KEY_CALLSITES] = MRPIN_KEY_NAME_CALLSITES,	\
	[MRPIN_KEY_LOG_FAILURES] = MRPIN_KEY_NAME_LOG_FAILURES

/*
 * The values of the global rule's stack= (and of action=, callsites=,
 * log_failures=).
 */
enum mrpin_stack_action {
	MRPIN_STACK_ALLOW,
	MRPIN_STACK_WARN,
	MRPIN_STACK_DENY,
	MRPIN_NR_STACK_ACTIONS,
};

#define MRPIN_STACK_ACTION_NAMES				\
	[MRPIN_STACK_ALLOW] = "allow",				\
	[MRPIN_STACK_WARN] = "warn",				\
	[MRPIN_STACK_DENY] = "deny"
#define MRPIN_ACTION_NAMES "enforce", "warn"

/*
 * The values of count=: what a rule's max_pinned counts.  registered: every
 * registration in full, as VmPin and RLIMIT_MEMLOCK do; distinct: the union
 * of the ranges pinned in each address space, so that memory registered
 * several times counts once.
 */
#define MRPIN_COUNT_NAMES "registered", "distinct"
#define MRPIN_ON_OFF_NAMES "off", "on"

#endif /* _MRPIN_ABI_H */
