// LAB 04 in C++: causal self-attention, one head or several, built step by step with LibTorch.
//
// Aims: walk through self-attention in the order a transformer runs it (queries, keys and
// values; scores; the causal mask; softmax; the weighted sum of the values; two checks); print,
// for the same seed and sizes, exactly what the course's Python lab prints; and be edited:
// change a step, rebuild, run, and watch what the numbers do.
//
// What a run prints: five headers, STEP 1, STEP 2, STEP 3-5 (the weights, which STEP 3 to
// STEP 5 make together), STEP 6 and STEP 7, with the numbers of each. With --heads N, STEP 2
// to STEP 7 come once for each head, under a line "HEAD h of N", and then STEP 8 joins the
// heads. --verbose also prints every tensor in between.
//
// Read it top-down: the settings, the layers (Head, MultiHeadAttention), then main(), which is
// the lesson, STEP 1 to STEP 8. The machinery (options, printing, the heatmap) comes after
// main, each helper named for its job; just before main stand the ones it calls.
//
// Build:           cmake --preset default && cmake --build --preset default   (README.md)
// After an edit:   build/lab04_watch --once   (rebuilds, runs, then the checker's verdict)
// All options:     build/lab04_attention --help

#include <torch/nn/modules/linear.h>  // torch::nn::Linear (and the tensor API)
#include <torch/utils.h>              // torch::manual_seed, torch::NoGradGuard
#include <torch/version.h>            // TORCH_VERSION_MAJOR: which fused attention there is

#include <dlfcn.h>   // dlsym, to reach OpenBLAS's thread setting
#include <getopt.h>  // getopt_long: the C library's option parser
#include <unistd.h>  // isatty

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------
// Settings. The defaults are the Python lab's constants; options change them (--help).

struct Options {
  int64_t seed = 3;      // torch::manual_seed: the same seed draws the same numbers
  int64_t tokens = 4;    // T: sequence length
  int64_t embed = 6;     // C: embedding size of each token
  int64_t head = 6;      // HEAD: size of each query, key and value vector (C/N for N heads)
  int64_t heads = 1;     // N: heads, each with layers of its own (--heads)
  int64_t digits = 2;    // decimals of every printed number
  bool mask = true;      // STEP 4, the causal mask (--no-mask turns it off)
  bool scale = true;     // the 1/sqrt(HEAD) of STEP 3 (--no-scale turns it off)
  bool verbose = false;  // also print every intermediate tensor
  bool heatmap = false;  // also draw the weights as shaded cells
  bool help = false;     // print the usage and stop
};

constexpr double kCausalLimit = 1e-9;  // STEP 7: largest weight allowed on a future token

// ---------------------------------------------------------------------------
// The layers the lesson runs.

// One head's learned layers, as gpt.py's Head: a key, a query and a value map, each from C
// numbers to HEAD, without bias, created in that order: the order in which the Python lab
// draws their random weights, so both labs start from the same numbers.
struct Head {
  torch::nn::Linear key, query, value;
  Head(int64_t C, int64_t HEAD)
      : key(torch::nn::LinearOptions(C, HEAD).bias(false)),
        query(torch::nn::LinearOptions(C, HEAD).bias(false)),
        value(torch::nn::LinearOptions(C, HEAD).bias(false)) {}
};

// Several heads, as gpt.py's MultiHeadAttention: N heads, created one after the other, and
// with more than one, after them, proj: a linear map, with bias, from the N*HEAD numbers of
// the heads' outputs side by side back to C (STEP 8).
struct MultiHeadAttention {
  std::vector<Head> heads;
  torch::nn::Linear proj{nullptr};
  MultiHeadAttention(int64_t N, int64_t C, int64_t HEAD) {
    for (int64_t h = 0; h < N; ++h) heads.emplace_back(C, HEAD);
    if (N > 1) proj = torch::nn::Linear(N * HEAD, C);
  }
};

// ---------------------------------------------------------------------------
// What main() calls: the machinery, defined after main.

