// SPDX-License-Identifier: GPL-2.0
/*
 * The control file `limits`: one set of file_operations behind both of its
 * doors, /sys/kernel/security/mrpin/limits (securityfs.c, which lockdown
 * leaves alone) and /sys/kernel/debug/mrpin/limits (debugfs.c).
 *
 * Reading prints the whole policy in the grammar (policy.c).  Writing is a
 * transaction per open file: the writes of one open file are one text,
 * whatever sizes they come in (`dd bs=19` cuts lines anywhere), and that
 * text takes effect whole, or not at all, when the file is closed.  A
 * line applies only once it has ended, by its newline or by the close:
 * nothing is ever applied from a prefix of a line.  Each write checks the
 * lines it has completed so far against the policy, so a bad line fails
 * the write that ended it, with -EINVAL, and from then on every write to
 * that open file fails and its close applies nothing.  The last close
 * applies the text: through securityfs its errors reach close() (the
 * file's flush); debugfs passes no flush on, and there the release applies
 * it, with errors in the kernel log only.  The grammar is in
 * policy_parse.c, the transaction in policy.c; this file is the door:
 * privilege, sizes, copying from user space, and the log line of a
 * refused write.
 *
 * Privilege: a write needs CAP_SYS_ADMIN in the initial user namespace,
 * both of the task that writes and of the one that opened the file
 * (file->f_cred), whatever the file's mode: a descriptor root opened does
 * not let another task write, and one an unprivileged task opened (with
 * the mode opened up) does not let it make root write for it.
 *
 * Locking: struct mrpin_limits_txn's @lock serialises the writes, flushes
 * and release of one open file (tasks sharing it); policy.c serialises the
 * writers of the policy.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/ratelimit.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "mrpin.h"

/**
 * struct mrpin_limits_txn - what one open file has written
 * @lock:	serialises the fields below
 * @text:	the text written, @len bytes (MRPIN_WRITE_MAX at most) and a
 *		NUL; allocated at the first write
 * @len:	its length
 * @err:	a write failed: every later one fails, nothing is applied
 */
struct mrpin_limits_txn {
	struct mutex lock;	/* protects the fields below */
	char *text;
	size_t len;
	int err;
};

static DEFINE_RATELIMIT_STATE(mrpin_limits_rs, 5 * HZ, 20);

static void mrpin_limits_error(unsigned int line, const char *why)
{
	if (__ratelimit(&mrpin_limits_rs))
		pr_warn("mrpin: limits: line %u: %s\n", line, why);
}

/* The number of lines in @text's first @len bytes, the last one open. */
static unsigned int mrpin_limits_lines(const char *text, size_t len)
{
	unsigned int lines = 1;

	while (len--)
		lines += *text++ == '\n';
	return lines;
}

/*
 * Check @txn's text up to @end (a line's end), or apply it when @commit:
 * 0, or a negative errno (the line's number and reason logged).
 */
