#!/usr/bin/env python3
"""Problem 62 against a literal re-reading of PKB's reference, without torch.

This machine has no torch, so PKB's own reference cannot run here (tools/pkb_crosscheck.py). Instead this
script follows reference/62_torchharmonics_spherical_convolution.py step by step in plain Python (double
precision): the azimuth `_transpose` (channels split, longitude shards concatenated in source order), the
contraction as PKB's loop over output longitudes (`psi @ x` then `torch.roll(x, -pscale, dims=2)`), the
polar all_reduce, the latitude split, the transpose back (longitude split, channel chunks concatenated) and
the einsum with bias. It reads pkbw's inputs and the host oracle's outputs of a `pkbw dryrun
--keep-inputs --keep-outputs` and compares them: within 1e-5 for `pkb` inputs (the oracle rounds where
torch stores f32), bit for bit for `exact` inputs (every partial sum is exact in f32). The grids cover
azimuth 2 (W = 2, 4, 8) and 1 (W = 3), polar 1 to 4.
"""
import argparse
import array
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile


def load_safetensors(path):
    with open(path, "rb") as f:
        header_len = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_len))
        data = f.read()
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        values = array.array({"F32": "f", "I64": "q"}[meta["dtype"]])
        values.frombytes(data[begin:end])
        tensors[name] = (list(values), meta["shape"])
    return tensors


def dryrun(pkbw, world, m, n, mode, work, cache):
    argv = [pkbw, "dryrun", "-p", "62", "-s", "reference", "--backend", "host", "--nproc", str(world),
            "--dtype", "f32", "--m", str(m), "--n", str(n), "--inputs", mode, "--keep-inputs",
            "--keep-outputs", "--store", os.path.join(work, "runs.db"), "--cache-dir",
            cache or os.path.join(work, "cache"), "--json"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    for line in run.stdout.splitlines():
        if '"run_dir"' in line:
            return json.loads(line)["run_dir"]
    raise RuntimeError(f"dryrun W={world} failed: {run.stderr.strip()[-400:]}")


def rank_file(run_dir, rank, suffix):
    return glob.glob(os.path.join(run_dir, "**", "trial_0", f"rank_{rank}_{suffix}.safetensors"),
                     recursive=True)[0]


def pkb_outputs(inputs, world):
    """PKB's solution() on every rank, literally (the module docstring); returns each rank's output."""
    azimuth = 2 if world % 2 == 0 else 1
    polar = world // azimuth
    batch, channels, lat_local, lon_local = inputs[0]["x"][1]
    nlon = lon_local * azimuth
    nlat_out = lat_local * polar
    cc = channels // azimuth

    def x_of(rank, b, c, lat, lon):
        return inputs[rank]["x"][0][((b * channels + c) * lat_local + lat) * lon_local + lon]

    # 1. _transpose over the azimuth group: peer s sends its channel chunk `mine`; cat along longitude.
    def gathered(rank, b, c, lat, lon):
        row, mine = rank // azimuth, rank % azimuth
        return x_of(row * azimuth + lon // lon_local, b, mine * cc + c, lat, lon % lon_local)

    # 2. for pout: y[pout] = bmm(psi, x); x = roll(x, -1 along longitude): y[..., pout] reads lon + pout.
    partial = []
    for rank in range(world):
        indices, shape = inputs[rank]["psi_indices"]
        values = inputs[rank]["psi_values"][0]
        nnz = shape[1]
        y = {}
        for pout in range(nlon):
            for e in range(nnz):
                k, t, col = indices[e], indices[nnz + e], indices[2 * nnz + e]
                lat, lon = col // nlon, (col % nlon + pout) % nlon
                for b in range(batch):
                    for c in range(cc):
                        key = (b, c, k, t, pout)
                        y[key] = y.get(key, 0.0) + values[e] * gathered(rank, b, c, lat, lon)
        partial.append(y)

    outputs = []
    for rank in range(world):
        row, mine = rank // azimuth, rank % azimuth
        weight, bias = inputs[rank]["weight"][0], inputs[rank]["bias"][0]
        out_channels = inputs[rank]["weight"][1][0]
        lat_chunk, lon_chunk = nlat_out // polar, nlon // azimuth
        out = []
        for b in range(batch):
            for o in range(out_channels):
                for h in range(lat_chunk):
                    for w in range(lon_chunk):
                        total = 0.0
                        for c in range(channels):
                            source = c // cc  # 5. transpose back: channel chunk `source` from peer `source`
                            for k in range(3):
                                # 3-4. all_reduce over the polar group, then this rank's latitude chunk.
                                z = sum(partial[q * azimuth + source].get(
                                    (b, c % cc, k, row * lat_chunk + h, mine * lon_chunk + w), 0.0)
                                    for q in range(polar))
                                total += weight[(o * channels + c) * 3 + k] * z  # 6. einsum
                        out.append(total + bias[o])
        outputs.append(out)
    return outputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pkbw", required=True)
    parser.add_argument("--cache", help="compile cache folder (default: a temporary one)")
    options = parser.parse_args()
    cases = [(2, 32, 64, "pkb"), (3, 32, 64, "pkb"), (4, 32, 64, "pkb"), (8, 32, 64, "pkb"),
             (4, 64, 96, "pkb"), (4, 32, 64, "exact"), (8, 32, 96, "exact")]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pkbw-literal62-") as work:
        for world, m, n, mode in cases:
            run_dir = dryrun(options.pkbw, world, m, n, mode, work, options.cache)
            inputs = [load_safetensors(rank_file(run_dir, r, "inputs")) for r in range(world)]
            expected = pkb_outputs(inputs, world)
            worst = 0.0
            for rank in range(world):
                got = load_safetensors(rank_file(run_dir, rank, "reference"))["output"][0]
                if len(got) != len(expected[rank]):
                    raise RuntimeError(f"W={world} rank {rank}: {len(got)} outputs, expected {len(expected[rank])}")
                worst = max([worst] + [abs(g - e) for g, e in zip(got, expected[rank])])
            limit = 0.0 if mode == "exact" else 1e-5
            ok = worst <= limit
            failures += not ok
            print(f"{'PASS' if ok else 'FAIL'} W={world} {m}x{n} {mode}: max abs difference {worst:.3e} "
                  f"(limit {limit:g})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
