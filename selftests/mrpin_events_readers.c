// SPDX-License-Identifier: GPL-2.0
/*
 * Several readers of one open `events` descriptor, while refusals are
 * made: together they read the stream a lone reader reads, each byte once.
 *
 * The stream of one open `events` file is a sequence of bytes: whoever
 * reads next gets the bytes after the last one read, whichever thread read
 * it.  So the chunks that concurrent readers get, put end to end in the
 * order their reads ran, must be exactly that stream: every line whole, no
 * line read twice, none skipped, seq numbers consecutive.  The order in
 * which the reads ran is not visible from user space, so the check is that
 * the chunks tile the stream: some order of them, end to end, is it byte
 * for byte.  The stream is known afterwards: the lines a new reader reads
 * from the ring, from the first seq the readers had not yet seen (each
 * round makes fewer refusals than the ring holds, and nothing else makes
 * any meanwhile, so no line is lost to anyone).
 *
 * Two ways to read one descriptor at once:
 *  - threads calling read(2): the VFS takes the file's f_pos_lock around
 *    each read of a regular file shared between threads, so these reads
 *    do not overlap whatever the file does itself;
 *  - io_uring reads, which run in io_uring's worker threads without
 *    f_pos_lock: only the file's own locking keeps two reads apart.
 *
 * Each round: open `events`, read what the ring holds (alone), then start
 * the readers, make the refusals (a process rule of 4 KiB, registrations
 * of 64 KiB: one `deny` line each), wait until the readers have read as
 * many bytes as the stream has or stop getting more, stop them, check.
 * Then the kernel log holds no problem.
 */
#define _GNU_SOURCE
/* The 6.1 harness has an unused parameter: keep -Wextra quiet about it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <linux/io_uring.h>

#include "mrpin_test.h"

#define EVENTS_FILE	MRPIN_DEBUGFS "/events"
#define MR_LEN		(64 * 1024)
#define RULE		"process max_pinned=4K\n"
/* Refusals per round: well below the ring's 1024 lines. */
#define ROUND_EVENTS	600
#define READERS		4
/* Seconds without a new byte after which the readers are stopped. */
#define IDLE_S		2.0

/* What one read returned. */
struct chunk {
	char *buf;
	size_t len;
};

/* Every chunk of a round, from all readers. */
struct chunks {
	pthread_mutex_t lock;
	struct chunk *c;
	int n, size;
	atomic_size_t bytes;
	atomic_int errors;	/* reads that failed other than EINTR */
	int first_errno;
};

static void chunks_init(struct chunks *cs)
{
	memset(cs, 0, sizeof(*cs));
	pthread_mutex_init(&cs->lock, NULL);
}

static void chunks_free(struct chunks *cs)
{
	int i;

	for (i = 0; i < cs->n; i++)
		free(cs->c[i].buf);
	free(cs->c);
	pthread_mutex_destroy(&cs->lock);
}

/* Keep a copy of what a read returned: 0 or -ENOMEM. */
static int chunks_add(struct chunks *cs, const char *buf, size_t len)
{
	struct chunk *c;
	char *copy;

	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	pthread_mutex_lock(&cs->lock);
	if (cs->n == cs->size) {
		c = realloc(cs->c, (cs->size * 2 + 64) * sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&cs->lock);
			free(copy);
			return -ENOMEM;
		}
		cs->c = c;
		cs->size = cs->size * 2 + 64;
	}
	cs->c[cs->n++] = (struct chunk){ copy, len };
	pthread_mutex_unlock(&cs->lock);
	atomic_fetch_add(&cs->bytes, len);
	return 0;
}

static void chunks_error(struct chunks *cs, int err)
{
	if (atomic_fetch_add(&cs->errors, 1) == 0)
		cs->first_errno = err;
}

static int chunk_cmp(const void *a, const void *b)
{
	const struct chunk *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->buf, y->buf, x->len);
}

/*
 * Whether the unused chunks, in some order, make up @text from @pos on
 * exactly.  Chunks are sorted, so that identical ones are tried once.
 * *@budget bounds the search (a tiling exists or not long before it runs
 * out: chunks are long and differ in their seq and time).
 */
