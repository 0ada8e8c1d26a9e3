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
 * The dma-buf imports (compat.h), each one the kernel has: the pinned one
 * calls another, and that call is let through.  On 7.x a dma-buf
 * descriptor reaches them from ib_umem_get_desc(), which lets it through.
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
 * A call in a pin wrapper also holds a reference on the module, taken by
 * the thunk: a pin may wait for ever (on a page that a FUSE server or a
 * userfaultfd never serves, unkillable in the first case), and `rmmod
 * mrpin` then fails with EBUSY at once, rather than wait for it in
 * mrpin_hook_exit(), in D state.  Once the module's references are gone,
 * try_module_get() fails and the thunk lets every pin through untouched.
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
 * The thunk sends a call to a wrapper only when the traced address is
 * exactly that of a function it knows: any other (a driver's function on
 * its way into or out of the filter) goes through untouched.  A wrapper
 * has its function's prototype: for an exported function the build checks
 * it (mrpin_hook_init()); 7.x's __ib_umem_get_va() has no export and is found
 * by name in ib_core alone (a kprobe looks it up), its prototype being
 * that of ib_umem_get() before it, which ib_umem_get_desc() still passes.
 *
 * The peer-memory interface (NVIDIA OFED's ib_core, and kernels that
 * carry it: compat.h).  Its drivers pin with ib_umem_get_peer(), OFED's
 * mlx5 for every buffer; it and ib_umem_get() are both exported wrappers
 * of one static function, which OFED's 6.1 build keeps as a function of
 * its own and its 6.12 build splits and partly inlines into the two: so
 * both exported functions are redirected, never the static one.  Neither
 * calls the other, so each pin passes one wrapper once.  Whether the pin
 * holds host pages or a peer client's (GPU) memory, peer.c guesses before
 * and pin.c settles after (mrpin_peer_guess(), mrpin_pin_record()): a
 * pin taken for peer memory that comes back with host pages is released
 * and made again, charged.  A module built without the interface refuses
 * to load where ib_core has it: it would miss those pins.
 *
 * Registrations the device refuses.  A driver can refuse a registration
 * with no pin failing (rxe, its MR table full, before it pins) or after a
 * pin that worked (mlx5, when it cannot make the key).  So each driver's
 * reg_user_mr(), the ib_device_ops entry both uverbs paths (the write
 * command and the ioctl method) call, is redirected too, as client.c sees
 * its devices come and go: the function is added to the filter with its
 * first device and taken out with its last.  Its wrapper calls the
 * driver's function through the device's ops (an indirect call, which the
 * function, its address taken, allows under IBT) and, when it fails,
 * reports the device's refusal (failure.c), unless the pin path has
 * already said why inside the same call: a limit of mrpin's or the
 * kernel's pin.  The wrappers of the pin mark that in the calling task's
 * slot of mrpin_regs, which the reg_user_mr() wrapper holds for the call.
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
#include <linux/hash.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
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

/*
 * The drivers' registration functions in the filter, each with its number
 * of devices: changed under mrpin_drivers_lock, @fn read by the thunk
 * without it.  mrpin_drivers_off: the filter is gone (unload, or a load
 * that failed), and no driver is added or taken out any more.
 */
#define MRPIN_DRIVERS 8

struct mrpin_driver {
	unsigned long fn;
	unsigned int devices;
};

static struct mrpin_driver mrpin_drivers[MRPIN_DRIVERS];
static bool mrpin_drivers_off;
static DEFINE_MUTEX(mrpin_drivers_lock);

/*
 * The registrations inside a driver's reg_user_mr() now, one slot each:
 * @task is claimed with cmpxchg() and given back by the reg_user_mr()
 * wrapper; @explained is written by that task alone (its pin wrappers),
 * and read by it.  With every slot taken, a registration goes through
 * unwatched.
 */
#define MRPIN_REGS_BITS 6