struct ParseResult {
  Options options;
  std::string error;  // one line; empty when the arguments were accepted
};
ParseResult parse_options(int argc, char** argv);  // reads the options; never prints or exits
void print_usage();                                // --help
void use_a_fixed_number_of_threads();              // same bits on every run
void peek(const Options& opt, const char* name, const torch::Tensor& t);  // --verbose; checks t
void print_weights(const Options& opt, const torch::Tensor& weights);     // "t0: [...]"; --heatmap
std::string size_text(const torch::Tensor& t);                            // "4x6"
void announce_head(int64_t h, int64_t n);               // "HEAD h of n", with several heads
std::string head_label(int64_t h, int64_t n);           // "head h: ", with several heads
const char* what_failed(bool sums_ok, bool causal_ok);  // STEP 7's message on failure
int check_with_fused_attention(const Options& opt, const torch::Tensor& x,
                               const std::vector<Head>& heads, const torch::Tensor& joined);
int finish_output(int status);  // flushes stdout; exit 3 if the output could not be written
int stopped_by(const std::exception_ptr& error);  // a tensor the lesson cannot take, exit 5; else 3
[[noreturn]] void not_written_yet(int step, const char* hint);  // a starter's blank: exit 4

// ---------------------------------------------------------------------------
// The lesson.

