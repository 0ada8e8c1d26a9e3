// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_peer_race: a registration of peer memory whose address space is
 * changed under it, for the OFED lane's test of peer.c's guard.
 *
 *   mrpin_peer_race DEVICE SIZE
 *
 * Maps two ranges of SIZE bytes of the test's peer memory device DEVICE
 * (VM_IO | VM_PFNMAP: mrpin takes a registration of them for peer memory)
 * and, with the device's peer client held
 * (/sys/module/mrpin_peer_test/parameters/hold = 1):
 *   1. registers the first in a thread: the pin waits in the client while
 *      holding this user's peer turn;
 *   2. registers the second in another thread, once mrpin shows the first
 *      (`pins`): it waits for the turn, taken for peer memory;
 *   3. once mrpin shows the second, maps ordinary memory over it
 *      (MAP_FIXED, populated), then lets the client go.
 * The second pin then finds host pages where mrpin guessed peer memory.
 * Prints "first ok" or "first failed: ERRNO-NAME", the same for "second",
 * then exits.  Exit status: 0 when both registrations returned (made or
 * not), 1 on error, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>

#include "mrpin_utils.h"

#define HOLD "/sys/module/mrpin_peer_test/parameters/hold"

struct race_reg {
	pthread_t thread;
	struct ibv_pd *pd;
	void *buf;
	size_t len;
	struct ibv_mr *mr;
	int err;
	bool started;
};

static void *race_reg_thread(void *arg)
{
	struct race_reg *r = arg;

	r->mr = ibv_reg_mr(r->pd, r->buf, r->len, IBV_ACCESS_LOCAL_WRITE);
	r->err = r->mr ? 0 : errno;
	return NULL;
}

/* Whether `pins` has a row that starts at @buf (its 5th column). */
static bool race_pin_shown(const void *buf)
{
	char *text, *line, *save = NULL, *tok, *tsave;
	unsigned long start = (uintptr_t)buf;
	bool shown = false;
	int i;

	if (mrpin_read_file(MRPIN_DEBUGFS "/pins", &text) < 0)
		return false;
	for (line = strtok_r(text, "\n", &save); line && !shown;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		tsave = NULL;
		tok = strtok_r(line, " ", &tsave);
		for (i = 1; tok && i < 5; i++)
			tok = strtok_r(NULL, " ", &tsave);
		shown = tok && strtoul(tok, NULL, 10) == start;
	}
	free(text);
	return shown;
}

/* Wait up to 30 s for mrpin to show a pin of @buf; false if it did not. */
static bool race_wait_shown(const void *buf)
{
	int i;

	for (i = 0; i < 3000; i++) {
		if (race_pin_shown(buf))
			return true;
		usleep(10000);
	}
	return false;
}

static void race_start(struct race_reg *r)
{
	if (pthread_create(&r->thread, NULL, race_reg_thread, r)) {
		fprintf(stderr, "mrpin_peer_race: cannot start a thread\n");
		mrpin_write_file(HOLD, "0");
		exit(1);
	}
	r->started = true;
}

static void race_report(const char *name, const struct race_reg *r)
{
	if (r->err)
		printf("%s failed: %s\n", name, strerrorname_np(r->err));
	else
		printf("%s ok\n", name);
}

int main(int argc, char **argv)
{
	struct race_reg first = { 0 }, second = { 0 };
	struct ibv_context *ctx;
	char *end = NULL;
	size_t size = 0;
	bool shown;
	int fd;

	if (argc == 3)
		size = strtoul(argv[2], &end, 10);
	if (!size || !end || *end) {
		fprintf(stderr, "usage: mrpin_peer_race DEVICE SIZE\n");
		return 2;
	}
	mrpin_unlimit_memlock();
	first.pd = mrpin_open_pd("mrpin_peer_race", mrpin_dev_name(), &ctx);
	second.pd = first.pd;
	first.len = size;
	second.len = size;
	fd = open(argv[1], O_RDWR);
	if (fd < 0)
		mrpin_die("mrpin_peer_race", argv[1]);
	first.buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
	second.buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			  0);
	if (first.buf == MAP_FAILED || second.buf == MAP_FAILED)
		mrpin_die("mrpin_peer_race", "mmap");
	close(fd);
	if (mrpin_write_file(HOLD, "1"))
		mrpin_die("mrpin_peer_race", HOLD);

	race_start(&first);
	shown = race_wait_shown(first.buf);
	if (shown) {
		race_start(&second);
		shown = race_wait_shown(second.buf);
		if (!shown)
			fprintf(stderr, "mrpin_peer_race: %s\n",
				"mrpin does not show the second registration in flight");
	} else {
		fprintf(stderr, "mrpin_peer_race: %s\n",
			"mrpin does not show the first registration in flight");
	}
	if (shown && mmap(second.buf, size, PROT_READ | PROT_WRITE,
			  MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS |
			  MAP_POPULATE, -1, 0) == MAP_FAILED) {
		perror("mrpin_peer_race: mmap over the second range");
		shown = false;
	}
	if (mrpin_write_file(HOLD, "0"))
		mrpin_die("mrpin_peer_race", HOLD);
	pthread_join(first.thread, NULL);
	if (second.started)
		pthread_join(second.thread, NULL);
	if (!shown)
		return 1;
	race_report("first", &first);
	race_report("second", &second);
	fflush(stdout);
	if (first.mr)
		ibv_dereg_mr(first.mr);
	if (second.mr)
		ibv_dereg_mr(second.mr);
	ibv_dealloc_pd(first.pd);
	ibv_close_device(ctx);
	return 0;
}
