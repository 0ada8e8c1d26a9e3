// SPDX-License-Identifier: GPL-2.0
/*
 * callsite-target: a live process for the host tests of doctor's call
 * sites.  It prints the frames mrpin would record had register_buffers()
 * registered memory ("frames A,B,C,D": an address in libc, as the syscall's,
 * another in libc, the return address into register_buffers(), the one into
 * main()) and the line of the call ("line N"), then waits for EOF on stdin.
 * Built with -g: doctor must name register_buffers and that line, not the
 * line inside the inline wrapper reg_mr() that the return address is in.
 */
#include <stdio.h>
#include <unistd.h>

/* Built with -O0: nothing is inlined but what must be. */
#define __always_inline __attribute__((always_inline))

static void fake_reg_mr(int line)
{
	char buf[64];

	printf("frames %p,%p,%p,%p\nline %d\n", (void *)read,
	       (void *)((char *)printf + 16), __builtin_return_address(0),
	       __builtin_return_address(1), line);
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
}

/* As verbs.h's ibv_reg_mr(): an inline wrapper around the real call. */
static inline __always_inline void reg_mr(int line)
{
	fake_reg_mr(line);
}

static void register_buffers(void)
{
	reg_mr(__LINE__);
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

int main(void)
{
	register_buffers();
	return 0;
}
