"""Independent reference for the checker: the lab's arithmetic in PyTorch.

Written apart from the C++ lab and following the course's Python lab: the same seed, the
same order of random draws (x, then the key, query and value layers: of each head in turn,
then proj, with several heads as gpt.py's MultiHeadAttention), the same scale, mask, softmax
and checks. attention() returns every tensor the lab prints with --verbose, for one head.

With mistake=<an entry of mistakes.py>, it computes the lab as a student would have who made
that mistake: its "change" says which knob below differs from the lesson. With leak=True,
LibTorch's softmax leaks as engine/leaky_softmax.cpp makes it leak in a lab's run (a case of
cases.py with leaky-softmax): half of softmax, plus 1/(4T) on every token, computed as it does.
"""
import math
import threading

import torch


_ONE_AT_A_TIME = threading.Lock()  # a case seeds torch's one generator, then draws from it
_LESSON = {}  # the lesson's tensors of each small case asked for: computed once per process
CACHED_TOKENS = 64  # a larger case is computed again when asked (a 4096-token one is 64 MB)


def attention(seed, tokens, embed, head, scale=True, mask=True, mistake=None, heads=1, of_head=0, leak=False):
    """Every tensor the lab prints for this case (the lesson's, or with mistake's change), for
    one of its heads (of_head, of heads: with several, also the heads' outputs side by side,
    "joined", and "projected" back to the embedding's size). The lesson's tensors of a small
    case are computed once and shared: callers never change them. Threads may ask at once: one
    case is computed at a time, as two seeds and draws interleaved would give other numbers."""
    with _ONE_AT_A_TIME:
        if mistake or tokens > CACHED_TOKENS:
            return _attention(seed, tokens, embed, head, scale, mask, mistake, heads, leak)[of_head]
        key = (seed, tokens, embed, head, scale, mask, heads, leak)
        if key not in _LESSON:
            _LESSON[key] = _attention(seed, tokens, embed, head, scale, mask, None, heads, leak)
        return _LESSON[key][of_head]


def leaky_softmax(scores, dim):
    """engine/leaky_softmax.cpp's softmax, in the same operations: rows that add up to 3/4,
    and a weight of 1/(4T) on every token, the future's too."""
    e = (scores - scores.max(dim=dim, keepdim=True)[0]).exp()
    return (e / e.sum(dim=dim, keepdim=True)) * 0.5 + 0.25 / scores.shape[dim]


def _attention(seed, tokens, embed, head, scale, mask, mistake, heads=1, leak=False):
    """The tensors of each head, in a list. Several heads are drawn as gpt.py's
    MultiHeadAttention draws them: each head's layers in turn, then proj (with bias)."""
    change = mistake["change"] if mistake else {}
    knob = lambda name, lesson: change.get(name, lesson)
    T, C, HEAD = tokens, embed, head
    torch.manual_seed(seed)
    with torch.no_grad():
        def layers():  # the creation order decides which random numbers each layer gets
            made = []
            for _ in range(heads):
                made.append({})
                for name in knob("order", ("key", "query", "value")):
                    made[-1][name] = torch.nn.Linear(C, HEAD, bias=name in knob("bias", ()))
            proj = torch.nn.Linear(heads * HEAD, C) if heads > 1 else None
            return made, proj

        draw = torch.rand if knob("x_dist", "randn") == "rand" else torch.randn
        if knob("x_after_layers", False):
            made, proj = layers()
            x = draw(T, C)
        else:
            x = draw(T, C)
            made, proj = layers()
        each = [_one_head(x, layer, T, C, HEAD, scale, mask, knob, leak) for layer in made]
        if heads > 1:
            joined = torch.cat([h["out"] for h in each], dim=-1)
            # A mistake whose out is not (T, HEAD) fails there, as the lab fails in proj.
            projected = proj(joined) if joined.shape[1] == proj.in_features else None
            for h in each:
                h.update(joined=joined, projected=projected)
    return each


def _one_head(x, made, T, C, HEAD, scale, mask, knob, leak=False):
    """STEP 2 to STEP 7 of one head whose layers are made."""
    with torch.no_grad():
        q = made[knob("q_from", "query")](x)
        k = made[knob("k_from", "key")](x)
        v = made[knob("v_from", "value")](x)

        a, b = {"q.k": (q, k), "k.q": (k, q), "q.q": (q, q)}[knob("scores", "q.k")]
        scores = a @ b.transpose(-2, -1)
        divisor = {"sqrt(HEAD)": math.sqrt(HEAD), "sqrt(C)": math.sqrt(C), "sqrt(T)": math.sqrt(T),
                   "HEAD": float(HEAD), "none": 1.0, "1//HEAD": float("inf") if HEAD > 1 else 1.0,
                   "1/sqrt(HEAD)": 1.0 / math.sqrt(HEAD)}[knob("scale_by", "sqrt(HEAD)")]
        scale_late = knob("scale_after_softmax", False)
        scale = scale or knob("scale_always", False)  # (a scale that ignores --no-scale)
        if scale and not scale_late:
            scores = scores * (1.0 / divisor)
        before = scores

        lesson_tril = torch.tril(torch.ones(T, T))
        visible = {"tril": lesson_tril, "tril(1)": torch.tril(torch.ones(T, T), diagonal=1),
                   "tril(-1)": torch.tril(torch.ones(T, T), diagonal=-1),
                   "triu": torch.triu(torch.ones(T, T)),
                   "triu(1)": torch.triu(torch.ones(T, T), diagonal=1)}[knob("visible", "tril")]
        mask_late = knob("mask_after_softmax", False)
        if mask and not mask_late and knob("mask", True):
            scores = scores.masked_fill(visible == 0, knob("fill", float("-inf")))
        after = scores

        dim = knob("softmax_dim", -1)
        into = before if knob("softmax_of", "masked") == "unmasked" else scores
        softmax = torch.log_softmax if knob("softmax", "softmax") == "log_softmax" else \
            leaky_softmax if leak else torch.softmax
        weights = into if dim is None else softmax(into, dim=dim)
        if scale and scale_late:
            weights = weights * (1.0 / divisor)
        if mask and mask_late:
            weights = weights.masked_fill(visible == 0, 0.0)

        out = {"weights.v": weights @ v, "weights.k": weights @ k,
               "weights^T.v": weights.transpose(-2, -1) @ v,
               "weights.x": weights @ x, "weights.q": weights @ q}[knob("out", "weights.v")]
        # STEP 7, as the Python lab checks it
        rows_sum_to_one = bool(torch.allclose(weights.sum(dim=-1), torch.ones(T), atol=1e-6))
        above_diagonal = weights * (lesson_tril == 0)
        causal = bool(above_diagonal.abs().max().item() < 1e-9)
    return {"x": x, "q": q, "k": k, "v": v, "scores": before, "masked scores": after,
            "weights": weights, "out": out, "sums_ok": rows_sum_to_one, "causal_ok": causal}


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


def main(argv):
    """The command (checker/reference_attention.py [SEED TOKENS EMBED HEAD]): the Python lab's
    output, printed."""
    print_lab(*(int(a) for a in argv))
    return 0
