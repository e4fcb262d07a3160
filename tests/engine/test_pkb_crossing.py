#!/usr/bin/env python3
"""Every kind of input PKB's create_input_tensor returns crosses from the judge to a worker process
(engine/python/pkbw_value_encoding.py: encode_value with an InputEncoder in the judge, InputDecoder in
the worker; docs/pkb-interop.md, "What crosses"), and what cannot cross is refused naming the input,
its type and why.

Without arguments: under a fake torch (pkb_fake_torch.py), against a worker process of its own
(pkb_crossing_worker.py) that rebuilds the inputs with CandidateProcess.inputs, the worker's own code.
Needs no torch.

With --torch: the same kinds under a real torch, through the judge's real Candidate.send_inputs (memfd,
pickles, process groups) to a real pkbw_pkb_candidate.py process in a gloo group of one, and through the
timed calls' slots. Runs under the first of this Python, $PKBW_PYTHON and /usr/bin/python3 that imports
torch; exits 77 (skipped) when none does."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE_PYTHON = os.path.join(os.path.dirname(os.path.dirname(HERE)), "engine", "python")
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path[:0] = [HERE, ENGINE_PYTHON]
REAL_TORCH = "--torch" in sys.argv
if REAL_TORCH:
    sys.argv.remove("--torch")
else:
    import pkb_fake_torch  # noqa: F401 - installs the fake torch before the judge's modules import it
from pkbw_channel import Channel, ProtocolError  # noqa: E402
from pkbw_pkb_candidate import CandidateProcess  # noqa: E402
from pkbw_pkb_timing_slots import lay_out_inputs  # noqa: E402
from pkbw_tensor_layout import slot_view  # noqa: E402
from pkbw_value_encoding import InputEncoder, decode_value, encode_value  # noqa: E402
import pkbw_pkb_outputs as outputs  # noqa: E402
import pkbw_pkb_worker as judge  # noqa: E402


class Worker:
    """pkb_crossing_worker.py at (rank, world), over a Channel."""

    def __init__(self, rank, world):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.process = subprocess.Popen([sys.executable, os.path.join(HERE, "pkb_crossing_worker.py"),
                                         str(theirs.fileno()), str(rank), str(world)], pass_fds=(theirs.fileno(),))
        theirs.close()
        self.link = Channel(mine)

    def cross(self, args, **fields):
        """The judge's side of a send (Candidate.send_inputs' encoding, tensors in the message): the
        worker's reply. Raises the encoder's TypeError."""
        import torch
        wire = []

        def tensor(t, path):
            wire.append(t.detach().to_wire())
            return len(wire) - 1

        tree = encode_value(list(args), torch, tensor, "input", inputs=InputEncoder(torch, tensor))
        message = json.loads(json.dumps(dict(fields, op="call", args=tree, fake_tensors=wire)))
        self.link.send(message)
        reply, _ = self.link.recv()
        reply["tensors_sent"] = len(wire)
        return reply

    def close(self):
        self.link.sock.close()
        self.process.wait(timeout=10)


def args_of(reply):
    assert reply.get("ok"), reply
    return reply["args"]["items"]


class FakeTorchCrossing(unittest.TestCase):
    """One test per kind of input, with the fake torch; the worker is rank 0 of 4."""

    @classmethod
    def setUpClass(cls):
        import torch
        torch.distributed.set_world(0, 4)
        cls.torch = torch
        cls.worker = Worker(0, 4)

    @classmethod
    def tearDownClass(cls):
        cls.worker.close()

    def setUp(self):
        judge.INPUT_GROUPS.made.clear()

    def tensor(self, values, shape=None, **kwargs):
        return self.torch.Tensor(values, shape, **kwargs)

    def test_dense_tensors_cross_with_their_values_shapes_and_dtypes(self):
        torch = self.torch
        got = args_of(self.worker.cross([self.tensor([1.0, 2.0, 3.0, 4.0], (2, 2)),
                                         self.tensor([7, 8], dtype=torch.int64)]))
        self.assertEqual(got[0], {"type": "torch.Tensor", "values": [1.0, 2.0, 3.0, 4.0], "shape": [2, 2],
                                  "dtype": "float32", "requires_grad": False})
        self.assertEqual(got[1]["dtype"], "int64")

    def test_a_parameter_stays_a_parameter_with_its_requires_grad(self):
        nn = self.torch.nn
        reply = self.worker.cross([nn.Parameter(self.tensor([1.5])),
                                   nn.Parameter(self.tensor([2.5]), requires_grad=False)])
        got = args_of(reply)
        self.assertEqual([(g["type"], g["values"], g["requires_grad"]) for g in got],
                         [("torch.nn.Parameter", [1.5], True), ("torch.nn.Parameter", [2.5], False)])
        self.assertEqual(reply["tensors_sent"], 2)

    def test_a_tensor_that_requires_grad_still_does(self):
        got = args_of(self.worker.cross([self.tensor([1.0], requires_grad=True)]))
        self.assertEqual((got[0]["type"], got[0]["requires_grad"]), ("torch.Tensor", True))

    def test_pkb_problem_31s_inputs_cross_with_their_nn_linear_modules(self):
        """PKB's 31, 32, 49-51 pass nn.Linear modules (create_input_tensor's _linear): rebuilt in the worker
        from their state, the weights and biases through the tensor channel, never in the pickle (the
        fake tensor refuses to be pickled)."""
        nn = self.torch.nn
        x = (self.tensor([0.0] * 8, (2, 4)), self.tensor([1.0] * 8, (2, 4)), self.tensor([2.0, 3.0]),
             nn.Linear(4, 3, seed=1), nn.Linear(4, 3, seed=2), nn.Linear(3, 4, seed=3), 8, 2, None)
        reply = self.worker.cross(x)
        got = args_of(reply)
        self.assertEqual(reply["tensors_sent"], 3 + 3 * 2)
        self.assertEqual([g["type"] for g in got],
                         ["torch.Tensor"] * 3 + ["torch.nn.Linear"] * 3 + ["int", "int", "NoneType"])
        down = got[5]
        self.assertEqual(down["attributes"]["in_features"]["value"], 3)
        self.assertEqual(down["attributes"]["out_features"]["value"], 4)
        self.assertEqual(down["attributes"]["training"]["value"], True)
        weight = down["parameters"]["weight"]
        self.assertEqual((weight["type"], weight["shape"], weight["requires_grad"]),
                         ("torch.nn.Parameter", [4, 3], True))
        self.assertEqual(weight["values"], x[5].weight.values)
        self.assertEqual(down["parameters"]["bias"]["values"], x[5].bias.values)

    def test_a_linear_without_bias_keeps_its_bias_none(self):
        got = args_of(self.worker.cross([self.torch.nn.Linear(2, 2, bias=False)]))
        self.assertEqual(got[0]["parameters"]["bias"], {"type": "NoneType", "value": None})

    def test_a_module_of_modules_with_tied_weights_sends_the_weight_once(self):
        nn = self.torch.nn
        outer = nn.Module()
        outer.first, outer.second = nn.Linear(2, 2), nn.Linear(2, 2)
        outer.second.weight = outer.first.weight
        outer.register_buffer("scale", self.tensor([0.5]))
        reply = self.worker.cross([outer])
        got = args_of(reply)[0]
        self.assertEqual(reply["tensors_sent"], 4)  # one weight, two biases, the buffer
        self.assertEqual(got["modules"]["second"]["parameters"]["weight"].keys(), {"same"})
        self.assertEqual(got["attributes"]["training"]["value"], True)

    def test_nested_containers_keep_their_types(self):
        import pkb_fake_torch as fake
        t = self.tensor
        x = ([t([1.0]), t([2.0]), t([3.0])], (t([4.0]), [t([5.0]), {"k": t([6.0]), 1: 2.5}]), {"a": (1, 2)},
             fake.Pair(t([7.0]), 3), fake.Experts(2, [t([8.0])], self.torch.distributed.group.WORLD))
        got = args_of(self.worker.cross(x))
        self.assertEqual([g["type"] for g in got[0]["items"]], ["torch.Tensor"] * 3)
        self.assertEqual(got[1]["type"], "tuple")
        self.assertEqual(got[1]["items"][1]["type"], "list")
        inner = got[1]["items"][1]["items"][1]
        self.assertEqual(inner["type"], "dict")
        self.assertEqual([(k["value"], v.get("values", v.get("value"))) for k, v in inner["items"]],
                         [("k", [6.0]), (1, 2.5)])
        self.assertEqual(got[2]["items"][0][1]["type"], "tuple")
        self.assertEqual((got[3]["type"], got[3]["items"][0]["values"]), ("pkb_fake_torch.Pair", [7.0]))
        self.assertEqual(got[4]["type"], "pkb_fake_torch.Experts")
        self.assertEqual(got[4]["fields"]["weights"]["items"][0]["values"], [8.0])
        self.assertEqual(got[4]["fields"]["group"]["group"], "world")

    def test_scalars_strings_none_shapes_dtypes_and_devices(self):
        torch = self.torch
        x = (1, 2.5, True, "ortho", None, (720, 1440), torch.Size([3, 4]), torch.bfloat16, torch.device("cuda:1"),
             1e10, -100)
        got = args_of(self.worker.cross(x))
        self.assertEqual([(g["type"], g.get("value")) for g in got],
                         [("int", 1), ("float", 2.5), ("bool", True), ("str", "ortho"), ("NoneType", None),
                          ("tuple", None), ("torch.Size", None), ("torch.dtype", "torch.bfloat16"),
                          ("torch.device", "cuda:1"), ("float", 1e10), ("int", -100)])
        self.assertEqual([g["value"] for g in got[6]["items"]], [3, 4])

    def test_the_world_group_is_the_workers_own_world(self):
        got = args_of(self.worker.cross([self.tensor([1.0]), 1.0, 2.0, self.torch.distributed.group.WORLD]))
        self.assertEqual(got[3], {"type": "torch.distributed.ProcessGroup", "group": "world"})

    def pkb_tp_cp_groups(self, dist, rank, tp_size=2, world=4):
        """PKB's _build_tp_cp_groups, as rank `rank` runs it."""
        tp = cp = None
        for cp_idx in range(world // tp_size):
            ranks = list(range(cp_idx * tp_size, (cp_idx + 1) * tp_size))
            g = dist.new_group(ranks=ranks)
            tp = g if rank in ranks else tp
        for tp_idx in range(tp_size):
            ranks = [tp_idx + cp_idx * tp_size for cp_idx in range(world // tp_size)]
            g = dist.new_group(ranks=ranks)
            cp = g if rank in ranks else cp
        return tp, cp

    def test_subgroups_are_made_in_every_worker_in_the_judges_order(self):
        """PKB's problems 22, 55-57, 62 and 74 pass groups of dist.new_group: the judges record every
        call (each rank the same list) and every worker makes each group once, in that order, members or
        not, before it rebuilds the inputs that hold one."""
        import torch
        dist = torch.distributed
        saved = dist.new_group
        recorder = judge.InputGroups()
        try:
            recorder.install(dist, 4)
            dist.new_group(ranks=[0, 3])  # outside create_input_tensor: not the inputs' business
            with recorder.record():
                tp, cp = self.pkb_tp_cp_groups(dist, rank=0)
            with recorder.record():  # the next trial makes them all again
                tp, cp = self.pkb_tp_cp_groups(dist, rank=0)
        finally:
            dist.new_group = saved
        self.assertEqual(recorder.made, [[0, 1], [2, 3], [0, 2], [1, 3]])
        rank3 = Worker(3, 4)
        try:
            for worker, mine in ((self.worker, [[0, 1], [0, 2]]), (rank3, [[2, 3], [1, 3]])):
                reply = worker.cross([self.tensor([1.0]), tp, cp] if worker is self.worker else
                                     [self.tensor([1.0]), dist.ProcessGroup([2, 3]), dist.ProcessGroup([1, 3])],
                                     **recorder.fields())
                got = args_of(reply)
                self.assertEqual([g["group"] for g in got[1:]], mine)
                self.assertEqual(reply["new_group_calls"][-4:], [[0, 1], [2, 3], [0, 2], [1, 3]])
                again = worker.cross([tp], **recorder.fields())  # made once per worker, however often sent
                self.assertEqual(again["new_group_calls"], reply["new_group_calls"])
        finally:
            rank3.close()

    def test_a_group_the_judges_did_not_see_made_is_an_input_error(self):
        reply = self.worker.cross([self.torch.distributed.ProcessGroup([1, 2])])
        self.assertFalse(reply["ok"])
        self.assertEqual(reply["kind"], "input_error")
        self.assertIn("ranks [1, 2]", reply["message"])

    def test_a_sparse_coo_tensor_crosses_as_indices_and_values(self):
        """PKB's 62 passes psi, a coalesced sparse COO tensor."""
        torch = self.torch
        psi = torch.sparse_coo_tensor(self.tensor([0, 1, 1, 0], (2, 2), dtype=torch.int64),
                                      self.tensor([0.5, -0.5]), (2, 3))._coalesced_(True)
        got = args_of(self.worker.cross([self.tensor([1.0]), psi]))[1]
        self.assertEqual((got["type"], got["size"], got["coalesced"]), ("torch.SparseTensor", [2, 3], True))
        self.assertEqual((got["indices"]["values"], got["values"]["values"]), ([0, 1, 1, 0], [0.5, -0.5]))

    def test_a_generator_crosses_with_its_state(self):
        generator = self.torch.Generator().manual_seed(42)
        got = args_of(self.worker.cross([generator]))[0]
        self.assertEqual((got["type"], got["device"], got["state"]), ("torch.Generator", "cpu", list(generator.state)))

    # What cannot cross: refused in the judge, naming the input, its type and why.

    def encode(self, args):
        return encode_value(list(args), self.torch, lambda t, path: 0, "input",
                            inputs=InputEncoder(self.torch, lambda t, path: 0))

    def test_a_sparse_csr_tensor_is_refused_by_layout(self):
        csr = self.torch.SparseTensor(self.tensor([0]), self.tensor([1.0]), (1, 1), self.torch.sparse_csr)
        with self.assertRaisesRegex(TypeError, r"^input\[1\]: a torch.sparse_csr tensor cannot cross"):
            self.encode([1, csr])

    def test_a_function_of_no_module_is_refused_naming_its_type(self):
        with self.assertRaisesRegex(TypeError, r"^input\[2\]: a value of type function cannot cross .*: it needs "
                                               r"__main__\..*<lambda>, which a worker cannot import"):
            self.encode([1, 2, lambda x: x])
        with self.assertRaisesRegex(TypeError, r"^input\[0\]\.k: a value of type generator cannot cross .*pickling "
                                               r"it \(its tensors apart\) failed: TypeError: cannot pickle"):
            self.encode([{"k": (i for i in range(3))}])

    def test_a_module_holding_what_cannot_be_pickled_is_refused_naming_the_module(self):
        linear = self.torch.nn.Linear(2, 2)
        linear.hook = lambda x: x
        with self.assertRaisesRegex(TypeError, r"^input\[0\]: a value of type torch.nn.Linear cannot cross"):
            self.encode([linear])

    def test_a_class_of_the_judges_reference_is_refused(self):
        import types
        module = types.ModuleType("pkbw_pkb_reference")
        exec("class Config:\n    pass\n", module.__dict__)
        module.Config.__module__ = "pkbw_pkb_reference"
        sys.modules["pkbw_pkb_reference"] = module
        try:
            with self.assertRaisesRegex(TypeError, r"^input\[0\]: a value of type pkbw_pkb_reference.Config cannot "
                                                   r"cross .*: it needs pkbw_pkb_reference.Config, which a worker "
                                                   r"cannot import"):
                self.encode([module.Config()])
        finally:
            del sys.modules["pkbw_pkb_reference"]

    def test_outputs_still_refuse_modules(self):
        """The worker's replies carry no pickles: a module output is refused as before."""
        with self.assertRaisesRegex(TypeError, r"output_1: a value of type Linear cannot cross"):
            encode_value((self.tensor([1.0]), self.torch.nn.Linear(1, 1)), self.torch, lambda t, p: 0)

    def test_the_judge_never_decodes_input_kinds_from_a_reply(self):
        for node in ({"x": ["t", 0, True]}, {"o": {"type": "x", "pickle": ""}}):
            with self.assertRaisesRegex(ProtocolError, "only the judge's inputs hold those"):
                decode_value(node, self.torch, lambda i: None)

    def test_an_input_error_reply_is_pkbws_failure_not_the_candidates(self):
        mine, theirs = socket.socketpair()

        class Running:
            def poll(self):
                return None

        candidate = judge.Candidate.__new__(judge.Candidate)
        candidate.channel, candidate.sequence, candidate.untrusted = Channel(mine), 1, True
        candidate.pidfd, candidate.process = None, Running()
        Channel(theirs).send({"seq": 1, "ok": False, "kind": "input_error", "message": "input[0]: broken"})
        with self.assertRaisesRegex(judge.InputsCannotCross,
                                    r"^the candidate's process could not rebuild them: input\[0\]: broken"):
            candidate.reply(timeout=10)
        mine.close()
        theirs.close()


# ---------------------------------------------------------------------------------------------------
# With a real torch.

INPUT_TYPES = '''
import dataclasses
import torch


@dataclasses.dataclass
class Experts:
    count: int
    weights: list
'''

SOLUTION = '''
import torch
import torch.distributed as dist
from pkb_input_types import Experts


def solution(x, lin, param, frozen, grad, psi, generator, nested, world, sub, experts, dtype, device, size, shape):
    """Says what arrived, as tensors and values the judge compares with its own."""
    return (
        lin(x).detach(),
        [type(lin).__module__ + "." + type(lin).__name__, lin.in_features, lin.out_features,
         type(lin.weight).__name__, lin.weight.requires_grad],
        [type(param).__name__, param.requires_grad, type(frozen).__name__, frozen.requires_grad, grad.requires_grad,
         grad.is_leaf],
        psi.to_dense(), [psi.is_sparse, psi.is_coalesced()],
        torch.rand(3, generator=generator),
        nested[0][1] * 2, [type(nested).__name__, type(nested[1]).__name__, nested[1]["k"]],
        [world is dist.group.WORLD, dist.get_world_size(world), dist.get_process_group_ranks(sub)],
        [type(experts).__name__, experts.count, isinstance(experts, Experts)], experts.weights[0] + 1,
        [str(dtype), str(device), list(size), list(shape), type(size).__name__],
    )
'''


@unittest.skipUnless(REAL_TORCH, "needs --torch")
class RealTorchCrossing(unittest.TestCase):
    """The judge's Candidate.send_inputs to a real pkbw_pkb_candidate.py process (world of one, gloo)."""

    @classmethod
    def setUpClass(cls):
        import torch
        import torch.distributed as dist
        cls.torch, cls.dist = torch, dist
        cls.work = tempfile.TemporaryDirectory(prefix="pkbw-crossing-")
        folder = cls.work.name
        with open(os.path.join(folder, "pkb_input_types.py"), "w") as f:
            f.write(INPUT_TYPES)
        cls.solution = os.path.join(folder, "solution.py")
        with open(cls.solution, "w") as f:
            f.write(SOLUTION)
        sys.path.insert(0, folder)

        def free_port():
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                return s.getsockname()[1]

        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
        judge.INPUT_GROUPS.install(dist, 1)
        argv = [sys.executable, judge.CANDIDATE_SCRIPT]
        cls.candidate = judge.Candidate([], argv, judge.candidate_environment(os.path.join(folder, "ext")))
        cls.candidate.torch, cls.candidate.device = torch, torch.device("cpu")
        cls.candidate.send({"op": "init", "rank": 0, "world_size": 1, "local_rank": 0, "device": "cpu",
                            "master_addr": "127.0.0.1", "master_port": free_port(), "checkout": folder})
        cls.candidate.reply(timeout=120)
        cls.candidate.request({"op": "load", "solution_file": cls.solution})

    @classmethod
    def tearDownClass(cls):
        try:
            cls.candidate.request({"op": "exit"})
            cls.candidate.process.wait(timeout=30)
        finally:
            cls.candidate.kill()
            cls.candidate.container.close()
            cls.dist.destroy_process_group()
            cls.work.cleanup()

    def inputs(self, seed):
        torch = self.torch
        from pkb_input_types import Experts
        torch.manual_seed(seed)
        with judge.INPUT_GROUPS.record():
            sub = self.dist.new_group(ranks=[0])
        lin = torch.nn.Linear(8, 4).to(dtype=torch.float32)
        psi = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.randn(3), (2, 3)).coalesce()
        return (torch.randn(5, 8), lin, torch.nn.Parameter(torch.randn(3)),
                torch.nn.Parameter(torch.randn(2), requires_grad=False), torch.randn(4, requires_grad=True), psi,
                torch.Generator().manual_seed(seed), ([torch.randn(2), torch.randn(3)], {"k": 7}),
                self.dist.group.WORLD, sub, Experts(2, [torch.randn(2)]), torch.bfloat16, torch.device("cpu"),
                torch.Size([2, 3]), (720, 1440))

    def expected(self, x):
        torch = self.torch
        generator = torch.Generator()
        generator.set_state(x[6].get_state())
        return (x[1](x[0]).detach(), ["torch.nn.modules.linear.Linear", 8, 4, "Parameter", True],
                ["Parameter", True, "Parameter", False, True, True], x[5].to_dense(), [True, True],
                torch.rand(3, generator=generator), x[7][0][1] * 2, ["tuple", "dict", 7], [True, 1, [0]],
                ["Experts", 2, True], x[10].weights[0] + 1, ["torch.bfloat16", "cpu", [2, 3], [720, 1440], "Size"])

    def test_every_kind_crosses_to_the_candidates_process(self):
        x = self.inputs(1)
        reply, fds = self.candidate.send_inputs("call", x, {"trial": 0})
        got = self.candidate.take_outputs(reply, fds)
        mismatch = outputs.pkb_mismatch(self.expected(x), got, 0, 0, self.torch)
        self.assertIsNone(mismatch or None, mismatch)

    def test_the_timed_calls_slots_hold_modules_and_rebuild_them(self):
        """lay_out_inputs lays a module's tensors into the slots; the tree is the same for every draw,
        and decoding it over the slot views gives the module back (CandidateProcess.op_map_slots)."""
        torch = self.torch
        # (A generator's state differs between draws: its inputs are timed unchecked, each worker drawing its own.)
        first, second = ([None if isinstance(v, torch.Generator) else v for v in self.inputs(seed)] for seed in (2, 3))
        tree, leaves, set_bytes = lay_out_inputs(first, torch, torch.device("cpu"))
        other_tree, _, _ = lay_out_inputs(second, torch, torch.device("cpu"))
        self.assertEqual(tree, other_tree)
        raw = torch.zeros(set_bytes, dtype=torch.uint8)
        for tensor, spec in leaves:
            slot_view(raw, 0, spec, torch).copy_(tensor)
        process = CandidateProcess(None)
        process.torch, process.dist, process.world = torch, self.dist, 1
        message = {"args": tree, **judge.INPUT_GROUPS.fields()}
        rebuilt = process.inputs(message, lambda i: slot_view(raw, 0, leaves[i][1], torch))
        self.assertIsInstance(rebuilt[1], torch.nn.Linear)
        self.assertTrue(torch.equal(rebuilt[1].weight, first[1].weight))
        self.assertTrue(raw.data_ptr() <= rebuilt[1].weight.data_ptr() < raw.data_ptr() + set_bytes)  # a slot view
        mismatch = outputs.pkb_mismatch(rebuilt[1](first[0]), first[1](first[0]), 0, 0, torch)
        self.assertIsNone(mismatch or None, mismatch)


def torch_python():
    """This Python if it imports torch, else $PKBW_PYTHON or /usr/bin/python3 if one does."""
    for python in (sys.executable, os.environ.get("PKBW_PYTHON"), "/usr/bin/python3"):
        if python and subprocess.run([python, "-c", "import torch, torch.distributed as d; assert d.is_available()"],
                                     capture_output=True).returncode == 0:
            return python
    return None


if __name__ == "__main__":
    if REAL_TORCH:
        python = torch_python()
        if python is None:
            print("SKIP: no Python here imports torch with torch.distributed (this one, $PKBW_PYTHON, "
                  "/usr/bin/python3); the fake-torch tests (without --torch) ran the same kinds")
            sys.exit(77)
        if os.path.realpath(python) != os.path.realpath(sys.executable):
            os.execv(python, [python, os.path.abspath(__file__), "--torch"] + sys.argv[1:])
        unittest.main(defaultTest="RealTorchCrossing")
    else:
        unittest.main(defaultTest="FakeTorchCrossing")
