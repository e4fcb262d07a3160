#!/usr/bin/env bash
# pkbw-gui's command line (review defect 30): --help needs no display; --run with --tab opens that
# run on that tab; --run without --store opens the run in the startup store ($PKBW_STORE).
# Args: PKBW_GUI MAKE_GUI_FIXTURE
set -u
gui=$1
make_fixture=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ids=$("$make_fixture" "$work/fx") || { echo "FAIL: make_gui_fixture: $ids"; exit 1; }
perf_run=$(sed -n 's/.*perf_run=\([0-9]*\).*/\1/p' <<< "$ids")
eval_run=$(sed -n 's/.*eval_run=\([0-9]*\).*/\1/p' <<< "$ids")

out=$(env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$gui" --help 2>&1)
rc=$?
if [ $rc -ne 0 ] || ! grep -q "^Usage: .*FILE" <<< "$out"; then
    fail "--help without a display: rc $rc: $out"
else
    echo "ok: --help without a display"
fi

shot() { # shot NAME ARGS...: pkbw-gui's printed summary of what it showed
    XDG_CONFIG_HOME="$work/config_$1" QT_QPA_PLATFORM=offscreen "$gui" --screenshot "$work/$1.png" "${@:2}" 2>&1 |
        grep '^pkbw-gui: '
}
got=$(shot perf --store "$work/fx/fixture.db" --run "$perf_run" --tab 2)
if grep -q "^pkbw-gui: tab: Perf" <<< "$got" && grep -q "^pkbw-gui: run: $perf_run (" <<< "$got"; then
    echo "ok: --run $perf_run --tab 2 opened the run on Perf"
else
    fail "--run $perf_run --tab 2: $got"
fi
got=$(PKBW_STORE="$work/fx/fixture.db" shot startup --run "$eval_run" --tab 3)
if grep -q "^pkbw-gui: tab: Trace" <<< "$got" && grep -q "^pkbw-gui: run: $eval_run (2_allgather, eval)" <<< "$got"; then
    echo "ok: --run $eval_run without --store opened it in \$PKBW_STORE, on Trace"
else
    fail "--run $eval_run without --store (PKBW_STORE set): $got"
fi
# --screenshot prints the shown tab's headline, what a user reads first there (issue: the workbench
# shows only numbers it trusts): the Run tab's verdict, the Generations tab's counts, the Sweeps tab's
# state, as well as the Perf tab's (tst_trust).
headline() { # headline NAME TAB TEXT: the summary of --run $eval_run --tab TAB has a headline with TEXT
    local got
    got=$(shot "$1" --store "$work/fx/fixture.db" --run "$eval_run" --tab "$2" | grep '^pkbw-gui: headline: ')
    if grep -qF -- "$3" <<< "$got"; then echo "ok: tab $2's headline says '$3'"; else fail "tab $2 headline: $got"; fi
}
headline run_tab 1 "mismatch on rank 1, trial 1"
headline generations_tab 5 "3 generations × 2 problems"
headline sweeps_tab 8 "No sweep in this store"
[ -s "$work/startup.png" ] || fail "no screenshot written"
# --size: a laptop's window (the screenshot is the window's size); a size that is none is refused.
shot laptop --store "$work/fx/fixture.db" --run "$perf_run" --tab 2 --size 1366x768 >/dev/null
got=$(python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); print('%dx%d' % struct.unpack('>II', d[16:24]))" "$work/laptop.png" 2>&1)
[ "$got" = "1366x768" ] && echo "ok: --size 1366x768" || fail "--size 1366x768 gave a $got screenshot"
out=$(QT_QPA_PLATFORM=offscreen "$gui" --size 12 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "WIDTHxHEIGHT" <<< "$out" && echo "ok: --size 12 refused" || fail "--size 12: rc $rc: $out"
if [ $failures -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all command-line checks passed"
