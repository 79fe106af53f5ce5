#!/usr/bin/env bash
# Builds what users copy to a cluster: static, stripped, reproducible binaries that need nothing
# from the host (no glibc version to match on the login node), for x86-64 and aarch64 (Grace
# Hopper and Grace Blackwell login nodes), and with --archives the release archives around them.
#
# Usage (from anywhere):
#   scripts/release.sh [--target x86_64|aarch64]... [--all] [--archives] [--glibc] [--check-reproducible]
#
#   --target T            build for T: x86_64 (the default) or aarch64, or their full target names
#                         (x86_64-unknown-linux-musl, aarch64-unknown-linux-musl); may be repeated
#   --all                 both targets, with --archives
#   --archives            also the release archives (see "Archives" below)
#   --glibc               x86_64: build the fallback (below) even where musl is available
#   --check-reproducible  build a second time from a copy of the sources at another path, into
#                         another target directory (TARGET_DIR/reproducibility), and fail unless
#                         both binaries (and with --archives every archive, made again around
#                         the second binaries from the checkout's files) are the same bytes
#
# The build: target x86_64-unknown-linux-musl with `--features mimalloc` (musl's own malloc is
# slow; musl's memcpy is replaced by the binary's own, see crates/musl-memcpy) and the `dist`
# profile (fat LTO, one codegen unit, stripped). The musl target is added
# with rustup and musl-gcc (for the bundled SQLite) installed with apt-get when missing. If that
# fails, the script says so and falls back to the gnu target with `-C target-feature=+crt-static`
# and glibc's malloc (as fast here, and less memory than mimalloc): also static, but glibc warns
# that static programs may need the host's NSS libraries for user and host name lookups
# (nsys2prv-rs does none).
#
# aarch64-unknown-linux-musl is cross-built, same features and profile, with `cargo zigbuild`:
# Zig's `zig cc` compiles the bundled SQLite and mimalloc for aarch64 with musl's headers, which it
# carries for every target (Debian's cross gcc targets aarch64 glibc, whose headers do not match
# the musl libc the binary links). Both come from PyPI (ziglang, cargo-zigbuild) at the versions
# pinned below, installed with pip into ${XDG_CACHE_HOME:-~/.cache}/nsys2prv-rs/ (no root needed);
# the Rust target is added with rustup. The aarch64 binary is run (--version, and the man page and
# completions of its archive) under qemu-user (Debian: qemu-user-static, installed with apt-get
# when missing) unless the host is aarch64.
#
# Reproducible: the paths of cargo's registry and target directory are remapped
# (--remap-path-prefix, -ffile-prefix-map for C) to fixed names, SOURCE_DATE_EPOCH is 0 for the
# compilers (a commit's time would stay in C objects a kept target directory reuses) and the last
# commit's time for the archives' files, and the build is `--locked`; so the same commit and
# toolchain give the same bytes wherever the checkout lies. The commit that `--version` prints is
# passed in NSYS2PRV_COMMIT, so the copy built by --check-reproducible (which has no .git) prints
# the same.
#
# Output, in $CARGO_TARGET_DIR (default target/)/static/:
#   TARGET/nsys2prv-rs                          the binary for each target built
# and with --archives (layout: docs/install.md):
#   nsys2prv-rs-VERSION-TARGET.tar.gz           binary, man page, completions, views, docs, licences
#   nsys2prv-rs-VERSION-src.tar.gz              the sources with every crate vendored (builds offline)
#   nsys2prv-rs-VERSION.eb                      contrib/easybuild's easyconfig with the source's checksum
#   SHA256SUMS                                  over the archives (sha256sum -c SHA256SUMS)
# Stdout lists the binaries' absolute paths, one per line in the order x86_64, aarch64 (so with
# one target the last line is its binary), then the archives, the easyconfig and SHA256SUMS;
# everything else goes to stderr. Each binary is checked before it is listed: the ELF file is for
# the target's machine, has no program interpreter, and runs (`--version`).
set -euo pipefail
# Command substitutions ($(archive ...)) stop at a failing command too.
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The cross toolchain of the aarch64 build; another version may change the binary's bytes.
ZIGLANG_VERSION=0.15.2
CARGO_ZIGBUILD_VERSION=0.24.1

say() { echo "[release.sh] $*" >&2; }
die() {
    say "FAILED: $*"
    exit 1
}
usage="usage: scripts/release.sh [--target x86_64|aarch64]... [--all] [--archives] [--glibc] [--check-reproducible]"