static bool tile(const char *text, size_t len, size_t pos,
		 const struct chunk *c, int n, bool *used, int left,
		 long *budget)
{
	int i;

	if (pos == len)
		return !left;
	if (!left || --*budget < 0)
		return false;
	for (i = 0; i < n; i++) {
		if (used[i] || c[i].len > len - pos)
			continue;
		if (i && !used[i - 1] && !chunk_cmp(&c[i - 1], &c[i]))
			continue;
		if (memcmp(text + pos, c[i].buf, c[i].len))
			continue;
		used[i] = true;
		if (tile(text, len, pos + c[i].len, c, n, used, left - 1,
			 budget))
			return true;
		used[i] = false;
	}
	return false;
}

/* The seq of an `events` line, or -1 for a comment or a malformed line. */
static int64_t line_seq(const char *line)
{
	char *end;
	uint64_t seq;

	if (*line < '0' || *line > '9')
		return -1;
	errno = 0;
	seq = strtoull(line, &end, 10);
	if (errno || *end != ' ' || seq > INT64_MAX)
		return -1;
	return seq;
}

/*
 * The text from the first line numbered @from on (to free()), of what
 * a new reader of `events` reads now; *@nlines: its lines, each checked to
 * be a well-formed event line numbered one more than the one before.
 * NULL on any error, with the reason in *@why.
 */
static char *stream_from(uint64_t from, int *nlines, const char **why)
{
	char *text, *start, *line, *end, *out, copy[1024];
	struct mrpin_event ev;
	uint64_t want = from;
	size_t len;
	int fd, ret;

	*why = "cannot read events";
	fd = open(EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ret = mrpin_read_available(fd, &text, &len);
	close(fd);
	if (ret)
		return NULL;
	start = NULL;
	*nlines = 0;
	for (line = text; *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end) {
			*why = "the stream ends in a partial line";
			goto fail;
		}
		if (!start && line_seq(line) >= 0 &&
		    (uint64_t)line_seq(line) >= from)
			start = line;
		if (!start)
			continue;
		/* Parsed in a copy: the parser cuts the line up. */
		ret = -EPROTO;
		if ((size_t)(end - line) < sizeof(copy)) {
			memcpy(copy, line, end - line);
			copy[end - line] = '\0';
			ret = mrpin_parse_event(copy, &ev);
		}
		if (ret || ev.seq != want) {
			*why = "the stream's lines are not whole and consecutive";
			goto fail;
		}
		want++;
		(*nlines)++;
	}
	out = strdup(start ? start : "");
	free(text);
	*why = out ? NULL : "out of memory";
	return out;
fail:
	free(text);
	return NULL;
}

/*
 * Open `events` for the concurrent readers, having read (alone) all the
 * ring holds: the fd, and in *@next the seq its next line will have.
 */
static int open_drained(uint64_t *next)
{
	char *text, *line, *end;
	int fd, flags;
	int64_t seq;

	fd = open(EVENTS_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) ||
	    mrpin_read_available(fd, &text, NULL) ||
	    fcntl(fd, F_SETFL, flags)) {
		close(fd);
		return -1;
	}
	*next = 0;
	for (line = text; *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			break;
		seq = line_seq(line);
		if (seq >= 0)
			*next = seq + 1;
	}
	free(text);
	return fd;
}

static void on_signal(int sig)
{
	(void)sig;
}

/* read(2) readers: threads sharing one descriptor. */
struct read_thread {
	pthread_t thread;
	int fd;
	size_t size;
	struct chunks *cs;
	atomic_bool *stop;
};

static void *read_thread_fn(void *arg)
{
	struct read_thread *t = arg;
	char buf[8192];
	ssize_t n;

	while (!atomic_load(t->stop)) {
		n = read(t->fd, buf, t->size);
		if (n > 0) {
			if (chunks_add(t->cs, buf, n))
				chunks_error(t->cs, ENOMEM);
		} else if (n == 0) {
			chunks_error(t->cs, ENODATA);
			break;
		} else if (errno != EINTR) {
			chunks_error(t->cs, errno);
			break;
		}
	}
	return NULL;
}

