# An all-reduce that first tries to leave pkbw's sandbox: to write a file outside its own directory
# ($PKB_TEST_OUTSIDE), to read pkbw's store ($PKB_TEST_STORE), to plant a file in the torch extensions
# folder other solutions share, to write into the folder it was loaded from, and to open pkbw's
# own descriptors through /proc (where a forger finds the ranks' control pipes). It raises, naming
# what got through, if any attempt succeeds; it also raises if its own directory (HOME, TMPDIR) and its
# extensions folder are not writable, so that a sandbox that merely breaks everything does not pass.
import os

import torch
import torch.distributed as dist


def attempts():
    rank = dist.get_rank()
    outside = os.environ.get("PKB_TEST_OUTSIDE", "/nonexistent")
    shared = os.path.dirname(os.path.dirname(os.environ.get("TORCH_EXTENSIONS_DIR", "/nonexistent/x")))
    here = os.path.dirname(os.path.abspath(__file__))

    def write(path):
        with open(path, "w") as out:
            out.write("escaped")

    def read(path):
        with open(path, "rb") as f:
            f.read(16)

    def open_launcher_descriptors():
        # The judge's parent is pkbw, whose descriptors include the read ends of the ranks' control
        # pipes: opening one (not writing to it) is the step a forger needs.
        judge = os.getppid()
        with open(f"/proc/{judge}/status") as status:
            launcher = next(int(line.split()[1]) for line in status if line.startswith("PPid:"))
        for name in os.listdir(f"/proc/{launcher}/fd"):
            try:
                os.close(os.open(f"/proc/{launcher}/fd/{name}", os.O_RDONLY | os.O_NONBLOCK))
                return
            except OSError:
                continue
        raise PermissionError("no descriptor of the launcher's could be opened")

    return [("opened the launcher's descriptors", open_launcher_descriptors),
            (f"wrote {outside}", lambda: write(os.path.join(outside, f"escaped_rank_{rank}"))),
            ("read the store", lambda: read(os.environ.get("PKB_TEST_STORE", "/nonexistent"))),
            ("planted an extension", lambda: write(os.path.join(shared, f"planted_rank_{rank}"))),
            ("wrote its own folder", lambda: write(os.path.join(here, f"escaped_rank_{rank}")))]


def solution(tensor: torch.Tensor) -> torch.Tensor:
    escaped = []
    for what, attempt in attempts():
        try:
            attempt()
            escaped.append(what)
        except OSError:
            pass
    if escaped:
        raise RuntimeError("escaped the sandbox: " + ", ".join(escaped))
    for folder in (os.environ["HOME"], os.environ["TMPDIR"], os.environ["TORCH_EXTENSIONS_DIR"]):
        with open(os.path.join(folder, "own_file"), "w") as out:  # raises if its own folders are closed
            out.write("mine")
    result = tensor.clone()
    dist.all_reduce(result)
    return result