struct mrpin_reg {
	struct task_struct *task;
	bool explained;
};

static struct mrpin_reg mrpin_regs[1 << MRPIN_REGS_BITS];

/**
 * struct mrpin_hook - one redirected function
 * @name:	the function's name, for messages and to find it by
 * @target:	the function; 0 until mrpin_hook_init() finds it by @name
 *		(ib_core's, exactly: it has no export)
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

static struct ib_mr *mrpin_reg_user_mr(struct ib_pd *pd, u64 start,
				       u64 length, u64 virt_addr, int access,
				       MRPIN_REG_USER_MR_DMAH
				       struct ib_udata *udata);

/* Every driver's reg_user_mr(), found in mrpin_drivers. */
static const struct mrpin_hook mrpin_driver_hook = {
	.name = "reg_user_mr",
	.wrapper = (unsigned long)mrpin_reg_user_mr,
	.users = &mrpin_hook_pinners,
};

/* An exported function (mrpin_hook_init() checks the prototypes). */
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

#ifdef MRPIN_HAVE_UMEM_GET_PEER
static struct ib_umem *mrpin_umem_get_peer(struct ib_device *ibdev,
					   unsigned long addr, size_t size,
					   int access,
					   unsigned long peer_mem_flags);
#endif

#ifdef MRPIN_UMEM_DMABUF
static struct ib_umem_dmabuf *
mrpin_umem_dmabuf_get(struct ib_device *ibdev, unsigned long offset,
		      size_t size, int fd, int access,
		      const struct dma_buf_attach_ops *ops);
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_GET_PINNED
static struct ib_umem_dmabuf *
mrpin_umem_dmabuf_get_pinned(struct ib_device *ibdev, unsigned long offset,
			     size_t size, int fd, int access);

/* Its call of another dma-buf import is already in a wrapper (compat.h). */
static struct mrpin_text mrpin_dmabuf_pinned_text[] = {
	{ (unsigned long)ib_umem_dmabuf_get_pinned },
};

#define MRPIN_DMABUF_VIA (&mrpin_dmabuf_pinned_text[0])
#else
#define MRPIN_DMABUF_VIA NULL
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_WITH_DMA_DEVICE
static struct ib_umem_dmabuf *
mrpin_umem_dmabuf_get_pinned_with_dma_device(struct ib_device *ibdev,
					     struct device *dma_device,
					     unsigned long offset, size_t size,
					     int fd, int access);
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_REVOCABLE
static struct ib_umem_dmabuf *
mrpin_umem_dmabuf_get_pinned_revocable_and_lock(struct ib_device *ibdev,
						unsigned long offset,
						size_t size, int fd,
						int access);
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

/* The targets, set once at load: the thunk reads them without a lock. */
static struct mrpin_hook mrpin_hooks[] __ro_after_init = {
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
#ifdef MRPIN_HAVE_UMEM_GET_PEER
	MRPIN_HOOK(ib_umem_get_peer, mrpin_umem_get_peer, &mrpin_hook_pinners,
		   NULL),
#endif
#ifdef MRPIN_UMEM_DMABUF
	MRPIN_HOOK(ib_umem_dmabuf_get, mrpin_umem_dmabuf_get,
		   &mrpin_hook_pinners, MRPIN_DMABUF_VIA),
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_GET_PINNED
	MRPIN_HOOK(ib_umem_dmabuf_get_pinned, mrpin_umem_dmabuf_get_pinned,
		   &mrpin_hook_pinners, NULL),
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_WITH_DMA_DEVICE
	MRPIN_HOOK(ib_umem_dmabuf_get_pinned_with_dma_device,
		   mrpin_umem_dmabuf_get_pinned_with_dma_device,
		   &mrpin_hook_pinners, MRPIN_DMABUF_VIA),
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_REVOCABLE
	MRPIN_HOOK(ib_umem_dmabuf_get_pinned_revocable_and_lock,
		   mrpin_umem_dmabuf_get_pinned_revocable_and_lock,
		   &mrpin_hook_pinners, NULL),
#endif
};