/* A minimal io_uring, enough to keep reads of one descriptor in flight. */
struct ring {
	int fd;
	unsigned int entries;
	void *sq_map, *cq_map;
	size_t sq_map_len, cq_map_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
};

/* 0, or a negative errno (-ENOSYS, -EPERM: no io_uring here). */
static int ring_init(struct ring *r, unsigned int entries)
{
	struct io_uring_params p;
	bool single;

	memset(r, 0, sizeof(*r));
	memset(&p, 0, sizeof(p));
	r->fd = syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	r->entries = p.sq_entries;
	single = p.features & IORING_FEAT_SINGLE_MMAP;
	r->sq_map_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_map_len = p.cq_off.cqes +
			p.cq_entries * sizeof(struct io_uring_cqe);
	if (single && r->cq_map_len > r->sq_map_len)
		r->sq_map_len = r->cq_map_len;
	r->sq_map = mmap(NULL, r->sq_map_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED)
		goto fail;
	r->cq_map = r->sq_map;
	if (!single) {
		r->cq_map = mmap(NULL, r->cq_map_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_POPULATE, r->fd,
				 IORING_OFF_CQ_RING);
		if (r->cq_map == MAP_FAILED)
			goto fail;
	}
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		goto fail;
	r->sq_head = (unsigned int *)((char *)r->sq_map + p.sq_off.head);
	r->sq_tail = (unsigned int *)((char *)r->sq_map + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq_map + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq_map + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq_map + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq_map + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq_map + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_map + p.cq_off.cqes);
	return 0;
fail:
	close(r->fd);
	return -ENOMEM;
}

static void ring_exit(struct ring *r)
{
	munmap(r->sqes, r->sqes_len);
	if (r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_map_len);
	munmap(r->sq_map, r->sq_map_len);
	close(r->fd);
}

/* Queue one SQE and submit it: 0 or a negative errno. */
static int ring_submit(struct ring *r, const struct io_uring_sqe *sqe)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	int ret;

	r->sqes[idx] = *sqe;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	do {
		ret = syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0);
	} while (ret < 0 && errno == EINTR);
	return ret == 1 ? 0 : ret < 0 ? -errno : -EIO;
}

/* Take one completion if there is one. */
static bool ring_reap(struct ring *r, struct io_uring_cqe *cqe)
{
	unsigned int head = *r->cq_head;

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return false;
	*cqe = r->cqes[head & *r->cq_mask];
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return true;
}

/* Wait up to @ms for a completion to be there. */
static void ring_wait(struct ring *r, int ms)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

	poll(&pfd, 1, ms);
}

/* The refusals of a round, made by a thread of their own. */
struct maker {
	pthread_t thread;
	struct ibv_pd *pd;
	void *buf;
	int n, refused, other;
	atomic_bool done;
};

static void *maker_fn(void *arg)
{
	struct maker *m = arg;
	struct ibv_mr *mr;
	int i;

	for (i = 0; i < m->n; i++) {
		if (_do_reg(m->pd, m->buf, MR_LEN, &mr)) {
			if (errno == ENOMEM)
				m->refused++;
			else
				m->other++;
			continue;
		}
		m->other++;
		_do_dereg(mr);
	}
	atomic_store(&m->done, true);
	return NULL;
}

FIXTURE(readers) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	void *buf;
	char *saved_policy;
	int kmsg;
	bool policy_set;
};

FIXTURE_VARIANT(readers) {
	bool io_uring;
	int rounds;
};

/* Threads calling read(2) on the descriptor they share. */
FIXTURE_VARIANT_ADD(readers, threads) {
	.io_uring = false,
	.rounds = 3,
};

/* io_uring reads of the descriptor, several in flight. */
FIXTURE_VARIANT_ADD(readers, io_uring) {
	.io_uring = true,
	.rounds = 3,
};

