#!/usr/bin/env bash
# Builds the binary users copy to a cluster: one static, stripped, reproducible file that needs
# nothing from the host (no glibc version to match on the login node).
#
# Usage (from anywhere): scripts/release.sh [--glibc] [--check-reproducible]
#
#   --glibc               build the fallback (below) even where musl is available
#   --check-reproducible  build a second time from a copy of the sources at another path, into
#                         another target directory, and fail unless both binaries are the same bytes
#
# The build: target x86_64-unknown-linux-musl with `--features mimalloc` (musl's own malloc is
# slow; musl's memcpy is replaced by the binary's own, see src/musl_memcpy.rs) and the `dist`
# profile (fat LTO, one codegen unit, stripped). The musl target is added
# with rustup and musl-gcc (for the bundled SQLite) installed with apt-get when missing. If that
# fails, the script says so and falls back to the gnu target with `-C target-feature=+crt-static`
# and glibc's malloc (as fast here, and less memory than mimalloc): also static, but glibc warns
# that static programs may need the host's NSS libraries for user and host name lookups
# (nsys2prv-rs does none).
#
# Reproducible: source paths are remapped (--remap-path-prefix, -ffile-prefix-map for C) to fixed
# names, SOURCE_DATE_EPOCH is the last commit's time, and the build is `--locked`; so the same
# commit and toolchain give the same bytes wherever the checkout lies.
#
# Output: $CARGO_TARGET_DIR (default target/)/static/nsys2prv-rs. The last stdout line is its
# absolute path; everything else goes to stderr. Checked before it is printed: the ELF file has no
# program interpreter, `ldd` calls it static, and it runs (`--version`).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MUSL=x86_64-unknown-linux-musl
GNU=x86_64-unknown-linux-gnu

say() { echo "[release.sh] $*" >&2; }
die() {
    say "FAILED: $*"
    exit 1
}

want_glibc=false
check_reproducible=false
for arg in "$@"; do
    case "$arg" in
        --glibc) want_glibc=true ;;
        --check-reproducible) check_reproducible=true ;;
        *) die "unknown argument '$arg' (usage: scripts/release.sh [--glibc] [--check-reproducible])" ;;
    esac
done

# Adds what the musl build needs; prints why not on failure.
ensure_musl() {
    if ! rustc --print target-list | grep -qx "$MUSL"; then
        echo "rustc does not know the target $MUSL"
        return 1
    fi
    if ! rustup target list --installed 2>/dev/null | grep -qx "$MUSL"; then
        command -v rustup >/dev/null || { echo "no rustup to add the target $MUSL"; return 1; }
        say "rustup target add $MUSL"
        rustup target add "$MUSL" >&2 || { echo "'rustup target add $MUSL' failed"; return 1; }
    fi
    if ! command -v musl-gcc >/dev/null; then
        if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
            echo "musl-gcc is missing (Debian: apt-get install musl-tools) and cannot be installed here"
            return 1
        fi
        say "apt-get install musl-tools"
        if ! apt-cache show musl-tools >/dev/null 2>&1; then
            apt-get -o DPkg::Lock::Timeout=900 update -qq >&2 || true
        fi
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
            --no-install-recommends musl-tools >&2 || { echo "'apt-get install musl-tools' failed"; return 1; }
    fi
}

if $want_glibc; then
    target=$GNU
    say "building the glibc fallback (--glibc)"
elif reason=$(ensure_musl); then
    target=$MUSL
else
    target=$GNU
    say "NOTE: cannot build for $MUSL: $reason"
    say "NOTE: falling back to $GNU with -C target-feature=+crt-static (static glibc)"
fi

