#!/usr/bin/env python3
"""Which Python a PKB run takes (engine/run/run_pkb.cpp, docs/pkb-interop.md "Which Python"): --python,
else $PKBW_PYTHON, as given; else the first of the checkout's .venv/bin/python and each python3 and
python on PATH that imports torch; the run says which ran and how it was chosen, and when none imports
torch the error lists what was tried. The interpreters are fakes (shell scripts that answer
`-c "import torch"` as told and note each probe and each launch), so no torch is needed.
Args: PKBW SOURCE_ROOT"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

PKBW, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
del sys.argv[1:3]
MINIATURE = os.path.join(ROOT, "tests", "engine", "pkb_checkout")

FAKE = """#!/bin/sh
if [ "$1" = "-c" ]; then
    echo "probe $0" >> "{log}"
    exit {answer}
fi
echo "launch $0" >> "{log}"
exit 3
"""


class InterpreterChoice(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.TemporaryDirectory(prefix="pkbw-python-choice-")
        self.log = os.path.join(self.work.name, "log")
        self.checkout = os.path.join(self.work.name, "checkout")
        os.makedirs(self.checkout)
        for folder in ("reference", "utils"):
            os.symlink(os.path.join(MINIATURE, folder), os.path.join(self.checkout, folder))

    def tearDown(self):
        self.work.cleanup()

    def fake(self, path, torch):
        """A fake interpreter at work/path that imports torch or not."""
        path = os.path.join(self.work.name, path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(FAKE.format(log=self.log, answer=0 if torch else 1))
        os.chmod(path, 0o755)
        return path

    def run_pkbw(self, path_dirs, *extra, environment=None, json_lines=False):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PKBW_")}
        env.update(PATH=":".join(os.path.join(self.work.name, d) for d in path_dirs),
                   PKBW_STORE=os.path.join(self.work.name, "runs.db"),
                   PKBW_CACHE_DIR=os.path.join(self.work.name, "cache"),
                   HOME=self.work.name)
        env.update(environment or {})
        argv = [PKBW, "eval", "--pkb-checkout", self.checkout, "--problem", "1", "--solution",
                os.path.join(self.checkout, "reference", "1_allreduce.py"), "--dtype", "f32", "--backend", "host",
                "--nproc", "1", "--trials", "1", *extra] + (["--json"] if json_lines else [])
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120,
                              cwd=self.work.name)
        return done.returncode, done.stdout + done.stderr

    def events(self):
        try:
            with open(self.log) as f:
                return [line.split() for line in f]
        except FileNotFoundError:
            return []

    def launched(self):
        return [path for what, path in self.events() if what == "launch"]

    def probed(self):
        return [path for what, path in self.events() if what == "probe"]

    def test_the_first_on_path_that_imports_torch_runs_and_the_run_says_so(self):
        without = self.fake("a/python3", torch=False)
        with_torch = self.fake("b/python3", torch=True)
        _, out = self.run_pkbw(["a", "b"])
        self.assertIn(f"Python:   {with_torch}  (the first python3/python on PATH that imports torch; passed over: "
                      f"{without} (cannot import torch))", out)
        self.assertEqual(self.launched(), [with_torch])

    def test_json_runs_say_it_in_an_event_of_its_own(self):
        without = self.fake("a/python3", torch=False)
        with_torch = self.fake("b/python3", torch=True)
        _, out = self.run_pkbw(["a", "b"], json_lines=True)
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        said = [e for e in events if e.get("event") == "python"]
        self.assertEqual(len(said), 1, out)
        self.assertEqual((said[0]["path"], said[0]["chosen_by"], said[0]["passed_over"]),
                         (with_torch, "PATH", [f"{without} (cannot import torch)"]))
        self.assertNotIn("rank", said[0])  # the launcher's, not a rank's
        self.assertTrue(said[0]["text"].startswith(f"python: {with_torch} (the first python3/python on PATH"))
        self.assertEqual([e["event"] for e in events[:2]], ["run_started", "python"])

    def test_python_is_tried_after_python3_in_the_same_folder(self):
        self.fake("a/python3", torch=False)
        python = self.fake("a/python", torch=True)
        self.run_pkbw(["a"])
        self.assertEqual(self.launched(), [python])

    def test_the_checkouts_venv_comes_before_path(self):
        venv = self.fake("checkout/.venv/bin/python", torch=True)
        self.fake("a/python3", torch=True)
        _, out = self.run_pkbw(["a"])
        self.assertIn(f"Python:   {venv}  (the checkout's .venv, which imports torch)", out)
        self.assertEqual(self.launched(), [venv])

    def test_a_venv_without_torch_is_passed_over(self):
        venv = self.fake("checkout/.venv/bin/python", torch=False)
        on_path = self.fake("a/python3", torch=True)
        _, out = self.run_pkbw(["a"])
        self.assertIn(f"passed over: {venv} (cannot import torch)", out)
        self.assertEqual(self.launched(), [on_path])

    def test_python_and_pkbw_python_are_taken_as_given(self):
        given = self.fake("given/python3", torch=False)
        flag = self.fake("flag/python3", torch=False)
        self.fake("a/python3", torch=True)
        _, out = self.run_pkbw(["a"], environment={"PKBW_PYTHON": given})
        self.assertIn(f"Python:   {given}  ($PKBW_PYTHON)", out)
        self.assertEqual((self.launched(), self.probed()), ([given], []))
        os.remove(self.log)
        _, out = self.run_pkbw(["a"], "--python", flag, environment={"PKBW_PYTHON": given})
        self.assertIn(f"Python:   {flag}  (--python)", out)
        self.assertEqual((self.launched(), self.probed()), ([flag], []))

    def test_one_interpreter_reached_twice_is_probed_once(self):
        without = self.fake("a/python3", torch=False)
        os.makedirs(os.path.join(self.work.name, "c"))
        os.symlink(without, os.path.join(self.work.name, "c", "python3"))
        with_torch = self.fake("b/python3", torch=True)
        self.run_pkbw(["a", "c", "b"])
        self.assertEqual(self.probed(), [without, with_torch])
        self.assertEqual(self.launched(), [with_torch])

    def test_when_none_imports_torch_the_error_lists_what_was_tried(self):
        venv = self.fake("checkout/.venv/bin/python", torch=False)
        first = self.fake("a/python3", torch=False)
        second = self.fake("b/python", torch=False)
        code, out = self.run_pkbw(["a", "b"])
        self.assertEqual(code, 3, out)
        self.assertIn(f"no Python with torch found: tried {venv} (cannot import torch), {first} (cannot import "
                      f"torch), {second} (cannot import torch) (give one with --python or $PKBW_PYTHON)", out)
        self.assertEqual(self.launched(), [])

    def test_an_empty_path_says_there_is_none(self):
        code, out = self.run_pkbw(["nothing-here"])
        self.assertEqual(code, 3, out)
        self.assertIn("no Python with torch found: no python3 or python on PATH", out)


if __name__ == "__main__":
    unittest.main()
