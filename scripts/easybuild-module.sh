#!/usr/bin/env bash
# Builds and installs the EasyBuild module of nsys2prv-rs as a centre would: real EasyBuild
# (PyPI, the version pinned below) and Lmod (Debian), the easyconfig of contrib/easybuild with
# the checksum of the source archive that `scripts/release.sh --archives` made, built offline
# from its vendored crates with the host's Rust. Used by CI (tests/tests/all/install.rs loads the
# module in a fresh shell); docs/install.md tells centres how to do the same.
#
# Usage: scripts/easybuild-module.sh PREFIX [RELEASE_DIR]
#
#   PREFIX       EasyBuild's install prefix: the module lands in PREFIX/modules/all, the
#                software in PREFIX/software (made if missing)
#   RELEASE_DIR  where nsys2prv-rs-VERSION-src.tar.gz and nsys2prv-rs-VERSION.eb are
#                (default: $CARGO_TARGET_DIR or target/, then static/)
#
# Environment:
#   NSYS2PRV_EB_CACHE_DIR  a directory kept between runs (CI's): cargo's target directory of the
#                          build (CARGO_TARGET_DIR) and EasyBuild's build directory live there, at
#                          fixed paths, and EasyBuild's RPATH compiler wrappers (made afresh in a
#                          random directory every run, and named in RUSTFLAGS) are off; so cargo
#                          finds the vendored crates, which do not change from one commit to the
#                          next, already compiled, and builds only the workspace's crates.
#                          Unset: everything is built in a temporary directory, as a centre builds.
#
# EasyBuild and its easyblocks are installed with pip into a virtual environment under
# ${XDG_CACHE_HOME:-~/.cache}/nsys2prv-rs/ when missing; Lmod with apt-get when missing (root).
# EasyBuild refuses to run as root unless told to accept it; CI runs as root, so this script
# tells it to. The last stdout line is PREFIX; everything else goes to stderr.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "$0")/.." && pwd)
EASYBUILD_VERSION=5.4.1

say() { echo "[easybuild-module.sh] $*" >&2; }
die() {
    say "FAILED: $*"
    exit 1
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    die "usage: scripts/easybuild-module.sh PREFIX [RELEASE_DIR]"
fi
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
release_dir=${2:-${CARGO_TARGET_DIR:-$ROOT/target}/static}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
easyconfig=$release_dir/nsys2prv-rs-$version.eb
source_archive=$release_dir/nsys2prv-rs-$version-src.tar.gz
for file in "$easyconfig" "$source_archive"; do
    [ -f "$file" ] || die "no $file: make it with scripts/release.sh --archives"
done

# Lmod: Debian's, whose init script defines `module` and LMOD_CMD, which EasyBuild runs.
lmod_init=/usr/share/lmod/lmod/init/bash
if [ ! -f "$lmod_init" ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        die "Lmod is missing (Debian: apt-get install lmod) and cannot be installed here"
    fi
    say "apt-get install lmod"
    apt-cache show lmod >/dev/null 2>&1 || apt-get -o DPkg::Lock::Timeout=900 update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
        --no-install-recommends lmod >&2 || die "'apt-get install lmod' failed"
fi
# Lmod's scripts read unset variables.
set +u
# shellcheck source=/dev/null
. "$lmod_init"
set -u

# EasyBuild: the framework and its easyblocks (the generic Cargo easyblock); not the thousands
# of easyconfigs of easybuild-easyconfigs, which nothing here uses.
venv=${XDG_CACHE_HOME:-$HOME/.cache}/nsys2prv-rs/easybuild-$EASYBUILD_VERSION
# A venv's scripts name its path, so it is made in place; the marker says it is complete.
if [ ! -f "$venv/complete" ]; then
    say "pip install easybuild-framework==$EASYBUILD_VERSION easybuild-easyblocks==$EASYBUILD_VERSION into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" >&2 || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "easybuild-framework==$EASYBUILD_VERSION" "easybuild-easyblocks==$EASYBUILD_VERSION" >&2 ||
        die "pip install easybuild failed"
    touch "$venv/complete"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv-rs-easybuild.XXXXXX")
trap 'rm -rf "$work"' EXIT
build_path=$work/build
extra_args=()
if [ -n "${NSYS2PRV_EB_CACHE_DIR:-}" ]; then
    mkdir -p "$NSYS2PRV_EB_CACHE_DIR"
    cache=$(cd "$NSYS2PRV_EB_CACHE_DIR" && pwd)
    export CARGO_TARGET_DIR=$cache/target
    build_path=$cache/build
    extra_args+=(--disable-rpath)
    # Cargo takes a workspace crate for up to date when its files are older than what it built
    # last, and the source archive dates every file at its commit: a build of an older commit after
    # a newer one would keep the newer binary. So the workspace's crates always build again.
    members=$(cd "$ROOT" && cargo metadata --no-deps --format-version 1 --offline |
        python3 -c 'import json, sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')
    for member in $members; do
        rm -rf "$CARGO_TARGET_DIR/release/.fingerprint/$member"-*
    done
    say "cached build: cargo's target directory $CARGO_TARGET_DIR, EasyBuild's build path $build_path"
else
    unset CARGO_TARGET_DIR
fi

say "eb $(basename "$easyconfig") into $prefix"
eb_args=(
    "$easyconfig"
    --prefix="$prefix"
    --installpath="$prefix"
    --sourcepath="$release_dir"
    --buildpath="$build_path"
    --tmpdir="$work/tmp"
    --containerpath="$work/containers"
    --packagepath="$work/packages"
    --repositorypath="$work/ebfiles_repo"
    --modules-tool=Lmod
    --module-syntax=Lua
    --enforce-checksums
    --rebuild
    --allow-use-as-root-and-accept-consequences
    "${extra_args[@]}"
)
# The `eb` script looks for a python with EasyBuild on PATH unless told which.
export EB_PYTHON=$venv/bin/python
if ! "$venv/bin/eb" "${eb_args[@]}" >"$work/eb.out" 2>&1; then
    cat "$work/eb.out" >&2
    log=$(sed -n 's/.*Results of the build can be found in the log file(s) \(.*\)$/\1/p' "$work/eb.out" | tail -1)
    [ -z "$log" ] || [ ! -f "$log" ] || tail -n 60 "$log" >&2
    die "eb failed"
fi
cat "$work/eb.out" >&2
[ -f "$prefix/modules/all/nsys2prv-rs/$version.lua" ] || die "no module file $prefix/modules/all/nsys2prv-rs/$version.lua"
echo "$prefix"
