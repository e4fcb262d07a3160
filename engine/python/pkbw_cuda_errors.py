"""A kernel launch of the candidate's that failed and that its code never checked (a grid or block too
large, too much shared memory, an invalid argument): the CUDA runtime keeps the error in its last-error
slot, PyTorch raises it at its next checked kernel launch, and PKB's harness then reports the solution
as crashed. The candidate's process runs no kernel of torch's after the call (it synchronises and exports
the outputs), so without this check such a call would read as a mismatch (outputs never written) rather
than the launch error it is.

The slot read is the one of the CUDA runtime library torch and the solution's extensions share
(libcudart.so, found in this process's mappings); where there is none (a CPU run, a statically linked
runtime) nothing is reported.
"""
import ctypes
import os


def loaded_cudart():
    """The libcudart.so this process has loaded, or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6 and os.path.basename(fields[5]).startswith("libcudart.so"):
                    return ctypes.CDLL(fields[5])
    except OSError:
        pass
    return None


class LaunchErrors:
    """take(): the pending launch error as "cudaErrorName: description" (and clears it), or None."""

    def __init__(self, library=None):
        self.library = library if library is not None else loaded_cudart()
        if self.library is not None:
            for name in ("cudaGetErrorName", "cudaGetErrorString"):
                getattr(self.library, name).restype = ctypes.c_char_p
            self.library.cudaGetLastError.restype = ctypes.c_int

    def take(self):
        if self.library is None:
            return None
        code = self.library.cudaGetLastError()
        if code == 0:
            return None
        name = (self.library.cudaGetErrorName(code) or b"").decode(errors="replace")
        text = (self.library.cudaGetErrorString(code) or b"").decode(errors="replace")
        return f"{name or 'error ' + str(code)}: {text}"


def raise_pending(errors):
    """Raises RuntimeError("CUDA error: ...") when a launch error is pending (error_kind: cuda_error)."""
    pending = errors.take() if errors is not None else None
    if pending:
        raise RuntimeError(f"CUDA error: a kernel launch in the candidate's call failed and its code did not "
                           f"check it: {pending} (PyTorch raises it at its next kernel launch; PKB's harness "
                           f"reports the solution as crashed)")
