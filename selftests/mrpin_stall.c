// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_stall: a registration that can be made to wait inside the kernel's
 * pin, for mrpin's tests of a stuck registration.
 *
 *   mrpin_stall freeze FILE KIB
 *   mrpin_stall uffd KIB
 *
 * freeze: writes FILE (KIB KiB, on a file system the test can freeze) and
 * maps it shared, untouched; once the test froze the file system (fsfreeze
 * -f), the pin waits uninterruptibly in the first page's write fault until
 * it is thawed, as a pin waits on a page of a FUSE file whose server does
 * not answer.  Kernels from 6.5 refuse a long-term writable pin of a file
 * whose file system tracks dirty pages: the registration then fails with
 * EFAULT at once.
 * uffd: maps KIB KiB of anonymous memory under a userfaultfd that serves
 * nothing until told: the pin waits in the first page's fault (kernels
 * whose long-term pins may drop the mmap lock and retry, from 6.3; older
 * ones fail with EFAULT at once).
 *
 * Prints "ready", waits for a line on stdin, then registers the memory,
 * writable, on $MRPIN_TEST_DEV (default rxe0) in a thread of its own.
 * uffd: prints "stalled" once the pin waits on its fault, then serves
 * every page at the next line on stdin.  Prints "registered" once
 * ibv_reg_mr() has returned, or "failed: ERRNO-NAME", and, at EOF on
 * stdin, deregisters and exits.  Exit status: 0, 1 on error (a failed
 * registration included), 2 on bad usage.
 */
#define _GNU_SOURCE
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "mrpin_utils.h"

struct stall {
	struct ibv_pd *pd;
	char *buf;
	size_t len;
	struct ibv_mr *mr;
	int err;
	int done;	/* ibv_reg_mr() has returned */
};

static void *stall_reg(void *arg)
{
	struct stall *s = arg;

	s->mr = ibv_reg_mr(s->pd, s->buf, s->len, IBV_ACCESS_LOCAL_WRITE);
	s->err = s->mr ? 0 : errno;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
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

/*
 * The next fault's address, or 0 when none comes within @ms.  The
 * descriptor does not block: poll() may report a fault that a wake-up has
 * resolved since.
 */
static unsigned long stall_fault(int uffd, int ms)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	if (read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return 0;
	return msg.arg.pagefault.address;
}

/* Anonymous memory under a userfaultfd: its descriptor, or -1. */
static int stall_uffd(struct stall *s)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_api api = { .api = UFFD_API };
	int uffd;

	s->buf = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED)
		return -1;
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		return -1;
	reg.range.start = (unsigned long)s->buf;
	reg.range.len = s->len;
	return ioctl(uffd, UFFDIO_REGISTER, &reg) ? -1 : uffd;
}

/* Serve every page of @s (zeroes), and the faults still queued. */
static int stall_serve(struct stall *s, int uffd)
{
	struct uffdio_zeropage zero = {
		.range = { .start = (unsigned long)s->buf, .len = s->len },
	};

	if (ioctl(uffd, UFFDIO_ZEROPAGE, &zero) && errno != EEXIST)
		return -1;
	while (stall_fault(uffd, 100))
		;
	return 0;
}

int main(int argc, char **argv)
{
	bool uffd_mode = argc == 3 && !strcmp(argv[1], "uffd");
	struct ibv_context *ctx;
	struct stall s = { 0 };
	char line[16], *end;
	int fd = -1, uffd = -1, i;
	pthread_t thread;

	if (uffd_mode || (argc == 4 && !strcmp(argv[1], "freeze")))
		s.len = strtoul(argv[argc - 1], &end, 10) << 10;
	if (!s.len || *end) {
		fprintf(stderr, "usage: mrpin_stall freeze FILE KIB | uffd KIB\n");
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
	if (uffd_mode) {
		uffd = stall_uffd(&s);
		if (uffd < 0) {
			fprintf(stderr, "mrpin_stall: userfaultfd: %s\n",
				strerror(errno));
			return 1;
		}
	} else {
		fd = stall_file(argv[2], s.len);
		s.buf = fd < 0 ? MAP_FAILED :
			mmap(NULL, s.len, PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);
		if (s.buf == MAP_FAILED) {
			fprintf(stderr, "mrpin_stall: %s: %s\n", argv[2],
				strerror(errno));
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (pthread_create(&thread, NULL, stall_reg, &s)) {
		fprintf(stderr, "mrpin_stall: cannot start a thread\n");
		return 1;
	}
	/* uffd: the pin's fault, unless the registration ends first. */
	for (i = 0; uffd_mode && i < 300; i++) {
		if (stall_fault(uffd, 100)) {
			printf("stalled\n");
			fflush(stdout);
			if (!fgets(line, sizeof(line), stdin) ||
			    stall_serve(&s, uffd))
				return 1;
			break;
		}
		if (__atomic_load_n(&s.done, __ATOMIC_ACQUIRE))
			break;
	}
	pthread_join(thread, NULL);
	if (s.err) {
		printf("failed: %s\n", strerrorname_np(s.err));
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
	return 0;
}
