#!/usr/bin/env bash
# The store as the CLI reads and keeps it (docs/cli.md "runs", "show", "store"; docs/store.md): show and
# runs print a perf run's stored timing; runs filters; readers never write (a read-only file in a
# read-only folder, a bundle, an empty or missing file); store check, remove and migrate; a damaged
# store refuses a run; --json leaves out the error maps unless --json-maps. Args: PKBW SOURCE_ROOT
set -u
pkbw=$1
root=$2
work=$(mktemp -d)
chmod 0755 "$work" # user nobody reads the read-only copies below it
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export PKBW_STORE=$work/runs.db PKBW_CACHE_DIR=$work/cache
failures=0
fail() { echo "FAIL: $*"; sed 's/^/    /' "$work/out"; failures=$((failures + 1)); }
expect() { # expect CODE DESCRIPTION -- command...
    local want=$1 what=$2
    shift 3
    "$@" >"$work/out" 2>&1
    local got=$?
    if [ "$got" != "$want" ]; then fail "$what: exit $got, expected $want"; else echo "ok: $what (exit $got)"; fi
}
contains() { grep -q -- "$1" "$work/out" || fail "output lacks '$1'"; }
lacks() { ! grep -q -- "$1" "$work/out" || fail "output has '$1'"; }
no_companions() { # no -wal, -shm or -journal beside FILE
    for suffix in -wal -shm -journal; do
        [ ! -e "$1$suffix" ] || { echo "FAIL: $1$suffix appeared"; failures=$((failures + 1)); }
    done
}
same_bytes() { # FILE SUM
    [ "$(sha256sum <"$1")" = "$2" ] || { echo "FAIL: $1 changed"; failures=$((failures + 1)); }
}
json_field() { # python expression over `j`: the one JSON line the last command printed
    python3 -c "import json,sys; j=[json.loads(l) for l in open('$work/out') if l.startswith('{')]; assert len(j) == 1, j; j=j[0]; print($1)"
}
json_lines() { # python expression over `j`: the list of the JSON lines the last command printed
    python3 -c "import json,sys; j=[json.loads(l) for l in open('$work/out') if l.startswith('{')]; print($1)"
}
samples=$root/samples/solutions_host_f32_none_samples_baseline
gen=solutions_host_f32_none_samples_baseline

# A perf run on the host backend (small, quick), then an eval of another problem.
expect 0 "perf on the host" -- "$pkbw" perf --problem 1 --solution host --solutions-dir "$samples" --backend host \
    --nproc 2 --m 128 --n 128 --trials 1 --launches 2 --pairs 2 --iters 10 --no-pkb
expect 0 "eval of problem 2" -- "$pkbw" eval --problem 2 --solution host --solutions-dir "$samples" --backend host \
    --nproc 2 --m 64 --n 64 --trials 1

# show prints what perf_summaries holds for run 1 (read here with Python's sqlite3, not through pkbw).
stored=$(python3 - "$PKBW_STORE" <<'EOF'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
rows = dict(((side, stat), value) for side, stat, value in db.execute(
    "SELECT side, statistic, value FROM perf_summaries WHERE run_id = 1 AND rank = -1"))
names = {1: "faster", -1: "slower", 0: "same", 2: "ambiguous"}
c, r = "candidate", "reference"
print("%.4g %.4g %.4g %s %d %.4g %.4g %.3fx" % (rows[(c, "speedup")], rows[(c, "speedup_ci_low")],
      rows[(c, "speedup_ci_high")], names[int(rows[(c, "verdict")])], int(rows[(c, "launches")]),
      rows[(r, "median_ms")], rows[(c, "median_ms")], rows[(c, "speedup")]))
EOF
)
# listed: the runs list's speedup, three decimals (show keeps four significant digits).
read -r speedup low high verdict launches ref_median cand_median listed <<<"$stored"
echo "stored: speedup $speedup [$low, $high] $verdict, $launches launches, medians $ref_median / $cand_median ms"
expect 0 "show of the perf run" -- "$pkbw" show 1
contains "perf (as stored):"
contains "speedup    ${speedup}x \[$low, $high\] $verdict (band x1.05, $launches launches)"
contains "reference  median $ref_median ms"
contains "candidate  median $cand_median ms"
expect 0 "show --json of the perf run" -- "$pkbw" show 1 --json
[ "$(json_field "'%.4g %s %d %d' % (j['perf']['speedup'], j['perf']['verdict'], j['perf']['verdict_code'], j['perf']['launches'])")" \
    = "$speedup $verdict $(python3 -c "print({'faster':1,'slower':-1,'same':0,'ambiguous':2}['$verdict'])") $launches" ] ||
    fail "show --json perf differs from the store"
