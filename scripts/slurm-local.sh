#!/usr/bin/env bash
# A one-node Slurm on localhost for the tests: munged, slurmctld and slurmd with a minimal
# configuration and all their state in one directory. Needs root (slurmd launches jobs as their
# user; munged runs as the `munge` user). No systemd.
#
# Usage: scripts/slurm-local.sh start|stop|status
#
#   start   installs slurm-wlm and munge with apt if missing, starts the three daemons (unless
#           they already run: then it only checks them), waits until `sinfo` shows the node idle,
#           and prints the path of the configuration as the last line of stdout:
#               export SLURM_CONF=$(scripts/slurm-local.sh start | tail -1)
#           Slurm's commands (srun, sbatch, sinfo, ...) need SLURM_CONF to find this cluster.
#   stop    cancels the cluster's jobs, stops the daemons by their pid files, and removes the
#           state directory. Nothing of this cluster is left running.
#   status  says which daemons run and shows `sinfo`; exit 0 when the node is up, 3 otherwise.
#
# Environment:
#   SLURM_LOCAL_DIR   state directory (default ${TMPDIR:-/tmp}/nsys2prv-rs-slurm); it holds
#                     the marker file .nsys2prv-rs-slurm-local, and a directory without that
#                     marker is never used or removed
#   SLURM_LOCAL_PORT  slurmctld's port (default 6817); slurmd listens on the next one
#
# The node is declared with 8 CPUs (slurmd is told to trust the configuration rather than the
# hardware, SlurmdParameters=config_overrides), so `srun -n 4` fits on a 2-core machine.
# Process tracking by /proc (no cgroups) and no task plugin: nothing here needs systemd or a
# cgroup hierarchy. Every other output goes to stderr; on failure the daemons' logs are shown.
set -euo pipefail

STATE_DIR=${SLURM_LOCAL_DIR:-${TMPDIR:-/tmp}/nsys2prv-rs-slurm}
MARKER=.nsys2prv-rs-slurm-local
CTLD_PORT=${SLURM_LOCAL_PORT:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
START_TIMEOUT=60

CONF=$STATE_DIR/slurm.conf
MUNGE_DIR=$STATE_DIR/munge
MUNGE_SOCKET=$MUNGE_DIR/munge.socket.2
# daemon name and pid file, in the order they are stopped
DAEMONS=("slurmd:$STATE_DIR/slurmd.pid" "slurmctld:$STATE_DIR/slurmctld.pid" "munged:$MUNGE_DIR/munged.pid")

say() { echo "[slurm-local] $*" >&2; }
die() {
    say "FAILED: $*"
    exit 1
}

# The pid in a daemon's pid file if that process is alive and is that daemon (not a reused pid).
daemon_pid() {
    local name=$1 pid_file=$2 pid
    [ -s "$pid_file" ] || return 1
    pid=$(tr -dc 0-9 <"$pid_file")
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] && echo "$pid"
}

node_state() {
    SLURM_CONF=$CONF timeout 10 sinfo --noheader --Node --format=%t 2>/dev/null | head -1
}

install_packages() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v mungekey >/dev/null && return 0
    command -v apt-get >/dev/null || die "slurmctld/slurmd/munged missing and no apt-get to install slurm-wlm and munge"
    say "installing slurm-wlm and munge"
    # An update only when the lists are missing: a fresh image has none.
    if ! apt-cache show slurm-wlm >/dev/null 2>&1; then
        apt-get -o DPkg::Lock::Timeout=900 update -qq >&2
    fi
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
        --no-install-recommends slurm-wlm munge >&2
}

show_logs() {
    local log
    for log in "$MUNGE_DIR/munged.log" "$STATE_DIR/slurmctld.log" "$STATE_DIR/slurmd.log"; do
        [ -f "$log" ] || continue
        say "--- last lines of $log"
        tail -n 15 "$log" >&2
    done
}

write_config() {
    local host=$1
    cat >"$CONF" <<EOF
# Written by scripts/slurm-local.sh: a one-node test cluster, removed by 'slurm-local.sh stop'.
ClusterName=nsys2prv-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$STATE_DIR/ctld-state
SlurmdSpoolDir=$STATE_DIR/slurmd-spool
SlurmctldPidFile=$STATE_DIR/slurmctld.pid
SlurmdPidFile=$STATE_DIR/slurmd.pid
SlurmctldLogFile=$STATE_DIR/slurmctld.log
SlurmdLogFile=$STATE_DIR/slurmd.log
PlugStackConfig=$STATE_DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MaxArraySize=4096
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    : >"$STATE_DIR/plugstack.conf"
}

