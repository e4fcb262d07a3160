#!/usr/bin/env python3
"""The PKB Python judge's handling of the candidate's chrome trace (engine/python/pkbw_pkb_worker.py):
the descriptor the candidate's process sends is read only if it is a regular file within the limit,
and the file is written into trace/candidate without following a link the candidate left there."""
import os
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "engine", "python"))
import pkbw_pkb_worker as worker  # noqa: E402
from pkbw_pkb_timed_loops import TRACE_LIMIT_BYTES  # noqa: E402


class WriteBesideCandidate(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.TemporaryDirectory(prefix="pkbw-pkb-trace-")
        self.folder = os.path.join(self.work.name, "trace", "candidate")
        os.makedirs(self.folder)
        self.outside = os.path.join(self.work.name, "config.json")
        with open(self.outside, "w") as f:
            f.write("the judge's file")

    def tearDown(self):
        self.work.cleanup()

    def test_a_link_left_under_the_name_is_replaced_not_written_through(self):
        path = os.path.join(self.folder, "rank_0.candidate.torch.json")
        os.symlink(self.outside, path)
        worker.write_beside_candidate(self.folder, "rank_0.candidate.torch.json", b"[]")
        with open(self.outside) as f:
            self.assertEqual(f.read(), "the judge's file")
        self.assertFalse(os.path.islink(path))
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"[]")

    def test_a_folder_that_is_a_link_is_not_entered(self):
        elsewhere = os.path.join(self.work.name, "elsewhere")
        os.makedirs(elsewhere)
        linked = os.path.join(self.work.name, "linked")
        os.symlink(elsewhere, linked)
        with self.assertRaises(OSError):
            worker.write_beside_candidate(linked, "rank_0.candidate.torch.json", b"[]")
        self.assertEqual(os.listdir(elsewhere), [])


class ReadCandidateTrace(unittest.TestCase):
    def test_a_memfd_within_the_limit_is_read(self):
        fd = os.memfd_create("trace")
        try:
            os.write(fd, b'{"traceEvents": []}')
            self.assertEqual(worker.read_candidate_trace(fd), (b'{"traceEvents": []}', None))
        finally:
            os.close(fd)

    def test_a_pipe_is_refused_without_waiting_for_its_writer(self):
        read_end, write_end = os.pipe()
        try:
            start = time.monotonic()
            data, why = worker.read_candidate_trace(read_end)
            self.assertLess(time.monotonic() - start, 1.0)
            self.assertIsNone(data)
            self.assertIn("not a memfd", why)
        finally:
            os.close(read_end)
            os.close(write_end)

    def test_a_sparse_memfd_over_the_limit_is_refused_by_size_before_reading(self):
        fd = os.memfd_create("trace")
        try:
            os.ftruncate(fd, 4 << 30)
            start = time.monotonic()
            data, why = worker.read_candidate_trace(fd)
            self.assertLess(time.monotonic() - start, 1.0)
            self.assertIsNone(data)
            self.assertIn(f"{4 << 30} bytes, over {TRACE_LIMIT_BYTES}", why)
        finally:
            os.close(fd)


if __name__ == "__main__":
    unittest.main()
