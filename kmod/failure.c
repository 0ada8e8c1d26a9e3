// SPDX-License-Identifier: GPL-2.0
/*
 * Why a pin the kernel refused failed.
 *
 * mrpin refuses a pin before the real one is tried (policy.c, diag.c).  The
 * kernel's own refusals come back from the real pin as a bare errno, most
 * often ENOMEM, which reads the same whether RLIMIT_MEMLOCK was in the way
 * or the kernel was short of memory.  Once the real pin has failed,
 * mrpin_fail_explain() checks the facts that tell the causes apart, in the
 * order ib_umem_get() meets them:
 *
 *   EINVAL, EOVERFLOW	invalid: the range is empty or wraps
 *   EPERM		memlock, when RLIMIT_MEMLOCK is 0 and the task lacks
 *			CAP_IPC_LOCK (can_do_mlock() said no)
 *   ENOMEM		memlock, when the task lacks CAP_IPC_LOCK and VmPin
 *			plus the pin's pages is over RLIMIT_MEMLOCK (the kernel
 *			took its charge back before it returned); else nomem
 *   EFAULT		the first mapping over the range that cannot be
 *			pinned: unmapped (a hole), iomem (VM_IO, VM_PFNMAP),
 *			readonly (a writable pin, no VM_WRITE); else fault
 *   anything else	other
 *
 * An on-demand-paging registration charges and pins nothing, so RLIMIT_MEMLOCK
 * is never its cause: its ENOMEM is nomem, and it asks for 0 bytes.
 *
 * These are facts at the time of the check, not a replay of the kernel's
 * own: another thread may have unpinned or mapped in between, and the
 * answer is then the cause as it stands.  CAP_IPC_LOCK is asked only
 * where the kernel asked for it, without a second audit record.
 *
 * A registration can also fail in the device's driver, with no pin or
 * limit failing before it: rxe refuses when its MR table is full before it
 * pins, mlx5 after, when it cannot make the key.  hook.c watches each
 * driver's reg_user_mr() and calls mrpin_fail_device(): cause device, the
 * driver's errno, scope device:NAME, and the device's live pins against
 * its max_mr as usage and limit.
 *
 * A failure is counted by cause in `stats` and for the process when mrpin
 * tracks its pins (account.c), goes to `events` (action fail, the cause
 * as its key, VmPin and RLIMIT_MEMLOCK as usage and limit, the errno) and
 * the mrpin:mrpin_fail tracepoint, and to the kernel log only when the
 * global rule says log_failures=on: a failure that is not mrpin's own is
 * the program's to report, and a program retrying in a loop must not
 * flood the log.
 *
 * Locking: none of its own; mmap_read_lock() for the EFAULT walk.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/sched/signal.h>

#include "mrpin.h"

/*
 * Whether the task may lock memory beyond RLIMIT_MEMLOCK, as the kernel's
 * capable(CAP_IPC_LOCK) asked, without a second audit record.  Asked only
 * where the kernel asked it, in the same order.
 */
static bool mrpin_ipc_lock(void)
{
	return ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK);
}

