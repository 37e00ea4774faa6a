"""The catalogue of known mistakes: what a student's lab may do wrong, in the lesson's words.

Each entry: an id; the STEP where its numbers first go wrong; what the student did and what
to change (check_lab.py prints "diagnosis: <did>, <fix>"); and the change, the knobs of
reference_attention.attention() that differ from the lesson. catalogue_test.py proves that
every entry prints other numbers than the lesson and than every other entry.
"""


def mistake(id, step, did, fix, **change):
    return {"id": id, "step": step, "did": did, "fix": fix, "change": change}


KQV = "create them key, query, value: the order in which the Python lab draws their random weights"
ORDERS = [("key", "value", "query"), ("query", "key", "value"), ("query", "value", "key"),
          ("value", "key", "query"), ("value", "query", "key")]
# Three orders give two tensors each other's layer's numbers: the same numbers as a lab that makes
# them with each other's layer, key(x) for query(x), say.
SWAPPED = {order: " (or %s and %s were made by each other's layer, %s(x) and %s(x): the same numbers)" % (
    a[0], b[0], b, a) for order, (a, b) in ((("query", "key", "value"), ("query", "key")),
                                            (("key", "value", "query"), ("query", "value")),
                                            (("value", "query", "key"), ("key", "value")))}
SCALE = "scale the scores by 1/sqrt(HEAD): a dot product of HEAD terms grows like sqrt(HEAD)"

MISTAKES = [
    # STEP 1-2: the random numbers go to other tensors
    mistake("x_uniform", 1, "x was drawn with rand, uniform on [0, 1), instead of randn",
            "draw x with torch::randn: normally distributed, as an embedding is", x_dist="rand"),
    mistake("x_after_layers", 1, "x was drawn after the three layers were created, so x and "
            "the layers got other random numbers", "draw x first (STEP 1), then create the layers",
            x_after_layers=True),
] + [
    mistake("layers_" + "_".join(order), 2, "the layers were created " + ", ".join(order) + SWAPPED.get(order, ""),
            KQV + (" (or make each tensor with its own layer)" if order in SWAPPED else ""), order=order)
    for order in ORDERS
] + [
    mistake("bias_" + name, 2, "the %s layer has a bias" % name,
            "create it with .bias(false), as the other two", bias=(name,))
    for name in ("key", "query", "value")
] + [
    mistake("query_made_by_the_key_layer", 2, "q was made by the key layer, so q equals k "
            "(a copy-paste slip: key(x) where query(x) belongs)", "make q with query(x)",
            q_from="key"),
    mistake("keys_made_by_the_query_layer", 2, "k was made by the query layer, so k equals q "
            "(a copy-paste slip: query(x) where key(x) belongs)", "make k with key(x)",
            k_from="query"),
    mistake("value_made_by_the_query_layer", 2, "v was made by the query layer, so v equals q "
            "(a copy-paste slip: query(x) where value(x) belongs)", "make v with value(x)",
            v_from="query"),
    mistake("bias_all", 2, "the three layers have a bias", "create each with .bias(false): the "
            "query, key and value maps of a transformer have none", bias=("key", "query", "value")),
    # STEP 3: the scores
    mistake("no_scale", 3, "the scores were not scaled (in C++ a dropped result does this too: "
            "scores.mul(...) or scores / ... on a line of its own returns a new tensor and "
            "leaves scores as they were)", SCALE + "; scale in place with mul_ or assign the "
            "result: scores = scores / std::sqrt(double(HEAD))", scale_by="none"),
    mistake("scale_multiplied_by_root", 3, "the scores were multiplied by sqrt(HEAD) instead "
            "of divided by it", SCALE, scale_by="1/sqrt(HEAD)"),
    mistake("scale_by_embed", 3, "the scores were scaled by 1/sqrt(C), the embedding size",
            SCALE, scale_by="sqrt(C)"),
    mistake("scale_by_tokens", 3, "the scores were scaled by 1/sqrt(T), the number of tokens",
            SCALE, scale_by="sqrt(T)"),
    mistake("scale_integer_division", 3, "the scores were multiplied by 0: in C++, 1 / HEAD divides two "
            "integers and gives 0 (Python's / gives a fraction)", SCALE + "; with a number that is not an "
            "integer: 1.0 / std::sqrt(double(HEAD))", scale_by="1//HEAD"),
    mistake("scale_by_head_not_its_root", 3, "the scores were divided by HEAD instead of its "
            "square root", SCALE, scale_by="HEAD"),
    mistake("scores_keys_times_queries", 3, "the scores are k times q transposed, so row i "
            "holds token i's key against every query", "compute q times k transposed: row i is "
            "token i's query against every key", scores="k.q"),
    mistake("scores_queries_times_queries", 3, "the queries were scored against the queries",
            "score them against the keys: q times k transposed", scores="q.q"),
    # STEP 4: the causal mask
    mistake("no_mask", 4, "the causal mask was not applied, so every token sees the future (in "
            "C++ two slips do this too: scores.masked_fill(...) on a line of its own returns a new "
            "tensor and leaves scores as they were; and a mask of floats, such as the Python lab's "
            "torch::tril(torch::ones({T, T})) or 1 - tril, which LibTorch 1.13 ignores without a word: "
            "masked_fill takes a mask of bool)", "set every score above the diagonal to -inf before "
            "softmax: masked_fill_ in place, or assign the result of masked_fill, with a mask of bool "
            "(tril == 0, or tril of torch::kBool, as the lesson makes it)", mask=False),
    mistake("mask_past", 4, "the past was masked instead of the future: masked_fill(tril, ...) "
            "without .logical_not(), so each token sees only later tokens and the last row, with "
            "nothing left, is nan", "mask where tril is false: tril.logical_not()",
            visible="triu(1)"),
    mistake("mask_filled_with_plus_inf", 4, "the future was filled with +inf instead of -inf, "
            "so every row with a future score is nan", "fill with -INFINITY, with the minus sign",
            fill=float("inf")),
    mistake("mask_one_diagonal_up", 4, "the mask is one diagonal too high (tril with diagonal 1),"
            " so each token also sees the next one", "keep tril with diagonal 0", visible="tril(1)"),
    mistake("mask_one_diagonal_down", 4, "the mask is one diagonal too low (tril with diagonal "
            "-1), so no token sees itself and t0 sees nothing (nan)", "keep tril with diagonal 0",
            visible="tril(-1)"),
    mistake("mask_inverted", 4, "the mask is inverted (triu instead of tril), so tokens see the "
            "future and not the past", "keep the lower triangle, tril", visible="triu"),
    mistake("mask_filled_with_zero", 4, "the future was masked with 0 instead of -inf, and "
            "softmax gives a score of 0 a weight of its own (scores.tril() does the same: it "
            "zeroes the future)", "fill with -inf, which softmax turns into a weight of exactly 0",
            fill=0.0),
    # STEP 5: softmax
    mistake("softmax_over_dim_0", 5, "softmax ran over dimension 0, so every column sums to 1 "
            "instead of every row", "softmax must run along the last dimension (dim=-1)",
            softmax_dim=0),
    mistake("log_softmax", 5, "log_softmax was used instead of softmax, so the weights are "
            "logarithms: negative, and rows do not sum to 1", "use torch::softmax", softmax="log_softmax"),
    mistake("softmax_of_unmasked_scores", 5, "softmax ran on the scores from before the mask, "
            "so the masked scores were computed but not used", "apply softmax to the masked "
            "scores", softmax_of="unmasked"),
    mistake("no_softmax", 5, "softmax was left out, so the weights are the masked scores",
            "apply softmax along each row to turn scores into weights", softmax_dim=None),
    # The next two are mistakes of order around softmax, but the lab's numbers first go wrong
    # where the step that was moved should have acted: STEP 3's scores, STEP 4's masked scores.
    mistake("scale_after_softmax", 3, "the scale was applied to the weights, after softmax, so "
            "rows no longer sum to 1", "scale the scores, in STEP 3, before the mask and softmax",
            scale_after_softmax=True),
    mistake("mask_after_softmax", 4, "the mask was applied after softmax: the future's weights "
            "were zeroed but the rows not renormalised, so they sum to less than 1",
            "mask the scores with -inf before softmax (STEP 4)", mask_after_softmax=True),
    # STEP 6: the output
    mistake("weights_times_keys", 6, "the output is the weights times k, a blend of the keys",
            "blend the values: weights times v", out="weights.k"),
    mistake("transposed_weights_times_values", 6, "the output used the transposed weights, so "
            "token i blends the tokens that attend to it", "use the weights as they are: weights "
            "times v", out="weights^T.v"),
    mistake("weights_times_x", 6, "the output is the weights times x, the input, instead of "
            "the values", "blend the values: weights times v", out="weights.x"),
    mistake("weights_times_queries", 6, "the output is the weights times q, a blend of the "
            "queries", "blend the values: weights times v", out="weights.q"),
]


