#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where the kernel's instructions go for one command (scripts/vm-profile.sh).

    insns_profile.py INSNS KALLSYMS WINDOW RUNS [TOP]

INSNS is what qemu_insns.c wrote, KALLSYMS a copy of /proc/kallsyms,
WINDOW the window `mrpin_bench exec RUNS WINDOW COMMAND...` marked.
Prints the instructions per run (total, kernel, user), the kernel's by
what spends them (the debug kernel's checkers, each a family of
functions: lockdep, KASAN, stack traces, RCU's lockdep checks, kmemleak,
debug objects; the rest), then the TOP kernel functions.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from insns_report import Symbols, per_function, read_windows  # noqa: E402

# A function's family: the first whose prefixes or names hold it (debug
# objects' lookup_object_or_alloc before kmemleak's lookup_object).
FAMILIES = (
    ("lockdep", ("lock_acquire", "lock_release", "__lock_acquire",
                 "__lock_release", "lockdep_", "__lockdep_", "lock_is_held",
                 "hlock_class", "mark_lock", "mark_held_locks",
                 "match_held_lock", "find_held_lock", "lock_unpin_lock",
                 "lock_pin_lock", "check_prev_add", "check_irq_usage",
                 "validate_chain", "lookup_chain_cache", "zap_class",
                 "debug_check_no_locks", "trace_hardirqs_", "trace_softirqs_",
                 "lock_contended", "lock_acquired", "look_up_lock_class",
                 "register_lock_class", "__bfs", "check_noncircular",
                 "add_chain_cache", "lock_sync")),
    ("KASAN", ("kasan_", "__kasan_", "__asan_", "check_memory_region",
               "qlist_", "quarantine_")),
    ("stack traces", ("unwind_", "__unwind_", "update_stack_state",
                      "stack_trace_", "arch_stack_walk", "stack_depot_",
                      "__stack_depot_", "find_stack", "filter_irq_stacks",
                      "kernel_text_address", "__kernel_text_address",
                      "ftrace_graph_ret_addr", "__is_insn_slot_addr",
                      "is_bpf_text_address", "is_ftrace_trampoline",
                      "is_module_text_address", "__module_text_address",
                      "in_entry_stack", "in_task_stack", "in_irq_stack",
                      "get_stack_info", "stack_access_ok", "depot_")),
    ("RCU lockdep checks", ("rcu_is_watching", "rcu_lockdep_current_cpu_online",
                            "debug_lockdep_rcu_enabled", "rcu_read_lock_held",
                            "rcu_read_lock_any_held", "rcu_read_lock_bh_held",
                            "rcu_read_lock_sched_held")),
    ("debug objects", ("debug_object", "__debug_object", "debug_check_no_obj",
                       "lookup_object_or_alloc", "alloc_object",
                       "fill_pool", "free_obj_work", "__debug_check_no_obj")),
    ("kmemleak", ("kmemleak_", "__create_object", "__delete_object",
                  "create_object", "delete_object", "find_and_get_object",
                  "__find_and_get_object", "lookup_object", "__link_object",
                  "set_track_prepare", "put_object", "paint_", "mem_pool_",
                  "scan_block", "scan_object", "scan_gray_list")),
)


def family(name):
    for fam, names in FAMILIES:
        if any(name.startswith(n) for n in names):
            return fam
    return "the rest"


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__.strip().split("\n\n")[1])
    windows = read_windows(sys.argv[1])
    syms = Symbols(sys.argv[2])
    window, runs = int(sys.argv[3]), int(sys.argv[4])
    top = int(sys.argv[5]) if len(sys.argv) == 6 else 30
    if window not in windows:
        sys.exit(f"insns_profile: no count for window {window} in {sys.argv[1]}")
    total, kernel, user, blocks = windows[window]
    fns = per_function(blocks, syms)

    def m(n):
        return f"{n / runs / 1e6:8.2f} M"

    def share(n):
        return f"{100 * n / kernel if kernel else 0:5.1f}%"

    print(f"per run: {m(total)} instructions, kernel {m(kernel)}, user {m(user)}")
    fams = {}
    for (name, _), n in fns.items():
        fam = family(name)
        fams[fam] = fams.get(fam, 0) + n
    print("the kernel's, by what spends them:")
    for fam, n in sorted(fams.items(), key=lambda x: -x[1]):
        print(f"  {m(n)} {share(n)}  {fam}")
    print(f"the kernel's {top} costliest functions:")
    for (name, mod), n in sorted(fns.items(), key=lambda x: -x[1])[:top]:
        where = f" [{mod}]" if mod else ""
        print(f"  {m(n)} {share(n)}  {name}{where}  ({family(name)})")


if __name__ == "__main__":
    main()
