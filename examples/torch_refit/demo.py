"""Live refit through dcr: PyTorch trainers publish every optimizer step to serving ranks.

World ranks [0, T) train a small Llama-style model (model.py) on real text (bytes as tokens) with
AdamW: fp32 master weights, data parallel (gradients reduced over the trainers), and each trainer
publishes the bf16 copy from its own FSDP shard (the row bands dcr's training layout gives it).
Rank T relays. The remaining ranks serve in vLLM's tensor-parallel layout (fused qkv_proj and
gate_up_proj, padded vocabulary bands): they hold the model as torch tensors that dcr writes in
place, and run a tensor-parallel forward pass on each version.

Each version is checked against the trainers' full bf16 state, sent separately with MPI_Bcast
(which also times a full transfer): every rollout tensor must equal the independent numpy model
of vLLM's layout (tests/models/vllm_reference.py), and the rollouts' logits must equal bit for
bit those of a reference model built from that state. Exit status 0 only if every version
committed and every check held.

With --apply staged (dcr's apply=staged) each rollout keeps serving while a version stages: a
thread runs forward passes on the evaluation sequence with the committed weights while stage()
receives and checks the next version, and every one of those logits must equal bit for bit the
logits computed before staging began (and the tensors their bits before it). Then the rollout
stops the thread (the pause), apply() writes the version in place, and the checks above run. Per
version it prints the slowest rollout's staging seconds (stage(), from its call: that includes
waiting for the trainers' next step) and pause seconds (stopping the thread, then apply()), and the
forward passes done while staging. The first version has nothing served yet: it streams, and
stage() returns with it committed.

  mpirun -np 5 python3 examples/torch_refit/demo.py --steps 20
  mpirun -np 5 python3 examples/torch_refit/demo.py --steps 20 --apply staged
"""
import argparse
import json
import os
import sys
import threading
import time

import numpy as np
import torch
from mpi4py import MPI

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(ROOT, "python"), os.path.join(ROOT, "tests", "models")]
import dcr  # noqa: E402
import vllm_reference  # noqa: E402
from model import CONFIG, combine_parts, init_params, serve_forward, train_forward  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20, help="optimizer steps (versions 2..steps+1)")
    p.add_argument("--trainers", type=int, default=2)
    p.add_argument("--rollout-tp", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-5, help="AdamW learning rate (fine-tuning scale)")
    p.add_argument("--batch", type=int, default=8, help="sequences per trainer per step")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--text", default="/usr/share/common-licenses/GPL-3", help="training text (bytes are tokens)")
    p.add_argument("--transport", default="ucx", choices=["ucx", "mpi"])
    p.add_argument("--apply", default="stream", choices=["stream", "staged"],
                   help="staged: rollouts keep generating while a version stages, then apply it in a short pause")
    return p.parse_args()


def bf16_to_numpy(t):
    return t.contiguous().view(torch.int16).numpy().view(np.uint16)


def numpy_to_bf16(a):
    return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)


def make_spec(args, names, shapes):
    spec = dcr.Spec(trainers=args.trainers, relays=1, rollout_tp=args.rollout_tp, fuse=True, apply=args.apply)
    for name, shape in zip(names, shapes):
        spec.add_tensor(name, "bf16", shape)
    spec.set_model_config(json.dumps(CONFIG))
    return spec


