"""Values crossing between PKB's Python judge and its workers (a call's inputs, its output) as a JSON
tree, written by encode_value and read, every node checked, by decode_value; InputEncoder (the judge)
and InputDecoder (a worker) carry the inputs that are more than tensors and plain values.
"""

import base64
import io
import numbers
import pickle
import types

from pkbw_channel import ProtocolError
from pkbw_tensor_layout import dtype_named

MAX_DEPTH = 64


# Values: inputs and outputs as a JSON tree whose tensor leaves index a list of tensor descriptions.
# Tuples, lists, dicts, torch.Size and plain scalars keep their types, so the judge's PKB comparison
# (walk_mismatch) and output naming see exactly what the solution returned.
#
# Inputs (the judge to a worker, never the other way) may hold more: whatever PKB's create_input_tensor
# returns (docs/pkb-interop.md, "What crosses"). Those values travel as two more kinds of node, written
# by an InputEncoder in the judge and read by an InputDecoder in the worker only; decode_value without
# a decoder (the judge reading a worker's reply) refuses both:
#   {"x": id}  a leaf rebuilt in the worker from its id (InputEncoder.leaf): a Parameter, a tensor that
#              requires grad, a sparse COO tensor, a process group, a torch.Generator;
#   {"o": {"type", "pickle"}}  any other object (an nn.Module such as PKB's nn.Linear, a dataclass, a
#              named tuple), pickled in the judge with every leaf above and every tensor replaced by its
#              id: the tensors themselves cross as all tensors do (memfd, CUDA buffers, slots), never in
#              the pickle. The worker trusts its judge; the judge never unpickles.

def encode_value(value, torch, tensor, path="output", depth=0, inputs=None):
    """tensor(t, path) -> index of its description. inputs: the judge's InputEncoder when the value is
    a worker's input, else None. Raises TypeError naming the path."""
    if depth > MAX_DEPTH:
        raise TypeError(f"{path}: nested deeper than {MAX_DEPTH} levels")
    if inputs is not None:
        leaf = inputs.leaf(value, path)
        if leaf is not None:
            return {"x": leaf}
    if isinstance(value, torch.Tensor):
        return {"t": tensor(value, path)}
    if isinstance(value, torch.Size):
        return {"z": [int(x) for x in value]}
    if isinstance(value, bool):
        return {"b": value}
    if value is None:
        return {"n": None}
    if isinstance(value, str):
        return {"s": value}
    if isinstance(value, numbers.Integral):
        return {"i": int(value)}
    if isinstance(value, numbers.Real):
        return {"f": float(value)}
    if isinstance(value, torch.dtype):
        return {"y": str(value).split(".")[-1]}
    if isinstance(value, torch.device):
        return {"v": str(value)}
    # An input of a container's subclass (a named tuple, an OrderedDict) keeps its type: pickled below.
    plain = inputs is None or type(value) in (list, tuple, dict)
    # Paths as PKB names outputs (core/outputs.h): a top-level tuple's items are output_<i>, a
    # top-level dict's entries their keys.
    top = depth == 0 and path == "output"
    if isinstance(value, (list, tuple)) and plain:
        items = [encode_value(x, torch, tensor, f"output_{i}" if top else f"{path}[{i}]", depth + 1, inputs)
                 for i, x in enumerate(value)]
        return {"u" if isinstance(value, tuple) else "l": items}
    if isinstance(value, dict) and plain:
        pairs = []
        for key, item in value.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise TypeError(f"{path}: a dict key of type {type(key).__name__}")
            pairs.append([encode_value(key, torch, tensor, path, depth + 1, inputs),
                          encode_value(item, torch, tensor, str(key) if top else f"{path}.{key}", depth + 1,
                                       inputs)])
        return {"d": pairs}
    if inputs is not None:
        return {"o": inputs.pickled(value, path)}
    raise TypeError(f"{path}: a value of type {type(value).__name__} cannot cross between the "
                    "candidate's process and the judge (tensors, tuples, lists, dicts, torch.Size, "
                    "numbers, strings and None can)")


def type_name(value):
    kind = type(value)
    module = getattr(kind, "__module__", "") or ""
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


# Modules a worker does not have (the judge's reference, the candidate's module, the judge's own
# script): a class or function of theirs cannot be rebuilt there.
NOT_IN_WORKERS = ("pkbw_pkb_reference", "solution_mod", "__main__")


