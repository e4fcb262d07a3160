"""What PKB's references need that gloo and Debian 12's torch 1.13 lack, built from what they have.

install(pieces) patches torch.distributed / torch.nn.functional in this process, before PKB's
reference module runs; only the CPU (gloo) mode installs it. Each piece, and why it is needed
(/work/shared/reference/pkb-problems-21-87.md, section 3, measured on torch 1.13.1 + gloo):

- "bf16": gloo has no bfloat16 in any collective ("Invalid scalar type"). all_reduce, broadcast,
  reduce, all_gather, gather, scatter, all_to_all_single on bf16 tensors run on float32 copies and
  are cast back (reduce: see "reduce"). Sums are therefore accumulated in fp32 and rounded once,
  where NCCL rounds its bf16 partial sums on the way: a difference of the order of one bf16 ulp, inside PKB's tolerance.
- "reduce": gloo's reduce leaves partial sums in the non-root ranks' buffers, where NCCL (PKB's GPU
  run) leaves them as they were; PKB's 4 returns that buffer on non-roots. The reduce runs on a copy
  that only the root copies back.
- "all_gather_into_tensor": missing in gloo; one all_gather into a list, concatenated along dim 0.
- "uneven_all_gather": gloo's all_gather needs equal sizes; unequal output shapes gather the input
  padded to the largest element count and slice each rank's part back out.
- "reduce_scatter": reduce_scatter_tensor and reduce_scatter (list) are missing in gloo; an
  all_reduce of the whole input (fp32 for bf16), then this rank's block along dim 0.
- "all_to_all": list all_to_all is missing in gloo; one all_to_all_single over the flattened chunks
  with per-chunk split sizes (complex chunks travel as their real view).
- "bf16_matmul": torch 1.13's CPU bf16 GEMM (matmul, mm, bmm, @, F.linear) does not round once from
  an fp32 accumulation as cuBLAS does in PKB's GPU run (measured: 2x the error of an fp32-accumulated
  product on [256,512]x[512,256]), enough to cross PKB's rtol after an all-reduce (13, 15). bf16 GEMMs
  run on fp32 copies and are rounded once to bf16, as on the GPU.
- "bf16_silu": torch 1.13's CPU bf16 F.silu is not rounded once from fp32 (19% of 10^5 normal
  values differ by one ulp from the correctly rounded result; CUDA computes in fp32 and rounds once),
  which moves 2% of problem 15's outputs past PKB's rtol. Computed in fp32, rounded once.
- "mse_loss": torch 1.13 has no CPU bf16 mse_loss kernel; computed in fp32, cast back.
- "triton": PKB's 19 and 20 launch Triton kernels (GPU only); a stub `triton` module whose @jit
  kernels dispatch to CPU stand-ins that an adapter registers (adapters.py, one per kernel,
  transcribed from PKB's kernel source), so PKB's surrounding code runs as written.

e4m3_round_trip below is the float8_e4m3fn cast torch >= 2.1 does (c10's fp8e4m3fn_from_fp32_value:
round to nearest even, subnormal step 2^-9, NaN from 480 up, so above 464 once rounded); adapters
use it where a reference casts to float8 (52, 53) on a torch that has no float8.
"""
import os
import sys
import types

import torch
import torch.distributed as dist
import torch.nn.functional as F

ALL_PIECES = ("bf16", "reduce", "all_gather_into_tensor", "uneven_all_gather", "reduce_scatter", "all_to_all",
              "bf16_matmul", "bf16_silu", "mse_loss", "triton")
_original = {}
_installed = set()
TRITON_STAND_INS = {}  # kernel function name -> callable(grid, *args, **kwargs)


class _Done:
    """What an async_op=True collective returns once the emulation has already finished it."""

    def wait(self, *args, **kwargs):
        return True

    def is_completed(self):
        return True


def _result(async_op):
    return _Done() if async_op else None


def _needs_cast(tensor):
    return isinstance(tensor, torch.Tensor) and tensor.dtype == torch.bfloat16


def _wide(tensor):
    return tensor.float() if _needs_cast(tensor) else tensor


def _group_size(group):
    return dist.get_world_size(group) if group is not None else dist.get_world_size()


def _group_rank(group):
    return dist.get_rank(group) if group is not None else dist.get_rank()


