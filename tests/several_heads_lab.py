"""The course's Python lab taken one step further, as gpt.py takes it: several heads.

An independent reference for the C++ lab's --heads, written in PyTorch from the Python lab
(STEP 1 to STEP 7 for each head) and the classes of karpathy's gpt.py: a Head with key,
query and value layers without bias, created in that order; a MultiHeadAttention that holds
its heads in a ModuleList, creates proj (with bias) after them, runs each head and projects
their outputs side by side back to C (no dropout: nothing is trained here). Beside it, as
nanoGPT runs attention, the fused kernel on all heads at once.

lab_output(...) returns what the lab prints for those options, as text; the test compares
it with the C++ lab's own output. Run alone, it prints it:
  /usr/bin/python3 tests/several_heads_lab.py SEED TOKENS EMBED HEAD HEADS DIGITS [no-scale] [no-mask]
"""
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

SHOW_ALL, SHOW_ENDS = 16, 8  # a matrix with more rows or columns shows its first and last 8


class Head(nn.Module):
    """One head: each token's query, key and value, then STEP 3 to STEP 6."""

    def __init__(self, embed, head_size):
        super().__init__()
        self.key = nn.Linear(embed, head_size, bias=False)
        self.query = nn.Linear(embed, head_size, bias=False)
        self.value = nn.Linear(embed, head_size, bias=False)

    def forward(self, x, scale=True, mask=True):
        """Every tensor of the head's steps, by name."""
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = q @ k.transpose(-2, -1)
        if scale:
            scores = scores * (1.0 / math.sqrt(k.shape[-1]))
        tokens = x.shape[0]
        below = torch.tril(torch.ones(tokens, tokens))
        masked = scores.masked_fill(below == 0, float("-inf")) if mask else scores
        weights = F.softmax(masked, dim=-1)
        out = weights @ v
        sums_ok = bool(torch.allclose(weights.sum(dim=-1), torch.ones(tokens), atol=1e-6))
        causal_ok = bool((weights * (below == 0)).abs().max().item() < 1e-9)
        return dict(q=q, k=k, v=v, scores=scores, masked=masked, weights=weights, out=out,
                    sums_ok=sums_ok, causal_ok=causal_ok)


class MultiHeadAttention(nn.Module):
    """Several heads side by side, then proj back to the embedding's size."""

    def __init__(self, heads, embed, head_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(embed, head_size) for _ in range(heads)])
        self.proj = nn.Linear(head_size * heads, embed)

    def forward(self, x, scale=True, mask=True):
        steps = [h(x, scale, mask) for h in self.heads]
        joined = torch.cat([s["out"] for s in steps], dim=-1)
        return steps, joined, self.proj(joined)


def fused(x, heads, scale, mask):
    """nanoGPT's way: all heads' q, k, v from one product, viewed as (heads, T, head size),
    through the library's fused kernel; back to (T, heads * head size)."""
    tokens, n, size = x.shape[0], len(heads), heads[0].key.weight.shape[0]

    def all_heads(layer):
        weight = torch.cat([getattr(h, layer).weight for h in heads])
        return (x @ weight.t()).view(tokens, n, size).transpose(0, 1)

    q, k, v = all_heads("query"), all_heads("key"), all_heads("value")
    if not scale:
        q = q * math.sqrt(size)
    if hasattr(F, "scaled_dot_product_attention"):
        y = F.scaled_dot_product_attention(q, k, v, None, 0.0, mask)
    else:  # PyTorch 1.13
        y = torch.ops.aten._scaled_dot_product_attention(q, k, v, None, 0.0, False, mask)[0]
    return y.transpose(0, 1).reshape(tokens, n * size)


def shown(n):
    if n <= SHOW_ALL:
        return list(range(n))
    return list(range(SHOW_ENDS)) + [None] + list(range(n - SHOW_ENDS, n))


def rows(m, digits, indent):
    lines = []
    for i in shown(m.shape[0]):
        if i is None:
            lines.append("%s... %d rows not shown ..." % (indent, m.shape[0] - 2 * SHOW_ENDS))
            continue
        cells = ["..." if j is None else "%.*f" % (digits, m[i, j].item()) for j in shown(m.shape[1])]
        lines.append("%st%d: [%s]" % (indent, i, ", ".join(cells)))
    return lines


def lab_output(seed, tokens, embed, head, heads=1, digits=9, verbose=True, scale=True, mask=True):
    """(stdout, exit status) of the lab for these options."""
    torch.manual_seed(seed)
    lines = []

    def peek(name, t):
        if verbose:
            lines.append("    %s, shape (%d, %d):" % (name, t.shape[0], t.shape[1]))
            lines.extend(rows(t, digits, "      "))

    with torch.no_grad():
        x = torch.randn(tokens, embed)
        lines.append("STEP 1: input x is %d tokens x %d dims" % (tokens, embed))
        peek("x", x)
        if heads == 1:
            layers = [Head(embed, head)]
            steps = [layers[0](x, scale, mask)]
            joined = steps[0]["out"]
        else:
            model = MultiHeadAttention(heads, embed, head)
            layers = list(model.heads)
            steps, joined, projected = model(x, scale, mask)
        failed = False
        for n, s in enumerate(steps):
            if heads > 1:
                lines += ["", "HEAD %d of %d" % (n, heads)]
            lines.append("STEP 2: projected x into query, key, value (each %dx%d)" % (tokens, head))
            peek("q", s["q"])
            peek("k", s["k"])
            peek("v", s["v"])
            peek("scores before the mask", s["scores"])
            peek("scores after the mask", s["masked"])
            lines += ["", "STEP 3-5: attention weights (row i = how much token i attends to each earlier token)"]
            lines += rows(s["weights"], digits, "  ")
            lines += ["", "STEP 6: output is %dx%d (a context-aware vector per token)" % tuple(s["out"].shape)]
            peek("out", s["out"])
            lines += ["", "STEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s"
                      % ("YES" if s["sums_ok"] else "NO", "YES" if s["causal_ok"] else "NO")]
            failed = failed or not (s["sums_ok"] and s["causal_ok"])
        if failed:
            return "\n".join(lines) + "\n", 1
        if heads > 1:
            lines += ["", "STEP 8: the %d heads side by side are %dx%d; proj maps them back to %dx%d"
                      % ((heads,) + tuple(joined.shape) + tuple(projected.shape))]
            peek("heads side by side", joined)
            peek("projected", projected)
        if heads > 1 or verbose:
            difference = (fused(x, layers, scale, mask) - joined).abs().max().item()
            agrees = difference <= 1e-4 * max(1.0, joined.abs().max().item())
            lines += ["", "LibTorch's fused attention %s: max |difference| %.0e"
                      % ("agrees" if agrees else "disagrees", difference)]
            if not agrees:
                return "\n".join(lines) + "\n", 1
        if heads > 1:
            lines += ["", "You just computed %d heads of self-attention, as a transformer block runs them." % heads]
        else:
            lines += ["", "You just computed self-attention with real torch tensors. Next: run several heads."]
    return "\n".join(lines) + "\n", 0


if __name__ == "__main__":
    a = sys.argv[1:]
    text, status = lab_output(*(int(w) for w in a[:6]), scale="no-scale" not in a, mask="no-mask" not in a)
    sys.stdout.write(text)
    sys.exit(status)