class Trainer:
    """One data-parallel trainer: fp32 masters, AdamW, gradients reduced over the trainers."""

    def __init__(self, args, params, endpoint, train_comm):
        self.args, self.params, self.endpoint, self.comm = args, params, endpoint, train_comm
        self.optimizer = torch.optim.AdamW(params.values(), lr=args.lr, weight_decay=0.01)
        with open(args.text, "rb") as f:
            self.text = torch.tensor(list(f.read()), dtype=torch.long)

    def step(self, version):
        """One optimizer step on this trainer's batch; returns the mean loss over the trainers."""
        g = torch.Generator().manual_seed(version * 1000 + self.comm.Get_rank())
        starts = torch.randint(0, len(self.text) - self.args.seq - 1, (self.args.batch,), generator=g)
        loss = sum(torch.nn.functional.cross_entropy(train_forward(self.params, self.text[s:s + self.args.seq], CONFIG),
                                                     self.text[s + 1:s + self.args.seq + 1])
                   for s in starts.tolist()) / self.args.batch
        loss.backward()
        for p in self.params.values():  # reduce at trainer 0, then broadcast: the same bits everywhere
            grad = p.grad.numpy()
            total = np.empty_like(grad)
            self.comm.Reduce(grad, total, op=MPI.SUM, root=0)
            self.comm.Bcast(total, root=0)
            p.grad.copy_(torch.from_numpy(total) / self.comm.Get_size())
        self.optimizer.step()
        self.optimizer.zero_grad()
        return self.comm.allreduce(loss.item()) / self.comm.Get_size()

    def publish(self, version):
        """Publishes the bf16 copy from this trainer's FSDP shard; returns (seconds, bf16 state)."""
        state = [p.detach().to(torch.bfloat16) for p in self.params.values()]
        shard = self.endpoint.lay_out(state, lambda b: torch.empty(b["bytes"] // 2, dtype=torch.bfloat16))
        start = time.perf_counter()
        self.endpoint.publish(version, shard)
        return time.perf_counter() - start, state


class ThreadGroup:
    """tp ranks on threads of this process, combining partial results as the rollouts do."""

    def __init__(self, n):
        self.slots, self.barrier = [None] * n, threading.Barrier(n)

    def combiner(self, rank):
        def combine(x, how):
            self.slots[rank] = x
            self.barrier.wait()
            out = combine_parts(list(self.slots), how)
            self.barrier.wait()
            return out
        return combine


def reference_logits(full_state, tokens, tp):
    """Logits of the reference model: vLLM's layout cut from the full bf16 state by the independent
    numpy model, run on tp threads."""
    shards = [{n: numpy_to_bf16(a) for n, a in vllm_reference.rank_tensors(CONFIG, full_state, tp, r).items()}
              for r in range(tp)]
    group, results = ThreadGroup(tp), [None] * tp

    def run(r):
        results[r] = serve_forward(shards[r], tokens, CONFIG, tp, r, group.combiner(r))
    threads = [threading.Thread(target=run, args=(r,)) for r in range(tp)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results[0]


class Rollout:
    """One tensor-parallel serving rank: torch tensors in vLLM's layout that dcr writes in place."""

    def __init__(self, args, endpoint, index, replica_comm):
        self.args, self.endpoint, self.comm = args, endpoint, replica_comm
        self.tp_rank = index % args.rollout_tp
        self.tensors = {b["name"]: torch.zeros(b["shape"], dtype=torch.bfloat16) for b in endpoint.buffers}
        endpoint.attach([self.tensors[b["name"]] for b in endpoint.buffers])

    def forward(self, tokens):
        def combine(x, how):
            return combine_parts([torch.from_numpy(p) for p in self.comm.allgather(x.numpy())], how)
        return serve_forward(self.tensors, tokens, CONFIG, self.args.rollout_tp, self.tp_rank, combine)

    def check(self, full_state, tokens):
        """(tensors equal vLLM's layout of the full state, logits bit-equal to the reference)."""
        expected = vllm_reference.rank_tensors(CONFIG, full_state, self.args.rollout_tp, self.tp_rank)
        tensors_ok = sorted(expected) == sorted(self.tensors) and all(
            np.array_equal(bf16_to_numpy(self.tensors[n]), a) for n, a in expected.items())
        logits = self.forward(tokens)
        reference = reference_logits(full_state, tokens, self.args.rollout_tp) if self.tp_rank == 0 else logits
        return tensors_ok, bool(torch.equal(logits.view(torch.int32), reference.view(torch.int32)))

    def stage_and_apply(self, tokens):
        """apply=staged: the next version staged while a Generation serves the committed one (none
        before the first version), then applied in the pause. Returns (version or None at the end,
        (staging s, pause s, forward passes while staging, served weights unchanged and apply()
        returned the staged version))."""
        generation = Generation(self, tokens) if self.endpoint.committed is not None else None
        start = time.perf_counter()
        version = self.endpoint.stage()
        staged = time.perf_counter()
        forwards, unchanged = generation.stop() if generation else (0, True)
        if version is not None:
            unchanged &= self.endpoint.apply() == version
        return version, (staged - start, time.perf_counter() - staged, forwards, unchanged)


class Generation:
    """A rollout serving on a thread while a version stages: forward passes on the evaluation
    sequence with the committed weights, each one's logits compared bit for bit with those computed
    before staging began. The thread only reads the tensors; stop() ends it before apply() writes them.
    Its MPI calls run beside dcr's (mpi4py asks for MPI_THREAD_MULTIPLE)."""

    def __init__(self, rollout, tokens):
        self.rollout, self.tokens = rollout, tokens
        self.before = rollout.forward(tokens).view(torch.int32)
        self.bits = [t.clone() for t in rollout.tensors.values()]
        self.forwards, self.unchanged, self.stopping = 0, True, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        # A forward exchanges partial results over the replica: its tp ranks agree before each one.
        while not self.rollout.comm.allreduce(self.stopping.is_set(), op=MPI.LOR):
            logits = self.rollout.forward(self.tokens)
            self.unchanged &= torch.equal(logits.view(torch.int32), self.before)
            self.forwards += 1

    def stop(self):
        """Stops the thread; returns (forward passes done, logits and tensors unchanged throughout)."""
        self.stopping.set()
        self.thread.join()
        same = all(torch.equal(a.view(torch.int16), b.view(torch.int16))
                   for a, b in zip(self.rollout.tensors.values(), self.bits))
        return self.forwards, self.unchanged and same


def main():
    args = parse_args()
    torch.set_num_threads(1)
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    rollouts = size - args.trainers - 1
    if rollouts < args.rollout_tp or rollouts % args.rollout_tp:
        if rank == 0:
            print(f"need {args.trainers} trainers + 1 relay + a multiple of --rollout-tp {args.rollout_tp} "
                  f"rollouts; got {size} ranks", file=sys.stderr)
        return 2
    role = "trainer" if rank < args.trainers else "relay" if rank == args.trainers else "rollout"
    params = init_params(CONFIG, seed=0)
    names = list(params)
    spec = make_spec(args, names, [tuple(p.shape) for p in params.values()])
    comm = dcr.Comm.from_mpi(world, args.transport)
    verify = world.Split(0 if rank == 0 or role == "rollout" else MPI.UNDEFINED, rank)
    train_comm = world.Split(0 if role == "trainer" else MPI.UNDEFINED, rank)
    index = rank - args.trainers - 1
    replica = world.Split(index // args.rollout_tp if role == "rollout" else MPI.UNDEFINED, rank)
    with open(args.text, "rb") as f:
        tokens = torch.tensor(list(f.read(args.seq)), dtype=torch.long)  # the evaluation sequence

    failures, staged = 0, args.apply == "staged"
    if role == "relay":
        endpoint = dcr.Relay(spec, comm)
        endpoint.serve()
    elif role == "trainer":
        endpoint = dcr.Trainer(spec, comm)
        trainer = Trainer(args, params, endpoint, train_comm)
        previous = None
        if rank == 0:
            print(f"torch_refit: {args.trainers} trainers (FSDP {args.trainers}) -> 1 relay -> {rollouts} rollouts "
                  f"(vLLM TP {args.rollout_tp}), {sum(p.numel() for p in params.values())} parameters, "
                  f"text {args.text}, transport {args.transport}, apply {args.apply}")
            print(f"{'version':>7} {'loss':>7} {'changed':>8} {'wire B':>9} {'full B':>9} {'refit s':>8} "
                  f"{'full s':>8} {'tensors':>8} {'logits':>8}"
                  + (f" {'stage s':>8} {'pause s':>8} {'forwards':>8} {'served':>9}" if staged else ""))
        for version in range(1, args.steps + 2):
            loss = trainer.step(version) if version > 1 else float("nan")
            seconds, state = trainer.publish(version)
            wire = train_comm.reduce(endpoint.last_step()[1], op=MPI.SUM, root=0)
            if rank != 0:
                continue
            bits = [bf16_to_numpy(t) for t in state]
            full_state = dict(zip(names, bits))
            verify.Barrier()
            start = time.perf_counter()
            verify.bcast(full_state, root=0)
            verify.Barrier()
            full_seconds = time.perf_counter() - start
            results = verify.gather(None, root=0)[1:]
            tensors_ok, logits_ok = all(r[0] for r in results), all(r[1] for r in results)
            failures += (not tensors_ok) + (not logits_ok)
            columns = ""
            if staged:  # the slowest rollout's staging and pause, the fewest forward passes
                unchanged = all(r[2][3] for r in results)
                failures += not unchanged
                columns = (f" {max(r[2][0] for r in results):>8.4f} {max(r[2][1] for r in results):>8.4f} "
                           f"{min(r[2][2] for r in results):>8} {'unchanged' if unchanged else 'CHANGED':>9}")
            changed = (sum(int((a != b).sum()) for a, b in zip(bits, previous)) / sum(a.size for a in bits)
                       if previous else 1.0)
            previous = bits
            full_bytes = sum(a.nbytes for a in bits)
            print(f"{version:>7} {loss:>7.4f} {100 * changed:>7.2f}% {wire:>9} {full_bytes:>9} {seconds:>8.4f} "
                  f"{full_seconds:>8.4f} {'equal' if tensors_ok else 'DIFFER':>8} {'equal' if logits_ok else 'DIFFER':>8}"
                  + columns, flush=True)
        endpoint.close()
    else:
        endpoint = dcr.Rollout(spec, comm)
        rollout = Rollout(args, endpoint, index, replica)
        while True:
            version, figures = rollout.stage_and_apply(tokens) if staged else (endpoint.receive(), None)
            if version is None:
                break
            verify.Barrier()
            full_state = verify.bcast(None, root=0)
            verify.Barrier()
            verify.gather(rollout.check(full_state, tokens) + (figures,), root=0)
    endpoint.free()
    comm.free()
    failures = world.allreduce(failures)
    if rank == 0:
        done = "; served weights unchanged while staging" if staged else ""
        print("torch_refit: every version committed; rollout tensors and logits bit-equal to the reference" + done
              if failures == 0 else f"torch_refit: {failures} check(s) FAILED")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