class InputEncoder:
    """The judge's side of inputs beyond tensors and plain values. tensor(t, path) is the send's own
    (the memfd, the CUDA buffers, the slots): every tensor, inside a module too, travels by it."""

    def __init__(self, torch, tensor):
        self.torch, self.tensor = torch, tensor
        self.dist = getattr(torch, "distributed", None)
        self.group_type = getattr(self.dist, "ProcessGroup", None) if self.dist is not None else None

    def leaf(self, value, path, plain_tensors=False):
        """The id (a tuple) of a value that is rebuilt in the worker from it, or None. A tensor that needs
        nothing but its bytes is None unless plain_tensors (inside a pickle, every tensor has an id)."""
        torch = self.torch
        if isinstance(value, torch.Tensor):
            grad = bool(value.requires_grad)
            if value.layout == torch.sparse_coo:
                value = value.detach()
                return ("sc", self.tensor(value._indices(), f"{path}.indices"),
                        self.tensor(value._values(), f"{path}.values"), tuple(int(x) for x in value.shape),
                        bool(value.is_coalesced()), grad)
            if value.layout != torch.strided:
                raise TypeError(f"{path}: a {value.layout} tensor cannot cross between the judge and the "
                                "worker (strided and sparse COO tensors can)")
            if isinstance(value, torch.nn.Parameter):
                return ("p", self.tensor(value, path), grad)
            if grad or plain_tensors:
                return ("t", self.tensor(value, path), grad)
            return None
        if self.group_type is not None and isinstance(value, self.group_type):
            return ("g", self.group_ranks(value, path))
        generator = getattr(torch, "Generator", None)
        if generator is not None and isinstance(value, generator):
            state = bytes(value.get_state().tolist())
            return ("G", str(value.device), base64.b64encode(state).decode())
        return None

    def group_ranks(self, group, path):
        """"world" for the default group, else the group's global ranks (sorted, as dist.new_group
        keeps them)."""
        dist = self.dist
        if group is dist.group.WORLD:
            return "world"
        try:
            ranks = dist.get_process_group_ranks(group)
        except Exception as error:  # noqa: BLE001 - any failure: the group cannot be named
            raise TypeError(f"{path}: a process group whose ranks cannot be read ({error})") from None
        return tuple(sorted(int(r) for r in ranks))

    def pickled(self, value, path):
        """An object as a pickle whose leaves and tensors are ids (the "o" node's body)."""
        encoder, ids = self, {}
        names = {}
        try:  # an nn.Module's tensors by their names (input[3].weight), for the messages
            try:
                named = list(value.named_parameters(remove_duplicate=False))
            except TypeError:  # torch before 2.0
                named = list(value.named_parameters())
            names = {id(t): f"{path}.{name}" for name, t in named + list(value.named_buffers())}
        except Exception:  # noqa: BLE001 - not a module: numbered names
            pass

        class Pickler(pickle.Pickler):
            def persistent_id(self, obj):
                key = id(obj)
                if key in ids:
                    return ids[key]
                if isinstance(obj, (type, types.FunctionType)) and getattr(obj, "__module__", None) in NOT_IN_WORKERS:
                    raise TypeError(encoder.refusal(value, path, f"it needs {obj.__module__}.{obj.__qualname__}, "
                                                                 "which a worker cannot import"))
                name = names.get(key, f"{path}<{len(ids)}>")
                leaf = encoder.leaf(obj, name, plain_tensors=True)
                if leaf is not None:
                    ids[key] = leaf
                return leaf

        buffer = io.BytesIO()
        try:
            Pickler(buffer, protocol=4).dump(value)
        except TypeError as error:
            if str(error).startswith(path):
                raise
            raise TypeError(self.refusal(value, path, self.failed(error))) from None
        except Exception as error:  # noqa: BLE001 - pickling raises many kinds
            raise TypeError(self.refusal(value, path, self.failed(error))) from None
        return {"type": type_name(value), "pickle": base64.b64encode(buffer.getvalue()).decode()}

    @staticmethod
    def failed(error):
        return f"pickling it (its tensors apart) failed: {type(error).__name__}: {str(error)[:300]}"

    @staticmethod
    def refusal(value, path, why):
        return f"{path}: a value of type {type_name(value)} cannot cross between the judge and the worker: {why}"


class InputsNotRebuilt(Exception):
    """A worker could not rebuild the judge's inputs (pkbw's failure, or a checkout the worker cannot
    import): the reply's kind is input_error, which the judge never counts against the candidate."""


