// SPDX-License-Identifier: GPL-2.0
/*
 * Redirection of ib_core's umem functions to mrpin's wrappers, with ftrace,
 * and the wrappers themselves: they call pin.c around the real functions.
 *
 * The functions (compat.h says why these): the VA pin, ib_umem_get() on
 * 6.1 and 6.12, ib_umem_get_desc() and __ib_umem_get_va() on 7.x; and
 * ib_umem_release().  With CONFIG_INFINIBAND_ON_DEMAND_PAGING, also the
 * explicit ODP registration, ib_umem_odp_get(), and ib_umem_odp_release(),
 * which drivers call directly on their error paths and ib_umem_release()
 * calls for an ODP umem: that call, already in a wrapper, is let through.
 * An implicit ODP umem (ib_umem_odp_alloc_implicit(), and the children
 * mlx5 makes of it as the address space faults in) is a driver's internal
 * structure, not a registration of a range: it goes through untouched.
 *
 * One ftrace_ops with FTRACE_OPS_FL_IPMODIFY (the livepatch technique)
 * covers them all: at a function's entry, the thunk below changes the
 * instruction pointer the ftrace trampoline returns to, so the call lands
 * in mrpin's wrapper with the caller's arguments and return address
 * intact.  The wrapper calls the real function; that call comes from inside
 * this module, which the thunk recognises and lets through.  On 7.x the
 * real ib_umem_get_desc() goes on into __ib_umem_get_va(), by a call or a
 * tail jump as the compiler chose: a call of __ib_umem_get_va() from
 * ib_umem_get_desc() is let through too, as that pin is already in a
 * wrapper.  So every VA pin passes one wrapper exactly once.
 *
 * The rule of load and unload: every pin mrpin records has its release
 * seen, or the record would outlive the umem, whose address then comes
 * back.  ftrace patches the entry points one after the other, in address
 * order, and a wrapper may still be inside the real pin long after its
 * entry was patched back.  So the wrappers have a count of the calls in
 * them, a percpu_ref the thunk takes (before the trampoline returns) and
 * the wrapper drops last:
 *
 * - mrpin_hook_pinners, for the pin wrappers, starts dead: the thunk lets
 *   the pin functions through until register_ftrace_function() has
 *   returned and every entry point is redirected on every CPU.  A pin made
 *   before then is not recorded, and its release counts as untracked, like
 *   the release of a pin made before mrpin was loaded.
 * - mrpin_hook_releasers, for mrpin_umem_release(), is live from the start.
 *
 * mrpin_hook_exit():
 *   1. kills mrpin_hook_pinners and waits for it to drain: no pin is
 *      redirected any more, and every pin recorded is published while
 *      releases are still seen;
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
 * The caller of a pin, shown in `pins`, is the kernel function that asked
 * for it: the driver's (rxe_mr_init_user, mlx5's create_cq_user...).  On
 * 7.x the wrappers are entered from ib_core's own pin helpers, so the
 * caller is the first return address on the stack beyond them.
 *
 * Everything architecture- or version-specific about the redirection is
 * here or in compat.h.
 */
#include <linux/completion.h>
#include <linux/ftrace.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/percpu-refcount.h>
#include <linux/slab.h>
#include <linux/stacktrace.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>

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
 * @name:	the function's name, for messages and to find it by
 * @target:	the function; 0: found by @name, and matched by any traced
 *		address the hooks before it do not match (so it comes last)
 * @wrapper:	where its callers are sent; same prototype as @target
 * @users:	the calls in @wrapper
 * @via:	its calls from this function are already in a wrapper
 */
struct mrpin_hook {
	const char *name;
	unsigned long target;
	unsigned long wrapper;
	struct percpu_ref *users;
	struct mrpin_text *via;
};

/* A function's text, [start, start + size). */
struct mrpin_text {
	unsigned long start;
	unsigned long size;
};

static struct ib_umem *mrpin_umem_get_va(struct ib_device *ibdev,
					 unsigned long addr, size_t size,
					 int access);
static void mrpin_umem_release(struct ib_umem *umem);

/* The real ib_umem_release(): its call of ib_umem_odp_release() is seen. */
static struct mrpin_text mrpin_release_text[] = {
	{ (unsigned long)ib_umem_release },
};

