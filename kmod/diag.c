// SPDX-License-Identifier: GPL-2.0
/*
 * Facts about each pin, for the classic registration mistakes.
 *
 * Registrations that fail are easy to find; the ones that hurt are those
 * that work.  mrpin sees every pin from inside the kernel and records, once
 * per pin:
 *
 *   stack	the range overlaps the main thread's stack (the VMA holding
 *		mm->start_stack) or the calling thread's stack block, known by
 *		where the C library keeps the thread's descriptor: a
 *		user-level thread's stack on the heap is not called stack.
 *		Checked before the pin: the global rule's stack=allow|warn|deny
 *		decides.
 *   backing	how many of the pinned pages sit in 2 MiB pages (THP or
 *		hugetlbfs) and 1 GiB pages, from the compound order of the
 *		pages the kernel pinned; the rest are 4 KiB pages.
 *   alignment	the largest power of two dividing the start, up to 1 GiB.
 *   oversized	the pin's bytes are at or above the global oversize= mark.
 *   call site	(when callsites=on) up to 8 user addresses: the syscall's
 *		instruction pointer, then the return addresses found by
 *		scanning the user stack (no user unwinder runs in the kernel):
 *		words that point into an executable file mapping, just after a
 *		call instruction, each kept once.
 * and, when the pin goes:
 *   lifetime	a log2 histogram per process (churn: registrations that
 *		live microseconds want a registration cache);
 *   cleanup	whether the kernel's cleanup released it (process exit, or
 *		closing the device file) instead of a deregistration: a leak,
 *		counted per program (comm, uid) in the `leaks` table (leaks.c).
 * Per device, an event when live pins cross mr_table_warn= of max_mr.
 *
 * The counters these facts feed, per process and for the machine, are
 * account.c's (mrpin_account_pinned_facts(), _released_facts()).
 *
 * Call sites are few (callsites=off by default) and large, so they live
 * beside the pins, in mrpin_callsites at the pin's slot, not in the record.
 *
 * Locking: none of its own; mmap_lock (read) while it looks at the VMAs.
 * mrpin_callsites has its internal lock; its readers hold RCU, and a call
 * site is freed after a grace period, as its pin is.
 */
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/ptrace.h>
#include <linux/scatterlist.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <rdma/ib_umem.h>

#include "arch.h"
#include "compat.h"
#include "mrpin.h"

#define MRPIN_CALLSITE_SCAN 512	/* words of user stack scanned */

DEFINE_XARRAY(mrpin_callsites);

/*
 * The top of the calling thread's stack block when @vma is a thread stack
 * the C library made, else 0.  Only what is certainly a stack counts: the
 * registration of a buffer that is not one must never be refused.
 *
 * glibc and musl put a thread's descriptor, where the thread pointer
 * points (x86-64's fs base, arm64's TPIDR_EL0), at the top of its stack
 * block, whether they mapped the block or the program gave it
 * (pthread_attr_setstack()).  So the VMA holding the stack pointer is that
 * thread's stack when the thread pointer lies in it above the stack
 * pointer, and the stack ends at the descriptor's page: the kernel merges
 * a thread stack with an adjacent anonymous mapping of the same
 * protection, and the VMA can go on above the block into a heap buffer.
 *
 * A user-level thread (Argobots, brpc's bthread, seastar, Boost.Context,
 * makecontext()) runs on a stack of its runtime's, cut from the heap or
 * from a pool: its stack pointer lies in that mapping, its thread pointer
 * in the kernel thread's stack or TLS block elsewhere.  The rest of that
 * mapping is heap, and where the stack ends in it is unknown: none of it
 * is called stack.  The main thread's stack is the main stack: when its
 * stack pointer is elsewhere, it runs a user-level thread (or a signal
 * handler on an alternate stack).  And the brk heap never holds a C
 * library's thread stack, even where a VMA merged with it reaches one.
 */
static unsigned long mrpin_thread_stack_top(struct mm_struct *mm,
					    struct vm_area_struct *vma,
					    unsigned long sp, unsigned long tp)
{
	if (thread_group_leader(current) ||
	    sp - vma->vm_start >= vma->vm_end - vma->vm_start ||
	    tp <= sp || tp >= vma->vm_end)
		return 0;
	if (!vma_is_anonymous(vma) || (vma->vm_flags & VM_SHARED))
		return 0;
	if (vma->vm_start < mm->brk && vma->vm_end > mm->start_brk)
		return 0;
	return PAGE_ALIGN(tp + 1);
}

/*
 * Whether [start, start + length) is stack memory: the main thread's stack
 * VMA (VM_GROWSDOWN, never merged with a mapping without it), or the
 * registering thread's stack block, as mrpin_thread_stack_top() knows it.
 */