#ifndef LAB04_NO_MAIN
int main(int argc, char** argv) try {
  const ParseResult parsed = parse_options(argc, argv);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "lab04_attention: %s\n", parsed.error.c_str());
    return 2;
  }
  const Options& opt = parsed.options;
  if (opt.help) {
    print_usage();
    return finish_output(0);
  }
  const int64_t T = opt.tokens, C = opt.embed, HEAD = opt.head, N = opt.heads;

  // Nothing here is trained, so no gradients: autograd would only keep every
  // intermediate tensor alive.
  torch::NoGradGuard no_grad;
  use_a_fixed_number_of_threads();
  torch::manual_seed(opt.seed);  // same seed, same random numbers as the Python lab

  // STEP 1: the input. T tokens, each one a vector of C numbers. In a real model
  // these come from an embedding table; here they are random.
  torch::Tensor x = torch::randn({T, C});  // (T, C)
  std::printf("STEP 1: input x is %lld tokens x %lld dims\n", (long long)T, (long long)C);
  peek(opt, "x", x);

  // STEP 2: three learned linear maps, without bias, give every token
  //   a query: what it is looking for,
  //   a key:   what it offers to the others,
  //   a value: what it hands over when it is chosen.
  // Each head has its own three (a Head, above). All are created before any is used, head 0's
  // then head 1's..., as gpt.py's MultiHeadAttention creates them, so that both labs draw the
  // same random numbers. With one head (the default) there is no proj.
  MultiHeadAttention layers(N, C, HEAD);
  std::vector<torch::Tensor> outs(N);  // each head's output, STEP 6
  int64_t failed_heads = 0;            // STEP 7's checks, head by head
  for (int64_t h = 0; h < N; ++h) {    // each head runs STEP 2 to STEP 7 on the same x
    announce_head(h, N);
    Head& head = layers.heads[h];
    torch::Tensor q = head.query(x);  // (T, C) @ (C, HEAD) -> (T, HEAD)
    torch::Tensor k = head.key(x);    // (T, C) @ (C, HEAD) -> (T, HEAD)
    torch::Tensor v = head.value(x);  // (T, C) @ (C, HEAD) -> (T, HEAD)
    std::printf("STEP 2: projected x into query, key, value (each %lldx%lld)\n", (long long)T,
                (long long)HEAD);
    peek(opt, "q", q);
    peek(opt, "k", k);
    peek(opt, "v", v);

    // STEP 3: scores. Row i, column j says how well the query of token i matches the
    // key of token j. A dot product of HEAD terms grows like sqrt(HEAD), so the
    // scores are scaled down by 1/sqrt(HEAD); unscaled, softmax turns nearly one-hot.
    torch::Tensor scores = q.matmul(k.transpose(-2, -1));       // (T, HEAD) @ (HEAD, T) -> (T, T)
    if (opt.scale) scores.mul_(1.0 / std::sqrt(double(HEAD)));  // (T, T)
    peek(opt, "scores before the mask", scores);

    // STEP 4: the causal mask. Token i may look at tokens 0..i only, never ahead.
    // tril is true on and below the diagonal, where a token may look; every score
    // above it becomes -inf, and softmax turns -inf into a weight of exactly 0.
    // (The Python lab's mask is of ones and zeros, torch::tril(torch::ones({T, T})), and it
    // masks where tril == 0: the same mask, and the same scores.)
    const torch::Tensor tril = torch::ones({T, T}, torch::kBool).tril_();  // (T, T)
    if (opt.mask) scores.masked_fill_(tril.logical_not(), -INFINITY);      // (T, T)
    peek(opt, "scores after the mask", scores);

    // STEP 5: softmax along each row turns scores into weights that are positive
    // and add up to 1: row i is how token i shares its attention.
    torch::Tensor weights = torch::softmax(scores, /*dim=*/-1);  // (T, T)
    std::printf(
        "\nSTEP 3-5: attention weights (row i = how much token i attends to each earlier "
        "token)\n");
    print_weights(opt, weights);

    // STEP 6: the output. Each token gets the weighted sum of the values it attends
    // to: a new vector that carries context from earlier tokens.
    torch::Tensor out = weights.matmul(v);  // (T, T) @ (T, HEAD) -> (T, HEAD)
    std::printf("\nSTEP 6: output is %s (a context-aware vector per token)\n",
                size_text(out).c_str());
    peek(opt, "out", out);
    outs[h] = out;

    // STEP 7: two facts that hold for any correct attention head, the Python lab's checks:
    //   (a) each row of weights is a distribution: it sums to 1;
    //   (b) the mask held: no weight above the diagonal, on a future token.
    // Both look at the weights alone, whatever form STEP 4 gave its mask.
    const bool sums_ok =
        torch::allclose(weights.sum(-1), torch::ones({T}), /*rtol=*/1e-5, /*atol=*/1e-6);
    const torch::Tensor upper = weights.triu(/*diagonal=*/1);  // (T, T): only the future
    const bool causal_ok = upper.abs().max().item<double>() < kCausalLimit;
    std::printf("\nSTEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s\n",
                sums_ok ? "YES" : "NO", causal_ok ? "YES" : "NO");
    if (!sums_ok || !causal_ok) {
      std::fflush(stdout);
      std::fprintf(stderr, "lab04_attention: %s%s\n", head_label(h, N).c_str(),
                   what_failed(sums_ok, causal_ok));
      failed_heads += 1;
    }
  }
  if (failed_heads > 0) return finish_output(1);

  // STEP 8 (several heads), as gpt.py's MultiHeadAttention: the heads' outputs side by side,
  // then proj, a linear map with bias, takes each token back to C numbers.
  torch::Tensor joined = torch::cat(outs, /*dim=*/-1);  // N x (T, HEAD) -> (T, N*HEAD)
  if (N > 1) {
    torch::Tensor projected = layers.proj(joined);  // (T, N*HEAD) @ (N*HEAD, C) + (C) -> (T, C)
    std::printf(
        "\nSTEP 8: the %lld heads side by side are %lldx%lld; proj maps them back to "
        "%lldx%lld\n",
        (long long)N, (long long)joined.size(0), (long long)joined.size(1),
        (long long)projected.size(0), (long long)projected.size(1));
    peek(opt, "heads side by side", joined);
    peek(opt, "projected", projected);
  }

  // What a model runs: LibTorch's fused attention, all heads at once. With several heads
  // (and with --verbose for one), the lab checks that it computes what the heads above did.
  if (N > 1 || opt.verbose) {
    const int status = check_with_fused_attention(opt, x, layers.heads, joined);
    if (status != 0) return finish_output(status);
  }
  if (N > 1) {
    std::printf(
        "\nYou just computed %lld heads of self-attention, as a transformer block runs "
        "them.\n",
        (long long)N);
    return finish_output(0);
  }
  std::printf(
      "\nYou just computed self-attention with real torch tensors. Next: run several heads.\n");
  return finish_output(0);
} catch (...) {
  return stopped_by(std::current_exception());
}
#endif  // LAB04_NO_MAIN

// ===========================================================================
// The machinery. Nothing below changes the arithmetic of the lesson.

constexpr int64_t kMaxSize = 4096;  // largest --tokens, --embed and --head
constexpr int64_t kMaxHeads = 16;   // largest --heads: each head prints its weights
constexpr int64_t kMaxDigits = 9;   // 9 decimals show every bit of a float32 weight
constexpr int64_t kShowAll = 16;    // a matrix with more rows or columns is condensed...
constexpr int64_t kShowEnds = 8;    // ...to its first and last 8 of them

// ---------------------------------------------------------------------------
// Option parsing: getopt_long walks the arguments, std::from_chars reads numbers.
// parse_options never prints, exits or throws; main decides what happens next.

