"""A minimal stand-in for torch, for tests of the PKB judge's value crossing without torch
(tests/engine/test_pkb_crossing.py). Importing it installs modules named torch, torch.nn and
torch.distributed in sys.modules (unless a real torch is already imported), with just what
engine/python/pkbw_value_encoding.py's encode_value / decode_value, InputEncoder and InputDecoder touch:
dense and sparse COO tensors (values as a flat Python list), nn.Parameter, nn.Module and nn.Linear,
torch.Size, dtypes, devices, layouts, torch.Generator, and process groups whose new_group calls are
recorded. Its classes live in those module names, so pickles made with them load in another process
that imports this file first."""
import sys
import types

if "torch" in sys.modules and not getattr(sys.modules["torch"], "PKBW_FAKE", False):
    raise ImportError("a real torch is already imported")

torch = types.ModuleType("torch")
torch.PKBW_FAKE = True
nn = types.ModuleType("torch.nn")
distributed = types.ModuleType("torch.distributed")
torch.nn, torch.distributed = nn, distributed


def _in(module, *classes):
    for cls in classes:
        cls.__module__ = module.__name__
        setattr(module, cls.__name__, cls)


class dtype:
    def __init__(self, name, floating):
        self.name, self.is_floating_point = name, floating

    def __str__(self):
        return f"torch.{self.name}"

    __repr__ = __str__

    def __reduce__(self):
        return (getattr, (torch, self.name))


class layout:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return (getattr, (torch, self.name))


class device:
    def __init__(self, spec, index=None):
        spec = str(spec)
        self.type, _, number = spec.partition(":")
        if self.type not in ("cpu", "cuda"):
            raise RuntimeError(f"unknown device {spec}")
        self.index = int(number) if number else index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        return isinstance(other, device) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


class Size(tuple):
    pass


class Tensor:
    """A dense tensor: a flat list of values, a shape, a dtype, requires_grad."""

    def __init__(self, values, shape=None, dtype=None, requires_grad=False, device_=None):
        self.values = list(values)
        self.shape = Size(shape if shape is not None else (len(self.values),))
        self.dtype = dtype or torch.float32
        self.requires_grad = requires_grad
        self.device = device_ or device("cpu")
        self.layout = torch.strided

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def detach(self):
        return Tensor(self.values, self.shape, self.dtype, False, self.device)

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    def tolist(self):
        return list(self.values)

    def __reduce__(self):
        raise TypeError("a fake tensor must never be pickled: tensors cross apart")

    # What the test's own channel sends in place of shared memory.
    def to_wire(self):
        return {"values": self.values, "shape": list(self.shape), "dtype": self.dtype.name}

    @staticmethod
    def from_wire(wire):
        return Tensor(wire["values"], wire["shape"], getattr(torch, wire["dtype"]))


class SparseTensor(Tensor):
    def __init__(self, indices, values, size, layout_=None):
        self.indices, self.nonzeros = indices, values
        self.shape, self.dtype, self.requires_grad = Size(size), values.dtype, False
        self.device, self.layout, self.coalesced = values.device, layout_ or torch.sparse_coo, False

    def detach(self):
        copy = SparseTensor(self.indices, self.nonzeros, self.shape, self.layout)
        copy.coalesced = self.coalesced
        return copy

    def _indices(self):
        return self.indices

    def _values(self):
        return self.nonzeros

    def is_coalesced(self):
        return self.coalesced

    def _coalesced_(self, flag):
        self.coalesced = flag
        return self


def sparse_coo_tensor(indices, values, size):
    return SparseTensor(indices, values, size)


def tensor(data, dtype=None):
    return Tensor(list(data), dtype=dtype)


class Generator:
    def __init__(self, device="cpu"):
        self.device = torch.device(device)
        self.state = bytes(16)

    def manual_seed(self, seed):
        self.state = bytes((seed * 7 + i) % 256 for i in range(16))
        return self

    def get_state(self):
        return Tensor(list(self.state), dtype=torch.uint8)

    def set_state(self, state):
        self.state = bytes(state.values)


_in(torch, dtype, layout, device, Size, Tensor, SparseTensor, Generator)
torch.sparse_coo_tensor, torch.tensor = sparse_coo_tensor, tensor
for _name, _floating in (("float32", True), ("float64", True), ("float16", True), ("bfloat16", True),
                         ("int64", False), ("int32", False), ("uint8", False), ("bool", False)):
    setattr(torch, _name, dtype(_name, _floating))
for _name in ("strided", "sparse_coo", "sparse_csr"):
    setattr(torch, _name, layout(_name))


class Parameter(Tensor):
    def __init__(self, data=None, requires_grad=True):
        data = data if data is not None else Tensor([])
        super().__init__(data.values, data.shape, data.dtype, requires_grad, data.device)


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_modules", {})
        self.training = True

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif name in self.__dict__.get("_parameters", {}):
            self._parameters[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, {}):
                return self.__dict__[table][name]
        raise AttributeError(name)

    def register_buffer(self, name, value):
        self._buffers[name] = value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        for name, value in self._parameters.items():
            if value is not None:
                yield prefix + name, value
        for name, module in self._modules.items():
            yield from module.named_parameters(prefix + name + ".", recurse, remove_duplicate)

    def named_buffers(self, prefix="", recurse=True):
        for name, value in self._buffers.items():
            yield prefix + name, value
        for name, module in self._modules.items():
            yield from module.named_buffers(prefix + name + ".", recurse)


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, seed=0):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(Tensor([seed + 0.5 * i for i in range(in_features * out_features)],
                                       (out_features, in_features)))
        if bias:
            self.bias = Parameter(Tensor([seed - 1.0 * i for i in range(out_features)]))
        else:
            self._parameters["bias"] = None  # as register_parameter("bias", None)


_in(nn, Parameter, Module, Linear)


class ProcessGroup:
    def __init__(self, ranks):
        self.ranks = tuple(ranks)


class group:
    WORLD = ProcessGroup(())


NON_GROUP_MEMBER = object()
calls = []  # every new_group call's ranks, in order
state = {"rank": 0, "world": 1}


def set_world(rank, world):
    state.update(rank=rank, world=world)
    group.WORLD = ProcessGroup(range(world))


def new_group(ranks=None, **_):
    ranks = list(range(state["world"])) if ranks is None else sorted(ranks)
    calls.append(ranks)
    return ProcessGroup(ranks) if state["rank"] in ranks else NON_GROUP_MEMBER


def get_process_group_ranks(pg):
    return list(pg.ranks)


_in(distributed, ProcessGroup, group)
distributed.NON_GROUP_MEMBER, distributed.calls, distributed.set_world = NON_GROUP_MEMBER, calls, set_world
distributed.new_group, distributed.get_process_group_ranks = new_group, get_process_group_ranks

sys.modules.update({"torch": torch, "torch.nn": nn, "torch.distributed": distributed})


# Inputs of types PKB's comment foresees (a dataclass) or Python offers (a named tuple), importable
# in the worker as pkb_fake_torch.<name>.
import collections  # noqa: E402
import dataclasses  # noqa: E402


@dataclasses.dataclass
class Experts:
    count: int
    weights: object
    group: object = None


Pair = collections.namedtuple("Pair", "first second")
