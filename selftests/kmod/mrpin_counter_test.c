// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_counter_test: the counter every limit of mrpin rests on
 * (kmod/counter.h), tested where it runs, in the kernel, by loading this
 * module (selftests/mrpin_counter.sh, in a VM whose vCPUs run in parallel).
 *
 * At load it checks the edges of mrpin_counter_try_add() (an exact fit,
 * one byte over, a counter already over a lowered limit, sums that would
 * wrap), then races it: one thread per online CPU adds to one counter
 * whose limit is one add wide, reads the counter, and takes its add away
 * again, round after round, with a pause of its own between rounds so
 * that no two threads keep in step.  Each thread keeps the highest value it read
 * after an add of its own and checks every refusal against the value it
 * reports.  A try-add that reads and adds in two steps lets two threads
 * both fit in the same room: the counter then shows twice the limit, and
 * the load fails.  The race raced only if some adds were refused (another
 * thread held the room): the load fails too when none was.
 *
 * Loading succeeds when every check held (the module then does nothing and
 * is removed); it fails with -EINVAL otherwise, each failed check in the
 * kernel log.
 */
/* OFED's compat header, included first, has defined it already. */
#undef pr_fmt
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>

#include "compat.h"
#include "counter.h"

static unsigned int rounds = 1000000;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "rounds of add, read and remove per thread (default 1000000)");

/* The add of every thread, and the limit: room for one add. */
#define RACE_ADD 4096
#define RACE_MAX RACE_ADD

/**
 * struct race - the state the racing threads share
 * @counter:	the counter they add to
 * @ready:	threads started; they start racing when all have
 * @running:	threads not yet done
 * @done:	completed by the last thread done (then stopped, each is
 *		waited for until it has left this module's code)
 * @threads:	threads started
 * @adds:	adds that fitted
 * @refusals:	adds refused
 * @peak:	the highest value a thread read after an add of its own
 * @wrong:	refusals whose reported usage would have fitted the add
 */
struct race {
	atomic64_t counter;
	atomic_t ready;
	atomic_t running;
	struct completion done;
	int threads;
	atomic64_t adds;
	atomic64_t refusals;
	atomic64_t peak;
	atomic64_t wrong;
};

static void race_max(atomic64_t *peak, s64 value)
{
	s64 old = atomic64_read(peak);

	while (old < value && !atomic64_try_cmpxchg(peak, &old, value))
		;
}

static int race_fn(void *arg)
{
	struct race *r = arg;
	u64 adds = 0, refusals = 0, wrong = 0, usage;
	unsigned int i;
	s64 peak = 0, now;

	atomic_inc(&r->ready);
	while (atomic_read(&r->ready) < r->threads)
		cond_resched();
	for (i = 0; i < rounds; i++) {
		if (mrpin_counter_try_add(&r->counter, RACE_ADD, RACE_MAX,
					  &usage)) {
			now = atomic64_read(&r->counter);
			if (now > peak)
				peak = now;
			atomic64_sub(RACE_ADD, &r->counter);
			adds++;
		} else {
			refusals++;
			if (usage + RACE_ADD <= RACE_MAX)
				wrong++;
		}
		if (!(i % 4096))
			cond_resched();
	}
	atomic64_add(adds, &r->adds);
	atomic64_add(refusals, &r->refusals);
	atomic64_add(wrong, &r->wrong);
	race_max(&r->peak, peak);
	if (atomic_dec_and_test(&r->running))
		complete(&r->done);
	return 0;
}

/* One case at the edges: the counter at @start, add @n under @max. */
static int check_edge(const char *what, s64 start, u64 n, u64 max,
		      bool fits, u64 usage_if_not)
{
	atomic64_t c = ATOMIC64_INIT(start);
	u64 usage = 0;
	bool added = mrpin_counter_try_add(&c, n, max, &usage);
	s64 want = fits ? start + (s64)n : start;

	if (added != fits || atomic64_read(&c) != want ||
	    (!fits && usage != usage_if_not)) {
		pr_err("edge: %s: added %d (want %d), counter %lld (want %lld), usage %llu (want %llu)\n",
		       what, added, fits, atomic64_read(&c), want,
		       added ? 0 : usage, fits ? 0 : usage_if_not);
		return 1;
	}
	return 0;
}

