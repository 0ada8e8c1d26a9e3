// SPDX-License-Identifier: GPL-2.0
/*
 * Peer memory (GPU memory a peer memory client serves, on the peer-memory
 * interface of compat.h): mrpin's guess of what a pin will hold, and the
 * guard that keeps a wrong guess from pinning host memory uncharged.
 *
 * ib_umem_get_peer() tries the host pages first and asks the peer clients
 * only when that fails, so what a pin holds is known for sure only after
 * it.  mrpin_peer_guess() guesses before, from the address space: a range
 * with no ordinary memory (only VM_IO or VM_PFNMAP mappings, as a GPU's,
 * and holes) cannot be pinned as host pages, and is taken for peer memory:
 * charged no host bytes, so that no host-bytes rule refuses a GPU
 * registration it does not bind.  pin.c settles the guess after the pin.
 *
 * The guess can be made wrong on purpose: between it and the host pin,
 * another thread of the process maps ordinary memory over the range
 * (mmap(MAP_FIXED)), and the host pin then pins those pages, uncharged,
 * for as long as it takes.  pin.c gives such a pin back and pins again,
 * charged; what is left to bound is what was pinned meanwhile.  So:
 *
 * - a user's pins taken for peer memory are made one at a time
 *   (mrpin_peer_enter(), a mutex in the user's record): at most one
 *   registration of each user is ever pinned uncharged, however many
 *   threads or processes it has.  One user never waits for another's.
 *   A real peer pin holds no page a FUSE server or a userfaultfd serves,
 *   so it does not wait on one; only a pin whose range was changed
 *   under it can, and only its own user's pins wait behind it (killably);
 * - once a pin taken for peer memory comes back holding host pages
 *   (mrpin_peer_raced()), its user is a suspect, for as long as mrpin is
 *   loaded: its later pins are never taken for peer memory, but charged
 *   as host memory and refunded if a peer client serves them.  A program
 *   that does not change its address space under its own registrations
 *   never becomes one: a real GPU range is never pinned as host pages.
 *   Each one is counted (stats: peer_races_total) and logged.
 *
 * So a user pins at most one registration uncharged, once.  Should mrpin
 * fail to remember a suspect (no memory), no pin is taken for peer memory
 * any more, anyone's: every peer registration is then charged as host
 * memory before the pin, and refunded after it.
 *
 * Locking: mrpin_peer_suspects is an xarray (its own lock); a user's
 * peer_lock is held from mrpin_peer_enter() to mrpin_peer_leave(), across
 * the real pin, and nests outside mmap_lock and anything the pin takes.
 */
#include <linux/mm.h>
#include <linux/xarray.h>

#include "mrpin.h"

/* Users whose pins are never taken for peer memory, by uid. */
static DEFINE_XARRAY(mrpin_peer_suspects);
/* A suspect could not be remembered: nobody's pins are taken for peer. */
static bool mrpin_peer_guess_off;

/**
 * mrpin_peer_guess() - what a peer-capable pin will likely hold
 * @addr: the start of the user range
 * @size: its length in bytes
 *
 * Peer memory when no page of the range is ordinary memory: every part of
 * it is a VM_IO or VM_PFNMAP mapping (as a GPU's) or no mapping at all,
 * where the host pin fails at once, before it pins anything, and ib_core
 * asks the peer memory clients.  Host memory as soon as one page is
 * ordinary: a range of ordinary memory followed by a device's mapping
 * would otherwise have its ordinary pages pinned, uncharged, while the
 * host pin works through them (for as long as it waits on one, a FUSE
 * page, say).  A guess: mrpin_pin_record() settles it, and
 * mrpin_peer_enter() may still take it back.
 *
 * Context: process context (the registering task), may sleep.
 * Return: 0 or MRPIN_PIN_PEER, for mrpin_pin_prepare().
 */
u8 mrpin_peer_guess(unsigned long addr, size_t size)
{
	unsigned long start = addr & PAGE_MASK, end;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	u8 kind = MRPIN_PIN_PEER;

	if (!mm || mrpin_range_wraps(addr, size) ||
	    READ_ONCE(mrpin_peer_guess_off))
		return 0;
	end = PAGE_ALIGN(addr + size);
	if (mmap_read_lock_killable(mm))
		return 0;
	for (vma = find_vma(mm, start); vma && vma->vm_start < end;
	     vma = find_vma(mm, vma->vm_end)) {
		if (!(vma->vm_flags & (VM_IO | VM_PFNMAP))) {
			kind = 0;
			break;
		}
	}
	mmap_read_unlock(mm);
	return kind;
}

/**
 * mrpin_peer_enter() - take a user's turn for a pin taken for peer memory
 * @user: the user the pin is charged to
 *
 * On success the caller holds @user's turn until mrpin_peer_leave(),
 * across the real pin.
 *
 * Context: process context, may sleep.
 * Return: 0; -EAGAIN when @user is a suspect (or none can be remembered):
 * pin as host memory instead; -EINTR on a fatal signal.
 */
int mrpin_peer_enter(struct mrpin_user *user)
{
	if (mutex_lock_killable(&user->peer_lock))
		return -EINTR;
	if (READ_ONCE(mrpin_peer_guess_off) ||
	    xa_load(&mrpin_peer_suspects, __kuid_val(user->uid))) {
		mutex_unlock(&user->peer_lock);
		return -EAGAIN;
	}
	return 0;
}

/**
 * mrpin_peer_leave() - end a user's turn taken by mrpin_peer_enter()
 * @user: the user
 *
 * Context: process context.
 */
void mrpin_peer_leave(struct mrpin_user *user)
{
	mutex_unlock(&user->peer_lock);
}

/**
 * mrpin_peer_raced() - a pin taken for peer memory holds host pages
 * @user: the user it is charged to, whose turn the caller holds
 * @tgid: the registering process
 * @addr: the start of the range
 * @size: its length in bytes
 *
 * Makes @user a suspect before its turn ends, so that none of its pins
 * waiting for the turn is taken for peer memory.
 *
 * Context: process context, may sleep.
 */
void mrpin_peer_raced(struct mrpin_user *user, pid_t tgid,
		      unsigned long addr, size_t size)
{
	uid_t uid = __kuid_val(user->uid);

	atomic64_inc(&mrpin_stats.peer_races_total);
	if (xa_err(xa_store(&mrpin_peer_suspects, uid, xa_mk_value(1),
			    GFP_KERNEL)))
		WRITE_ONCE(mrpin_peer_guess_off, true);
	pr_warn_ratelimited("mrpin: pid %d (uid %u) mapped memory under its registration of peer memory at %#lx (%zu bytes), which pinned host pages; this user's registrations are charged as host memory from now on\n",
			    tgid, uid, addr, size);
}

/**
 * mrpin_peer_exit() - forget the suspects
 *
 * Context: module exit, after the last pin.
 */
void mrpin_peer_exit(void)
{
	xa_destroy(&mrpin_peer_suspects);
}