def _orig(name):
    return _original.get(name) or getattr(dist, name)


# How a bf16 SUM all-reduce is summed: "fp32" (the default: fp32 accumulation, one rounding) or
# "rank_order" (PKBXC_BF16_SUM=rank_order: summed in rank order with a rounding to bf16 after each
# addition, as pkbw's host oracles model NCCL, toolkit dtype_collectives_host.h). Running a problem both
# ways shows whether a bf16 disagreement at W > 2 is only the reduction order (docs/problems.md).
BF16_SUM = os.environ.get("PKBXC_BF16_SUM", "fp32")
if BF16_SUM not in ("fp32", "rank_order"):
    raise ValueError(f"PKBXC_BF16_SUM={BF16_SUM}: expected fp32 or rank_order")


def _bf16_sum_in_rank_order(wide, group):
    """The element-wise SUM over the group of bf16 values held as fp32, rounded to bf16 after each
    addition in rank order."""
    parts = [torch.empty_like(wide) for _ in range(_group_size(group))]
    _orig("all_gather")(parts, wide.contiguous(), group=group)
    total = parts[0].to(torch.bfloat16)
    for part in parts[1:]:
        total = (total.float() + part).to(torch.bfloat16)
    return total


def _all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    if not _needs_cast(tensor):
        return _orig("all_reduce")(tensor, op=op, group=group, async_op=async_op)
    wide = tensor.float()
    if BF16_SUM == "rank_order" and op == dist.ReduceOp.SUM:
        tensor.copy_(_bf16_sum_in_rank_order(wide, group))
        return _result(async_op)
    _orig("all_reduce")(wide, op=op, group=group)
    tensor.copy_(wide)
    return _result(async_op)


def _broadcast(tensor, src, group=None, async_op=False):
    if not _needs_cast(tensor):
        return _orig("broadcast")(tensor, src, group=group, async_op=async_op)
    wide = tensor.float()
    _orig("broadcast")(wide, src, group=group)
    tensor.copy_(wide)
    return _result(async_op)


def _reduce(tensor, dst, op=dist.ReduceOp.SUM, group=None, async_op=False):
    wide = _wide(tensor).clone()
    _orig("reduce")(wide, dst, op=op, group=group)
    if dist.get_rank() == dst:  # as NCCL: only the root's buffer receives the sum
        tensor.copy_(wide)
    return _result(async_op)


def _all_gather(tensor_list, tensor, group=None, async_op=False):
    uneven = "uneven_all_gather" in _installed and any(t.numel() != tensor.numel() for t in tensor_list)
    if not uneven and not _needs_cast(tensor):
        return _orig("all_gather")(tensor_list, tensor, group=group, async_op=async_op)
    source = _wide(tensor).reshape(-1)
    if uneven:
        longest = max([t.numel() for t in tensor_list] + [tensor.numel()])
        # every rank must agree on the padded size: the largest count any rank holds
        size = torch.tensor([longest], dtype=torch.int64, device=tensor.device)
        _orig("all_reduce")(size, op=dist.ReduceOp.MAX, group=group)
        longest = int(size.item())
        padded = torch.zeros(longest, dtype=source.dtype, device=source.device)
        padded[: source.numel()] = source
        source = padded
    parts = [torch.empty(source.numel(), dtype=source.dtype, device=source.device) for _ in tensor_list]
    _orig("all_gather")(parts, source, group=group)
    for out, part in zip(tensor_list, parts):
        out.copy_(part[: out.numel()].view(out.shape))
    return _result(async_op)


def _gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    if not _needs_cast(tensor):
        return _orig("gather")(tensor, gather_list=gather_list, dst=dst, group=group, async_op=async_op)
    wide_list = [t.float() for t in gather_list] if gather_list is not None else None
    _orig("gather")(tensor.float(), gather_list=wide_list, dst=dst, group=group)
    if gather_list is not None:
        for out, part in zip(gather_list, wide_list):
            out.copy_(part)
    return _result(async_op)


def _scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    if not _needs_cast(tensor):
        return _orig("scatter")(tensor, scatter_list=scatter_list, src=src, group=group, async_op=async_op)
    wide = tensor.float()
    wide_list = [t.float() for t in scatter_list] if scatter_list is not None else None
    _orig("scatter")(wide, scatter_list=wide_list, src=src, group=group)
    tensor.copy_(wide)
    return _result(async_op)


