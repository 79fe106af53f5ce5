#!/bin/bash
# regenerate.sh - rebuild the small sample reports under samples/ with Nsight Systems 2022.4
# (Debian 12 packages) on a CPU-only machine. Re-runnable: each sample directory is rewritten.
#
# Usage: samples/regenerate.sh [sample...]
#        (default: nvtx_osrt sched mpi_2ranks mpi_3ranks openmp sampling sched_only nothing)
# Environment: LIMIT (seconds per profile run, default 30), ATTEMPTS (default 8),
#              BUILD (scratch directory, default /var/tmp/nsys2prv-samples-build; not under /tmp).
#
# Needs (as root, Debian 12 bookworm; nsight-systems is in contrib/non-free):
#   sed 's/^Components:.*/Components: contrib non-free/' /etc/apt/sources.list.d/debian.sources \
#       > /etc/apt/sources.list.d/debian-contrib-non-free.sources
#   apt-get update
#   apt-get install -y --no-install-recommends nsight-systems nsight-systems-target sqlite3 gcc libc6-dev
#   apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev     # mpi_2ranks, mpi_3ranks
#   apt-get install -y --no-install-recommends libomp5-14 libomp-14-dev       # openmp (LLVM libomp has OMPT)
# The script only checks for these and says what is missing; it never runs apt.
#
# Known problems handled here:
# - Debian's nsys cannot find its importer ("Importer error status: The importer binary and its
#   dependencies were not found."), so `nsys profile` leaves a .qdstrm only. We run
#   host-linux-x64/QdstrmImporter ourselves (.qdstrm -> .nsys-rep), then `nsys export`.
#   If the host-linux-x64 symlink workaround is installed, nsys writes the .nsys-rep itself.
# - Backtrace sampling (the default) made the nsys agent spin forever on this kernel in 2025: the
#   samples above use --sample=none (and --cpuctxsw=none, since ctxsw defaults to process-tree).
#   In November 2026 it worked in 21 runs out of 21 (with frame-pointer, DWARF and the default LBR
#   backtraces, and with context switches), so `sampling` samples with --backtrace=fp; the time
#   limit and retries below cover a hang.
# - nsys records every process on the machine: names in PROCESSES and, as NUL-separated strings
#   in StringIds, their environments. To keep the machine's process list and environment out of
#   the samples, each run is isolated: a new PID namespace with its own /proc, and private
#   tmpfs on /tmp and /dev/shm (unshare, needs root). The reports then show only nsys's own
#   processes and the program(s), with namespace PIDs. Everything runs with `env -i`.
# - With --cpuctxsw=process-tree (sched sample) nsys 2022.4 hangs in most runs on this kernel
#   (6.18): its perf reader thread either spins on EPOLLHUP after the program exited or never
#   finishes stopping. Other runs hang occasionally. So each run gets a time limit and is retried
#   (ATTEMPTS); a hung run is killed with its whole PID namespace. nsys renames its output to the
#   requested name only once it is complete, so a report that exists is kept even if nsys hung
#   afterwards.
set -euo pipefail

