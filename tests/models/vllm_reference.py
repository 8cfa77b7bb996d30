#!/usr/bin/python3
"""Independent numpy model of vLLM's per-rank serving layout.

Given an HF checkpoint (config.json + safetensors), computes what each
tensor-parallel rank's state dict holds under vLLM's loader rules (fused
qkv / gate_up / MoE w13+w2, vocab padding, KV-head replication, expert
parallel placement). Uses no project code: it is the independent check.

With --serve-quant fp8-block the checkpoint is first quantized as a block-FP8
checkpoint holds it (tests/layout/fp8_block_reference.py, a nearest-value
search over the E4M3 table): every 2-D .weight of q/k/v/o_proj,
gate/up/down_proj and the experts' w1/w2/w3 becomes float8_e4m3fn bytes plus
<name>_scale_inv (fp32, one per 128 x 128 block), and the scales are laid out
as vLLM's block-FP8 loader does: fused like their weights, each tensor-parallel
band of a weight taking the matching band of block rows or columns, which
must fall on whole blocks.

CLI:
  vllm_reference.py CHECKPOINT_DIR SERVE_DIR --tp N [--ep M] [--serve-quant fp8-block]
compares the expectation with SERVE_DIR/model-rank-{r}-part-0.safetensors
(vLLM ShardedStateLoader naming); exit 0 if identical, 1 otherwise.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "layout"))
from fp8_block_reference import quantize as fp8_quantize  # noqa: E402

E4M3 = np.dtype("V1")  # float8_e4m3fn bytes: numpy has no fp8 type
BLOCK = 128            # weight_block_size [128, 128]
FP8_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3")

# safetensors dtype <-> numpy dtype. BF16 is kept as raw uint16 bits.
ST2NP = {
    "BF16": np.dtype("<u2"), "F16": np.dtype("<f2"), "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"), "I8": np.dtype("i1"), "U8": np.dtype("u1"),
    "I16": np.dtype("<i2"), "I32": np.dtype("<i4"), "I64": np.dtype("<i8"),
    "BOOL": np.dtype("?"), "F8_E4M3": E4M3,
}
# Reverse map (native byte order); uint16 always means BF16 here.
NP2ST = {np.dtype(v.str.replace("<", "=")): k for k, v in ST2NP.items()}

VOCAB_PAD = 64  # vLLM DEFAULT_VOCAB_PADDING_SIZE


def st_dtype(arr):
    """safetensors dtype string of a numpy array (uint16 -> BF16)."""
    return NP2ST[np.dtype(arr.dtype.str.replace("<", "="))]


# ---------------------------------------------------------------- reading

def read_safetensors_header(path):
    """Return (header dict without __metadata__, data start offset)."""
    with open(path, "rb") as f:
        n = int(np.frombuffer(f.read(8), dtype="<u8")[0])
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    return header, 8 + n


def read_safetensors(path):
    """Read a safetensors file -> {name: numpy array}, in header order."""
    header, start = read_safetensors_header(path)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read()
    out = {}
    for name, h in header.items():
        dt = ST2NP[h["dtype"]]
        b, e = h["data_offsets"]
        shape = tuple(h["shape"])
        arr = np.frombuffer(data[b:e], dtype=dt)
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: {name}: size does not match shape")
        out[name] = arr.reshape(shape).copy()  # little-endian host assumed
    return out


def read_checkpoint(ckpt_dir):
    """Read an HF checkpoint dir -> (config dict, {name: array})."""
    with open(os.path.join(ckpt_dir, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(ckpt_dir, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        for fname in sorted(set(weight_map.values())):
            part = read_safetensors(os.path.join(ckpt_dir, fname))
            for name, arr in part.items():
                if weight_map.get(name) == fname:
                    tensors[name] = arr
        missing = set(weight_map) - set(tensors)
        if missing:
            raise ValueError(f"index names missing from shards: {sorted(missing)[:3]}")
    else:
        tensors = read_safetensors(os.path.join(ckpt_dir, "model.safetensors"))
    return cfg, tensors


def write_safetensors(path, tensors):
    """Write {name: array} as a safetensors file (uint16 arrays as BF16)."""
    header, off, blobs = {}, 0, []
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()  # little-endian host
        header[name] = {"dtype": st_dtype(arr), "shape": list(arr.shape),
                        "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(np.uint64(len(hj)).astype("<u8").tobytes())
        f.write(hj)
        for raw in blobs:
            f.write(raw)


# ---------------------------------------------------------------- block FP8

def fp8_quantized(name, arr):
    """Whether a block-FP8 checkpoint holds tensor `name` quantized: the 2-D weights of linear layers."""
    parts = name.split(".")
    return arr.ndim == 2 and parts[-1] == "weight" and parts[-2] in FP8_LINEAR


def quantize_checkpoint(ckpt):
    """{name: bf16 bits} -> the block-FP8 checkpoint: E4M3 bytes + <name>_scale_inv per quantized weight."""
    out = {}
    for name, arr in ckpt.items():
        if not fp8_quantized(name, arr):
            out[name] = arr
            continue
        codes, scales = fp8_quantize((arr.astype(np.uint32) << 16).view(np.float32))
        out[name] = codes.view(E4M3)
        out[name + "_scale_inv"] = scales
    return out


def fp8_coverage(old, new):
    """What one step does to the quantized model: changed bytes and scales, blocks whose scale
    changed, and blocks that saturate (some |x| / scale above 448, clamped to 448)."""
    stats = dict(bytes=0, bytes_changed=0, scales=0, scales_changed=0, saturating=0)
    for name, arr in new.items():
        if not fp8_quantized(name, arr):
            continue
        w = (arr.astype(np.uint32) << 16).view(np.float32)
        codes, scales = fp8_quantize(w)
        old_codes, old_scales = fp8_quantize((old[name].astype(np.uint32) << 16).view(np.float32))
        stats["bytes"] += codes.size
        stats["bytes_changed"] += int(np.count_nonzero(codes != old_codes))
        stats["scales"] += scales.size
        stats["scales_changed"] += int(np.count_nonzero(scales.view(np.uint32) != old_scales.view(np.uint32)))
        quotient = np.abs(w) / np.repeat(np.repeat(scales, BLOCK, 0), BLOCK, 1)[:w.shape[0], :w.shape[1]]
        over = quotient > np.float32(448.0)
        stats["saturating"] += int(np.count_nonzero(
            [over[r:r + BLOCK, c:c + BLOCK].any() for r in range(0, w.shape[0], BLOCK)
             for c in range(0, w.shape[1], BLOCK)]))
    return stats


def _blocks(s, e, n, what):
    """Block range of the weight band [s, e) of a dimension of n: the band must fall on whole blocks."""
    if s % BLOCK or (e % BLOCK and e != n):
        raise ValueError(f"{what}: band [{s}, {e}) of {n} cuts its {BLOCK} x {BLOCK} blocks")
    return s // BLOCK, -(-e // BLOCK)


def _rows(w, s, e, leaf, n, what):
    """Rows [s, e) of a weight (or bias), or of a scale grid the block rows of that weight band."""
    if leaf.endswith("_scale_inv"):
        s, e = _blocks(s, e, n, what)
    return w[s:e]


# ---------------------------------------------------------------- layout

def _band(n, tp, r, what):
    """[start, end) of rank r's equal band of n rows/cols."""
    if n % tp:
        raise ValueError(f"{what}: {n} not divisible by tp={tp}")
    w = n // tp
    return r * w, (r + 1) * w