def _all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                       async_op=False):
    if not _needs_cast(input):
        return _orig("all_to_all_single")(output, input, output_split_sizes, input_split_sizes, group=group,
                                          async_op=async_op)
    wide = torch.empty(output.shape, dtype=torch.float32, device=output.device)
    _orig("all_to_all_single")(wide, input.float(), output_split_sizes, input_split_sizes, group=group)
    output.copy_(wide)
    return _result(async_op)


def _all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    world = _group_size(group)
    parts = [torch.empty_like(input_tensor) for _ in range(world)]
    dist.all_gather(parts, input_tensor.contiguous(), group=group)  # through the bf16 piece if installed
    output_tensor.copy_(torch.cat([p.reshape(-1) for p in parts]).view(output_tensor.shape))
    return _result(async_op)


def _reduce_all(flat, op, group):
    if op == getattr(dist.ReduceOp, "AVG", object()):
        _orig("all_reduce")(flat, op=dist.ReduceOp.SUM, group=group)
        flat.div_(_group_size(group))
    else:
        _orig("all_reduce")(flat, op=op, group=group)


def _reduce_scatter_tensor(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
    world = _group_size(group)
    total = _wide(input).clone()
    if BF16_SUM == "rank_order" and op == dist.ReduceOp.SUM and _needs_cast(input):
        total = _bf16_sum_in_rank_order(total, group)
    else:
        _reduce_all(total, op, group)
    block = total.reshape(-1).chunk(world)[_group_rank(group)]
    output.copy_(block.view(output.shape))
    return _result(async_op)


def _reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, group=None, async_op=False):
    stacked = torch.stack([_wide(t).reshape(-1) for t in input_list])
    if BF16_SUM == "rank_order" and op == dist.ReduceOp.SUM and _needs_cast(output):
        stacked = _bf16_sum_in_rank_order(stacked, group)
    else:
        _reduce_all(stacked, op, group)
    output.copy_(stacked[_group_rank(group)].view(output.shape))
    return _result(async_op)


def _as_real_flat(tensor):
    tensor = tensor.contiguous()
    return (torch.view_as_real(tensor) if tensor.is_complex() else _wide(tensor)).reshape(-1)


def _all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    send = torch.cat([_as_real_flat(t) for t in input_tensor_list])
    receive_sizes = [_as_real_flat(t).numel() for t in output_tensor_list]
    receive = torch.empty(sum(receive_sizes), dtype=send.dtype, device=send.device)
    _orig("all_to_all_single")(receive, send, receive_sizes, [_as_real_flat(t).numel() for t in input_tensor_list],
                               group=group)
    for out, part in zip(output_tensor_list, receive.split(receive_sizes)):
        if out.is_complex():
            out.copy_(torch.view_as_complex(part.view(*out.shape, 2)))
        else:
            out.copy_(part.view(out.shape))
    return _result(async_op)


def _silu(input, inplace=False):
    if input.dtype == torch.bfloat16 and input.device.type == "cpu":
        result = _original["silu"](input.float()).to(torch.bfloat16)
        return input.copy_(result) if inplace else result
    return _original["silu"](input, inplace=inplace)


def _mse_loss(input, target, *args, **kwargs):
    if input.dtype == torch.bfloat16 or target.dtype == torch.bfloat16:
        return _original["mse_loss"](input.float(), target.float(), *args, **kwargs).to(input.dtype)
    return _original["mse_loss"](input, target, *args, **kwargs)


# The accumulation of the emulated bf16 GEMMs: "fp32" (the default, as cuBLAS on the GPU) or "fp64"
# (PKBXC_BF16_GEMM=fp64: exact products, as pkbw's host oracles compute them). Running a problem both
# ways shows whether a bf16 disagreement is only the GEMM's accumulation (docs/problems.md).
BF16_GEMM = os.environ.get("PKBXC_BF16_GEMM", "fp32")
if BF16_GEMM not in ("fp32", "fp64"):
    raise ValueError(f"PKBXC_BF16_GEMM={BF16_GEMM}: expected fp32 or fp64")