# LibTorch's errors that a habit of Python's runs into, as LibTorch words them (a part of its
# message: the lab says "LibTorch error: <its first line>"), and what they mean in the lesson's
# words. A lab that stops with one is diagnosed with it (diagnosis.py).
TRAPS = [
    ("masked_fill_ only supports boolean masks", "the mask given to masked_fill is not of bool: a mask of ones "
     "and zeros, such as the Python lab's torch::tril(torch::ones({T, T})) or 1 - tril, is of floats, and "
     "masked_fill takes a mask of bool", "mask with tril == 0, or make tril of torch::kBool, as the lesson does"),
    ("not implemented for 'Long'", "a step gave LibTorch integers where it takes floats (softmax, or a product "
     "with floats): a tensor made from integers (torch::arange, a mask of ones and zeros of torch::kLong) stays "
     "integer", "make it of floats: .to(torch::kFloat), or torch::ones({T, T}) without a type"),
    ("expected scalar type", "two tensors of different types met in one operation (Float and Double): a Double "
     "tensor comes from .to(torch::kDouble), or from torch::tensor(...) of doubles", "keep every tensor of "
     "Float, as the lesson's are"),
    ("same dtype", "two tensors of different types met in one operation (Float and Double): a Double tensor comes "
     "from .to(torch::kDouble), or from torch::tensor(...) of doubles", "keep every tensor of Float, as the "
     "lesson's are"),
    ("shapes cannot be multiplied", "a matrix product of shapes that do not fit: (a, b) times (b, c)", "the comment "
     "on each line of the lesson gives its tensor's shape: q, k and v are (T, HEAD), the scores (T, T); "
     "k.transpose(-2, -1) is (HEAD, T)"),
]
