#!/usr/bin/env python3
"""A candidate's kernel launch that failed unchecked (engine/python/pkbw_cuda_errors.py): read from the CUDA
runtime's last-error slot after its call and raised as a cuda_error naming the error, as PKB's harness
reports such a solution (a crash), not left to read as a mismatch. A fake runtime stands in for
libcudart (no GPU here); without a loaded runtime nothing is reported."""
import ctypes
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "engine", "python"))
import pkbw_cuda_errors  # noqa: E402
import pkbw_pkb_candidate  # noqa: E402
import pkbw_pkb_solution  # noqa: E402

NAMES = {1: (b"cudaErrorInvalidValue", b"invalid argument"), 719: (b"cudaErrorLaunchFailure", b"unspecified launch failure")}


class FakeFunction:
    def __init__(self, body):
        self.body, self.restype = body, None

    def __call__(self, *args):
        return self.body(*args)


class FakeRuntime:
    """cudaGetLastError returns the pending code and clears it, as the runtime does."""

    def __init__(self, pending=0):
        self.pending = pending
        self.cudaGetLastError = FakeFunction(self.get_last)
        self.cudaGetErrorName = FakeFunction(lambda code: NAMES.get(code, (b"", b""))[0])
        self.cudaGetErrorString = FakeFunction(lambda code: NAMES.get(code, (b"", b""))[1])

    def get_last(self):
        code, self.pending = self.pending, 0
        return code


class LaunchErrors(unittest.TestCase):
    def test_a_pending_launch_error_is_raised_as_a_cuda_error_and_cleared(self):
        runtime = FakeRuntime(pending=1)
        errors = pkbw_cuda_errors.LaunchErrors(runtime)
        with self.assertRaises(RuntimeError) as raised:
            pkbw_cuda_errors.raise_pending(errors)
        text = str(raised.exception)
        self.assertIn("cudaErrorInvalidValue: invalid argument", text)
        self.assertEqual(pkbw_pkb_solution.error_kind(raised.exception), "cuda_error")
        pkbw_cuda_errors.raise_pending(errors)  # cleared: the next call is not blamed for it
        self.assertEqual(runtime.cudaGetErrorName.restype, ctypes.c_char_p)

    def test_no_pending_error_and_no_runtime_raise_nothing(self):
        pkbw_cuda_errors.raise_pending(pkbw_cuda_errors.LaunchErrors(FakeRuntime(pending=0)))
        pkbw_cuda_errors.raise_pending(None)
        # This test process has no libcudart loaded: no runtime, nothing reported.
        self.assertIsNone(pkbw_cuda_errors.loaded_cudart())
        self.assertIsNone(pkbw_cuda_errors.LaunchErrors().take())

    def test_the_candidates_call_checks_after_synchronising(self):
        """CandidateProcess.op_call: a CUDA call whose launch failed answers with the error, not outputs."""
        process = pkbw_pkb_candidate.CandidateProcess(channel=None)
        synchronised = []

        class Cuda:
            @staticmethod
            def synchronize():
                synchronised.append(True)

        process.torch = type("Torch", (), {"cuda": Cuda})
        process.cuda = True
        process.solution = lambda *args: "outputs never written"
        process.arguments = lambda message, fds: ()
        process.export = lambda result: self.fail("exported the outputs of a failed launch")
        process.launch_errors = pkbw_cuda_errors.LaunchErrors(FakeRuntime(pending=719))
        with self.assertRaises(RuntimeError) as raised:
            process.op_call({}, [])
        self.assertIn("cudaErrorLaunchFailure", str(raised.exception))
        self.assertEqual(synchronised, [True])


if __name__ == "__main__":
    unittest.main(verbosity=2)
