// SPDX-License-Identifier: GPL-2.0
/*
 * For the host tests only: sysinfo() reporting $MRPIN_TEST_RAM bytes of
 * RAM, LD_PRELOADed into mrpinctl to show that what it prints for a
 * snapshot does not depend on the RAM of the machine that reads it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/sysinfo.h>

int sysinfo(struct sysinfo *info)
{
	static int (*real)(struct sysinfo *);
	const char *ram = getenv("MRPIN_TEST_RAM");

	if (!real)
		real = (int (*)(struct sysinfo *))dlsym(RTLD_NEXT, "sysinfo");
	if (!real || real(info))
		return -1;
	if (ram && info->mem_unit)
		info->totalram = strtoull(ram, NULL, 10) / info->mem_unit;
	return 0;
}
