// SPDX-License-Identifier: GPL-2.0
/*
 * Redirection of ib_core's umem functions to mrpin's wrappers, with ftrace.
 *
 * One ftrace_ops with FTRACE_OPS_FL_IPMODIFY (the livepatch technique)
 * covers both functions: at a function's entry, the thunk below changes
 * the instruction pointer the ftrace trampoline returns to, so the call
 * lands in mrpin's wrapper with the caller's arguments and return address
 * intact.  The wrapper calls the real function; that call comes from inside
 * this module, which the thunk recognises and lets through.
 *
 * The rule of load and unload: every pin mrpin records has its release
 * seen, or the record would outlive the umem, whose address then comes
 * back.  ftrace patches the two entry points one after the other, in
 * address order, ib_umem_get() first, and a wrapper may still be inside
 * the real ib_umem_get() long after its entry was patched back.  So each
 * wrapper has its own count of the calls in it, a percpu_ref the thunk
 * takes (with preemption off, before the trampoline returns) and the
 * wrapper drops last (mrpin_hook_leave_get(), mrpin_hook_leave_release()):
 *
 * - mrpin_hook_pinners, for mrpin_umem_get(), starts dead: the thunk lets
 *   ib_umem_get() through until register_ftrace_function() has returned
 *   and both entry points are redirected on every CPU.  A pin made before
 *   then is not recorded, and its release counts as untracked, like the
 *   release of a pin made before mrpin was loaded.
 * - mrpin_hook_releasers, for mrpin_umem_release(), is live from the start.
 *
 * mrpin_hook_exit():
 *   1. kills mrpin_hook_pinners and waits for it to drain: no call of
 *      ib_umem_get() is redirected any more, and every pin recorded is
 *      published while releases are still seen;
 *   2. unregisters the ftrace_ops; ftrace waits for tasks still in the
 *      trampoline or the thunk (RCU tasks);
 *   3. kills mrpin_hook_releasers and waits for it to drain;
 *   4. waits for one more RCU tasks grace period: every task that dropped
 *      a last reference has since left the wrapper's final instructions
 *      (an RCU tasks grace period ends only after each task has scheduled
 *      voluntarily or run in user space).
 * Only then may the module's text be freed.
 *
 * One ftrace_ops rather than one per function keeps the load to one text
 * update, and the window of unrecorded pins to that update.
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

/*
 * Lock map: each percpu_ref counts the calls in one wrapper (lock-free);
 * its completion fires when the ref, killed, reaches zero.  The ftrace_ops
 * and its filter belong to ftrace, which serialises their updates.
 */
static struct percpu_ref mrpin_hook_pinners;
static struct percpu_ref mrpin_hook_releasers;
static DECLARE_COMPLETION(mrpin_hook_pinners_drained);
static DECLARE_COMPLETION(mrpin_hook_releasers_drained);

/**
 * struct mrpin_hook - one redirected function
 * @name:	the function's name, for messages
 * @target:	the function
 * @wrapper:	where its callers are sent; same prototype as @target
 * @users:	the calls in @wrapper
 */
struct mrpin_hook {
	const char *name;
	unsigned long target;
	unsigned long wrapper;
	struct percpu_ref *users;
};

#define MRPIN_HOOK(_target, _wrapper, _users) {				\
	.name = #_target,						\
	.target = (unsigned long)(_target),				\
	.wrapper = (unsigned long)(_wrapper),				\
	.users = (_users),						\
}

static const struct mrpin_hook mrpin_hooks[] = {
	MRPIN_HOOK(ib_umem_get, mrpin_umem_get, &mrpin_hook_pinners),
	MRPIN_HOOK(ib_umem_release, mrpin_umem_release, &mrpin_hook_releasers),
};

static void notrace mrpin_hook_thunk(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *ops,
				     struct ftrace_regs *fregs)
{
	const struct mrpin_hook *hook;

