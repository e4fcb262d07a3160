#!/usr/bin/env python3
"""Unit test of tools/pkbxc (the CPU cross-check's support code) against torch's own results; no PKB
checkout, no network. Runs under the first interpreter that imports torch (Debian's python3-torch is
/usr/bin/python3); exits 77 (skipped) when there is none.

- safetensors_lite reads files written by an independent writer below (every dtype pkbw writes,
  metadata, a 0-d and an empty tensor) bit for bit, and rejects truncated or inconsistent files
  naming the file and the tensor.
- emulation.e4m3_round_trip equals torch's float8_e4m3fn cast where torch has it, else a brute-force
  nearest-code search over the 256 e4m3 codes (ties to the even code; NaN above 464).
- the emulation's collectives, at W = 2 and W = 3 on gloo, equal the result computed locally with torch
  from every rank's inputs: reduce (non-roots keep their input), bf16 all_reduce / broadcast / all_gather / all_to_all_single,
  all_gather_into_tensor, uneven all_gather, reduce_scatter_tensor, reduce_scatter, list all_to_all
  (real and complex), bf16 GEMMs (fp32 product rounded once), bf16 silu, and bf16 mse_loss.
- adapters: 70's call from the pkbw run's lengths and values, 61's bf16 eye, 68's num_total_nodes, 76/78/87's
  call at pkbw's reduced shape (PKB's tuple, pkbw's tensors and params) and the exact conv of PKBXC_CONV=fp64.
"""
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools")


def reexec_with_torch():
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    for python in ("/usr/bin/python3", "python3"):
        if os.path.realpath(python) != os.path.realpath(sys.executable) and \
                subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
            os.execv(python, [python] + sys.argv)
    print("SKIP: no python3 with torch (Debian: apt-get install python3-torch)")
    sys.exit(77)


reexec_with_torch()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, TOOLS)
from pkbxc import emulation, safetensors_lite  # noqa: E402

NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
         torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
         torch.bool: "BOOL", torch.complex64: "C64"}
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what, flush=True)


def raw_bytes(tensor):
    flat = tensor.contiguous().reshape(-1)
    if flat.dtype in (torch.bfloat16, torch.float16):
        flat = flat.view(torch.int16)
    elif flat.dtype == torch.complex64:
        flat = torch.view_as_real(flat).reshape(-1)
    elif flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    return flat.numpy().tobytes()


def write_safetensors(path, tensors, metadata, extra=None):
    header, blob = {"__metadata__": metadata}, b""
    for name, tensor in tensors.items():
        data = raw_bytes(tensor)
        header[name] = {"dtype": NAMES.get(tensor.dtype, "U8"), "shape": list(tensor.shape),
                        "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    header.update(extra or {})
    text = json.dumps(header).encode()
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text + blob)


