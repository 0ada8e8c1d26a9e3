// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_dmabuf: dma-buf registrations on the test's IB device, made by
 * selftests/kmod/mrpin_dmabuf_test.ko, for mrpin_dmabuf.sh.
 *
 *   mrpin_dmabuf SIZE [COUNT]
 *
 * Exports a dma-buf of SIZE bytes (a multiple of the page size) and
 * registers it COUNT times (default 1) on $MRPIN_TEST_DEV (default rxe0).
 * Prints "reg ok" or "reg failed: ERRNO-NAME" per registration, then
 * "ready", and waits until stdin reaches EOF; it then releases them and
 * exits.  Exit status: 0 when every registration was made, 1 otherwise
 * (3 when the kernel has no import to make them with: EOPNOTSUPP), 2 on
 * bad usage.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>

#include "mrpin_utils.h"
#include "kmod/mrpin_dmabuf_test.h"

int main(int argc, char **argv)
{
	struct mrpin_dmabuf_reg_arg arg = { 0 };
	unsigned long count = 1, i, made = 0;
	char *end = NULL;
	__u64 size = 0;
	int fd, buf, unsupported = 0;

	if (argc == 2 || argc == 3)
		size = strtoull(argv[1], &end, 10);
	if (size && !*end && argc == 3)
		count = strtoul(argv[2], &end, 10);
	if (!size || !count || *end) {
		fprintf(stderr, "usage: mrpin_dmabuf SIZE [COUNT]\n");
		return 2;
	}
	fd = open("/dev/mrpin_dmabuf_test", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		mrpin_die("mrpin_dmabuf", "/dev/mrpin_dmabuf_test");
	buf = ioctl(fd, MRPIN_DMABUF_EXPORT, &size);
	if (buf < 0)
		mrpin_die("mrpin_dmabuf", "MRPIN_DMABUF_EXPORT");
	arg.fd = buf;
	arg.size = size;
	snprintf(arg.device, sizeof(arg.device), "%s", mrpin_dev_name());
	for (i = 0; i < count; i++) {
		if (!ioctl(fd, MRPIN_DMABUF_REG, &arg)) {
			made++;
			printf("reg ok\n");
			continue;
		}
		unsupported |= errno == EOPNOTSUPP;
		printf("reg failed: %s\n", strerrorname_np(errno));
	}
	printf("ready\n");
	fflush(stdout);
	mrpin_wait_eof();
	for (i = 0; i < made; i++)
		ioctl(fd, MRPIN_DMABUF_DEREG);
	close(buf);
	close(fd);
	return made == count ? 0 : unsupported ? 3 : 1;
}