	/* The wrapper's own call of the real function. */
	if (within_module(parent_ip, THIS_MODULE))
		return;
	for (hook = mrpin_hooks; hook < mrpin_hooks + ARRAY_SIZE(mrpin_hooks);
	     hook++) {
		if (!mrpin_ftrace_ip_is(ip, hook->target))
			continue;
		/* Loading or unloading: let the call through untouched. */
		if (percpu_ref_tryget_live(hook->users))
			mrpin_ftrace_set_ip(fregs, hook->wrapper);
		return;
	}
}

static struct ftrace_ops mrpin_hook_ops = {
	.func = mrpin_hook_thunk,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY |
		 FTRACE_OPS_FL_RECURSION,
};

/**
 * mrpin_hook_leave_get() - the last call of mrpin_umem_get()
 *
 * Context: any context.
 */
void mrpin_hook_leave_get(void)
{
	percpu_ref_put(&mrpin_hook_pinners);
}

/**
 * mrpin_hook_leave_release() - the last call of mrpin_umem_release()
 *
 * Context: any context.
 */
void mrpin_hook_leave_release(void)
{
	percpu_ref_put(&mrpin_hook_releasers);
}

static void mrpin_hook_pinners_gone(struct percpu_ref *ref)
{
	complete(&mrpin_hook_pinners_drained);
}

static void mrpin_hook_releasers_gone(struct percpu_ref *ref)
{
	complete(&mrpin_hook_releasers_drained);
}

/* Kill @ref and wait until the last call holding it has left. */
static void mrpin_hook_drain(struct percpu_ref *ref, struct completion *done)
{
	percpu_ref_kill(ref);
	wait_for_completion(done);
}

/**
 * mrpin_hook_init() - start redirecting ib_umem_get() and ib_umem_release()
 *
 * Context: process context; the rest of mrpin must be ready for calls.
 * Return: 0 or a negative errno (nothing is redirected then).
 */
int mrpin_hook_init(void)
{
	const struct mrpin_hook *hook;
	int ret;

	ret = percpu_ref_init(&mrpin_hook_pinners, mrpin_hook_pinners_gone,
			      PERCPU_REF_INIT_DEAD, GFP_KERNEL);
	if (ret)
		return ret;
	ret = percpu_ref_init(&mrpin_hook_releasers, mrpin_hook_releasers_gone,
			      0, GFP_KERNEL);
	if (ret)
		goto err_pinners;
	for (hook = mrpin_hooks; hook < mrpin_hooks + ARRAY_SIZE(mrpin_hooks);
	     hook++) {
		ret = ftrace_set_filter_ip(&mrpin_hook_ops, hook->target, 0, 0);
		if (ret) {
			pr_err("mrpin: cannot trace %s: %d\n", hook->name, ret);
			goto err_filter;
		}
	}
	ret = register_ftrace_function(&mrpin_hook_ops);
	if (ret) {
		pr_err("mrpin: cannot redirect ib_umem_get and ib_umem_release: %d\n",
		       ret);
		goto err_filter;
	}
	/* Both entry points now reach the thunk on every CPU. */
	percpu_ref_reinit(&mrpin_hook_pinners);
	return 0;

err_filter:
	ftrace_free_filter(&mrpin_hook_ops);
	percpu_ref_exit(&mrpin_hook_releasers);
err_pinners:
	percpu_ref_exit(&mrpin_hook_pinners);
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
	mrpin_hook_drain(&mrpin_hook_pinners, &mrpin_hook_pinners_drained);
	unregister_ftrace_function(&mrpin_hook_ops);
	ftrace_free_filter(&mrpin_hook_ops);
	mrpin_hook_drain(&mrpin_hook_releasers, &mrpin_hook_releasers_drained);
	synchronize_rcu_tasks();
	percpu_ref_exit(&mrpin_hook_releasers);
	percpu_ref_exit(&mrpin_hook_pinners);
}
