// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers every layer of the module may use, and which use nothing of the
 * module's: the bottom layer.
 *
 * mrpin_cache_create(): each kind of record (pins, processes, users,
 * cgroups, devices) lives in a slab cache of its own, so that its objects
 * show in /proc/slabinfo and fault injection can aim at mrpin alone.
 * pin.c, account.c and device.c make caches; none may use another's
 * functions.
 *
 * mrpin_escape_set, mrpin_escape(): the one way the module writes a name
 * that a user chose (a comm, a cgroup path) into a view, an event or the
 * kernel log.
 */
#include <linux/slab.h>
#include <linux/string_helpers.h>

#include "compat.h"
#include "mrpin.h"

/**
 * mrpin_cache_create() - a slab cache of mrpin's own
 * @name: its name in /proc/slabinfo and /sys/kernel/slab
 * @size: the size of its objects
 *
 * An own cache shows mrpin's records in /proc/slabinfo, and lets failslab
 * aim at mrpin alone (cache-filter, with the caches marked by booting with
 * slub_debug=A,mrpin_*, on a kernel with CONFIG_FAILSLAB: the sysfs flag is
 * read-only since 5.9).  Both need the cache not to be merged into another
 * of the same size: SLAB_NO_MERGE says so from 6.5.  6.1 has no such flag;
 * there SLUB may merge the caches (they show as aliases in
 * /sys/kernel/slab), unless slub_debug marks them, which keeps them apart.
 * A constructor would keep them apart too, but it moves SLUB's free pointer
 * out of the object: 8 bytes more per pin.  Objects are not zeroed: the
 * callers clear them.
 *
 * Context: process context.
 * Return: the cache, or NULL.
 */
struct kmem_cache *mrpin_cache_create(const char *name, unsigned int size)
{
	return kmem_cache_create(name, size, 0, MRPIN_SLAB_NO_MERGE, NULL);
}

/*
 * What the views, the events and the kernel log escape as \ooo, the way
 * mountinfo escapes white space: space, backslash, every control character
 * and every byte outside ASCII (a C1 control in UTF-8 is two of them), and
 * '#', which starts a comment in the policy.  So
 * a comm or a cgroup path, which their owner names, shows nothing but
 * printable ASCII on root's terminal, and a reader that undoes the escapes
 * has the bytes back.  A NUL never reaches an escape: it ends the string.
 */
const char mrpin_escape_set[] =
	"\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\020"
	"\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037\040"
	"\043\134\177\200\201\202\203\204\205\206\207\210\211\212\213\214"
	"\215\216\217\220\221\222\223\224\225\226\227\230\231\232\233\234"
	"\235\236\237\240\241\242\243\244\245\246\247\250\251\252\253\254"
	"\255\256\257\260\261\262\263\264\265\266\267\270\271\272\273\274"
	"\275\276\277\300\301\302\303\304\305\306\307\310\311\312\313\314"
	"\315\316\317\320\321\322\323\324\325\326\327\330\331\332\333\334"
	"\335\336\337\340\341\342\343\344\345\346\347\350\351\352\353\354"
	"\355\356\357\360\361\362\363\364\365\366\367\370\371\372\373\374"
	"\375\376\377";

/**
 * mrpin_escape() - @src escaped with mrpin_escape_set, into @dst
 * @dst: where to write; always NUL-terminated when @size is not 0
 * @src: the string to escape
 * @size: the size of @dst; 4 times @src's length and one more hold it all
 *
 * An escape that does not fit is left out whole: never half an escape.
 *
 * Context: any.
 * Return: @dst.
 */
char *mrpin_escape(char *dst, const char *src, size_t size)
{
	size_t n = 0;

	if (!size)
		return dst;
	for (; *src; src++) {
		int w = string_escape_mem(src, 1, dst + n, size - 1 - n,
					  ESCAPE_OCTAL, mrpin_escape_set);

		if (w > size - 1 - n)
			break;
		n += w;
	}
	dst[n] = '\0';
	return dst;
}
