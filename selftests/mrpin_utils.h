/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The helpers of mrpin's selftest programs that need no test harness: the
 * RDMA device under test and registration (_do_reg() returns 0 or -1 with
 * errno), files, /proc (VmPin, comm), the policy file, the kernel log,
 * cgroups, and what the helper programs the tests drive (mrpin_pinner,
 * mrpin_mistakes, mrpin_misuse) share.  mrpin_tables.h reads mrpin's views
 * on top of them, and mrpin_test.h builds the harness's checks and the
 * fixture on both.
 */
#ifndef __MRPIN_UTILS_H
#define __MRPIN_UTILS_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include <infiniband/verbs.h>

#define MRPIN_DEBUGFS		"/sys/kernel/debug/mrpin"
/* The policy's door lockdown leaves open; MRPIN_DEBUGFS "/limits" is the other. */
#define MRPIN_LIMITS_FILE	"/sys/kernel/security/mrpin/limits"
#define MRPIN_DEFAULT_DEV	"rxe0"
#define MRPIN_ACCESS		IBV_ACCESS_LOCAL_WRITE
#define MRPIN_EVENTS_FILE	MRPIN_DEBUGFS "/events"
#define MRPIN_EVENTS_HEADER	"# seq time_ns action pid comm uid scope key asked usage limit errno"
/* memlock_bytes of a process without a limit ("unlimited"). */
#define MRPIN_UNLIMITED		UINT64_MAX
/* Where the tests make their cgroups: the cgroup2 mount. */
#define MRPIN_CG_MNT		"/sys/fs/cgroup"

#define KiB		1024ULL
#define MiB		(1024 * KiB)
#define GiB		(1024 * MiB)
#define PAGE		4096ULL

/* The device under test: $MRPIN_TEST_DEV, default rxe0. */
static inline const char *mrpin_dev_name(void)
{
	const char *name = getenv("MRPIN_TEST_DEV");

	return name && *name ? name : MRPIN_DEFAULT_DEV;
}

/* Open the RDMA device called @name; NULL with errno set if impossible. */
static inline struct ibv_context *mrpin_open_dev(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int i, n, err = ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ctx = ibv_open_device(list[i]);
		err = errno;
		break;
	}
	ibv_free_device_list(list);
	if (!ctx)
		errno = err;
	return ctx;
}

/* The debug kernel (KASAN, lockdep, kmemleak). */
static inline bool mrpin_debug_kernel(void)
{
	return !access("/sys/kernel/debug/kmemleak", F_OK);
}

/*
 * Short loops: the loops that only repeat what they already checked run
 * fewer times, on the debug kernel (where every registration costs tens of
 * times more) and where MRPIN_LOOPS=short asks for it (`make check`, and
 * all but the first kernel of `make check-all`).  mrpin_short_loops_why()
 * says which, for the test's output.
 */
static inline bool mrpin_short_loops(void)
{
	const char *loops = getenv("MRPIN_LOOPS");

	return mrpin_debug_kernel() || (loops && !strcmp(loops, "short"));
}

static inline const char *mrpin_short_loops_why(void)
{
	return mrpin_debug_kernel() ? "the debug kernel" : "MRPIN_LOOPS=short";
}

/* Lift RLIMIT_MEMLOCK (root only; the guest's default is 8 MiB). */
static inline int mrpin_unlimit_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	return setrlimit(RLIMIT_MEMLOCK, &rl);
}

/* This process's RLIMIT_MEMLOCK (soft), as mrpin's events give it. */
static inline uint64_t mrpin_memlock_bytes(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		return 0;
	return rl.rlim_cur;
}

/* Bytes an MR of [start, start + length) pins: the pages it spans. */
static inline uint64_t mrpin_span_bytes(uintptr_t start, uint64_t length)
{
	uint64_t page = sysconf(_SC_PAGESIZE);

	return ((start + length + page - 1) & ~(page - 1)) - (start & ~(page - 1));
}

/* Register [addr, addr + length): 0, or -1 with errno set. */
static inline int _do_reg(struct ibv_pd *pd, void *addr, size_t length,
			  struct ibv_mr **mr)
{
	*mr = ibv_reg_mr(pd, addr, length, MRPIN_ACCESS);
	return *mr ? 0 : -1;
}

