#!/usr/bin/env bash
# End-to-end benchmark of the release binary on synthetic Nsight Systems exports shaped like
# real jobs, and optionally of BSC's Python nsys2prv 0.5.8 on the same inputs. Prints a
# Markdown report (machine, date, commit, load, figures) to paste into BENCHMARKS.md.
#
# Usage (from the repository root):
#   scripts/bench.sh [--quick] [--with-nsys2prv] [--shapes LIST] [--dir DIR] [--regen]
#
#   --quick          smaller inputs (about a fifth; scale shapes much smaller): a few minutes
#   --with-nsys2prv  also time BSC's nsys2prv 0.5.8 (installed with pip into a venv under the
#                    scratch dir) on every mix shape; the ratios come from the same run
#   --shapes LIST    comma-separated shapes to run (default: all; see below)
#   --dir DIR        scratch dir for inputs, outputs and the venv
#                    (default: ${TMPDIR:-/tmp}/nsys2prv-bench; inputs are reused if present)
#   --regen          regenerate the inputs even if present
#
# Environment: CARGO_TARGET_DIR (default: target), CARGO (default: cargo);
#   NSYS2PRV_STATIC_BIN=/path/to/static/nsys2prv-rs also times that binary next to the dynamic
#   one on `training` and `one-10M` (the release build: NSYS2PRV_STATIC_BIN=$(scripts/release.sh
#   | tail -n 1));
#   NSYS2PRV_BENCH_REPORT=1 also runs scripts/bench-report.sh (the report subcommand).
#
# Shapes (nsys-synth, schema 3.24; rows are input rows, full size):
#   mix shapes, sized so that nsys2prv finishes in minutes, run by both tools:
#     training     4 ranks x 250k: data-parallel training loop (12 layers, NVTX 4 deep,
#                  NCCL all-reduce per bucket with JSON payloads, copies, syncs, 300 kernel
#                  names) plus an MPI ring (Send/Recv, Allreduce, Barrier)
#     nvtx-deep    1 x 400k: training, NVTX 10 deep and 3 view-operator ranges per operator
#     nccl-heavy   4 x 100k: training, 2 layers and 64 NCCL buckets per step
#     mpi-p2p      8 ranks on 2 hosts: Isend/Irecv/Waitall/Bcast, 12k iterations each
#     threads      1 x 400k: 64 CPU threads calling CUDA, random operations
#     long-names   1 x 400k: training with 20,000 distinct kernel names (nsys2prv-rs with
#                  --kernel-names demangled; nsys2prv uses short names)
#     graphs       2 x 200k: random operations plus 60k cudaGraphLaunch each (graph trace)
#     gpu-metrics  8 ranks on one 8-GPU node: training, each rank's GPU sampled at 10 kHz
#   scale shapes, nsys2prv-rs only (nsys2prv would need hours and ~0.9 GB per million rows):
#     one-10M      1 x 10M rows of training
#     64x200k      64 ranks x 200k rows of training on 8 hosts, MPI ring
#     1024-small   1,024 ranks x ~1.5k rows (one training step) on 32 hosts
#     cpu-sampling a CPU-only report, 2 threads x 500k CPU samples with call stacks (one in
#                  four, 15-30 frames) and their context switches: about 7.7M rows
#     cpu-nvtx     a CPU-only report of 7M NVTX ranges (3 deep): the cost per row of
#                  cpu-sampling against NVTX's (BENCHMARKS.md)
#   Extra runs: -j 1 on training, one-10M, cpu-sampling and cpu-nvtx; a .prv.gz output of
#   training and one-10M; --memory-limit 256M and 1G on the two largest inputs (peak RSS
#   against the limit).
#
# Each run is timed with /usr/bin/time -v (wall, user+sys, max RSS); nsys2prv-rs runs three times
# right after nsys2prv on the same input (the median wall and CPU times and the largest RSS are
# reported, with the three walls), other runs once. The table shows the
# 1-minute load average when the run started, the .prv's lines and bytes, input rows per
# wall second and per CPU second (user+sys). nsys2prv is run the way it must be (from the
# reports' directory, -t with the categories the shape has, -m for several reports), with
# scripts/bench/nsys standing in for `nsys stats -r cuda_api_trace`; its time includes the
# stand-in's CSV export (its share is shown). nsys2prv-rs translates more (states, syncs, MPI
# messages, launch arrows), so it writes more lines and the ratios are conservative.
#
# One run per configuration, on whatever machine this is: on a shared machine compare the
# ratios of one run, not absolute numbers across runs.
set -euo pipefail

