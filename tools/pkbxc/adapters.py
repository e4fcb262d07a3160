"""How PKB's reference of each problem is called with pkbw's inputs: the adapter table.

The default adapter, `pkb_tuple`, asks PKB itself for the call: it runs PKB's
utils/input_output_tensors.py `create_input_tensor(rank, W, id, (M, N), dtype, trial, device)`, which
returns the argument tuple PKB's harness would pass (process groups built by PKB's own
`_build_*_groups`, `nn.Linear` modules, lists, ints, strings), and replaces every tensor leaf of it,
in order, with pkbw's inputs in their order (`pkbw.input_order`): a tensor leaf takes the next pkbw
tensor, a module takes one per parameter (weight, then bias). Shapes and dtypes must agree leaf by
leaf, and every scalar argument that pkbw also publishes as a param must have the same value, or the
cross-check fails naming the argument. So a new problem whose descriptor follows PKB's argument
order needs no entry at all.

An entry in ADAPTERS is needed when:
- pkbw's tensors are not PKB's tensor leaves in order (give `build`, a function of the Call that
  returns (args, kwargs); `by_signature` is the other ready-made one);
- the reference needs a Triton kernel (give `triton`: kernel name -> CPU stand-in) or something the
  CPU torch lacks (give `patch`, a function of (module, call), and `requires`);
- the CPU cross-check cannot run at all (give `cpu_blocker`, the reason printed in the table);
- the emulation layer needs pieces beyond the default (all pieces are installed on gloo anyway).
"""
import inspect
import os
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from . import emulation


@dataclass
class Call:
    """Everything an adapter may read about one rank's call."""

    problem_id: int
    stem: str
    rank: int
    world: int
    trial: int
    m: int
    n: int
    dtype: torch.dtype
    device: torch.device
    tensors: list            # pkbw's inputs, in pkbw.input_order
    names: list              # their names
    params: dict             # pkbw.params (name -> number)
    solution: Callable       # PKB's reference solution()
    pkb_inputs: Callable     # PKB's create_input_tensor
    notes: list = field(default_factory=list)


@dataclass
class Adapter:
    build: Optional[Callable] = None          # Call -> (args, kwargs); None: pkb_tuple
    triton: dict = field(default_factory=dict)  # Triton kernel name -> CPU stand-in (CPU mode only)
    patch: Optional[Callable] = None          # (module, Call) -> None, before the call (CPU mode only)
    requires: tuple = ()                      # torch attributes the CPU run needs (float8_e4m3fn, ...)
    cpu_blocker: str = ""                     # why the CPU cross-check cannot run
    note: str = ""                            # printed with the result


class AdapterError(RuntimeError):
    pass


# pkbw parameter names that PKB's references spell differently.
ALIASES = {"src": "root", "dst": "root"}


def _leaf_path(path):
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) or "<arg>"


def pkb_tuple(call):
    """PKB's own argument tuple with its tensors replaced by pkbw's (module doc)."""
    pkb_args = call.pkb_inputs(call.rank, call.world, call.problem_id, (call.m, call.n), call.dtype,
                               trial=call.trial, device=call.device)
    remaining = list(zip(call.names, call.tensors))
    used = []

    def take(expected, where):
        if not remaining:
            raise AdapterError(f"PKB's arguments have more tensors than pkbw's {len(call.tensors)} inputs "
                               f"(first unmatched: {where}, shape {list(expected.shape)})")
        name, tensor = remaining.pop(0)
        used.append(name)
        if list(tensor.shape) != list(expected.shape) or tensor.dtype != expected.dtype:
            raise AdapterError(f"pkbw input '{name}' is {str(tensor.dtype)[6:]} {list(tensor.shape)} but PKB's "
                               f"argument {where} is {str(expected.dtype)[6:]} {list(expected.shape)} "
                               f"(M={call.m}, N={call.n}: pass the shape of the pkbw run)")
        return tensor.to(expected.device)

    def substitute(value, path):
        if isinstance(value, torch.Tensor):
            return take(value, _leaf_path(path))
        if isinstance(value, torch.nn.Module):
            for pname, parameter in list(value.named_parameters()):
                parameter.data = take(parameter.data, _leaf_path(path + [pname]))
            return value
        if isinstance(value, list):
            return [substitute(v, path + [i]) for i, v in enumerate(value)]
        if isinstance(value, tuple) and not isinstance(value, torch.Size):
            return tuple(substitute(v, path + [i]) for i, v in enumerate(value))
        if isinstance(value, dict):
            return {k: substitute(v, path + [k]) for k, v in value.items()}
        return value

    if not isinstance(pkb_args, tuple):
        pkb_args = (pkb_args,)
    signature = list(inspect.signature(call.solution).parameters)
    args = []
    for index, value in enumerate(pkb_args):
        name = signature[index] if index < len(signature) else f"arg{index}"
        args.append(substitute(value, [name]))
        _check_scalar(call, name, value)
    if remaining:
        raise AdapterError(f"pkbw inputs {[n for n, _ in remaining]} have no tensor in PKB's arguments")
    return args, {}


