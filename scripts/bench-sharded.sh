#!/usr/bin/env bash
# The largest jobs, measured phase by phase on this machine under the local Slurm (BENCHMARKS.md,
# "The largest jobs measured"): one entry point for three measurements.
#
#  sharded  many reports (default 1,024 x 10,000 rows, training shape, ring MPI on 16 hosts):
#           one process on all of them; then, for N in --tasks, each phase on its own: the plan
#           (--plan-shards N), the translation (srun -n N, --shard $SLURM_PROCID/$SLURM_NTASKS),
#           the single-process merge of those parts, the merge split over N tasks
#           (srun -n N ... merge --shard I/N) and the finishing merge.
#  cut      the same reports cut to one iteration (--cut, default train_step#4): one process,
#           and sharded over --cut-tasks tasks (plan, translate, merge --shard, finishing merge).
#  one      one large report (default one-10M: 1 x 10,000,000 rows of training) converted with
#           -v -j 2 at each --one-limits memory limit (default 1G, spilled, and 16G, not): the
#           reading and writing phases apart (the CPU time at the -v "reading:" line), the
#           writing phase's records per CPU- and per wall-second, the bytes spilled, peak RSS.
#
# Every step runs under scripts/bench-measure.py (wall, user+sys, peak RSS, minor faults, bytes
# read and written by system calls); a step of N tasks runs it inside `srun bash -c` for each
# task (outside srun nothing sees the tasks' CPU time). The 1-minute load average is taken before
# each step: on a shared machine read CPU seconds and bytes, which load barely changes, more than
# walls. Every sharded or split trace is compared with the single run's (`cmp`: .prv, .pcf, .row,
# views), and every limit's trace with the first limit's; a difference stops the script.
# Prints Markdown tables for BENCHMARKS.md; the raw measurements stay in DIR/results/.
#
# Usage (from the repository root, as root, with a local Slurm running):
#   export SLURM_CONF=$(scripts/slurm-local.sh start | tail -1)
#   scripts/bench-sharded.sh [--only sharded,cut,one] [--reports N] [--rows N] [--tasks "1 2 4"]
#       [--cut NAME#N] [--cut-tasks N] [--one-rows N] [--one-limits "1G 16G"]
#       [--bin PATH] [--synth PATH] [--dir DIR]
#
#   --only LIST     which measurements (default sharded,cut,one)
#   --reports N     generated reports (default 1024)
#   --rows N        activity rows per report (default 10000)
#   --tasks LIST    task counts to shard and split the merge over (default "1 2 4")
#   --cut RANGE     the --nvtx-range of the cut runs (default train_step#4: step 4 of 8)
#   --cut-tasks N   tasks of the sharded cut run (default 4)
#   --one-rows N    rows of the one large report (default 10000000)
#   --one-limits L  --memory-limit values for it (default "1G 16G"; the first is the reference)
#   --bin PATH      the nsys2prv-rs to measure (default: cargo build --release of this checkout)
#   --synth PATH    the nsys-synth to generate inputs with (default: built likewise)
#   --dir DIR       scratch directory (default ${TMPDIR:-/tmp}/nsys2prv-bench-sharded; the inputs
#                   are kept there and reused, the outputs removed as soon as compared)
#
# Disk: the sharded runs hold the inputs, the single run's trace, one set of parts, the slices and
# the sharded trace at once (about 11 GB at the default sizes, measured); the one-10M runs two traces of
# ~2.2 GB and the report (~0.6 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

only=sharded,cut,one
reports=1024
rows=10000
tasks="1 2 4"
cut=train_step#4
cut_tasks=4
one_rows=10000000
one_limits="1G 16G"
bin=""
synth=""
dir=${TMPDIR:-/tmp}/nsys2prv-bench-sharded
while [ $# -gt 0 ]; do
    case "$1" in
        --only) only=$2; shift 2 ;;
        --reports) reports=$2; shift 2 ;;
        --rows) rows=$2; shift 2 ;;
        --tasks) tasks=$2; shift 2 ;;
        --cut) cut=$2; shift 2 ;;
        --cut-tasks) cut_tasks=$2; shift 2 ;;
        --one-rows) one_rows=$2; shift 2 ;;
        --one-limits) one_limits=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --synth) synth=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
wants() { [[ ",$only," == *",$1,"* ]]; }
if wants sharded || wants cut; then
    command -v srun >/dev/null || { echo "srun not found: start a local Slurm (scripts/slurm-local.sh)" >&2; exit 1; }
fi

target=${CARGO_TARGET_DIR:-target}
if [ -z "$bin" ] || [ -z "$synth" ]; then
    ${CARGO:-cargo} build --release -q -p nsys2prv-rs -p nsys-synth