quick=0
with_n2p=0
regen=0
only=""
scratch="${TMPDIR:-/tmp}/nsys2prv-bench"

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --with-nsys2prv) with_n2p=1 ;;
        --regen) regen=1 ;;
        --shapes) shift; [ $# -gt 0 ] || usage; only=",$1," ;;
        --dir) shift; [ $# -gt 0 ] || usage; scratch=$1 ;;
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
static_bin=${NSYS2PRV_STATIC_BIN:-}
if [ -n "$static_bin" ] && [ ! -x "$static_bin" ]; then
    echo "bench.sh: NSYS2PRV_STATIC_BIN=$static_bin is not an executable" >&2
    exit 2
fi

log() { echo "bench: $*" >&2; }

# ---------------------------------------------------------------- shapes
# shape NAME KIND N2P_CATEGORIES RS_ARGS -- SYNTH_ARGS (full) -- SYNTH_ARGS (quick)
# KIND: mix (both tools) or scale (nsys2prv-rs only). N2P_CATEGORIES: nsys2prv's -t list.
shape_names=()
declare -A shape_kind shape_n2p shape_rs shape_synth
shape() {
    local name=$1 kind=$2 n2p=$3 rs=$4
    shift 4
    [ "$1" = -- ] || { echo "bench.sh: bad shape $name" >&2; exit 2; }
    shift
    local full=() small=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do full+=("$1"); shift; done
    shift
    small=("$@")
    if [ -n "$only" ] && [[ "$only" != *",$name,"* ]]; then
        return
    fi
    shape_names+=("$name")
    shape_kind[$name]=$kind
    shape_n2p[$name]=$n2p
    shape_rs[$name]=$rs
    if [ "$quick" = 1 ]; then
        shape_synth[$name]="${small[*]}"
    else
        shape_synth[$name]="${full[*]}"
    fi
}

train="--training --streams 4"
nvtx_cats=cuda_api_trace,nvtx_pushpop_trace,nccl
shape training mix "$nvtx_cats,mpi_event_trace" "" \
    -- --ranks 4 --rows 250000 $train --mpi ring --mpi-iterations 20 \
    -- --ranks 4 --rows 50000 $train --mpi ring --mpi-iterations 20
shape nvtx-deep mix "$nvtx_cats,nvtx_startend_trace" "" \
    -- --ranks 1 --rows 400000 $train --nvtx-depth 10 --cpu-ops 3 \
    -- --ranks 1 --rows 80000 $train --nvtx-depth 10 --cpu-ops 3
shape nccl-heavy mix "$nvtx_cats" "" \
    -- --ranks 4 --rows 100000 $train --layers 2 --buckets 64 \
    -- --ranks 4 --rows 20000 $train --layers 2 --buckets 64
shape mpi-p2p mix cuda_api_trace,mpi_event_trace "" \
    -- --ranks 8 --hosts 2 --rows 10000 --mpi nonblocking --mpi-iterations 12000 \
    -- --ranks 8 --hosts 2 --rows 2000 --mpi nonblocking --mpi-iterations 2400
shape threads mix cuda_api_trace "" \
    -- --ranks 1 --rows 400000 --threads 64 --streams 4 \
    -- --ranks 1 --rows 80000 --threads 64 --streams 4
shape long-names mix "$nvtx_cats,nvtx_startend_trace" "--kernel-names demangled" \
    -- --ranks 1 --rows 400000 $train --kernel-names 20000 \
    -- --ranks 1 --rows 80000 $train --kernel-names 4000
shape graphs mix cuda_api_trace,graphs "" \
    -- --ranks 2 --rows 100000 --streams 4 --graph-launches 60000 \
    -- --ranks 2 --rows 20000 --streams 4 --graph-launches 12000
shape gpu-metrics mix "$nvtx_cats,gpu_metrics" "" \
    -- --ranks 8 --gpus-per-host 8 --rows 20000 $train --gpu-metric-samples 5000 \
    -- --ranks 8 --gpus-per-host 8 --rows 4000 $train --gpu-metric-samples 1000
shape one-10M scale "" "" \
    -- --ranks 1 --rows 10000000 $train \
    -- --ranks 1 --rows 2000000 $train
shape 64x200k scale "" "" \
    -- --ranks 64 --hosts 8 --rows 200000 $train --mpi ring \
    -- --ranks 16 --hosts 4 --rows 100000 $train --mpi ring
shape 1024-small scale "" "" \
    -- --ranks 1024 --hosts 32 --rows 1500 $train --layers 12 \
    -- --ranks 256 --hosts 8 --rows 1500 $train --layers 12
shape cpu-sampling scale "" "" \
    -- --ranks 1 --rows 0 --threads 2 --cpu-samples 500000 \
    -- --ranks 1 --rows 0 --threads 2 --cpu-samples 100000
shape cpu-nvtx scale "" "" \
    -- --ranks 1 --rows 0 --threads 2 --nvtx-ranges 3500000 \
    -- --ranks 1 --rows 0 --threads 2 --nvtx-ranges 700000

if [ "${#shape_names[@]}" = 0 ]; then
    echo "bench.sh: no shape matches --shapes ${only//,/ }" >&2
    exit 2
fi

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
# gen NAME: generates $scratch/NAME with nsys-synth unless it is there with the same
# arguments; leaves the total row count in $scratch/NAME/.rows.
gen() {
    local name=$1
    local dir="$scratch/$name"
    local spec="--schema 3.24 ${shape_synth[$name]}"
    if [ "$regen" = 0 ] && [ -f "$dir/.spec" ] && [ "$(cat "$dir/.spec")" = "$spec" ] \
        && [ -f "$dir/.rows" ]; then
        log "reusing $dir ($(cat "$dir/.rows") rows)"
        return
    fi
    rm -rf "$dir"
    log "generating $dir: nsys-synth $spec"
    local out
    # shellcheck disable=SC2086 # the spec is a list of arguments
    out=$("$synth" $spec --out "$dir" | tail -n 1)
    echo "$out" >&2
    # "N file(s), R rows in S s (...)"
    echo "$out" | awk '{ for (i = 1; i <= NF; i++) if ($(i+1) == "rows") { print $i; exit } }' \
        > "$dir/.rows"
    echo "$spec" > "$dir/.spec"
}

for name in "${shape_names[@]}"; do gen "$name"; done

# ---------------------------------------------------------------- timing
# timed OUTFILE CMD...: runs CMD under /usr/bin/time -v; sets wall, cpu (user+sys), rss_mb
# and load (1-minute load average when it started).
timed() {
    local tfile=$1; shift
    local rc=0
    load=$(cut -d' ' -f1 /proc/loadavg)
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
# ratio A B: A / B, 2 significant digits (whole numbers from 10 on).
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (b <= 0) { print "-"; exit }
        r = a / b; fmt = r >= 10 ? "%.0f" : "%.2g"; printf fmt, r }'
}

