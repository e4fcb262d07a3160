#!/usr/bin/env bash
# pkbw-rank's rendezvous from the environment (issue 17): MASTER_ADDR may be a host name; a rendezvous
# that cannot resolve or reach rank 0 exits 3 (environment, core/status.h), not 5 (internal).
# Args: PKBW PKBW_RANK
set -u
pkbw=$1
rank=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PKBW_STORE=$work/runs.db PKBW_CACHE_DIR=$work/cache
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# A real configuration: the one a dryrun of the reference wrote (host backend, 2 ranks).
"$pkbw" dryrun --problem 1 --solution reference --nproc 2 --backend host > "$work/dryrun.txt" 2>&1 ||
    { cat "$work/dryrun.txt"; echo "FAIL: dryrun"; exit 1; }
run_dir=$("$pkbw" show 1 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['run_dir'])")
config=$run_dir/config.json
[ -f "$config" ] || { echo "FAIL: no $config"; exit 1; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

env RANK=0 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid MASTER_PORT="$(port)" PKBW_RDZV_TOKEN=t \
    "$rank" --config "$config" > "$work/bad.txt" 2>&1
code=$?
[ "$code" = 3 ] || fail "unresolvable MASTER_ADDR: exit $code, expected 3 (environment)"
grep -q "'no-such-host.invalid' does not resolve" "$work/bad.txt" || { fail "no resolve error"; cat "$work/bad.txt"; }
events=$(ls "$run_dir"/rank_0.events.jsonl 2>/dev/null)
[ -z "$events" ] || grep -q '"kind":"environment"' "$events" || fail "the error event is not kind environment"

# (Rank 0 unreachable takes the 60 s connect window: engine.Rendezvous.UnreachableRankZeroIsAnEnvironmentError
# checks it throws RendezvousError, which the same catch turns into exit 3.)

# A host name that resolves (this machine's, when it has an IPv4 address): both ranks meet.
name=$(hostname)
if getent ahostsv4 "$name" >/dev/null 2>&1; then
    p=$(port)
    for r in 0 1; do
        env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR="$name" MASTER_PORT="$p" PKBW_RDZV_TOKEN=tok \
            timeout 100 "$rank" --config "$config" > "$work/ok_$r.txt" 2>&1 &
    done
    for r in 0 1; do
        wait -n; code=$?
        [ "$code" = 0 ] || { fail "MASTER_ADDR=$name: a rank exited $code"; cat "$work"/ok_*.txt; }
    done
else
    echo "note: $name has no IPv4 address; the host-name join is covered by engine.Rendezvous.HostNameIsResolved"
fi
echo "rank_rendezvous: $failures failures"
exit $((failures > 0))
