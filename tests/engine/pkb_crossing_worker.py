#!/usr/bin/env python3
"""The worker end of tests/engine/test_pkb_crossing.py: a process of its own that rebuilds the test's
inputs with pkbw_pkb_candidate.CandidateProcess.inputs (as the candidate's process and the reference's
timing worker do) under the fake torch (pkb_fake_torch.py), and answers with a JSON description of what
it rebuilt. Tensors come in the message itself ("fake_tensors"), in place of shared memory.
Args: CHANNEL_FD RANK WORLD."""
import os
import socket
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(os.path.dirname(HERE)), "engine", "python")]
import pkb_fake_torch  # noqa: E402,F401 - installs torch
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from pkbw_channel import Channel, ChannelClosed, close_fds  # noqa: E402
from pkbw_pkb_candidate import CandidateProcess  # noqa: E402
from pkbw_pkb_solution import error_kind  # noqa: E402
from pkbw_value_encoding import type_name  # noqa: E402


def describe(value, seen):
    """A JSON description that names each value's exact type; objects seen before (shared tensors,
    tied weights) are {"same": their first description's number}."""
    if isinstance(value, (torch.Tensor, torch.nn.Module, torch.Generator, dist.ProcessGroup)) or \
            hasattr(value, "__dataclass_fields__"):
        if id(value) in seen:
            return {"same": seen[id(value)]}
        seen[id(value)] = len(seen)
    kind = type_name(value)
    if isinstance(value, torch.SparseTensor):
        return {"type": kind, "indices": describe(value.indices, seen), "values": describe(value.nonzeros, seen),
                "size": list(value.shape), "coalesced": value.coalesced, "requires_grad": value.requires_grad}
    if isinstance(value, torch.Tensor):
        return {"type": kind, "values": value.values, "shape": list(value.shape), "dtype": value.dtype.name,
                "requires_grad": value.requires_grad}
    if isinstance(value, torch.nn.Module):
        return {"type": kind, "attributes": {k: describe(v, seen) for k, v in sorted(vars(value).items())
                                             if not k.startswith("_")},
                "parameters": {k: describe(v, seen) for k, v in value._parameters.items()},
                "modules": {k: describe(v, seen) for k, v in value._modules.items()}}
    if isinstance(value, dist.ProcessGroup):
        return {"type": kind, "group": "world" if value is dist.group.WORLD else list(value.ranks)}
    if isinstance(value, torch.Generator):
        return {"type": kind, "device": str(value.device), "state": list(value.state)}
    if hasattr(value, "__dataclass_fields__"):
        return {"type": kind, "fields": {k: describe(v, seen) for k, v in vars(value).items()}}
    if isinstance(value, (list, tuple)):
        return {"type": kind, "items": [describe(v, seen) for v in value]}
    if isinstance(value, dict):
        return {"type": kind, "items": [[describe(k, seen), describe(v, seen)] for k, v in value.items()]}
    if isinstance(value, (torch.dtype, torch.device)):
        return {"type": kind, "value": str(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"type": kind, "value": value}
    return {"type": kind, "value": repr(value)}


def main():
    fd, rank, world = (int(x) for x in sys.argv[1:4])
    dist.set_world(rank, world)
    link = Channel(socket.socket(fileno=fd))
    process = CandidateProcess(link)
    process.torch, process.dist, process.rank, process.world = torch, dist, rank, world
    while True:
        try:
            message, fds = link.recv()
        except ChannelClosed:
            return
        close_fds(fds)
        wire = message.get("fake_tensors", [])
        try:
            args = process.inputs(message, lambda i: torch.Tensor.from_wire(wire[i]))
            reply = {"ok": True, "args": describe(args, {}), "new_group_calls": dist.calls}
        except Exception as error:  # noqa: BLE001 - the test reads the kind and the text
            reply = {"ok": False, "kind": error_kind(error), "type": type(error).__name__,
                     "message": str(error)}
        link.send(reply)


if __name__ == "__main__":
    main()
