#!/usr/bin/env bash
# Runs BSC's `ptd comprovar` (pip install pertalde) on a Paraver trace and fails on any
# reported problem.
#
# Usage: scripts/ptd-check.sh TRACE.prv|TRACE.prv.gz
#
# Exit codes: 0 no problem, 1 problems reported, 2 usage error, 3 ptd not installed.
#
# Why not just `ptd comprovar`: without --exhaustive it stops at the first bad record
# and still exits 0; it prints bad records on stdout (not stderr); and it accepts a
# truncated or non-gzip .prv.gz silently. So we run --exhaustive, treat any output as
# a failure, and test .gz integrity ourselves. It needs NAME.pcf next to the trace.
set -u

PTD=${PTD:-ptd}
MAX_LINES=20

die_usage() {
    echo "usage: $0 TRACE.prv|TRACE.prv.gz" >&2
    exit 2
}

[ $# -eq 1 ] || die_usage
trace=$1

# A pyenv shim exists even when the package is not installed, so ask for the version.
if ! "$PTD" --version 2>/dev/null | grep -q '^pertalde'; then
    echo "ptd-check: 'ptd' (pertalde) is not installed; install it with: pip install pertalde" >&2
    exit 3
fi

case "$trace" in
    *.prv.gz) base=${trace%.prv.gz} ;;
    *.prv) base=${trace%.prv} ;;
    *) echo "ptd-check: $trace: the trace name must end in .prv or .prv.gz" >&2; exit 2 ;;
esac

if [ ! -f "$trace" ]; then
    echo "ptd-check: $trace: no such file" >&2
    exit 2
fi
if [ ! -f "$base.pcf" ]; then
    echo "ptd-check: FAIL $trace: $base.pcf is missing (ptd comprovar requires it)" >&2
    exit 1
fi
if [[ "$trace" == *.gz ]] && ! gzip -t "$trace" 2>/dev/null; then
    echo "ptd-check: FAIL $trace: not a valid gzip stream (ptd comprovar would pass it)" >&2
    exit 1
fi

output=$("$PTD" comprovar --exhaustive "$trace" 2>&1)
status=$?
problems=$(printf '%s\n' "$output" | grep -c -v '^[[:space:]]*$')

if [ "$status" -eq 0 ] && [ "$problems" -eq 0 ]; then
    echo "ptd-check: OK $trace"
    exit 0
fi

echo "ptd-check: FAIL $trace: ptd comprovar exited $status with $problems line(s) of output:" >&2
printf '%s\n' "$output" | grep -v '^[[:space:]]*$' | head -n "$MAX_LINES" | sed 's/^/  /' >&2
if [ "$problems" -gt "$MAX_LINES" ]; then
    echo "  ... $((problems - MAX_LINES)) more line(s)" >&2
fi
exit 1
