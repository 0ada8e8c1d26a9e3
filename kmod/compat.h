/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version shims.  Everything mrpin needs that changed name or shape
 * across kernel releases sits here, each shim naming the change it papers
 * over.  mrpin is built and tested on 6.1.
 */
#ifndef _MRPIN_COMPAT_H
#define _MRPIN_COMPAT_H

#include <linux/ftrace.h>

/*
 * Redirect a traced function: set the instruction pointer the ftrace
 * trampoline returns to.  v6.7 ("ftrace: abstract DYNAMIC_FTRACE_WITH_ARGS
 * accesses") replaced the ftrace_instruction_pointer_set() macro with
 * ftrace_regs_set_instruction_pointer().
 */
static __always_inline void mrpin_ftrace_set_ip(struct ftrace_regs *fregs,
						unsigned long ip)
{
#ifdef ftrace_instruction_pointer_set
	ftrace_instruction_pointer_set(fregs, ip);
#else
	ftrace_regs_set_instruction_pointer(fregs, ip);
#endif
}

#endif /* _MRPIN_COMPAT_H */
