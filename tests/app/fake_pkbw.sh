#!/bin/sh
# Stands in for `pkbw ... --json` in the launcher test: prints a protocol stream for 2 ranks and
# 2 trials (with a stray non-JSON line), or waits to be cancelled when the problem is "hang".
case " $* " in *" --problem hang "*) HANG=1 ;; esac
if [ -n "$HANG" ]; then
    trap 'echo "{\"event\":\"run_finished\",\"run_id\":9,\"status\":\"interrupted\",\"exit_code\":130,\"message\":\"cancelled\"}"; exit 130' TERM
    echo '{"event":"run_started","run_id":9,"world_size":2}'
    while :; do sleep 0.1; done
fi
echo '{"event":"run_started","run_id":7,"world_size":2}'
echo '{"event":"compile","side":"candidate","status":"ok"}'
echo 'a stray line'
for t in 0 1; do
    for r in 0 1; do
        echo "{\"event\":\"phase\",\"rank\":$r,\"phase\":\"compare\",\"trial\":$t}"
        echo "{\"event\":\"rank_result\",\"rank\":$r,\"trial\":$t,\"status\":\"pass\",\"message\":\"\",\"tensors\":[]}"
    done
done
echo '{"event":"log","rank":1,"text":"hello from rank 1"}'
echo '{"event":"rank_done","rank":0,"trials_run":2}'
echo '{"event":"rank_done","rank":1,"trials_run":2}'
echo '{"event":"run_finished","run_id":7,"status":"pass","exit_code":0,"message":"","trials":[]}'
