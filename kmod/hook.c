// SPDX-License-Identifier: GPL-2.0
/*
 * Redirection of ib_core's umem functions to mrpin's wrappers, with ftrace.
 *
 * Each hooked function gets an ftrace_ops with FTRACE_OPS_FL_IPMODIFY (the
 * livepatch technique): at the function's entry, the thunk below changes
 * the instruction pointer the ftrace trampoline returns to, so the call
 * lands in mrpin's wrapper with the caller's arguments and return address
 * intact.  The wrapper calls the real function; that call comes from inside
 * this module, which the thunk recognises and lets through.
 *
 * Unload safety.  A task may be anywhere in a wrapper when rmmod runs,
 * possibly asleep inside the real ib_umem_get() for a long time.  Every
 * redirected call holds a reference on mrpin_hook_users, taken in the thunk
 * (with preemption off, so before the trampoline returns) and dropped by
 * the wrapper's last call, mrpin_hook_leave().  mrpin_hook_exit():
 *   1. unregisters the ftrace_ops: no new redirections; ftrace waits for
 *      tasks still in the trampoline or thunk (RCU tasks);
 *   2. kills the reference and waits for it to drain: every wrapper has
 *      reached mrpin_hook_leave();
 *   3. waits for one more RCU tasks grace period: every task that dropped
 *      the last reference has since left the wrapper's final instructions
 *      (an RCU tasks grace period ends only after each task has scheduled
 *      voluntarily or run in user space).
 * Only then may the module's text be freed.
 *
 * Everything architecture- or version-specific about the redirection is
 * here or in compat.h.
 */
#include <linux/completion.h>
#include <linux/ftrace.h>
#include <linux/module.h>
#include <linux/percpu-refcount.h>
#include <rdma/ib_umem.h>

#include "compat.h"
#include "mrpin.h"

/**
 * struct mrpin_hook - one redirected function
 * @name:	the function's name, for messages
 * @target:	the function
 * @wrapper:	where its callers are sent; same prototype as @target
 * @ops:	the ftrace_ops doing it
 */
struct mrpin_hook {
	const char *name;
	unsigned long target;
	unsigned long wrapper;
	struct ftrace_ops ops;
};

static struct percpu_ref mrpin_hook_users;
static DECLARE_COMPLETION(mrpin_hook_drained);

static void notrace mrpin_hook_thunk(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *ops,
				     struct ftrace_regs *fregs)
{
	struct mrpin_hook *hook = container_of(ops, struct mrpin_hook, ops);

	/* The wrapper's own call of the real function. */
	if (within_module(parent_ip, THIS_MODULE))
		return;
	/* Unloading: let the call through untouched. */
	if (!percpu_ref_tryget_live(&mrpin_hook_users))
		return;
	mrpin_ftrace_set_ip(fregs, hook->wrapper);
}

#define MRPIN_HOOK(_target, _wrapper) {					\
	.name = #_target,						\
	.target = (unsigned long)(_target),				\
	.wrapper = (unsigned long)(_wrapper),				\
	.ops = {							\
		.func = mrpin_hook_thunk,				\
		.flags = FTRACE_OPS_FL_SAVE_REGS |			\
			 FTRACE_OPS_FL_IPMODIFY |			\
			 FTRACE_OPS_FL_RECURSION,			\
	},								\
}

/*
 * Redirected in this order, and back in the reverse one: ib_umem_release()
 * first, so that every pin mrpin records has its release seen.  The other
 * way round, a pin made and released between the two would keep its
 * record after the umem was freed.
 */
static struct mrpin_hook mrpin_hooks[] = {
	MRPIN_HOOK(ib_umem_release, mrpin_umem_release),
	MRPIN_HOOK(ib_umem_get, mrpin_umem_get),
};

/**
 * mrpin_hook_leave() - the last call of every wrapper
 *
 * Context: any context.
 */
void mrpin_hook_leave(void)
{
	percpu_ref_put(&mrpin_hook_users);
}

static void mrpin_hook_users_drained(struct percpu_ref *ref)
{
	complete(&mrpin_hook_drained);
}

static int mrpin_hook_add(struct mrpin_hook *hook)
{
	int ret;

	ret = ftrace_set_filter_ip(&hook->ops, hook->target, 0, 0);
	if (ret) {
		pr_err("mrpin: cannot trace %s: %d\n", hook->name, ret);
		return ret;
	}
	ret = register_ftrace_function(&hook->ops);
	if (ret) {
		pr_err("mrpin: cannot redirect %s: %d\n", hook->name, ret);
		ftrace_set_filter_ip(&hook->ops, hook->target, 1, 0);
	}
	return ret;
}

static void mrpin_hook_del(struct mrpin_hook *hook)
{
	unregister_ftrace_function(&hook->ops);
	ftrace_set_filter_ip(&hook->ops, hook->target, 1, 0);
}

/**
 * mrpin_hook_init() - start redirecting ib_umem_get() and ib_umem_release()
 *
 * Context: process context; the rest of mrpin must be ready for calls.
 * Return: 0 or a negative errno (nothing is redirected then).
 */
int mrpin_hook_init(void)
{
	int i, ret;

	ret = percpu_ref_init(&mrpin_hook_users, mrpin_hook_users_drained, 0,
			      GFP_KERNEL);
	if (ret)
		return ret;
	for (i = 0; i < ARRAY_SIZE(mrpin_hooks); i++) {
		ret = mrpin_hook_add(&mrpin_hooks[i]);
		if (ret)
			goto err_del;
	}
	return 0;

err_del:
	while (--i >= 0)
		mrpin_hook_del(&mrpin_hooks[i]);
	percpu_ref_exit(&mrpin_hook_users);
	return ret;
}

/**
 * mrpin_hook_exit() - stop redirecting and wait until no task runs mrpin's
 * wrappers any more
 *
 * Context: process context; may wait for registrations in flight.
 */
void mrpin_hook_exit(void)
{
	int i;

	for (i = ARRAY_SIZE(mrpin_hooks) - 1; i >= 0; i--)
		mrpin_hook_del(&mrpin_hooks[i]);
	percpu_ref_kill(&mrpin_hook_users);
	wait_for_completion(&mrpin_hook_drained);
	synchronize_rcu_tasks();
	percpu_ref_exit(&mrpin_hook_users);
}