enum LongOnlyOption { kSeed = 256, kHead, kHeads, kDigits, kNoMask, kNoScale, kVerbose, kHeatmap };

const option kLongOptions[] = {
    {"seed", required_argument, nullptr, kSeed},   {"tokens", required_argument, nullptr, 'T'},
    {"embed", required_argument, nullptr, 'C'},    {"head", required_argument, nullptr, kHead},
    {"heads", required_argument, nullptr, kHeads}, {"digits", required_argument, nullptr, kDigits},
    {"no-mask", no_argument, nullptr, kNoMask},    {"no-scale", no_argument, nullptr, kNoScale},
    {"verbose", no_argument, nullptr, kVerbose},   {"heatmap", no_argument, nullptr, kHeatmap},
    {"help", no_argument, nullptr, 'h'},           {nullptr, 0, nullptr, 0},
};

// How an option is written in messages: "--seed", or "-T/--tokens" where it has a short form.
std::string option_name(int id) {
  for (const option* o = kLongOptions; o->name != nullptr; ++o) {
    if (o->val == id) return (id < 256 ? std::string("-") + char(id) + "/--" : "--") + o->name;
  }
  return "-" + std::string(1, char(id));
}

// The smallest and largest value of each numeric option.
struct Range {
  int64_t min, max;
};
Range range_of(int id) {
  switch (id) {
    case kSeed: return {0, std::numeric_limits<int64_t>::max()};
    case kDigits: return {0, kMaxDigits};
    case kHeads: return {1, kMaxHeads};
    default: return {1, kMaxSize};  // --tokens, --embed, --head
  }
}

std::string accepts(int id) {
  const Range r = range_of(id);
  return "an integer from " + std::to_string(r.min) + " to " + std::to_string(r.max);
}

// A user's text, made safe to quote on one line: unprintable bytes as \xHH, long text cut.
std::string quoted(const char* text) {
  std::string q = "'";
  for (size_t i = 0; text[i] != '\0'; ++i) {
    if (i == 40) return q + "...'";
    const unsigned char c = static_cast<unsigned char>(text[i]);
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    q += (c >= 0x20 && c < 0x7f) ? std::string(1, char(c)) : std::string(hex);
  }
  return q + "'";
}

// Strict: the whole text is one decimal integer, no sign '+', no spaces, no overflow.
bool parse_integer(const char* text, Range range, int64_t& value) {
  const char* end = text + std::strlen(text);
  int64_t number = 0;
  const auto [stop, error] = std::from_chars(text, end, number);
  if (error != std::errc() || stop != end || number < range.min || number > range.max) return false;
  value = number;
  return true;
}

ParseResult parse_options(int argc, char** argv) {
  ParseResult r;
  Options& o = r.options;
  optind = 0;  // 0, not 1: glibc then starts a fresh scan, so this can be called again
  opterr = 0;  // getopt prints nothing; the messages are made here
  bool head_given = false;
  // ':' first: a missing value is reported as ':' rather than '?'
  for (int id; (id = getopt_long(argc, argv, ":hT:C:", kLongOptions, nullptr)) != -1;) {
    int64_t* number = nullptr;
    switch (id) {
      case kSeed: number = &o.seed; break;
      case 'T': number = &o.tokens; break;
      case 'C': number = &o.embed; break;
      case kHead: number = &o.head, head_given = true; break;
      case kHeads: number = &o.heads; break;
      case kDigits: number = &o.digits; break;
      case kNoMask: o.mask = false; break;
      case kNoScale: o.scale = false; break;
      case kVerbose: o.verbose = true; break;
      case kHeatmap: o.heatmap = true; break;
      case 'h': o.help = true; return r;
      case ':': r.error = option_name(optopt) + " needs a value: " + accepts(optopt); return r;
      default:  // '?': an unknown option, or a value given to one that takes none
        if (optopt >= 256)
          r.error = option_name(optopt) + " takes no value";
        else if (optopt != 0)
          r.error = "unknown option " + quoted(("-" + std::string(1, char(optopt))).c_str());
        else
          r.error = "unknown option " + quoted(argv[optind - 1]);
        r.error += " (see --help)";
        return r;
    }
    if (number != nullptr && !parse_integer(optarg, range_of(id), *number)) {
      r.error = option_name(id) + " takes " + accepts(id) + ", not " + quoted(optarg);
      return r;
    }
  }
  if (optind < argc) {
    r.error =
        "unexpected argument " + quoted(argv[optind]) + ": the lab takes only options (see --help)";
  } else if (o.heads > 1 && !head_given) {  // each head's size is C/N, as in gpt.py
    if (o.embed % o.heads == 0)
      o.head = o.embed / o.heads;
    else
      r.error = "--heads " + std::to_string(o.heads) + " does not divide -C/--embed " +
                std::to_string(o.embed) + ": give a C that is a multiple of it, or each head's " +
                "size with --head";
  }
  return r;
}

