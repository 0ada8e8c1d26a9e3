/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mrpinctl: shared declarations.
 *
 *   mrpinctl.c   options, OBJECT COMMAND dispatch, keyword arguments
 *   util.c       messages, sizes, durations, errno names, user names, files
 *   tables.c     reading the debugfs tables by column name
 *   control.c    where the policy's control file is, and why it is refused
 *   json.c       a small streaming JSON writer
 *   print.c      one printer per field type, text or JSON
 *   config.c     the policy grammar (limits file and config files)
 *   cmd_*.c      one file per object
 *   doctor*      the doctor's checks, findings and call sites (doctor.h)
 */
#ifndef MRPINCTL_H
#define MRPINCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mrpin_abi.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UNLIMITED UINT64_MAX

#define __printf(f, a) __attribute__((format(printf, f, a)))

/* Exit codes. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,		/* runtime failure (doctor: 2, see there) */
	EXIT_USAGE = 2,		/* bad command line or configuration */
};

/* --- options (mrpinctl.c) --- */

/* Options that only some commands take. */
enum {
	OPT_FOLLOW = 1 << 0,
	OPT_CHECK = 1 << 1,
	OPT_DELAY = 1 << 2,
	OPT_ITERATIONS = 1 << 3,
	OPT_PER_PROCESS = 1 << 4,
};

struct options {
	const char *debugfs;	/* --debugfs, MRPIN_DEBUGFS or the default */
	bool debugfs_default;	/* not overridden: the real debugfs */
	bool json;
	bool pretty;
	bool help;
	unsigned int given;	/* OPT_* seen on the command line */
	double delay;		/* top: seconds between refreshes */
	unsigned long iterations; /* top: 0 = forever */
};

extern struct options opts;

/* A command: a word and its handler; an alias is never listed in help. */
struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	bool alias;
};

int cmd_select(const struct cmd *cmds, const char *object, int argc,
	       char **argv, int (*dflt)(int argc, char **argv));
int options_only(const char *cmd, unsigned int allowed);

/*
 * Keyword arguments, "NAME VALUE" pairs as in `ip` and `bpftool`; NAME may
 * be abbreviated to a unique prefix.  parse() returns a message on a bad
 * value (NULL when it is fine).
 */
struct kwarg {
	const char *name;
	const char *(*parse)(const char *val, void *dst);
	void *dst;
	bool seen;
};

int kwargs_parse(const char *cmd, struct kwarg *kw, size_t n, int argc,
		 char **argv);
int help_requested(int argc, char **argv);

/* The objects. */
int do_status(int argc, char **argv);
int do_proc(int argc, char **argv);
int do_pin(int argc, char **argv);
int do_dev(int argc, char **argv);
int do_cgroup(int argc, char **argv);
int do_limit(int argc, char **argv);
int do_apply(int argc, char **argv);
int do_events(int argc, char **argv);
int do_top(int argc, char **argv);
int do_export(int argc, char **argv);
int do_doctor(int argc, char **argv);

/* --- util.c --- */