static bool mrpin_text_has(const struct mrpin_text *text, unsigned long ip)
{
	return ip - text->start < text->size;
}

static bool mrpin_is_driver_fn(unsigned long ip)
{
	unsigned long fn;
	unsigned int i;

	for (i = 0; i < MRPIN_DRIVERS; i++) {
		fn = READ_ONCE(mrpin_drivers[i].fn);
		if (fn && mrpin_ftrace_ip_is(ip, fn))
			return true;
	}
	return false;
}

/*
 * The hook of the traced function at @ip: one of mrpin_hooks or a driver's,
 * by its exact address; NULL for any other (a driver's function on its way
 * into or out of the filter): the call goes through untouched, never to a
 * wrapper of another prototype.
 */
static const struct mrpin_hook *mrpin_hook_of(unsigned long ip)
{
	const struct mrpin_hook *hook;

	for (hook = mrpin_hooks; hook < mrpin_hooks + ARRAY_SIZE(mrpin_hooks);
	     hook++)
		if (hook->target && mrpin_ftrace_ip_is(ip, hook->target))
			return hook;
	if (mrpin_is_driver_fn(ip))
		return &mrpin_driver_hook;
	return NULL;
}

static void notrace mrpin_hook_thunk(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *ops,
				     struct ftrace_regs *fregs)
{
	const struct mrpin_hook *hook;

	/* The wrapper's own call of the real function. */
	if (within_module(parent_ip, THIS_MODULE))
		return;
	hook = mrpin_hook_of(ip);
	if (!hook || (hook->via && mrpin_text_has(hook->via, parent_ip)))
		return;
	/*
	 * A registration holds the module: a pin can wait for ever (a page
	 * a FUSE server or a userfaultfd never serves), and rmmod must
	 * then fail with EBUSY rather than wait for it.  Unloading
	 * already: let the call through untouched.
	 */
	if (hook->users == &mrpin_hook_pinners && !try_module_get(THIS_MODULE))
		return;
	/* Loading or unloading: let the call through untouched. */
	if (percpu_ref_tryget_live(hook->users))
		mrpin_ftrace_set_ip(fregs, hook->wrapper);
	else if (hook->users == &mrpin_hook_pinners)
		module_put(THIS_MODULE);
}

/*
 * Leave a wrapper of the pin: the module first, then the count of the
 * calls inside, which mrpin_hook_exit() drains.
 */
static void mrpin_hook_pinner_leave(void)
{
	module_put(THIS_MODULE);
	percpu_ref_put(&mrpin_hook_pinners);
}

/*
 * No FTRACE_OPS_FL_RECURSION: the thunk calls nothing this ops traces (its
 * filter holds ib_core's umem functions alone), so it cannot recurse, and
 * the trampoline calls it directly rather than through ftrace's recursion
 * guard (ftrace_ops_assist_func(), about 100 instructions a call).
 *
 * FTRACE_OPS_FL_PERMANENT, as livepatch has it, for the same reason:
 * `sysctl kernel.ftrace_enabled=0` turns every traced call site into a
 * NOP, which would let every pin through unseen and lose the releases of
 * those recorded (their charges would stay for good).  With the flag the
 * sysctl fails with EBUSY while mrpin is loaded, and mrpin refuses to load
 * while it is 0 (register_ftrace_function() fails with EBUSY).
 */