def _check_scalar(call, name, value):
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        # list-valued params: pkbw publishes element i as "name.i" (or "name[i]")
        for i, item in enumerate(value):
            for key in (f"{name}.{i}", f"{name}[{i}]"):
                if key in call.params:
                    _check_scalar(call, key, item)
        return
    key = name if name in call.params else ALIASES.get(name)
    if key not in call.params or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if abs(float(call.params[key]) - float(value)) > 1e-12 * max(1.0, abs(float(value))):
        raise AdapterError(f"param '{key}': pkbw {call.params[key]} but PKB passes {name}={value}")


def by_signature(call):
    """pkbw's tensors positionally, then every later parameter of PKB's signature from pkbw's params
    (by name or alias; int where PKB annotates int). Used when PKB has no create_input_tensor case."""
    kwargs = {}
    for index, parameter in enumerate(inspect.signature(call.solution).parameters.values()):
        if index < len(call.tensors):
            continue
        key = parameter.name if parameter.name in call.params else ALIASES.get(parameter.name)
        if key in call.params:
            value = call.params[key]
            kwargs[parameter.name] = int(value) if float(value).is_integer() and parameter.annotation is int else value
    return list(call.tensors), kwargs


# --- CPU stand-ins for PKB's Triton kernels (transcribed from reference/<stem>.py) -----------------

def _fp8_quant_stand_in(grid, x_ptr, y_ptr, s_ptr, BLOCK_SIZE):
    """19's block_fp8_quant_kernel: per block s = max|x| / 448, y = (x / (s or 1)) cast to e4m3."""
    x = x_ptr.reshape(-1, BLOCK_SIZE).float()
    s = x.abs().amax(dim=1) / 448.0
    safe = torch.where(s == 0, torch.ones_like(s), s)
    y_ptr.view(-1).copy_((x / safe[:, None]).reshape(-1).to(y_ptr.dtype))
    s_ptr.view(-1).copy_(s)