def test_safetensors(work):
    generator = torch.Generator().manual_seed(7)
    tensors = {}
    for dtype in NAMES:
        base = torch.randn(3, 5, generator=generator) * 100
        if dtype == torch.complex64:
            tensors["c64"] = torch.complex(base, -base)
        elif dtype == torch.bool:
            tensors["bool"] = base > 0
        else:
            tensors[NAMES[dtype].lower()] = base.to(dtype)
    tensors["scalar"] = torch.tensor(2.5)
    tensors["empty"] = torch.zeros(0, 4)
    path = os.path.join(work, "all.safetensors")
    write_safetensors(path, tensors, {"pkbw.problem": "1_allreduce", "pkbw.input_order": "f32,bf16"})
    loaded, metadata, dtypes = safetensors_lite.load(path)
    check(metadata == {"pkbw.problem": "1_allreduce", "pkbw.input_order": "f32,bf16"}, "metadata round trip")
    for name, tensor in tensors.items():
        got = loaded.get(name)
        check(got is not None and got.dtype == tensor.dtype and got.shape == tensor.shape
              and raw_bytes(got) == raw_bytes(tensor), f"safetensors {name}: bits differ")
    # float8 codes: torch.float8_* where torch has them, else uint8 codes decoded to float32
    codes = torch.arange(256, dtype=torch.uint8)
    header_extra = {"f8": {"dtype": "F8_E4M3", "shape": [256], "data_offsets": [0, 256]}}
    path8 = os.path.join(work, "f8.safetensors")
    text = json.dumps(header_extra).encode()
    with open(path8, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text + codes.numpy().tobytes())
    f8 = safetensors_lite.load(path8)[0]["f8"]
    values = f8.float() if f8.dtype != torch.uint8 else safetensors_lite.decode_float8(f8, "F8_E4M3")
    check(values[0x7E].item() == 448.0 and values[0x01].item() == 2.0 ** -9 and values[0x38].item() == 1.0
          and torch.isnan(values[0x7F]).item() and values[0xB8].item() == -1.0, "e4m3 decode of known codes")
    # bad files name the file and the tensor
    bad = os.path.join(work, "bad.safetensors")
    write_safetensors(bad, {"x": torch.zeros(4)}, {}, extra={"y": {"dtype": "F32", "shape": [8],
                                                                  "data_offsets": [0, 16]}})
    for content, expected in ((None, "'y' has 16 bytes"), (b"\x10\x00", "shorter than"),
                              (struct.pack("<Q", 99) + b"{}", "past the end")):
        if content is not None:
            with open(bad, "wb") as handle:
                handle.write(content)
        try:
            safetensors_lite.load(bad)
            check(False, f"bad file accepted ({expected})")
        except safetensors_lite.SafetensorsError as error:
            check(expected in str(error) and bad in str(error), f"bad file message '{error}' lacks '{expected}'")


def nearest_e4m3(value, table):
    if value != value or abs(value) > 464:
        return float("nan")
    best = None
    for code in range(256):
        candidate = table[code]
        if candidate != candidate:
            continue
        key = (abs(candidate - value), code & 1)  # ties: the even code (mantissa LSB 0)
        if best is None or key < best[0]:
            best = (key, candidate)
    result = best[1]
    return result if result != 0 else (0.0 if value >= 0 else -0.0)


def test_e4m3():
    generator = torch.Generator().manual_seed(3)
    table = safetensors_lite.decode_float8(torch.arange(256, dtype=torch.uint8), "F8_E4M3").tolist()
    finite = torch.tensor([v for v in table if v == v])
    midpoints = (finite.sort().values[1:] + finite.sort().values[:-1]) / 2
    samples = torch.cat([torch.randn(3000, generator=generator) * s for s in (0.003, 0.1, 3, 60, 200)]
                        + [finite, midpoints, torch.tensor([0.0, -0.0, 447.9, 448.0, 463.9, 464.0, 464.1, 479.0,
                                                            480.0, 1e6, float("inf"), float("nan")])])
    got = emulation.e4m3_round_trip(samples)
    if hasattr(torch, "float8_e4m3fn"):
        want = samples.to(torch.float8_e4m3fn).float()
        source = "torch's float8_e4m3fn cast"
    else:
        want = torch.tensor([nearest_e4m3(v, table) for v in samples.tolist()])
        source = "nearest-code search"
    same = (got == want) | (torch.isnan(got) & torch.isnan(want))
    check(bool(same.all()), f"e4m3 round trip differs from {source} at "
                            f"{samples[~same][:5].tolist()} -> {got[~same][:5].tolist()} vs {want[~same][:5].tolist()}")


def rank_values(rank, shape, dtype=torch.float32, salt=0):
    generator = torch.Generator().manual_seed(1000 * salt + rank)
    return (torch.randn(shape, generator=generator) * 3).to(dtype)