[ "$(json_field "'%.4g %.4g' % (j['perf']['sides']['reference']['median_ms'], j['perf']['sides']['candidate']['median_ms'])")" \
    = "$ref_median $cand_median" ] || fail "show --json medians differ from the store"
expect 0 "show --json of an eval run: perf null" -- "$pkbw" show 2 --json
[ "$(json_field "j['perf']")" = "None" ] || fail "an eval run has a perf object"
expect 0 "runs: a speedup column" -- "$pkbw" runs
contains "speedup"
contains "$listed $verdict"
expect 0 "runs --json: perf per run" -- "$pkbw" runs --json
[ "$(json_lines "[r['perf'] and r['perf']['verdict'] for r in j]")" = "[None, '$verdict']" ] || fail "runs --json perf"
[ "$(json_lines "[r['perf'] and r['perf']['withheld'] for r in j]")" = "[None, None]" ] || fail "runs --json: a pass withheld"

# A run whose timing is not trusted (a candidate that skips calls it recognises) keeps its figures in the
# store, for inspection, but no surface shows them as its speedup: the runs list says "untrusted", show
# says why, --json has the reason and no verdict (docs/cli.md "runs", "show"). Its own store.
untrusted_store=$work/untrusted.db
expect 1 "perf of a candidate whose timing is not trusted" -- "$pkbw" perf --problem 1 --backend host --nproc 2 \
    --dtype f32 --solution "$root/tests/adversarial/host/skip_by_count.cpp" --m 128 --n 128 --trials 1 --launches 1 --pairs 2 \
    --iters 10 --no-pkb --store "$untrusted_store"
contains "timing not trusted"
contains "speedup withheld: timing not trusted (invalid_timing)"
lacks "95% CI"
expect 0 "runs of the untrusted run" -- "$pkbw" runs --store "$untrusted_store"
contains "invalid_timing untrusted"
if grep -E "invalid_timing +[0-9.]+x" "$work/out" >/dev/null; then fail "the runs list shows an untrusted speedup"; fi
expect 0 "show of the untrusted run" -- "$pkbw" show 1 --store "$untrusted_store"
contains "perf (as stored; no result: timing not trusted (invalid_timing), the figures for inspection only):"
contains "x \[.*\] withheld"
lacks "\] faster\|\] slower\|\] same\|\] ambiguous"
expect 0 "show --json of the untrusted run" -- "$pkbw" show 1 --json --store "$untrusted_store"
[ "$(json_field "(j['perf']['withheld'], j['perf']['verdict'], j['perf']['verdict_code'], j['perf']['speedup'] > 0)")" \
    = "('timing not trusted (invalid_timing)', None, None, True)" ] || fail "show --json of the untrusted run"

# Filters.
expect 0 "runs --problem 1 (a number)" -- "$pkbw" runs --problem 1 --json
[ "$(json_lines "[r['id'] for r in j]")" = "[1]" ] || fail "runs --problem 1"
expect 0 "runs --problem 2_allgather" -- "$pkbw" runs --problem 2_allgather --json
[ "$(json_lines "[r['id'] for r in j]")" = "[2]" ] || fail "runs --problem 2_allgather"
expect 0 "runs --generation" -- "$pkbw" runs --generation "$gen" --json
[ "$(json_lines "[r['id'] for r in j]")" = "[2, 1]" ] || fail "runs --generation"
expect 0 "runs --generation of another" -- "$pkbw" runs --generation solutions_other --json
[ "$(json_lines "j")" = "[]" ] || fail "runs --generation solutions_other"
expect 0 "runs --status mismatch" -- "$pkbw" runs --status mismatch --json
[ "$(json_lines "j")" = "[]" ] || fail "runs --status mismatch"
expect 2 "runs --status bogus lists the statuses" -- "$pkbw" runs --status bogus
contains "pass, mismatch"
expect 2 "runs --sweep of a missing sweep" -- "$pkbw" runs --sweep 7
contains "no sweep 7"