void print_usage() {
  std::printf(
      "usage: lab04_attention [options]\n"
      "Causal self-attention in seven steps, as in the Python lab; one head, or several.\n"
      "\n"
      "  --seed N         random seed (default 3; 0 to 2^63-1)\n"
      "  -T, --tokens N   tokens in the sequence, T (default 4; 1 to %lld)\n"
      "  -C, --embed N    embedding size of a token, C (default 6; 1 to %lld)\n"
      "  --head N         size of a query, key and value, HEAD (default 6, or C/N for\n"
      "                   several heads; 1 to %lld)\n"
      "  --heads N        heads, N, each with layers of its own, side by side and projected\n"
      "                   back to C in a STEP 8 (default 1; 1 to %lld)\n"
      "  --digits N       decimals of printed numbers (default 2; 0 to %lld)\n"
      "  --no-mask        experiment: skip the causal mask of STEP 4 (the lab then fails)\n"
      "  --no-scale       experiment: do not scale the scores by 1/sqrt(HEAD)\n"
      "  --verbose        also print x, q, k, v, the scores, and the output, and check\n"
      "                   them against LibTorch's fused attention (as several heads do)\n"
      "  --heatmap        also draw the weights as shaded cells (colour on a terminal,\n"
      "                   unless NO_COLOR is set)\n"
      "  -h, --help       print this help and exit\n"
      "\n"
      "Matrices with more than %lld rows or columns show only their first and last %lld.\n"
      "Exit status: 0 both checks of STEP 7 hold (in every head, and the fused attention\n"
      "agrees), 1 a check failed, 2 bad options,\n"
      "3 LibTorch raised an error, or the output could not be written,\n"
      "4 a step is not written yet (in a starter, where a TODO stands for it),\n"
      "5 a step made a tensor the lesson's code cannot take (a line says which, and why).\n",
      (long long)kMaxSize, (long long)kMaxSize, (long long)kMaxSize, (long long)kMaxHeads,
      (long long)kMaxDigits, (long long)kShowAll, (long long)kShowEnds);
}

// ---------------------------------------------------------------------------
// Printing.

// The rows (or columns) of n that are printed: all of them up to kShowAll, otherwise the
// first and last kShowEnds with a -1 standing for the ones left out.
std::vector<int64_t> shown(int64_t n) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    if (n > kShowAll && i == kShowEnds) {
      idx.push_back(-1);
      i = n - kShowEnds;
    }
    idx.push_back(i);
  }
  return idx;
}

// Prints a (rows, cols) float tensor as the Python lab prints its weights:
// one "t<i>: [a, b, ...]" line a row, every number with "%.<digits>f".
void print_rows(const torch::Tensor& m, int64_t digits, const char* indent) {
  const torch::Tensor t = m.to(torch::kDouble).contiguous();  // exactly a float's value
  const double* data = t.data_ptr<double>();
  const int64_t rows = t.size(0), cols = t.size(1);
  for (int64_t i : shown(rows)) {
    if (i < 0) {
      std::printf("%s... %lld rows not shown ...\n", indent, (long long)(rows - 2 * kShowEnds));
      continue;
    }
    std::printf("%st%lld: [", indent, (long long)i);
    const char* sep = "";
    for (int64_t j : shown(cols)) {
      if (j < 0)
        std::printf("%s...", sep);
      else
        std::printf("%s%.*f", sep, int(digits), data[i * cols + j]);
      sep = ", ";
    }
    std::printf("]\n");
  }
}