static int mrpin_limits_run(struct mrpin_limits_txn *txn, size_t end,
			    bool commit)
{
	unsigned int lineno;
	const char *why;
	char *copy;
	int ret;

	/* policy.c cuts the text in place. */
	copy = kmemdup_nul(txn->text, end, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	ret = mrpin_policy_write(copy, commit, &lineno, &why);
	kfree(copy);
	if (ret == -EINVAL)
		mrpin_limits_error(lineno, why);
	return ret;
}

/*
 * Writing `limits` adds to the open file's transaction; see the grammar
 * in policy_parse.c and the transaction above.  Anything wrong (unknown
 * scope or key, bad number, overflow, percentage above 100, a key given
 * twice, a missing cgroup, a rule to delete that does not exist, a line
 * over 256 bytes, over 64 KiB through one open file, a NUL byte, a write
 * after a failed one) fails the write with -EINVAL, makes the whole
 * transaction fail and logs "mrpin: limits: line N: <reason>", N counted
 * from the first byte written through the open file.
 */
static ssize_t mrpin_limits_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	struct mrpin_limits_txn *txn =
		((struct seq_file *)file->private_data)->private;
	size_t end, start, total;
	char *nul;
	int ret;

	if (!capable(CAP_SYS_ADMIN) ||
	    !file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN))
		return -EPERM;
	if (!len)
		return 0;

	mutex_lock(&txn->lock);
	ret = txn->err;
	if (ret) {
		mrpin_limits_error(mrpin_limits_lines(txn->text, txn->len),
				   "a write before this one failed");
		goto out;
	}
	ret = -EINVAL;
	if (len > MRPIN_WRITE_MAX - txn->len) {
		mrpin_limits_error(0, "over 64 KiB written through one open file");
		goto out_fail;
	}
	if (!txn->text) {
		txn->text = kvmalloc(MRPIN_WRITE_MAX + 1, GFP_KERNEL_ACCOUNT);
		if (!txn->text) {
			ret = -ENOMEM;
			goto out;
		}
	}
	start = txn->len;
	if (copy_from_user(txn->text + start, ubuf, len)) {
		ret = -EFAULT;
		goto out;
	}
	txn->text[start + len] = '\0';
	nul = memchr(txn->text + start, '\0', len);
	if (nul) {
		mrpin_limits_error(mrpin_limits_lines(txn->text,
						      nul - txn->text),
				   "NUL byte");
		goto out_fail;
	}
	total = start + len;

	/* The lines this write ended, checked with all before them. */
	end = total;
	while (end && txn->text[end - 1] != '\n' &&
	       total - end <= MRPIN_LINE_MAX)
		end--;
	if (total - end > MRPIN_LINE_MAX) {
		mrpin_limits_error(mrpin_limits_lines(txn->text, total),
				   "line longer than 256 bytes");
		goto out_fail;
	}
	if (end > start) {
		ret = mrpin_limits_run(txn, end, false);
		if (ret)
			goto out_fail;
	}
	/* Taken only now: a write that failed adds nothing to the text. */
	txn->len = total;
	mutex_unlock(&txn->lock);
	return len;

out_fail:
	if (ret != -ENOMEM)
		txn->err = ret;
out:
	mutex_unlock(&txn->lock);
	return ret;
}

/*
 * Apply what the open file wrote, once, and start it afresh: 0, or the
 * error of the transaction.
 */
static int mrpin_limits_commit(struct mrpin_limits_txn *txn)
{
	int ret;

	mutex_lock(&txn->lock);
	ret = txn->err;
	if (!ret && txn->len)
		ret = mrpin_limits_run(txn, txn->len, true);
	txn->len = 0;
	txn->err = 0;
	mutex_unlock(&txn->lock);
	return ret;
}

/*
 * close(): the last close of the open file applies its transaction and
 * returns its error.  A close of one of several descriptors (a child that
 * inherited it and exits, a dup()) leaves the transaction open.
 */
static int mrpin_limits_flush(struct file *file, fl_owner_t id)
{
	struct mrpin_limits_txn *txn =
		((struct seq_file *)file->private_data)->private;

	if (!(file->f_mode & FMODE_WRITE) || file_count(file) > 1)
		return 0;
	return mrpin_limits_commit(txn);
}

static int mrpin_limits_show(struct seq_file *m, void *v)
{
	return mrpin_policy_show(m);
}

static int mrpin_limits_open(struct inode *inode, struct file *file)
{
	struct mrpin_limits_txn *txn;
	int ret;

	txn = kzalloc_obj(*txn, GFP_KERNEL);
	if (!txn)
		return -ENOMEM;
	mutex_init(&txn->lock);
	ret = single_open(file, mrpin_limits_show, txn);
	if (ret)
		kfree(txn);
	return ret;
}

/* What no flush applied (debugfs' door has none) is applied here. */
static int mrpin_limits_release(struct inode *inode, struct file *file)
{
	struct mrpin_limits_txn *txn =
		((struct seq_file *)file->private_data)->private;

	if (file->f_mode & FMODE_WRITE)
		mrpin_limits_commit(txn);
	mutex_destroy(&txn->lock);
	kvfree(txn->text);
	kfree(txn);
	return single_release(inode, file);
}

const struct file_operations mrpin_limits_fops = {
	.owner = THIS_MODULE,
	.open = mrpin_limits_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.write = mrpin_limits_write,
	.flush = mrpin_limits_flush,
	.release = mrpin_limits_release,
};
