// SPDX-License-Identifier: GPL-2.0
/*
 * The control file `limits`: one set of file_operations behind both of its
 * doors, /sys/kernel/security/mrpin/limits (securityfs.c, which lockdown
 * leaves alone) and /sys/kernel/debug/mrpin/limits (debugfs.c).
 *
 * Reading prints the whole policy in the grammar (policy.c), writing
 * applies one write as one transaction.  The grammar is in
 * policy_parse.c, the transaction in policy.c; this file is the door:
 * privilege, sizes, copying from user space, and the log line of a
 * refused write.
 *
 * Locking: none of its own (policy.c serialises writers).
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/ratelimit.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "mrpin.h"

static DEFINE_RATELIMIT_STATE(mrpin_limits_rs, 5 * HZ, 20);

static void mrpin_limits_error(unsigned int line, const char *why)
{
	if (__ratelimit(&mrpin_limits_rs))
		pr_warn("mrpin: limits: line %u: %s\n", line, why);
}

/*
 * Writing `limits` applies every line of one write() as one transaction;
 * see the grammar in policy_parse.c.  Needs CAP_SYS_ADMIN, whatever the
 * file's mode.  Anything wrong (unknown scope or key, bad number,
 * overflow, percentage above 100, a key given twice, a missing cgroup, a
 * rule to delete that does not exist, a line over 256 bytes, a write over
 * 64 KiB, a NUL byte) fails the whole write with -EINVAL, changes nothing
 * and logs "mrpin: limits: line N: <reason>".
 */
static ssize_t mrpin_limits_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	unsigned int lineno;
	const char *why;
	char *buf, *pos;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (len > MRPIN_WRITE_MAX) {
		mrpin_limits_error(0, "write over 64 KiB");
		return -EINVAL;
	}
	buf = memdup_user_nul(ubuf, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	if (strlen(buf) != len) {
		lineno = 1;
		for (pos = buf; *pos; pos++)
			lineno += *pos == '\n';
		mrpin_limits_error(lineno, "NUL byte");
		ret = -EINVAL;
		goto out_free;
	}
	ret = mrpin_policy_write(buf, &lineno, &why);
	if (ret == -EINVAL)
		mrpin_limits_error(lineno, why);
out_free:
	kfree(buf);
	return ret ? ret : len;
}

static int mrpin_limits_show(struct seq_file *m, void *v)
{
	return mrpin_policy_show(m);
}

static int mrpin_limits_open(struct inode *inode, struct file *file)
{
	return single_open(file, mrpin_limits_show, NULL);
}

const struct file_operations mrpin_limits_fops = {
	.owner = THIS_MODULE,
	.open = mrpin_limits_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.write = mrpin_limits_write,
	.release = single_release,
};