def collective_worker(rank, world, port, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    emulation.install()
    errors = []

    def expect(condition, what):
        if not condition:
            errors.append(f"W={world} rank {rank}: {what}")

    everyone = [rank_values(r, (4, 6)) for r in range(world)]
    # bf16 all_reduce: fp32 sum of the bf16 inputs, rounded once
    mine = everyone[rank].bfloat16()
    dist.all_reduce(mine)
    expect(torch.equal(mine, sum(t.bfloat16().float() for t in everyone).bfloat16()), "bf16 all_reduce")
    value = everyone[rank].bfloat16()
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    expect(torch.equal(value, torch.stack([t.bfloat16() for t in everyone]).amax(0)), "bf16 all_reduce MAX")
    # reduce onto rank 0 (fp32 and bf16): the root gets the sum, the others keep their input (as NCCL)
    for dtype in (torch.float32, torch.bfloat16):
        value = everyone[rank].to(dtype).clone()  # .to() of the same dtype is the tensor itself
        dist.reduce(value, dst=0)
        want = sum(t.to(dtype).float() for t in everyone).to(dtype) if rank == 0 else everyone[rank].to(dtype)
        expect(torch.allclose(value.float(), want.float(), atol=1e-5, rtol=1e-5), f"reduce {dtype}")
    # bf16 broadcast from the last rank
    value = everyone[rank].bfloat16()
    dist.broadcast(value, src=world - 1)
    expect(torch.equal(value, everyone[world - 1].bfloat16()), "bf16 broadcast")
    # bf16 all_gather and all_gather_into_tensor (bf16 and int64)
    parts = [torch.empty(4, 6, dtype=torch.bfloat16) for _ in range(world)]
    dist.all_gather(parts, everyone[rank].bfloat16())
    expect(all(torch.equal(p, t.bfloat16()) for p, t in zip(parts, everyone)), "bf16 all_gather")
    for dtype in (torch.bfloat16, torch.int64):
        out = torch.empty(4 * world, 6, dtype=dtype)
        work = dist.all_gather_into_tensor(out, everyone[rank].to(dtype), async_op=True)
        work.wait()
        expect(torch.equal(out, torch.cat([t.to(dtype) for t in everyone])), f"all_gather_into_tensor {dtype}")
    # uneven all_gather: rank r holds r + 1 rows
    uneven = [rank_values(r, (r + 1, 3), salt=1) for r in range(world)]
    parts = [torch.empty(r + 1, 3) for r in range(world)]
    dist.all_gather(parts, uneven[rank])
    expect(all(torch.equal(p, t) for p, t in zip(parts, uneven)), "uneven all_gather")
    # reduce_scatter_tensor (bf16 and fp32) and list reduce_scatter
    big = [rank_values(r, (2 * world, 5), salt=2) for r in range(world)]
    for dtype in (torch.float32, torch.bfloat16):
        out = torch.empty(2, 5, dtype=dtype)
        dist.reduce_scatter_tensor(out, big[rank].to(dtype))
        total = sum(t.to(dtype).float() for t in big).to(dtype)[2 * rank: 2 * rank + 2]
        # gloo's fp32 summation order is its own: fp32 agrees to rounding, bf16 (rounded once) exactly
        close = torch.equal(out, total) if dtype == torch.bfloat16 else torch.allclose(out, total, atol=1e-6, rtol=1e-6)
        expect(close, f"reduce_scatter_tensor {dtype}")
    out = torch.empty(2, 5)
    dist.reduce_scatter(out, list(big[rank].chunk(world)))
    expect(torch.allclose(out, sum(big)[2 * rank: 2 * rank + 2], atol=0, rtol=1e-6), "reduce_scatter list")
    # list all_to_all: chunk j of rank r (r + j + 1 rows) goes to rank j; also complex
    for complex_ in (False, True):
        def chunk(src, dst):
            base = rank_values(src * 16 + dst, (src + dst + 1, 2), salt=3)
            return torch.complex(base, base + 1) if complex_ else base.bfloat16()
        outputs = [torch.empty_like(chunk(r, rank)) for r in range(world)]
        dist.all_to_all(outputs, [chunk(rank, j) for j in range(world)])
        expect(all(torch.equal(o, chunk(r, rank)) for r, o in enumerate(outputs)),
               f"list all_to_all {'complex' if complex_ else 'bf16'}")
    # bf16 all_to_all_single
    out = torch.empty(world * 2, 3, dtype=torch.bfloat16)
    dist.all_to_all_single(out, rank_values(rank, (world * 2, 3), torch.bfloat16, salt=4))
    want = torch.cat([rank_values(r, (world * 2, 3), torch.bfloat16, salt=4)[2 * rank: 2 * rank + 2]
                      for r in range(world)])
    expect(torch.equal(out, want), "bf16 all_to_all_single")
    # bf16 mse_loss: fp32 result rounded to bf16
    a, b = rank_values(rank, (8,), torch.bfloat16), rank_values(rank, (8,), torch.bfloat16, salt=5)
    expect(torch.equal(F.mse_loss(a, b), F.mse_loss(a.float(), b.float()).bfloat16()), "bf16 mse_loss")
    # bf16 GEMMs: fp32 product rounded once
    x, w = rank_values(rank, (5, 7), torch.bfloat16, salt=6), rank_values(rank, (3, 7), torch.bfloat16, salt=7)
    bias = rank_values(rank, (3,), torch.bfloat16, salt=8)
    want = (x.float() @ w.float().t()).bfloat16()
    expect(torch.equal(torch.matmul(x, w.t()), want) and torch.equal(x @ w.t(), want)
           and torch.equal(torch.mm(x, w.t()), want), "bf16 matmul / @ / mm")
    expect(torch.equal(F.linear(x, w, bias), (x.float() @ w.float().t() + bias.float()).bfloat16()), "bf16 linear")
    # bf16 silu: fp32 result rounded once
    v = rank_values(rank, (64,), torch.bfloat16, salt=9) * 8
    expect(torch.equal(F.silu(v), (v.float() / (1 + torch.exp(-v.float()))).bfloat16()), "bf16 silu")
    # PKBXC_BF16_SUM=rank_order: bf16 sums in rank order, rounded to bf16 after each addition (the
    # host oracles' model of NCCL); all_reduce and reduce_scatter_tensor
    def in_rank_order(tensors):
        total = tensors[0].bfloat16()
        for t in tensors[1:]:
            total = (total.float() + t.bfloat16().float()).bfloat16()
        return total
    emulation.BF16_SUM = "rank_order"
    value = everyone[rank].bfloat16()
    dist.all_reduce(value)
    expect(torch.equal(value, in_rank_order(everyone)), "bf16 all_reduce in rank order")
    out = torch.empty(2, 5, dtype=torch.bfloat16)
    dist.reduce_scatter_tensor(out, big[rank].bfloat16())
    expect(torch.equal(out, in_rank_order(big)[2 * rank: 2 * rank + 2]), "bf16 reduce_scatter_tensor in rank order")
    emulation.BF16_SUM = "fp32"
    # PKBXC_BF16_GEMM=fp64: the exact product rounded once
    emulation.BF16_GEMM = "fp64"
    expect(torch.equal(torch.matmul(x, w.t()), (x.double() @ w.double().t()).bfloat16()), "bf16 matmul, fp64")
    emulation.BF16_GEMM = "fp32"
    dist.barrier()
    dist.destroy_process_group()
    queue.put(errors)


def test_collectives():
    """W = 2 and W = 3 at the same time (torch start-up dominates), each on a port of its own."""
    context = mp.get_context("spawn")
    runs = []
    for world in (2, 3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        queue = context.Queue()
        procs = [context.Process(target=collective_worker, args=(r, world, port, queue)) for r in range(world)]
        for p in procs:
            p.start()
        runs.append((world, queue, procs))
    for world, queue, procs in runs:
        results = [queue.get(timeout=180) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        for errors in results:
            for error in errors:
                check(False, error)
        check(all(p.exitcode == 0 for p in procs), f"W={world}: a rank exited with {[p.exitcode for p in procs]}")
        print(f"collectives at W={world}: {sum(len(e) for e in results)} failures", flush=True)


def test_tie_note():
    """The cross-check's mismatch note: rows of mismatched elements against the judge's tie rows."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("pkb_crosscheck", os.path.join(TOOLS, "pkb_crosscheck.py"))
    crosscheck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(crosscheck)
    bad = torch.zeros(5, 3, dtype=torch.bool)
    bad[1, 0] = bad[3, 2] = True
    ties = {"output": {"rows": [1, 3, 4], "rule": "k-th and (k+1)-th equal"}}
    note = crosscheck.tie_note("output", bad, ties)
    check(note.startswith("tie-explained: mismatched rows 1, 3 are all tie rows"), f"tie note: {note}")
    note = crosscheck.tie_note("output", bad, {"output": {"rows": [3], "rule": "r"}})
    check(note == "mismatched rows 1, 3: 1 outside the 1 tie rows", f"tie note outside: {note}")
    check(crosscheck.tie_note("other", bad, ties) == "mismatched rows 1, 3", "tie note without tie rows")
    check(crosscheck.tie_note("output", torch.tensor(True), {"output": {"rows": [0], "rule": "r"}})
          .startswith("tie-explained: mismatched rows 0"), "tie note of a 0-dim output")


def test_adapters():
    """70's adapter passes the pkbw run's lengths and values (PKB's draw has other values) and refuses
    lengths of another shape; 61's patch gives a bf16 eye equal to the identity; 68's reads num_total_nodes."""
    from pkbxc import adapters
    lengths, values = torch.tensor([2, 0, 3, 1], dtype=torch.long), torch.arange(6, dtype=torch.long) * 7

    def pkb_70(rank, world, pid, shape, dtype, trial, device):
        return (torch.tensor([5, 5, 5, 5]), torch.zeros(20, dtype=torch.long), [1, 2], 2, None)

    def call(pid, names, tensors, params, pkb_inputs=None, solution=None):
        return adapters.Call(problem_id=pid, stem=str(pid), rank=0, world=2, trial=0, m=64, n=64,
                             dtype=torch.bfloat16, device=torch.device("cpu"), tensors=tensors, names=names,
                             params=params, solution=solution, pkb_inputs=pkb_inputs)

    params = {"batch_size": 2, "key_splits[]": 2, "key_splits[0]": 1, "key_splits[1]": 2}
    build = adapters.adapter_for(70).build
    args, _ = build(call(70, ["lengths", "values"], [lengths, values], params, pkb_70))
    check(torch.equal(args[0], lengths) and torch.equal(args[1], values) and args[2:4] == [[1, 2], 2],
          "70: PKB called with the pkbw run's lengths and values")
    for bad, what in (([lengths[:3], values[:5]], "lengths of another shape"), ([lengths, values[:5]], "values short"),
                      ([lengths, values], "batch_size differs")):
        try:
            build(call(70, ["lengths", "values"], bad, dict(params, batch_size=3) if "batch" in what else params,
                       pkb_70))
            check(False, f"70: {what} accepted")
        except adapters.AdapterError:
            pass
    eye = torch.eye
    try:
        adapters.adapter_for(61).patch(None, call(61, [], [], {}))
        check(torch.equal(torch.eye(3, dtype=torch.bfloat16).float(), eye(3)), "61: bf16 eye is the identity")
    finally:
        torch.eye = eye

    def solution_68(local_embedding_shard, input_node_ids, proj_matrix, num_total_nodes: int, group=None):
        pass

    tensors = [torch.zeros(3, 2), torch.zeros(4, dtype=torch.long), torch.zeros(2, 2)]
    args, kwargs = adapters.adapter_for(68).build(call(68, ["a", "b", "c"], tensors, {"num_total_nodes": 6.0},
                                                       solution=solution_68))
    check(len(args) == 3 and kwargs == {"num_total_nodes": 6} and type(kwargs["num_total_nodes"]) is int,
          f"68: num_total_nodes from pkbw's params ({kwargs})")

    # 76/78/87 (pkbw_shape): PKB's tuple with pkbw's tensors at a reduced shape, scalars from pkbw as PKB's type
    def solution_78(z, tile_latent_min_height: int, overlap: float, first_frame_as_image: bool = False,
                    group=None):
        pass

    def pkb_78(rank, world, pid, shape, dtype, trial, device):
        return (torch.zeros(1, 16, 6, 90, 90, dtype=torch.bfloat16), 32, 0.25, False, None)

    z = torch.ones(1, 16, 6, 22, 22, dtype=torch.bfloat16)
    params = {"tile_latent_min_height": 8.0, "overlap": 0.25, "first_frame_as_image": 0.0}
    build = adapters.adapter_for(78).build
    c = call(78, ["z"], [z], params, pkb_78, solution_78)
    args, _ = build(c)
    check(args[0] is z and args[1:] == [8, 0.25, False, None] and type(args[1]) is int and type(args[3]) is bool,
          f"78: reduced z and pkbw's tile size as an int ({args[1:]})")
    check(any("tile_latent_min_height=8 (PKB 32)" in n for n in c.notes), f"78: the scaled param is named ({c.notes})")
    z_pkb = torch.ones(1, 16, 6, 90, 90, dtype=torch.bfloat16)
    for tensors, bad_params, what in (([z_pkb], params, "PKB's shape with another tile size"),
                                      ([z.float()], params, "another dtype"),
                                      ([z[0]], params, "another rank"),
                                      ([z], dict(params, tile_latent_min_height=8.5), "a fractional int")):
        try:
            build(call(78, ["z"], tensors, bad_params, pkb_78, solution_78))
            check(False, f"78: {what} accepted")
        except adapters.AdapterError:
            pass
    args, _ = build(call(78, ["z"], [z_pkb], dict(params, tile_latent_min_height=32.0), pkb_78, solution_78))
    check(args[1] == 32 and args[0] is z_pkb, "78: PKB's shape and params give PKB's call")

    # PKBXC_CONV=fp64's functional (76, 87): the conv exact and rounded once, then a separately rounded bias
    torch.manual_seed(3)
    x, w, b = (torch.randn(shape).to(torch.bfloat16) for shape in ((1, 24, 5, 6), (8, 24, 3, 3), (8,)))
    exact = adapters._ExactConv(F)
    expected = F.conv2d(x.double(), w.double(), padding=(0, 1)).to(torch.bfloat16) + b.view(1, -1, 1, 1)
    y = exact.conv2d(x, w, b, 1, (0, 1))
    check(y.dtype == torch.bfloat16 and torch.equal(y, expected), "PKBXC_CONV=fp64: conv2d exact, then + bias")
    y3 = exact.conv3d(x[:, :, None], w[:, :, None], None)
    check(torch.equal(y3, F.conv3d(x[:, :, None].double(), w[:, :, None].double()).to(torch.bfloat16)),
          "PKBXC_CONV=fp64: conv3d exact, rounded once")
    check(exact.relu is F.relu, "PKBXC_CONV=fp64: other functions are torch's")


if __name__ == "__main__":
    print(f"torch {torch.__version__}, gloo {dist.is_gloo_available()}")
    with tempfile.TemporaryDirectory() as work:
        test_safetensors(work)
    test_e4m3()
    test_tie_note()
    test_adapters()
    test_collectives()
    print("FAILED" if failures else "all pkbxc checks passed", f"({len(failures)} failures)")
    sys.exit(1 if failures else 0)