// What the lesson makes under each name it prints a tensor by: the STEP that makes it, its
// variable and its shape in the lesson's words. Every one is a matrix of float32 numbers.
struct LessonTensor {
  const char* printed;   // the name peek() prints it under
  const char* variable;  // the variable that holds it
  int step;
  const char* rows;  // "T"
  const char* cols;  // "C", "HEAD", "T", "N*HEAD"
};
constexpr LessonTensor kLessonTensors[] = {
    {"x", "x", 1, "T", "C"},
    {"q", "q", 2, "T", "HEAD"},
    {"k", "k", 2, "T", "HEAD"},
    {"v", "v", 2, "T", "HEAD"},
    {"scores before the mask", "scores", 3, "T", "T"},
    {"scores after the mask", "scores", 4, "T", "T"},
    {"weights", "weights", 5, "T", "T"},
    {"out", "out", 6, "T", "HEAD"},
    {"heads side by side", "joined", 8, "T", "N*HEAD"},
    {"projected", "projected", 8, "T", "C"},
};

// The value of a size named as the lesson names it.
int64_t size_named(const Options& opt, const std::string& size) {
  if (size == "T") return opt.tokens;
  if (size == "C") return opt.embed;
  if (size == "HEAD") return opt.head;
  return opt.heads * opt.head;  // N*HEAD
}

