/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version shims.  Everything mrpin needs that changed name or shape
 * across kernel releases sits here, each shim naming the change it papers
 * over; what depends on the architecture is in arch.h.  mrpin is built and
 * tested on 6.1, 6.12 and 7.x (Debian's 6.1, 6.12 and 7.3), x86-64.  Where
 * a change can be told by what the headers define, the shim tests that,
 * not the version number, so that a distribution kernel with the change
 * backported is served too.
 */
#ifndef _MRPIN_COMPAT_H
#define _MRPIN_COMPAT_H

#include <linux/ftrace.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>
#include <asm/ibt.h>
#include <asm/msr.h>

#include "probes.h"

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

/*
 * Whether @ip, as ftrace passes it to a callback, is the entry of @func:
 * its fentry call, which an ENDBR precedes when the kernel is built with
 * IBT (x86-64, v5.18; ENDBR_INSN_SIZE is 0 without it).
 */
static __always_inline bool mrpin_ftrace_ip_is(unsigned long ip,
					       unsigned long func)
{
	return ip == func || ip == func + ENDBR_INSN_SIZE;
}

/*
 * The VA pin: where ib_core pins user memory by address, the call mrpin
 * redirects to charge a pin before it is made.
 *
 * 6.1 and 6.12: drivers call the exported ib_umem_get(device, addr, size,
 * access).
 *
 * 7.x: ib_core's umem buffer descriptors (struct ib_uverbs_buffer_desc,
 * IB_UVERBS_BUFFER_DESC_FLAGS_KNOWN_MASK; in Debian's 7.2 and 7.3) removed
 * ib_umem_get().  Drivers call ib_umem_get_va() (inline),
 * ib_umem_get_attr(_or_va)(), ib_umem_get_desc() or
 * ib_umem_get_cq_buf(_or_va)(), and every VA pin ends in the static
 * __ib_umem_get_va(device, addr, size, access): ib_umem_get()'s arguments.
 * ib_umem_get_desc() reaches it, and so does ib_umem_get_cq_buf_or_va()
 * without ib_umem_get_desc() (the compiler inlines the descriptor path
 * there).  hook.c redirects both: ib_umem_get_desc() by address and
 * __ib_umem_get_va(), which has no export, by name; a kernel that inlines
 * or renames it has none to redirect, and mrpin refuses to load rather
 * than track some pins only.  The wrappers pin with ib_umem_get_desc() and
 * a VA descriptor, never by calling the static function through a pointer:
 * under IBT an indirect call must land on an ENDBR, which a static
 * function need not have.
 */
#ifdef IB_UVERBS_BUFFER_DESC_FLAGS_KNOWN_MASK
#define MRPIN_UMEM_DESC 1
#define MRPIN_UMEM_GET_VA_NAME "__ib_umem_get_va"

static inline struct ib_umem *mrpin_umem_pin_va(struct ib_device *device,
						unsigned long addr,
						size_t size, int access)
{
	const struct ib_uverbs_buffer_desc desc = {
		.type = IB_UVERBS_BUFFER_TYPE_VA,
		.addr = addr,
		.length = size,
	};

	return ib_umem_get_desc(device, &desc, access);
}
#else
static inline struct ib_umem *mrpin_umem_pin_va(struct ib_device *device,
						unsigned long addr,
						size_t size, int access)
{
	return ib_umem_get(device, addr, size, access);
}
#endif

/*
 * The peer-memory interface (probe.sh): NVIDIA OFED's ib_core, and the
 * kernels of Ubuntu and NVIDIA that carry it on the inbox stack.  Its
 * drivers (OFED's mlx5, for every buffer) pin with ib_umem_get_peer(),
 * which pins host pages as ib_umem_get() does, or, when that fails and a
 * peer memory client (nvidia-peermem: GPU memory) claims the range, makes
 * an is_peer umem that holds no host page.  Both are exported wrappers of
 * one static function, which neither calls the other: hook.c redirects
 * both.
 */
#ifdef MRPIN_HAVE_UMEM_GET_PEER
static inline bool mrpin_umem_is_peer(const struct ib_umem *umem)
{
	return umem->is_peer;
}
#else
static inline bool mrpin_umem_is_peer(const struct ib_umem *umem)
{
	return false;
}
#endif

/*
 * dma-buf registrations (probe.sh, each entry point its own probe): a
 * driver imports a dma-buf (a GPU's memory, mostly) with
 * ib_umem_dmabuf_get(), ib_umem_dmabuf_get_pinned(),
 * ib_umem_dmabuf_get_pinned_with_dma_device() or
 * ib_umem_dmabuf_get_pinned_revocable_and_lock(), as its kernel has them;
 * without CONFIG_INFINIBAND_USER_MEM they are stubs.  The pinned one
 * calls ib_umem_dmabuf_get() (6.1) or the one with a DMA device (later):
 * hook.c lets a call from it through, as already in a wrapper.
 */
#if IS_ENABLED(CONFIG_INFINIBAND_USER_MEM) && defined(MRPIN_HAVE_UMEM_DMABUF_GET)
#define MRPIN_UMEM_DMABUF 1

static inline bool mrpin_umem_is_dmabuf(const struct ib_umem *umem)
{
	return umem->is_dmabuf;
}
#else
static inline bool mrpin_umem_is_dmabuf(const struct ib_umem *umem)
{
	return false;
}
#endif

/*
 * A driver's reg_user_mr() takes the DMA handle (struct ib_dmah) from v6.17
 * ("RDMA/core: Introduce a DMAH object"), before the udata; OFED 25.10 has
 * no DMAH (probe.sh).  hook.c's wrapper has the same prototype on either
 * side, which a BUILD_BUG_ON() there checks against struct ib_device_ops.
 */
#ifdef MRPIN_HAVE_REG_USER_MR_DMAH
#define MRPIN_REG_USER_MR_DMAH		struct ib_dmah *dmah,
#define MRPIN_REG_USER_MR_DMAH_ARG	dmah,
#else
#define MRPIN_REG_USER_MR_DMAH
#define MRPIN_REG_USER_MR_DMAH_ARG
#endif

/*
 * v6.10 ("tracing/treewide: Remove second parameter of __assign_str()")
 * takes the source from the __string() declaration: one argument.  Before,
 * the source is named again; in mrpin's tracepoints every string field is
 * named as the argument it is copied from.  (A macro of the TRACE_EVENT()
 * expansion: only the version tells.)
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define mrpin_assign_str(field) __assign_str(field)
#else
#define mrpin_assign_str(field) __assign_str(field, field)
#endif

/*
 * v7.0 ("slab: Introduce kmalloc_obj() and family", backported to 6.12.y)
 * allocates by the type of what the pointer points to.
 */
#ifndef kzalloc_obj
#define kzalloc_obj(P, GFP) kzalloc(sizeof(P), GFP)
#define kmalloc_objs(P, COUNT) kmalloc_array(COUNT, sizeof(P), GFP_KERNEL)
#endif

/*
 * v6.5 ("mm/slab: introduce kmem_cache flag SLAB_NO_MERGE"); see
 * mrpin_cache_create().
 */
#ifdef SLAB_NO_MERGE
#define MRPIN_SLAB_NO_MERGE SLAB_NO_MERGE
#else
#define MRPIN_SLAB_NO_MERGE 0
#endif

/*
 * v6.18 ("mm: remove nth_page()") dropped nth_page(): the pages of a
 * scatterlist entry are contiguous in the memmap, page + n.
 */
#ifndef nth_page
#define nth_page(page, n) ((page) + (n))
#endif

/*
 * v6.16 ("x86/msr: Rename 'rdmsrl()' to 'rdmsrq()'").
 */
#ifndef rdmsrq
#define rdmsrq(msr, val) rdmsrl(msr, val)
#endif

#endif /* _MRPIN_COMPAT_H */
