#!/usr/bin/env bash
# Per-phase times of a sharded conversion on this machine, under the local Slurm: plan,
# translate (srun -n N, one shard per task) and merge, for N = 1, 2, 4, against one process on
# the same inputs; checks that every sharded trace equals the single run's, byte for byte.
# Prints a Markdown report for BENCHMARKS.md ("Sharded conversion").
#
# Usage (from the repository root, as root, with a local Slurm running):
#   export SLURM_CONF=$(scripts/slurm-local.sh start | tail -1)
#   scripts/bench-sharded.sh [--reports N] [--rows N] [--tasks "1 2 4"] [--dir DIR]
#
#   --reports N   generated reports (default 1024), ring MPI on 16 hosts
#   --rows N      activity rows per report (default 10000)
#   --tasks LIST  task counts to shard over (default "1 2 4")
#   --dir DIR     scratch directory (default ${TMPDIR:-/tmp}/nsys2prv-bench-sharded; the inputs
#                 are kept there and reused, the outputs removed)
set -euo pipefail
cd "$(dirname "$0")/.."

reports=1024
rows=10000
tasks="1 2 4"
dir=${TMPDIR:-/tmp}/nsys2prv-bench-sharded
while [ $# -gt 0 ]; do
    case "$1" in
        --reports) reports=$2; shift 2 ;;
        --rows) rows=$2; shift 2 ;;
        --tasks) tasks=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
command -v srun >/dev/null || { echo "srun not found: start a local Slurm (scripts/slurm-local.sh)" >&2; exit 1; }

target=${CARGO_TARGET_DIR:-target}
${CARGO:-cargo} build --release -q -p nsys2prv-rs -p nsys-synth
bin=$(realpath "$target/release/nsys2prv-rs")
synth=$(realpath "$target/release/nsys-synth")

inputs=$dir/inputs-$reports-$rows
if [ ! -f "$inputs/.done" ]; then
    rm -rf "$inputs"
    "$synth" --schema 3.24 --ranks "$reports" --rows "$rows" --hosts 16 --mpi ring --out "$inputs" >&2
    touch "$inputs/.done"
fi
cd "$inputs"
shopt -s nullglob
files=(rank*.sqlite)
input_bytes=$(du -cb "${files[@]}" | tail -1 | cut -f1)

# timed LABEL COMMAND...: runs COMMAND under /usr/bin/time; sets wall, cpu, rss.
timed() {
    local log=$dir/time.log
    /usr/bin/time -f '%e %U %S %M' -o "$log" "${@:2}" >"$dir/$1.out" 2>&1 || {
        cat "$dir/$1.out" >&2
        return 1
    }
    read -r wall user sys rss <"$log"
    cpu=$(echo "$user + $sys" | bc)
    rss=$((rss / 1024))
}

out=$dir/out
rm -rf "$out"
mkdir -p "$out/single"
timed single "$bin" -q "${files[@]}" "$out/single/t.prv"
single_wall=$wall single_cpu=$cpu single_rss=$rss
lines=$(($(wc -l <"$out/single/t.prv") - 1))
prv_bytes=$(stat -c %s "$out/single/t.prv")

rows_table=""
for n in $tasks; do
    o=$out/n$n
    mkdir -p "$o"
    timed plan$n "$bin" -q --plan-shards "$n" "${files[@]}" "$o/t.prv"
    plan_wall=$wall
    # One shard per task, as a job array would, but in one step so the tasks overlap.
    timed translate$n srun --ntasks="$n" --quiet bash -c \
        "exec $bin --shard \$SLURM_PROCID/\$SLURM_NTASKS ${files[*]} $o/t.prv"
    translate_wall=$wall translate_cpu=$cpu
    slowest=$(grep -o 'shard [0-9]* of [0-9]*: .* in [0-9.]* s' "$dir/translate$n.out" \
        | sed 's/.* in \([0-9.]*\) s/\1/' | sort -n | tail -1)
    part_bytes=$(du -cb "$o"/t.parts/shard-*.part | tail -1 | cut -f1)
    timed merge$n "$bin" merge -q "$o/t.prv"
    merge_wall=$wall merge_cpu=$cpu merge_rss=$rss
    for f in t.prv t.pcf t.row; do
        cmp -s "$out/single/$f" "$o/$f" || { echo "n=$n: $f differs from the single run" >&2; exit 1; }
    done
    diff -r "$out/single/t.cfgs" "$o/t.cfgs" >/dev/null || { echo "n=$n: views differ" >&2; exit 1; }
    total=$(echo "$plan_wall + $translate_wall + $merge_wall" | bc)
    rate=$(echo "scale=2; $lines / $merge_wall / 1000000" | bc)
    rows_table+="| $n | $plan_wall | $translate_wall ($translate_cpu) | $slowest | $merge_wall ($merge_cpu) | $merge_rss | $rate | $total | $((part_bytes / 1000000)) |"$'\n'
    rm -rf "$o"
done

cat <<REPORT
- Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)
- Commit: $(git -C "$OLDPWD" rev-parse --short HEAD 2>/dev/null || echo unknown); inputs: nsys-synth --schema 3.24 --ranks $reports --rows $rows --hosts 16 --mpi ring ($((input_bytes / 1000000)) MB of .sqlite)
- Single process: $single_wall s wall, $single_cpu s CPU, $single_rss MB max RSS; $lines lines, $((prv_bytes / 1000000)) MB of .prv
- Every sharded trace equals the single run's, byte for byte.

| tasks | plan s | translate s wall (CPU) | slowest shard s | merge s wall (CPU) | merge RSS MB | merge M lines/s | total s | parts MB |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|
$rows_table
REPORT
rm -rf "$out"
