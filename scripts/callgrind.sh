#!/usr/bin/env bash
# Instruction counts (valgrind callgrind) of nsys2prv-rs binaries on small benchmark inputs:
# reproducible to about 0.01 % on a busy shared machine, where wall and CPU times are not, so
# this is how to compare a change before and after (speed itself is measured by bench.sh).
#
# Usage (from the repository root):
#   scripts/callgrind.sh [--dir DIR] [--top N] [BINARY...]
#
#   BINARY...   binaries to compare (default: target/release/nsys2prv-rs, built first); the
#               first is the reference of the ratios, e.g.
#               scripts/callgrind.sh /work/bin/nsys2prv-rs-base target/release/nsys2prv-rs
#   --dir DIR   scratch dir (default: ${TMPDIR:-/tmp}/nsys2prv-callgrind); inputs are reused
#   --top N     also list the N functions with the most instructions (self) of each run
#
# Inputs (nsys-synth, schema 3.24, the bench.sh shapes at small size), all run with -j 1:
#   training   4 ranks x 25k rows of the training loop, MPI ring
#   nvtx-deep  1 x 20k rows of training, NVTX 10 deep, 3 view-operator ranges per operator
#   many-64    64 reports of one training step each (per-report costs)
# Prints instructions per input and per input row, and each binary's ratio to the first.
set -euo pipefail

scratch="${TMPDIR:-/tmp}/nsys2prv-callgrind"
top=0
bins=()
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) shift; scratch=$1 ;;
        --top) shift; top=$1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
        -*) echo "callgrind.sh: unknown option $1" >&2; exit 2 ;;
        *) bins+=("$1") ;;
    esac
    shift
done

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
command -v valgrind > /dev/null || { echo "callgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
target_dir=${CARGO_TARGET_DIR:-target}
case "$target_dir" in /*) ;; *) target_dir="$repo/$target_dir" ;; esac
"${CARGO:-cargo}" build --release -q -p nsys2prv-rs -p nsys-synth >&2
[ "${#bins[@]}" -gt 0 ] || bins=("$target_dir/release/nsys2prv-rs")
mkdir -p "$scratch"

declare -A spec=(
    [training]="--ranks 4 --rows 25000 --training --streams 4 --mpi ring --mpi-iterations 20"
    [nvtx-deep]="--ranks 1 --rows 20000 --training --streams 4 --nvtx-depth 10 --cpu-ops 3"
    [many-64]="--ranks 64 --hosts 4 --rows 1500 --training --streams 4"
)
inputs=(training nvtx-deep many-64)
for name in "${inputs[@]}"; do
    dir="$scratch/$name"
    want="--schema 3.24 ${spec[$name]}"
    if [ ! -f "$dir/.spec" ] || [ "$(cat "$dir/.spec")" != "$want" ]; then
        rm -rf "$dir"
        # shellcheck disable=SC2086 # the spec is a list of arguments
        "$target_dir/release/nsys-synth" $want --out "$dir" | tail -n 1 \
            | awk '{ for (i = 1; i <= NF; i++) if ($(i+1) == "rows") print $i }' > "$scratch/$name.rows"
        echo "$want" > "$dir/.spec"
    fi
done

echo "| input | rows | binary | instructions | per row | ratio to first |"
echo "|---|---:|---|---:|---:|---:|"
for name in "${inputs[@]}"; do
    rows=$(cat "$scratch/$name.rows")
    first=""
    for bin in "${bins[@]}"; do
        out="$scratch/out.prv"
        cg="$scratch/$name.$(basename "$bin").callgrind"
        rm -rf "$scratch"/out.*
        valgrind --tool=callgrind --callgrind-out-file="$cg" "$bin" -q -j 1 "$scratch/$name" "$out" \
            2> "$cg.log" || { echo "callgrind.sh: $bin failed on $name, see $cg.log" >&2; exit 1; }
        rm -rf "$scratch"/out.*
        ir=$(awk '/I   refs:/ { gsub(",", "", $NF); print $NF }' "$cg.log")
        [ -n "$first" ] || first=$ir
        echo "| $name | $rows | $bin | $ir | $(awk -v i="$ir" -v r="$rows" 'BEGIN { printf "%.0f", i / r }') \
| $(awk -v a="$ir" -v b="$first" 'BEGIN { printf "%.3f", a / b }') |"
        if [ "$top" -gt 0 ]; then
            # awk reads to the end: `head` would close the pipe, and pipefail stop the script.
            callgrind_annotate --inclusive=no "$cg" 2> /dev/null \
                | awk -v top="$top" '/file:function/ { on = 1; next } on && NF && n++ < top' \
                | sed 's/^/    /' >&2
        fi
    done
done