static bool mrpin_range_on_stack(unsigned long start, size_t length)
{
	unsigned long sp = user_stack_pointer(current_pt_regs());
	unsigned long tp = mrpin_user_thread_pointer();
	unsigned long end = start + length, top;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	bool hit = false;

	if (mmap_read_lock_killable(mm))
		return false;
	/* The VMAs the range overlaps, one walk each: usually one VMA. */
	for (vma = find_vma_intersection(mm, start, end); vma && !hit;
	     vma = vma->vm_end < end ?
		   find_vma_intersection(mm, vma->vm_end, end) : NULL) {
		if (mm->start_stack - vma->vm_start <
		    vma->vm_end - vma->vm_start) {
			hit = true;
		} else {
			top = mrpin_thread_stack_top(mm, vma, sp, tp);
			hit = start < top;
		}
	}
	mmap_read_unlock(mm);
	return hit;
}

static bool mrpin_callsite_has(const struct mrpin_callsite *cs,
			       unsigned long ip)
{
	unsigned int i;

	for (i = 0; i < cs->depth; i++)
		if (cs->ip[i] == ip)
			return true;
	return false;
}

static struct mrpin_callsite *mrpin_callsite_save(const struct mrpin_pin *pin)
{
	struct pt_regs *regs = current_pt_regs();
	unsigned long sp = user_stack_pointer(regs), word;
	struct mm_struct *mm = current->mm;
	struct mrpin_callsite *cs;
	struct vm_area_struct *vma;
	int i;

	cs = kzalloc_obj(*cs, GFP_KERNEL_ACCOUNT);
	if (!cs)
		return NULL;
	cs->pin = pin;
	cs->ip[cs->depth++] = instruction_pointer(regs);
	if (mmap_read_lock_killable(mm))
		return cs;
	for (i = 0; i < MRPIN_CALLSITE_SCAN && cs->depth < MRPIN_CALLSITE_DEPTH;
	     i++, sp += sizeof(word)) {
		/* No faults under mmap_lock: the stack's top is resident. */
		if (copy_from_user_nofault(&word, (void __user *)sp,
					   sizeof(word)))
			break;
		vma = vma_lookup(mm, word);
		if (!vma || !(vma->vm_flags & VM_EXEC) || !vma->vm_file ||
		    mrpin_callsite_has(cs, word) ||
		    !mrpin_user_follows_call(word))
			continue;
		cs->ip[cs->depth++] = word;
	}
	mmap_read_unlock(mm);
	return cs;
}

static void mrpin_report_diag(struct mrpin_pin *pin, enum mrpin_scope scope,
			      const char *name, int key, u64 usage, u64 limit,
			      bool warn)
{
	struct mrpin_violation v = {
		.scope = scope,
		.key = key,
		.asked = mrpin_pin_charged(pin),
		.usage = usage,
		.limit = limit,
		.warn = warn,
	};

	strscpy(v.path, name, sizeof(v.path));
	if (!warn) {
		mrpin_deny(pin->charge.proc, &v);
		return;
	}
	atomic64_inc(&mrpin_stats.warnings_total);
	mrpin_report(&v);
}

/**
 * mrpin_diag_prepare() - the facts known before the pin, and the stack rule
 * @pin: the pin being prepared (start, length, owner and device set)
 *
 * Context: process context (the registering task), may sleep.
 * Return: 0, or -ENOMEM when the global rule denies stack memory.
 */
int mrpin_diag_prepare(struct mrpin_pin *pin)
{
	u64 bytes = mrpin_pin_charged(pin);
	const struct mrpin_limits *global;
	bool callsites;
	u64 oversize;
	u8 stack;

	rcu_read_lock();
	global = mrpin_policy_global();
	stack = global->stack;
	oversize = global->oversize;
	callsites = global->callsites;
	rcu_read_unlock();

	pin->align_shift = __ffs(pin->start | SZ_1G);
	if (bytes >= oversize)
		pin->flags |= MRPIN_PIN_OVERSIZED;
	/* A dma-buf's range is an offset in it, not a user address. */
	if (!(pin->flags & MRPIN_PIN_DMABUF) &&
	    mrpin_range_on_stack(pin->start, pin->length)) {
		pin->flags |= MRPIN_PIN_STACK;
		if (stack == MRPIN_STACK_DENY) {
			mrpin_report_diag(pin, MRPIN_SCOPE_GLOBAL, "",
					  MRPIN_EVENT_STACK, 0, 0, false);
			return -ENOMEM;
		}
		if (stack == MRPIN_STACK_WARN)
			mrpin_report_diag(pin, MRPIN_SCOPE_GLOBAL, "",
					  MRPIN_EVENT_STACK, 0, 0, true);
	}
	/*
	 * Saved once pinned, under mmap_lock: not for a dma-buf registration,
	 * whose import may return holding the dma-buf's reservation lock (the
	 * revocable one), which ranks below mmap_lock.
	 */
	if (callsites && !(pin->flags & MRPIN_PIN_DMABUF))
		pin->flags |= MRPIN_PIN_CALLSITE;
	return 0;
}

/*
 * Count the pinned pages that sit in 2 MiB and 1 GiB pages: one step per
 * folio (a 2 MiB page is one step, not 512), and a short one for a small
 * page.
 */
