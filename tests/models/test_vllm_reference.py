#!/usr/bin/python3
"""Self-test of vllm_reference.py against hand-checked layout facts.

Plain python (no pytest): generates tiny checkpoints with
scripts/make_hf_checkpoint.py, slices the raw HF tensors by hand and checks
the reference's per-rank tensors. Exits non-zero on any failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

import numpy as np

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(ROOT, "scripts", "make_hf_checkpoint.py")
REF = os.path.join(HERE, "vllm_reference.py")
PY = sys.executable or "/usr/bin/python3"
sys.path.insert(0, HERE)
import vllm_reference as vr  # noqa: E402

TMP = tempfile.mkdtemp(prefix="vllm_ref_test_")
D = 16  # default head_dim
H = 64  # default hidden
I = 96  # default intermediate


def gen(family, *extra, versions=1):
    """Generate a checkpoint; return the step-0000 dir."""
    out = os.path.join(TMP, "_".join((family,) + extra).replace("-", ""))
    subprocess.run([PY, GEN, "--family", family, "--out", out,
                    "--versions", str(versions)] + list(extra),
                   check=True, stdout=subprocess.DEVNULL)
    return os.path.join(out, "step-0000")


def load(ck):
    return vr.read_checkpoint(ck)


def eq(a, b, what=""):
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert np.array_equal(a, b), f"{what}: values differ"


L0 = "model.layers.0."


# ------------------------------------------------------------ generator

def test_generator_files_and_config():
    ck = gen("qwen2", "--shards", "3", versions=3)
    root = os.path.dirname(ck)
    assert sorted(os.listdir(root)) == ["step-0000", "step-0001", "step-0002"]
    files = sorted(os.listdir(ck))
    assert files == ["config.json", "model-00001-of-00003.safetensors",
                     "model-00002-of-00003.safetensors",
                     "model-00003-of-00003.safetensors",
                     "model.safetensors.index.json"], files
    cfg = json.load(open(os.path.join(ck, "config.json")))
    assert cfg["model_type"] == "qwen2"
    assert cfg["architectures"] == ["Qwen2ForCausalLM"]
    assert cfg["torch_dtype"] == "bfloat16" and cfg["tie_word_embeddings"] is False
    idx = json.load(open(os.path.join(ck, "model.safetensors.index.json")))
    sizes = sum(os.path.getsize(os.path.join(ck, f)) for f in files if "-of-" in f)
    # total_size counts data only, so it is below the file sizes
    assert 0 < idx["metadata"]["total_size"] < sizes
    # Raw header check: 8-byte LE length, multiple of 8, BF16 entries.
    with open(os.path.join(ck, "model-00001-of-00003.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        hdr = json.loads(f.read(n))
    assert n % 8 == 0
    assert hdr["model.embed_tokens.weight"] == {
        "dtype": "BF16", "shape": [100, H], "data_offsets": [0, 100 * H * 2]}
    _, t = load(ck)
    assert t[L0 + "self_attn.q_proj.bias"].shape == (4 * D,)
    assert t[L0 + "self_attn.k_proj.bias"].shape == (2 * D,)


def test_generator_versions_differ_by_small_ulps():
    ck = gen("llama", "--rate", "0.05", versions=2)
    _, a = load(ck)
    _, b = load(ck.replace("step-0000", "step-0001"))
    assert a.keys() == b.keys()
    for n in a:
        x, y = a[n].astype(np.int32), b[n].astype(np.int32)
        assert ((x ^ y) & 0x8000).max() == 0, n  # steps never flip the sign
        d = np.abs((y & 0x7FFF) - (x & 0x7FFF))
        frac = np.count_nonzero(d) / d.size
        assert d.max() <= 2, (n, d.max())
        assert 0 < frac <= 0.06, (n, frac)
        assert ((y & 0x7F80) != 0x7F80).all(), n  # no Inf/NaN
    # Deterministic: same seed, same bytes.
    ck2 = gen("llama", "--rate", "0.05", "--seed", "1", versions=2)
    _, c = load(ck2.replace("step-0000", "step-0001"))
    for n in b:
        eq(b[n], c[n], n)


def test_bf16_rounding_matches_hand_values():
    sys.path.insert(0, os.path.dirname(GEN))
    import make_hf_checkpoint as g
    x = np.array([1.0, -2.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 0.0],
                 dtype=np.float32)
    # 1+2^-8 is a tie -> even (0x3f80); 1+3*2^-8 tie -> up to 0x3f82
    assert list(g.f32_to_bf16_bits(x)) == [0x3F80, 0xC000, 0x3F80, 0x3F82, 0]


# ------------------------------------------------------------ attention

def test_llama_tp4_kv_replication():
    ck = gen("llama")
    cfg, t = load(ck)
    ranks = [vr.rank_tensors(cfg, t, 4, r) for r in range(4)]
    q, k, v = (t[L0 + f"self_attn.{x}_proj.weight"] for x in "qkv")
    for r in range(4):
        qkv = ranks[r][L0 + "self_attn.qkv_proj.weight"]
        # Hq/tp = 1 q head, one (replicated) kv head each for k and v
        assert qkv.shape == (3 * D, H), qkv.shape
        eq(qkv[:D], q[r * D:(r + 1) * D], f"rank {r} q")
    q0 = ranks[0][L0 + "self_attn.qkv_proj.weight"]
    q1 = ranks[1][L0 + "self_attn.qkv_proj.weight"]
    q3 = ranks[3][L0 + "self_attn.qkv_proj.weight"]
    eq(q0[0], q[0], "rank0 row0 = q row 0")
    eq(q0[D], k[0], "rank0 row d = k row 0")
    eq(q0[D:], q1[D:], "ranks 0/1 share kv head 0")
    eq(q3[D:2 * D], k[D:2 * D], "rank3 k = kv head 1")
    eq(q3[2 * D:], v[D:2 * D], "rank3 v = kv head 1")
    assert not np.array_equal(q0[D:], q3[D:])
    assert L0 + "self_attn.q_proj.weight" not in ranks[0]
    assert (L0 + "self_attn.qkv_proj.bias") not in ranks[0]


def test_llama_tp2_kv_band_and_row_parallel():
    ck = gen("llama")
    cfg, t = load(ck)
    r1 = vr.rank_tensors(cfg, t, 2, 1)
    q, k, v = (t[L0 + f"self_attn.{x}_proj.weight"] for x in "qkv")
    qkv = r1[L0 + "self_attn.qkv_proj.weight"]
    assert qkv.shape == (2 * D + D + D, H)
    eq(qkv[:2 * D], q[2 * D:4 * D], "q heads 2,3")
    eq(qkv[2 * D:3 * D], k[D:2 * D], "kv head 1 (k)")
    eq(qkv[3 * D:], v[D:2 * D], "kv head 1 (v)")
    o = t[L0 + "self_attn.o_proj.weight"]  # [H, Hq*d]
    eq(r1[L0 + "self_attn.o_proj.weight"], o[:, 2 * D:], "o_proj cols")
    dn = t[L0 + "mlp.down_proj.weight"]  # [H, I]
    eq(r1[L0 + "mlp.down_proj.weight"], dn[:, I // 2:], "down cols")
    gu = r1[L0 + "mlp.gate_up_proj.weight"]
    assert gu.shape == (I, H)
    eq(gu[:I // 2], t[L0 + "mlp.gate_proj.weight"][I // 2:], "gate rows")
    eq(gu[I // 2:], t[L0 + "mlp.up_proj.weight"][I // 2:], "up rows")
    eq(r1["model.norm.weight"], t["model.norm.weight"], "norm replicated")


def test_qwen2_bias_fused():
    ck = gen("qwen2")
    cfg, t = load(ck)
    r = vr.rank_tensors(cfg, t, 4, 2)
    b = r[L0 + "self_attn.qkv_proj.bias"]
    assert b.shape == (3 * D,)
    eq(b[:D], t[L0 + "self_attn.q_proj.bias"][2 * D:3 * D], "q bias head 2")
    eq(b[D:2 * D], t[L0 + "self_attn.k_proj.bias"][D:], "k bias kv head 1")
    eq(b[2 * D:], t[L0 + "self_attn.v_proj.bias"][D:], "v bias kv head 1")


def test_qwen3_qk_norm_replicated():
    ck = gen("qwen3")
    cfg, t = load(ck)
    for rk in range(2):
        r = vr.rank_tensors(cfg, t, 2, rk)
        eq(r[L0 + "self_attn.q_norm.weight"], t[L0 + "self_attn.q_norm.weight"])
        eq(r[L0 + "self_attn.k_norm.weight"], t[L0 + "self_attn.k_norm.weight"])
        assert r[L0 + "self_attn.k_norm.weight"].shape == (D,)


# ------------------------------------------------------------ vocab

def test_vocab_padding_untied():
    ck = gen("llama", "--vocab", "100")
    cfg, t = load(ck)
    emb, head = t["model.embed_tokens.weight"], t["lm_head.weight"]
    ranks = [vr.rank_tensors(cfg, t, 4, r) for r in range(4)]  # Vp=128 -> 32/rank
    for name, full in (("model.embed_tokens.weight", emb), ("lm_head.weight", head)):
        for r in range(3):
            assert ranks[r][name].shape == (32, H)
            eq(ranks[r][name], full[32 * r:32 * (r + 1)], f"{name} rank {r}")
        last = ranks[3][name]
        assert last.shape == (32, H)
        eq(last[:4], full[96:100], "ids 96..99")
        assert not last[4:].any(), "padding rows must be zero"
        assert last.dtype == np.uint16


def test_tied_has_no_lm_head():
    ck = gen("qwen2", "--tie")
    cfg, t = load(ck)
    assert cfg["tie_word_embeddings"] is True and "lm_head.weight" not in t
    for r in range(2):
        out = vr.rank_tensors(cfg, t, 2, r)
        assert "lm_head.weight" not in out
        assert out["model.embed_tokens.weight"].shape == (64, H)
    # Some tied HF checkpoints still store lm_head.weight: it must be dropped.
    t2 = dict(t, **{"lm_head.weight": t["model.embed_tokens.weight"].copy()})
    assert "lm_head.weight" not in vr.rank_tensors(cfg, t2, 2, 0)


# ------------------------------------------------------------ MoE

def test_mixtral_tp4_ep2():
    ck = gen("mixtral")  # E=4 experts, I=96
    cfg, t = load(ck)
    assert cfg["num_local_experts"] == 4
    ranks = [vr.rank_tensors(cfg, t, 4, r, ep=2) for r in range(4)]
    pre = L0 + "block_sparse_moe."
    # moe_tp = 2: each rank holds 2 experts, half of I
    for r in range(4):
        assert ranks[r][pre + "experts.w13_weight"].shape == (2, I, H)
        assert ranks[r][pre + "experts.w2_weight"].shape == (2, H, I // 2)
        eq(ranks[r][pre + "gate.weight"], t[pre + "gate.weight"], "router")
        assert ranks[r][pre + "gate.weight"].shape == (4, H)
    w13 = ranks[2][pre + "experts.w13_weight"]  # ep_rank 1, moe_tp_rank 0
    eq(w13[0][:I // 2], t[pre + "experts.2.w1.weight"][:I // 2], "e2 w1 band0")
    eq(w13[0][I // 2:], t[pre + "experts.2.w3.weight"][:I // 2], "e2 w3 band0")
    w13 = ranks[3][pre + "experts.w13_weight"]  # ep_rank 1, moe_tp_rank 1
    eq(w13[1][:I // 2], t[pre + "experts.3.w1.weight"][I // 2:], "e3 w1 band1")
    w2 = ranks[1][pre + "experts.w2_weight"]  # ep_rank 0, moe_tp_rank 1
    eq(w2[1], t[pre + "experts.1.w2.weight"][:, I // 2:], "e1 w2 cols band1")
    assert not any(k.startswith(pre + "experts.0") for k in ranks[0])


def test_qwen3_moe_uneven_experts():
    ck = gen("qwen3_moe", "--experts", "5")
    cfg, t = load(ck)
    assert cfg["num_experts"] == 5 and cfg["moe_intermediate_size"] == I
    pre = L0 + "mlp."
    # tp=2, ep=2: moe_tp=1; ep_rank 0 gets experts 0..2, ep_rank 1 gets 3..4
    r0 = vr.rank_tensors(cfg, t, 2, 0, ep=2)
    r1 = vr.rank_tensors(cfg, t, 2, 1, ep=2)
    assert r0[pre + "experts.w13_weight"].shape == (3, 2 * I, H)
    assert r1[pre + "experts.w13_weight"].shape == (2, 2 * I, H)
    assert r1[pre + "experts.w2_weight"].shape == (2, H, I)
    eq(r1[pre + "experts.w13_weight"][0][:I], t[pre + "experts.3.gate_proj.weight"])
    eq(r1[pre + "experts.w13_weight"][1][I:], t[pre + "experts.4.up_proj.weight"])
    eq(r1[pre + "experts.w2_weight"][1], t[pre + "experts.4.down_proj.weight"])
    # tp=2, ep=1: all 5 experts, half the width
    r = vr.rank_tensors(cfg, t, 2, 1)
    assert r[pre + "experts.w13_weight"].shape == (5, I, H)
    eq(r[pre + "experts.w2_weight"][4], t[pre + "experts.4.down_proj.weight"][:, I // 2:])
    eq(r[L0 + "self_attn.q_norm.weight"], t[L0 + "self_attn.q_norm.weight"])


def test_indivisible_tp_rejected():
    ck = gen("llama")
    cfg, t = load(ck)
    for tp, ep in ((3, 1), (8, 1), (4, 3)):  # 8 > Hq=4 heads
        try:
            vr.rank_tensors(cfg, t, tp, 0, ep=ep)
        except ValueError:
            continue
        raise AssertionError(f"tp={tp} ep={ep} accepted")


# ------------------------------------------------------------ CLI round trip

def _cli(ck, serve, *args):
    return subprocess.run([PY, REF, ck, serve] + list(args),
                          capture_output=True, text=True)


def test_cli_round_trip_and_corruption():
    for family, tp, ep, shards in (("llama", 4, 1, 1), ("mixtral", 4, 2, 2),
                                   ("qwen3_moe", 2, 1, 3)):
        ck = gen(family, "--shards", str(shards))
        serve = os.path.join(TMP, f"serve_{family}_{tp}_{ep}")
        os.makedirs(serve)
        for r, tensors in enumerate(vr.serving_layout(ck, tp, ep)):
            vr.write_safetensors(vr.rank_file(serve, r), tensors)
        p = _cli(ck, serve, "--tp", str(tp), "--ep", str(ep))
        assert p.returncode == 0, p.stdout + p.stderr
        assert p.stdout.count("identical") == tp, p.stdout

    # Flip one byte of rank 1's data: find which tensor it lands in by header.
    path = vr.rank_file(serve, 1)
    hdr, start = vr.read_safetensors_header(path)
    name = sorted(hdr)[len(hdr) // 2]
    b, e = hdr[name]["data_offsets"]
    pos = start + b + 3  # byte 3 = high byte of element 1
    with open(path, "r+b") as f:
        f.seek(pos)
        old = f.read(1)[0]
        f.seek(pos)
        f.write(bytes([old ^ 0x01]))
    p = _cli(ck, serve, "--tp", str(tp), "--ep", str(ep))
    assert p.returncode == 1, p.stdout
    assert f"rank 1: tensor {name}: bytes differ" in p.stdout, p.stdout
    assert "rank 0:" in p.stdout and "identical" in p.stdout
    flat_msg = "(flat 1)"
    assert flat_msg in p.stdout, p.stdout

    # Missing tensor, wrong shape and missing file are reported too.
    serve2 = os.path.join(TMP, "serve_bad")
    os.makedirs(serve2)
    ranks = vr.serving_layout(ck, tp, ep)
    bad = dict(ranks[0])
    bad.pop("model.norm.weight")
    bad["model.embed_tokens.weight"] = bad["model.embed_tokens.weight"][:-1]
    vr.write_safetensors(vr.rank_file(serve2, 0), bad)
    p = _cli(ck, serve2, "--tp", str(tp), "--ep", str(ep))
    assert p.returncode == 1
    assert "tensor model.norm.weight: missing from file" in p.stdout, p.stdout
    assert "tensor model.embed_tokens.weight: shape" in p.stdout, p.stdout
    assert "rank 1: missing file" in p.stdout, p.stdout


def main():
    tests = [(n, f) for n, f in globals().items()
             if n.startswith("test_") and callable(f)]
    passed = failed = 0
    for n, f in tests:
        try:
            f()
            passed += 1
            print(f"PASS {n}")
        except Exception:
            failed += 1
            print(f"FAIL {n}")
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    if not failed:
        shutil.rmtree(TMP, ignore_errors=True)  # keep it for debugging on failure
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