#define MRPIN_HOOK(_target, _wrapper, _users, _via) {			\
	.name = #_target,						\
	.target = (unsigned long)(_target),				\
	.wrapper = (unsigned long)(_wrapper),				\
	.users = (_users),						\
	.via = (_via),							\
}

#if IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING)
static struct ib_umem_odp *
mrpin_umem_odp_get(struct ib_device *ibdev, unsigned long addr, size_t size,
		   int access, const struct mmu_interval_notifier_ops *ops);
static void mrpin_umem_odp_release(struct ib_umem_odp *umem_odp);
#endif

#ifdef MRPIN_UMEM_DESC
static struct ib_umem *
mrpin_umem_get_desc(struct ib_device *ibdev,
		    const struct ib_uverbs_buffer_desc *desc, int access);

/*
 * ib_core's exported pin helpers: a return address in one of them is not
 * the caller of a pin but ib_core working for it.
 */
static struct mrpin_text mrpin_pin_helpers[] = {
	{ (unsigned long)ib_umem_get_desc },
	{ (unsigned long)ib_umem_get_attr },
	{ (unsigned long)ib_umem_get_attr_or_va },
	{ (unsigned long)ib_umem_get_cq_buf },
	{ (unsigned long)ib_umem_get_cq_buf_or_va },
};
#else
static struct mrpin_text mrpin_pin_helpers[0];
#endif

static const struct mrpin_hook mrpin_hooks[] = {
	MRPIN_HOOK(ib_umem_release, mrpin_umem_release, &mrpin_hook_releasers,
		   NULL),
#if IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING)
	MRPIN_HOOK(ib_umem_odp_get, mrpin_umem_odp_get, &mrpin_hook_pinners,
		   NULL),
	MRPIN_HOOK(ib_umem_odp_release, mrpin_umem_odp_release,
		   &mrpin_hook_releasers, &mrpin_release_text[0]),
#endif
#ifdef MRPIN_UMEM_DESC
	MRPIN_HOOK(ib_umem_get_desc, mrpin_umem_get_desc, &mrpin_hook_pinners,
		   NULL),
	{
		.name = MRPIN_UMEM_GET_VA_NAME,
		.wrapper = (unsigned long)mrpin_umem_get_va,
		.users = &mrpin_hook_pinners,
		.via = &mrpin_pin_helpers[0],
	},
#else
	MRPIN_HOOK(ib_umem_get, mrpin_umem_get_va, &mrpin_hook_pinners, NULL),
#endif
};

static bool mrpin_text_has(const struct mrpin_text *text, unsigned long ip)
{
	return ip - text->start < text->size;
}

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
		if (hook->target && !mrpin_ftrace_ip_is(ip, hook->target))
			continue;
		if (hook->via && mrpin_text_has(hook->via, parent_ip))
			return;
		/* Loading or unloading: let the call through untouched. */
		if (percpu_ref_tryget_live(hook->users))
			mrpin_ftrace_set_ip(fregs, hook->wrapper);
		return;
	}
}

/*
 * No FTRACE_OPS_FL_RECURSION: the thunk calls nothing this ops traces (its
 * filter holds ib_core's umem functions alone), so it cannot recurse, and
 * the trampoline calls it directly rather than through ftrace's recursion
 * guard (ftrace_ops_assist_func(), about 100 instructions a call).
 */