static void mrpin_count_backing(struct mrpin_pin *pin, struct ib_umem *umem)
{
	unsigned long left, run;
	struct scatterlist *sg;
	struct folio *folio;
	struct page *page;
	unsigned int i;

	for_each_sgtable_sg(&umem->sgt_append.sgt, sg, i) {
		page = sg_page(sg);
		for (left = sg->length >> PAGE_SHIFT; left; left -= run) {
			folio = page_folio(page);
			run = 1;
			if (folio_test_large(folio)) {
				/* The rest of the folio, within the entry. */
				run = min_t(unsigned long, left,
					    folio_nr_pages(folio) -
					    (page_to_pfn(page) - folio_pfn(folio)));
				if (folio_order(folio) >= PUD_SHIFT - PAGE_SHIFT)
					pin->pages_1g += run;
				else if (folio_order(folio) >=
					 PMD_SHIFT - PAGE_SHIFT)
					pin->pages_2m += run;
			}
			page = nth_page(page, run);
		}
	}
}

/*
 * An event when a device's MR table crosses the mark; re-armed below it.
 * @going is 1 when @pin is being released (and still counted), else 0.
 */
static void mrpin_mr_table_check(struct mrpin_pin *pin, int going)
{
	struct mrpin_dev *dev = pin->charge.dev;
	s64 pins = atomic64_read(&dev->usage.pins) - going;
	char name[IB_DEVICE_NAME_MAX];
	u8 pct;
	u64 mark;

	rcu_read_lock();
	pct = mrpin_policy_global()->mr_table_pct;
	rcu_read_unlock();
	if (!pct || dev->max_mr <= 0)
		return;
	mark = DIV_ROUND_UP((u64)dev->max_mr * pct, 100);
	if (pins < mark) {
		atomic_set(&dev->mr_table_warned, 0);
		return;
	}
	if (atomic_xchg(&dev->mr_table_warned, 1))
		return;
	mrpin_dev_name(dev, name, sizeof(name));
	mrpin_report_diag(pin, MRPIN_SCOPE_DEVICE, name, MRPIN_EVENT_MR_TABLE,
			  pins, mark, true);
}

/**
 * mrpin_diag_pinned() - the facts known once the kernel made the pin
 * @pin: the pin
 * @umem: what ib_umem_get() returned
 *
 * Context: process context (the registering task).
 */
void mrpin_diag_pinned(struct mrpin_pin *pin, struct ib_umem *umem)
{
	struct mrpin_callsite *cs;

	if (pin->flags & MRPIN_PIN_CALLSITE) {
		/* A diagnostic: without memory for it, the pin goes on. */
		cs = mrpin_callsite_save(pin);
		if (!cs || xa_err(xa_store(&mrpin_callsites, pin->slot, cs,
					   GFP_KERNEL))) {
			kfree(cs);
			pin->flags &= ~MRPIN_PIN_CALLSITE;
		}
	}
	/*
	 * An ODP umem has no pages of its own: they come and go on faults.  A
	 * peer umem's are a device's.
	 */
	if (!(pin->flags & MRPIN_PIN_NO_HOST))
		mrpin_count_backing(pin, umem);

	mrpin_account_pinned_facts(pin->charge.proc,
				   (u64)pin->pages_2m << PAGE_SHIFT,
				   (u64)pin->pages_1g << PAGE_SHIFT, pin->flags,
				   pin->created_ns);
	mrpin_mr_table_check(pin, 0);
}

/**
 * mrpin_diag_release() - the facts known when the pin goes
 * @pin: the pin
 * @cleanup: the kernel's cleanup released it (exit, close), not a
 *	deregistration
 *
 * Context: process context (the releasing task, not always the owner).
 */
void mrpin_diag_release(struct mrpin_pin *pin, bool cleanup)
{
	u64 age_us = div_u64(mrpin_age_ns(pin->created_ns, local_clock()),
			     NSEC_PER_USEC);
	int bucket = age_us ? fls64(age_us) - 1 : 0;

	bucket = min(bucket, MRPIN_LIFE_BUCKETS - 1);
	mrpin_account_released_facts(pin->charge.proc,
				     (u64)pin->pages_2m << PAGE_SHIFT,
				     (u64)pin->pages_1g << PAGE_SHIFT, bucket,
				     cleanup);
	if (cleanup)
		mrpin_leak_add(pin->charge.proc, mrpin_pin_charged(pin));
	if (atomic_read(&pin->charge.dev->mr_table_warned))
		mrpin_mr_table_check(pin, 1);
}

/**
 * mrpin_diag_free() - drop what the facts keep beside a pin that goes
 * @pin: the pin, out of the views' tables, its slot not yet reused
 *
 * Its call site, if any, is freed after the RCU readers that may still
 * hold it.
 *
 * Context: process context, may sleep.
 */
void mrpin_diag_free(struct mrpin_pin *pin)
{
	if (pin->flags & MRPIN_PIN_CALLSITE)
		kfree_rcu_mightsleep(xa_erase(&mrpin_callsites, pin->slot));
}
