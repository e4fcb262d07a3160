"""The PKB judge's parking of its large inputs in host memory during the candidate's call
(engine/python/pkbw_input_parking.py): when it parks, that the device bytes go, and that every tensor,
view, expanded tensor, module parameter and byte no tensor shows comes back as it was. Runs on host
tensors under a real torch (this Python, $PKBW_PYTHON or /usr/bin/python3; exits 77, skipped, when none
imports torch): the storage calls are the same for CUDA tensors, where the judge uses them."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "engine", "python"))


class Parking(unittest.TestCase):
    def setUp(self):
        import torch
        import pkbw_input_parking as parking
        self.torch, self.parking = torch, parking
        torch.manual_seed(7)

    def test_parks_only_inputs_over_a_quarter_of_the_device(self):
        torch, parking = self.torch, self.parking
        base = torch.zeros(1000, dtype=torch.float32)  # 4000 bytes
        views = [base, base[10:20], base[500:]]  # one storage: counted once
        self.assertEqual(parking.inputs_bytes(views), 4000)
        self.assertTrue(parking.should_park(views, 15999))
        self.assertFalse(parking.should_park(views, 16000))
        self.assertFalse(parking.should_park([], 10))
        other = torch.zeros(250, dtype=torch.float64)  # 2000 more bytes, a storage of its own
        self.assertEqual(parking.inputs_bytes(views + [other]), 6000)
        # Or, after staging, more than the device has free (a working set the inputs' size would not fit).
        self.assertTrue(parking.should_park(views, 10**9, device_free_bytes=3999))
        self.assertFalse(parking.should_park(views, 10**9, device_free_bytes=4000))

    def test_memory_wrapped_twice_is_not_parked(self):
        torch, parking = self.torch, self.parking
        buffer = bytearray(range(64))
        whole = torch.frombuffer(buffer, dtype=torch.uint8)
        tail = torch.frombuffer(buffer, dtype=torch.uint8, offset=16)  # a second storage inside the first
        parked = parking.ParkedInputs(torch, [whole, tail], lambda: self.fail("released a cache"))
        self.assertTrue(parked.overlapping())
        self.assertFalse(parked.park())
        self.assertFalse(parking.ParkedInputs(torch, [whole, whole[8:]], lambda: None).overlapping())  # views

    def test_everything_comes_back_bit_for_bit_and_the_bytes_leave_meanwhile(self):
        torch, parking = self.torch, self.parking
        base = torch.randn(64, 32)
        hidden = torch.randn(100)
        shown = hidden[10:20]  # only part of its storage is an input: the rest must come back too
        expanded = torch.randn(1, 8).expand(5, 8)
        linear = torch.nn.Linear(16, 4).to(torch.bfloat16)
        ints = torch.randint(-5, 5, (37,), dtype=torch.int64)
        inputs = [base, base[3:9, 1:5], shown, expanded, linear.weight, linear.bias, ints]
        before = [t.detach().clone() for t in inputs] + [hidden.clone()]
        released = []
        parked = parking.ParkedInputs(torch, [t.detach() for t in inputs], lambda: released.append(1))
        self.assertTrue(parked.park())
        self.assertEqual(released, [1])
        for t in inputs:
            self.assertEqual(parking.storage_of(t).nbytes(), 0, "a parked storage keeps its bytes")
        parked.restore()
        after = [t.detach() for t in inputs] + [hidden]
        for i, (b, a) in enumerate(zip(before, after)):
            self.assertEqual(b.dtype, a.dtype)
            self.assertTrue(torch.equal(b, a), f"input {i} changed")
        self.assertTrue(torch.equal(linear(torch.ones(2, 16, dtype=torch.bfloat16)),
                                    torch.nn.functional.linear(torch.ones(2, 16, dtype=torch.bfloat16),
                                                               before[4], before[5])))
        parked.restore()  # a second restore changes nothing
        self.assertTrue(torch.equal(base, before[0]))

    def test_a_storage_that_cannot_be_resized_leaves_everything_in_place(self):
        torch, parking = self.torch, self.parking
        resizable = torch.randn(50)
        fixed = torch.frombuffer(bytearray(range(64)), dtype=torch.uint8)  # memory torch does not own
        keep = [resizable.clone(), fixed.clone()]
        parked = parking.ParkedInputs(torch, [resizable, fixed], lambda: self.fail("released a cache"))
        self.assertFalse(parked.park())
        self.assertTrue(torch.equal(resizable, keep[0]))
        self.assertTrue(torch.equal(fixed, keep[1]))
        self.assertEqual(parking.storage_of(resizable).nbytes(), 200)


class HostMemoryShort(Parking):
    def test_copies_that_do_not_fit_in_host_memory_leave_everything_in_place(self):
        torch, parking = self.torch, self.parking
        data = torch.randn(100)
        keep = data.clone()
        parked = parking.ParkedInputs(torch, [data], lambda: self.fail("released a cache"))

        def no_host_memory(*_):
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory")
        parked.as_bytes = no_host_memory
        self.assertFalse(parked.park())
        self.assertTrue(torch.equal(data, keep))
        self.assertEqual(parking.storage_of(data).nbytes(), 400)


def torch_python():
    for python in (sys.executable, os.environ.get("PKBW_PYTHON"), "/usr/bin/python3"):
        if python and subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
            return python
    return None


if __name__ == "__main__":
    python = torch_python()
    if python is None:
        print("SKIP: no Python here imports torch (this one, $PKBW_PYTHON, /usr/bin/python3)")
        sys.exit(77)
    if os.path.realpath(python) != os.path.realpath(sys.executable):
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
    unittest.main()