def model_dims(cfg):
    """Pull the sizes the layout needs out of an HF config."""
    Hq = cfg["num_attention_heads"]
    H = cfg["hidden_size"]
    d = cfg.get("head_dim") or H // Hq
    mt = cfg["model_type"]
    E = cfg.get("num_local_experts") if mt == "mixtral" else cfg.get("num_experts")
    I_moe = cfg.get("moe_intermediate_size", cfg.get("intermediate_size"))
    return dict(H=H, Hq=Hq, Hkv=cfg.get("num_key_value_heads", Hq), d=d,
                V=cfg["vocab_size"], E=E or 0, I_moe=I_moe,
                tie=bool(cfg.get("tie_word_embeddings", False)), mt=mt)


def expert_range(E, ep, ep_rank):
    """Linear expert placement: (first global expert, local count)."""
    base, rem = divmod(E, ep)
    start = ep_rank * base + min(ep_rank, rem)
    return start, base + (1 if ep_rank < rem else 0)


def _qkv_rows(dims, tp, r):
    """Row ranges of q and of k/v (per head_dim units) held by rank r."""
    Hq, Hkv, d = dims["Hq"], dims["Hkv"], dims["d"]
    qs, qe = _band(Hq, tp, r, "num_attention_heads")
    if tp >= Hkv:
        if tp % Hkv:
            raise ValueError(f"tp={tp} not a multiple of num_key_value_heads={Hkv}")
        h = r // (tp // Hkv)  # KV head replicated across tp//Hkv ranks
        ks, ke = h, h + 1
    else:
        ks, ke = _band(Hkv, tp, r, "num_key_value_heads")
    return (qs * d, qe * d), (ks * d, ke * d)


