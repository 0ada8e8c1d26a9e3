// SPDX-License-Identifier: GPL-2.0
/*
 * The policy's door outside debugfs: /sys/kernel/security/mrpin/limits.
 *
 * A kernel in lockdown (Debian's, Ubuntu's and RHEL's lock themselves down
 * when booted with Secure Boot; root can raise it at run time through
 * /sys/kernel/security/lockdown) has debugfs refuse to open any file with
 * a write bit, even for reading (debugfs_locked_down() in
 * fs/debugfs/file.c), so debugfs' `limits` is refused there while the 0400
 * views stay readable.  Lockdown leaves securityfs alone: IMA's policy file
 * lives there, and so does the TPM's event log, which is no LSM either.
 * It is also a file system, like debugfs: the policy stays a text file
 * that cat reads and echo changes, with no device node for udev to make
 * first.
 *
 * Both doors open the same file_operations (ctl.c): one grammar, one
 * transaction per open file, CAP_SYS_ADMIN checked by the write path
 * whatever the mode.  The node is 0600, root's.
 *
 * A file opened here holds a reference on the module (fops->owner), so
 * `rmmod mrpin` fails with EBUSY while someone holds it open; debugfs' door
 * does not hold one (debugfs waits for the readers inside instead).
 */
#include <linux/err.h>
#include <linux/security.h>

#include "mrpin.h"

/* Written at init and exit only. */
static struct dentry *mrpin_securityfs_dir;
static struct dentry *mrpin_securityfs_limits;

/**
 * mrpin_securityfs_init() - create /sys/kernel/security/mrpin/limits
 *
 * A kernel without securityfs only loses the door: mrpin loads and says
 * so in the log.
 *
 * Context: process context.
 * Return: 0, or a negative errno when the file cannot be made.
 */
int mrpin_securityfs_init(void)
{
	struct dentry *dir, *limits;

	dir = securityfs_create_dir("mrpin", NULL);
	if (IS_ERR(dir)) {
		if (PTR_ERR(dir) != -ENODEV)
			return PTR_ERR(dir);
		pr_warn("mrpin: no securityfs: the policy is reachable through debugfs only, which lockdown refuses\n");
		return 0;
	}
	limits = securityfs_create_file("limits", 0600, dir, NULL,
					&mrpin_limits_fops);
	if (IS_ERR(limits)) {
		securityfs_remove(dir);
		return PTR_ERR(limits);
	}
	mrpin_securityfs_dir = dir;
	mrpin_securityfs_limits = limits;
	return 0;
}

/**
 * mrpin_securityfs_exit() - remove /sys/kernel/security/mrpin/
 *
 * The file first: up to 6.12 at least, securityfs_remove() takes one
 * dentry, not a tree (7.x's removes the tree).
 *
 * Context: process context.
 */
void mrpin_securityfs_exit(void)
{
	securityfs_remove(mrpin_securityfs_limits);
	securityfs_remove(mrpin_securityfs_dir);
	mrpin_securityfs_limits = NULL;
	mrpin_securityfs_dir = NULL;
}