SAMPLES=$(cd "$(dirname "$0")" && pwd)
SRC=$SAMPLES/src
LIMIT=${LIMIT:-30}            # a good run takes 2-10 s
ATTEMPTS=${ATTEMPTS:-8}
KEEP_REP_MAX=$((300 * 1024))  # keep .nsys-rep files up to this size
ALL=(nvtx_osrt sched mpi_2ranks mpi_3ranks openmp sampling sched_only nothing)
if [ $# -gt 0 ]; then WANT=("$@"); else WANT=("${ALL[@]}"); fi

# ---------------------------------------------------------------- tools
missing=()
command -v nsys >/dev/null || missing+=("nsys (nsight-systems nsight-systems-target)")
command -v gcc >/dev/null || missing+=("gcc (gcc libc6-dev)")
command -v sqlite3 >/dev/null || missing+=("sqlite3 (sqlite3)")
command -v unshare >/dev/null || missing+=("unshare (util-linux)")
if [ ${#missing[@]} -gt 0 ]; then
    printf 'missing: %s\n' "${missing[@]}" >&2
    echo "see the apt-get commands at the top of $0" >&2
    exit 1
fi
if ! unshare --mount --pid --fork --mount-proc true 2>/dev/null; then
    echo "cannot create PID/mount namespaces (run as root): the reports would contain this machine's process list" >&2
    exit 1
fi
HAVE_MPI=1; { command -v mpicc && command -v mpirun; } >/dev/null || HAVE_MPI=0
LIBOMP_DIR=$(dirname "$(dpkg -L libomp-14-dev 2>/dev/null | grep '/libomp\.so$' | head -1)")
HAVE_OMP=1; [ -e "$LIBOMP_DIR/libomp.so" ] || HAVE_OMP=0
[ $HAVE_MPI = 1 ] || echo "note: mpicc/mpirun missing (openmpi-bin libopenmpi-dev): MPI samples skipped" >&2
[ $HAVE_OMP = 1 ] || echo "note: LLVM libomp missing (libomp5-14 libomp-14-dev): openmp sample skipped" >&2

NSYS_DIR=$(dirname "$(readlink -f "$(command -v nsys)")")           # .../target-linux-x64
NVTX_INC=$NSYS_DIR/nvtx/include                                      # NVTX v3 headers shipped with nsys
IMPORTER=$(dpkg -L nsight-systems 2>/dev/null | grep '/host-linux-x64/QdstrmImporter$' | head -1 || true)
[ -x "${IMPORTER:-}" ] || IMPORTER=$(dirname "$NSYS_DIR")/host-linux-x64/QdstrmImporter
NSYS_VERSION=$(nsys --version | sed 's/.*version //')
echo "nsys $NSYS_VERSION, importer $IMPORTER"

CLEAN_ENV=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="${HOME:-/root}" LANG=C.UTF-8)

# ---------------------------------------------------------------- build
# Built in, and run from, a scratch directory as ./prog (process name "./nvtx_osrt"). Not under
# /tmp, which is replaced by an empty tmpfs inside the isolated runs.
BUILD=${BUILD:-/var/tmp/nsys2prv-samples-build}
rm -rf "$BUILD"; mkdir -p "$BUILD"
trap 'rm -rf "$BUILD"' EXIT
CFLAGS=(-O1 -g -Wall -I"$NVTX_INC")
gcc "${CFLAGS[@]}" -o "$BUILD/nvtx_osrt" "$SRC/nvtx_osrt.c" -lpthread -ldl
# Frame pointers and no inlining, so that frame-pointer backtraces show main -> run_phase -> ...
gcc -O0 -g -Wall -fno-omit-frame-pointer -o "$BUILD/callstacks" "$SRC/callstacks.c" -lpthread
if [ $HAVE_MPI = 1 ]; then
    mpicc "${CFLAGS[@]}" -o "$BUILD/mpi_ring" "$SRC/mpi_ring.c" -ldl
    mpicc "${CFLAGS[@]}" -o "$BUILD/mpi_nonblocking" "$SRC/mpi_nonblocking.c" -ldl
fi
if [ $HAVE_OMP = 1 ]; then   # compile with gcc -fopenmp, link against LLVM libomp instead of libgomp
    gcc "${CFLAGS[@]}" -fopenmp -c "$SRC/omp_tasks.c" -o "$BUILD/omp_tasks.o"
    gcc "$BUILD/omp_tasks.o" -o "$BUILD/omp_tasks" -L"$LIBOMP_DIR" -Wl,-rpath,"$LIBOMP_DIR" -lomp -lm -ldl -lpthread
fi

# ---------------------------------------------------------------- helpers
# run_isolated [VAR=VALUE...] CMD...: run CMD in $BUILD, in a new PID namespace with its own /proc and
# private /tmp and /dev/shm, with a clean environment plus VAR=VALUE, under a time limit. When
# the time is up, unshare is killed and --kill-child takes the whole namespace with it (when
# the namespace's first process, sh, exits, the kernel kills everything left in it).
run_isolated() {
    local envs=()
    while [[ $1 == *=* ]]; do envs+=("$1"); shift; done
    local rc=0
    (cd "$BUILD" && "${CLEAN_ENV[@]}" "${envs[@]}" timeout -k 5 "$LIMIT" \
        unshare --mount --pid --fork --mount-proc --kill-child \
        sh -c 'mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /dev/shm && "$@"' sh "$@") || rc=$?
    if [ $rc = 124 ] || [ $rc = 137 ]; then echo "!! timed out after ${LIMIT}s" >&2; fi
    return $rc
}

# finish BASE: .qdstrm -> .nsys-rep (if needed) -> .sqlite; drop a large .nsys-rep.
finish() {
    local base=$1
    if [ -f "$base.qdstrm" ]; then
        "${CLEAN_ENV[@]}" "$IMPORTER" -f -i "$base.qdstrm" -o "$base.nsys-rep" > "$base.import.log" 2>&1 \
            || { cat "$base.import.log" >&2; return 1; }
        rm -f "$base.qdstrm" "$base.import.log"
    fi
    [ -f "$base.nsys-rep" ] || { echo "!! no report for $base" >&2; return 1; }
    "${CLEAN_ENV[@]}" nsys export -q true -f true --type sqlite -o "$base.sqlite" "$base.nsys-rep"
    if [ "$(stat -c %s "$base.nsys-rep")" -gt $KEEP_REP_MAX ]; then
        echo "   $base.nsys-rep is larger than $KEEP_REP_MAX bytes: removed"
        rm -f "$base.nsys-rep"
    fi
}

# summarize DIR PROG: table row counts etc. of every .sqlite in DIR -> DIR/tables.txt
summarize() {
    local dir=$1 prog=$2 f t
    {
        echo "# nsys $NSYS_VERSION; row counts of the exported tables (ENUM_* tables left out)"
        for f in "$dir"/*.sqlite; do
            echo "== $(basename "$f")"
            for t in $(sqlite3 "$f" "select name from sqlite_master where type='table' and name not like 'ENUM_%' order by name"); do
                echo "$t $(sqlite3 "$f" "select count(*) from \"$t\"")"
            done
            echo "-- NVTX_EVENTS by eventType"
            sqlite3 "$f" "select e.name || ' (' || n.eventType || ') ' || count(*) from NVTX_EVENTS n join ENUM_NSYS_EVENT_TYPE e on e.id = n.eventType group by n.eventType" 2>/dev/null || true
            echo "-- NVTX domains (eventType 75): domainId name"
            sqlite3 "$f" "select domainId || ' ' || text from NVTX_EVENTS where eventType = 75" 2>/dev/null || true
            echo "-- COMPOSITE_EVENTS (CPU samples) per thread: tid samples"
            sqlite3 "$f" "select (globalTid & 16777215) || ' ' || count(*) from COMPOSITE_EVENTS group by globalTid" 2>/dev/null || true
            echo "-- SAMPLING_CALLCHAINS frames by stackDepth: depth frames"
            sqlite3 "$f" "select stackDepth || ' ' || count(*) from SAMPLING_CALLCHAINS group by stackDepth" 2>/dev/null || true
            echo "-- OSRT_API by function"
            sqlite3 "$f" "select s.value || ' ' || count(*) from OSRT_API o join StringIds s on s.id = o.nameId group by s.value" 2>/dev/null || true
            echo "-- PROCESSES: pid name"
            sqlite3 "$f" "select pid || ' ' || name from PROCESSES order by pid"
            echo "-- ThreadNames of the profiled program: tid priority name"
            sqlite3 "$f" "select (t.globalTid & 16777215) || ' ' || t.priority || ' ' || s.value from ThreadNames t join StringIds s on s.id = t.nameId
                          where ((t.globalTid >> 24) & 16777215) in (select pid from PROCESSES where name like '%$prog%') order by 1" 2>/dev/null || true
        done
    } > "$dir/tables.txt"
    cat "$dir/tables.txt"
}

# fresh DIR: empty the sample directory (only files this script makes)
fresh() { mkdir -p "$1"; rm -f "$1"/*.sqlite "$1"/*.nsys-rep "$1"/*.qdstrm "$1"/*.import.log "$1"/tables.txt; }

# profile NAME PROG BASES [VAR=VALUE...] CMD... : run CMD until all of NAME/BASE.{qdstrm,nsys-rep}
# exist (at most ATTEMPTS times), then import, export and summarize them.
profile() {
    local name=$1 prog=$2 bases=$3; shift 3
    local dir=$SAMPLES/$name a b ok
    fresh "$dir"
    for a in $(seq "$ATTEMPTS"); do
        echo "== $name (attempt $a)"
        run_isolated "$@" || true
        ok=1
        for b in $bases; do [ -f "$dir/$b.qdstrm" ] || [ -f "$dir/$b.nsys-rep" ] || ok=0; done
        if [ $ok = 1 ]; then
            for b in $bases; do finish "$dir/$b" || ok=0; done
            if [ $ok = 1 ]; then summarize "$dir" "$prog"; return 0; fi
        fi
        fresh "$dir"
    done
    echo "!! $name failed $ATTEMPTS times" >&2; return 1
}

P=(nsys profile -f true --sample=none)
CPU=(nsys profile -f true --trace=none)   # CPU-only reports: sampling and scheduling or nothing
MPI=(mpirun --allow-run-as-root --oversubscribe)

# ---------------------------------------------------------------- samples
failed=()
for s in "${WANT[@]}"; do
    d=$SAMPLES/$s
    case $s in
    nvtx_osrt)
        profile $s nvtx_osrt "nvtx_osrt" \
            "${P[@]}" --trace=nvtx,osrt --cpuctxsw=none -o "$d/nvtx_osrt" ./nvtx_osrt || failed+=("$s") ;;
    sched)
        profile $s nvtx_osrt "sched" \
            "${P[@]}" --trace=nvtx,osrt --cpuctxsw=process-tree -o "$d/sched" ./nvtx_osrt || failed+=("$s") ;;
    mpi_2ranks)
        if [ $HAVE_MPI = 0 ]; then echo "-- $s skipped (no MPI)"; continue; fi
        profile $s mpi_ring "rank0 rank1" \
            "${MPI[@]}" -np 2 "${P[@]}" --trace=mpi,nvtx,osrt --mpi-impl=openmpi --cpuctxsw=none \
            -o "$d/rank%q{OMPI_COMM_WORLD_RANK}" ./mpi_ring || failed+=("$s") ;;
    mpi_3ranks)
        if [ $HAVE_MPI = 0 ]; then echo "-- $s skipped (no MPI)"; continue; fi
        profile $s mpi_nonblocking "rank0 rank1 rank2" \
            "${MPI[@]}" -np 3 "${P[@]}" --trace=mpi,nvtx,osrt --mpi-impl=openmpi --cpuctxsw=none \
            -o "$d/rank%q{OMPI_COMM_WORLD_RANK}" ./mpi_nonblocking || failed+=("$s") ;;
    openmp)
        if [ $HAVE_OMP = 0 ]; then echo "-- $s skipped (no LLVM libomp)"; continue; fi
        profile $s omp_tasks "openmp" OMP_NUM_THREADS=3 \
            "${P[@]}" --trace=openmp,nvtx,osrt --cpuctxsw=none -o "$d/openmp" ./omp_tasks || failed+=("$s") ;;
    sampling)
        profile $s callstacks "sampling" \
            "${CPU[@]}" --sample=process-tree --backtrace=fp --cpuctxsw=process-tree \
            -o "$d/sampling" ./callstacks 1 || failed+=("$s") ;;
    sched_only)
        profile $s callstacks "sched_only" \
            "${CPU[@]}" --sample=none --cpuctxsw=process-tree -o "$d/sched_only" ./callstacks 1 || failed+=("$s") ;;
    nothing)
        profile $s callstacks "nothing" \
            "${CPU[@]}" --sample=none --cpuctxsw=none -o "$d/nothing" ./callstacks 0.2 || failed+=("$s") ;;
    *) echo "unknown sample $s (known: ${ALL[*]})" >&2; failed+=("$s") ;;
    esac
done
echo
ls -la "$SAMPLES"/*/*.sqlite "$SAMPLES"/*/*.nsys-rep 2>/dev/null || true
if [ ${#failed[@]} -gt 0 ]; then echo "FAILED: ${failed[*]}" >&2; exit 1; fi
echo "all samples regenerated"