FIXTURE_SETUP(readers)
{
	struct sigaction sa = { .sa_handler = on_signal };

	ASSERT_EQ(0, mrpin_unlimit_memlock());
	self->ctx = mrpin_open_dev(mrpin_dev_name());
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->buf = map_buf(MR_LEN);
	ASSERT_EQ(0, mrpin_read_file(MRPIN_LIMITS_FILE, &self->saved_policy));
	self->kmsg = mrpin_kmsg_open();
	ASSERT_LE(0, self->kmsg);
	/* SIGUSR1 interrupts a read(2) blocked for new lines (no restart). */
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, mrpin_limits_write(RULE, strlen(RULE)));
	self->policy_set = true;
}

FIXTURE_TEARDOWN(readers)
{
	const char *problem;
	char *log;

	if (self->policy_set)
		EXPECT_EQ(0, mrpin_limits_write(self->saved_policy,
						strlen(self->saved_policy)));
	free(self->saved_policy);
	if (self->buf)
		munmap(self->buf, MR_LEN);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	if (self->kmsg < 0)
		return;
	log = mrpin_kmsg_read(self->kmsg);
	EXPECT_NE(NULL, log);
	if (log) {
		problem = mrpin_log_problem(log);
		EXPECT_EQ(NULL, problem) {
			TH_LOG("kernel log: %.200s", problem);
		}
		free(log);
	}
	close(self->kmsg);
}

/* The read sizes of the readers: they differ, so that lines are split. */
static const size_t read_sizes[READERS] = { 4096, 333, 97, 1500 };

/*
 * After the maker is done: the stream it made (NULL, and why, on error),
 * once the readers have read as many bytes as it has or got none for
 * IDLE_S seconds.  @progress(@arg) lets the caller's readers go on.
 */
static char *wait_for_stream(struct chunks *cs, struct maker *m,
			     uint64_t from, int *nlines, const char **why,
			     void (*progress)(void *), void *arg)
{
	double idle_since;
	size_t seen, want;
	char *stream;

	while (!atomic_load(&m->done))
		progress(arg);
	stream = stream_from(from, nlines, why);
	want = stream ? strlen(stream) : 0;
	seen = atomic_load(&cs->bytes);
	idle_since = mrpin_now_s();
	while (!stream || atomic_load(&cs->bytes) < want) {
		progress(arg);
		if (atomic_load(&cs->bytes) != seen) {
			seen = atomic_load(&cs->bytes);
			idle_since = mrpin_now_s();
		} else if (mrpin_now_s() - idle_since > IDLE_S) {
			break;
		}
	}
	return stream;
}

static void sleep_a_little(void *arg)
{
	(void)arg;
	mrpin_sleep_s(0.01);
}

/* One round of read(2) threads: the stream, as wait_for_stream(). */
static char *threads_round(int fd, struct chunks *cs, struct maker *m,
			   uint64_t from, int *nlines, const char **why)
{
	struct read_thread t[READERS];
	bool joined[READERS] = { false };
	atomic_bool stop = false;
	char *stream;
	int i, left;

	for (i = 0; i < READERS; i++) {
		t[i] = (struct read_thread){ .fd = fd, .size = read_sizes[i],
					     .cs = cs, .stop = &stop };
		pthread_create(&t[i].thread, NULL, read_thread_fn, &t[i]);
	}
	pthread_create(&m->thread, NULL, maker_fn, m);
	stream = wait_for_stream(cs, m, from, nlines, why, sleep_a_little,
				 NULL);
	pthread_join(m->thread, NULL);
	/*
	 * A signal ends a read(2) that waits for new lines.  Signal them all
	 * each time: one waits for the f_pos_lock of another, uninterruptibly.
	 */
	atomic_store(&stop, true);
	for (left = READERS; left; mrpin_sleep_s(0.01)) {
		for (i = 0; i < READERS; i++) {
			if (joined[i])
				continue;
			pthread_kill(t[i].thread, SIGUSR1);
			if (pthread_tryjoin_np(t[i].thread, NULL) != EBUSY) {
				joined[i] = true;
				left--;
			}
		}
	}
	return stream;
}

/* io_uring readers: READERS reads in flight at once, one per buffer. */
struct uring_reads {
	struct ring r;
	int fd;
	char bufs[READERS][8192];
	bool inflight[READERS];
	bool stopping;
	struct chunks *cs;
};

