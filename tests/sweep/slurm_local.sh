# Sourced by sweep_slurm.sh: starts a one-node SLURM on localhost (munged, slurmctld, slurmd) with
# every file under $SLURM_STATE, free ports and bounded waits; stop_slurm kills the daemons by pid.
# Notes and pitfalls: docs/sweeps.md "Testing with a real SLURM".
slurm_pids=()
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
stop_slurm() {
    local pid
    for pid in "${slurm_pids[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${slurm_pids[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null
    done
    slurm_pids=()
}
start_slurm() { # start_slurm STATE_DIR CPUS
    local state=$1 cpus=$2
    mkdir -p "$state/munge" "$state/state" "$state/spool" "$state/log"
    chmod 711 "$state" "$state/munge"
    dd if=/dev/urandom of="$state/munge/munge.key" bs=1 count=1024 status=none
    chmod 600 "$state/munge/munge.key"
    munged -F --force --socket="$state/munge/socket" --key-file="$state/munge/munge.key" \
        --pid-file="$state/munge/munged.pid" --log-file="$state/munge/munged.log" \
        --seed-file="$state/munge/seed" > "$state/log/munged.out" 2>&1 &
    slurm_pids+=($!)
    local ok=
    for _ in $(seq 1 50); do
        if munge -S "$state/munge/socket" -n 2>/dev/null | unmunge -S "$state/munge/socket" >/dev/null 2>&1; then ok=1; break; fi
        sleep 0.1
    done
    [ -n "$ok" ] || { echo "munged did not start:"; cat "$state/log/munged.out"; return 1; }
    local ctld_port slurmd_port
    ctld_port=$(free_port); slurmd_port=$(free_port)
    cat > "$state/slurm.conf" <<CONF
ClusterName=pkbwtest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$state/munge/socket
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=5
MinJobAge=600
StateSaveLocation=$state/state
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF=$state/slurm.conf
    slurmctld -D -c > "$state/log/slurmctld.out" 2>&1 &
    slurm_pids+=($!)
    slurmd -D -N localhost > "$state/log/slurmd.out" 2>&1 &
    slurm_pids+=($!)
    for _ in $(seq 1 150); do
        if timeout 5 sinfo -h -o '%t' 2>/dev/null | grep -qx 'idle'; then return 0; fi
        sleep 0.2
    done
    echo "slurm did not become idle in 30 s:"; timeout 5 sinfo 2>&1; tail -20 "$state/log/slurmctld.log" "$state/log/slurmd.log"
    return 1
}