class InputDecoder:
    """A worker's side of InputEncoder. group(ranks) -> this process's group of those ranks ("world": its
    default group), made in the same order on every worker (CandidateProcess.make_groups)."""

    def __init__(self, torch, group):
        self.torch, self.group = torch, group

    def leaf(self, node, tensor):
        torch = self.torch
        if not isinstance(node, (list, tuple)) or not node:
            raise ProtocolError(f"an input leaf that is not a list: {str(node)[:80]}")
        kind = node[0]
        if kind in ("t", "p") and len(node) == 3:
            value = tensor(node[1])
            if kind == "p":
                return torch.nn.Parameter(value, requires_grad=bool(node[2]))
            return value.requires_grad_(True) if node[2] else value
        if kind == "sc" and len(node) == 6:
            indices, values, size = tensor(node[1]), tensor(node[2]), list(node[3])
            try:  # the judge's own tensor, valid: no check (and torch 2's warning that none is made)
                value = torch.sparse_coo_tensor(indices, values, size, check_invariants=False)
            except TypeError:  # torch before 2.0: no such argument, no check
                value = torch.sparse_coo_tensor(indices, values, size)
            if node[4]:
                value = value._coalesced_(True)
            return value.requires_grad_(True) if node[5] else value
        if kind == "g" and len(node) == 2:
            return self.group("world" if node[1] == "world" else tuple(int(r) for r in node[1]))
        if kind == "G" and len(node) == 3:
            generator = torch.Generator(device=node[1])
            generator.set_state(torch.tensor(list(base64.b64decode(node[2])), dtype=torch.uint8))
            return generator
        raise ProtocolError(f"an input leaf '{str(kind)[:20]}' of {len(node)} items")

    def unpickle(self, body, tensor):
        if not isinstance(body, dict) or not isinstance(body.get("pickle"), str):
            raise ProtocolError("an object node without its pickle")
        decoder, memo = self, {}

        class Unpickler(pickle.Unpickler):
            def persistent_load(self, pid):
                key = repr(pid)
                if key not in memo:
                    memo[key] = decoder.leaf(pid, tensor)
                return memo[key]

        return Unpickler(io.BytesIO(base64.b64decode(body["pickle"]))).load()


def decode_value(node, torch, tensor, depth=0, inputs=None):
    """The inverse of encode_value, for a tree from the other process: every node is checked. inputs: a
    worker's InputDecoder for the judge's inputs; None (the judge reading a reply) refuses their
    kinds."""
    if depth > MAX_DEPTH:
        raise ProtocolError(f"a value nested deeper than {MAX_DEPTH} levels")
    if not isinstance(node, dict) or len(node) != 1:
        raise ProtocolError(f"a value node that is not a one-key object: {str(node)[:80]}")
    (kind, body), = node.items()
    if kind == "t":
        return tensor(body)
    if kind in ("l", "u") and isinstance(body, list):
        items = [decode_value(x, torch, tensor, depth + 1, inputs) for x in body]
        return tuple(items) if kind == "u" else items
    if kind == "d" and isinstance(body, list):
        result = {}
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ProtocolError("a dict entry that is not a [key, value] pair")
            key = decode_value(pair[0], torch, tensor, depth + 1)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise ProtocolError(f"a dict key of type {type(key).__name__}")
            result[key] = decode_value(pair[1], torch, tensor, depth + 1, inputs)
        return result
    if kind == "z" and isinstance(body, list) and all(type(x) is int for x in body):
        return torch.Size(body)
    if kind == "b" and isinstance(body, bool):
        return body
    if kind == "n" and body is None:
        return None
    if kind == "s" and isinstance(body, str):
        return body
    if kind == "i" and type(body) is int:
        return body
    if kind == "f" and isinstance(body, (int, float)) and not isinstance(body, bool):
        return float(body)
    if kind == "y":
        return dtype_named(body, torch)
    if kind == "v" and isinstance(body, str):
        try:
            return torch.device(body)
        except (RuntimeError, TypeError, ValueError):
            raise ProtocolError(f"a device '{body[:40]}'") from None
    if kind in ("x", "o") and inputs is None:
        raise ProtocolError(f"a value node '{kind}' (only the judge's inputs hold those)")
    if kind == "x":
        return inputs.leaf(body, tensor)
    if kind == "o":
        return inputs.unpickle(body, tensor)
    raise ProtocolError(f"a value node '{kind}' with a body of type {type(body).__name__}")
