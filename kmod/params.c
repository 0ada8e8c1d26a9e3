// SPDX-License-Identifier: GPL-2.0
/*
 * The module parameters: the load-time global and process rules.
 *
 * Each parameter sets one key of the global or the process rule, in the
 * `limits` grammar's words (policy_parse.c checks them when they are set:
 * a bad value makes the load fail with one line naming it).  They are
 * read-only once loaded (0444); `reset` in `limits` goes back to them.
 *
 * Locking: none; the values are written while the module loads only.
 */
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "mrpin.h"

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
	char buf[sizeof(param->value)], *value;
	/* The value as the log shows it: escaped, as every name mrpin logs. */
	char shown[4 * sizeof(param->value) + 1];
	struct mrpin_limits lim;
	const char *why;

	if (strscpy(buf, val, sizeof(buf)) < 0) {
		pr_err("mrpin: %s=%s...: longer than %zu bytes\n", kp->name,
		       mrpin_escape(shown, buf, sizeof(shown)),
		       sizeof(buf) - 1);
		return -EINVAL;
	}
	value = strim(buf);
	if (mrpin_parse_key(&lim, param->key, value, &why)) {
		pr_err("mrpin: %s=%s: %s\n", kp->name,
		       mrpin_escape(shown, value, sizeof(shown)), why);
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
MRPIN_PARAM(log_failures, GLOBAL, MRPIN_KEY_LOG_FAILURES, "off",
	    "Log the registrations the kernel refused, and why: on or off (default off)");
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
	&mrpin_param_log_failures,
	&mrpin_param_process_max_pinned,
	&mrpin_param_process_max_pins,
	&mrpin_param_process_max_pin_size,
	&mrpin_param_process_action,
};

/**
 * mrpin_params_defaults() - the global and process rules as the module
 *	parameters set them
 * @global: set to the global rule
 * @process: set to the process rule
 *
 * Context: any context.
 */
void mrpin_params_defaults(struct mrpin_limits *global,
			   struct mrpin_limits *process)
{
	const struct mrpin_param *param;
	const char *why;
	int i;

	mrpin_limits_unlimited(global);
	mrpin_limits_unlimited(process);
	/* The global cap is about RAM, which memory registered twice fills once. */
	global->distinct = true;
	for (i = 0; i < ARRAY_SIZE(mrpin_params); i++) {
		param = mrpin_params[i];
		/* Validated when set: cannot fail. */
		WARN_ON(mrpin_parse_key(param->scope == MRPIN_SCOPE_GLOBAL ?
					global : process,
					param->key, param->value, &why));
	}
}
