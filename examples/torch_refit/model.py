"""A small Llama-style model in plain PyTorch, two ways.

- Training: HF parameter names (model.layers.N.self_attn.q_proj.weight, ...), fp32, the whole model
  on one process (GQA, RMSNorm, rotary embeddings, SwiGLU MLP, untied lm_head).
- Serving: one tensor-parallel rank's forward on vLLM's layout (qkv_proj = [q_r; k_r; v_r],
  gate_up_proj = [gate_r; up_r], o_proj/down_proj split on their input, vocabulary padded to 64 and
  split in row bands). Each rank computes its part; `combine(x, how)` exchanges partial results
  ("sum": the ranks' partials added in rank order; "cat": concatenated on the last dim), so the
  same code runs distributed (mpi4py) and as a reference in one process (threads).
"""
import math

import torch

CONFIG = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 256, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
}


def head_dim(cfg):
    return cfg["hidden_size"] // cfg["num_attention_heads"]


def init_params(cfg, seed):
    """fp32 master weights by HF name, in checkpoint order."""
    g = torch.Generator().manual_seed(seed)
    H, I, V, d = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], head_dim(cfg)
    Hq, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]

    def normal(*shape):
        return (torch.randn(*shape, generator=g) * 0.02).requires_grad_()

    params = {"model.embed_tokens.weight": normal(V, H)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        params[p + "self_attn.q_proj.weight"] = normal(Hq * d, H)
        params[p + "self_attn.k_proj.weight"] = normal(Hkv * d, H)
        params[p + "self_attn.v_proj.weight"] = normal(Hkv * d, H)
        params[p + "self_attn.o_proj.weight"] = normal(H, Hq * d)
        params[p + "mlp.gate_proj.weight"] = normal(I, H)
        params[p + "mlp.up_proj.weight"] = normal(I, H)
        params[p + "mlp.down_proj.weight"] = normal(H, I)
        params[p + "input_layernorm.weight"] = torch.ones(H).requires_grad_()
        params[p + "post_attention_layernorm.weight"] = torch.ones(H).requires_grad_()
    params["model.norm.weight"] = torch.ones(H).requires_grad_()
    params["lm_head.weight"] = normal(V, H)
    return params


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate(x, theta):
    """Rotary embedding of [heads, T, d] (HF's rotate_half form)."""
    T, d = x.shape[-2], x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    angles = torch.outer(torch.arange(T, dtype=torch.float32), inv)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    half = torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + half * sin


def attention(q, k, v, d):
    """Causal attention of q [Hq, T, d] over k, v [Hkv, T, d] (each KV head serves Hq/Hkv q heads)."""
    group = q.shape[0] // k.shape[0]
    k, v = k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
    T = q.shape[1]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    return torch.softmax(scores, -1) @ v


def train_forward(params, tokens, cfg):
    """Logits [T, V] of one sequence, the whole model in fp32."""
    d, eps, theta = head_dim(cfg), cfg["rms_norm_eps"], cfg["rope_theta"]
    T = tokens.shape[0]
    x = params["model.embed_tokens.weight"][tokens]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, params[p + "input_layernorm.weight"], eps)
        q = (h @ params[p + "self_attn.q_proj.weight"].T).view(T, -1, d).transpose(0, 1)
        k = (h @ params[p + "self_attn.k_proj.weight"].T).view(T, -1, d).transpose(0, 1)
        v = (h @ params[p + "self_attn.v_proj.weight"].T).view(T, -1, d).transpose(0, 1)
        a = attention(rotate(q, theta), rotate(k, theta), v, d).transpose(0, 1).reshape(T, -1)
        x = x + a @ params[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, params[p + "post_attention_layernorm.weight"], eps)
        gate, up = h @ params[p + "mlp.gate_proj.weight"].T, h @ params[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ params[p + "mlp.down_proj.weight"].T
    return rms_norm(x, params["model.norm.weight"], eps) @ params["lm_head.weight"].T


def serve_forward(shard, tokens, cfg, tp, rank, combine):
    """Logits [T, V] of one sequence on tensor-parallel rank `rank` of `tp`, from its vLLM-layout
    bf16 `shard` (serving name -> tensor), computed in fp32."""
    d, eps, theta = head_dim(cfg), cfg["rms_norm_eps"], cfg["rope_theta"]
    Hq, Hkv, V = cfg["num_attention_heads"] // tp, max(1, cfg["num_key_value_heads"] // tp), cfg["vocab_size"]
    w = {name: t.float() for name, t in shard.items()}
    T = tokens.shape[0]
    table = w["model.embed_tokens.weight"]  # this rank's band of the padded vocabulary
    start = rank * table.shape[0]
    local = tokens - start
    inside = (local >= 0) & (local < table.shape[0])
    x = combine(table[local.clamp(0, table.shape[0] - 1)] * inside[:, None], "sum")
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        qkv = h @ w[p + "self_attn.qkv_proj.weight"].T
        q, k, v = qkv.split([Hq * d, Hkv * d, Hkv * d], -1)
        q, k, v = (t.reshape(T, -1, d).transpose(0, 1) for t in (q, k, v))
        a = attention(rotate(q, theta), rotate(k, theta), v, d).transpose(0, 1).reshape(T, -1)
        x = x + combine(a @ w[p + "self_attn.o_proj.weight"].T, "sum")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = (h @ w[p + "mlp.gate_up_proj.weight"].T).chunk(2, -1)
        x = x + combine((torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T, "sum")
    h = rms_norm(x, w["model.norm.weight"], eps)
    return combine(h @ w["lm_head.weight"].T, "cat")[:, :V]


def combine_parts(parts, how):
    """The ranks' partial results, combined in rank order (the same on every rank)."""
    if how == "cat":
        return torch.cat(parts, -1)
    out = parts[0].clone()
    for part in parts[1:]:
        out += part
    return out