static struct ftrace_ops mrpin_hook_ops = {
	.func = mrpin_hook_thunk,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY |
		 FTRACE_OPS_FL_PERMANENT,
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

/* Hold a slot of mrpin_regs for the calling task: its index, or -1. */
static int mrpin_reg_enter(void)
{
	unsigned int first = hash_ptr(current, MRPIN_REGS_BITS), i, slot;

	for (i = 0; i < ARRAY_SIZE(mrpin_regs); i++) {
		slot = (first + i) % ARRAY_SIZE(mrpin_regs);
		if (!READ_ONCE(mrpin_regs[slot].task) &&
		    !cmpxchg(&mrpin_regs[slot].task, NULL, current))
			return slot;
	}
	return -1;
}

/*
 * The pin path said why a registration of the calling task failed: mark
 * its slot, if it is inside a driver's reg_user_mr().  Failures are rare:
 * a walk of the slots is cheap enough.
 */
static void mrpin_reg_explained(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mrpin_regs); i++)
		if (READ_ONCE(mrpin_regs[i].task) == current)
			mrpin_regs[i].explained = true;
}

/* Give slot @slot back: whether the pin path explained a failure. */
static bool mrpin_reg_leave(int slot)
{
	bool explained;

	if (slot < 0)
		return true;
	explained = mrpin_regs[slot].explained;
	mrpin_regs[slot].explained = false;
	/* The next task to claim the slot finds it cleared. */
	smp_store_release(&mrpin_regs[slot].task, NULL);
	return explained;
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
	if (IS_ERR(umem)) {
		mrpin_pin_failed(pin, addr, size, ib_access_writable(access),
				 access & IB_ACCESS_ON_DEMAND, PTR_ERR(umem));
		mrpin_reg_explained();
	} else if (pin) {
		mrpin_pin_record(pin, umem);
	}
	mrpin_hook_pinner_leave();
	return umem;
}

/* Leave a wrapper whose pin mrpin refused. */
static struct ib_umem *mrpin_umem_refused(struct mrpin_pin *err)
{
	mrpin_reg_explained();
	mrpin_hook_pinner_leave();
	return ERR_CAST(err);
}

/* A VA pin, tracked: ib_umem_get()'s arguments. */
static struct ib_umem *mrpin_umem_get_va(struct ib_device *ibdev,
					 unsigned long addr, size_t size,
					 int access)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	struct mrpin_pin *pin;

	pin = mrpin_pin_prepare(ibdev, addr, size, mrpin_umem_caller(ret), 0);
	if (IS_ERR(pin))
		return mrpin_umem_refused(pin);
	return mrpin_umem_pinned(pin, mrpin_umem_pin_va(ibdev, addr, size,
							access),
				 addr, size, access);
}

#ifdef MRPIN_HAVE_UMEM_GET_PEER
/*
 * ib_umem_get_peer(), tracked: as host memory or peer memory, as pin.c
 * guesses, and pinned again as host memory when the guess of peer memory
 * was wrong (pin.c's design comment says when that happens).
 */
static struct ib_umem *mrpin_umem_get_peer(struct ib_device *ibdev,
					   unsigned long addr, size_t size,
					   int access,
					   unsigned long peer_mem_flags)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	unsigned long caller = mrpin_umem_caller(ret);
	u8 kind = mrpin_peer_guess(addr, size);
	struct mrpin_pin *pin;
	struct ib_umem *umem;

again:
	pin = mrpin_pin_prepare(ibdev, addr, size, caller, kind);
	if (IS_ERR(pin))
		return mrpin_umem_refused(pin);
	umem = ib_umem_get_peer(ibdev, addr, size, access, peer_mem_flags);
	if (IS_ERR(umem) || !pin)
		return mrpin_umem_pinned(pin, umem, addr, size, access);
	if (mrpin_pin_record(pin, umem)) {
		/* Host pages where peer memory was guessed: again, charged. */
		ib_umem_release(umem);
		kind = 0;
		goto again;
	}
	mrpin_hook_pinner_leave();
	return umem;
}
#endif

#ifdef MRPIN_UMEM_DMABUF
/*
 * The dma-buf imports, tracked as registrations of memory that is not the
 * host's to pin (pin.c, MRPIN_PIN_DMABUF): no host bytes, counted as
 * peer memory and as MRs.  The range is [offset, offset + size) of the
 * dma-buf, not a user address.  A failed import is the exporter's or the
 * device's failure, not a pin's: it is rolled back, not explained.
 */
