#!/usr/bin/env bash
# Fuzzing campaigns for the readers (see docs/development.md, "Fuzzing").
#
#   scripts/fuzz.sh TARGET [SECONDS] [JOBS]
#                                      run TARGET's campaign (default 600 s, 1 job)
#   scripts/fuzz.sh --cmin TARGET      minimise the campaign's corpus into fuzz/corpus/TARGET
#   scripts/fuzz.sh --list             the targets
#
# TARGET: pages (the SQLite page reader against SQLite), paraver (.prv/.pcf/.row
# through the validator and the report), parts (a sharded conversion's plan and
# part), config (BSC's --config TOML). Installs the nightly toolchain and
# cargo-fuzz when missing (fuzzing only: the product builds on stable).
#
# The campaign's corpus is fuzz/corpus-work/TARGET (not committed), started from
# the committed corpus fuzz/corpus/TARGET, the seeds fuzz/seeds/TARGET and the
# regressions fuzz/regressions/TARGET; inputs are cut at the target's length
# (max_len: small inputs keep the executions fast). Crashes land in fuzz/artifacts/TARGET/: make
# each one a file of fuzz/regressions/TARGET/ (replayed by `cargo test`) and fix it.
# The targets reaching unsafe code (pages: SQLite's C and our FFI) run under
# AddressSanitizer; the others without a sanitizer (no unsafe code on their path).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
self="$root/scripts/$(basename "$0")"
cd "$root/fuzz"
export CARGO_INCREMENTAL=0
TARGETS="pages paraver parts config"

usage() {
    sed -n '2,7p' "$self" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

sanitizer() {
    case "$1" in
    pages) echo address ;;
    *) echo none ;;
    esac
}

# cargo fuzz's flags for TARGET: its sanitizer, a build directory per
# sanitizer (the two builds do not overwrite each other), and the target's
# feature alone (its crates only: see fuzz/Cargo.toml).
fuzz_flags() {
    local san
    san=$(sanitizer "$1")
    case "$san" in
    address) echo "-s address --no-default-features --features $1" ;;
    *) echo "-s $san --target-dir target/$san --no-default-features --features $1" ;;
    esac
}

# The longest input of TARGET (libFuzzer's -max_len): a little above its
# largest seed. A longer one costs time per execution and reaches no more code
# (pages: small page sizes make small files with every structure; paraver:
# a trace's few records of each kind, a .pcf and a .row).
max_len() {
    case "$1" in
    pages | parts) echo 32768 ;;
    paraver) echo 16384 ;;
    config) echo 4096 ;;
    esac
}

known() {
    case " $TARGETS " in
    *" $1 "*) ;;
    *)
        echo "fuzz.sh: unknown target '$1' (targets: $TARGETS)" >&2
        exit 2
        ;;
    esac
}

tools() {
    if ! rustup toolchain list | grep -q '^nightly'; then
        rustup toolchain install nightly --profile minimal
    fi
    if ! cargo fuzz --version >/dev/null 2>&1; then
        cargo install cargo-fuzz
    fi
}

# Inputs the campaign starts from, beside its own corpus.
seed_dirs() {
    local target=$1 dirs=()
    [ -d "corpus/$target" ] && dirs+=("corpus/$target")
    [ -d "seeds/$target" ] && dirs+=("seeds/$target")
    [ -d "regressions/$target" ] && dirs+=("regressions/$target")
    echo "${dirs[@]}"
}

case "${1:-}" in
--list)
    echo "$TARGETS"
    ;;
--cmin)
    target=${2:-}
    [ -n "$target" ] || usage
    known "$target"
    tools
    work="corpus-work/$target"
    [ -d "$work" ] || { echo "fuzz.sh: no campaign corpus $work: run a campaign first" >&2; exit 1; }
    # Merge the campaign's corpus and the committed one into a fresh minimal set.
    rm -rf "corpus-work/$target-min"
    mkdir -p "corpus-work/$target-min"
    cargo +nightly fuzz run $(fuzz_flags "$target") "$target" "corpus-work/$target-min" \
        "$work" $(seed_dirs "$target") -- -merge=1 -rss_limit_mb=2048 -timeout=30 \
        -max_len="$(max_len "$target")"
    # Committed: inputs of at most 64 KB (the replay stays a few seconds).
    rm -rf "corpus/$target"
    mkdir -p "corpus/$target"
    find "corpus-work/$target-min" -type f -size -65k -exec cp -t "corpus/$target" {} +
    echo "corpus/$target: $(find "corpus/$target" -type f | wc -l) files, $(du -sh "corpus/$target" | cut -f1)"
    ;;
"" | -h | --help)
    usage
    ;;
*)
    target=$1
    seconds=${2:-600}
    jobs=${3:-1}
    known "$target"
    tools
    mkdir -p "corpus-work/$target" "artifacts/$target"
    # JOBS worker processes (one by default: the machine may be shared), which
    # libFuzzer restarts after a crash so that the campaign goes on; its last
    # lines give the executions, coverage (cov:, ft:) and crashes (each input
    # under artifacts/TARGET/).
    cargo +nightly fuzz run $(fuzz_flags "$target") "$target" "corpus-work/$target" \
        $(seed_dirs "$target") -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        -max_len="$(max_len "$target")" \
        -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -artifact_prefix="artifacts/$target/"
    ;;
esac