def _fp8_dequant_stand_in(grid, y_ptr, s_ptr, x_ptr, num_elements, BLOCK_SIZE):
    """20's block_fp8_dequant_kernel: x[i] = float(y[i]) * s[i // BLOCK_SIZE] for i < num_elements."""
    index = torch.arange(num_elements, device=y_ptr.device)
    x_ptr[:num_elements] = y_ptr[:num_elements].float() * s_ptr[index // BLOCK_SIZE].float()


def _fp8_round_trip_patch(module, call):
    """52/53 cast to float8_e4m3fn, which torch 1.13 lacks: the same round trip through
    emulation.e4m3_round_trip, with the rest of PKB's helper as written."""
    if hasattr(torch, "float8_e4m3fn"):
        return

    def round_trip(x, scale):
        return (emulation.e4m3_round_trip(x.float() / scale) * scale).to(dtype=x.dtype)

    module._fp8_round_trip_bf16 = round_trip
    call.notes.append("e4m3 round trip emulated")


def _sparse_psi(call):
    """62: PKB passes psi as a sparse COO tensor [3, H, H/polar * Wd]; pkbw as its coalesced indices
    (psi_indices, int64 [3, nnz]) and values (psi_values), with the size as the list param psi_shape. PKB's
    own tuple (its process groups and scalars) with x, weight and bias replaced by pkbw's and psi rebuilt
    from pkbw's two inputs."""
    args = list(call.pkb_inputs(call.rank, call.world, call.problem_id, (call.m, call.n), call.dtype,
                                trial=call.trial, device=call.device))
    mine = dict(zip(call.names, call.tensors))
    psi = args[1]
    size = [int(call.params[f"psi_shape[{i}]"]) for i in range(3)]
    if list(psi.shape) != size:
        raise AdapterError(f"pkbw psi_shape {size} but PKB's psi is {list(psi.shape)} (M={call.m}, N={call.n}: "
                           f"PKB's sizes are pkbw's at M = N = 1024)")
    for index, name in ((0, "x"), (2, "weight"), (8, "bias")):
        if list(mine[name].shape) != list(args[index].shape) or mine[name].dtype != args[index].dtype:
            raise AdapterError(f"pkbw input '{name}' is {str(mine[name].dtype)[6:]} {list(mine[name].shape)} "
                               f"but PKB's is {str(args[index].dtype)[6:]} {list(args[index].shape)}")
        args[index] = mine[name].to(args[index].device)
    args[1] = torch.sparse_coo_tensor(mine["psi_indices"].to(psi.device), mine["psi_values"].to(psi.device),
                                      size=size).coalesce()
    for index, name in ((3, "groups"), (4, "nlon_out"), (5, "nlon_in")):
        _check_scalar(call, name, args[index])
    return args, {}


def _bf16_eye_patch(module, call):
    """61: PKB's inputs are bf16 at every --dtype, and both its input generator (viewmats, Ks) and its
    reference (the 2-D covariances' eps2d) call torch.eye in bf16, which torch 1.13's CPU lacks. The
    identity drawn in float32 and cast is the same tensor (0 and 1 are exact in bf16); installed for
    the rank process, as emulation.py's pieces are, since the generator is another module."""
    try:
        torch.eye(2, dtype=torch.bfloat16)
        return
    except RuntimeError:
        pass
    eye = torch.eye

    def eye_any_dtype(*args, dtype=None, **kwargs):
        if dtype == torch.bfloat16:
            return eye(*args, dtype=torch.float32, **kwargs).to(torch.bfloat16)
        return eye(*args, dtype=dtype, **kwargs)

    torch.eye = eye_any_dtype
    call.notes.append("bf16 eye by a float32 one cast")


def _jagged_from_pkbw(call):
    """70: PKB draws its KeyedJaggedTensor's lengths, then as many values as they sum to, so its values
    have another length than pkbw's wherever the lengths differ. PKB's tuple (key_splits, batch_size,
    pg) with lengths and values taken from the pkbw run whole: lengths must have PKB's shape [F*B] and
    values as many elements as pkbw's lengths sum to; key_splits and batch_size are checked against
    pkbw's params."""
    args = list(call.pkb_inputs(call.rank, call.world, call.problem_id, (call.m, call.n), call.dtype,
                                trial=call.trial, device=call.device))
    mine = dict(zip(call.names, call.tensors))
    lengths, values = mine["lengths"], mine["values"]
    if list(lengths.shape) != list(args[0].shape) or lengths.dtype != args[0].dtype:
        raise AdapterError(f"pkbw input 'lengths' is {str(lengths.dtype)[6:]} {list(lengths.shape)} but PKB's "
                           f"is {str(args[0].dtype)[6:]} {list(args[0].shape)} (M={call.m}, N={call.n}: pass "
                           f"the shape of the pkbw run)")
    if values.dim() != 1 or values.numel() != int(lengths.sum().item()) or values.dtype != args[1].dtype:
        raise AdapterError(f"pkbw input 'values' is {str(values.dtype)[6:]} {list(values.shape)} but pkbw's "
                           f"lengths sum to {int(lengths.sum().item())} ({str(args[1].dtype)[6:]} expected)")
    args[0], args[1] = lengths.to(args[0].device), values.to(args[1].device)
    for index, name in ((2, "key_splits"), (3, "batch_size")):
        _check_scalar(call, name, args[index])
    return args, {}


def _scalar_of_pkb_type(pkb_value, pkbw_value, name):
    """pkbw's param (a JSON number) as the type of PKB's argument (int, float, bool)."""
    if isinstance(pkb_value, bool):
        return bool(pkbw_value)
    if isinstance(pkb_value, int):
        if not float(pkbw_value).is_integer():
            raise AdapterError(f"param '{name}': pkbw {pkbw_value} but PKB passes an int ({pkb_value})")
        return int(pkbw_value)
    return float(pkbw_value)


def pkbw_shape(call):
    """76, 78 and 87 scale their sizes with M or N (PKB's at M = N = 1024, docs/problems.md), while PKB's
    generator draws its fixed sizes at every M and N. PKB's tuple gives the arguments' kinds and order;
    its tensor leaves are replaced by pkbw's in order, with dtype and rank checked; a scalar that pkbw
    publishes as a param is taken from pkbw, as PKB's type (78's tile sizes scale with N). Where every
    tensor has PKB's shape, the call must be PKB's own: scalars that differ are an error, as in pkb_tuple;
    at a reduced shape each differing scalar is named in the row's notes."""
    pkb_args = call.pkb_inputs(call.rank, call.world, call.problem_id, (call.m, call.n), call.dtype,
                               trial=call.trial, device=call.device)
    pkb_args = pkb_args if isinstance(pkb_args, tuple) else (pkb_args,)
    signature = list(inspect.signature(call.solution).parameters)
    remaining = list(zip(call.names, call.tensors))
    args, reduced, differing = [], [], []
    for index, value in enumerate(pkb_args):
        name = signature[index] if index < len(signature) else f"arg{index}"
        if isinstance(value, torch.Tensor):
            if not remaining:
                raise AdapterError(f"PKB's argument {name} has no pkbw input left ({len(call.tensors)} given)")
            mine_name, mine = remaining.pop(0)
            if mine.dtype != value.dtype or mine.dim() != value.dim():
                raise AdapterError(f"pkbw input '{mine_name}' is {str(mine.dtype)[6:]} {list(mine.shape)} but PKB's "
                                   f"argument {name} is {str(value.dtype)[6:]} {list(value.shape)}")
            if list(mine.shape) != list(value.shape):
                reduced.append(f"{name} {list(mine.shape)} (PKB {list(value.shape)})")
            args.append(mine.to(value.device))
            continue
        key = name if name in call.params else ALIASES.get(name)
        if key in call.params and isinstance(value, (bool, int, float)):
            mine = _scalar_of_pkb_type(value, call.params[key], key)
            if mine != value:
                differing.append(f"{name}={mine} (PKB {value})")
            value = mine
        args.append(value)
    if remaining:
        raise AdapterError(f"pkbw inputs {[n for n, _ in remaining]} have no tensor in PKB's arguments")
    if differing and not reduced:
        raise AdapterError(f"at PKB's shapes pkbw's params differ from PKB's: {', '.join(differing)}")
    if reduced:
        call.notes.append("reduced shape: " + "; ".join(reduced + differing))
    return args, {}


# PKBXC_CONV=fp64 (76 and 87): PKB's convolutions as exact sums rounded once to the input's dtype, the
# bias added after as a separate rounded op, which is how pkbw's host oracles compute them. Running a
# problem both ways shows whether a disagreement is the conv's fp32 accumulation order (torch's CPU
# kernels and cuDNN accumulate in fp32) rather than anything else; the default is torch's own conv.
CONV = os.environ.get("PKBXC_CONV", "torch")
if CONV not in ("torch", "fp64"):
    raise ValueError(f"PKBXC_CONV={CONV}: expected torch or fp64")


class _ExactConv:
    """torch.nn.functional with conv2d and conv3d computed in float64 and rounded once."""

    def __init__(self, functional):
        self._functional = functional

    def __getattr__(self, name):
        return getattr(self._functional, name)

    def _exact(self, conv, x, weight, bias=None, *args, **kwargs):
        y = conv(x.double(), weight.double(), None, *args, **kwargs).to(x.dtype)
        return y if bias is None else y + bias.view(1, -1, *([1] * (y.dim() - 2)))

    def conv2d(self, *args, **kwargs):
        return self._exact(self._functional.conv2d, *args, **kwargs)

    def conv3d(self, *args, **kwargs):
        return self._exact(self._functional.conv3d, *args, **kwargs)


def _exact_conv_patch(module, call):
    if CONV == "fp64":
        module.F = _ExactConv(module.F)
        call.notes.append("PKBXC_CONV=fp64: convs exact, rounded once, bias added after")


ADAPTERS = {
    10: Adapter(cpu_blocker="PKB's reference allocates on CUDA explicitly (device='cuda', "
                            "torch.cuda.current_device()): GPU only"),
    19: Adapter(triton={"block_fp8_quant_kernel": _fp8_quant_stand_in}, requires=("float8_e4m3fn",),
                note="Triton kernel run by its CPU stand-in"),
    20: Adapter(triton={"block_fp8_dequant_kernel": _fp8_dequant_stand_in},
                note="Triton kernel run by its CPU stand-in"),
    52: Adapter(patch=_fp8_round_trip_patch),
    53: Adapter(patch=_fp8_round_trip_patch),
    62: Adapter(build=_sparse_psi, note="psi rebuilt as PKB's sparse COO tensor from psi_indices and psi_values"),
    61: Adapter(patch=_bf16_eye_patch),
    # 68: PKB's generator draws its 111 M-row table at every M (56.8 GB in bf16), so its tuple is never asked
    # for: pkbw's three tensors and num_total_nodes (pkbw's param) are the whole call, at pkbw's reduced
    # table below M = 1024 too.
    68: Adapter(build=by_signature, note="pkbw's table (scaled below M = 1024), num_total_nodes from pkbw"),
    70: Adapter(build=_jagged_from_pkbw, note="lengths and values of the pkbw run (PKB's draw sums to another length)"),
    # 76, 78, 87: pkbw's sizes scale with M or N (PKB's own at M = N = 1024), PKB's generator's do not.
    76: Adapter(build=pkbw_shape, patch=_exact_conv_patch),
    78: Adapter(build=pkbw_shape),
    87: Adapter(build=pkbw_shape, patch=_exact_conv_patch),
}


def adapter_for(problem_id):
    return ADAPTERS.get(problem_id, Adapter())