/* Deregister: 0, or -1 with errno set. */
static inline int _do_dereg(struct ibv_mr *mr)
{
	int ret = ibv_dereg_mr(mr);

	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

#define MRPIN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Read a whole (debugfs) file into *@bufp (NUL-terminated, to free()).
 * Return: 0 or a negative errno.
 */
static inline int mrpin_read_file(const char *path, char **bufp)
{
	size_t len = 0, size = 16384;
	char *buf, *tmp;
	ssize_t n;
	int fd;

	*bufp = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(size);
	while (buf) {
		n = read(fd, buf + len, size - len - 1);
		if (n <= 0) {
			if (!n)
				break;
			n = -errno;
			free(buf);
			close(fd);
			return n;
		}
		len += n;
		if (size - len > 1)
			continue;
		size *= 2;
		tmp = realloc(buf, size);
		if (!tmp)
			free(buf);
		buf = tmp;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	buf[len] = '\0';
	*bufp = buf;
	return 0;
}

/* Undo seq_escape(): "\ooo" octal escapes. */
static inline int mrpin_unescape(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; *src; src++) {
		char c = *src;

		if (c == '\\' && src[1] >= '0' && src[1] <= '3' &&
		    src[2] >= '0' && src[2] <= '7' &&
		    src[3] >= '0' && src[3] <= '7') {
			c = (src[1] - '0') << 6 | (src[2] - '0') << 3 |
			    (src[3] - '0');
			src += 3;
		}
		if (i + 1 >= size)
			return -EPROTO;
		dst[i++] = c;
	}
	dst[i] = '\0';
	return 0;
}

static inline int mrpin_parse_u64(const char *s, uint64_t *val)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EPROTO;
	errno = 0;
	*val = strtoull(s, &end, 10);
	return errno || *end ? -EPROTO : 0;
}

/*
 * The number of line "@key:" of the /proc file @path in *@val: decimal,
 * or hexadecimal with @hex; a number in kB is turned into bytes.
 * Return: 0, -EPROTO when the line is missing, or a negative errno.
 */
static inline int mrpin_proc_field(const char *path, const char *key,
				   bool hex, uint64_t *val)
{
	size_t klen = strlen(key);
	char *buf, *line, *end;
	int ret;

	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	line = buf;
	while (line && (strncmp(line, key, klen) || line[klen] != ':')) {
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	ret = -EPROTO;
	if (line) {
		errno = 0;
		*val = strtoull(line + klen + 1, &end, hex ? 16 : 10);
		if (!errno && end != line + klen + 1) {
			if (!strncmp(end, " kB", 3))
				*val *= 1024;
			ret = 0;
		}
	}
	free(buf);
	return ret;
}

/*
 * VmPin of process @pid in bytes (mm->pinned_vm): 0 or a negative errno
 * (-ESRCH when the process or its mm is gone).
 */
static inline int mrpin_vmpin(pid_t pid, uint64_t *bytes)
{
	char path[64];
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	ret = mrpin_proc_field(path, "VmPin", false, bytes);
	return ret == -ENOENT || ret == -EPROTO ? -ESRCH : ret;
}

/* The comm of process @pid, as the kernel keeps it. */
static inline int mrpin_comm(pid_t pid, char *comm, size_t size)
{
	char path[64], *buf;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(comm, size, "%s", buf);
	free(buf);
	return 0;
}

/* Write @text to the file at @path (truncating it): 0 or an errno. */
static inline int mrpin_write_file(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd, err = 0;
	ssize_t n;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, text, len);
	if (n != (ssize_t)len)
		err = n < 0 ? errno : EIO;
	close(fd);
	return err;
}

/* The number a one-line file such as a sysfs knob holds. */
static inline int mrpin_read_u64_file(const char *path, uint64_t *val)
{
	char *buf;
	int ret;

	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	buf[strcspn(buf, "\n")] = '\0';
	ret = mrpin_parse_u64(buf, val);
	free(buf);
	return ret;
}

/*
 * Write @len bytes of policy text to the limits file, in one write(), as
 * one transaction (it applies at the close, which says why it could not,
 * a last line without a newline being checked only there): 0 or an errno.
 */
static inline int mrpin_limits_write(const void *buf, size_t len)
{
	int fd, err = 0;
	ssize_t n;

	fd = open(MRPIN_LIMITS_FILE, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, buf, len);
	if (n < 0)
		err = errno;
	else if ((size_t)n != len)
		err = EIO;
	if (close(fd) && !err)
		err = errno;
	return err;
}

/* Write the policy text, printf-style: 0 or an errno. */
static inline int __attribute__((format(printf, 1, 2)))
mrpin_limits_writef(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return E2BIG;
	return mrpin_limits_write(buf, n);
}