/* The first reason a mapping over [@start, @end) cannot be pinned. */
static enum mrpin_fail_cause mrpin_fault_cause(unsigned long start,
					       unsigned long end,
					       bool writable)
{
	enum mrpin_fail_cause cause = MRPIN_FAIL_FAULT;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long addr = start;

	if (mmap_read_lock_killable(mm))
		return cause;
	while (addr < end) {
		vma = find_vma(mm, addr);
		if (!vma || vma->vm_start > addr) {
			cause = MRPIN_FAIL_UNMAPPED;
			break;
		}
		if (vma->vm_flags & (VM_IO | VM_PFNMAP)) {
			cause = MRPIN_FAIL_IOMEM;
			break;
		}
		if (writable && !(vma->vm_flags & VM_WRITE)) {
			cause = MRPIN_FAIL_READONLY;
			break;
		}
		addr = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return cause;
}

/**
 * mrpin_fail_explain() - say why the kernel refused a pin
 * @proc: the process's record, when mrpin tracks the pin; or NULL
 * @addr: the start of the user range
 * @size: its length in bytes
 * @writable: the pin asked for write access
 * @odp: it was an on-demand-paging registration, which pins nothing
 * @err: what the real pin returned (a negative errno)
 *
 * Context: process context (the registering task, with an mm), may sleep.
 */
void mrpin_fail_explain(struct mrpin_proc *proc, unsigned long addr,
			size_t size, bool writable, bool odp, int err)
{
	unsigned long memlock = rlimit(RLIMIT_MEMLOCK);
	struct mm_struct *mm = current->mm;
	enum mrpin_fail_cause cause;
	u64 pages, vm_pinned;
	bool wraps;
	struct mrpin_violation v = {
		.scope = MRPIN_SCOPE_PROCESS,
		.err = -err,
	};

	wraps = mrpin_range_wraps(addr, size);
	pages = wraps || odp ? 0 : mrpin_pin_bytes(addr, size) >> PAGE_SHIFT;
	vm_pinned = atomic64_read(&mm->pinned_vm);

	switch (err) {
	case -EINVAL:
	case -EOVERFLOW:
		cause = MRPIN_FAIL_INVALID;
		break;
	case -EPERM:
		cause = !odp && !memlock && !mrpin_ipc_lock() ?
			MRPIN_FAIL_MEMLOCK : MRPIN_FAIL_OTHER;
		break;
	case -ENOMEM:
		cause = !odp && vm_pinned + pages > memlock >> PAGE_SHIFT &&
			!mrpin_ipc_lock() ? MRPIN_FAIL_MEMLOCK : MRPIN_FAIL_NOMEM;
		break;
	case -EFAULT:
		cause = wraps ? MRPIN_FAIL_INVALID :
			mrpin_fault_cause(addr & PAGE_MASK,
					  PAGE_ALIGN(addr + size), writable);
		break;
	default:
		cause = MRPIN_FAIL_OTHER;
	}

	v.key = MRPIN_EVENT_FAIL + cause;
	v.asked = wraps ? size : pages << PAGE_SHIFT;
	v.usage = vm_pinned << PAGE_SHIFT;
	v.limit = memlock;
	rcu_read_lock();
	v.quiet = !mrpin_policy_global()->log_failures;
	rcu_read_unlock();
	mrpin_fail(proc, &v);
}

/**
 * mrpin_fail_device() - say that a device's driver refused a registration
 * @ibdev: the device
 * @start: the start of the user range
 * @length: its length in bytes
 * @odp: an on-demand-paging registration, which would have pinned nothing
 * @err: what the driver returned (a negative errno)
 *
 * Context: process context (the registering task), may sleep.
 */
void mrpin_fail_device(struct ib_device *ibdev, u64 start, u64 length,
		       bool odp, int err)
{
	struct mrpin_proc *proc = NULL;
	struct mrpin_dev *dev;
	struct mrpin_violation v = {
		.scope = MRPIN_SCOPE_DEVICE,
		.key = MRPIN_EVENT_FAIL + MRPIN_FAIL_DEVICE,
		.err = -err,
	};

	dev = mrpin_dev_get(ibdev);
	if (!dev)
		return;
	mrpin_dev_name(dev, v.path, sizeof(v.path));
	if (!odp && !mrpin_range_wraps(start, length))
		v.asked = mrpin_pin_bytes(start, length);
	v.usage = atomic64_read(&dev->usage.pins);
	v.limit = max(dev->max_mr, 0);
	rcu_read_lock();
	v.quiet = !mrpin_policy_global()->log_failures;
	rcu_read_unlock();
	if (current->mm) {
		proc = mrpin_proc_get_current();
		if (IS_ERR(proc))
			proc = NULL;
	}
	mrpin_fail(proc, &v);
	if (proc)
		mrpin_proc_put(proc);
	mrpin_dev_put(dev);
}