# --json: no error maps unless --json-maps (the store keeps them either way).
"$pkbw" eval --problem 1 --solution host --solutions-dir "$samples" --backend host --nproc 2 --trials 2 --json \
    >"$work/compact.jsonl" 2>/dev/null || fail "eval --json"
"$pkbw" eval --problem 1 --solution host --solutions-dir "$samples" --backend host --nproc 2 --trials 2 --json \
    --json-maps >"$work/maps.jsonl" 2>/dev/null || fail "eval --json --json-maps"
if grep -q '"error_map"' "$work/compact.jsonl"; then echo "FAIL: --json has error maps"; failures=$((failures + 1)); fi
[ "$(grep -c '"error_map"' "$work/maps.jsonl")" -ge 3 ] || { echo "FAIL: --json-maps has no error maps"; failures=$((failures + 1)); }
for f in compact maps; do
    tail -n 1 "$work/$f.jsonl" | grep -q '"event":"run_finished".*"status":"pass"' ||
        { echo "FAIL: $f.jsonl does not end with a passing run_finished"; failures=$((failures + 1)); }
done
echo "ok: --json $(stat -c %s "$work/compact.jsonl") bytes, --json-maps $(stat -c %s "$work/maps.jsonl") bytes"
expect 0 "the store keeps the maps" -- "$pkbw" store check
python3 - "$PKBW_STORE" <<'EOF' || { echo "FAIL: error maps not stored"; failures=$((failures + 1)); }
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
maps = db.execute("SELECT count(*) FROM tensor_results WHERE run_id = 3 AND length(error_map) > 0").fetchone()[0]
sys.exit(0 if maps == 4 else 1)
EOF

# A bundle read in a writable folder: never switched to WAL, nothing beside it, not a byte changed.
expect 0 "export-bundle" -- "$pkbw" export-bundle 1 2 "$work/b.pkbw"
sum=$(sha256sum <"$work/b.pkbw")
expect 0 "runs --store bundle" -- "$pkbw" runs --store "$work/b.pkbw"
contains "$listed $verdict"
expect 0 "show --store bundle" -- "$pkbw" show 1 --store "$work/b.pkbw"
contains "perf (as stored):"
same_bytes "$work/b.pkbw" "$sum"
no_companions "$work/b.pkbw"
[ "$(od -An -tx1 -j18 -N2 "$work/b.pkbw" | tr -d ' ')" = "0101" ] || { echo "FAIL: the bundle is in WAL"; failures=$((failures + 1)); }

# Empty and missing files are errors naming them, never new stores.
: >"$work/empty.db"
expect 2 "runs --store empty.db" -- "$pkbw" runs --store "$work/empty.db"
contains "$work/empty.db: the file is empty (0 bytes)"
expect 2 "show --store empty.db" -- "$pkbw" show 1 --store "$work/empty.db"
contains "empty.db"
expect 2 "store check empty.db" -- "$pkbw" store check "$work/empty.db"
[ ! -s "$work/empty.db" ] || { echo "FAIL: empty.db was written"; failures=$((failures + 1)); }
no_companions "$work/empty.db"
expect 2 "runs --store none.db" -- "$pkbw" runs --store "$work/none.db"
contains "no store at $work/none.db (no such file"
[ ! -e "$work/none.db" ] || { echo "FAIL: none.db was created"; failures=$((failures + 1)); }

# A read-only store and bundle in a read-only folder: every reader works and nothing is written.
mkdir -p "$work/ro" "$work/out_dir"
cp "$PKBW_STORE" "$work/ro/runs.db"
cp "$work/b.pkbw" "$work/ro/b.pkbw"
no_companions "$work/ro/runs.db"
chmod 0444 "$work/ro/runs.db" "$work/ro/b.pkbw"
chmod 0555 "$work/ro"
chmod 0777 "$work/out_dir"
store_sum=$(sha256sum <"$work/ro/runs.db")
bundle_sum=$(sha256sum <"$work/ro/b.pkbw")
as_reader=()
if [ "$(id -u)" = 0 ]; then
    # root is not bound by the permissions: the readers run as user nobody, who is.
    if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups "$pkbw" --version >/dev/null 2>&1; then
        as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    else
        echo "SKIP (permissions): running as root without setpriv to become nobody; the read-only folder does not" \
             "bind root, so only 'no -wal/-shm beside a bundle, no byte changed' is checked below"
    fi