static int uring_read(struct uring_reads *u, int i)
{
	struct io_uring_sqe sqe = {
		.opcode = IORING_OP_READ,
		.fd = u->fd,
		.off = (uint64_t)-1,
		.addr = (uintptr_t)u->bufs[i],
		.len = read_sizes[i],
		.user_data = i,
	};
	int ret = ring_submit(&u->r, &sqe);

	if (!ret)
		u->inflight[i] = true;
	return ret;
}

/* Take the completions there are (waiting a little for one); read again. */
static void uring_poll(void *arg)
{
	struct uring_reads *u = arg;
	struct io_uring_cqe cqe;
	int i;

	ring_wait(&u->r, 10);
	while (ring_reap(&u->r, &cqe)) {
		if (cqe.user_data >= READERS)
			continue;	/* the cancellation's own */
		i = cqe.user_data;
		u->inflight[i] = false;
		if (cqe.res > 0) {
			if (chunks_add(u->cs, u->bufs[i], cqe.res))
				chunks_error(u->cs, ENOMEM);
		} else if (cqe.res == 0) {
			chunks_error(u->cs, ENODATA);
			continue;
		} else if (cqe.res != -EINTR && cqe.res != -ECANCELED) {
			chunks_error(u->cs, -cqe.res);
			continue;
		}
		if (!u->stopping && uring_read(u, i))
			chunks_error(u->cs, EIO);
	}
}

/* Whether any read is in flight. */
static bool uring_busy(const struct uring_reads *u)
{
	int i;

	for (i = 0; i < READERS; i++)
		if (u->inflight[i])
			return true;
	return false;
}

/*
 * One round of io_uring reads: the stream, as wait_for_stream(); *@skip
 * (an errno) when this kernel has no io_uring for us.
 */
static char *uring_round(int fd, struct chunks *cs, struct maker *m,
			 uint64_t from, int *nlines, const char **why,
			 int *skip)
{
	struct io_uring_sqe cancel = {
		.opcode = IORING_OP_ASYNC_CANCEL,
		.fd = -1,
		.cancel_flags = IORING_ASYNC_CANCEL_ANY,
		.user_data = READERS,
	};
	struct uring_reads *u;
	char *stream = NULL;
	double t0;
	int i, ret;

	*why = "out of memory";
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	ret = ring_init(&u->r, 2 * READERS);
	if (ret) {
		*skip = ret == -ENOSYS || ret == -EPERM ? -ret : 0;
		*why = "io_uring_setup failed";
		free(u);
		return NULL;
	}
	u->fd = fd;
	u->cs = cs;
	for (i = 0; i < READERS; i++)
		if (uring_read(u, i))
			chunks_error(cs, EIO);
	pthread_create(&m->thread, NULL, maker_fn, m);
	stream = wait_for_stream(cs, m, from, nlines, why, uring_poll, u);
	pthread_join(m->thread, NULL);
	/* Cancel the reads still waiting for new lines. */
	u->stopping = true;
	if (ring_submit(&u->r, &cancel))
		chunks_error(cs, EIO);
	t0 = mrpin_now_s();
	while (uring_busy(u) && mrpin_now_s() - t0 < 10)
		uring_poll(u);
	if (uring_busy(u))
		chunks_error(cs, ETIMEDOUT);
	ring_exit(&u->r);
	free(u);
	return stream;
}

/* The first chunk that is no piece of @stream, for the test's output. */
static void show_stray_chunk(struct __test_metadata *_metadata,
			     const char *stream, const struct chunks *cs)
{
	const struct chunk *c;
	int i;

	for (i = 0; i < cs->n; i++) {
		c = &cs->c[i];
		if (memmem(stream, strlen(stream), c->buf, c->len))
			continue;
		TH_LOG("a chunk of %zu bytes that is in no line: '%.*s'",
		       c->len, (int)(c->len > 120 ? 120 : c->len), c->buf);
		return;
	}
	TH_LOG("every chunk is somewhere in the stream: some are read twice or missing");
}