want_glibc=false
check_reproducible=false
archives=false
want_x86_64=false
want_aarch64=false
while [ $# -gt 0 ]; do
    case "$1" in
        --glibc) want_glibc=true ;;
        --check-reproducible) check_reproducible=true ;;
        --archives) archives=true ;;
        --all) want_x86_64=true want_aarch64=true archives=true ;;
        --target | --target=*)
            if [ "$1" = --target ]; then
                [ $# -ge 2 ] || die "--target needs a value ($usage)"
                shift
                value=$1
            else
                value=${1#--target=}
            fi
            case "$value" in
                x86_64 | x86_64-unknown-linux-musl | x86_64-unknown-linux-gnu) want_x86_64=true ;;
                aarch64 | aarch64-unknown-linux-musl) want_aarch64=true ;;
                *) die "unknown target '$value' (x86_64 or aarch64)" ;;
            esac
            ;;
        *) die "unknown argument '$1' ($usage)" ;;
    esac
    shift
done
if ! $want_x86_64 && ! $want_aarch64; then
    want_x86_64=true
fi

# Installs Debian PACKAGE (for COMMAND) when missing and possible; prints why not on failure.
ensure_debian_package() {
    local command=$1 package=$2
    command -v "$command" >/dev/null && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        echo "$command is missing (Debian: apt-get install $package) and cannot be installed here"
        return 1
    fi
    say "apt-get install $package"
    if ! apt-cache show "$package" >/dev/null 2>&1; then
        apt-get -o DPkg::Lock::Timeout=900 update -qq >&2 || true
    fi
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
        --no-install-recommends "$package" >&2 || { echo "'apt-get install $package' failed"; return 1; }
}

# Adds the rustup target TARGET when missing; prints why not on failure.
ensure_rust_target() {
    local target=$1
    if ! rustc --print target-list | grep -qx "$target"; then
        echo "rustc does not know the target $target"
        return 1
    fi
    if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        command -v rustup >/dev/null || { echo "no rustup to add the target $target"; return 1; }
        say "rustup target add $target"
        rustup target add "$target" >&2 || { echo "'rustup target add $target' failed"; return 1; }
    fi
}

# Installs the pinned ziglang and cargo-zigbuild from PyPI into a cache directory when missing;
# prints the directory (its bin/ holds cargo-zigbuild, its ziglang/ the zig binary).
zig_tools() {
    local dir=${XDG_CACHE_HOME:-$HOME/.cache}/nsys2prv-rs/zig-$ZIGLANG_VERSION-zigbuild-$CARGO_ZIGBUILD_VERSION
    if [ ! -x "$dir/bin/cargo-zigbuild" ] || [ ! -x "$dir/ziglang/zig" ]; then
        say "pip install ziglang==$ZIGLANG_VERSION cargo-zigbuild==$CARGO_ZIGBUILD_VERSION into $dir"
        rm -rf "$dir.partial"
        python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
            --target "$dir.partial" "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION" >&2 ||
            { echo "'pip install ziglang cargo-zigbuild' failed"; return 1; }
        rm -rf "$dir"
        mv "$dir.partial" "$dir"
    fi
    echo "$dir"
}

host_arch=$(uname -m)

# The ELF header's machine (readelf's words) of a binary for ARCH.
elf_machine() {
    case "$1" in
        x86_64) echo "Advanced Micro Devices X86-64" ;;
        aarch64) echo "AArch64" ;;
    esac
}

# Prints how to run a binary of ARCH here: nothing (natively) or the qemu-user emulator.
runner_for() {
    local arch=$1
    if [ "$arch" = "$host_arch" ]; then
        return 0
    fi
    local reason
    reason=$(ensure_debian_package "qemu-$arch-static" qemu-user-static) || die "cannot run the $arch binary: $reason"
    command -v "qemu-$arch-static"
}

# Each target to build: (arch, rust target, build command).
targets=()
if $want_x86_64; then
    if $want_glibc; then
        say "x86_64: building the glibc fallback (--glibc)"
        targets+=(x86_64-unknown-linux-gnu)
    elif reason=$(ensure_rust_target x86_64-unknown-linux-musl && ensure_debian_package musl-gcc musl-tools); then
        targets+=(x86_64-unknown-linux-musl)
    else
        say "NOTE: cannot build for x86_64-unknown-linux-musl: $reason"
        say "NOTE: falling back to x86_64-unknown-linux-gnu with -C target-feature=+crt-static (static glibc)"
        targets+=(x86_64-unknown-linux-gnu)
    fi
