#!/bin/sh
# Stands in for a slow `pkbw problems --json` (a cold disk, a network home): answers after 2 s, so the
# test can show that the launcher and the Problems tab are built without waiting for it.
[ "$1 $2" = "problems --json" ] || { echo "slow_problems_pkbw.sh: only 'problems --json'" >&2; exit 2; }
sleep 2
echo '[{"id":1,"stem":"1_allreduce","title":"All-reduce","folder":"","files":{}},'
echo ' {"id":2,"stem":"2_allgather","title":"All-gather","folder":"","files":{}}]'