/*
 * Say which lines of @stream (@nlines from seq @from on) no chunk holds
 * whole and which two chunks hold, of the lines that start and end inside
 * a chunk: what went missing or twice, for the test's output.
 */
static void show_lines_read(struct __test_metadata *_metadata,
			    const struct chunks *cs, uint64_t from,
			    int nlines)
{
	int i, missing = 0, twice = 0, *seen;
	const char *p, *nl, *end;
	int64_t seq;

	seen = calloc(nlines, sizeof(*seen));
	if (!seen)
		return;
	for (i = 0; i < cs->n; i++) {
		p = cs->c[i].buf;
		end = p + cs->c[i].len;
		/* A chunk's first piece may be the end of a line: skip it. */
		nl = memchr(p, '\n', end - p);
		while (nl && nl + 1 < end) {
			p = nl + 1;
			nl = memchr(p, '\n', end - p);
			if (!nl)
				break;
			seq = line_seq(p);
			if (seq >= (int64_t)from && seq < (int64_t)from + nlines)
				seen[seq - from]++;
		}
	}
	for (i = 0; i < nlines; i++) {
		twice += seen[i] > 1;
		missing += !seen[i];
	}
	TH_LOG("of %d lines, %d were read whole twice or more; %d not whole in any one chunk (the first of a chunk counts as not whole)",
	       nlines, twice, missing);
	free(seen);
}

TEST_F_TIMEOUT(readers, read_together_the_stream_one_reader_reads, 300)
{
	int round, fd, nlines = 0, skip = 0;
	struct chunks cs;
	const char *why;
	uint64_t from;
	char *stream;
	size_t want;
	bool *used;
	long budget;

	for (round = 0; round < variant->rounds; round++) {
		struct maker m = { .pd = self->pd, .buf = self->buf,
				   .n = ROUND_EVENTS };

		chunks_init(&cs);
		fd = open_drained(&from);
		ASSERT_LE(0, fd) {
			TH_LOG("open %s: %s", EVENTS_FILE, strerror(errno));
		}
		if (variant->io_uring)
			stream = uring_round(fd, &cs, &m, from, &nlines, &why,
					     &skip);
		else
			stream = threads_round(fd, &cs, &m, from, &nlines,
					       &why);
		close(fd);
		if (skip) {
			chunks_free(&cs);
			SKIP(return, "no io_uring here: %s", strerror(skip));
		}

		EXPECT_EQ(ROUND_EVENTS, m.refused) {
			TH_LOG("round %d: %d registrations refused, %d not",
			       round, m.refused, m.other);
		}
		ASSERT_NE(NULL, stream) {
			TH_LOG("round %d: %s", round, why);
		}
		want = strlen(stream);
		EXPECT_EQ(ROUND_EVENTS, nlines);
		EXPECT_EQ(0, atomic_load(&cs.errors)) {
			TH_LOG("round %d: a read failed: %s", round,
			       strerror(cs.first_errno));
		}
		EXPECT_EQ(want, atomic_load(&cs.bytes)) {
			TH_LOG("round %d: the readers read %zu bytes in %d reads, the stream has %zu",
			       round, atomic_load(&cs.bytes), cs.n, want);
		}
		qsort(cs.c, cs.n, sizeof(*cs.c), chunk_cmp);
		used = calloc(cs.n + 1, sizeof(*used));
		ASSERT_NE(NULL, used);
		budget = 2000000;
		EXPECT_TRUE(tile(stream, want, 0, cs.c, cs.n, used, cs.n,
				 &budget)) {
			TH_LOG("round %d: the %d chunks read (%zu bytes) are not the %d lines (%zu bytes) cut in pieces%s",
			       round, cs.n, atomic_load(&cs.bytes), nlines,
			       want, budget < 0 ? " (the search gave up)" : "");
			show_stray_chunk(_metadata, stream, &cs);
			show_lines_read(_metadata, &cs, from, nlines);
		}
		ksft_print_msg("round %d: %d lines in %d reads by %d readers\n",
			       round, nlines, cs.n, READERS);
		free(used);
		free(stream);
		chunks_free(&cs);
	}
}

TEST_HARNESS_MAIN