cargo_home=${CARGO_HOME:-$HOME/.cargo}
# Same bytes across machines: no absolute path of this checkout or of cargo's registry, no date.
rustflags=(--remap-path-prefix="$ROOT=/build/nsys2prv-rs" --remap-path-prefix="$cargo_home=/build/cargo")
cflags="-ffile-prefix-map=$ROOT=/build/nsys2prv-rs -ffile-prefix-map=$cargo_home=/build/cargo"
features=(--features mimalloc)
if [ "$target" = "$GNU" ]; then
    rustflags+=(-C target-feature=+crt-static)
    features=()
fi
source_date_epoch=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)
# The commit `--version` names (build.rs), the same for the copy without .git; `-modified` when
# tracked files differ from it.
commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit=$commit-modified
fi

# build SRC_DIR TARGET_DIR: the dist build of SRC_DIR's sources; prints the binary's path.
build() {
    local src=$1 target_dir=$2 flags
    # Paths of this copy of the sources map to the same fixed name as the main checkout's.
    flags="${rustflags[*]//$ROOT/$src} --remap-path-prefix=$target_dir=/build/target"
    (
        cd "$src"
        export SOURCE_DATE_EPOCH=$source_date_epoch
        export NSYS2PRV_COMMIT=$commit
        export CARGO_TARGET_DIR=$target_dir
        export RUSTFLAGS=$flags
        export "CFLAGS_${target//-/_}=${cflags//$ROOT/$src} -ffile-prefix-map=$target_dir=/build/target"
        cargo build --locked --profile dist --target "$target" "${features[@]}" -p nsys2prv-rs >&2
    ) || return 1
    echo "$target_dir/$target/dist/nsys2prv-rs"
}

target_dir=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$target_dir"
target_dir=$(cd "$target_dir" && pwd)
say "cargo build --locked --profile dist --target $target ${features[*]}"
built=$(build "$ROOT" "$target_dir") || die "cargo build failed"

# Static: no program interpreter, and ldd agrees.
if readelf --program-headers "$built" | grep -q INTERP; then
    die "$built has a program interpreter: it is dynamically linked"
fi
ldd_out=$(ldd "$built" 2>&1 || true)
case "$ldd_out" in
    *"statically linked"* | *"not a dynamic executable"*) ;;
    *) die "ldd does not call $built static: $ldd_out" ;;
esac
"$built" --version >/dev/null || die "$built --version failed"

if $check_reproducible; then
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv-rs-repro.XXXXXX")
    trap 'rm -rf "$scratch"' EXIT
    say "reproducibility: a second build from a copy of the sources in $scratch"
    mkdir "$scratch/src"
    # The files git knows, with their uncommitted changes; not target/ or ignored files.
    git -C "$ROOT" ls-files -z --cached --others --exclude-standard >"$scratch/files" ||
        die "--check-reproducible needs a git checkout"
    while IFS= read -r -d '' file; do
        [ -e "$ROOT/$file" ] || continue # deleted, not yet committed
        mkdir -p "$scratch/src/$(dirname "$file")"
        cp -P "$ROOT/$file" "$scratch/src/$file"
    done <"$scratch/files"
    second=$(build "$scratch/src" "$scratch/target") || die "the second build failed"
    if ! cmp -s "$built" "$second"; then
        die "not reproducible: $built and $second differ ($(cmp "$built" "$second" | head -1))"
    fi
    say "reproducible: the second build is byte-identical ($(sha256sum "$built" | cut -d' ' -f1))"
fi

out_dir=$target_dir/static
mkdir -p "$out_dir"
cp "$built" "$out_dir/nsys2prv-rs.tmp"
mv -f "$out_dir/nsys2prv-rs.tmp" "$out_dir/nsys2prv-rs"
size=$(stat -c %s "$out_dir/nsys2prv-rs")
say "static binary for $target: $(awk -v b="$size" 'BEGIN { printf "%.1f MB (%d bytes)", b / 1e6, b }'), $ldd_out"
say "sha256 $(sha256sum "$out_dir/nsys2prv-rs" | cut -d' ' -f1)"
echo "$out_dir/nsys2prv-rs"
