#!/usr/bin/env bash
# Writes the seeds of the fuzz target `parts` (fuzz/seeds/parts/): a sharded
# conversion's plan and part (`--shard 0/1`) of small sample exports, joined by
# the separator of `paraver_reader::fuzz_checks::SEPARATOR`. Run again when the
# plan or part format changes.
#
#   fuzz/seeds/make-parts.sh [NSYS2PRV_RS]   (default: cargo build's debug binary)
#
# The conversions run in a scratch directory on inputs named relatively, so that
# the seeds hold no path of the machine they were made on.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
tool=${1:-}
if [ -z "$tool" ]; then
    (cd "$root" && cargo build -q -p nsys2prv-rs)
    tool="$root/target/debug/nsys2prv-rs"
fi
out="$root/fuzz/seeds/parts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp "$root/samples/nothing/nothing.sqlite" "$root/samples/sched_only/sched_only.sqlite" "$scratch/"
# A fixed modification time (the plan records it): the same seeds every time.
touch -d @1735689600 "$scratch"/*.sqlite

# seed NAME INPUT...: plan and part of one shard over INPUT...
seed() {
    local name=$1
    shift
    rm -rf "$scratch/w"
    mkdir "$scratch/w"
    (cd "$scratch" && "$tool" --shard 0/1 "$@" w/t.prv >/dev/null 2>&1)
    {
        cat "$scratch/w/t.parts/plan"
        printf '\n%%%%nsys2prv-fuzz%%%%\n'
        cat "$scratch/w/t.parts/shard-0.part"
    } >"$out/$name"
    if grep -aq "$scratch" "$out/$name"; then
        echo "make-parts.sh: $name holds the scratch directory's path" >&2
        exit 1
    fi
}

mkdir -p "$out"
seed nothing nothing.sqlite
seed sched_only sched_only.sqlite
seed two_inputs nothing.sqlite sched_only.sqlite
ls -l "$out"
