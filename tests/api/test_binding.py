#!/usr/bin/python3
"""The Python binding (python/dcr) on one in-process thread group, without mpirun: numpy arrays and
torch tensors are used in place (never copied), bf16 travels as uint16 numpy arrays, and bad
buffers raise DcrError with dcr's message."""
import os
import sys
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import dcr  # noqa: E402


def spec():
    s = dcr.Spec(trainers=1, relays=1, rollout_tp=1, timeout=5)
    s.add_tensor("w", "bf16", (64, 16))
    s.add_tensor("b", "f32", (16,))
    return s


def run_job(trainer_fn, rollout_fn, close=True):
    """Runs trainer, relay and rollout on three threads; returns what each function returned (and
    what the relay's second serve() raised). The trainer closes the job after trainer_fn, unless
    `close` is False (trainer_fn closes it)."""
    the_spec, comms, out = spec(), dcr.Comm.threads(3), {}

    def trainer():
        endpoint = dcr.Trainer(the_spec, comms[0])
        out["trainer"] = trainer_fn(endpoint)
        if close:
            endpoint.close()

    def relay():
        endpoint = dcr.Relay(the_spec, comms[1])
        endpoint.serve()
        try:
            endpoint.serve()
        except dcr.DcrError as e:
            out["relay"] = str(e)

    def rollout():
        out["rollout"] = rollout_fn(dcr.Rollout(the_spec, comms[2]))

    threads = [threading.Thread(target=f) for f in (trainer, relay, rollout)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def receive_all(endpoint):
    """Receives until the job closes: (committed versions, codes of the steps that failed)."""
    versions, failed = [], []
    while True:
        try:
            version = endpoint.receive()
        except dcr.DcrError as e:
            failed.append(e.code)
            continue
        if version is None:
            return versions, failed
        versions.append(version)


class Binding(unittest.TestCase):
    def test_numpy_arrays_are_received_in_place(self):
        w = np.arange(64 * 16, dtype=np.uint16).reshape(64, 16)  # bf16 bits
        b = np.linspace(0, 1, 16, dtype=np.float32)
        served_w, served_b = np.zeros_like(w), np.zeros_like(b)

        def train(endpoint):
            for version in (1, 2, 3):
                w.reshape(-1)[::7] += 1
                b[version] = -version
                endpoint.publish(version, [w, b])
            return endpoint.committed

        def serve(endpoint):
            self.assertEqual([x["name"] for x in endpoint.buffers], ["w", "b"])
            endpoint.attach([served_w, served_b])
            return receive_all(endpoint)

        out = run_job(train, serve)
        self.assertEqual(out["trainer"], 3)
        self.assertEqual(out["rollout"], ([1, 2, 3], []))
        self.assertTrue(np.array_equal(served_w, w) and np.array_equal(served_b.view(np.uint32), b.view(np.uint32)))

    def test_torch_tensors_are_used_in_place(self):
        try:
            import torch
        except ImportError:
            self.skipTest("python3-torch is not installed")
        w = torch.randn(64, 16).to(torch.bfloat16)
        b = torch.randn(16)
        served = [torch.zeros(64, 16, dtype=torch.bfloat16), torch.zeros(16)]

        def train(endpoint):
            endpoint.publish(1, [w, b])
            with self.assertRaises(dcr.DcrError) as caught:
                endpoint.publish(2, [w.t(), b])  # a transposed view is not contiguous
            return str(caught.exception)

        def serve(endpoint):
            endpoint.attach(served)
            return receive_all(endpoint)

        out = run_job(train, serve)
        self.assertIn("must be contiguous", out["trainer"])
        self.assertEqual(out["rollout"], ([1], [8]))
        self.assertTrue(torch.equal(served[0].view(torch.int16), w.view(torch.int16)))
        self.assertTrue(torch.equal(served[1].view(torch.int32), b.view(torch.int32)))

    def test_bad_buffers_raise_with_dcr_s_message(self):
        def train(endpoint):
            errors = []
            for arrays in ([np.zeros((64, 16), np.uint16)], [np.zeros((64, 16), np.float32), np.zeros(16, np.float32)]):
                try:
                    endpoint.publish(1, arrays)
                except dcr.DcrError as e:
                    errors.append((e.code, str(e)))
            return errors

        def serve(endpoint):
            endpoint.attach([np.zeros((64, 16), np.uint16), np.zeros(16, np.float32)])
            return receive_all(endpoint)

        out = run_job(train, serve)
        (count_code, count_message), (dtype_code, dtype_message) = out["trainer"]
        self.assertEqual(count_code, 1)
        self.assertIn("1 buffers given, the endpoint has 2", count_message)
        self.assertEqual(dtype_code, 1)
        self.assertIn("is f32, the layout holds bf16", dtype_message)
        self.assertEqual(out["rollout"], ([], [8, 8]))  # both refused steps: aborted on the rollout too

    def test_read_only_arrays_are_refused_and_every_call_after_close_raises(self):
        w = np.zeros((64, 16), np.uint16)
        b = np.zeros(16, np.float32)

        def train(endpoint):
            endpoint.publish(1, [w, b])
            endpoint.close()
            raised = []
            for call in (lambda: endpoint.publish(2, [w, b]), endpoint.close):
                with self.assertRaises(dcr.DcrError) as caught:
                    call()  # at once: no peer is waited for
                raised.append(str(caught.exception))
            return raised

        def serve(endpoint):
            frozen = np.zeros((64, 16), np.uint16)
            frozen.flags.writeable = False
            with self.assertRaises(dcr.DcrError) as caught:
                endpoint.attach([frozen, np.zeros(16, np.float32)])
            endpoint.attach([np.zeros((64, 16), np.uint16), np.zeros(16, np.float32)])
            received = receive_all(endpoint)
            with self.assertRaises(dcr.DcrError) as after:
                endpoint.receive()
            return str(caught.exception), received, str(after.exception)

        out = run_job(train, serve, close=False)
        for message in out["trainer"] + [out["rollout"][2], out["relay"]]:
            self.assertIn("the job was closed", message)
        self.assertIn("buffer 'w' is a read-only array", out["rollout"][0])
        self.assertEqual(out["rollout"][1], ([1], []))

    def test_data_parallel_replicas_share_the_sends_and_check_replicas_names_a_difference(self):
        """Two replicas (train_dp=2) each publish their own copy of the same arrays: each sends part
        of the frames, the rollout gets every version; with check_replicas a one-bit difference in
        one replica's copy refuses the version, naming the tensor."""
        w = np.arange(64 * 16, dtype=np.uint16).reshape(64, 16)
        b = np.linspace(0, 1, 16, dtype=np.float32)
        served = [np.zeros_like(w), np.zeros_like(b)]
        the_spec = dcr.Spec(trainers=2, train_dp=2, check_replicas=True, relays=1, rollout_tp=1, timeout=5,
                            frame_elements=256, bundle_below=0)
        the_spec.add_tensor("w", "bf16", (64, 16))
        the_spec.add_tensor("b", "f32", (16,))
        comms, out = dcr.Comm.threads(4), {}

        def trainer(rank):
            endpoint = dcr.Trainer(the_spec, comms[rank])
            mine, frames, refused = [w.copy(), b.copy()], [], None
            for version in (1, 2, 3):
                mine[0].reshape(-1)[::7] += 1
                if rank == 1 and version == 2:
                    mine[0][3, 3] ^= 1  # replica 1 differs in one bit
                try:
                    endpoint.publish(version, mine)
                    frames.append(endpoint.last_step()[0])
                except dcr.DcrError as e:
                    refused = str(e)
                if rank == 1 and version == 2:
                    mine[0][3, 3] ^= 1
            endpoint.close()
            out[rank] = (frames, refused, mine[0])

        def relay():
            dcr.Relay(the_spec, comms[2]).serve()

        def rollout():
            endpoint = dcr.Rollout(the_spec, comms[3])
            endpoint.attach(served)
            out["rollout"] = receive_all(endpoint)

        threads = [threading.Thread(target=trainer, args=(r,)) for r in (0, 1)]
        threads += [threading.Thread(target=f) for f in (relay, rollout)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(out["rollout"], ([1, 3], [1]))  # every rank learns why: invalid_argument
        for rank in (0, 1):
            frames, refused, _ = out[rank]
            self.assertTrue(all(f > 0 for f in frames), f"replica {rank} sent no frames: {frames}")
            self.assertIn("hold different bits of tensor 'w'", refused)
        self.assertTrue(np.array_equal(served[0], out[0][2]))


if __name__ == "__main__":
    unittest.main()
