/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What mrpin reads of the architecture and of the system call ABI: which
 * system call a releasing task is in, whether a user address follows a
 * call instruction, the user thread pointer.  x86-64 only today; a second
 * architecture has this one place to go.  Kernel-version shims are in
 * compat.h.
 */
#ifndef _MRPIN_ARCH_H
#define _MRPIN_ARCH_H

#include <linux/mm_types.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/uaccess.h>
#include <asm/msr.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

#include "compat.h"

/*
 * Whether the task releasing a pin does so as part of the kernel's cleanup
 * (the owner exiting, or closing the device file) rather than an explicit
 * deregistration (an ioctl or write on the device file).  ib_core does not
 * say; the releasing context does: a kernel thread, an exiting task, a
 * task other than the owner, or a task inside close()/exit()/dup2() (which
 * closes the file; its final fput() runs as task work on the way back to
 * user space, still in that system call).
 */
static inline bool mrpin_release_is_cleanup(const struct mm_struct *owner)
{
	struct pt_regs *regs;
	long nr;

	if (current->flags & (PF_EXITING | PF_KTHREAD) || current->mm != owner)
		return true;
	regs = task_pt_regs(current);
	nr = syscall_get_nr(current, regs);
	switch (nr) {
	case __NR_close:
	case __NR_close_range:
	case __NR_exit:
	case __NR_exit_group:
#ifdef __NR_dup2
	case __NR_dup2:
#endif
	case __NR_dup3:
		return true;
	default:
		return false;
	}
}

/*
 * Whether the user address @ip follows a call instruction, as a return
 * address does (x86-64: call rel32 is E8 + 4 bytes; an indirect call is FF
 * with ModRM reg 2, 2 to 7 bytes long).  Reads user memory without
 * faulting: the caller may hold mmap_lock.
 */
static inline bool mrpin_user_follows_call(unsigned long ip)
{
	static const int lens[] = { 2, 3, 4, 6, 7 };
	u8 code[8];
	int i;

	if (ip < sizeof(code) ||
	    copy_from_user_nofault(code, (void __user *)(ip - sizeof(code)),
				   sizeof(code)))
		return false;
	if (code[sizeof(code) - 5] == 0xe8)
		return true;
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		u8 *insn = &code[sizeof(code) - lens[i]];

		if (insn[0] == 0xff && ((insn[1] >> 3) & 7) == 2)
			return true;
	}
	return false;
}

/*
 * The current task's user thread pointer (x86-64: the FS base, which the
 * kernel does not change on entry), or 0.  glibc and musl put it at the top
 * of a thread's stack block: the thread's struct pthread, with its static
 * TLS just below.  Read from the register, not from thread.fsbase, which is
 * stale while the task runs if user space wrote it with WRFSBASE.  0 where
 * it is not read: no thread's stack block is known, only the main stack
 * is called stack there.
 */
static inline unsigned long mrpin_user_thread_pointer(void)
{
#ifdef CONFIG_X86_64
	unsigned long base;

	rdmsrq(MSR_FS_BASE, base);
	return base;
#else
	return 0;
#endif
}

#endif /* _MRPIN_ARCH_H */
