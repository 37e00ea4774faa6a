"""Independent reference for the parity tests: the lab's arithmetic in PyTorch.

Written apart from the C++ lab and following the course's Python lab: the same seed,
the same order of random draws (x, then the key, query and value layers), the same
scale, mask, softmax and checks. Returns full tensors; parity_test.py compares them
with what the lab prints.
"""
import math

import torch


def attention(seed, tokens, embed, head, scale=True, mask=True):
    torch.manual_seed(seed)
    with torch.no_grad():
        x = torch.randn(tokens, embed)
        # creation order matters: it decides which random numbers each layer gets
        key = torch.nn.Linear(embed, head, bias=False)
        query = torch.nn.Linear(embed, head, bias=False)
        value = torch.nn.Linear(embed, head, bias=False)
        q, k, v = query(x), key(x), value(x)
        scores = q @ k.transpose(-2, -1)
        if scale:
            scores = scores * (1.0 / math.sqrt(head))
        lower = torch.tril(torch.ones(tokens, tokens))
        if mask:
            scores = scores.masked_fill(lower == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = weights @ v
        rows_sum_to_one = bool(torch.allclose(weights.sum(dim=-1), torch.ones(tokens), atol=1e-6))
        above_diagonal = weights * (lower == 0)
        causal = bool(above_diagonal.abs().max().item() < 1e-9)
    return {"weights": weights, "out": out, "sums_ok": rows_sum_to_one, "causal_ok": causal}
