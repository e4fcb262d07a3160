"""A side's solution module, loaded from its file (the candidate's in its process, PKB's reference in the
judge and in the reference's timing worker), and the kind a side's failure is reported as.
"""

import importlib.util
import sys

from pkbw_value_encoding import InputsNotRebuilt


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "solution"):
        raise AttributeError(f"{path} defines no solution()")
    return module


class OutputRefused(Exception):
    """The solution returned something that cannot be described to the judge."""


def error_kind(error):
    if isinstance(error, OutputRefused):
        return "invalid_output"
    if isinstance(error, InputsNotRebuilt):
        return "input_error"
    text = str(error)
    return "cuda_error" if "CUDA error" in text or "cudaError" in text else "solution_error"
