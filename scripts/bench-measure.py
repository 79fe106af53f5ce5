#!/usr/bin/env python3
"""Runs one command and writes what it cost, for scripts/bench-sharded.sh:

    scripts/bench-measure.py -o FILE [--mark PREFIX] -- COMMAND...

FILE gets one line of key=value pairs: wall (s), user and sys (s, the command and every thread
and child it waited for), rss (peak, KiB), faults (minor), rchar and wchar (bytes the command
read and wrote through system calls, page cache or not: /proc/PID/io, read while the finished
process is still a zombie, so nothing it did is missed), and, with --mark, mark_user and
mark_sys: its CPU time when it printed the last stderr line starting with PREFIX (e.g.
"reading:": nsys2prv-rs -v's reading phase ends with "reading: N reports in T s", after its
progress lines), so that the phase after it can be told apart.
The command's stdout and stderr pass through. Exits with the command's status.

/usr/bin/time cannot do this: it sees neither the bytes nor the time at a phase's end; and
outside `srun` it sees nothing of the tasks, so each task runs under its own measure.py."""
import os, subprocess, sys, time


def proc_cpu(pid):
    """user and system seconds of a running process (all its threads) from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def main(argv):
    out, mark = None, None
    while argv and argv[0] != "--":
        if argv[0] == "-o":
            out, argv = argv[1], argv[2:]
        elif argv[0] == "--mark":
            mark, argv = argv[1].encode(), argv[2:]
        else:
            sys.exit(f"measure.py: unknown option {argv[0]}")
    if out is None or not argv[1:]:
        sys.exit("usage: measure.py -o FILE [--mark PREFIX] -- COMMAND...")
    start = time.monotonic()
    child = subprocess.Popen(argv[1:], stderr=subprocess.PIPE if mark else None)
    marked = {}
    if mark:
        for line in child.stderr:
            # The last such line: -v prints progress lines with the same prefix before the
            # phase's closing one ("reading: 482/1024 (96/s)", then "reading: 1024 reports in").
            if line.startswith(mark):
                marked["mark_user"], marked["mark_sys"] = proc_cpu(child.pid)
            sys.stderr.buffer.write(line)
        sys.stderr.flush()
    # Wait without reaping, read the zombie's I/O counts, then reap it for its rusage.
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - start
    io = {}
    with open(f"/proc/{child.pid}/io") as f:
        for line in f:
            key, value = line.split(":")
            io[key] = int(value)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    values = {
        "wall": f"{wall:.2f}",
        "user": f"{usage.ru_utime:.2f}",
        "sys": f"{usage.ru_stime:.2f}",
        "rss": usage.ru_maxrss,
        "faults": usage.ru_minflt,
        "rchar": io["rchar"],
        "wchar": io["wchar"],
    }
    values.update({k: f"{v:.2f}" for k, v in marked.items()})
    with open(out, "w") as f:
        f.write(" ".join(f"{k}={v}" for k, v in values.items()) + "\n")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
