#!/usr/bin/python3
"""Train a small Llama-style model on real text and write consecutive HF checkpoints as bench data.

The model is examples/torch_refit/model.py's (HF parameter names, GQA, RMSNorm, rotary, SwiGLU),
trained with AdamW on fp32 master weights; every checkpoint is the bf16 copy of the masters
(round to nearest even), written as an HF directory (config.json + model.safetensors) that
`dcr bench codec --checkpoints` and `dcr refit --checkpoints` read. Tokens are the bytes of the
machine's own plain-text documentation (/usr/share/common-licenses, sorted), so the run is the same
on every Debian machine with the same seed.

The model first warms up at --warm-lr for --warm-steps, out of its random initialisation. Then, for
each target rate in --rates (percent of bf16 values changed per step), it calibrates a learning rate
on a copy of the warm state and writes OUT/rate-R/step-0000 (the warm state) .. step-N (N optimizer
steps at that rate's learning rate), printing the measured changed fraction of each step.

  scripts/make_training_run.py --out /tmp/run            # ~2.7 M parameters, rates 1 3 5
  dcr bench codec --checkpoints '/tmp/run/rate-3/step-*'

Needs python3-torch (Debian's, CPU); it is an optional install, not needed by the main command.
"""
import argparse
import copy
import glob
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "torch_refit"))
from model import init_params, train_forward  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--rates", type=float, nargs="+", default=[1.0, 3.0, 5.0], help="target %% changed per step")
    p.add_argument("--steps", type=int, default=4, help="optimizer steps written per rate")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--intermediate", type=int, default=576)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--tie", action="store_true", help="tie lm_head to the embedding")
    p.add_argument("--warm-steps", type=int, default=150)
    p.add_argument("--warm-lr", type=float, default=2e-3)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--text", default="/usr/share/common-licenses", help="directory of training text")
    a = p.parse_args(argv)
    if a.heads % a.kv_heads or a.hidden % a.heads:
        p.error("--heads must divide --hidden and be a multiple of --kv-heads")
    if a.steps < 1 or any(not 0 < r < 100 for r in a.rates):
        p.error("need --steps >= 1 and every rate in (0, 100)")
    return a


def model_config(a):
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 256,
            "hidden_size": a.hidden, "intermediate_size": a.intermediate, "num_hidden_layers": a.layers,
            "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.hidden // a.heads, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "tie_word_embeddings": bool(a.tie), "torch_dtype": "bfloat16", "max_position_embeddings": 2048,
            "hidden_act": "silu"}


def read_text(path):
    files = sorted(f for f in glob.glob(os.path.join(path, "*")) if os.path.isfile(f) and not os.path.islink(f))
    data = b"".join(open(f, "rb").read() for f in files)
    if len(data) < 4096:
        sys.exit(f"make_training_run: too little text in {path} ({len(data)} bytes)")
    return torch.tensor(list(data), dtype=torch.long)


class Run:
    """fp32 masters + AdamW; `step(lr)` takes one optimizer step on the next batch."""

    def __init__(self, a, cfg):
        self.a, self.cfg = a, cfg
        self.params = init_params(cfg, a.seed)
        if a.tie:
            del self.params["lm_head.weight"]
        self.optimizer = torch.optim.AdamW(self.params.values(), lr=a.warm_lr, weight_decay=0.01)
        self.text = read_text(a.text)
        self.batches = torch.Generator().manual_seed(a.seed)

    def forward_params(self):
        if not self.a.tie:
            return self.params
        return dict(self.params, **{"lm_head.weight": self.params["model.embed_tokens.weight"]})

    def step(self, lr):
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        seq = self.a.seq
        starts = torch.randint(0, len(self.text) - seq - 1, (self.a.batch,), generator=self.batches)
        params = self.forward_params()
        loss = sum(torch.nn.functional.cross_entropy(train_forward(params, self.text[s:s + seq], self.cfg),
                                                     self.text[s + 1:s + seq + 1]) for s in starts.tolist())
        loss = loss / self.a.batch
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return float(loss)

    def snapshot(self):
        return ({n: p.detach().clone() for n, p in self.params.items()},
                copy.deepcopy(self.optimizer.state_dict()), self.batches.get_state())

    def restore(self, snapshot):
        params, optimizer, batches = snapshot
        with torch.no_grad():
            for n, p in self.params.items():
                p.copy_(params[n])
        self.optimizer.load_state_dict(copy.deepcopy(optimizer))
        self.batches.set_state(batches)

    def bf16(self):
        """The stored copy: name -> bf16 bits as uint16, round to nearest even (torch's cast)."""
        return {n: p.detach().to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).copy()
                for n, p in self.params.items()}


def changed_fraction(old, new):
    changed = sum(int(np.count_nonzero(old[n] != new[n])) for n in old)
    return changed / sum(t.size for t in old.values())


def calibrate(run, target):
    """A learning rate whose one step changes about `target` (fraction) of the bf16 values, tried from
    the run's state and put back; changed fraction grows about linearly with lr at these rates."""
    lr, base, start = 1e-5, run.bf16(), run.snapshot()
    for _ in range(6):
        run.step(lr)
        got = changed_fraction(base, run.bf16())
        run.restore(start)
        if abs(got - target) <= 0.03 * target:
            break
        lr *= target / max(got, 1e-6)
    return lr


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, bits in tensors.items():
        header[name] = {"dtype": "BF16", "shape": list(bits.shape), "data_offsets": [offset, offset + bits.nbytes]}
        offset += bits.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(np.uint64(len(text)).astype("<u8").tobytes())
        f.write(text)
        for bits in tensors.values():
            f.write(bits.astype("<u2").tobytes())
    os.rename(path + ".tmp", path)


def write_checkpoint(directory, cfg, tensors):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(directory, "model.safetensors"), tensors)


def main(argv=None):
    a = parse_args(argv)
    torch.manual_seed(a.seed)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    cfg = model_config(a)
    run = Run(a, cfg)
    elements = sum(p.numel() for p in run.params.values())
    print(f"model: {elements:,} parameters, {len(run.params)} tensors, text {len(run.text):,} bytes", flush=True)
    for i in range(a.warm_steps):
        loss = run.step(a.warm_lr)
        if i % 25 == 0 or i == a.warm_steps - 1:
            print(f"warm-up step {i}: loss {loss:.3f}", flush=True)
    warm = run.snapshot()
    for rate in a.rates:
        run.restore(warm)
        lr = calibrate(run, rate / 100)
        directory = os.path.join(a.out, f"rate-{rate:g}")
        previous = run.bf16()
        write_checkpoint(os.path.join(directory, "step-0000"), cfg, previous)
        for step in range(1, a.steps + 1):
            loss = run.step(lr)
            current = run.bf16()
            write_checkpoint(os.path.join(directory, f"step-{step:04d}"), cfg, current)
            print(f"rate {rate:g}%: lr {lr:.3g}, step {step}: {100 * changed_fraction(previous, current):.2f}% "
                  f"changed, loss {loss:.3f}", flush=True)
            previous = current
    return 0


if __name__ == "__main__":
    sys.exit(main())
