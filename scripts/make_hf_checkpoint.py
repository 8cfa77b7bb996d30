#!/usr/bin/python3
"""Generate small HuggingFace-format BF16 checkpoints for refit tests.

Writes N versions OUT/step-0000, OUT/step-0001, ...; version 0 is random,
each later version moves a random fraction (--rate) of every tensor's
elements by +-1 ulp (mostly) or +-2 ulp. Deterministic from --seed.

Example:
  make_hf_checkpoint.py --family qwen3_moe --out /tmp/ck --versions 3 --shards 2
"""
import argparse
import json
import os
import sys

import numpy as np

FAMILIES = {
    "llama": "LlamaForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
}

BF16_MAX_FINITE_MAG = 0x7F7F  # largest finite bf16 magnitude bits


def f32_to_bf16_bits(x):
    """Round float32 -> bf16 (round-to-nearest-even); returns uint16 bits."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16  # inputs are finite: no NaN case
    return b.astype(np.uint16)


def build_config(a):
    """HF config.json dict for the chosen family and sizes."""
    cfg = {
        "model_type": a.family,
        "architectures": [FAMILIES[a.family]],
        "hidden_size": a.hidden,
        "intermediate_size": a.intermediate,
        "num_hidden_layers": a.layers,
        "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads,
        "head_dim": a.head_dim,
        "vocab_size": a.vocab,
        "tie_word_embeddings": bool(a.tie),
        "torch_dtype": "bfloat16",
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "max_position_embeddings": 2048,
        "hidden_act": "silu",
    }
    if a.family == "mixtral":
        cfg["num_local_experts"] = a.experts
        cfg["num_experts_per_tok"] = min(2, a.experts)
    elif a.family == "qwen3_moe":
        cfg["num_experts"] = a.experts
        cfg["num_experts_per_tok"] = min(2, a.experts)
        cfg["moe_intermediate_size"] = a.intermediate
        cfg["decoder_sparse_step"] = 1
        cfg["mlp_only_layers"] = []
        cfg["norm_topk_prob"] = True
    if a.family == "qwen2":
        cfg["attention_bias"] = True
    return cfg


def tensor_specs(a):
    """Ordered list of (name, shape, kind); kind in embed|norm|linear|bias."""
    H, V, I, E = a.hidden, a.vocab, a.intermediate, a.experts
    qd, kvd = a.heads * a.head_dim, a.kv_heads * a.head_dim
    specs = [("model.embed_tokens.weight", (V, H), "embed")]
    for L in range(a.layers):
        p = f"model.layers.{L}."
        specs += [
            (p + "input_layernorm.weight", (H,), "norm"),
            (p + "self_attn.q_proj.weight", (qd, H), "linear"),
            (p + "self_attn.k_proj.weight", (kvd, H), "linear"),
            (p + "self_attn.v_proj.weight", (kvd, H), "linear"),
        ]
        if a.family == "qwen2":
            specs += [
                (p + "self_attn.q_proj.bias", (qd,), "bias"),
                (p + "self_attn.k_proj.bias", (kvd,), "bias"),
                (p + "self_attn.v_proj.bias", (kvd,), "bias"),
            ]
        specs.append((p + "self_attn.o_proj.weight", (H, qd), "linear"))
        if a.family in ("qwen3", "qwen3_moe"):
            specs += [
                (p + "self_attn.q_norm.weight", (a.head_dim,), "norm"),
                (p + "self_attn.k_norm.weight", (a.head_dim,), "norm"),
            ]
        specs.append((p + "post_attention_layernorm.weight", (H,), "norm"))
        if a.family == "mixtral":
            m = p + "block_sparse_moe."
            specs.append((m + "gate.weight", (E, H), "linear"))
            for e in range(E):
                specs += [
                    (m + f"experts.{e}.w1.weight", (I, H), "linear"),
                    (m + f"experts.{e}.w2.weight", (H, I), "linear"),
                    (m + f"experts.{e}.w3.weight", (I, H), "linear"),
                ]
        elif a.family == "qwen3_moe":
            m = p + "mlp."
            specs.append((m + "gate.weight", (E, H), "linear"))
            for e in range(E):
                specs += [
                    (m + f"experts.{e}.gate_proj.weight", (I, H), "linear"),
                    (m + f"experts.{e}.up_proj.weight", (I, H), "linear"),
                    (m + f"experts.{e}.down_proj.weight", (H, I), "linear"),
                ]
        else:
            specs += [
                (p + "mlp.gate_proj.weight", (I, H), "linear"),
                (p + "mlp.up_proj.weight", (I, H), "linear"),
                (p + "mlp.down_proj.weight", (H, I), "linear"),
            ]
    specs.append(("model.norm.weight", (H,), "norm"))
    if not a.tie:
        specs.append(("lm_head.weight", (V, H), "embed"))
    return specs


def initial_tensor(rng, shape, kind, hidden):
    """Version-0 values as bf16 bits."""
    if kind == "embed":
        x = rng.normal(0.0, 0.02, shape)
    elif kind == "norm":
        x = 1.0 + 0.02 * rng.normal(0.0, 1.0, shape)
    else:
        fan_in = shape[-1] if len(shape) > 1 else hidden  # biases: fan_in = H
        x = rng.normal(0.0, 1.0 / np.sqrt(fan_in), shape)
    return f32_to_bf16_bits(x.astype(np.float32))


def perturb(rng, bits, rate):
    """Move a fraction `rate` of elements by +-1 (90%) or +-2 (10%) ulp.

    Works on sign-magnitude bits: the step is applied to the magnitude, and
    reflected if it would go below 0 or past the largest finite value.
    """
    flat = bits.reshape(-1).copy()
    n = flat.size
    k = int(round(rate * n))
    if k == 0 and rate > 0 and n > 0:
        k = 1  # every tensor changes at least a little
    if k == 0:
        return flat.reshape(bits.shape)
    idx = rng.choice(n, size=min(k, n), replace=False)
    step = np.where(rng.random(idx.size) < 0.9, 1, 2)
    step = step * np.where(rng.random(idx.size) < 0.5, -1, 1)
    sign = flat[idx].astype(np.int32) & 0x8000
    mag = flat[idx].astype(np.int32) & 0x7FFF
    new = mag + step
    bad = (new < 0) | (new > BF16_MAX_FINITE_MAG)
    new[bad] = mag[bad] - step[bad]  # reflect instead of wrapping / Inf
    flat[idx] = (sign | new).astype(np.uint16)
    return flat.reshape(bits.shape)


def write_safetensors(path, items):
    """Write [(name, uint16 array)] as BF16 safetensors: tmp file + rename."""
    header, off = {}, 0
    for name, arr in items:
        nb = arr.size * 2
        header[name] = {"dtype": "BF16", "shape": list(arr.shape),
                        "data_offsets": [off, off + nb]}
        off += nb
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)  # pad header to a multiple of 8
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(np.uint64(len(hj)).astype("<u8").tobytes())
        f.write(hj)
        for _, arr in items:
            f.write(np.ascontiguousarray(arr, dtype="<u2").tobytes())
    os.rename(tmp, path)
    return off


def write_version(vdir, cfg, items, shards):
    """Write one checkpoint version; the final rename marks it complete."""
    os.makedirs(vdir, exist_ok=True)
    with open(os.path.join(vdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    if shards == 1:
        write_safetensors(os.path.join(vdir, "model.safetensors"), items)
        return
    # Split tensors in order into `shards` contiguous groups of ~equal count.
    n = len(items)
    weight_map, total = {}, 0
    for i in range(shards):
        part = items[i * n // shards:(i + 1) * n // shards]
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        total += write_safetensors(os.path.join(vdir, fname), part)
        for name, _ in part:
            weight_map[name] = fname
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    tmp = os.path.join(vdir, "model.safetensors.index.json.tmp")
    with open(tmp, "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
    os.rename(tmp, os.path.join(vdir, "model.safetensors.index.json"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--versions", type=int, default=4)
    ap.add_argument("--rate", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--tie", action="store_true")
    ap.add_argument("--vocab", type=int, default=100)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=16)
    ap.add_argument("--intermediate", type=int, default=96)
    ap.add_argument("--experts", type=int, default=4)
    a = ap.parse_args(argv)

    if a.versions < 1 or not (0.0 <= a.rate <= 1.0):
        ap.error("need --versions >= 1 and 0 <= --rate <= 1")
    if a.heads % a.kv_heads:
        ap.error("--heads must be a multiple of --kv-heads")
    specs = tensor_specs(a)
    if not (1 <= a.shards <= len(specs)):
        ap.error(f"--shards must be in [1, {len(specs)}]")

    cfg = build_config(a)
    rng = np.random.default_rng(a.seed)
    items = [(n, initial_tensor(rng, s, k, a.hidden)) for n, s, k in specs]
    for v in range(a.versions):
        if v > 0:
            items = [(n, perturb(rng, t, a.rate)) for n, t in items]
        vdir = os.path.join(a.out, f"step-{v:04d}")
        write_version(vdir, cfg, items, a.shards)
        nbytes = sum(t.size * 2 for _, t in items)
        print(f"wrote {vdir}: {a.family}, {len(items)} tensors, {nbytes} bytes, "
              f"{a.shards} shard(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
