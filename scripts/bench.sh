#!/usr/bin/env bash
# End-to-end benchmark of the release binary on synthetic Nsight Systems exports, and
# optionally of BSC's Python nsys2prv 0.5.8 on the same inputs. Prints a Markdown report
# (machine, date, commit, figures) that can be pasted into BENCHMARKS.md.
#
# Usage (from the repository root):
#   scripts/bench.sh [--quick] [--with-nsys2prv] [--dir DIR] [--n2p-rows N] [--regen]
#
#   --quick          small inputs (4 ranks x 200k rows; 1 x 1M rows): about a minute
#   --with-nsys2prv  also time BSC's nsys2prv 0.5.8, installed with pip into a venv under
#                    the scratch dir, on inputs of --n2p-rows rows
#   --dir DIR        scratch dir for inputs, outputs and the venv
#                    (default: ${TMPDIR:-/tmp}/nsys2prv-bench; inputs are reused if present)
#   --n2p-rows N     rows of the nsys2prv comparison inputs (default 500000, quick 100000):
#                    nsys2prv does about 10k rows/s and needs about 0.9 GB per million rows,
#                    so it gets inputs smaller than the main ones
#   --regen          regenerate the inputs even if present
#
# Environment: CARGO_TARGET_DIR (default: target) is honoured; CARGO (default: cargo).
#
# What it does:
#   1. cargo build --release -p nsys2prv-rs -p nsys-synth
#   2. generates, with target/release/nsys-synth (schema 3.24):
#        multi:   16 ranks x 2M rows on 2 hosts, MPI ring pattern   (quick: 4 x 200k)
#        single:  1 rank x 10M rows, one file                       (quick: 1 x 1M)
#        metrics: 1 rank, 1M CUDA rows + 10M GPU-metric rows        (quick: 100k + 1M)
#        sampling: a CPU-only report (schema 3.0), 2 threads x 500k CPU samples with call stacks
#                  (one in four, 15-30 frames) and context switches, about 7M rows (quick: 1/10)
#        nvtx:     a CPU-only report of NVTX ranges with as many rows as sampling
#   3. times nsys2prv-rs on each with /usr/bin/time -v: default -j (all cores), -j 1,
#      on multi --memory-limit 256M, on single a .prv.gz output; reports wall, user+sys, max RSS, the .prv's lines,
#      input rows/s, and lines/s per wall second and per CPU second (user+sys)
#   4. with --with-nsys2prv: generates cmp-multi (4 ranks, MPI, 2 hosts), cmp-single
#      (1 rank) and cmp-metrics (1 rank, 96% GPU-metric rows) of --n2p-rows rows each,
#      runs nsys2prv on them the way it must be run (from the reports' directory,
#      -t cuda_api_trace[,mpi_event_trace|,gpu_metrics], -m for several reports; kernels
#      and memory operations are always translated), with the stand-in
#      scripts/bench/nsys first on PATH to provide `nsys stats -r cuda_api_trace`, then
#      nsys2prv-rs (default -j, every category) on the same files, and prints the ratio
#      of wall times. nsys2prv-rs translates more (syncs, states, MPI messages), so the
#      ratio is conservative. nsys2prv's time includes the stand-in's CSV export, which
#      replaces the `nsys stats` run it always needs; the stand-in's share is shown.
#   5. prints the Markdown report, also saved as DIR/results.md; outputs are deleted
#      after each run (the full multi trace is several GB).
#
# One run per configuration: the figures are from a single run on whatever machine this
# is; on a shared machine, compare ratios, not absolute numbers.
set -euo pipefail

quick=0
with_n2p=0
regen=0
scratch="${TMPDIR:-/tmp}/nsys2prv-bench"
n2p_rows=""

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --with-nsys2prv) with_n2p=1 ;;
        --regen) regen=1 ;;
        --dir) shift; [ $# -gt 0 ] || usage; scratch=$1 ;;
        --n2p-rows) shift; [ $# -gt 0 ] || usage; n2p_rows=$1 ;;
        -h|--help) usage ;;
        *) echo "bench.sh: unknown argument: $1" >&2; usage ;;
    esac
    shift