void pr_err(const char *fmt, ...) __printf(1, 2);
int usage_err(const char *fmt, ...) __printf(1, 2);
void *xmalloc(size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
char *strfmt(const char *fmt, ...) __printf(1, 2);
int read_fd(int fd, char **buf, size_t *len);
int read_whole(const char *path, char **buf, size_t *len);

const char *fmt_bytes(char *buf, size_t len, uint64_t v);
const char *fmt_ms(char *buf, size_t len, uint64_t ms);
const char *fmt_time_ns(char *buf, size_t len, uint64_t ns);
const char *fmt_errno(char *buf, size_t len, uint64_t v);
bool parse_u64(const char *s, const char **end, uint64_t *v);
bool parse_u64_all(const char *s, uint64_t *v);
const char *parse_size_arg(const char *s, void *dst);
const char *parse_duration_arg(const char *s, void *dst);
const char *parse_pid_arg(const char *s, void *dst);
const char *parse_user_arg(const char *s, void *dst);
const char *parse_str_arg(const char *s, void *dst);

const char *user_name(uint32_t uid);
bool user_lookup(const char *name, uint32_t *uid);
uint64_t host_ram_bytes(void);
unsigned int term_width(void);

/* --- tables.c --- */

enum tf_type {
	TF_U64,		/* decimal */
	TF_LIMIT,	/* decimal or "unlimited" (UNLIMITED) */
	TF_STR,		/* text, mountinfo-escaped: unescaped in place */
};

/* One column of a table, stored at @off in the row structure. */
struct tbl_field {
	const char *name;
	enum tf_type type;
	size_t off;
	bool optional;		/* absent from older modules: left zero */
};

/*
 * A table read from debugfs: rows of row_size bytes, strings in buf;
 * @have: bit i set when the header has column @fields[i].
 */
struct table {
	char *path;
	char *buf;
	void *rows;
	size_t nrows;
	const struct tbl_field *fields;
	size_t nfields;
	uint64_t have;
};

#define TBL_ROW(t, type, i) (&((type *)(t)->rows)[i])

char *debugfs_path(const char *name);
int debugfs_check(void);
int debugfs_open(const char *name, int flags, char **path);
int debugfs_read(const char *name, char **buf, size_t *len);
int tbl_load(struct table *t, const char *name, const struct tbl_field *f,
	     size_t nf, size_t row_size);
int tbl_require(const struct table *t, const char *const *names, size_t n);

/* --- control.c --- */

char *limits_path(void);
int limits_refused(const char *path, int err, bool writing);

/* Line by line (the events stream): the header, then each row. */
#define TBL_MAX_COLUMNS 64
struct tbl_header {
	const char *path;
	int col[TBL_MAX_COLUMNS];
	int ncols;
};

int tbl_header_parse(struct tbl_header *h, char *line,
		     const struct tbl_field *f, size_t nf);
int tbl_row_parse(const struct tbl_header *h, unsigned int lineno, char *line,
		  const struct tbl_field *f, size_t nf, void *row);
int kv_load(const char *name, const struct tbl_field *f, size_t nf,
	    void *dst, uint64_t *have);
bool tbl_has(const struct table *t, const char *name);
void tbl_free(struct table *t);
void unescape(char *s);
int split_words(char *line, char **words, int max);

/*
 * Why the kernel's pin failed: the key of a "fail" event, and the CAUSE of
 * the stats failures_CAUSE_total (in the order of mrpin_abi.h).
 */
#define NR_CAUSES MRPIN_NR_FAIL_CAUSES
extern const char *const cause_names[NR_CAUSES];

/*
 * The rows of the tables, one type a table, for every command.  A column
 * that older modules lack is optional (left zero or NULL when absent): a
 * command that needs one asks tbl_require() for it.
 */
struct stats {
	uint64_t pins;
	uint64_t odp_pins;	/* of them, on-demand-paging: 0 bytes each */
	uint64_t peer_pins;	/* ... peer memory (a GPU's): no host byte */
	uint64_t peer_bytes;	/* their bytes, apart from the host bytes */
	uint64_t pinned_bytes;
	uint64_t distinct_bytes;	/* the union of the pinned ranges */
	uint64_t peak_pinned_bytes;
	uint64_t pins_total;
	uint64_t releases_total;
	uint64_t untracked_releases_total;
	uint64_t denials_total;
	uint64_t warnings_total;
	uint64_t stack_pins_total;
	uint64_t cleanup_releases_total;	/* pins the kernel's cleanup released */
	uint64_t peer_races_total;	/* peer guesses that held host pages */
	uint64_t ram_bytes;	/* the RAM N% limits are shares of; 0: unknown */
	uint64_t failures_total;	/* the kernel's pins that failed */
	uint64_t failures[NR_CAUSES];	/* ... by cause */
	bool failures_known;	/* the module counts them (failures_total) */
	bool cause_known[NR_CAUSES];	/* ... and this cause (its line) */
	bool distinct_known;	/* the module counts them (distinct_bytes) */
	bool odp_known;		/* the module records them (odp_pins) */
	bool peer_known;	/* ... and these (peer_pins) */
	bool peer_bytes_known;	/* ... and their bytes (peer_bytes) */
	bool stack_known;	/* the module counts them (stack_pins_total) */
	bool cleanup_known;	/* ... and these (cleanup_releases_total) */
	bool races_known;	/* ... and these (peer_races_total) */
};

struct dev_row {
	char *device;
	char *node_guid;
	uint64_t max_mr;
	uint64_t pins;
	uint64_t pinned_bytes;
	uint64_t peer_bytes;	/* optional: peer memory, no host byte */
};

struct proc_row {
	uint64_t pid;
	char *comm;
	uint64_t uid;
	char *cgroup;
	uint64_t pins;
	uint64_t pinned_bytes;
	uint64_t distinct_bytes;	/* optional: its pinned ranges' union */
	uint64_t peak_bytes;
	uint64_t vm_pinned_bytes;
	uint64_t memlock_bytes;
	uint64_t denials;	/* optional, as the rest */
	uint64_t failures;	/* its pins the kernel failed */
	uint64_t bytes_4k;
	uint64_t bytes_2m;
	uint64_t bytes_1g;
	uint64_t stack_pins;
	uint64_t cleanup_releases;	/* released at exit or close */
	uint64_t registrations;
	uint64_t deregistrations;	/* optional: released by ibv_dereg_mr */
	uint64_t reg_per_s;
	char *life_hist;	/* pins released, by log2 of their life in us */
	uint64_t peer_bytes;	/* optional: peer memory, no host byte */
};

struct pin_row {
	uint64_t id;
	uint64_t pid;
	char *comm;
	char *device;
	uint64_t start;
	uint64_t length;
	uint64_t pinned_bytes;
	char *caller;
	uint64_t age_ms;
	uint64_t stack;		/* optional, as the rest */
	uint64_t align;
	uint64_t oversized;
	uint64_t odp;		/* on-demand paging: pins nothing */
	char *state;		/* "pinning": charged, the pin in flight */
	uint64_t peer;		/* peer memory (a GPU's): pins no host page */
};

struct user_row {
	uint64_t uid;
	uint64_t pins;
	uint64_t pinned_bytes;
};

struct cgroup_row {
	uint64_t id;
	char *cgroup;		/* "-": the cgroup was removed */
	uint64_t pins;
	uint64_t pinned_bytes;
	uint64_t peak_pinned_bytes;	/* optional: the most it held at once */
};

/* The MRs a program left to the kernel's cleanup (`leaks`). */
struct leak_row {
	char *comm;
	uint64_t uid;
	uint64_t count;
	uint64_t bytes;
	uint64_t last_time_ns;
};

/* Where a process registered its live pins (`callsites`). */
struct site_row {
	uint64_t pid;
	char *comm;
	uint64_t pins;
	uint64_t bytes;
	uint64_t oldest_age_ms;
	char *frames;		/* "0x..,0x..": innermost first */
	uint64_t newest_age_ms;	/* optional: its youngest live pin's age */
};

/*
 * An event of the `events` stream; "# lost N": seq EVENT_LOST, asked N.
 * Action "fail": the kernel's pin failed, key is its cause (cause_names[],
 * or one a newer module has); cause "device" (scope device:NAME): the
 * driver refused the registration, usage is the device's live pins and
 * limit its max_mr.
 */
struct event {
	uint64_t seq;
	uint64_t time_ns;
	char *action;
	uint64_t pid;
	char *comm;
	uint64_t uid;
	char *scope;
	char *key;
	uint64_t asked;
	uint64_t usage;
	uint64_t limit;
	uint64_t errnum;	/* errno; ERRNO_UNKNOWN: older modules */
};

#define EVENT_LOST UINT64_MAX
#define ERRNO_UNKNOWN UINT64_MAX

int load_stats(struct stats *s);
uint64_t stats_ram_pinned(const struct stats *s);
int load_devs(struct table *t);
int load_procs(struct table *t);
int load_pins(struct table *t);
int load_users(struct table *t);
int load_cgroups(struct table *t);
int load_leaks(struct table *t);
int load_callsites(struct table *t);
int load_events(struct table *t);
int event_line(struct tbl_header *h, unsigned int lineno, char *line,
	       struct event *e, bool *got);
int load_version(char *buf, size_t len);
int cause_index(const char *key);
bool event_in_bytes(const struct event *e);

enum proc_sort { SORT_PINNED, SORT_PINS, SORT_PEAK };
extern const char *const proc_sort_names[];
void procs_sort(struct table *t, enum proc_sort by);

/* --- json.c --- */

void jw_init(FILE *f, bool pretty);
void jw_obj_open(const char *key);
void jw_obj_close(void);
void jw_arr_open(const char *key);
void jw_arr_close(void);
void jw_str(const char *key, const char *s);
void jw_u64(const char *key, uint64_t v);
void jw_double(const char *key, double v);
void jw_real(const char *key, double v, int digits);
void jw_null(const char *key);
void jw_bool(const char *key, bool v);
int jw_depth(void);
size_t utf8_len(const unsigned char *s);

/* --- print.c --- */

enum {
	COL_LEFT = 1 << 0,	/* align left (text); numbers align right */
	COL_TRUNC = 1 << 1,	/* may be cut to fit: keeps the head */
	COL_TRUNC_TAIL = 1 << 2, /* may be cut to fit: keeps the tail (paths) */
};

/*
 * A field of an object or a column of a list: the JSON member @key and
 * the text @title.  In a list, when the line is too wide for the
 * terminal, COL_TRUNC* columns are cut first, then the columns with the
 * highest @prio (0: never) are left out.
 */
struct column {
	const char *key;
	const char *title;
	unsigned int flags;
	unsigned int prio;
	unsigned int width;	/* streamed lists: fixed width */
};

void out_init(bool json, bool pretty);
void out_set_sink(void (*line)(void *ctx, const char *s), void *ctx,
		  unsigned int width, unsigned int max_rows);
void out_line(const char *s);
void out_obj_begin(const char *key, const struct column *fields, size_t n);
void out_obj_inline(void);
void out_obj_end(void);
void out_list_begin(const char *key, const struct column *cols, size_t n);
void out_stream_begin(const struct column *cols, size_t n);
void out_list_plain(void);
void out_item_begin(void);
void out_item_end(void);
void out_list_end(void);
void out_flush(void);
void out_gap(void);
void out_caption(const char *s);

void print_str(const char *key, const char *s);
void print_u64(const char *key, uint64_t v);
void print_count_limit(const char *key, uint64_t v);
void print_bytes(const char *key, uint64_t v);
void print_bytes_limit(const char *key, uint64_t v);
void print_percent(const char *key, double v);
void print_hex(const char *key, uint64_t v);
void print_ms(const char *key, uint64_t ms);
void print_time_ns(const char *key, uint64_t ns);
void print_errno(const char *key, uint64_t v);
void print_user(const char *key, uint64_t uid);
void print_num_text(const char *key, uint64_t v, const char *text);
void print_bool(const char *key, bool v);
struct rule;
void print_rule_scope(const char *key, const struct rule *r);
void print_rule_key(const struct rule *r, int k, uint64_t ram);
void print_rule_extra(const char *key, const struct rule *r);

/* Lists that more than one command prints. */
void print_procs(const char *key, struct table *t, size_t max);
void print_devs(const char *key, struct table *t);

/* --- config.c --- */

/* The module's scopes and keys (mrpin_abi.h), by shorter names. */
enum scope {
	SC_GLOBAL = MRPIN_SCOPE_GLOBAL,
	SC_PROCESS = MRPIN_SCOPE_PROCESS,
	SC_UID = MRPIN_SCOPE_UID,
	SC_CGROUP = MRPIN_SCOPE_CGROUP,
	NR_SCOPES = MRPIN_NR_RULE_SCOPES,
};
enum lkey {
	K_MAX_PINNED = MRPIN_KEY_MAX_PINNED,
	K_MAX_PINS = MRPIN_KEY_MAX_PINS,
	K_MAX_PIN_SIZE = MRPIN_KEY_MAX_PIN_SIZE,
	K_ACTION = MRPIN_KEY_ACTION,
	K_COUNT = MRPIN_KEY_COUNT,		/* global and process only */
	K_STACK = MRPIN_KEY_STACK,		/* global only from here */
	K_OVERSIZE = MRPIN_KEY_OVERSIZE,
	K_MR_TABLE_WARN = MRPIN_KEY_MR_TABLE_WARN,
	K_CALLSITES = MRPIN_KEY_CALLSITES,
	K_LOG_FAILURES = MRPIN_KEY_LOG_FAILURES,
	NR_KEYS = MRPIN_NR_KEYS,
	K_GLOBAL_ONLY = MRPIN_KEY_GLOBAL_ONLY,
};

/* The values of count= (MRPIN_COUNT_NAMES): what max_pinned counts. */
enum count_mode { COUNT_REGISTERED, COUNT_DISTINCT };

/* How a key's value is written. */
enum ktype {
	KT_BYTES_PCT,		/* bytes, N% of RAM or unlimited */
	KT_BYTES,		/* bytes or unlimited */
	KT_COUNT,		/* a number or unlimited */
	KT_PCT,			/* N% */
	KT_WORD,		/* one of words[]: the value is its index */
};

struct key_desc {
	const char *name;
	enum ktype type;
	const char *const *words;
	const char *expected;
};
enum rule_op { OP_RESET, OP_SET, OP_DELETE };

#define CGROUP_PATH_MAX MRPIN_PATH_MAX
#define LIMITS_LINE_MAX MRPIN_LINE_MAX
#define LIMITS_WRITE_MAX MRPIN_WRITE_MAX

extern const char *const scope_names[NR_SCOPES];
extern const struct key_desc keys[NR_KEYS];

/* One rule, or one line of the grammar (@set: the keys it names). */
struct rule {
	enum rule_op op;
	enum scope scope;
	uint32_t uid;
	char cgroup[CGROUP_PATH_MAX];	/* unescaped */
	unsigned int set;		/* 1 << K_* */
	uint64_t val[NR_KEYS];		/* UNLIMITED when unlimited */
	unsigned int pct;		/* max_pinned as a percentage of RAM */
	bool is_pct;
	char extra[LIMITS_LINE_MAX];	/* " key=value" the module has */
};

/* The whole policy, as the module holds it. */
struct policy {
	struct rule global;
	struct rule process;
	struct rule *rules;		/* uid rules, then cgroup rules */
	size_t nrules;
	bool known;			/* read from the module */
};

/* Where a problem is: token @tok of the line, @off bytes into it. */
struct cfg_err {
	int tok;
	size_t off;
	char msg[320];
};

int rule_parse(char **toks, int ntok, struct rule *r, struct cfg_err *e);
int rule_check_cgroup(const struct rule *r, struct cfg_err *e);
int rule_format(const struct rule *r, char *buf, size_t len);
void rule_value(const struct rule *r, int k, char *buf, size_t len);
void rule_scope(const struct rule *r, char *buf, size_t len);
void escape_path(const char *path, char *buf, size_t len);
void policy_init(struct policy *p);
void policy_free(struct policy *p);
int policy_apply(struct policy *p, const struct rule *r, struct cfg_err *e);
int policy_parse_text(struct policy *p, const char *src, char *text);
int policy_load(struct policy *p);
bool rule_max_pinned(const struct rule *r, uint64_t ram, uint64_t *max);
bool rule_counts_distinct(const struct rule *r);
uint64_t rule_usage(const struct rule *r, const struct stats *s);
int limits_write(const char *text, size_t len, const char *const *origin);

/*
 * Config files: parsed line by line into a transaction (normalised lines,
 * one rule each) with the origin of every line for messages.
 */
struct txn {
	char *text;
	size_t len;
	size_t nlines;
	char **origin;		/* "FILE:LINE" of each line */
	size_t nerrors;
};

void txn_init(struct txn *t);
void txn_free(struct txn *t);
int txn_add_line(struct txn *t, struct policy *p, const char *file,
		 unsigned int lineno, char *line);
int txn_add_file(struct txn *t, struct policy *p, const char *file);
int txn_add_rule(struct txn *t, const struct rule *r, const char *origin);

#endif /* MRPINCTL_H */
