// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_failnth_read: read a file while the kernel fails one allocation of
 * the read, each in turn, for mrpin_views_nomem.sh.
 *
 *   mrpin_failnth_read FILE OUTDIR MAX
 *
 * For N = 1, 2, ... MAX: open FILE, have the kernel fail the N-th fault
 * injection point this thread passes (/proc/thread-self/fail-nth, see the
 * kernel's Documentation/fault-injection), read FILE to its end, stop
 * failing.  Prints one line per N:
 *
 *	N injected|none ok BYTES	the whole read succeeded; what it read
 *					is in OUTDIR/N
 *	N injected|none error ERRNO	a read failed, with that errno (number)
 *
 * "injected" when the N-th point was reached and failed, "none" when the
 * read passed fewer than N points: then every point of the read was tried
 * and it stops.  Only this thread's points count, and only from the
 * write of N on: the open is not part of it.  Exit status: 0, 1 on error
 * (no fail-nth, FILE cannot be opened), 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAIL_NTH "/proc/thread-self/fail-nth"

static char buf[1 << 20];

/* Write @n to fail-nth (0 stops failing): 0 or an errno. */
static int fail_nth_set(int fd, long n)
{
	char num[32];
	int len = snprintf(num, sizeof(num), "%ld", n);

	if (pwrite(fd, num, len, 0) != len)
		return errno ? errno : EIO;
	return 0;
}

/* Whether the N-th point was reached: fail-nth reads 0 once it failed. */
static int fail_nth_injected(int fd, int *injected)
{
	char num[32];
	ssize_t n;

	n = pread(fd, num, sizeof(num) - 1, 0);
	if (n <= 0)
		return n ? errno : EIO;
	num[n] = '\0';
	*injected = atol(num) == 0;
	return 0;
}

/* Read @path once with the n-th point failing; print the result line. */
static int read_once(int nth, const char *path, const char *outdir, long n,
		     int *injected)
{
	size_t len = 0;
	ssize_t got;
	char out[PATH_MAX];
	int fd, err = 0, ret;
	FILE *f;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "mrpin_failnth_read: %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	ret = fail_nth_set(nth, n);
	if (ret) {
		fprintf(stderr, "mrpin_failnth_read: %s: %s\n", FAIL_NTH,
			strerror(ret));
		close(fd);
		return 1;
	}
	for (;;) {
		got = read(fd, buf + len, sizeof(buf) - len);
		if (got < 0) {
			err = errno;
			break;
		}
		if (!got)
			break;
		len += got;
		if (len == sizeof(buf)) {
			err = EFBIG;
			break;
		}
	}
	ret = fail_nth_injected(nth, injected) ?: fail_nth_set(nth, 0);
	close(fd);
	if (ret) {
		fprintf(stderr, "mrpin_failnth_read: %s: %s\n", FAIL_NTH,
			strerror(ret));
		return 1;
	}
	if (err) {
		printf("%ld %s error %d\n", n, *injected ? "injected" : "none",
		       err);
		return 0;
	}
	snprintf(out, sizeof(out), "%s/%ld", outdir, n);
	f = fopen(out, "we");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "mrpin_failnth_read: %s: %s\n", out,
			strerror(errno));
		return 1;
	}
	printf("%ld %s ok %zu\n", n, *injected ? "injected" : "none", len);
	return 0;
}

int main(int argc, char **argv)
{
	int nth, injected = 1, ret = 0;
	long n, max;
	char *end;

	if (argc != 4) {
		fprintf(stderr, "usage: mrpin_failnth_read FILE OUTDIR MAX\n");
		return 2;
	}
	max = strtol(argv[3], &end, 10);
	if (*end || max < 1) {
		fprintf(stderr, "mrpin_failnth_read: bad MAX '%s'\n", argv[3]);
		return 2;
	}
	nth = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	if (nth < 0) {
		fprintf(stderr, "mrpin_failnth_read: %s: %s\n", FAIL_NTH,
			strerror(errno));
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (n = 1; n <= max && injected && !ret; n++)
		ret = read_once(nth, argv[1], argv[2], n, &injected);
	close(nth);
	return ret;
}
