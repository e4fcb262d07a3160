#!/usr/bin/env python3
"""The PKB worker's sandbox (engine/python/pkbw_sandbox.py) through the real pkbw-sandbox: a torch
extension's compiler installed outside the system's folders (CXX under a prefix of its own, as a GPU
machine's /opt/gcc) runs inside the sandbox and reads its own installation, while the folder beside
it stays closed; a compiler whose prefix holds the run's folder does not open that folder.
Usage: test_pkb_sandbox.py PKBW_SANDBOX_PROGRAM (skipped, exit 77, where Landlock is unavailable)."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "engine", "python"))
import pkbw_sandbox  # noqa: E402

PROGRAM = None


def make_compiler(prefix):
    """A 'compiler' at PREFIX/bin/g++ that reads a file of its own installation (PREFIX/lib), as cc1plus
    and its specs are read from gcc's prefix."""
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "lib"))
    with open(os.path.join(prefix, "lib", "specs"), "w") as f:
        f.write("specs of the test compiler\n")
    compiler = os.path.join(prefix, "bin", "g++")
    with open(compiler, "w") as f:
        f.write(f"#!/bin/sh\ncat {prefix}/lib/specs\n")
    os.chmod(compiler, 0o755)
    return compiler


class ToolchainReads(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="pkbw-sandbox-test-")
        self.saved = {k: os.environ.get(k) for k in ("CXX", "PKBW_SANDBOX")}
        os.environ.pop("PKBW_SANDBOX", None)

    def tearDown(self):
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        subprocess.run(["rm", "-rf", self.folder])

    def run_inside(self, command, run_folder=None):
        sandbox = pkbw_sandbox.worker_sandbox({"sandbox_program": PROGRAM}, None, None, run_folder)
        try:
            env = dict(os.environ, **sandbox.environment)
            return subprocess.run(sandbox.prefix + ["/bin/sh", "-c", command], capture_output=True, text=True,
                                  env=env, timeout=60)
        finally:
            sandbox.close()

    def test_a_compiler_under_its_own_prefix_runs_and_reads_its_installation(self):
        compiler = make_compiler(os.path.join(self.folder, "opt", "gcc"))
        beside = os.path.join(self.folder, "opt", "secret")
        with open(beside, "w") as f:
            f.write("not for the candidate\n")
        os.environ["CXX"] = compiler
        self.assertIn(os.path.join(self.folder, "opt", "gcc"), pkbw_sandbox.toolchain_reads())
        done = self.run_inside(f"{compiler} && cat {beside}")
        self.assertIn("specs of the test compiler", done.stdout, done.stderr)
        self.assertNotIn("not for the candidate", done.stdout)
        self.assertNotEqual(done.returncode, 0, "the file beside the compiler's prefix was readable")

    def test_without_the_toolchain_reads_the_compiler_is_refused(self):
        compiler = make_compiler(os.path.join(self.folder, "opt", "gcc"))
        os.environ.pop("CXX", None)
        self.assertNotIn(os.path.join(self.folder, "opt", "gcc"), pkbw_sandbox.toolchain_reads())
        done = self.run_inside(compiler)
        self.assertNotEqual(done.returncode, 0)
        self.assertNotIn("specs of the test compiler", done.stdout)

    def test_a_prefix_holding_the_run_folder_is_not_opened(self):
        prefix = os.path.join(self.folder, "tools")
        compiler = make_compiler(prefix)
        run_folder = os.path.join(prefix, "runs", "1")
        os.makedirs(run_folder)
        os.environ["CXX"] = compiler
        self.assertNotIn(prefix, pkbw_sandbox.toolchain_reads([run_folder]))
        done = self.run_inside(f"ls {run_folder}", run_folder)
        self.assertNotEqual(done.returncode, 0, "the run's folder was readable inside the sandbox")

    def test_system_prefixes_are_never_opened_whole(self):
        os.environ["CXX"] = "/usr/bin/g++"
        reads = pkbw_sandbox.toolchain_reads()
        for prefix in ("/", "/usr", "/usr/local"):
            self.assertNotIn(prefix, reads)


if __name__ == "__main__":
    PROGRAM = sys.argv.pop(1) if len(sys.argv) > 1 else ""
    probe = subprocess.run([PROGRAM, "--describe", "--"], capture_output=True, text=True) if PROGRAM else None
    if not probe or probe.returncode != 0 or '"landlock_abi":0' in probe.stdout.replace(" ", ""):
        print(f"skipped: pkbw-sandbox cannot sandbox here ({probe and probe.stdout.strip()[:200]})")
        sys.exit(77)
    unittest.main(verbosity=2)
