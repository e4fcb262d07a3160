#!/usr/bin/env python3
"""tools/check_python_names.py finds a global name that nothing defines, and passes a module whose names
all resolve (the scan of engine/python, tools.python_names, passes when nothing is found, so on its own
it could not tell a clean tree from a blind checker)."""

import pathlib
import subprocess
import sys
import tempfile

CHECKER = pathlib.Path(__file__).resolve().parents[2] / "tools" / "check_python_names.py"

CLEAN = '''
import os
from json import dumps as to_text
try:
    import fcntl
except ImportError:
    fcntl = None
LIMIT = 3


class Worker:
    def run(self, items):
        total = sum(len(to_text(x)) for x in items)
        return os.sep, total < LIMIT, fcntl, Worker, [y for y in items]
'''
# A name a refactoring left behind, used only on a path that CI never runs.
BROKEN = CLEAN + '''

def gpu_only_path():
    return CheckedTiming(LIMIT)
'''


def check(text):
    with tempfile.TemporaryDirectory() as scratch:
        module = pathlib.Path(scratch) / "module.py"
        module.write_text(text)
        result = subprocess.run([sys.executable, str(CHECKER), str(module)], capture_output=True, text=True)
        return result.returncode, result.stdout


def main():
    failures = []
    code, out = check(CLEAN)
    if code != 0:
        failures.append(f"a clean module was flagged (exit {code}):\n{out}")
    code, out = check(BROKEN)
    if code != 1 or "gpu_only_path: CheckedTiming" not in out:
        failures.append(f"the undefined name was not named (exit {code}):\n{out}")
    for failure in failures:
        print(failure)
    print("python names checker:", "FAILED" if failures else "finds the planted name, passes the clean module")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