def _fp32_gemm(name, original):
    def gemm(*args, **kwargs):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if not any(t.dtype == torch.bfloat16 and t.device.type == "cpu" for t in tensors):
            return original(*args, **kwargs)
        wide_type = torch.float64 if BF16_GEMM == "fp64" else torch.float32
        wide = [a.to(wide_type) if isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 else a for a in args]
        return original(*wide, **kwargs).to(torch.bfloat16)
    gemm.__name__ = name
    return gemm


def _install_bf16_matmul():
    for owner, name in ((torch, "matmul"), (torch, "mm"), (torch, "bmm"), (F, "linear"),
                        (torch.Tensor, "__matmul__"), (torch.Tensor, "matmul"), (torch.Tensor, "mm")):
        key = f"{owner.__name__}.{name}"
        _original[key] = getattr(owner, name)
        setattr(owner, name, _fp32_gemm(name, _original[key]))


class _TritonKernel:
    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__

    def __getitem__(self, grid):
        stand_in = TRITON_STAND_INS.get(self.__name__)
        if stand_in is None:
            raise NotImplementedError(f"Triton kernel {self.__name__} has no CPU stand-in "
                                      "(register one in tools/pkbxc/adapters.py)")
        return lambda *args, **kwargs: stand_in(grid, *args, **kwargs)


def _install_triton_stub():
    if "triton" in sys.modules:
        return
    triton = types.ModuleType("triton")
    language = types.ModuleType("triton.language")
    language.constexpr = type("constexpr", (), {})
    for name in ("float32", "float16", "bfloat16", "int32", "int64"):
        setattr(language, name, name)
    triton.language = language
    triton.jit = lambda fn=None, **kwargs: _TritonKernel(fn) if fn is not None else (lambda f: _TritonKernel(f))
    triton.cdiv = lambda a, b: (a + b - 1) // b
    sys.modules["triton"], sys.modules["triton.language"] = triton, language


_DIST_PIECES = {
    "bf16": {"all_reduce": _all_reduce, "broadcast": _broadcast, "reduce": _reduce, "all_gather": _all_gather,
             "gather": _gather, "scatter": _scatter, "all_to_all_single": _all_to_all_single},
    "reduce": {"reduce": _reduce},
    "uneven_all_gather": {"all_gather": _all_gather},
    "all_gather_into_tensor": {"all_gather_into_tensor": _all_gather_into_tensor},
    "reduce_scatter": {"reduce_scatter_tensor": _reduce_scatter_tensor, "reduce_scatter": _reduce_scatter},
    "all_to_all": {"all_to_all": _all_to_all},
}


def install(pieces=ALL_PIECES):
    """Installs the named pieces (idempotent). Call after init_process_group, before PKB's code runs."""
    for piece in pieces:
        if piece not in ALL_PIECES:
            raise ValueError(f"unknown emulation piece '{piece}' (pieces: {', '.join(ALL_PIECES)})")
        if piece in _installed:
            continue
        _installed.add(piece)
        if piece == "mse_loss":
            _original["mse_loss"] = F.mse_loss
            F.mse_loss = _mse_loss
        elif piece == "triton":
            _install_triton_stub()
        elif piece == "bf16_silu":
            _original["silu"] = F.silu
            F.silu = _silu
        elif piece == "bf16_matmul":
            _install_bf16_matmul()
        else:
            for name, replacement in _DIST_PIECES[piece].items():
                if name not in _original and hasattr(dist, name):
                    _original[name] = getattr(dist, name)
                setattr(dist, name, replacement)


def e4m3_round_trip(x):
    """float32 tensor -> the float32 values of x cast to float8_e4m3fn (torch's rule; see the module doc)."""
    x = x.float()
    magnitude = x.abs()
    _, exponent = torch.frexp(magnitude)  # magnitude = f * 2^exponent, f in [0.5, 1)
    step = torch.pow(2.0, (exponent - 4).clamp(min=-9).float())  # 3 mantissa bits; subnormal step 2^-9
    rounded = torch.round(magnitude / step) * step  # torch.round: half to even
    rounded = torch.where(magnitude == 0, torch.zeros_like(rounded), rounded)
    result = torch.copysign(rounded, x)
    return torch.where((rounded >= 480) | torch.isnan(x), torch.full_like(result, float("nan")), result)
