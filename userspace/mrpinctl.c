// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl: read mrpin's state.  This first version prints the raw
 * tables; the full OBJECT COMMAND interface builds on it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

static const char *debugfs_dir(void)
{
	const char *dir = getenv("MRPIN_DEBUGFS");

	return dir && *dir ? dir : "/sys/kernel/debug/mrpin";
}

static int cat_table(const char *name)
{
	char path[4096], buf[65536];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", debugfs_dir(), name);
	f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			fprintf(stderr, "mrpin is not loaded: run 'modprobe mrpin' (or insmod kmod/mrpin.ko); %s was not found\n",
				path);
		else
			fprintf(stderr, "mrpinctl: %s: %s\n", path, strerror(errno));
		return 1;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const tables[] = { "devices", "procs", "pins", "stats" };
	size_t i;

	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("mrpinctl %s\n", MRPIN_VERSION);
		return 0;
	}
	if (argc > 1) {
		for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
			if (!strcmp(argv[1], tables[i]))
				return cat_table(tables[i]);
		fprintf(stderr, "usage: mrpinctl [devices|procs|pins|stats|--version]\n");
		return 2;
	}
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (cat_table(tables[i]))
			return 1;
	return 0;
}
