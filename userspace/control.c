// SPDX-License-Identifier: GPL-2.0
/*
 * Where the policy is: the module's `limits` control file, found, and the
 * reason it cannot be opened, told.
 *
 * The module offers `limits` through two doors with one implementation:
 * /sys/kernel/security/mrpin/limits, which a kernel in lockdown leaves
 * alone, and /sys/kernel/debug/mrpin/limits, which lockdown refuses
 * (debugfs opens no file with a write bit there, even for reading).
 * mrpinctl takes securityfs' when it is there, else debugfs' (an older
 * module, or securityfs not mounted), and says which and why in one line.
 * With --debugfs DIR (a snapshot of the files, as the tests use), the
 * policy is DIR/limits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "mrpinctl.h"
#include "version.h"

#define SECURITYFS_DIR "/sys/kernel/security"
#define SECURITYFS_LIMITS SECURITYFS_DIR "/mrpin/limits"
#define SECURITYFS_MAGIC 0x73636673

static bool securityfs_mounted(void)
{
	struct statfs sfs;

	return !statfs(SECURITYFS_DIR, &sfs) && sfs.f_type == SECURITYFS_MAGIC;
}

/* Is SECURITYFS_LIMITS there (whether this user may open it or not)? */
static bool securityfs_node(void)
{
	struct stat st;

	return !stat(SECURITYFS_LIMITS, &st) || errno == EACCES;
}

char *limits_path(void)
{
	static bool told;

	if (!opts.debugfs_default)
		return debugfs_path("limits");
	if (securityfs_node())
		return xstrdup(SECURITYFS_LIMITS);
	if (!told && !access(opts.debugfs, F_OK)) {
		told = true;
		if (!securityfs_mounted())
			pr_err("securityfs is not mounted ('mount -t securityfs none %s'): using debugfs' limits, which a locked-down kernel refuses",
				SECURITYFS_DIR);
		else
			pr_err("this mrpin module has no %s (an older module): using debugfs' limits, which a locked-down kernel refuses",
				SECURITYFS_LIMITS);
	}
	return debugfs_path("limits");
}

/*
 * The kernel's lockdown level ("integrity" or "confidentiality") in
 * @level, or false when it is not locked down (or cannot tell).
 */
static bool locked_down(char *level, size_t size)
{
	char *buf, *open, *close;
	size_t len;
	bool ret = false;

	if (read_whole(SECURITYFS_DIR "/lockdown", &buf, &len))
		return false;
	open = strchr(buf, '[');
	close = open ? strchr(open, ']') : NULL;
	if (close && strncmp(open, "[none]", 6)) {
		snprintf(level, size, "%.*s", (int)(close - open - 1), open + 1);
		ret = true;
	}
	free(buf);
	return ret;
}

int limits_refused(const char *path, int err, bool writing)
{
	const char *what = writing ? "writing" : "reading";
	/* Lockdown and securityfs matter to debugfs' door on this machine. */
	bool debugfs_door = opts.debugfs_default &&
			    strcmp(path, SECURITYFS_LIMITS) != 0;
	char level[32];

	if (err == ENOENT) {
		pr_err("%s was not found: this mrpin module has no 'limits' (mrpinctl %s needs it; update the module)",
		       path, MRPIN_VERSION);
	} else if (err != EPERM && err != EACCES) {
		pr_err("%s %s: %s", what, path, strerror(err));
	} else if (geteuid()) {
		pr_err("permission denied %s %s: run mrpinctl as root (e.g. with sudo)",
		       what, path);
	} else if (debugfs_door && locked_down(level, sizeof(level))) {
		pr_err("the kernel is locked down (%s): debugfs refuses %s, as it does every file that can be written, and %s is missing (mount securityfs, or update mrpin)",
		       level, path, SECURITYFS_LIMITS);
	} else if (debugfs_door && !securityfs_mounted()) {
		pr_err("permission denied %s %s: a locked-down kernel refuses it (mount securityfs to use %s, and to tell)",
		       what, path, SECURITYFS_LIMITS);
	} else if (writing) {
		pr_err("permission denied writing %s: changing the limits needs CAP_SYS_ADMIN, which this process lacks",
		       path);
	} else {
		pr_err("permission denied reading %s", path);
	}
	return EXIT_FAIL;
}
