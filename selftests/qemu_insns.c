// SPDX-License-Identifier: GPL-2.0
/*
 * qemu_insns: a QEMU TCG plugin that counts the guest instructions run
 * between two marks the guest makes, for make bench's instruction counts.
 *
 * A count of instructions does not wander with the host's load as a time
 * does: the same work in the guest gives the same count.  The guest marks
 * where a window of work begins and ends by running a seven-byte no-op
 * whose displacement names it,
 *
 *	nopl 0x4d5xxxxx(%rax)		0f 1f 80 <imm32>
 *
 * imm32 = 0x4d500000 | window << 1 | end: "MP" in the top 12 bits, the
 * window's number (0 to 0x3ffff) and a bit that tells the end from the
 * beginning.  Any user program can make the mark (mrpin_bench insns does); on
 * hardware or without the plugin it is a no-op.
 *
 * Every block QEMU translates gets a record: its address, its instruction
 * count and how often it ran on the vCPU that made the begin mark.  A
 * retranslated block (same address and length) keeps its record.  A begin
 * mark zeroes the runs; an end mark appends to the output file
 *
 *	window W
 *	tb ADDR INSNS RUNS		one per kernel block that ran
 *	end W TOTAL KERNEL USER		instructions in the window
 *
 * so that the guest, which knows its symbols, can say whose instructions
 * they were.  Counts are of the marking vCPU alone (the program making
 * the marks stays on one CPU), interrupts included: what the
 * other vCPU does meanwhile (kworkers, RCU callbacks, idle) comes and goes
 * with the host's pace, and timer ticks on this one add a little that
 * does too.  A block left early by an exception counts whole.
 *
 * Single-threaded TCG only (vm-run.sh's default): the counters and the
 * table are shared by the vCPUs without locks, which one host thread
 * running every vCPU makes safe.
 *
 *	qemu-system-x86_64 -accel tcg,thread=single \
 *		-plugin file=qemu_insns.so,out=PATH ...
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MARK_MAGIC	0x4d500000u
#define MARK_MASK	0xfff00000u
#define KERNEL_HALF	(1ULL << 63)

struct block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t runs;		/* runs on the counted vCPU since the mark */
};

/*
 * The records, in chunks that never move (the run callbacks point into
 * them), and an open-addressing table of pointers to them by address and
 * length, grown at half full.
 */
#define CHUNK_BLOCKS	4096

struct chunk {
	struct chunk *next;
	size_t used;
	struct block blocks[CHUNK_BLOCKS];
};

static struct chunk *chunks;
static struct block **table;
static size_t table_size;	/* a power of two */
static size_t table_used;
static FILE *out;
static unsigned int counted_vcpu;

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		qemu_plugin_outs("qemu_insns: out of memory\n");
		abort();
	}
	return p;
}

static size_t slot_of(uint64_t vaddr, uint64_t insns)
{
	uint64_t h = (vaddr ^ insns << 48) * 0x9e3779b97f4a7c15ULL;

	return (h >> 20) & (table_size - 1);
}

static void table_insert(struct block *b)
{
	size_t i = slot_of(b->vaddr, b->insns);

	while (table[i])
		i = (i + 1) & (table_size - 1);
	table[i] = b;
	table_used++;
}

static void table_grow(void)
{
	struct block **old = table;
	size_t i, old_size = table_size;

	table_size = old_size ? old_size * 2 : 1 << 16;
	table = xcalloc(table_size, sizeof(*table));
	table_used = 0;
	for (i = 0; i < old_size; i++)
		if (old[i])
			table_insert(old[i]);
	free(old);
}

/* The record of the block at @vaddr of @insns instructions, made once. */
static struct block *block_get(uint64_t vaddr, uint64_t insns)
{
	struct block *b;
	size_t i;

	if (2 * (table_used + 1) > table_size)
		table_grow();
	for (i = slot_of(vaddr, insns); table[i]; i = (i + 1) & (table_size - 1))
		if (table[i]->vaddr == vaddr && table[i]->insns == insns)
			return table[i];
	if (!chunks || chunks->used == CHUNK_BLOCKS) {
		struct chunk *c = xcalloc(1, sizeof(*c));

		c->next = chunks;
		chunks = c;
	}
	b = &chunks->blocks[chunks->used++];
	b->vaddr = vaddr;
	b->insns = insns;
	table_insert(b);
	return b;
}

static void window_begin(void)
{
	struct chunk *c;
	size_t i;

	for (c = chunks; c; c = c->next)
		for (i = 0; i < c->used; i++)
			c->blocks[i].runs = 0;
}

static void window_end(unsigned int window)
{
	uint64_t kernel = 0, user = 0, n;
	struct chunk *c;
	size_t i;

	fprintf(out, "window %u\n", window);
	for (c = chunks; c; c = c->next) {
		for (i = 0; i < c->used; i++) {
			struct block *b = &c->blocks[i];

			if (!b->runs)
				continue;
			n = b->runs * b->insns;
			if (b->vaddr & KERNEL_HALF) {
				kernel += n;
				fprintf(out, "tb %" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
					b->vaddr, b->insns, b->runs);
			} else {
				user += n;
			}
		}
	}
	fprintf(out, "end %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		window, kernel + user, kernel, user);
	fflush(out);
}

static void block_run(unsigned int vcpu_index, void *udata)
{
	struct block *b = udata;

	if (vcpu_index == counted_vcpu)
		b->runs++;
}

static void mark_run(unsigned int vcpu_index, void *udata)
{
	uint32_t imm = (uint32_t)(uintptr_t)udata;

	if (imm & 1) {
		window_end((imm & ~MARK_MASK) >> 1);
	} else {
		counted_vcpu = vcpu_index;
		window_begin();
	}
}

/* The mark's window and end bit, or 0 when @insn is no mark. */
static uint32_t mark_of(const struct qemu_plugin_insn *insn)
{
	const uint8_t *p = qemu_plugin_insn_data(insn);
	uint32_t imm;

	if (qemu_plugin_insn_size(insn) != 7 ||
	    p[0] != 0x0f || p[1] != 0x1f || p[2] != 0x80)
		return 0;
	memcpy(&imm, p + 3, sizeof(imm));
	return (imm & MARK_MASK) == MARK_MAGIC ? imm : 0;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	struct block *b = block_get(qemu_plugin_tb_vaddr(tb), n);

	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_run,
					     QEMU_PLUGIN_CB_NO_REGS, b);
	if (b->vaddr & KERNEL_HALF)
		return;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint32_t imm = mark_of(insn);

		if (imm)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_run,
				QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)imm);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	fclose(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else {
			fprintf(stderr, "qemu_insns: unknown argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (!path) {
		fprintf(stderr, "qemu_insns: out=PATH is required\n");
		return -1;
	}
	out = fopen(path, "a");
	if (!out) {
		perror(path);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