static struct mrpin_pin *mrpin_dmabuf_prepare(struct ib_device *ibdev,
					      unsigned long offset,
					      size_t size, unsigned long ret)
{
	return mrpin_pin_prepare(ibdev, offset, size, mrpin_umem_caller(ret),
				 MRPIN_PIN_PEER | MRPIN_PIN_DMABUF);
}

static struct ib_umem_dmabuf *mrpin_dmabuf_made(struct mrpin_pin *pin,
						struct ib_umem_dmabuf *umem)
{
	if (IS_ERR(pin)) {
		umem = ERR_CAST(pin);
	} else if (IS_ERR(umem)) {
		if (pin)
			mrpin_pin_abort(pin);
	} else if (pin) {
		mrpin_pin_record(pin, &umem->umem);
	}
	mrpin_hook_pinner_leave();
	return umem;
}

static struct ib_umem_dmabuf *
mrpin_umem_dmabuf_get(struct ib_device *ibdev, unsigned long offset,
		      size_t size, int fd, int access,
		      const struct dma_buf_attach_ops *ops)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	struct mrpin_pin *pin = mrpin_dmabuf_prepare(ibdev, offset, size, ret);
	struct ib_umem_dmabuf *umem = NULL;

	if (!IS_ERR(pin))
		umem = ib_umem_dmabuf_get(ibdev, offset, size, fd, access, ops);
	return mrpin_dmabuf_made(pin, umem);
}
#endif

#ifdef MRPIN_HAVE_UMEM_DMABUF_GET_PINNED
static struct ib_umem_dmabuf *
mrpin_umem_dmabuf_get_pinned(struct ib_device *ibdev, unsigned long offset,
			     size_t size, int fd, int access)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	struct mrpin_pin *pin = mrpin_dmabuf_prepare(ibdev, offset, size, ret);
	struct ib_umem_dmabuf *umem = NULL;

	if (!IS_ERR(pin))
		umem = ib_umem_dmabuf_get_pinned(ibdev, offset, size, fd,
						 access);
	return mrpin_dmabuf_made(pin, umem);
}
#endif

#ifdef MRPIN_HAVE_UMEM_DMABUF_WITH_DMA_DEVICE
static struct ib_umem_dmabuf *
mrpin_umem_dmabuf_get_pinned_with_dma_device(struct ib_device *ibdev,
					     struct device *dma_device,
					     unsigned long offset, size_t size,
					     int fd, int access)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	struct mrpin_pin *pin = mrpin_dmabuf_prepare(ibdev, offset, size, ret);
	struct ib_umem_dmabuf *umem = NULL;

	if (!IS_ERR(pin))
		umem = ib_umem_dmabuf_get_pinned_with_dma_device(ibdev,
								 dma_device,
								 offset, size,
								 fd, access);
	return mrpin_dmabuf_made(pin, umem);
}
#endif

#ifdef MRPIN_HAVE_UMEM_DMABUF_REVOCABLE
/* Returns with the dma-buf's reservation lock held: recorded under it. */
static struct ib_umem_dmabuf *
mrpin_umem_dmabuf_get_pinned_revocable_and_lock(struct ib_device *ibdev,
						unsigned long offset,
						size_t size, int fd,
						int access)
{
	unsigned long ret = (unsigned long)__builtin_return_address(0);
	struct mrpin_pin *pin = mrpin_dmabuf_prepare(ibdev, offset, size, ret);
	struct ib_umem_dmabuf *umem = NULL;

	if (!IS_ERR(pin))
		umem = ib_umem_dmabuf_get_pinned_revocable_and_lock(ibdev,
								    offset,
								    size, fd,
								    access);
	return mrpin_dmabuf_made(pin, umem);
}
#endif