fi
if $want_aarch64; then
    reason=$(ensure_rust_target aarch64-unknown-linux-musl) || die "cannot build for aarch64: $reason"
    zig_dir=$(zig_tools) || die "cannot build for aarch64: $zig_dir"
    targets+=(aarch64-unknown-linux-musl)
fi

cargo_home=${CARGO_HOME:-$HOME/.cargo}
# Same bytes across machines: no absolute path of cargo's registry or of the target directory, no
# date. (Cargo names the workspace's own sources by paths relative to the checkout, and the C
# code is all in the registry, so the checkout's path is not in the binary, as
# --check-reproducible proves; nor is it in the flags, which would make every crate build again
# for a checkout elsewhere.)
rustflags=(--remap-path-prefix="$cargo_home=/build/cargo")
cflags="-ffile-prefix-map=$cargo_home=/build/cargo"
# The archives' file dates: the last commit's time.
source_date_epoch=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)
# The compilers' clock (__DATE__ and __TIME__ in mimalloc's C code): one fixed time, not the
# commit's. Cargo does not build a C crate again when SOURCE_DATE_EPOCH changes, so with a target
# directory kept between runs (CI's) a commit's time would stay in the objects of whichever
# commit compiled them first, and two builds of one commit would differ (seen: the aarch64 binary
# of a kept target directory said 14:03:47, the fresh one 14:41:06).
build_epoch=0
# The epoch is also a define in the C flags, unused by the code: cc-rs builds a C crate again
# when its CFLAGS_<target> change, and Zig keys its object cache (~/.cache/zig) on the flags, so
# an object compiled under another clock is never reused from either cache. (Without it, the
# aarch64 check failed: the kept target directory held mimalloc objects compiled before the
# clock was fixed, the second directory fresh ones saying "Jan  1 1970".)
cflags+=" -DNSYS2PRV_BUILD_EPOCH=$build_epoch"
# The commit `--version` names (build.rs), the same for the copy without .git; `-modified` when
# tracked files differ from it.
commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit=$commit-modified
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
[ -n "$version" ] || die "no version in $ROOT/Cargo.toml"

# build SRC_DIR TARGET_DIR TARGET: the dist build of SRC_DIR's sources; prints the binary's path.
build() {
    local src=$1 target_dir=$2 target=$3 flags features=(--features mimalloc) cargo_build=(cargo build)
    flags="${rustflags[*]} --remap-path-prefix=$target_dir=/build/target"
    if [ "$target" = x86_64-unknown-linux-gnu ]; then
        flags+=" -C target-feature=+crt-static"
        features=()
    fi
    if [ "$target" = aarch64-unknown-linux-musl ]; then
        cargo_build=("$zig_dir/bin/cargo-zigbuild" zigbuild)
    fi
    (
        cd "$src"
        export SOURCE_DATE_EPOCH=$build_epoch
        export NSYS2PRV_COMMIT=$commit
        export CARGO_TARGET_DIR=$target_dir
        export RUSTFLAGS=$flags
        export "CFLAGS_${target//-/_}=$cflags -ffile-prefix-map=$target_dir=/build/target"
        # cargo-zigbuild runs the zig it finds on PATH.
        [ -z "${zig_dir:-}" ] || export PATH="$zig_dir/ziglang:$PATH"
        say "${cargo_build[*]} --locked --profile dist --target $target ${features[*]} (in $src)"
        "${cargo_build[@]}" --locked --profile dist --target "$target" "${features[@]}" -p nsys2prv-rs >&2
    ) || return 1
    echo "$target_dir/$target/dist/nsys2prv-rs"
}

# check BINARY TARGET: the ELF file is for TARGET's machine, static, and runs.
check() {
    local binary=$1 target=$2 arch=${2%%-*} runner
    readelf --file-header "$binary" | grep -q "Machine: *$(elf_machine "$arch")\$" ||
        die "$binary is not an $arch executable: $(readelf --file-header "$binary" | grep Machine:)"
    # Static: no program interpreter (ldd cannot tell for a foreign machine).
    if readelf --program-headers "$binary" | grep -q INTERP; then
        die "$binary has a program interpreter: it is dynamically linked"
    fi
    if [ "$arch" = "$host_arch" ]; then
        local ldd_out
        ldd_out=$(ldd "$binary" 2>&1 || true)
        case "$ldd_out" in
            *"statically linked"* | *"not a dynamic executable"*) ;;
            *) die "ldd does not call $binary static: $ldd_out" ;;
        esac
    fi
    runner=$(runner_for "$arch")
    $runner "$binary" --version >/dev/null || die "$binary --version failed${runner:+ (under $runner)}"
}