fi
bin=$(realpath "${bin:-$target/release/nsys2prv-rs}")
synth=$(realpath "${synth:-$target/release/nsys-synth}")
measure="python3 $repo/scripts/bench-measure.py"
mkdir -p "$dir"
dir=$(realpath "$dir")
results=$dir/results
mkdir -p "$results"
out=$dir/out
rm -rf "$out"
mkdir -p "$out"
mark=""

load() { cut -d' ' -f1 /proc/loadavg; }
fmt2() { printf '%.2f' "$1"; }
mb() { printf '%.1f' "$(echo "scale=2; $1 / 1000000" | bc)"; }
# us_per COUNT CPU: CPU seconds per COUNT items, in microseconds.
us_per() { printf '%.3f' "$(echo "scale=4; $2 * 1000000 / $1" | bc)"; }

# field FILE KEY: one value from a measure.py line.
field() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }

# run LABEL COMMAND...: one process under measure.py (stdout and stderr to DIR/results/LABEL.log;
# with $mark set, measure.py's --mark $mark).
# Sets wall, cpu (user+sys), user, sys, rss (MB), rchar, wchar, faults, step_load (and per_task,
# rchar_max as tasks_run does).
run() {
    local label=$1
    shift
    step_load=$(load)
    # shellcheck disable=SC2086
    $measure -o "$results/$label.m" ${mark:+--mark $mark} -- "$@" >"$results/$label.log" 2>&1 || {
        tail -5 "$results/$label.log" >&2
        echo "$label failed" >&2
        return 1
    }
    local m=$results/$label.m
    wall=$(field "$m" wall) user=$(field "$m" user) sys=$(field "$m" sys)
    cpu=$(fmt2 "$(echo "$user + $sys" | bc)")
    rss=$(($(field "$m" rss) / 1024))
    rchar=$(field "$m" rchar) wchar=$(field "$m" wchar) faults=$(field "$m" faults)
    per_task=$cpu rchar_max=$rchar
}

# tasks_run LABEL N COMMAND: COMMAND (one string; \$SLURM_PROCID and \$SLURM_NTASKS expand in each
# task) in N tasks of one srun step, each under measure.py. Sets wall (the step's), cpu (sum over
# tasks), cpu_min and cpu_max (per task), rss (largest, MB), rchar_max (most bytes read by one
# task), step_load.
tasks_run() {
    local label=$1 n=$2 command=$3
    rm -f "$results/$label".m.*
    step_load=$(load)
    local start
    start=$(date +%s.%N)
    srun --ntasks="$n" --quiet bash -c \
        "exec $measure -o $results/$label.m.\$SLURM_PROCID -- $command" >"$results/$label.log" 2>&1 || {
        tail -5 "$results/$label.log" >&2
        echo "$label failed" >&2
        return 1
    }
    wall=$(fmt2 "$(echo "$(date +%s.%N) - $start" | bc)")
    cpu=0 cpu_min="" cpu_max=0 rss=0 rchar_max=0
    local i t m r c
    for ((i = 0; i < n; i++)); do
        m=$results/$label.m.$i
        t=$(echo "$(field "$m" user) + $(field "$m" sys)" | bc)
        cpu=$(echo "$cpu + $t" | bc)
        if (($(echo "$t > $cpu_max" | bc))); then cpu_max=$t; fi
        if [ -z "$cpu_min" ] || (($(echo "$t < $cpu_min" | bc))); then cpu_min=$t; fi
        r=$(($(field "$m" rss) / 1024))
        if ((r > rss)); then rss=$r; fi
        c=$(field "$m" rchar)
        if ((c > rchar_max)); then rchar_max=$c; fi
    done
    cpu=$(fmt2 "$cpu") cpu_min=$(fmt2 "$cpu_min") cpu_max=$(fmt2 "$cpu_max")
    per_task="$cpu_min-$cpu_max"
    [ "$n" -gt 1 ] || per_task=$cpu
}

