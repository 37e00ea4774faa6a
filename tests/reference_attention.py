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


def print_lab(seed=3, tokens=4, embed=6, head=6):
    """Prints what the lab prints by default, from the reference: the Python side of the
    benchmark (bench/run), doing the same work at any size."""
    r = attention(seed, tokens, embed, head)
    keep = list(range(tokens)) if tokens <= 16 else list(range(8)) + [None] + list(range(tokens - 8, tokens))
    print("STEP 1: input x is %d tokens x %d dims" % (tokens, embed))
    print("STEP 2: projected x into query, key, value (each %dx%d)" % (tokens, head))
    print("\nSTEP 3-5: attention weights (row i = how much token i attends to each earlier token)")
    weights = r["weights"]
    for i in keep:
        if i is None:
            print("  ... %d rows not shown ..." % (tokens - 16))
            continue
        print("  t%d: [%s]" % (i, ", ".join("..." if j is None else "%.2f" % weights[i, j].item() for j in keep)))
    print("\nSTEP 6: output is %dx%d (a context-aware vector per token)" % tuple(r["out"].shape))
    print("\nSTEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s" % (
        "YES" if r["sums_ok"] else "NO", "YES" if r["causal_ok"] else "NO"))
    print("\nYou just computed self-attention with real torch tensors. Next: run several heads.")


if __name__ == "__main__":
    import sys
    print_lab(*(int(a) for a in sys.argv[1:]))  # seed tokens embed head
