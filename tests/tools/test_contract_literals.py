#!/usr/bin/env python3
"""tools/check_contract_literals.py finds each shape of a run-contract literal and nothing else.

The scan of the real tree (tools.contract_literals) passes when nothing is found, so on its own it
could not tell a clean tree from a blind scanner: this plants each shape in a scratch tree.
"""

import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKER = ROOT / "tools" / "check_contract_literals.py"

# Each line is a contract word written as a literal: the checker must name it.
FLAGGED = [
    'events_.send({{"event", "x"}, {"phase", "rendezvous"}});',
    'json j = {{"status", "pass"}};',
    'json j = {{"kind", "environment"}};',
    'phase("inputs", trial);',
    'candidate_broke(failure, "perf", 0);',
    'set_phase(rank, spec, "start");',
    'throw DeviceError("cuda_error", "boom");',
    'throw CandidateFailure("environment", "boom");',
    'auto k = ready->value("kind", "environment");',
    'auto s = json_text(result, "status", "error");',
    'if (verdict.status == "pass") {}',
    'if (rank_status != "mismatch") {}',
    'if (final_status_ == QLatin1String("pass")) {}',
    'verdict.status = "crash";',
    'std::string status = "pass";',
    'note("invalid_output", text);',
    'return fail("error", kExitUsage, message);',
    'if (phase == "teardown") {}',
    'cand.phase = "compare";',
    '::_exit(5);',
    'std::exit(3);',
    'if (report.exit_code == 4) {}',
    'set_sweep_status(store, id, "running");',
    'set_sweep_status(store, id, done ? "done" : "incomplete");',
    'if (table.sweep.status == "submitted") {}',
    'pair.state = "failed";',
    'return interrupt_signal() != 0 ? 130 : 0;',
    'if (pair.state != "done") {}',
]
# Words spelled like the contract's in other roles: the checker must leave them alone.
FREE = [
    'app.add_flag("--perf", perf, "time the solution");',
    'config["perf"] = json::object();',
    'out << "pass" << "\\n"; // a log sentence',
    '// {"status", "pass"} is what a rank sends',
    'if (type == "error") {}',
    'verdict.exit_code = 3;',
    'return 3;',
    'std::string severity = "error";',
    'phase(status::kPhaseInputs, trial);',
    'TimedWorker reference{"reference", worker, false};',
    'set_sweep_status(store, id, sweep_status::kDone);',
    'out << json{{"done", table.done}};',
    'progress.finished(failed, "failed", 0);',
    'return 1;',
]


# In the folders of pkbw's commands a returned 1, 2 or 3 is pkbw's exit code; elsewhere it is free.
COMMAND_FLAGGED = [
    'return 2;',
    'return std::cout ? 0 : 1;',
]
COMMAND_FREE = [
    'out.floored_blocks += floored ? 1 : 0;',
    'const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;',
    'return status::kExitUsage;',
]


def run_checker(lines, folder="engine"):
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        (root / "core/include/pkbw/core").mkdir(parents=True)
        (root / "core/include/pkbw/core/status.h").write_text("// stand-in\n")
        (root / folder).mkdir(parents=True)
        (root / folder / "planted.cpp").write_text("\n".join(lines) + "\n")
        result = subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True, text=True)
        return result.returncode, result.stdout


def main():
    failures = []
    for line in FLAGGED:
        code, out = run_checker([line])
        if code != 1 or "engine/planted.cpp:1:" not in out:
            failures.append(f"not flagged (exit {code}): {line}")
    code, out = run_checker(FREE)
    if code != 0:
        failures.append(f"flagged words that are not the contract (exit {code}):\n{out}")
    code, out = run_checker(FREE + FLAGGED[:1])
    if code != 1 or f"engine/planted.cpp:{len(FREE) + 1}:" not in out:
        failures.append(f"the line number of a hit is wrong:\n{out}")
    for line in COMMAND_FLAGGED:
        code, out = run_checker([line], "engine/cli")
        if code != 1 or "engine/cli/planted.cpp:1:" not in out:
            failures.append(f"not flagged in engine/cli (exit {code}): {line}")
    code, out = run_checker(COMMAND_FREE, "engine/run")
    if code != 0:
        failures.append(f"flagged in engine/run what is not an exit code (exit {code}):\n{out}")
    for failure in failures:
        print(failure)
    print(f"{len(FLAGGED) + len(COMMAND_FLAGGED)} planted literals, {len(FREE) + len(COMMAND_FREE)} free lines: "
          f"{'FAILED' if failures else 'all as expected'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