/* CLOCK_MONOTONIC, in seconds. */
static inline double mrpin_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep @s seconds, through signals. */
static inline void mrpin_sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * The kernel's rate limit on mrpin's refusal/warning log lines: assumed to
 * let at least MRPIN_LOG_BURST lines through in any MRPIN_LOG_WINDOW
 * seconds (the module's is 10 in 5 s).
 */
#define MRPIN_LOG_BURST		10
#define MRPIN_LOG_WINDOW	5.5

/*
 * When a program made mrpin log its latest refusals and warnings; shared
 * (MAP_SHARED) by the harness's children, one per test.
 */
struct mrpin_log_budget {
	double logged[MRPIN_LOG_BURST];	/* CLOCK_MONOTONIC, circular */
	unsigned int next;
};

/* The program just made mrpin log @n refusals or warnings (@b may be NULL). */
static inline void mrpin_note_logged(struct mrpin_log_budget *b, unsigned int n)
{
	double t = mrpin_now_s();

	if (!b)
		return;
	if (n > MRPIN_LOG_BURST)
		n = MRPIN_LOG_BURST;
	while (n--)
		b->logged[b->next++ % MRPIN_LOG_BURST] = t;
}

/* Wait until the next logged refusal or warning cannot be rate-limited. */
static inline void mrpin_log_room(struct mrpin_log_budget *b)
{
	double oldest, wait;

	if (!b)
		return;
	oldest = b->logged[b->next % MRPIN_LOG_BURST];
	wait = oldest + MRPIN_LOG_WINDOW - mrpin_now_s();
	if (oldest > 0 && wait > 0)
		mrpin_sleep_s(wait);
}

/* A reader of /dev/kmsg that starts at the end of the log. */
static inline int mrpin_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * The messages logged since the last call, one a line (to free()), and a
 * line saying so where the log overwrote messages before they were read.
 */
static inline char *mrpin_kmsg_read(int fd)
{
	static const char lost[] =
		"kmsg_read: the kernel log overwrote messages before they were read";
	size_t len = 0, size = 16384, mlen;
	char rec[8192], *out, *tmp, *msg, *end;
	ssize_t n;

	out = malloc(size);
	if (!out)
		return NULL;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE) {
			/* Overwritten records: say so, go on from the oldest. */
			n = snprintf(rec, sizeof(rec), ";%s\n", lost);
		}
		if (n <= 0)
			break;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		end = strchr(msg, '\n');
		mlen = end ? (size_t)(end - msg) : strlen(msg);
		if (len + mlen + 2 > size) {
			size = 2 * (len + mlen + 2);
			tmp = realloc(out, size);
			if (!tmp) {
				free(out);
				return NULL;
			}
			out = tmp;
		}
		memcpy(out + len, msg, mlen);
		len += mlen;
		out[len++] = '\n';
	}
	out[len] = '\0';
	return out;
}

/*
 * The first line of @log that reports a kernel problem, or NULL: a line
 * matching one of the extended regular expressions in kernel_problems,
 * the file beside this program that vm-run.sh and lib.sh read too.  A
 * list that cannot be read is itself the problem reported.
 */
static inline const char *mrpin_log_problem(const char *log)
{
	static const char unread[] = "cannot read or compile kernel_problems";
	char path[4096], line[256], pattern[4096] = "", *dir_end;
	const char *hit = NULL;
	regmatch_t match;
	regex_t re;
	ssize_t n;
	FILE *list;

	/* Room left for the file's name in place of this program's. */
	n = readlink("/proc/self/exe", path,
		     sizeof(path) - sizeof("kernel_problems"));
	if (n <= 0)
		return unread;
	path[n] = '\0';
	dir_end = strrchr(path, '/');
	if (!dir_end)
		return unread;
	strcpy(dir_end + 1, "kernel_problems");
	list = fopen(path, "re");
	if (!list)
		return unread;
	while (fgets(line, sizeof(line), list)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (strlen(pattern) + strlen(line) + 2 > sizeof(pattern)) {
			fclose(list);
			return unread;
		}
		if (pattern[0])
			strcat(pattern, "|");
		strcat(pattern, line);
	}
	fclose(list);
	if (!pattern[0] ||
	    regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE))
		return unread;
	if (!regexec(&re, log, 1, &match, 0)) {
		hit = log + match.rm_so;
		while (hit > log && hit[-1] != '\n')
			hit--;
	}
	regfree(&re);
	return hit;
}

/*
 * Read what @fd has now (non-blocking fd) into *@textp (to free(); NULL on
 * error) and its length into *@lenp (if not NULL): 0 or a negative errno.
 */
