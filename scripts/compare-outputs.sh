#!/usr/bin/env bash
# Runs two nsys2prv-rs binaries over every bundled sample and every export of the shared
# corpus, with a few option variants, and compares what they write byte for byte: the
# .prv/.prv.gz, .pcf, .row, the views directory, the report files, the exit code and what
# they print (with the scratch paths made equal). For restructurings that must not change
# the output.
#
# Usage (from anywhere):
#   scripts/compare-outputs.sh OLD_BINARY NEW_BINARY
#
# Environment: NSYS2PRV_CORPUS (default: ../shared/corpus beside the checkout); KEEP=1
# keeps the scratch directory. Exit 0 when everything is identical, 1 otherwise (the
# differences are listed).
set -euo pipefail

if [ $# -ne 2 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
corpus=${NSYS2PRV_CORPUS:-$root/../shared/corpus}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/compare-outputs.XXXXXX")
if [ "${KEEP:-0}" != 1 ]; then
    trap 'rm -rf "$scratch"' EXIT
fi

cases=0
files=0
failures=0

# run_case NAME OUTPUT_NAME [ARGS...]: ARGS are the tool's arguments, run in each
# binary's own output directory; @OUT@ stands for it (as `.`, so that file names
# written into the report are the same for both).
run_case() {
    local name=$1 output=$2
    shift 2
    local which
    for which in old new; do
        local dir="$scratch/$which/$name"
        mkdir -p "$dir/out"
        local bin=$old
        [ "$which" = new ] && bin=$new
        local args=()
        local a
        for a in "$@"; do
            args+=("${a//@OUT@/.}")
        done
        set +e
        (cd "$dir/out" && "$bin" "${args[@]}" >"$dir/stdout" 2>"$dir/stderr")
        echo $? >"$dir/status"
        set -e
        # The scratch directory differs between the two runs: not a difference.
        sed -i "s#$dir/out#OUT#g; s#$scratch/$which#SCRATCH#g" "$dir/stdout" "$dir/stderr"
        # Timings printed by the tool differ from run to run.
        sed -i -E 's/[0-9]+\.[0-9]+ s\b/X s/g; s/in [0-9.]+ ?(ms|s)\b/in X/g' \
            "$dir/stdout" "$dir/stderr"
    done
    cases=$((cases + 1))
    local n
    n=$(find "$scratch/old/$name" -type f | wc -l)
    files=$((files + n))
    if ! diff -r "$scratch/old/$name" "$scratch/new/$name" >"$scratch/diff.txt" 2>&1; then
        failures=$((failures + 1))
        echo "DIFFERENT: $name ($*)"
        head -n 20 "$scratch/diff.txt" | sed 's/^/    /'
    fi
}

# run_report_case NAME TRACE_NAME REPORT_ARGS -- INPUTS...: the old binary writes the
# trace in each directory, then each binary's `report` subcommand reads it.
run_report_case() {
    local name=$1 trace=$2
    shift 2
    local report_args=()
    while [ "$1" != -- ]; do
        report_args+=("$1")
        shift
    done
    shift
    local which
    for which in old new; do
        local dir="$scratch/$which/$name"
        mkdir -p "$dir/out"
        local bin=$old
        [ "$which" = new ] && bin=$new
        (cd "$dir/out" && "$old" -q "$@" "$trace")
        set +e
        (cd "$dir/out" && "$bin" report "${report_args[@]}" "$trace" >"$dir/stdout" 2>"$dir/stderr")
        echo $? >"$dir/status"
        set -e
    done
    cases=$((cases + 1))
    files=$((files + $(find "$scratch/old/$name" -type f | wc -l)))
    if ! diff -r "$scratch/old/$name" "$scratch/new/$name" >"$scratch/diff.txt" 2>&1; then
        failures=$((failures + 1))
        echo "DIFFERENT: $name (report ${report_args[*]})"
        head -n 20 "$scratch/diff.txt" | sed 's/^/    /'
    fi
}

samples=$root/samples
single_samples=(
    nvtx_osrt/nvtx_osrt.sqlite
    sched/sched.sqlite
    openmp/openmp.sqlite
    synthetic/cuda_2025.5.sqlite
)
multi_samples=(mpi_2ranks mpi_3ranks synthetic/4ranks_2hosts_2022.4)

for s in "${single_samples[@]}"; do
    run_case "sample-${s//\//_}" t.prv "$samples/$s" @OUT@/t.prv
done
for s in "${multi_samples[@]}"; do
    run_case "sample-${s//\//_}" t.prv "$samples/$s"/*.sqlite @OUT@/t.prv
done

# Option variants on the samples: gzip, categories, cuts, alignment, dry run, report.
cuda=$samples/synthetic/cuda_2025.5.sqlite
four=("$samples"/synthetic/4ranks_2hosts_2022.4/*.sqlite)
run_case variant-gzip t.prv.gz "$cuda" @OUT@/t.prv.gz
run_case variant-gzip-four t.prv.gz "${four[@]}" @OUT@/t.prv.gz
run_case variant-t-cuda t.prv -t cuda "$cuda" @OUT@/t.prv
run_case variant-t-bsc t.prv -t cuda_api_trace,nvtx_pushpop_trace "$cuda" @OUT@/t.prv
run_case variant-t-gpu t.prv -t cuda_gpu_trace,mpi_event_trace "${four[@]}" @OUT@/t.prv
run_case variant-exclude t.prv --exclude nvtx,osrt,sched "${four[@]}" @OUT@/t.prv
run_case variant-exclude-nvtx t.prv --exclude nvtx "$samples/nvtx_osrt/nvtx_osrt.sqlite" @OUT@/t.prv
run_case variant-demangled t.prv --kernel-names demangled "$cuda" @OUT@/t.prv
for sync in mpi-init barrier nccl; do
    run_case "variant-sync-$sync" t.prv --sync "$sync" "${four[@]}" @OUT@/t.prv
done
run_case variant-window-cuda t.prv --time-window 230ms:250ms "$cuda" @OUT@/t.prv
run_case variant-window-four t.prv --time-window 170ms:200ms "${four[@]}" @OUT@/t.prv
run_case variant-window-nvtx t.prv --time-window 30ms:60ms "$samples/nvtx_osrt/nvtx_osrt.sqlite" @OUT@/t.prv
run_case variant-window-openmp t.prv --time-window 1ms: "$samples/openmp/openmp.sqlite" @OUT@/t.prv
run_case variant-window-mpi t.prv --time-window :300ms "$samples"/mpi_3ranks/*.sqlite @OUT@/t.prv
run_case variant-window-sched t.prv --time-window 20ms:40ms "$samples/sched/sched.sqlite" @OUT@/t.prv
run_case variant-nvtx-range t.prv --nvtx-range compute#2 "$samples/nvtx_osrt/nvtx_osrt.sqlite" @OUT@/t.prv
run_case variant-nvtx-range-all t.prv --nvtx-range "overlap B" "$samples/nvtx_osrt/nvtx_osrt.sqlite" @OUT@/t.prv
run_case variant-nvtx-range-sample t.prv --nvtx-range iteration#2 "$samples"/mpi_2ranks/*.sqlite @OUT@/t.prv
run_case variant-nvtx-range-unknown t.prv --nvtx-range no-such-range "$cuda" @OUT@/t.prv
run_case variant-memory-limit t.prv --memory-limit 1M -j 1 "${four[@]}" @OUT@/t.prv
run_case variant-dry-run t.prv --dry-run "${four[@]}" "$cuda" @OUT@/t.prv
run_case variant-dry-run-t t.prv --dry-run -t cuda_api_trace "$cuda" @OUT@/t.prv
run_case variant-report t.prv --report "${four[@]}" @OUT@/t.prv
run_case variant-report-gz t.prv.gz --report "$cuda" @OUT@/t.prv.gz
run_case variant-verbose t.prv -v "${four[@]}" @OUT@/t.prv
run_report_case report-four t.prv --top 3 -- "${four[@]}"
run_report_case report-iterations t.prv.gz --iterations iteration -- "$samples"/mpi_2ranks/*.sqlite
run_report_case report-iterations-unknown t.prv --iterations bogus --no-files -- "$samples"/mpi_3ranks/*.sqlite
run_case report-bad-name t.prv report @OUT@/p.txt
run_case report-missing t.prv report @OUT@/missing.prv
run_report_case report-guess t.prv -- "$samples/nvtx_osrt/nvtx_osrt.sqlite"

# Every export of the corpus alone (the broken ones too: same error, same exit code),
# and the per-rank MPI reports together.
if [ -d "$corpus" ]; then
    while IFS= read -r f; do
        rel=${f#"$corpus"/}
        name="corpus-${rel//\//_}"
        run_case "$name" t.prv "$f" @OUT@/t.prv
        # And its middle third, cut: how every type crosses a cut's edges.
        prv="$scratch/old/$name/out/t.prv"
        if [ -f "$prv" ]; then
            end=$(head -n 1 "$prv" | sed -E 's/^#Paraver \([^)]*\):([0-9]+)_ns.*/\1/')
            run_case "$name-cut" t.prv --time-window "$((end / 3))ns:$((2 * end / 3))ns" "$f" @OUT@/t.prv
        fi
    done < <(find "$corpus" -name '*.sqlite' | sort)
    run_case corpus-mpi_per_rank t.prv "$corpus"/local/mpi_per_rank/*.sqlite @OUT@/t.prv
    run_case corpus-dry-run t.prv --dry-run "$corpus"/local/mpi_per_rank/*.sqlite @OUT@/t.prv
else
    echo "note: no corpus at $corpus (set NSYS2PRV_CORPUS); only the samples compared" >&2
fi

echo "compared $cases cases, $files files per binary: $failures different"
[ "$failures" -eq 0 ]
