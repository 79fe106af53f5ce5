#!/usr/bin/env python3
"""Where nsys2prv-rs spends its CPU time, by phase and by translation module, from a perf profile
with call graphs (this VM has no hardware counters, so cpu-clock sampling):

    perf record -F 999 --call-graph dwarf,16384 -o prof.data -- nsys2prv-rs -q INPUT OUT.prv
    perf script -i prof.data -F ip,sym | scripts/perf-phases.py

Inlined frames carry short names: the ones that matter are listed with their phase.
A sample's phase is that of the first frame, from the leaf up, that matches one of PHASES (so a
page fault taken while formatting counts as a page fault); its module is the innermost
nsys_semantics module on the stack (`report` alone: finishing a report, i.e. sorting)."""
import collections, re, sys

PHASES = [  # (phase, pattern on a frame), checked leaf first for each frame
    ("format (.prv text, itoa)", r"paraver_writer::lines|paraver_writer::text|itoa::|^(eight_digits|leading_digits) "),
    ("compress (gzip)", r"flate2|miniz|deflate"),
    ("write (BufWriter, kernel copy to page cache)", r"BufWriter|std::io::Write|ext4_|copy_folio|generic_perform_write|vfs_write|ksys_write"),
    ("merge (segments' loser tree, gather, spill read-back)", r"paraver_writer::(segments|merge|kmerge|cursor|gather|cut|view|spill)|^(replace_winner|merge_parts|part_key) "),
    ("sort (runs, states, links)", r"rayon::slice::sort|core::slice::sort|driftsort|quicksort|par_merge|merge_sort"),
    ("states (tiling intervals)", r"paraver_writer::states"),
    ("run building (push records, pairs, held-back heap, blocks)", r"paraver_writer::run::|paraver_writer::chunked|BinaryHeap"),
    ("SQLite (VM, column decode, rusqlite)", r"^sqlite3|^columnMem|rusqlite::|^vdbe|^btree|^sqlite|fetchPayload|accessPayload|getPageNormal|pcache"),
    ("reader (page reader, row decode, strings)", r"nsys_reader::|^(field_value|decode_header) "),
    ("translate (semantics)", r"nsys_semantics::"),
    ("page faults, allocation", r"exc_page_fault|clear_page|do_anonymous_page|malloc|realloc|_int_free|RawVec|finish_grow|mmap|munmap"),
]
CATEGORY = re.compile(r"nsys_semantics::(\w+)::")
phase_n, cat_n, total = collections.Counter(), collections.Counter(), 0
for block in sys.stdin.read().split("\n\n"):
    frames = [l.strip().split(" ", 1)[1] for l in block.strip().split("\n") if " " in l.strip()]
    if not frames:
        continue
    total += 1
    phase = "other (threads, scheduling, libc)"
    for f in frames:
        hit = next((p for p, pat in PHASES if re.search(pat, f)), None)
        if hit:
            phase = hit
            break
    phase_n[phase] += 1
    cats = [m.group(1) for f in frames if (m := CATEGORY.search(f))]
    # The innermost category module; `report` alone means finishing (sorting) a report.
    cat = next((c for c in cats if c not in ("report", "context")), cats[0] if cats else None)
    cat_n[cat or "(outside translation)"] += 1
print(f"{total} samples")
if total == 0:
    sys.exit("no samples: give the output of `perf script -F ip,sym` of a profile with call graphs")
print("by phase:")
for k, v in phase_n.most_common():
    print(f"  {100 * v / total:5.1f}%  {k}")
print("by semantics module on the stack:")
for k, v in cat_n.most_common():
    print(f"  {100 * v / total:5.1f}%  {k}")
