#!/usr/bin/env bash
# Installs BSC's Python nsys2prv (0.6.0rc1 and 0.5.8, from PyPI) into virtual environments
# under a cache directory, with each version's views (`cfgs/`, taken from its sdist), for the
# differential test `tests/tests/all/bsc_views.rs`. Reused across runs; prints the cache
# directory as the last line of stdout (everything else goes to stderr):
#
#   BSC_NSYS2PRV=$(scripts/bsc-nsys2prv.sh | tail -1)
#
# Layout: $DIR/<version>/venv/bin/nsys2prv, $DIR/<version>/cfgs/**.cfg, $DIR/<version>/.ok.
# DIR: $BSC_NSYS2PRV_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/nsys2prv-rs-bsc.
# PYTHON: the interpreter for the venvs (default python3; nsys2prv 0.6 needs 3.10+).
#
# BSC's views are GPL-3.0 files of BSC's package: they are downloaded here at test time and
# never copied into this repository.
set -euo pipefail

VERSIONS=(0.6.0rc1 0.5.8)
PYTHON=${PYTHON:-python3}
cache=${BSC_NSYS2PRV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nsys2prv-rs-bsc}

log() { echo "[bsc-nsys2prv.sh] $*" >&2; }

mkdir -p "$cache"
# Two runs at once (two test runs, CI and a developer) must not build one venv together.
exec 9>"$cache/.lock"
flock 9

install() {
    local version=$1 dir=$cache/$1
    if [ -f "$dir/.ok" ] && "$dir/venv/bin/python" -c 'import nsys2prv' 2>/dev/null; then
        log "nsys2prv $version: cached in $dir"
        return
    fi
    log "nsys2prv $version: installing into $dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    "$PYTHON" -m venv "$dir/venv"
    "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "nsys2prv==$version" >&2
    # The wheel has no cfgs/; the sdist has them.
    local sdist
    sdist=$(mktemp -d)
    "$dir/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
        --no-binary :all: --dest "$sdist" "nsys2prv==$version" >&2
    local archive
    archive=$(find "$sdist" -maxdepth 1 -name 'nsys2prv-*.tar.gz' | head -1)
    [ -n "$archive" ] || { log "no sdist of nsys2prv $version downloaded"; exit 1; }
    tar -xzf "$archive" -C "$sdist"
    local cfgs
    cfgs=$(find "$sdist" -mindepth 2 -maxdepth 2 -type d -name cfgs | head -1)
    [ -n "$cfgs" ] || { log "the sdist of nsys2prv $version has no cfgs/"; exit 1; }
    cp -r "$cfgs" "$dir/cfgs"
    rm -rf "$sdist"
    local views
    views=$(find "$dir/cfgs" -name '*.cfg' | wc -l)
    log "nsys2prv $version: $views views in $dir/cfgs"
    touch "$dir/.ok"
}

for version in "${VERSIONS[@]}"; do
    install "$version"
done
echo "$cache"