fi
for store in "$work/ro/runs.db" "$work/ro/b.pkbw"; do
    name=$(basename "$store")
    expect 0 "runs in a read-only folder ($name)" -- "${as_reader[@]}" "$pkbw" runs --store "$store"
    contains "$listed $verdict"
    expect 0 "show in a read-only folder ($name)" -- "${as_reader[@]}" "$pkbw" show 1 --store "$store"
    contains "speedup    ${speedup}x"
    expect 0 "show --json in a read-only folder ($name)" -- "${as_reader[@]}" "$pkbw" show 1 --json --store "$store"
    expect 0 "sweeps in a read-only folder ($name)" -- "${as_reader[@]}" "$pkbw" sweeps --store "$store"
done
if [ ${#as_reader[@]} -gt 0 ] || [ "$(id -u)" != 0 ]; then
    # A run into a store in a folder this user may not write: said in words, not SQLite's.
    expect 3 "eval into a store in a read-only folder" -- "${as_reader[@]}" "$pkbw" eval --problem 1 --solution host \
        --solutions-dir "$samples" --backend host --nproc 2 --trials 1 --store "$work/ro/new.db"
    contains "its folder $work/ro is not writable by this user"
    contains "pass --store a writable path"
fi
expect 1 "store check in a read-only folder (the run folders are elsewhere)" -- \
    "${as_reader[@]}" "$pkbw" store check --store "$work/ro/runs.db"
contains "integrity: ok"
contains "is missing"
expect 0 "export-bundle from a read-only folder" -- \
    "${as_reader[@]}" "$pkbw" export-bundle 1 "$work/out_dir/from_ro.pkbw" --store "$work/ro/runs.db"
expect 0 "the bundle made from it reads" -- "$pkbw" show 1 --store "$work/out_dir/from_ro.pkbw"
contains "perf (as stored):"
same_bytes "$work/ro/runs.db" "$store_sum"
same_bytes "$work/ro/b.pkbw" "$bundle_sum"
no_companions "$work/ro/b.pkbw"
[ ${#as_reader[@]} -eq 0 ] && [ "$(id -u)" = 0 ] || no_companions "$work/ro/runs.db"
chmod 0755 "$work/ro"

# store check, remove, migrate.
expect 0 "store check" -- "$pkbw" store check
contains "integrity: ok"
contains "schema:    version"
run2_dir=$("$pkbw" show 2 --json | python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['run_dir'])")
rm "$run2_dir/rank_1.log"
expect 1 "store check names a missing file" -- "$pkbw" store check --json
[ "$(json_field "[(m['run_id'], m['kind']) for m in j['missing_files']]")" = "[(2, 'log')]" ] || fail "missing files"
expect 2 "store remove of a missing run removes nothing" -- "$pkbw" store remove 2 999
contains "no run 999"
expect 0 "run 2 is still there" -- "$pkbw" show 2
expect 0 "store remove 2" -- "$pkbw" store remove 2
contains "removed run 2"
[ ! -e "$run2_dir" ] || { echo "FAIL: run 2's folder is left"; failures=$((failures + 1)); }
expect 2 "show of the removed run" -- "$pkbw" show 2
expect 0 "store check after the removal" -- "$pkbw" store check
expect 0 "store migrate of a current store" -- "$pkbw" store migrate
contains "schema version"

# A damaged store: a run is refused before anything is written, naming the file.
cp "$PKBW_STORE" "$work/damaged.db"
python3 - "$work/damaged.db" <<'EOF'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
page = 4096
for at in range(len(data) - page, 4 * page - 1, -page):  # the last table or index leaf page
    if data[at] in (0x0D, 0x0A):
        data[at:at + 12] = bytes(12)
        break
open(path, "wb").write(data)
EOF
damaged_sum=$(sha256sum <"$work/damaged.db")
expect 3 "eval into a damaged store" -- "$pkbw" eval --problem 1 --solution host --solutions-dir "$samples" \
    --backend host --nproc 2 --trials 1 --store "$work/damaged.db"
contains "$work/damaged.db: the file is damaged, pkbw writes nothing into it"
same_bytes "$work/damaged.db" "$damaged_sum"
expect 1 "store check of the damaged store" -- "$pkbw" store check "$work/damaged.db"
contains "DAMAGED"
expect 3 "store remove in the damaged store" -- "$pkbw" store remove 1 --store "$work/damaged.db"
contains "damaged"
same_bytes "$work/damaged.db" "$damaged_sum"

exit $((failures > 0))
