// SPDX-License-Identifier: GPL-2.0
/*
 * How mrpin reports a refusal to those who watch for it: a reader of
 * `events` without O_NONBLOCK waits for the next one, a non-blocking one
 * gets EAGAIN until poll() says one has come, a reader that fell behind
 * the ring is told how many it lost and then gets the rest in order, and
 * each refusal fires the mrpin:mrpin_deny tracepoint while an allowed pin
 * does not.  The refusals are real registrations on the RDMA device under
 * test, made by this process or by helper processes (mrpin_limits.h).
 *
 * The kernel log lines mrpin prints for refusals are rate-limited: the
 * tests that make many space them out (mrpin_log_room()).
 */
#include "mrpin_limits.h"

#define EVENTS_RING	1024

/* A non-blocking reader of `events` that has read every event so far. */
static int __events_reader(struct __test_metadata *_metadata)
{
	char *text;
	int fd;

	fd = open(MRPIN_EVENTS_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, mrpin_read_available(fd, &text, NULL));
	free(text);
	return fd;
}
#define events_reader() __events_reader(_metadata)

FIXTURE(events) {
	struct limits_test t;
};

FIXTURE_SETUP(events)
{
	test_setup(&self->t);
}

FIXTURE_TEARDOWN(events)
{
	test_teardown(&self->t);
}

/*
 * 9. events without O_NONBLOCK's wait: a read with nothing new fails with
 * EAGAIN, poll() says when a denial arrives, and the read then returns it.
 */
TEST_F(events, nonblocking_events_reader_gets_EAGAIN_until_poll_reports_a_denial)
{
	struct limits_test *t = &self->t;
	struct pollfd pfd;
	struct ibv_mr *mr;
	struct mrpin_events e;
	char *text, *buf, tmp[256];
	ssize_t n;
	int fd;

	buf = map_buf(2 * PAGE);
	set_limits("process max_pin_size=4K\n");
	fd = events_reader();
	n = read(fd, tmp, sizeof(tmp));
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	pfd = (struct pollfd){ fd, POLLIN, 0 };
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	do_reg(t->f.pd, buf, PAGE, &mr);		/* allowed: no event */
	EXPECT_EQ(0, poll(&pfd, 1, 100));
	self_reg_err(t->f.pd, buf, 2 * PAGE);
	pfd.revents = 0;
	EXPECT_EQ(1, poll(&pfd, 1, 5000));
	EXPECT_TRUE(pfd.revents & POLLIN);

	ASSERT_EQ(0, mrpin_read_available(fd, &text, NULL));
	ASSERT_EQ(0, mrpin_events_parse(text, false, &e)) {
		TH_LOG("not events lines: %s", text);
	}
	free(text);
	ASSERT_EQ(1, e.n);
	check_event(&e.ev[0], "deny", getpid(), 0, "process", "max_pin_size",
		    2 * PAGE, MRPIN_ANY, PAGE);
	free(e.ev);
	n = read(fd, tmp, sizeof(tmp));
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	close(fd);
	do_dereg(mr);
	munmap(buf, 2 * PAGE);
}

static char proc_state(pid_t pid)
{
	char path[64], *buf, *p, state = '?';

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (mrpin_read_file(path, &buf))
		return state;
	p = strrchr(buf, ')');
	if (p && p[1] == ' ')
		state = p[2];
	free(buf);
	return state;
}