# archive BINARY TARGET OUT_DIR: writes OUT_DIR/nsys2prv-rs-VERSION-TARGET.tar.gz (layout:
# docs/install.md), a prefix to unpack anywhere; prints its path. Its man page and completions
# are printed by the binary itself.
archive() {
    local binary=$1 target=$2 out_dir=$3 runner name stage top
    runner=$(runner_for "${target%%-*}")
    name=nsys2prv-rs-$version-$target
    stage=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv-rs-archive.XXXXXX")
    top=$stage/$name
    mkdir -p "$top/bin" "$top/share/man/man1" "$top/share/bash-completion/completions" \
        "$top/share/zsh/site-functions" "$top/share/fish/vendor_completions.d" \
        "$top/share/doc/nsys2prv-rs" "$top/share/nsys2prv-rs"
    cp "$binary" "$top/bin/nsys2prv-rs"
    $runner "$binary" man >"$top/share/man/man1/nsys2prv-rs.1"
    $runner "$binary" completions bash >"$top/share/bash-completion/completions/nsys2prv-rs"
    $runner "$binary" completions zsh >"$top/share/zsh/site-functions/_nsys2prv-rs"
    $runner "$binary" completions fish >"$top/share/fish/vendor_completions.d/nsys2prv-rs.fish"
    cp -R "$ROOT/cfgs" "$top/share/nsys2prv-rs/cfgs"
    cp "$ROOT/README.md" "$ROOT/CHANGELOG.md" "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" \
        "$top/share/doc/nsys2prv-rs/"
    reproducible_tar "$stage" "$name" "$out_dir/$name.tar.gz"
    rm -rf "$stage"
    echo "$out_dir/$name.tar.gz"
}

# reproducible_tar DIR NAME OUT: DIR/NAME as a tar.gz whose bytes depend only on the files'
# contents and executable bits: sorted names, one date (SOURCE_DATE_EPOCH), no owner, no gzip name
# or time.
reproducible_tar() {
    local dir=$1 name=$2 out=$3
    chmod -R u=rwX,go=rX "$dir/$name"
    tar --create --directory "$dir" --sort=name --format=gnu --mtime="@$source_date_epoch" \
        --owner=0 --group=0 --numeric-owner "$name" | gzip -9 -n >"$out.partial"
    mv -f "$out.partial" "$out"
}

# copy_sources SRC DEST: the files git knows, with their uncommitted changes; not target/ or
# ignored files.
copy_sources() {
    local src=$1 dest=$2 list
    list=$(mktemp "${TMPDIR:-/tmp}/nsys2prv-rs-files.XXXXXX")
    git -C "$src" ls-files -z --cached --others --exclude-standard >"$list" ||
        die "the release needs a git checkout"
    mkdir -p "$dest"
    while IFS= read -r -d '' file; do
        [ -e "$src/$file" ] || continue # deleted, not yet committed
        mkdir -p "$dest/$(dirname "$file")"
        cp -P "$src/$file" "$dest/$file"
    done <"$list"
    rm -f "$list"
}

# source_archive OUT_DIR: the sources (as copy_sources) with every crate of Cargo.lock vendored
# and a .cargo/config.toml that builds from them offline and names the commit; prints its path.
source_archive() {
    local out_dir=$1 stage name top
    name=nsys2prv-rs-$version
    stage=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv-rs-src.XXXXXX")
    top=$stage/$name
    copy_sources "$ROOT" "$top"
    say "cargo vendor --locked (the source archive's crates)"
    (cd "$top" && cargo vendor --locked --versioned-dirs --quiet vendor >/dev/null) ||
        die "cargo vendor failed"
    mkdir -p "$top/.cargo"
    cat >"$top/.cargo/config.toml" <<EOF
# Written by scripts/release.sh: build from the crates in vendor/, without a network.
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "vendor"

[net]
offline = true

[env]
# What \`nsys2prv-rs --version\` prints (there is no .git here).
NSYS2PRV_COMMIT = "$commit"
EOF
    reproducible_tar "$stage" "$name" "$out_dir/$name-src.tar.gz"
    rm -rf "$stage"
    echo "$out_dir/$name-src.tar.gz"
}

