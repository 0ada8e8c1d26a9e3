// SPDX-License-Identifier: GPL-2.0
/*
 * Messages, sizes, durations, errno names, user names and the terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "mrpinctl.h"

static void vpr_err(const char *fmt, va_list ap)
{
	fflush(stdout);
	fputs("mrpinctl: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* "mrpinctl: <message>" on stderr. */
void pr_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vpr_err(fmt, ap);
	va_end(ap);
}

/* A usage error: the message, and EXIT_USAGE to return. */
int usage_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vpr_err(fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

/* A string formatted as printf() does, allocated (to free). */
char *strfmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = xmalloc(n < 0 ? 1 : (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, n < 0 ? 1 : (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (!p) {
		pr_err("out of memory");
		exit(EXIT_FAIL);
	}
	return p;
}

void *xmalloc(size_t size)
{
	return xrealloc(NULL, size);
}

char *xstrdup(const char *s)
{
	size_t len = strlen(s) + 1;

	return memcpy(xmalloc(len), s, len);
}

/* --- sizes and times, for people --- */

/* 0 B, 512 B, 4.0 KiB, 1.5 MiB, 12.3 GiB, 512 GiB: binary units. */
const char *fmt_bytes(char *buf, size_t len, uint64_t v)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
	};
	unsigned int u = 0;
	double q;

	while (u + 1 < ARRAY_SIZE(units) && v >> (10 * (u + 1)))
		u++;
	if (!u) {
		snprintf(buf, len, "%llu B", (unsigned long long)v);
		return buf;
	}
	q = (double)v / (double)(1ULL << (10 * u));
	if (q >= 1023.5 && u + 1 < ARRAY_SIZE(units)) {
		q /= 1024;
		u++;
	}
	snprintf(buf, len, q < 99.95 ? "%.1f %s" : "%.0f %s", q, units[u]);
	return buf;
}

/* 450ms, 12.3s, 4m12s, 3h05m, 2d04h. */
const char *fmt_ms(char *buf, size_t len, uint64_t ms)
{
	uint64_t s = ms / 1000;

	if (ms < 1000)
		snprintf(buf, len, "%llums", (unsigned long long)ms);
	else if (s < 60)
		snprintf(buf, len, "%.1fs", (double)(ms / 100) / 10);
	else if (s < 3600)
		snprintf(buf, len, "%llum%02llus", (unsigned long long)s / 60,
			 (unsigned long long)s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%lluh%02llum", (unsigned long long)s / 3600,
			 (unsigned long long)s / 60 % 60);
	else
		snprintf(buf, len, "%llud%02lluh", (unsigned long long)s / 86400,
			 (unsigned long long)s / 3600 % 24);
	return buf;
}

/* CLOCK_REALTIME nanoseconds as local time, to the second: Nov 30 02:39:09. */
const char *fmt_time_ns(char *buf, size_t len, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;

	if (!localtime_r(&t, &tm) ||
	    !strftime(buf, len, "%b %d %H:%M:%S", &tm))
		snprintf(buf, len, "%llu", (unsigned long long)ns);
	return buf;
}

/* glibc names errnos from 2.32 on; before, the ones a pin fails with. */
#ifdef __GLIBC_PREREQ
#if __GLIBC_PREREQ(2, 32)
#define HAVE_STRERRORNAME_NP
#endif
#endif

#ifdef HAVE_STRERRORNAME_NP
#define errno_name strerrorname_np
#else
static const char *errno_name(int e)
{
#define E(name) { name, #name }
	static const struct {
		int e;
		const char *name;
	} names[] = {
		E(EPERM), E(EINTR), E(EIO), E(ENXIO), E(EAGAIN), E(ENOMEM),
		E(EACCES), E(EFAULT), E(EBUSY), E(ENODEV), E(EINVAL),
		E(ENOSPC), E(ERANGE), E(EOVERFLOW), E(EOPNOTSUPP),
	};
#undef E
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].e == e)
			return names[i].name;
	return NULL;
}
#endif

/* An errno by its name: ENOMEM; "errno 4095" when it has none; 0: "-". */
const char *fmt_errno(char *buf, size_t len, uint64_t v)
{
	const char *name = v && v < INT_MAX ? errno_name((int)v) : NULL;

	if (!v)
		snprintf(buf, len, "-");
	else if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "errno %llu", (unsigned long long)v);
	return buf;
}

/* --- parsing --- */

/* Decimal digits only, as the module prints and takes them. */
bool parse_u64(const char *s, const char **end, uint64_t *v)
{
	uint64_t x = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*end = s;
	*v = x;
	return true;
}

bool parse_u64_all(const char *s, uint64_t *v)
{
	const char *end;

	return parse_u64(s, &end, v) && !*end;
}