def _vocab_shard(w, tp, r):
    """Rank r's rows of a vocab-parallel [V, H] table, zero-padded."""
    V = w.shape[0]
    Vp = -(-V // VOCAB_PAD) * VOCAB_PAD
    s, e = _band(Vp, tp, r, "padded vocab")
    out = np.zeros((e - s,) + w.shape[1:], dtype=w.dtype)
    hi = min(e, V)
    if hi > s:
        out[:hi - s] = w[s:hi]
    return out


def rank_tensors(cfg, ckpt, tp, r, ep=1):
    """Serving state dict of rank r: {name: array} (vLLM naming/layout)."""
    dims = model_dims(cfg)
    if tp % ep:
        raise ValueError(f"ep={ep} must divide tp={tp}")
    moe_tp, ep_rank, moe_r = tp // ep, r // (tp // ep), r % (tp // ep)
    (q0, q1), (k0, k1) = _qkv_rows(dims, tp, r)
    out, used = {}, set()

    def take(name):
        used.add(name)
        return ckpt[name]

    def col_band(w, what, leaf="weight", n=None):  # column-parallel: band of rows (dim 0)
        n = w.shape[0] if n is None else n
        s, e = _band(n, tp, r, what)
        return _rows(w, s, e, leaf, n, what)

    def row_band(w, what, leaf="weight", n=None):  # row-parallel: band of columns (last dim)
        n = w.shape[-1] if n is None else n
        s, e = _band(n, tp, r, what)
        if leaf.endswith("_scale_inv"):
            s, e = _blocks(s, e, n, what)
        return w[..., s:e]

    def weight_extent(name, dim):  # a scale grid's weight's size along dim
        return ckpt[name[:-len("_scale_inv")]].shape[dim] if name.endswith("_scale_inv") else ckpt[name].shape[dim]

    for name in ckpt:
        if name in used:
            continue
        pre, _, leaf = name.rpartition(".")  # leaf: weight / bias
        if name.endswith(("q_proj." + leaf, "k_proj." + leaf, "v_proj." + leaf)) \
                and ".self_attn." in name:
            base = pre[:-len("q_proj")]
            q, k, v = (take(base + m + "_proj." + leaf) for m in "qkv")
            nq, nk = (weight_extent(base + m + "_proj." + leaf, 0) for m in "qk")
            out[base + "qkv_proj." + leaf] = np.concatenate(
                [_rows(q, q0, q1, leaf, nq, name), _rows(k, k0, k1, leaf, nk, name),
                 _rows(v, k0, k1, leaf, nk, name)], axis=0)
        elif name.endswith(("mlp.gate_proj.weight", "mlp.up_proj.weight",
                            "mlp.gate_proj.weight_scale_inv", "mlp.up_proj.weight_scale_inv")) \
                and ".experts." not in name:
            base, leaf = name.split(".mlp.")[0] + ".mlp", name.rsplit(".", 1)[1]
            g = take(base + ".gate_proj." + leaf)
            u = take(base + ".up_proj." + leaf)
            n = weight_extent(base + ".gate_proj." + leaf, 0)
            out[base + ".gate_up_proj." + leaf] = np.concatenate(
                [col_band(g, "intermediate_size", leaf, n), col_band(u, "intermediate_size", leaf, n)],
                axis=0)
        elif ".experts." in name:
            _moe_layer(name, ckpt, dims, ep, ep_rank, moe_tp, moe_r, out, take)
        elif name.endswith(("o_proj.weight", "down_proj.weight",
                            "o_proj.weight_scale_inv", "down_proj.weight_scale_inv")):
            out[name] = row_band(take(name), name, name.rsplit(".", 1)[1], weight_extent(name, 1))
        elif name in ("model.embed_tokens.weight", "lm_head.weight"):
            take(name)
            if name == "lm_head.weight" and dims["tie"]:
                continue  # tied: vLLM saves it once, as the embedding
            out[name] = _vocab_shard(ckpt[name], tp, r)
        elif name.endswith(("layernorm.weight", "norm.weight", ".gate.weight")) \
                or name.endswith(("o_proj.bias", "down_proj.bias")):
            out[name] = take(name)  # replicated (norms, router, row biases)
        else:
            raise ValueError(f"no layout rule for tensor {name}")
    return out


def _moe_layer(name, ckpt, dims, ep, ep_rank, moe_tp, moe_r, out, take):
    """Fuse one layer's experts into w13_weight / w2_weight for this rank (and, block-FP8, their
    w13_weight_scale_inv / w2_weight_scale_inv in block units)."""
    base = name.split(".experts.")[0]  # model.layers.L.{mlp,block_sparse_moe}
    if dims["mt"] == "mixtral":
        gn, un, dn = "w1", "w3", "w2"
    else:
        gn, un, dn = "gate_proj", "up_proj", "down_proj"
    E = dims["E"]
    leaves = ["weight"] + (["weight_scale_inv"] if f"{base}.experts.0.{gn}.weight_scale_inv" in ckpt else [])
    # Consume all experts of the layer (also the non-local ones).
    for e in range(E):
        for n in (gn, un, dn):
            for leaf in leaves:
                take(f"{base}.experts.{e}.{n}.{leaf}")
    start, count = expert_range(E, ep, ep_rank)
    H = dims["H"]
    for leaf in leaves:
        w13, w2 = [], []
        for e in range(start, start + count):
            g = ckpt[f"{base}.experts.{e}.{gn}.{leaf}"]
            u = ckpt[f"{base}.experts.{e}.{un}.{leaf}"]
            dw = ckpt[f"{base}.experts.{e}.{dn}.{leaf}"]
            n_in = ckpt[f"{base}.experts.{e}.{gn}.weight"].shape[0]
            s, t = _band(n_in, moe_tp, moe_r, "moe intermediate")
            w13.append(np.concatenate([_rows(g, s, t, leaf, n_in, name), _rows(u, s, t, leaf, n_in, name)], axis=0))
            if leaf != "weight":
                s, t = _blocks(s, t, n_in, name)
            w2.append(dw[:, s:t])
        dt = ckpt[f"{base}.experts.0.{gn}.{leaf}"].dtype
        suffix = leaf[len("weight"):]
        out[base + ".experts.w13_weight" + suffix] = (np.stack(w13) if w13 else np.zeros((0, 0, H), dtype=dt))
        out[base + ".experts.w2_weight" + suffix] = (np.stack(w2) if w2 else np.zeros((0, H, 0), dtype=dt))


def serving_layout(ckpt_dir, tp, ep=1, quant="none"):
    """All ranks' expected state dicts: list indexed by rank."""
    cfg, ckpt = read_checkpoint(ckpt_dir)
    if quant == "fp8-block":
        ckpt = quantize_checkpoint(ckpt)
    return [rank_tensors(cfg, ckpt, tp, r, ep) for r in range(tp)]
# ---------------------------------------------------------------- compare

def rank_file(serve_dir, r):
    return os.path.join(serve_dir, f"model-rank-{r}-part-0.safetensors")


def compare_rank(expected, path):
    """List of difference messages between expected dict and a file."""
    if not os.path.exists(path):
        return [f"missing file {path}"]
    header, _ = read_safetensors_header(path)
    got = read_safetensors(path)
    errs = []
    for n in sorted(set(expected) - set(got)):
        errs.append(f"tensor {n}: missing from file")
    for n in sorted(set(got) - set(expected)):
        errs.append(f"tensor {n}: unexpected in file")
    for n in sorted(set(expected) & set(got)):
        ex, g = expected[n], got[n]
        if header[n]["dtype"] != st_dtype(ex):
            errs.append(f"tensor {n}: dtype {header[n]['dtype']} != {st_dtype(ex)}")
        elif ex.shape != g.shape:
            errs.append(f"tensor {n}: shape {list(g.shape)} != {list(ex.shape)}")
        else:
            eb = np.ascontiguousarray(ex).view(np.uint8).reshape(-1)
            gb = np.ascontiguousarray(g).view(np.uint8).reshape(-1)
            if not np.array_equal(eb, gb):
                flat = int(np.flatnonzero(eb != gb)[0]) // ex.dtype.itemsize
                idx = [int(i) for i in np.unravel_index(flat, ex.shape)]
                ev, gv = ex.reshape(-1)[flat], g.reshape(-1)[flat]
                if ex.dtype == np.uint16:  # BF16: show raw bits
                    ev, gv = f"0x{int(ev):04x}", f"0x{int(gv):04x}"
                errs.append(f"tensor {n}: bytes differ; first at element {idx} "
                            f"(flat {flat}): got {gv}, expected {ev}")
    return errs


def coverage_main(ckpts):
    """fp8-coverage CKPT...: what each step of consecutive checkpoints did to the quantized model;
    exit 1 unless some block changed its scale and some block saturated."""
    total = dict(scales_changed=0, saturating=0)
    _, old = read_checkpoint(ckpts[0])
    for path in ckpts[1:]:
        _, new = read_checkpoint(path)
        s = fp8_coverage(old, new)
        print(f"{os.path.basename(path)}: FP8 bytes changed {100 * s['bytes_changed'] / s['bytes']:.3f}%, "
              f"scales changed {s['scales_changed']} of {s['scales']} (blocks whose amax moved), "
              f"saturating blocks {s['saturating']} (|x| / scale above 448, clamped)")
        for k in total:
            total[k] += s[k]
        old = new
    return 0 if all(total.values()) else 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "fp8-coverage":
        return coverage_main(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint_dir")
    ap.add_argument("serve_dir")
    ap.add_argument("--tp", type=int, required=True)
    ap.add_argument("--ep", type=int, default=1)
    ap.add_argument("--serve-quant", choices=("none", "fp8-block"), default="none")
    a = ap.parse_args(argv)
    try:
        ranks = serving_layout(a.checkpoint_dir, a.tp, a.ep, a.serve_quant)
    except ValueError as e:
        print(f"error: {e}")
        return 2
    ok = True
    for r, exp in enumerate(ranks):
        errs = compare_rank(exp, rank_file(a.serve_dir, r))
        if errs:
            ok = False
            for m in errs:
                print(f"rank {r}: {m}")
        else:
            nb = sum(t.nbytes for t in exp.values())
            print(f"rank {r}: {len(exp)} tensors, {nb} bytes, identical")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
