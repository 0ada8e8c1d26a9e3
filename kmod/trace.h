/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mrpin's tracepoints: follow pins with perf, trace-cmd or bpftrace
 * without reading mrpin's files.
 *
 *   mrpin:mrpin_pin	a pin was made and recorded
 *   mrpin:mrpin_unpin	a recorded pin was released
 *   mrpin:mrpin_deny	a pin crossed a limit: refused (action=deny) or,
 *			in warn mode, allowed (action=warn)
 *   mrpin:mrpin_fail	the kernel refused a pin, and why (failure.c)
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM mrpin

#if !defined(_MRPIN_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _MRPIN_TRACE_H

#include <linux/string.h>
#include <linux/tracepoint.h>

#include "compat.h"

/*
 * mrpin_pin's caller is the kernel function's name, never its address:
 * the ring buffer's raw pages (trace_pipe_raw, perf) would hand out where
 * the kernel's text is.  Names longer than the field are cut.
 */
#ifndef MRPIN_TRACE_CALLER
#define MRPIN_TRACE_CALLER 48

static inline void mrpin_trace_caller(char *buf, unsigned long caller)
{
	snprintf(buf, MRPIN_TRACE_CALLER, "%ps", (void *)caller);
	buf[strcspn(buf, " ")] = '\0';	/* no " [module]" */
}
#endif

TRACE_EVENT(mrpin_pin,
	TP_PROTO(u64 id, pid_t pid, const char *dev, unsigned long start,
		 size_t length, u64 pinned_bytes, unsigned long caller),
	TP_ARGS(id, pid, dev, start, length, pinned_bytes, caller),
	TP_STRUCT__entry(
		__field(u64, id)
		__field(pid_t, pid)
		__string(dev, dev)
		__field(unsigned long, start)
		__field(size_t, length)
		__field(u64, pinned_bytes)
		__array(char, caller, MRPIN_TRACE_CALLER)
	),
	TP_fast_assign(
		__entry->id = id;
		__entry->pid = pid;
		mrpin_assign_str(dev);
		__entry->start = start;
		__entry->length = length;
		__entry->pinned_bytes = pinned_bytes;
		mrpin_trace_caller(__entry->caller, caller);
	),
	TP_printk("id=%llu pid=%d dev=%s start=0x%lx length=%zu pinned_bytes=%llu caller=%s",
		  __entry->id, __entry->pid, __get_str(dev), __entry->start,
		  __entry->length, __entry->pinned_bytes, __entry->caller)
);

TRACE_EVENT(mrpin_unpin,
	TP_PROTO(u64 id, pid_t pid, u64 pinned_bytes, u64 age_ns),
	TP_ARGS(id, pid, pinned_bytes, age_ns),
	TP_STRUCT__entry(
		__field(u64, id)
		__field(pid_t, pid)
		__field(u64, pinned_bytes)
		__field(u64, age_ns)
	),
	TP_fast_assign(
		__entry->id = id;
		__entry->pid = pid;
		__entry->pinned_bytes = pinned_bytes;
		__entry->age_ns = age_ns;
	),
	TP_printk("id=%llu pid=%d pinned_bytes=%llu age_ns=%llu",
		  __entry->id, __entry->pid, __entry->pinned_bytes,
		  __entry->age_ns)
);

TRACE_EVENT(mrpin_deny,
	TP_PROTO(pid_t pid, const char *action, const char *scope,
		 const char *key, u64 asked, u64 usage, u64 limit),
	TP_ARGS(pid, action, scope, key, asked, usage, limit),
	TP_STRUCT__entry(
		__field(pid_t, pid)
		__string(action, action)
		__string(scope, scope)
		__string(key, key)
		__field(u64, asked)
		__field(u64, usage)
		__field(u64, limit)
	),
	TP_fast_assign(
		__entry->pid = pid;
		mrpin_assign_str(action);
		mrpin_assign_str(scope);
		mrpin_assign_str(key);
		__entry->asked = asked;
		__entry->usage = usage;
		__entry->limit = limit;
	),
	TP_printk("pid=%d action=%s scope=%s key=%s asked=%llu usage=%llu limit=%llu",
		  __entry->pid, __get_str(action), __get_str(scope),
		  __get_str(key), __entry->asked, __entry->usage,
		  __entry->limit)
);

TRACE_EVENT(mrpin_fail,
	TP_PROTO(pid_t pid, const char *cause, int err, u64 asked,
		 u64 vm_pinned, u64 memlock),
	TP_ARGS(pid, cause, err, asked, vm_pinned, memlock),
	TP_STRUCT__entry(
		__field(pid_t, pid)
		__string(cause, cause)
		__field(int, err)
		__field(u64, asked)
		__field(u64, vm_pinned)
		__field(u64, memlock)
	),
	TP_fast_assign(
		__entry->pid = pid;
		mrpin_assign_str(cause);
		__entry->err = err;
		__entry->asked = asked;
		__entry->vm_pinned = vm_pinned;
		__entry->memlock = memlock;
	),
	TP_printk("pid=%d cause=%s errno=%d asked=%llu vm_pinned=%llu memlock=%llu",
		  __entry->pid, __get_str(cause), __entry->err, __entry->asked,
		  __entry->vm_pinned, __entry->memlock)
);

#endif /* _MRPIN_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
