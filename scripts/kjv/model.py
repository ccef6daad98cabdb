"""A Llama decoder for training, laid out exactly as HF's LlamaForCausalLM names and shapes its weights
(so the state dict *is* the checkpoint): RMSNorm, rotary embeddings in HF's rotate-half form, grouped-query
attention, SwiGLU MLP, embeddings tied to the LM head."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        d = c["hidden_size"]
        self.q_proj = nn.Linear(d, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d, self.n_kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d, self.n_kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)  # [b, heads, t, hd]
        k = self.k_proj(x).view(b, t, self.n_kv, self.head_dim).transpose(1, 2)     # [b, kv, t, hd]
        v = self.v_proj(x).view(b, t, self.n_kv, self.head_dim).transpose(1, 2)     # [b, kv, t, hd]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.n_heads // self.n_kv
        k = k.repeat_interleave(rep, dim=1)                                          # [b, heads, t, hd]
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask            # [b, heads, t, t]
        y = att.softmax(-1) @ v                                                      # [b, heads, t, hd]
        return self.o_proj(y.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, f = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(d, f, bias=False)
        self.up_proj = nn.Linear(d, f, bias=False)
        self.down_proj = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Body(c)
        hd = c["head_dim"]
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        self.register_buffer("inv_freq", inv, persistent=False)
        std = c["initializer_range"]
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, std)
        # GPT-2's scaling: residual-writing projections shrink with depth so the stream's variance is bounded.
        for layer in self.model.layers:
            nn.init.normal_(layer.self_attn.o_proj.weight, 0.0, std / math.sqrt(2 * c["num_hidden_layers"]))
            nn.init.normal_(layer.mlp.down_proj.weight, 0.0, std / math.sqrt(2 * c["num_hidden_layers"]))

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t, dtype=torch.float32)
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)                                      # [t, head_dim]
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((t, t), float("-inf")).triu(1)                             # [t, t] causal
        x = self.model.embed_tokens(ids)                                             # [b, t, d]
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        x = self.model.norm(x)
        return x @ self.model.embed_tokens.weight.t()                                # [b, t, vocab] tied head

    def hf_state_dict(self):
        """The HF checkpoint's tensors: every parameter, under its HF name (the LM head is tied: not stored)."""
        return {k: v.detach() for k, v in self.state_dict().items() if k != "inv_freq"}