rows_md=()
declare -A rs_wall_of rs_cpu_of rs_rss_of rs_lines_of

# median VALUES...: the middle value (the lower middle of an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# run_rs NAME LABEL [BIN=path] ARGS...: times nsys2prv-rs on input NAME ($repeat times, the
# median wall and CPU times and the largest RSS reported); adds a table row and sets
# rs_wall/rs_cpu/rs_rss/rs_lines. A LABEL of "-> .prv.gz" writes a gzip trace.
repeat=1
run_rs() {
    local name=$1 label=$2; shift 2
    local exe=$tool
    case "${1:-}" in BIN=*) exe=${1#BIN=}; shift ;; esac
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
    local walls=() cpus=() rss_max=0 load_first="" r
    for ((r = 1; r <= repeat; r++)); do
        log "nsys2prv-rs $label on $name ($rows rows)$([ "$repeat" -gt 1 ] && echo ", run $r of $repeat")"
        rm -rf "$scratch/out-rs/$name".*
        # shellcheck disable=SC2086 # per-shape arguments are a list
        timed "$scratch/out-rs/time.txt" "$exe" -q ${shape_rs[$name]} "$@" "$dir" "$out"
        walls+=("$wall"); cpus+=("$cpu")
        [ "$rss_mb" -gt "$rss_max" ] && rss_max=$rss_mb
        [ -n "$load_first" ] || load_first=$load
    done
    wall=$(median "${walls[@]}"); cpu=$(median "${cpus[@]}"); rss_mb=$rss_max; load=$load_first
    local lines bytes
    case "$out" in
        *.gz) lines=$(gzip -dc "$out" | wc -l); bytes=$(gzip -dc "$out" | wc -c) ;;
        *) lines=$(wc -l < "$out"); bytes=$(wc -c < "$out") ;;
    esac
    rm -rf "$scratch/out-rs/$name".*
    rs_wall=$wall; rs_cpu=$cpu; rs_rss=$rss_mb; rs_lines=$lines
    local tool_label="nsys2prv-rs ${label:-(default -j)}"
    [ "$repeat" -gt 1 ] && tool_label="$tool_label, median of $repeat (walls ${walls[*]})"
    rows_md+=("| $name | $rows | $tool_label | $load | $wall | $cpu | $rss_mb | $lines \
| $(awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 1e6 }') | $(rate "$rows" "$wall") | $(rate "$rows" "$cpu") |")
}