// A tensor's shape and type as a message shows them: "a (1, 4, 4) tensor of Double".
std::string kind_of(const torch::Tensor& t) {
  std::string dims;
  for (int64_t d : t.sizes()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  return "a (" + dims + ") tensor of " + std::string(c10::toString(t.scalar_type()));
}

// Thrown when a step's tensor is not what the code after it takes (expect(), below): main
// then says what the tensor is and what was expected, and exits 5 (stopped_by()).
struct NotTheLessonsTensor : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Stops the lab (main exits 5) with a line that names a step's tensor, what it is and what the
// code after the step takes: "STEP 5: weights is a (1, 4, 4) tensor of Float; ...".
[[noreturn]] void not_the_lessons(const Options& opt, const LessonTensor& lesson,
                                  const torch::Tensor& t) {
  const std::string step = "STEP " + std::to_string(lesson.step);
  const std::string wanted = std::string("(") + lesson.rows + ", " + lesson.cols + ") = (" +
                             std::to_string(size_named(opt, lesson.rows)) + ", " +
                             std::to_string(size_named(opt, lesson.cols)) + "), of Float";
  if (!t.defined())
    throw NotTheLessonsTensor(step + ": " + lesson.variable + " has no value: " + step +
                              " must give it one, " + wanted);
  throw NotTheLessonsTensor(step + ": " + lesson.variable + " is " + kind_of(t) +
                            "; the lesson's code after " + step + " takes " + wanted);
}

const LessonTensor& lesson_tensor(const char* name) {
  for (const LessonTensor& named : kLessonTensors)
    if (std::strcmp(named.printed, name) == 0) return named;
  throw std::logic_error(std::string("no tensor of the lesson is printed as ") + name);
}

// A step may compute its tensor any way it likes (a view or a copy, in place or not,
// contiguous or not). The lab prints any matrix of numbers as it is, so that a wrong one
// shows; then it holds the tensor to what the code after the step takes: the lesson's
// shape, of float32 numbers (what torch::randn and the layers make). Otherwise it stops
// there and says why, rather than a later check going wrong or LibTorch failing further on.
bool printable(const torch::Tensor& t) { return t.defined() && t.dim() == 2; }
void expect(const Options& opt, const char* name, const torch::Tensor& t) {
  const LessonTensor& lesson = lesson_tensor(name);
  const bool right = printable(t) && t.size(0) == size_named(opt, lesson.rows) &&
                     t.size(1) == size_named(opt, lesson.cols) && t.scalar_type() == torch::kFloat;
  if (!right) not_the_lessons(opt, lesson, t);
}

// An intermediate tensor: with --verbose its name, shape and rows; then expect().
void peek(const Options& opt, const char* name, const torch::Tensor& t) {
  if (!printable(t)) not_the_lessons(opt, lesson_tensor(name), t);
  if (opt.verbose) {
    std::printf("    %s, shape (%lld, %lld):\n", name, (long long)t.size(0), (long long)t.size(1));
    print_rows(t, opt.digits, "      ");
  }
  expect(opt, name, t);
}

// STEP 5's weights, "t0: [...]" a row; expect(); with --heatmap, as shaded cells too.
void print_heatmap(const torch::Tensor& weights);
void print_weights(const Options& opt, const torch::Tensor& weights) {
  if (!printable(weights)) not_the_lessons(opt, lesson_tensor("weights"), weights);
  print_rows(weights, opt.digits, "  ");
  expect(opt, "weights", weights);
  if (opt.heatmap) print_heatmap(weights);
}

// A tensor's size as STEP 6 prints it, "4x6", whatever the tensor (peek then judges it).
std::string size_text(const torch::Tensor& t) {
  if (!t.defined()) return "nothing";
  std::string text;
  for (int64_t d : t.sizes()) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text.empty() ? "a single number" : text;
}

// With --heatmap: the weights as cells, two characters a cell. A cell's shade is its weight
// as a share of the largest weight in its row, so that every row shows which tokens it favours
// even when 64 tokens share the attention; the row's largest weight is printed after it.
void print_heatmap(const torch::Tensor& weights) {
  static const char* kShade[] = {"··", "░░", "▒▒", "▓▓", "██"};  // 0, then quarters of the max
  static const int kColour[] = {240, 229, 221, 208, 196};        // 256-colour ANSI codes
  const char* no_colour = std::getenv("NO_COLOR");
  const bool colour = isatty(STDOUT_FILENO) && (no_colour == nullptr || *no_colour == '\0');
  const torch::Tensor t = weights.contiguous();
  const float* data = t.data_ptr<float>();
  const int64_t n = t.size(0);
  std::printf("\n  heatmap of the weights (row = token, column = token it attends to):\n");
  for (int64_t i : shown(n)) {
    if (i < 0) {
      std::printf("   ...\n");
      continue;
    }
    const float* row = data + i * n;
    const float top = *std::max_element(row, row + n);  // the whole row, shown or not
    std::printf("  t%-4lld", (long long)i);
    for (int64_t j : shown(n)) {
      if (j < 0) {
        std::printf(" ... ");
        continue;
      }
      const float share = top > 0.0f ? row[j] / top : 0.0f;
      const int level = row[j] == 0.0f  ? 0
                        : share < 0.25f ? 1
                        : share < 0.50f ? 2
                        : share < 0.75f ? 3
                                        : 4;
      if (colour)
        std::printf("\033[38;5;%dm%s\033[0m", kColour[level], kShade[level]);
      else
        std::printf("%s", kShade[level]);
    }
    std::printf("  max %.2f\n", double(top));
  }
  std::printf(
      "  legend: each cell is its weight as a share of the row's max: %s exactly 0, %s under "
      "1/4,\n          %s under 1/2, %s under 3/4, %s 3/4 or more (the tokens the row favours)\n",
      kShade[0], kShade[1], kShade[2], kShade[3], kShade[4]);
}

// With several heads, each head's part of the output starts with its number.
void announce_head(int64_t h, int64_t n) {
  if (n > 1) std::printf("\nHEAD %lld of %lld\n", (long long)h, (long long)n);
}

// How a message names a head: "head 1: ", with several heads; nothing with one.
std::string head_label(int64_t h, int64_t n) {
  return n > 1 ? "head " + std::to_string(h) + ": " : "";
}

// ---------------------------------------------------------------------------
// The fused kernel. A model does not run its heads one by one as the lesson does: like
// nanoGPT, it computes q, k and v of all heads with one matrix product (the heads' weights
// stacked), views them as (heads, T, HEAD) and calls LibTorch's fused attention, which scales,
// masks, softmaxes and sums the values in one kernel. The lab does the same from its own
// layers and prints the largest difference from its heads' outputs: float32 rounding (about
// 1e-7) when the steps are right; a wrong step shows as a difference of its own.
constexpr double kFusedTolerance = 1e-4;  // of the outputs' largest magnitude, or of 1

// scaled_dot_product_attention: public from LibTorch 2.0; 1.13 has it as a private function
// that also returns the weights. Both scale the scores by 1/sqrt(HEAD).
torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, bool causal) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
#else
  return std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, 0.0, false, causal));
#endif
}