#ifdef MRPIN_UMEM_DESC
/*
 * ib_umem_get_desc(), tracked when it pins by address; a dma-buf
 * descriptor goes through untouched, to ib_umem_dmabuf_get_pinned(),
 * whose wrapper tracks it.  Anything ib_umem_get_desc() would refuse before
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
		mrpin_hook_pinner_leave();
		return umem;
	}
	pin = mrpin_pin_prepare(ibdev, desc->addr, desc->length,
				mrpin_umem_caller(ret), 0);
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

	pin = mrpin_pin_prepare(ibdev, addr, size, ret, MRPIN_PIN_ODP);
	if (IS_ERR(pin))
		return ERR_CAST(mrpin_umem_refused(pin));
	umem_odp = ib_umem_odp_get(ibdev, addr, size, access, ops);
	if (IS_ERR(umem_odp)) {
		mrpin_pin_failed(pin, addr, size, ib_access_writable(access),
				 true, PTR_ERR(umem_odp));
		mrpin_reg_explained();
	} else if (pin) {
		mrpin_pin_record(pin, &umem_odp->umem);
	}
	mrpin_hook_pinner_leave();
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

/*
 * A driver's reg_user_mr(), watched: the device's refusal is reported,
 * unless the pin path already said why the registration failed.
 */
static struct ib_mr *mrpin_reg_user_mr(struct ib_pd *pd, u64 start,
				       u64 length, u64 virt_addr, int access,
				       MRPIN_REG_USER_MR_DMAH
				       struct ib_udata *udata)
{
	struct ib_device *ibdev = pd->device;
	struct ib_mr *mr;
	int slot;

	slot = mrpin_reg_enter();
	mr = ibdev->ops.reg_user_mr(pd, start, length, virt_addr, access,
				    MRPIN_REG_USER_MR_DMAH_ARG udata);
	if (!mrpin_reg_leave(slot) && IS_ERR(mr))
		mrpin_fail_device(ibdev, start, length,
				  access & IB_ACCESS_ON_DEMAND, PTR_ERR(mr));
	mrpin_hook_pinner_leave();
	return mr;
}

/**
 * mrpin_hook_driver_add() - watch the registrations a new device refuses
 * @ibdev: the device
 *
 * Its driver's reg_user_mr() joins the filter with the driver's first
 * device.  A device without one (no user MRs), or one mrpin cannot watch,
 * still has its pins tracked.
 *
 * Context: process context (ib_client add()).
 * Return: whether the device counts among its driver's watched ones: only
 * then may mrpin_hook_driver_remove() be called for it.
 */
bool mrpin_hook_driver_add(struct ib_device *ibdev)
{
	unsigned long fn = (unsigned long)ibdev->ops.reg_user_mr;
	struct mrpin_driver *d, *free = NULL;
	bool added = false;
	int ret;

	if (!fn)
		return false;
	mutex_lock(&mrpin_drivers_lock);
	if (mrpin_drivers_off)
		goto out;
	for (d = mrpin_drivers; d < mrpin_drivers + MRPIN_DRIVERS; d++) {
		if (d->fn == fn) {
			d->devices++;
			added = true;
			goto out;
		}
		if (!d->fn && !free)
			free = d;
	}
	if (!free) {
		pr_warn("mrpin: %s: too many drivers to watch for refused registrations\n",
			dev_name(&ibdev->dev));
		goto out;
	}
	/* Known before it is traced: the thunk matches exact addresses. */
	free->devices = 1;
	WRITE_ONCE(free->fn, fn);
	ret = ftrace_set_filter_ip(&mrpin_hook_ops, fn, 0, 0);
	if (ret) {
		pr_warn("mrpin: %s: cannot watch %ps for refused registrations: %d\n",
			dev_name(&ibdev->dev), (void *)fn, ret);
		WRITE_ONCE(free->fn, 0);
		goto out;
	}
	added = true;
out:
	mutex_unlock(&mrpin_drivers_lock);
	return added;
}

