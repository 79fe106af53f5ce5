#!/usr/bin/env bash
# Benchmark of `nsys2prv-rs report` on a generated job of many ranks (a trace of several
# million lines): the tables only, and with the page and the JSON; wall time, CPU time
# and peak RSS of one run each. Prints a Markdown table (also DIR/report-results.md).
#
# Usage (from the repository root):
#   scripts/bench-report.sh [--ranks N] [--rows N] [--dir DIR] [--regen] [--bin PATH]
#
#   --ranks N    MPI ranks, one report each, 8 GPUs per node (default 1024)
#   --rows N     activity rows per rank (default 2000: about 5 M trace lines at 1,024 ranks)
#   --dir DIR    scratch dir (default: ${TMPDIR:-/tmp}/nsys2prv-bench-report; the
#                inputs and the converted trace are reused if present)
#   --regen      generate and convert again
#   --bin PATH   the nsys2prv-rs binary to time (default: the release build, built here)
#
# NSYS2PRV_BENCH_REPORT=1 scripts/bench.sh runs this too, after its own figures.
set -euo pipefail

ranks=1024
rows=2000
scratch="${TMPDIR:-/tmp}/nsys2prv-bench-report"
regen=0
bin=""

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --ranks) ranks="$2"; shift ;;
        --rows) rows="$2"; shift ;;
        --dir) scratch="$2"; shift ;;
        --regen) regen=1 ;;
        --bin) bin="$2"; shift ;;
        -h|--help) usage ;;
        *) echo "bench-report.sh: unknown argument $1" >&2; usage ;;
    esac
    shift
done

log() { echo "bench-report: $*" >&2; }

cargo="${CARGO:-cargo}"
target="${CARGO_TARGET_DIR:-target}"
log "building the release binaries"
if [ -z "$bin" ]; then
    "$cargo" build --release -q -p nsys-synth -p nsys2prv-rs
else
    "$cargo" build --release -q -p nsys-synth
fi
synth="$target/release/nsys-synth"
bin="${bin:-$target/release/nsys2prv-rs}"

mkdir -p "$scratch"
inputs="$scratch/job-$ranks-$rows"
trace="$scratch/job-$ranks-$rows.prv"
if [ "$regen" = 1 ] || [ ! -f "$trace" ]; then
    rm -rf "$inputs" "$trace" "${trace%.prv}".{pcf,row,cfgs}
    log "generating $ranks ranks x $rows rows"
    "$synth" --ranks "$ranks" --rows "$rows" --hosts $(( (ranks + 7) / 8 )) --gpus-per-host 8 \
        --mpi ring --mpi-iterations 20 --out "$inputs" >/dev/null
    log "converting"
    "$bin" -q "$inputs" "$trace"
fi
lines=$(wc -l < "$trace")
bytes=$(stat -c %s "$trace")

# One timed run: wall s, user+sys s, max RSS kB.
timed() {
    local out="$scratch/time.txt"
    /usr/bin/time -f "%e %U %S %M" -o "$out" "$@" >/dev/null 2>"$scratch/stderr.txt" || {
        cat "$scratch/stderr.txt" >&2
        exit 1
    }
    awk '{ printf "%.2f %.2f %.0f", $1, $2 + $3, $4 / 1024 }' "$out"
}

page="$scratch/page.html"
json="$scratch/report.json"
rm -f "$page" "$json"
read -r t_wall t_cpu t_rss <<<"$(timed "$bin" report "$trace")"
read -r h_wall h_cpu h_rss <<<"$(timed "$bin" report "$trace" --html "$page" --json "$json")"
read -r m_wall m_cpu m_rss <<<"$(timed "$bin" report "$trace" --memory-limit 64M)"
page_kb=$(( $(stat -c %s "$page") / 1024 ))

results="$scratch/report-results.md"
{
    echo "### report on $ranks ranks ($(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg))"
    echo
    echo "Trace: $lines lines, $(( bytes / 1048576 )) MB; page $page_kb KB."
    echo
    echo "| run | wall s | CPU s | peak RSS MB | lines/s (wall) |"
    echo "|---|---:|---:|---:|---:|"
    for run in "tables:$t_wall:$t_cpu:$t_rss" "tables + --html + --json:$h_wall:$h_cpu:$h_rss" \
               "tables, --memory-limit 64M:$m_wall:$m_cpu:$m_rss"; do
        IFS=: read -r name wall cpu rss <<<"$run"
        rate=$(awk -v l="$lines" -v w="$wall" 'BEGIN { printf "%.1f M", (w > 0 ? l / w : 0) / 1e6 }')
        echo "| $name | $wall | $cpu | $rss | $rate |"
    done
} | tee "$results"
