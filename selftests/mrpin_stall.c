// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_stall: a registration that can be made to wait inside the kernel's
 * pin, for mrpin's tests of a stuck registration.
 *
 *   mrpin_stall FILE KIB
 *
 * Writes FILE (KIB KiB, on a file system the test can freeze), maps it
 * shared without touching it, prints "ready" and waits for a line on
 * stdin.  Then it registers the mapping, writable, on $MRPIN_TEST_DEV
 * (default rxe0) in a thread of its own: if the test froze the file system
 * (fsfreeze -f), the kernel's pin waits in the first page's write fault,
 * uninterruptibly, until it is thawed, as a pin waits on a page of a FUSE
 * file whose server does not answer.  Prints "registered" once
 * ibv_reg_mr() has returned and, at EOF on stdin, deregisters and exits.
 * Exit status: 0, 1 on error, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>

#include "mrpin_utils.h"

struct stall {
	struct ibv_pd *pd;
	char *buf;
	size_t len;
	struct ibv_mr *mr;
	int err;
};

static void *stall_reg(void *arg)
{
	struct stall *s = arg;

	s->mr = ibv_reg_mr(s->pd, s->buf, s->len, IBV_ACCESS_LOCAL_WRITE);
	s->err = s->mr ? 0 : errno;
	return NULL;
}

/* FILE of @len zero bytes, on disk: its pages are clean. */
static int stall_file(const char *path, size_t len)
{
	char page[4096] = { 0 };
	size_t done;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	for (done = 0; done < len; done += sizeof(page))
		if (write(fd, page, sizeof(page)) != sizeof(page))
			return -1;
	if (fsync(fd))
		return -1;
	return fd;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct stall s = { 0 };
	char line[16], *end;
	pthread_t thread;
	int fd;

	s.len = argc == 3 ? strtoul(argv[2], &end, 10) << 10 : 0;
	if (!s.len || *end) {
		fprintf(stderr, "usage: mrpin_stall FILE KIB\n");
		return 2;
	}
	mrpin_unlimit_memlock();
	ctx = mrpin_open_dev(mrpin_dev_name());
	s.pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!s.pd) {
		fprintf(stderr, "mrpin_stall: cannot open %s: %s\n",
			mrpin_dev_name(), strerror(errno));
		return 1;
	}
	fd = stall_file(argv[1], s.len);
	s.buf = fd < 0 ? MAP_FAILED :
		mmap(NULL, s.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s.buf == MAP_FAILED) {
		fprintf(stderr, "mrpin_stall: %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (pthread_create(&thread, NULL, stall_reg, &s)) {
		fprintf(stderr, "mrpin_stall: cannot start a thread\n");
		return 1;
	}
	pthread_join(thread, NULL);
	if (s.err) {
		fprintf(stderr, "mrpin_stall: ibv_reg_mr: %s\n",
			strerror(s.err));
		return 1;
	}
	printf("registered\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	ibv_dereg_mr(s.mr);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(ctx);
	munmap(s.buf, s.len);
	close(fd);
	return 0;
}