static struct ftrace_ops mrpin_hook_ops = {
	.func = mrpin_hook_thunk,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

/* Whether @ip is inside one of ib_core's pin helpers. */
static bool mrpin_in_pin_helpers(unsigned long ip)
{
	unsigned int h;

	for (h = 0; h < ARRAY_SIZE(mrpin_pin_helpers); h++)
		if (mrpin_text_has(&mrpin_pin_helpers[h], ip))
			return true;
	return false;
}

/*
 * The kernel function that asked for the pin, from a wrapper's return
 * address: beyond ib_core's pin helpers, walking the stack when the wrapper
 * was entered from one of them (7.x).
 */
static unsigned long mrpin_umem_caller(unsigned long ret)
{
	unsigned long entries[8];
	unsigned int n, i;

	if (!mrpin_in_pin_helpers(ret))
		return ret;
	n = stack_trace_save(entries, ARRAY_SIZE(entries), 0);
	for (i = 0; i < n; i++)
		if (!within_module(entries[i], THIS_MODULE) &&
		    !mrpin_in_pin_helpers(entries[i]))
			return entries[i];
	return ret;
}

/*
 * After the real pin of [@addr, @addr + @size): record it, or say why it
 * failed and roll its charge back; leave.
 */
static struct ib_umem *mrpin_umem_pinned(struct mrpin_pin *pin,
					 struct ib_umem *umem,
					 unsigned long addr, size_t size,
					 int access)
{
	if (IS_ERR(umem))
		mrpin_pin_failed(pin, addr, size, ib_access_writable(access),
				 access & IB_ACCESS_ON_DEMAND, PTR_ERR(umem));
	else if (pin)
		mrpin_pin_record(pin, umem);
	percpu_ref_put(&mrpin_hook_pinners);
	return umem;
}

/* Leave a wrapper whose pin mrpin refused. */
static struct ib_umem *mrpin_umem_refused(struct mrpin_pin *err)
{
	percpu_ref_put(&mrpin_hook_pinners);
	return ERR_CAST(err);
}

/* A VA pin, tracked: ib_umem_get()'s arguments. */
static struct ib_umem *mrpin_umem_get_va(struct ib_device *ibdev,
					 unsigned long addr, size_t size,
					 int access)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	struct mrpin_pin *pin;

	pin = mrpin_pin_prepare(ibdev, addr, size, mrpin_umem_caller(ret),
				false);
	if (IS_ERR(pin))
		return mrpin_umem_refused(pin);
	return mrpin_umem_pinned(pin, mrpin_umem_pin_va(ibdev, addr, size,
							access),
				 addr, size, access);
}

#ifdef MRPIN_UMEM_DESC
/*
 * ib_umem_get_desc(), tracked when it pins by address; a dma-buf
 * descriptor pins no host memory and goes through untouched (its release
 * counts as untracked).  Anything ib_umem_get_desc() would refuse before
 * pinning is refused by it, not by a limit.
 */
static struct ib_umem *
mrpin_umem_get_desc(struct ib_device *ibdev,
		    const struct ib_uverbs_buffer_desc *desc, int access)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	struct mrpin_pin *pin;
	struct ib_umem *umem;

	if (desc->type != IB_UVERBS_BUFFER_TYPE_VA ||
	    (desc->flags & ~IB_UVERBS_BUFFER_DESC_FLAGS_KNOWN_MASK) ||
	    overflows_type(desc->addr, unsigned long) ||
	    overflows_type(desc->length, size_t)) {
		umem = ib_umem_get_desc(ibdev, desc, access);
		percpu_ref_put(&mrpin_hook_pinners);
		return umem;
	}
	pin = mrpin_pin_prepare(ibdev, desc->addr, desc->length,
				mrpin_umem_caller(ret), false);
	if (IS_ERR(pin))
		return mrpin_umem_refused(pin);
	return mrpin_umem_pinned(pin, ib_umem_get_desc(ibdev, desc, access),
				 desc->addr, desc->length, access);
}
#endif

/* ib_umem_release(), tracked. */
static void mrpin_umem_release(struct ib_umem *umem)
{
	struct mrpin_pin *pin;
	bool cleanup;

	pin = mrpin_pin_unpublish(umem, &cleanup);
	ib_umem_release(umem);
	if (pin)
		mrpin_pin_released(pin, cleanup);
	percpu_ref_put(&mrpin_hook_releasers);
}

#if IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING)
/*
 * An explicit ODP registration, tracked as a pin of no bytes: the device
 * holds an MR for the range, and pages are mapped as they fault.  The
 * umem is the first member of the ODP umem, so the record's key is the
 * same pointer ib_umem_release() is given.
 */