# easyconfig SOURCE_ARCHIVE OUT_DIR: contrib/easybuild's easyconfig with the source archive's
# checksum filled in; prints its path.
easyconfig() {
    local source=$1 out_dir=$2 template=$ROOT/contrib/easybuild/nsys2prv-rs-$version.eb sum
    [ -f "$template" ] || die "no easyconfig for version $version: $template"
    sum=$(sha256sum "$source" | cut -d' ' -f1)
    grep -q '^checksums = \[\]' "$template" || die "$template has no line 'checksums = []' to fill in"
    sed "s/^checksums = \[\]/checksums = ['$sum']/" "$template" >"$out_dir/nsys2prv-rs-$version.eb.partial"
    mv -f "$out_dir/nsys2prv-rs-$version.eb.partial" "$out_dir/nsys2prv-rs-$version.eb"
    echo "$out_dir/nsys2prv-rs-$version.eb"
}

# Sets CHILDREN_CPU to the user and system CPU seconds of the processes this shell has waited
# for (bash's `times`, second line: "1m2.500s 0m3.250s"), for the builds' progress lines. Not in
# a subshell: a subshell's `times` counts only its own children.
children_cpu() {
    times >"$times_file"
    CHILDREN_CPU=$(tail -1 "$times_file" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%.1f", t }')
}

# make_release SRC TARGET_DIR OUT_DIR: builds every target from SRC, checks the binaries, copies
# them to OUT_DIR/TARGET/ and with --archives makes the archives there; prints what it made.
make_release() {
    local src=$1 target_dir=$2 out_dir=$3 target built started cpu_before made=() sums=()
    mkdir -p "$out_dir"
    for target in "${targets[@]}"; do
        started=$SECONDS
        children_cpu
        cpu_before=$CHILDREN_CPU
        built=$(build "$src" "$target_dir" "$target") || die "cargo build for $target failed (in $src)"
        children_cpu
        say "built $target in $((SECONDS - started)) s, $(awk -v a="$cpu_before" -v b="$CHILDREN_CPU" 'BEGIN { printf "%.0f", b - a }') s of CPU"
        check "$built" "$target"
        mkdir -p "$out_dir/$target"
        cp "$built" "$out_dir/$target/nsys2prv-rs.partial"
        mv -f "$out_dir/$target/nsys2prv-rs.partial" "$out_dir/$target/nsys2prv-rs"
        echo "$out_dir/$target/nsys2prv-rs"
    done
    $archives || return 0
    for target in "${targets[@]}"; do
        made+=("$(archive "$out_dir/$target/nsys2prv-rs" "$target" "$out_dir")")
    done
    made+=("$(source_archive "$out_dir")")
    for file in "${made[@]}"; do
        sums+=("$(basename "$file")")
    done
    (cd "$out_dir" && sha256sum "${sums[@]}" >SHA256SUMS.partial && mv -f SHA256SUMS.partial SHA256SUMS)
    made+=("$(easyconfig "${made[-1]}" "$out_dir")" "$out_dir/SHA256SUMS")
    printf '%s\n' "${made[@]}"
}

target_dir=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$target_dir"
times_file=$(mktemp "${TMPDIR:-/tmp}/nsys2prv-rs-times.XXXXXX")
trap 'rm -f "$times_file"' EXIT
target_dir=$(cd "$target_dir" && pwd)
out_dir=$target_dir/static
released=$(make_release "$ROOT" "$target_dir" "$out_dir")

if $check_reproducible; then
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv-rs-repro.XXXXXX")
    trap 'rm -rf "$scratch" "$times_file"' EXIT
    say "reproducibility: a second build from a copy of the sources in $scratch"
    copy_sources "$ROOT" "$scratch/src"
    # The copy is the same commit: its time and name come from the checkout (it has no .git).
    # Another target directory, kept like the first (beside it): the crates of the registry, built
    # with the same flags each time, compile once; the workspace's, at another path, every time.
    make_release "$scratch/src" "$target_dir/reproducibility" "$scratch/out" >/dev/null
    while IFS= read -r file; do
        other=$scratch/out/${file#"$out_dir"/}
        cmp -s "$file" "$other" || die "not reproducible: $file and $other differ ($(cmp "$file" "$other" | head -1))"
    done <<<"$released"
    say "reproducible: the second build made the same bytes ($(wc -l <<<"$released") files)"
fi

while IFS= read -r file; do
    case "$file" in
        */nsys2prv-rs)
            size=$(stat -c %s "$file")
            say "$(basename "$(dirname "$file")"): $(awk -v b="$size" 'BEGIN { printf "%.1f MB (%d bytes)", b / 1e6, b }'), sha256 $(sha256sum "$file" | cut -d' ' -f1)"
            ;;
    esac
done <<<"$released"
echo "$released"