# same_set A B WHAT: the two output sets (NAME t) are identical, or stop.
same_set() {
    local f
    for f in t.prv t.pcf t.row; do
        cmp -s "$1/$f" "$2/$f" || { echo "$3: $f differs" >&2; exit 1; }
    done
    diff -r "$1/t.cfgs" "$2/t.cfgs" >/dev/null || { echo "$3: views differ" >&2; exit 1; }
}
lines_of() { echo $(($(wc -l <"$1") - 1)); }
sizes() { if [ $# -eq 0 ]; then echo 0; else du -cb "$@" | tail -1 | cut -f1; fi; }

table_head() {
    echo "| run | step | load | wall s | CPU s (all tasks) | CPU s per task | peak RSS MB | read MB (busiest task) | written MB | CPU µs per input row | CPU µs per line |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
}
# row RUN STEP WRITTEN_BYTES LINES: a table row from the last run or tasks_run (input_rows: the
# inputs' rows).
row() {
    echo "| $1 | $2 | $step_load | $wall | $cpu | $per_task | $rss | $(mb "$rchar_max") | $(mb "$3") | $(us_per "$input_rows" "$cpu") | $(us_per "$4" "$cpu") |"
}

echo "- Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); binary $bin ($(md5sum <"$bin" | cut -c1-12))"
echo "- Started $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# synthesise DIR LOG ARGS...: nsys-synth ARGS into DIR once (kept, with a .done marker, for the
# next run of this script); prints the rows it made, from LOG.
synthesise() {
    local target=$1 log=$2
    shift 2
    if [ ! -f "$target/.done" ]; then
        rm -rf "$target"
        "$synth" "$@" --out "$target" >"$log" 2>&1
        touch "$target/.done"
    fi
    sed -n 's/^.* file(s), \([0-9]*\) rows.*/\1/p' "$log"
}

# ---- many reports: single process, sharded, cut ----
if wants sharded || wants cut; then
    inputs=$dir/inputs-$reports-$rows
    synth_args="--schema 3.24 --ranks $reports --rows $rows --hosts 16 --training --streams 4 --mpi ring"
    input_rows=$(synthesise "$inputs" "$dir/synth-$reports-$rows.log" $synth_args)
    cd "$inputs"
    shopt -s nullglob
    files=(rank*.sqlite)
    input_bytes=$(sizes "${files[@]}")
    echo "- Inputs: \`nsys-synth $synth_args\`: ${#files[@]} reports, $input_rows rows, $(mb "$input_bytes") MB of .sqlite"
    echo
fi

if wants sharded; then
    mkdir -p "$out/single"
    mark=reading: run single "$bin" -v "${files[@]}" "$out/single/t.prv"
    read_cpu=$(echo "$(field "$results/single.m" mark_user) + $(field "$results/single.m" mark_sys)" | bc)
    lines=$(lines_of "$out/single/t.prv")
    prv_bytes=$(stat -c %s "$out/single/t.prv")
    echo "Uncut: $lines lines, $(mb "$prv_bytes") MB of .prv; single process with \`-v\`: $(grep -h '^reading: .* in \|^writing: .* in ' "$results/single.log" | paste -sd';' | sed 's/;/; /'), the reading phase's CPU $read_cpu s of $cpu s; $(mb "$wchar") MB written in all."
    echo
    table_head
    row "single process" "all reports, one command" "$prv_bytes" "$lines"
    for n in $tasks; do
        o=$out/n$n
        tasks_label="$n tasks"
        [ "$n" -gt 1 ] || tasks_label="1 task"
        mkdir -p "$o"
        run plan$n "$bin" -q --plan-shards "$n" "${files[@]}" "$o/t.prv"
        row "$tasks_label" "plan" 0 "$lines"
        tasks_run translate$n "$n" "$bin -q --shard \$SLURM_PROCID/\$SLURM_NTASKS ${files[*]} $o/t.prv"
        part_bytes=$(sizes "$o"/t.parts/shard-*.part)
        row "$tasks_label" "translate" "$part_bytes" "$lines"
        run merge$n "$bin" merge -q --keep-parts "$o/t.prv"
        row "$tasks_label" "merge, one process" "$prv_bytes" "$lines"
        same_set "$out/single" "$o" "$n tasks, one merge"
        rm -rf "$o/t.prv" "$o/t.pcf" "$o/t.row" "$o/t.cfgs"
        tasks_run split$n "$n" "$bin merge -q --shard \$SLURM_PROCID/\$SLURM_NTASKS $o/t.prv"
        slice_bytes=$(sizes "$o"/t.parts/slice-*-of-"$n".body)
        row "$tasks_label" "merge split over $n tasks" "$slice_bytes" "$lines"
        run finish$n "$bin" merge -q "$o/t.prv"
        row "$tasks_label" "finishing merge" "$prv_bytes" "$lines"
        same_set "$out/single" "$o" "$n tasks, merge split over $n tasks"
        rm -rf "$o"
    done
    echo
    echo "Every sharded trace, merged by one process and split over the tasks, equals the single run's (\`cmp\`)."
    echo
fi

if wants cut; then
    mkdir -p "$out/cut1"
    run cut-single "$bin" -v --nvtx-range "$cut" "${files[@]}" "$out/cut1/t.prv"
    cut_lines=$(lines_of "$out/cut1/t.prv")
    cut_bytes=$(stat -c %s "$out/cut1/t.prv")
    echo "Cut to one iteration (\`--nvtx-range $cut\`): $cut_lines lines, $(mb "$cut_bytes") MB of .prv."
    echo
    table_head
    row "cut, single process" "all reports, one command" "$cut_bytes" "$cut_lines"
    n=$cut_tasks
    o=$out/cut$n
    mkdir -p "$o"
    run cut-plan$n "$bin" -q --plan-shards "$n" --nvtx-range "$cut" "${files[@]}" "$o/t.prv"
    row "cut, $n tasks" "plan (resolves the cut)" 0 "$cut_lines"
    tasks_run cut-translate$n "$n" "$bin -q --shard \$SLURM_PROCID/\$SLURM_NTASKS --nvtx-range '$cut' ${files[*]} $o/t.prv"
    part_bytes=$(sizes "$o"/t.parts/shard-*.part)
    row "cut, $n tasks" "translate" "$part_bytes" "$cut_lines"
    tasks_run cut-split$n "$n" "$bin merge -q --shard \$SLURM_PROCID/\$SLURM_NTASKS $o/t.prv"
    slice_bytes=$(sizes "$o"/t.parts/slice-*-of-"$n".*)
    row "cut, $n tasks" "merge split over $n tasks (a cut is not split: notes only)" "$slice_bytes" "$cut_lines"
    run cut-finish$n "$bin" merge -q "$o/t.prv"
    row "cut, $n tasks" "finishing merge (writes the whole cut)" "$cut_bytes" "$cut_lines"
    same_set "$out/cut1" "$o" "cut over $n tasks"
    rm -rf "$o" "$out/cut1"
    echo
    echo "The sharded cut trace equals the single cut run's (\`cmp\`)."
    echo
fi
rm -rf "$out/single"

# ---- one large report, spilled and not ----
if wants one; then
    one=$dir/one-$one_rows
    one_args="--schema 3.24 --ranks 1 --rows $one_rows --training --streams 4"
    one_input_rows=$(synthesise "$one" "$dir/synth-one-$one_rows.log" $one_args)
    echo "One report: \`nsys-synth $one_args\` ($one_input_rows rows, $(mb "$(stat -c %s "$one/rank0.sqlite")") MB); \`nsys2prv-rs -v -j 2 --memory-limit LIMIT rank0.sqlite t.prv\`. Reading and writing as \`-v\` reports them (wall) and their CPU time (at the \`reading:\` line, and after it); spilled: bytes written beyond the output set."
    echo
    echo "| limit | load | wall s | user s | sys s | faults | peak RSS MB | limit + 64 MB | spilled MB | reading wall s (CPU s) | writing wall s (CPU s) | records | writing: M records per CPU-s | per wall-s | CPU µs per input row |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    first=""
    for limit in $one_limits; do
        o=$out/one-$limit
        mkdir -p "$o"
        mark=reading: run one-$limit "$bin" -v -j 2 --memory-limit "$limit" "$one/rank0.sqlite" "$o/t.prv"
        log=$results/one-$limit.log
        m=$results/one-$limit.m
        read_wall=$(sed -n 's/^reading: .* in \([0-9.]*\) s$/\1/p' "$log")
        write_wall=$(sed -n 's/^writing: .* in \([0-9.]*\) s$/\1/p' "$log")
        records=$(sed -n 's/^writing: \([0-9]*\) records.*/\1/p' "$log")
        set_bytes=$(sizes "$o/t.prv" "$o/t.pcf" "$o/t.row" "$o/t.cfgs")
        mark_cpu=$(echo "$(field "$m" mark_user) + $(field "$m" mark_sys)" | bc)
        write_cpu=$(echo "$cpu - $mark_cpu" | bc)
        limit_mb=$(($(numfmt --from=iec "$limit") / 1048576 + 64))
        echo "| $limit | $step_load | $wall | $user | $sys | $faults | $rss | $limit_mb | $(mb $((wchar > set_bytes ? wchar - set_bytes : 0))) | $read_wall ($mark_cpu) | $write_wall ($write_cpu) | $records | $(echo "scale=2; $records / $write_cpu / 1000000" | bc) | $(echo "scale=2; $records / $write_wall / 1000000" | bc) | $(us_per "$one_input_rows" "$cpu") |"
        if [ -z "$first" ]; then
            first=$o
        else
            same_set "$first" "$o" "one report at $limit"
            rm -rf "$o"
        fi
    done
    rm -rf "$first"
    echo
    echo "The traces of every limit are identical (\`cmp\`)."
    echo
fi
echo "- Finished $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$out"