static struct ib_umem_odp *
mrpin_umem_odp_get(struct ib_device *ibdev, unsigned long addr, size_t size,
		   int access, const struct mmu_interval_notifier_ops *ops)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	struct ib_umem_odp *umem_odp;
	struct mrpin_pin *pin;

	pin = mrpin_pin_prepare(ibdev, addr, size, ret, true);
	if (IS_ERR(pin)) {
		percpu_ref_put(&mrpin_hook_pinners);
		return ERR_CAST(pin);
	}
	umem_odp = ib_umem_odp_get(ibdev, addr, size, access, ops);
	if (IS_ERR(umem_odp))
		mrpin_pin_failed(pin, addr, size, ib_access_writable(access),
				 true, PTR_ERR(umem_odp));
	else if (pin)
		mrpin_pin_record(pin, &umem_odp->umem);
	percpu_ref_put(&mrpin_hook_pinners);
	return umem_odp;
}

/* ib_umem_odp_release() called by a driver, not by ib_umem_release(). */
static void mrpin_umem_odp_release(struct ib_umem_odp *umem_odp)
{
	struct mrpin_pin *pin;
	bool cleanup;

	pin = mrpin_pin_unpublish(&umem_odp->umem, &cleanup);
	ib_umem_odp_release(umem_odp);
	if (pin)
		mrpin_pin_released(pin, cleanup);
	percpu_ref_put(&mrpin_hook_releasers);
}
#endif

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

/*
 * The size of the function at @start, from kallsyms ("name+0x0/0x3a0
 * [module]"), or 0.
 */
static unsigned long mrpin_text_size(unsigned long start)
{
	unsigned long n = 0;
	char *sym, *size;

	/* Over 512 bytes: not on the stack. */
	sym = kmalloc(KSYM_SYMBOL_LEN, GFP_KERNEL);
	if (!sym)
		return 0;
	sprint_symbol(sym, start);
	size = strchr(sym, '/');
	if (size) {
		*strchrnul(size, ' ') = '\0';
		if (kstrtoul(size + 1, 0, &n))
			n = 0;
	}
	kfree(sym);
	return n;
}

/* Find the sizes of @n functions' texts, from their starts. */
static int mrpin_text_sizes(struct mrpin_text *text, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		text[i].size = mrpin_text_size(text[i].start);
		if (!text[i].size) {
			pr_err("mrpin: no size for ib_core's %ps\n",
			       (void *)text[i].start);
			return -ENOENT;
		}
	}
	return 0;
}

/* Trace @hook's function: by address, or by name when it has no export. */
static int mrpin_hook_filter(const struct mrpin_hook *hook)
{
	char *name;
	int ret;

	if (hook->target) {
		ret = ftrace_set_filter_ip(&mrpin_hook_ops, hook->target, 0, 0);
		if (ret)
			pr_err("mrpin: cannot trace %s: %d\n", hook->name, ret);
		return ret;
	}
	/* ftrace_set_filter() wants a buffer it may write to. */
	name = kstrdup(hook->name, GFP_KERNEL);
	if (!name)
		return -ENOMEM;
	ret = ftrace_set_filter(&mrpin_hook_ops, name, strlen(name), 0);
	kfree(name);
	if (ret)
		pr_err("mrpin: ib_core has no %s to trace (inlined or renamed?): mrpin would miss pins, so it does not load\n",
		       hook->name);
	return ret;
}

/**
 * mrpin_hook_init() - start redirecting the pin functions and
 * ib_umem_release()
 *
 * Context: process context; the rest of mrpin must be ready for calls.
 * Return: 0 or a negative errno (nothing is redirected then).
 */
int mrpin_hook_init(void)
{
	const struct mrpin_hook *hook;
	int ret;

	ret = mrpin_text_sizes(mrpin_pin_helpers,
			       ARRAY_SIZE(mrpin_pin_helpers));
	if (!ret)
		ret = mrpin_text_sizes(mrpin_release_text,
				       ARRAY_SIZE(mrpin_release_text));
	if (ret)
		return ret;

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
		ret = mrpin_hook_filter(hook);
		if (ret)
			goto err_filter;
	}
	ret = register_ftrace_function(&mrpin_hook_ops);
	if (ret) {
		pr_err("mrpin: cannot redirect the umem functions: %d\n", ret);
		goto err_filter;
	}
	/* Every entry point now reaches the thunk on every CPU. */
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