# ---------------------------------------------------------------- nsys2prv
if [ "$with_n2p" = 1 ]; then
    venv="$scratch/venv"
    if [ ! -x "$venv/bin/nsys2prv" ]; then
        log "installing nsys2prv 0.5.8 into $venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q nsys2prv==0.5.8 >&2
    fi
    n2p_version=$("$venv/bin/pip" show nsys2prv 2>/dev/null | awk '/^Version/ { print $2 }')
fi
standin_dir="$repo/scripts/bench"

# run_n2p NAME: times nsys2prv on input NAME; adds a table row; sets n_wall/n_cpu/n_rss/n_lines.
# Returns 1 (after logging why) when nsys2prv fails on it.
run_n2p() {
    local name=$1
    local dir="$scratch/$name" rows files=() n2p_args
    rows=$(cat "$dir/.rows")
    for f in "$dir"/rank*.sqlite; do files+=("$(basename "$f")"); done
    n2p_args=(-t "${shape_n2p[$name]}")
    [ "${#files[@]}" -gt 1 ] && n2p_args+=(-m)
    rm -f "$dir"/*_cuda_api_trace*.csv "$dir"/n2p.*
    log "nsys2prv on $name ($rows rows): nsys2prv ${n2p_args[*]} (${#files[@]} files) n2p (in $dir)"
    if ! (
        cd "$dir"
        PATH="$standin_dir:$PATH" timed "$dir/n2p-time.txt" \
            "$venv/bin/nsys2prv" "${n2p_args[@]}" "${files[@]}" n2p > "$dir/n2p.log" 2>&1 || exit 1
        echo "$wall $cpu $rss_mb $load" > "$dir/n2p-result"
    ); then
        log "nsys2prv failed on $name; see $dir/n2p.log"
        tail -n 5 "$dir/n2p.log" >&2
        rows_md+=("| $name | $rows | nsys2prv ${n2p_version} | | failed: $(tail -n 1 "$dir/n2p.log" | cut -c1-80) | | | | | | |")
        return 1
    fi
    read -r n_wall n_cpu n_rss n_load < "$dir/n2p-result"
    n_lines=$(wc -l < "$dir/n2p.prv")
    local n_bytes standin_s
    n_bytes=$(wc -c < "$dir/n2p.prv")
    standin_s=$(awk '/benchmark stand-in\): .* rows in/ { s += $(NF-1) } END { printf "%.2f", s }' "$dir/n2p.log")
    rm -f "$dir"/n2p.prv "$dir"/n2p.pcf "$dir"/n2p.row "$dir"/*_cuda_api_trace*.csv
    rows_md+=("| $name | $rows | nsys2prv ${n2p_version} (stand-in nsys: ${standin_s} s) | $n_load | $n_wall | $n_cpu | $n_rss | $n_lines \
| $(awk -v b="$n_bytes" 'BEGIN { printf "%.0f", b / 1e6 }') | $(rate "$rows" "$n_wall") | $(rate "$rows" "$n_cpu") |")
}

# ---------------------------------------------------------------- runs
cmp_md=()
largest=()
for name in "${shape_names[@]}"; do
    if [ "$with_n2p" = 1 ] && [ "${shape_kind[$name]}" = mix ] && run_n2p "$name"; then
        # Right after nsys2prv, three times: the machine's speed drifts over minutes,
        # and the median of three runs of a second or less is steadier than one.
        repeat=3 run_rs "$name" ""
        cmp_md+=("| $name | $(cat "$scratch/$name/.rows") | $n_wall | $n_rss | $n_lines | $rs_wall | $rs_rss | $rs_lines \
| **$(ratio "$n_wall" "$rs_wall")x** | $(ratio "$n_cpu" "$rs_cpu")x | $(ratio "$rs_lines" "$n_lines") |")
    else
        run_rs "$name" ""
    fi
    case "$name" in
        training|one-10M)
            run_rs "$name" "-j 1" -j 1
            run_rs "$name" "-> .prv.gz"
            if [ -n "$static_bin" ]; then
                run_rs "$name" "static ($(basename "$static_bin"))" "BIN=$static_bin"
                # The dynamic binary again, right after, for a side-by-side ratio.
                run_rs "$name" "(default -j, again)"
            fi
            ;;
        cpu-sampling|cpu-nvtx) run_rs "$name" "-j 1" -j 1 ;;
    esac
    case "$name" in one-10M|64x200k) largest+=("$name") ;; esac
done
for name in "${largest[@]}"; do
    run_rs "$name" "--memory-limit 256M" --memory-limit 256M
    run_rs "$name" "--memory-limit 1G" --memory-limit 1G
done

# ---------------------------------------------------------------- report
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
model=$(lscpu | awk -F': *' '/^Model name/ { print $2; exit }')
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
{
    echo "### Run of $(date -u '+%Y-%m-%d %H:%M UTC') ($([ "$quick" = 1 ] && echo quick || echo full))"
    echo
    echo "- Machine: $(nproc) cores, ${model:-unknown CPU}, $mem; $(uname -sr)"
    echo "- Load average (1, 5, 15 min) at start: $load_start; at end: $load_end"
    echo "- Built from commit: $commit; $(rustc --version 2>/dev/null || echo rustc unknown)"
    echo "- Command: \`scripts/bench.sh$([ "$quick" = 1 ] && echo ' --quick')$([ "$with_n2p" = 1 ] && echo ' --with-nsys2prv')$([ -n "$only" ] && echo " --shapes ${only:1:${#only}-2}")\`"
    echo "- Inputs (nsys-synth):"
    for name in "${shape_names[@]}"; do
        echo "  - $name: \`$(cat "$scratch/$name/.spec")\`$([ -n "${shape_rs[$name]}" ] && echo "; nsys2prv-rs ${shape_rs[$name]}")"
    done
    [ "$with_n2p" = 1 ] && echo "- nsys2prv ${n2p_version} from PyPI in a venv ($("$venv/bin/python" --version 2>&1), \
$("$venv/bin/pip" show pandas 2>/dev/null | awk '/^Version/ { print "pandas " $2 }')), \
with scripts/bench/nsys standing in for \`nsys stats -r cuda_api_trace\`."
    [ -n "$static_bin" ] && echo "- Static binary: $static_bin ($(du -m "$static_bin" | cut -f1) MB; $(file -b "$static_bin" | cut -d, -f1-2))"
    echo
    echo "| input | rows | tool | load | wall s | user+sys s | max RSS MB | .prv lines | .prv MB | M rows/s | M rows per CPU-s |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows_md[@]}"
    if [ "${#cmp_md[@]}" -gt 0 ]; then
        echo
        echo "Same input, nsys2prv vs nsys2prv-rs (default -j), from the runs above:"
        echo
        echo "| input | rows | nsys2prv wall s | nsys2prv RSS MB | nsys2prv lines | nsys2prv-rs wall s | nsys2prv-rs RSS MB | nsys2prv-rs lines | wall ratio | CPU-time ratio | lines ratio |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        printf '%s\n' "${cmp_md[@]}"
    fi
} | tee "$scratch/results.md"

# The report subcommand on a generated 1,024-rank job (scripts/bench-report.sh), when asked.
if [ "${NSYS2PRV_BENCH_REPORT:-0}" = 1 ]; then
    "$(dirname "$0")/bench-report.sh"
fi