done

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
target_dir=${CARGO_TARGET_DIR:-target}
case "$target_dir" in /*) ;; *) target_dir="$repo/$target_dir" ;; esac
bin="$target_dir/release"
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)

if [ "$quick" = 1 ]; then
    multi_ranks=4; multi_rows=200000; single_rows=1000000; tag=quick
    : "${n2p_rows:=100000}"
else
    multi_ranks=16; multi_rows=2000000; single_rows=10000000; tag=full
    : "${n2p_rows:=500000}"
fi

log() { echo "bench: $*" >&2; }

# ---------------------------------------------------------------- prerequisites
if [ ! -x /usr/bin/time ]; then
    log "installing GNU time (Debian package 'time')"
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y -q time >&2
    else
        sudo apt-get install -y -q time >&2
    fi
fi

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# The commit the binaries are built from (read before building: others may commit meanwhile).
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit (with uncommitted changes)"
fi
log "building release binaries into $bin"
"${CARGO:-cargo}" build --release -q -p nsys2prv-rs -p nsys-synth >&2
tool="$bin/nsys2prv-rs"
synth="$bin/nsys-synth"

# ---------------------------------------------------------------- inputs
# gen NAME ARGS...: generates $scratch/NAME with nsys-synth unless it is there with the
# same arguments; leaves the total row count in $scratch/NAME/.rows.
gen() {
    local name=$1; shift
    local dir="$scratch/$name"
    local spec="$*"
    if [ "$regen" = 0 ] && [ -f "$dir/.spec" ] && [ "$(cat "$dir/.spec")" = "$spec" ] \
        && [ -f "$dir/.rows" ]; then
        log "reusing $dir ($(cat "$dir/.rows") rows)"
        return
    fi
    rm -rf "$dir"
    log "generating $dir: nsys-synth $spec"
    local out
    out=$("$synth" "$@" --out "$dir" | tail -n 1)
    echo "$out" >&2
    # "N file(s), R rows in S s (...)"
    echo "$out" | awk '{ for (i = 1; i <= NF; i++) if ($(i+1) == "rows") { print $i; exit } }' \
        > "$dir/.rows"
    echo "$spec" > "$dir/.spec"
}

gen "$tag-multi" --schema 3.24 --ranks "$multi_ranks" --rows "$multi_rows" --hosts 2 --mpi ring
gen "$tag-single" --schema 3.24 --ranks 1 --rows "$single_rows"
gen "$tag-metrics" --schema 3.24 --ranks 1 --rows $((single_rows / 10)) \
    --gpu-metric-samples $((single_rows / 16))
# CPU-only reports: samples with call stacks, and NVTX ranges of about as many rows (a sample
# is about 7 rows with its frames and context switches).
cpu_samples=$((single_rows / 20))
gen "$tag-sampling" --schema 3.0 --ranks 1 --rows 0 --threads 2 --cpu-samples "$cpu_samples"
gen "$tag-nvtx" --schema 3.0 --ranks 1 --rows 0 --threads 2 --nvtx-ranges $((cpu_samples * 7))

# ---------------------------------------------------------------- timing
# timed OUTFILE CMD...: runs CMD under /usr/bin/time -v; sets wall, cpu (user+sys), rss_mb.
timed() {
    local tfile=$1; shift
    local rc=0
    /usr/bin/time -v -o "$tfile" "$@" || rc=$?
    if [ "$rc" != 0 ]; then
        log "command failed with status $rc: $*"
        tail -n 40 "$tfile" >&2 || true
        return "$rc"
    fi
    read -r wall cpu rss_mb < <(awk -F': ' '
        /User time \(seconds\)/ { u = $2 }
        /System time \(seconds\)/ { s = $2 }
        /Elapsed \(wall clock\)/ {
            n = split($NF, p, ":"); w = 0
            for (i = 1; i <= n; i++) w = w * 60 + p[i]
        }
        /Maximum resident set size/ { m = $2 }
        END { printf "%.2f %.2f %.0f\n", w, u + s, m / 1024 }' "$tfile")
}

# rate N SECONDS: millions per second, 3 significant digits.
rate() { awk -v n="$1" -v t="$2" 'BEGIN { if (t > 0) printf "%.3g", n / t / 1e6; else print "-" }'; }

rows_md=()

# run_rs NAME LABEL ARGS...: times nsys2prv-rs on input NAME; adds a table row; sets
# rs_wall/rs_rss/rs_lines for the caller. A LABEL of "-> .prv.gz" writes a gzip trace.
run_rs() {
    local name=$1 label=$2; shift 2
    local dir="$scratch/$name" out="$scratch/out-rs/$name.prv"
    [ "$label" = "-> .prv.gz" ] && out="$out.gz"
    local rows
    rows=$(cat "$dir/.rows")
    mkdir -p "$scratch/out-rs"
    rm -rf "$scratch/out-rs/$name".*
    # About 230 bytes of .prv per input row, and as much again for spilled chunks.
    local need_mb=$((rows * 460 / 1000000)) free_mb
    free_mb=$(df -Pm "$scratch/out-rs" | awk 'NR == 2 { print $4 }')
    if [ "$free_mb" -lt "$need_mb" ]; then
        log "only $free_mb MB free in $scratch, $name needs about $need_mb MB: use --dir elsewhere or --quick"
        exit 1
    fi
    log "nsys2prv-rs $label on $name ($rows rows)"
    timed "$scratch/out-rs/time.txt" "$tool" -q "$@" "$dir" "$out"
    local lines
    case "$out" in
        *.gz) lines=$(gzip -dc "$out" | wc -l) ;;
        *) lines=$(wc -l < "$out") ;;
    esac
    rm -rf "$scratch/out-rs/$name".*
    rs_wall=$wall; rs_cpu=$cpu; rs_rss=$rss_mb; rs_lines=$lines
    rows_md+=("| $name | $rows | nsys2prv-rs ${label:-(default -j)} | $wall | $cpu | $rss_mb | $lines \
| $(rate "$rows" "$wall") | $(rate "$lines" "$wall") | $(rate "$lines" "$cpu") |")
}

for name in "$tag-multi" "$tag-single" "$tag-metrics"; do
    run_rs "$name" ""
    run_rs "$name" "-j 1" -j 1
done
run_rs "$tag-multi" "--memory-limit 256M" --memory-limit 256M
run_rs "$tag-single" "-> .prv.gz"
# Cost per input row of CPU samples (samples, frames and context switches) and of NVTX ranges,
# per CPU-second (user+sys) at -j 1.
cpu_md=()
for name in "$tag-sampling" "$tag-nvtx"; do
    run_rs "$name" ""
    run_rs "$name" "-j 1" -j 1
    cpu_md+=("| $name | $(cat "$scratch/$name/.rows") | $rs_cpu | $(rate "$(cat "$scratch/$name/.rows")" "$rs_cpu") |")
done

# ---------------------------------------------------------------- nsys2prv
cmp_md=()
n2p_note=""
if [ "$with_n2p" = 1 ]; then
    venv="$scratch/venv"
    if [ ! -x "$venv/bin/nsys2prv" ]; then
        log "installing nsys2prv 0.5.8 into $venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q nsys2prv==0.5.8 >&2
    fi
    n2p_version=$("$venv/bin/pip" show nsys2prv 2>/dev/null | awk '/^Version/ { print $2 }')
    gen cmp-multi --schema 3.24 --ranks 4 --rows $((n2p_rows / 4)) --hosts 2 --mpi ring
    gen cmp-single --schema 3.24 --ranks 1 --rows "$n2p_rows"
    gen cmp-metrics --schema 3.24 --ranks 1 --rows $((n2p_rows / 25)) \
        --gpu-metric-samples $((n2p_rows / 16))
    standin_dir="$repo/scripts/bench"
    for name in cmp-multi cmp-single cmp-metrics; do
        dir="$scratch/$name"
        rows=$(cat "$dir/.rows")
        files=()
        for f in "$dir"/rank*.sqlite; do files+=("$(basename "$f")"); done
        if [ "${#files[@]}" -gt 1 ]; then
            n2p_args=(-t cuda_api_trace,mpi_event_trace -m "${files[@]}")
        elif [ "$name" = cmp-metrics ]; then
            n2p_args=(-t cuda_api_trace,gpu_metrics "${files[@]}")
        else
            n2p_args=(-t cuda_api_trace "${files[@]}")
        fi
        rm -f "$dir"/*_cuda_api_trace*.csv "$dir"/n2p.*
        log "nsys2prv on $name ($rows rows): nsys2prv ${n2p_args[*]} n2p (in $dir)"
        (
            cd "$dir"
            # (set -e does not apply inside a subshell on the left of ||)
            PATH="$standin_dir:$PATH" timed "$dir/n2p-time.txt" \
                "$venv/bin/nsys2prv" "${n2p_args[@]}" n2p > "$dir/n2p.log" 2>&1 || exit 1
            echo "$wall $cpu $rss_mb" > "$dir/n2p-result"
        ) || { log "nsys2prv failed on $name; see $dir/n2p.log"; tail -n 20 "$dir/n2p.log" >&2; continue; }
        read -r n_wall n_cpu n_rss < "$dir/n2p-result"
        n_lines=$(wc -l < "$dir/n2p.prv")
        standin_s=$(awk '/benchmark stand-in\): .* rows in/ { s += $(NF-1) } END { printf "%.2f", s }' "$dir/n2p.log")
        rm -f "$dir"/n2p.prv "$dir"/n2p.pcf "$dir"/n2p.row "$dir"/*_cuda_api_trace*.csv
        rows_md+=("| $name | $rows | nsys2prv ${n2p_version} (stand-in nsys: ${standin_s} s) | $n_wall | $n_cpu | $n_rss | $n_lines \
| $(rate "$rows" "$n_wall") | $(rate "$n_lines" "$n_wall") | $(rate "$n_lines" "$n_cpu") |")
        run_rs "$name" ""
        ratio=$(awk -v a="$n_wall" -v b="$rs_wall" 'BEGIN { if (b > 0) printf "%.0f", a / b; else print "-" }')
        cpu_ratio=$(awk -v a="$n_cpu" -v b="$rs_cpu" 'BEGIN { if (b > 0) printf "%.0f", a / b; else print "-" }')
        cmp_md+=("| $name | $rows | $n_wall | $n_rss | $n_lines | $rs_wall | $rs_rss | $rs_lines | ${ratio}x | ${cpu_ratio}x |")
    done
    n2p_note="nsys2prv ${n2p_version} from PyPI in a venv ($("$venv/bin/python" --version 2>&1), \
$("$venv/bin/pip" show pandas 2>/dev/null | awk '/^Version/ { print "pandas " $2 }')), \
with scripts/bench/nsys standing in for \`nsys stats -r cuda_api_trace\`."
fi

# ---------------------------------------------------------------- report
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
model=$(lscpu | awk -F': *' '/^Model name/ { print $2; exit }')
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
{
    echo "### Run of $(date -u '+%Y-%m-%d %H:%M UTC') ($tag)"
    echo
    echo "- Machine: $(nproc) cores, ${model:-unknown CPU}, $mem; $(uname -sr)"
    echo "- Load average (1, 5, 15 min) at start: $load_start; at end: $load_end"
    echo "- Built from commit: $commit; $(rustc --version 2>/dev/null || echo rustc unknown)"
    echo "- Command: \`scripts/bench.sh$([ "$quick" = 1 ] && echo ' --quick')$([ "$with_n2p" = 1 ] && echo ' --with-nsys2prv')\`"
    echo "- Inputs (nsys-synth, schema 3.24): $tag-multi = $(cat "$scratch/$tag-multi/.spec"); \
$tag-single = $(cat "$scratch/$tag-single/.spec"); \
$tag-metrics = $(cat "$scratch/$tag-metrics/.spec"); \
$tag-sampling = $(cat "$scratch/$tag-sampling/.spec"); $tag-nvtx = $(cat "$scratch/$tag-nvtx/.spec")"
    [ -n "$n2p_note" ] && echo "- $n2p_note"
    echo
    echo "| input | rows | tool | wall s | user+sys s | max RSS MB | .prv lines | M rows/s | M lines/s | M lines/s per CPU-s |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows_md[@]}"
    echo
    echo "CPU-only reports, input rows per CPU-second at -j 1 (sampling: samples, call-stack frames and context switches):"
    echo
    echo "| input | rows | user+sys s | M rows per CPU-s |"
    echo "|---|---:|---:|---:|"
    printf '%s\n' "${cpu_md[@]}"
    if [ "${#cmp_md[@]}" -gt 0 ]; then
        echo
        echo "Same input, nsys2prv vs nsys2prv-rs (default -j):"
        echo
        echo "| input | rows | nsys2prv wall s | nsys2prv RSS MB | nsys2prv lines | nsys2prv-rs wall s | nsys2prv-rs RSS MB | nsys2prv-rs lines | wall ratio | CPU-time ratio |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        printf '%s\n' "${cmp_md[@]}"
    fi
} | tee "$scratch/results.md"

# The report subcommand on a generated 1,024-rank job (scripts/bench-report.sh), when asked.
if [ "${NSYS2PRV_BENCH_REPORT:-0}" = 1 ]; then
    "$(dirname "$0")/bench-report.sh"
fi