/* 10. A reader blocked in read() wakes up with the new denial. */
TEST_F(events, blocked_events_reader_wakes_up_with_the_denial)
{
	struct limits_test *t = &self->t;
	char *text, *buf, *line;
	struct pollfd pfd;
	struct mrpin_events e;
	size_t len = 0;
	int p[2], fd, ret;
	pid_t reader;
	ssize_t n;

	buf = map_buf(2 * PAGE);
	set_limits("process max_pin_size=4K\n");
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	fflush(stdout);
	reader = fork();
	ASSERT_LE(0, reader);
	if (!reader) {
		char rbuf[4096];

		close(p[0]);
		fd = open(MRPIN_EVENTS_FILE, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(1);
		while ((n = read(fd, rbuf, sizeof(rbuf))) > 0)
			if (write(p[1], rbuf, n) != n)
				_exit(2);
		_exit(3);	/* read() must block, not end */
	}
	close(p[1]);
	pfd = (struct pollfd){ p[0], POLLIN, 0 };

	/* Drain what the file holds, until the reader has been quiet. */
	text = malloc(1 << 20);
	ASSERT_NE(NULL, text);
	while (poll(&pfd, 1, 500) == 1) {
		n = read(p[0], text, 1 << 20);
		if (n <= 0)
			break;
	}
	EXPECT_EQ('S', proc_state(reader)) {
		TH_LOG("the events reader is not asleep in read()");
	}

	self_reg_err(t->f.pd, buf, 2 * PAGE);
	pfd.revents = 0;
	ret = poll(&pfd, 1, 10000);
	EXPECT_EQ(1, ret) {
		TH_LOG("the blocked reader did not wake up with the denial");
	}
	if (ret == 1) {
		/* Whole lines, until the reader goes quiet again. */
		do {
			n = read(p[0], text + len, (1 << 20) - len - 1);
			if (n <= 0)
				break;
			len += n;
		} while (poll(&pfd, 1, 300) == 1);
		text[len] = '\0';
		line = text;
		ASSERT_EQ(0, mrpin_events_parse(line, false, &e)) {
			TH_LOG("not events lines: %s", text);
		}
		ASSERT_EQ(1, e.n);
		check_event(&e.ev[0], "deny", getpid(), 0, "process",
			    "max_pin_size", 2 * PAGE, MRPIN_ANY, PAGE);
		free(e.ev);
	}
	kill(reader, SIGKILL);
	waitpid(reader, NULL, 0);
	close(p[0]);
	free(text);
	munmap(buf, 2 * PAGE);
}

/*
 * 11. The ring keeps the latest 1024 events: a reader that fell behind
 * is told how many it lost, then gets the rest in order.
 */
TEST_F_TIMEOUT(events, events_reader_that_fell_behind_is_told_how_many_it_lost, 120)
{
	struct limits_test *t = &self->t;
	const int total = EVENTS_RING + 76;
	struct ibv_mr *mr;
	struct mrpin_events e, fresh;
	uint64_t from;
	char *text, *buf;
	int fd, i, refused = 0;

	buf = map_buf(2 * PAGE);
	set_limits("process max_pin_size=4K\n");
	fd = events_reader();
	from = next_seq();

	for (i = 0; i < total; i++) {
		mr = ibv_reg_mr(t->f.pd, buf, 2 * PAGE, MRPIN_ACCESS);
		if (mr) {
			ibv_dereg_mr(mr);
			continue;
		}
		refused += errno == ENOMEM;
	}
	mrpin_note_logged(mrpin_budget, MRPIN_LOG_BURST);
	ASSERT_EQ(total, refused);

	ASSERT_EQ(0, mrpin_read_available(fd, &text, NULL));
	close(fd);
	ASSERT_EQ(0, mrpin_events_parse(text, false, &e));
	free(text);
	EXPECT_EQ(0, e.lost_before);
	EXPECT_EQ((uint64_t)(total - EVENTS_RING), e.lost);
	ASSERT_EQ(EVENTS_RING, e.n);
	EXPECT_EQ(from + total - EVENTS_RING, e.ev[0].seq);
	for (i = 1; i < e.n; i++) {
		EXPECT_EQ(e.ev[i - 1].seq + 1, e.ev[i].seq);
		EXPECT_LE(e.ev[i - 1].time_ns, e.ev[i].time_ns);
		if (e.ev[i].seq != e.ev[i - 1].seq + 1)
			break;
	}
	EXPECT_EQ(from + total - 1, e.ev[e.n - 1].seq);
	EXPECT_EQ(getpid(), e.ev[e.n - 1].pid);

	/* A new reader: the header, then the ring from its oldest event. */
	read_events(&fresh);
	EXPECT_EQ(EVENTS_RING, fresh.n);
	if (fresh.n)
		EXPECT_EQ(from + total - 1, fresh.ev[fresh.n - 1].seq);
	free(fresh.ev);
	free(e.ev);
	munmap(buf, 2 * PAGE);
}

/* 12. A denial fires mrpin:mrpin_deny; an allowed pin does not. */
TEST_F(events, denial_fires_the_mrpin_deny_tracepoint)
{
	struct limits_test *t = &self->t;
	struct ibv_mr *mr;
	char pat[32];
	int mine;
	char *buf;

	if (access(TRACING "/events", F_OK))
		SKIP(return, "tracefs is not mounted at %s", TRACING);
	ASSERT_EQ(0, access(TRACING "/events/mrpin/mrpin_pin", F_OK));
	ASSERT_EQ(0, access(TRACING "/events/mrpin/mrpin_unpin", F_OK));
	ASSERT_EQ(0, access(TRACING "/events/mrpin/mrpin_deny", F_OK));

	buf = map_buf(2 * PAGE);
	set_limits("process max_pin_size=4K\n");
	t->tracing = true;
	ASSERT_EQ(0, mrpin_write_file(TRACING "/events/mrpin/mrpin_deny/enable",
				"1"));
	ASSERT_EQ(0, mrpin_write_file(TRACING "/trace", ""));

	do_reg(t->f.pd, buf, PAGE, &mr);
	do_dereg(mr);
	self_reg_err(t->f.pd, buf, 2 * PAGE);
	ASSERT_EQ(0, mrpin_write_file(TRACING "/events/mrpin/mrpin_deny/enable",
				"0"));

	snprintf(pat, sizeof(pat), "-%d ", getpid());
	EXPECT_EQ(1, trace_lines("mrpin_deny", pat, &mine));
	EXPECT_EQ(1, mine);
	munmap(buf, 2 * PAGE);
}

MRPIN_TEST_MAIN(MRPIN_LIMITS_FILE, "no policy in this mrpin")