static int edges(void)
{
	int failed = 0;

	failed += check_edge("an exact fit", 4096, 4096, 8192, true, 0);
	failed += check_edge("one byte over", 4097, 4096, 8192, false, 4097);
	failed += check_edge("an empty counter and an add over the limit",
			     0, 8193, 8192, false, 0);
	failed += check_edge("a counter over a lowered limit, adding nothing",
			     8192, 0, 4096, false, 8192);
	failed += check_edge("a counter at a limit of zero, adding nothing",
			     0, 0, 0, true, 0);
	failed += check_edge("an add that would wrap past 2^64",
			     4096, U64_MAX, U64_MAX, false, 4096);
	failed += check_edge("an add up to the largest limit",
			     4096, U64_MAX - 4096, U64_MAX, true, 0);
	return failed;
}

static int run_race(void)
{
	struct task_struct **t;
	struct race *r;
	int cpu, i, n = 0, failed = 0;

	r = kzalloc_obj(*r, GFP_KERNEL);
	t = kcalloc(nr_cpu_ids, sizeof(*t), GFP_KERNEL);
	if (!r || !t) {
		kfree(t);
		kfree(r);
		return -ENOMEM;
	}
	init_completion(&r->done);
	/* CPUs do not come or go while the threads start. */
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		t[n] = kthread_create_on_cpu(race_fn, r, cpu, "mrpin_race/%u");
		if (IS_ERR(t[n])) {
			pr_err("race: cannot start a thread on CPU %d: %ld\n",
			       cpu, PTR_ERR(t[n]));
			/* None has run yet: stopped, they never will. */
			for (i = 0; i < n; i++) {
				kthread_stop(t[i]);
				put_task_struct(t[i]);
			}
			cpus_read_unlock();
			kfree(t);
			kfree(r);
			return -EAGAIN;
		}
		/* Held until the thread has left this module's code. */
		get_task_struct(t[n++]);
	}
	r->threads = n;
	atomic_set(&r->running, n);
	if (n < 2) {
		pr_err("race: %d CPU online: no two threads can race\n", n);
		failed++;
	}
	for (i = 0; i < n; i++)
		wake_up_process(t[i]);
	cpus_read_unlock();
	wait_for_completion(&r->done);
	for (i = 0; i < n; i++) {
		kthread_stop(t[i]);
		put_task_struct(t[i]);
	}
	kfree(t);

	pr_info("race: %d threads, %u rounds each: %lld adds, %lld refused, the counter read at most %lld of its limit %d\n",
		r->threads, rounds, atomic64_read(&r->adds),
		atomic64_read(&r->refusals), atomic64_read(&r->peak),
		RACE_MAX);
	if (atomic64_read(&r->peak) > RACE_MAX) {
		pr_err("race: the counter crossed its limit\n");
		failed++;
	}
	if (atomic64_read(&r->wrong)) {
		pr_err("race: %lld refusals reported a usage the add fitted in\n",
		       atomic64_read(&r->wrong));
		failed++;
	}
	if (!atomic64_read(&r->refusals)) {
		pr_err("race: no add was refused: the threads did not race\n");
		failed++;
	}
	if (atomic64_read(&r->counter)) {
		pr_err("race: the counter ends at %lld, not 0\n",
		       atomic64_read(&r->counter));
		failed++;
	}
	kfree(r);
	return failed;
}

static int __init mrpin_counter_test_init(void)
{
	int failed = edges(), ret;

	ret = run_race();
	if (ret < 0)
		return ret;
	failed += ret;
	if (failed) {
		pr_err("%d checks failed\n", failed);
		return -EINVAL;
	}
	pr_info("every check held\n");
	return 0;
}

static void __exit mrpin_counter_test_exit(void)
{
}

module_init(mrpin_counter_test_init);
module_exit(mrpin_counter_test_exit);
MODULE_DESCRIPTION("mrpin's counter with a limit, raced on every CPU");
MODULE_LICENSE("GPL");