// Prints the line that compares the fused kernel with the lab's heads; 0 when they agree,
// else 1, with a line on stderr.
int check_with_fused_attention(const Options& opt, const torch::Tensor& x,
                               const std::vector<Head>& heads, const torch::Tensor& joined) {
  const int64_t T = x.size(0), N = int64_t(heads.size()), HEAD = opt.head;
  std::vector<torch::Tensor> wq, wk, wv;  // each (HEAD, C)
  for (const Head& head : heads) {
    wq.push_back(head.query->weight);
    wk.push_back(head.key->weight);
    wv.push_back(head.value->weight);
  }
  auto all_heads = [&](const std::vector<torch::Tensor>& w) {               // (T, C) @ (C, N*HEAD)
    return x.matmul(torch::cat(w).t()).view({T, N, HEAD}).transpose(0, 1);  // -> (N, T, HEAD)
  };
  torch::Tensor q = all_heads(wq), k = all_heads(wk), v = all_heads(wv);
  if (!opt.scale) q = q * std::sqrt(1.0 * HEAD);  // undoes the kernel's scale: --no-scale
  const torch::Tensor fused = fused_attention(q, k, v, opt.mask)  // (N, T, HEAD)
                                  .transpose(0, 1)
                                  .reshape({T, N * HEAD});  // -> (T, N*HEAD), as joined
  const double difference = (fused - joined).abs().max().item<double>();
  const double largest = std::max(1.0, joined.abs().max().item<double>());
  const bool agrees = difference <= kFusedTolerance * largest;  // NaN does not agree
  std::printf("\nLibTorch's fused attention %s: max |difference| %.0e\n",
              agrees ? "agrees" : "disagrees", difference);
  if (agrees) return 0;
  std::fflush(stdout);
  std::fprintf(stderr,
               "lab04_attention: LibTorch's fused attention, run on the same key, query and value "
               "layers, computes other outputs than the heads' outputs in outs: a step from 2 to 6 "
               "does not do what attention does, or outs does not keep each head's out\n");
  return 1;
}

// The one line on stderr when STEP 7 finds a broken lab: which check failed, and what it means.
const char* what_failed(bool sums_ok, bool causal_ok) {
  if (!sums_ok && !causal_ok)
    return "both checks failed: rows of weights do not sum to 1, and tokens attend to later tokens";
  if (!sums_ok)
    return "check (a) failed: a row of weights does not sum to 1, so it is not a distribution";
  return "check (b) failed: a token puts weight on a later token, so it sees the future";
}

// ---------------------------------------------------------------------------
// Same bits on every run. A multi-threaded BLAS splits a large matrix product by its
// number of threads, and a different split can round the last bit differently. So the lab
// fixes that number instead of taking it from the machine or OMP_NUM_THREADS: OpenBLAS
// (Debian's LibTorch multiplies through it) by its own setting, LibTorch's kernels and MKL
// by LibTorch's. 2 is what Python uses on a 2-core machine, so there the numbers match it
// at any size.
constexpr int kThreads = 2;
void use_a_fixed_number_of_threads() {
  // Only when it differs: setting it also starts another pool of threads, which costs a
  // short run about 20 ms.
  if (torch::get_num_threads() != kThreads) torch::set_num_threads(kThreads);
  using SetThreads = void (*)(int);
  if (auto openblas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    openblas(kThreads);
}

// No output lost: stdout is buffered, so a full disk or a closed descriptor shows only when
// the buffer is written. Flush it, and if any write failed say so and exit 3, rather than
// exit 0 with the output gone. (A closed pipe, as in "| head", ends the lab by SIGPIPE.)
int finish_output(int status) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
  std::fprintf(stderr, "lab04_attention: cannot write the output: %s\n", std::strerror(errno));
  return 3;
}

// How main ends when a step throws: on a tensor the lesson's code cannot take, the line that
// says which and why, exit 5; on LibTorch's own errors (out of memory, say), their first line,
// exit 3.
constexpr int kNotTheLessonsTensor = 5;
int stopped_by(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const NotTheLessonsTensor& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "lab04_attention: %s\n", e.what());
    return kNotTheLessonsTensor;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    std::fprintf(stderr, "lab04_attention: LibTorch error: %s\n",
                 what.substr(0, what.find('\n')).c_str());
    return 3;
  }
}

// In a starter (the lab with steps left for the student; see the README), a TODO stands where
// a step's code was, and calls this: it says which step is missing and what it should define,
// and ends the run with its own exit status, 4.
constexpr int kNotWrittenYet = 4;
void not_written_yet(int step, const char* hint) {
  std::printf("\nSTEP %d: not written yet: %s\n", step, hint);
  std::exit(finish_output(kNotWrittenYet));
}