/**
 * mrpin_hook_driver_remove() - stop watching a device that goes
 * @ibdev: a device mrpin_hook_driver_add() counted
 *
 * Context: process context (ib_client remove()).
 */
void mrpin_hook_driver_remove(struct ib_device *ibdev)
{
	unsigned long fn = (unsigned long)ibdev->ops.reg_user_mr;
	struct mrpin_driver *d;

	mutex_lock(&mrpin_drivers_lock);
	for (d = mrpin_drivers; fn && d < mrpin_drivers + MRPIN_DRIVERS; d++) {
		if (d->fn != fn || --d->devices)
			continue;
		/*
		 * Out of the filter first.  A thunk still running for it
		 * that misses it afterwards lets the call through, and one
		 * that finds it sends it to the wrapper of its prototype:
		 * neither needs a wait.
		 */
		if (!mrpin_drivers_off)
			ftrace_set_filter_ip(&mrpin_hook_ops, fn, 1, 0);
		WRITE_ONCE(d->fn, 0);
	}
	mutex_unlock(&mrpin_drivers_lock);
}

/* No driver joins or leaves the filter any more: it is gone. */
static void mrpin_drivers_stop(void)
{
	mutex_lock(&mrpin_drivers_lock);
	mrpin_drivers_off = true;
	mutex_unlock(&mrpin_drivers_lock);
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

/*
 * The address of the kernel function @name (in module @mod, when it is
 * not NULL and the RDMA core is modular), or 0.  kallsyms_lookup_name()
 * has no export; a kprobe looks the name up and is gone at once.
 * "ib_core:name" looks in ib_core alone: a function of that name
 * elsewhere is never taken for ib_core's.
 */
static unsigned long mrpin_kernel_fn(const char *mod, const char *name)
{
	struct kprobe kp = { };
	unsigned long addr = 0;
	char *qualified;

	if (!IS_MODULE(CONFIG_INFINIBAND))
		mod = NULL;
	qualified = kasprintf(GFP_KERNEL, "%s%s%s", mod ?: "", mod ? ":" : "",
			      name);
	if (!qualified)
		return 0;
	kp.symbol_name = qualified;
	if (!register_kprobe(&kp)) {
		addr = (unsigned long)kp.addr;
		unregister_kprobe(&kp);
	}
	kfree(qualified);
	return addr;
}

/* Trace @hook's function, found first if it has no export. */
static int mrpin_hook_filter(struct mrpin_hook *hook)
{
	int ret;

	if (!hook->target) {
		hook->target = mrpin_kernel_fn("ib_core", hook->name);
		if (!hook->target) {
			pr_err("mrpin: ib_core has no %s to trace (inlined or renamed?): mrpin would miss pins, so it does not load\n",
			       hook->name);
			return -ENOENT;
		}
	}
	ret = ftrace_set_filter_ip(&mrpin_hook_ops, hook->target, 0, 0);
	if (ret)
		pr_err("mrpin: cannot trace %s: %d\n", hook->name, ret);
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
	struct mrpin_hook *hook;
	int ret;

	/* Each wrapper has its function's prototype, or no build. */
	BUILD_BUG_ON(!__same_type(&mrpin_reg_user_mr,
				  ((const struct ib_device_ops *)NULL)->reg_user_mr));
	BUILD_BUG_ON(!__same_type(&ib_umem_release, &mrpin_umem_release));
#if IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING)
	BUILD_BUG_ON(!__same_type(&ib_umem_odp_get, &mrpin_umem_odp_get));
	BUILD_BUG_ON(!__same_type(&ib_umem_odp_release,
				  &mrpin_umem_odp_release));
#endif
#ifdef MRPIN_UMEM_DESC
	BUILD_BUG_ON(!__same_type(&ib_umem_get_desc, &mrpin_umem_get_desc));
#else
	BUILD_BUG_ON(!__same_type(&ib_umem_get, &mrpin_umem_get_va));
#endif
#ifdef MRPIN_UMEM_DMABUF
	BUILD_BUG_ON(!__same_type(&ib_umem_dmabuf_get, &mrpin_umem_dmabuf_get));
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_GET_PINNED
	BUILD_BUG_ON(!__same_type(&ib_umem_dmabuf_get_pinned,
				  &mrpin_umem_dmabuf_get_pinned));
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_WITH_DMA_DEVICE
	BUILD_BUG_ON(!__same_type(&ib_umem_dmabuf_get_pinned_with_dma_device,
				  &mrpin_umem_dmabuf_get_pinned_with_dma_device));
#endif
#ifdef MRPIN_HAVE_UMEM_DMABUF_REVOCABLE
	BUILD_BUG_ON(!__same_type(&ib_umem_dmabuf_get_pinned_revocable_and_lock,
				  &mrpin_umem_dmabuf_get_pinned_revocable_and_lock));
#endif
#ifdef MRPIN_HAVE_UMEM_GET_PEER
	BUILD_BUG_ON(!__same_type(&ib_umem_get_peer, &mrpin_umem_get_peer));
#else
	/*
	 * Built against headers without the peer interface (the inbox ones),
	 * loaded where ib_core has it (OFED on a kernel without MODVERSIONS,
	 * which would otherwise refuse the load): its drivers' pins would
	 * all go unseen.
	 */
	if (mrpin_kernel_fn(NULL, "ib_umem_get_peer")) {
		pr_err("mrpin: the RDMA core pins with ib_umem_get_peer() (NVIDIA OFED, or a kernel with the peer-memory interface), but this mrpin.ko was built against headers without it and would miss those pins: build it against that RDMA core's headers (OFA_DIR)\n");
		ret = -ENOEXEC;
		goto err_drivers;
	}
#endif
	ret = mrpin_text_sizes(mrpin_pin_helpers,
			       ARRAY_SIZE(mrpin_pin_helpers));
	if (!ret)
		ret = mrpin_text_sizes(mrpin_release_text,
				       ARRAY_SIZE(mrpin_release_text));
#ifdef MRPIN_HAVE_UMEM_DMABUF_GET_PINNED
	if (!ret)
		ret = mrpin_text_sizes(mrpin_dmabuf_pinned_text,
				       ARRAY_SIZE(mrpin_dmabuf_pinned_text));
#endif
	if (ret)
		goto err_drivers;

	ret = percpu_ref_init(&mrpin_hook_pinners, mrpin_hook_pinners_gone,
			      PERCPU_REF_INIT_DEAD, GFP_KERNEL);
	if (ret)
		goto err_drivers;
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
	if (ret == -EBUSY) {
		pr_err("mrpin: cannot redirect the umem functions: function tracing is off (sysctl kernel.ftrace_enabled=0) or another user of ftrace already redirects one of them (a live patch?)\n");
		goto err_filter;
	}
	if (ret) {
		pr_err("mrpin: cannot redirect the umem functions: %d\n", ret);
		goto err_filter;
	}
	/* Every entry point now reaches the thunk on every CPU. */
	percpu_ref_reinit(&mrpin_hook_pinners);
	return 0;

err_filter:
	percpu_ref_exit(&mrpin_hook_releasers);
err_pinners:
	percpu_ref_exit(&mrpin_hook_pinners);
err_drivers:
	/* The drivers client.c added are in the filter already. */
	mrpin_drivers_stop();
	ftrace_free_filter(&mrpin_hook_ops);
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
	mrpin_drivers_stop();
	ftrace_free_filter(&mrpin_hook_ops);
	mrpin_hook_drain(&mrpin_hook_releasers, &mrpin_hook_releasers_drained);
	synchronize_rcu_tasks();
	percpu_ref_exit(&mrpin_hook_releasers);
	percpu_ref_exit(&mrpin_hook_pinners);
}