static inline int mrpin_read_available(int fd, char **textp, size_t *lenp)
{
	size_t len = 0, size = 65536;
	char *buf, *tmp;
	ssize_t n;

	*textp = NULL;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (size - len < 8192) {
			size *= 2;
			tmp = realloc(buf, size);
			if (!tmp) {
				free(buf);
				return -ENOMEM;
			}
			buf = tmp;
		}
		n = read(fd, buf + len, size - len - 1);
		if (n > 0) {
			len += n;
			continue;
		}
		if (!n || errno == EAGAIN)
			break;
		n = -errno;
		free(buf);
		return n;
	}
	buf[len] = '\0';
	*textp = buf;
	if (lenp)
		*lenp = len;
	return 0;
}

/*
 * For the helper programs the tests drive (mrpin_pinner, mrpin_mistakes,
 * mrpin_misuse): say that @what failed, with errno, as program @prog, and
 * exit 1.
 */
static inline void __attribute__((noreturn))
mrpin_die(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

/* A page-aligned anonymous buffer of @len bytes, touched; NULL if none. */
static inline void *mrpin_map_touched(size_t len)
{
	void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED)
		return NULL;
	memset(buf, 0x5a, len);
	return buf;
}

/* A PD on device @dev (opened in *@ctx), or mrpin_die(). */
static inline struct ibv_pd *mrpin_open_pd(const char *prog, const char *dev,
					   struct ibv_context **ctx)
{
	struct ibv_pd *pd;

	*ctx = mrpin_open_dev(dev);
	if (!*ctx)
		mrpin_die(prog, dev);
	pd = ibv_alloc_pd(*ctx);
	if (!pd)
		mrpin_die(prog, "ibv_alloc_pd");
	return pd;
}

/* Wait until the test closes this program's stdin. */
static inline void mrpin_wait_eof(void)
{
	char buf[64];

	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
}

/*
 * Whether @log has a line equal to @line, or, with @suffix, a line that
 * starts with @line and ends with @suffix ("" for any end).
 */
static inline bool mrpin_log_has(const char *log, const char *line,
				 const char *suffix)
{
	size_t llen = strlen(line), slen = suffix ? strlen(suffix) : 0, len;
	const char *pos = log, *end;

	while (*pos) {
		end = strchr(pos, '\n');
		len = end ? (size_t)(end - pos) : strlen(pos);
		if (!suffix && len == llen && !memcmp(pos, line, llen))
			return true;
		if (suffix && len >= llen + slen && !memcmp(pos, line, llen) &&
		    !memcmp(pos + len - slen, suffix, slen))
			return true;
		if (!end)
			break;
		pos = end + 1;
	}
	return false;
}

/* cgroup v2, by paths relative to its mount. */

static inline bool mrpin_cgroup2_mounted(void)
{
	struct statfs s;

	return !statfs(MRPIN_CG_MNT, &s) && s.f_type == CGROUP2_SUPER_MAGIC;
}

/* Make cgroup @cg (it may be there already): 0 or an errno. */
static inline int mrpin_cg_mkdir(const char *cg)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), MRPIN_CG_MNT "%s", cg);
	return mkdir(path, 0755) && errno != EEXIST ? errno : 0;
}

/*
 * Remove cgroup @cg (gone already is fine): 0 or an errno.  An exited
 * process leaves its cgroup a moment later: EBUSY is tried again.
 */
static inline int mrpin_cg_rmdir(const char *cg)
{
	char path[PATH_MAX];
	int i;

	snprintf(path, sizeof(path), MRPIN_CG_MNT "%s", cg);
	for (i = 0; i < 100; i++) {
		if (!rmdir(path) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return errno;
		usleep(20000);
	}
	return EBUSY;
}

/* Move process @pid into cgroup @cg: 0 or an errno. */
static inline int mrpin_cg_write_procs(const char *cg, pid_t pid)
{
	char path[PATH_MAX], buf[32];
	int fd, n, err = 0;

	snprintf(path, sizeof(path), MRPIN_CG_MNT "%s/cgroup.procs", cg);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%d\n", pid);
	if (write(fd, buf, n) != n)
		err = errno ?: EIO;
	close(fd);
	return err;
}

/* The cgroup (v2) of process @pid (0 for this one): 0 or a negative errno. */
static inline int mrpin_cg_of(pid_t pid, char *cg, size_t size)
{
	char path[64], *buf, *line;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid ? pid : getpid());
	ret = mrpin_read_file(path, &buf);
	if (ret)
		return ret;
	line = strstr(buf, "0::");
	ret = -ENOENT;
	if (line && (line == buf || line[-1] == '\n')) {
		line += 3;
		line[strcspn(line, "\n")] = '\0';
		snprintf(cg, size, "%s", line);
		ret = 0;
	}
	free(buf);
	return ret;
}

#endif /* __MRPIN_UTILS_H */
