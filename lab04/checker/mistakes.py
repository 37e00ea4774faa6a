"""The catalogue of known mistakes: what a student's lab may do wrong, in the lesson's words.

Each entry: an id; the STEP where its numbers first go wrong; what the student did and what
to change (check_lab.py prints "diagnosis: <did>; <fix>"), did leading with the slip in the
lab's own terms, the line of C++ that does it (where the lab's source is at hand, slips.py
quotes the student's own line instead); and the change, the knobs of
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
    mistake("bias_" + name, 2, "the %s layer was made without .bias(false), so it has a bias" % name,
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
    mistake("bias_all", 2, "the three layers were made without .bias(false), so they have a bias",
            "create each with .bias(false): the "
            "query, key and value maps of a transformer have none", bias=("key", "query", "value")),
    # STEP 3: the scores
    mistake("no_scale", 3, "STEP 3 left the scores unscaled: a line scores.mul(...) or scores / ... "
            "returns a new tensor and leaves scores as they were (or the scale is missing)",
            "write scores.mul_(...) (in place, with the underscore) or assign the result: scores = "
            "scores / std::sqrt(double(HEAD)); " + SCALE, scale_by="none"),
    mistake("scale_ignores_no_scale", 3, "your scale ignores --no-scale: the scores were scaled "
            "with it too", "put the scale under if (opt.scale)", scale_always=True),
    mistake("scale_multiplied_by_root", 3, "the scale multiplies by std::sqrt(HEAD) where it "
            "divides: the scores grew instead of shrinking", "divide by it, or multiply by 1.0 / "
            "std::sqrt(double(HEAD)); " + SCALE, scale_by="1/sqrt(HEAD)"),
    mistake("scale_by_embed", 3, "the scale uses C, the embedding size, where it uses HEAD: "
            "the scores were scaled by 1/sqrt(C)", "write 1.0 / std::sqrt(double(HEAD)); " + SCALE,
            scale_by="sqrt(C)"),
    mistake("scale_by_tokens", 3, "the scale uses T, the number of tokens, where it uses HEAD: "
            "the scores were scaled by 1/sqrt(T)", "write 1.0 / std::sqrt(double(HEAD)); " + SCALE,
            scale_by="sqrt(T)"),
    mistake("scale_integer_division", 3, "1 / HEAD divides two integers, which gives 0 in C++ "
            "(Python's / gives a fraction): the scores were multiplied by 0", "write 1.0 / "
            "std::sqrt(double(HEAD)), a number that is not an integer; " + SCALE, scale_by="1//HEAD"),
    mistake("scale_by_head_not_its_root", 3, "the scale divides by HEAD where it divides by its "
            "square root", "write / std::sqrt(double(HEAD)); " + SCALE, scale_by="HEAD"),
    mistake("scores_keys_times_queries", 3, "k.matmul(q.transpose(-2, -1)) scores the keys "
            "against the queries: row i holds token i's key against every query", "write "
            "q.matmul(k.transpose(-2, -1)): row i is token i's query against every key", scores="k.q"),
    mistake("scores_queries_times_queries", 3, "q.matmul(q.transpose(-2, -1)) scores the queries "
            "against the queries", "score them against the keys: q.matmul(k.transpose(-2, -1))",
            scores="q.q"),
    # STEP 4: the causal mask
    mistake("no_mask", 4, "STEP 4 left the future unmasked, so every token sees it: a line "
            "scores.masked_fill(...) returns a new tensor and leaves scores as they were; a mask of "
            "floats, such as the Python lab's torch::tril(torch::ones({T, T})) or 1 - tril, is ignored "
            "by LibTorch 1.13 without a word (masked_fill takes a mask of bool); or the mask is "
            "missing", "write scores.masked_fill_(...) (in place) with a mask of bool (tril == 0, or "
            "tril of torch::kBool, as the lesson makes it), filling -INFINITY before softmax", mask=False),
    mistake("mask_past", 4, "masked_fill(tril, ...) without .logical_not() masks the past instead "
            "of the future: each token sees only later tokens, and the last row, with nothing left, "
            "is nan", "mask where tril is false: tril.logical_not()",
            visible="triu(1)"),
    mistake("mask_filled_with_plus_inf", 4, "INFINITY without its minus sign fills the future with "
            "+inf, so every row with a future score is nan", "fill with -INFINITY, with the minus sign",
            fill=float("inf")),
    mistake("mask_one_diagonal_up", 4, "tril_(1) (or tril with diagonal 1) keeps one diagonal too "
            "many, so each token also sees the next one", "write tril_() (diagonal 0)", visible="tril(1)"),
    mistake("mask_one_diagonal_down", 4, "tril_(-1) (or tril with diagonal -1) keeps one diagonal "
            "too few, so no token sees itself and t0 sees nothing (nan)", "write tril_() (diagonal 0)",
            visible="tril(-1)"),
    mistake("mask_inverted", 4, "triu where tril belongs inverts the mask, so tokens see the future "
            "and not the past", "keep the lower triangle: tril", visible="triu"),
    mistake("mask_filled_with_zero", 4, "the future was filled with 0 (masked_fill_(..., 0), or "
            "scores.tril(), which zeroes it), and softmax gives a score of 0 a weight of its own",
            "fill with -INFINITY, which softmax turns into a weight of exactly 0", fill=0.0),
    # STEP 5: softmax
    mistake("softmax_over_dim_0", 5, "softmax over dimension 0 (torch::softmax(scores, 0)) makes "
            "each column sum to 1 instead of each row", "write torch::softmax(scores, -1): the last "
            "dimension, each row (Python's dim=-1)", softmax_dim=0),
    mistake("log_softmax", 5, "torch::log_softmax where torch::softmax belongs makes the weights "
            "logarithms: negative, and rows do not sum to 1", "write torch::softmax", softmax="log_softmax"),
    mistake("softmax_of_unmasked_scores", 5, "softmax took the scores from before the mask, so the "
            "masked scores were computed but not used", "apply softmax to the masked scores",
            softmax_of="unmasked"),
    mistake("no_softmax", 5, "the weights are the masked scores: softmax is missing",
            "write torch::softmax(scores, -1), along each row", softmax_dim=None),
    # The next two are mistakes of order around softmax, but the lab's numbers first go wrong
    # where the step that was moved should have acted: STEP 3's scores, STEP 4's masked scores.
    mistake("scale_after_softmax", 3, "the scale was applied to the weights, after softmax, so "
            "rows no longer sum to 1", "scale the scores, in STEP 3, before the mask and softmax",
            scale_after_softmax=True),
    mistake("mask_after_softmax", 4, "the mask was applied after softmax: the future's weights "
            "were zeroed but the rows not renormalised, so they sum to less than 1",
            "mask the scores with -inf before softmax (STEP 4)", mask_after_softmax=True),
    # STEP 6: the output
    mistake("weights_times_keys", 6, "weights.matmul(k) blends the keys", "blend the values: "
            "weights.matmul(v)", out="weights.k"),
    mistake("transposed_weights_times_values", 6, "the weights were transposed before the product "
            "(weights.transpose(-2, -1).matmul(v)), so token i blends the tokens that attend to it",
            "use the weights as they are: weights.matmul(v)", out="weights^T.v"),
    mistake("weights_times_x", 6, "weights.matmul(x) blends the input x instead of the values",
            "blend the values: weights.matmul(v)", out="weights.x"),
    mistake("weights_times_queries", 6, "weights.matmul(q) blends the queries", "blend the "
            "values: weights.matmul(v)", out="weights.q"),
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