start_munged() {
    # munged wants its socket's directory open to all and its key's directory closed to all.
    install -d -m 0755 -o munge -g munge "$MUNGE_DIR"
    install -d -m 0700 -o munge -g munge "$MUNGE_DIR/key"
    runuser -u munge -- mungekey --create --keyfile="$MUNGE_DIR/key/munge.key" >&2 || return 1
    runuser -u munge -- munged --key-file="$MUNGE_DIR/key/munge.key" --socket="$MUNGE_SOCKET" \
        --pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" \
        --seed-file="$MUNGE_DIR/key/munged.seed" >&2 || return 1
    local i
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        munge --socket="$MUNGE_SOCKET" --no-input 2>/dev/null | unmunge --socket="$MUNGE_SOCKET" >/dev/null 2>&1 \
            && return 0
        sleep 0.1
    done
    return 1
}

wait_node_idle() {
    local i state=""
    for ((i = 0; i < START_TIMEOUT * 4; i++)); do
        state=$(node_state || true)
        case "$state" in
            idle | mix | alloc) return 0 ;;
        esac
        sleep 0.25
    done
    say "node state after ${START_TIMEOUT}s: '${state:-no answer}'"
    return 1
}

running_count() {
    local entry n=0
    for entry in "${DAEMONS[@]}"; do
        daemon_pid "${entry%%:*}" "${entry#*:}" >/dev/null && n=$((n + 1))
    done
    echo "$n"
}

cmd_start() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (slurmd starts jobs as their user, munged as 'munge')"
    if [ -d "$STATE_DIR" ] && [ ! -f "$STATE_DIR/$MARKER" ]; then
        die "$STATE_DIR exists but was not made by this script (no $MARKER); set SLURM_LOCAL_DIR"
    fi
    if [ -f "$STATE_DIR/$MARKER" ]; then
        if [ "$(running_count)" -eq ${#DAEMONS[@]} ] && wait_node_idle; then
            say "already running ($STATE_DIR)"
            echo "$CONF"
            return 0
        fi
        say "a previous cluster in $STATE_DIR is incomplete: stopping it first"
        cmd_stop
    fi
    install_packages

    local host
    host=$(hostname -s)
    mkdir -p "$STATE_DIR"
    touch "$STATE_DIR/$MARKER"
    chmod 0755 "$STATE_DIR"
    mkdir -p "$STATE_DIR/ctld-state" "$STATE_DIR/slurmd-spool"
    write_config "$host"

    start_munged || { show_logs; cmd_stop; die "munged did not answer on $MUNGE_SOCKET"; }
    SLURM_CONF=$CONF slurmctld -f "$CONF" -i >&2 || { show_logs; cmd_stop; die "slurmctld did not start"; }
    SLURM_CONF=$CONF slurmd -f "$CONF" -N "$host" >&2 || { show_logs; cmd_stop; die "slurmd did not start"; }
    wait_node_idle || { show_logs; cmd_stop; die "node $host did not become idle"; }
    say "running: node $host idle, 8 CPUs, state in $STATE_DIR"
    echo "$CONF"
}

stop_daemon() {
    local name=$1 pid_file=$2 pid i
    pid=$(daemon_pid "$name" "$pid_file") || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        [ -d "/proc/$pid" ] || return 0
        sleep 0.1
    done
    say "$name ($pid) ignored SIGTERM for 10 s: killing it"
    kill -KILL "$pid" 2>/dev/null || true
}

cmd_stop() {
    [ -f "$STATE_DIR/$MARKER" ] || { say "not running (no $STATE_DIR/$MARKER)"; return 0; }
    local entry i
    # Jobs first, so no job step outlives slurmd.
    if daemon_pid slurmctld "$STATE_DIR/slurmctld.pid" >/dev/null; then
        SLURM_CONF=$CONF timeout 10 scancel --full --quiet --user=root 2>/dev/null || true
        SLURM_CONF=$CONF timeout 10 scancel --full --quiet --state=PENDING 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            [ -z "$(SLURM_CONF=$CONF timeout 10 squeue --noheader 2>/dev/null)" ] && break
            sleep 0.1
        done
    fi
    for entry in "${DAEMONS[@]}"; do
        stop_daemon "${entry%%:*}" "${entry#*:}"
    done
    rm -rf "$STATE_DIR"
    say "stopped"
}

cmd_status() {
    local entry pid up=0
    if [ ! -f "$STATE_DIR/$MARKER" ]; then
        say "not running (no $STATE_DIR/$MARKER)"
        return 3
    fi
    for entry in "${DAEMONS[@]}"; do
        if pid=$(daemon_pid "${entry%%:*}" "${entry#*:}"); then
            echo "${entry%%:*}: running (pid $pid)"
            up=$((up + 1))
        else
            echo "${entry%%:*}: not running"
        fi
    done
    echo "SLURM_CONF=$CONF"
    SLURM_CONF=$CONF timeout 10 sinfo || true
    [ "$up" -eq ${#DAEMONS[@]} ] && [ -n "$(node_state)" ] || return 3
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *)
        echo "usage: $0 start|stop|status" >&2
        exit 2
        ;;
esac