/* SIZE on the command line: 4096, 4K, 4KiB, 1.5G (binary units). */
const char *parse_size_arg(const char *s, void *dst)
{
	static const char suffixes[] = "KMGTPE";
	const char *p;
	char *end;
	double v;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return "expected a size like 4096, 64K, 1.5M or 2GiB";
	errno = 0;
	v = strtod(s, &end);
	if (errno)
		return "size too large";
	p = *end ? strchr(suffixes, end[0] & ~0x20) : NULL;
	if (p) {
		shift = 10 * (int)(p - suffixes + 1);
		end++;
		if (end[0] == 'i' && end[1] == 'B')
			end += 2;
		else if (end[0] == 'B')
			end++;
	} else if (*end == 'B') {
		end++;
	}
	if (*end)
		return "expected a size like 4096, 64K, 1.5M or 2GiB";
	v *= (double)(1ULL << shift);
	if (v >= 18446744073709551615.0)
		return "size too large";
	*(uint64_t *)dst = (uint64_t)v;
	return NULL;
}

/* DURATION: 500ms, 30s, 5m, 2h, 1d; a plain number is seconds. */
const char *parse_duration_arg(const char *s, void *dst)
{
	static const struct { const char *unit; uint64_t ms; } units[] = {
		{ "ms", 1 }, { "", 1000 }, { "s", 1000 }, { "m", 60000 },
		{ "h", 3600000 }, { "d", 86400000 },
	};
	const char *end;
	uint64_t v;
	size_t i;

	if (!parse_u64(s, &end, &v))
		return "expected a duration like 500ms, 30s, 5m, 2h or 1d";
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (v > UINT64_MAX / units[i].ms)
			return "duration too long";
		*(uint64_t *)dst = v * units[i].ms;
		return NULL;
	}
	return "expected a duration like 500ms, 30s, 5m, 2h or 1d";
}

const char *parse_pid_arg(const char *s, void *dst)
{
	uint64_t v;

	if (!parse_u64_all(s, &v) || !v || v > INT_MAX)
		return "expected a process id";
	*(uint64_t *)dst = v;
	return NULL;
}

/* A user name or a uid. */
const char *parse_user_arg(const char *s, void *dst)
{
	uint32_t uid;

	if (!user_lookup(s, &uid))
		return "no such user";
	*(uint64_t *)dst = uid;
	return NULL;
}

const char *parse_str_arg(const char *s, void *dst)
{
	*(const char **)dst = s;
	return NULL;
}

/* --- users --- */

/*
 * The name of @uid, cached (a table may name the same user many times);
 * NULL when it has none.
 */
const char *user_name(uint32_t uid)
{
	static struct { uint32_t uid; char *name; } cache[64];
	static size_t n;
	struct passwd *pw;
	size_t i;

	for (i = 0; i < n; i++)
		if (cache[i].uid == uid)
			return cache[i].name;
	pw = getpwuid(uid);
	if (n == ARRAY_SIZE(cache))
		return pw ? pw->pw_name : NULL;
	cache[n].uid = uid;
	cache[n].name = pw ? xstrdup(pw->pw_name) : NULL;
	return cache[n++].name;
}

/* A uid (all digits) or a user name; false when there is no such user. */
bool user_lookup(const char *name, uint32_t *uid)
{
	struct passwd *pw;
	uint64_t v;

	if (parse_u64_all(name, &v)) {
		if (v >= UINT32_MAX)
			return false;
		*uid = (uint32_t)v;
		return true;
	}
	pw = *name ? getpwnam(name) : NULL;
	if (!pw)
		return false;
	*uid = pw->pw_uid;
	return true;
}

/* --- the machine --- */

/*
 * This machine's RAM as the module counts it for N% limits: sysinfo()'s
 * totalram is totalram_pages().  Only for the live debugfs of a module
 * whose `stats` has no ram_bytes line (see load_stats()).
 */
uint64_t host_ram_bytes(void)
{
	struct sysinfo si;

	if (sysinfo(&si))
		return 0;
	return (uint64_t)si.totalram * si.mem_unit;
}

/* The terminal's width; $COLUMNS, else 80, when stdout is not one. */
unsigned int term_width(void)
{
	struct winsize ws;
	const char *env;
	uint64_t v;

	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col)
		return ws.ws_col;
	env = getenv("COLUMNS");
	if (env && parse_u64_all(env, &v) && v >= 20 && v <= 10000)
		return (unsigned int)v;
	return 80;
}

/*
 * The whole of open file @fd, NUL-terminated, in *buf (to free) and its
 * length in *len; a descriptor opened O_NONBLOCK is read until it has
 * nothing more (EAGAIN).  Returns 0, or the errno of the read.
 */
int read_fd(int fd, char **buf, size_t *len)
{
	size_t size = 16384, n = 0;
	ssize_t r;
	char *b;
	int err = 0;

	b = xmalloc(size);
	for (;;) {
		if (n + 1 >= size)
			b = xrealloc(b, size *= 2);
		r = read(fd, b + n, size - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != EAGAIN)
			err = errno;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (err) {
		free(b);
		return err;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/*
 * The whole of file @path, as read_fd() reads it.  Returns 0, or the errno
 * of the open or read (nothing said: the caller knows what the file is).
 */
int read_whole(const char *path, char **buf, size_t *len)
{
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	err = read_fd(fd, buf, len);
	close(fd);
	return err;
}
