// Unit test of the lab's option parser, in the way of llm.c's test_gpt2.c: the lab's own
// source is included with its main() compiled out, and parse_options() is called directly.
//
//   parse_options_test            the table of accepted and rejected arguments, then the fuzz
//                                 with the fixed seed kFuzzSeed
//   parse_options_test SEED [N]   the fuzz only, with that seed and N vectors (100000)
//
// Prints OK / NOT OK for each case and "N passed, N failed" at the end; exits 1 on a failure.
#define LAB04_NO_MAIN
#include <random>

#include "../lab04_attention.cpp"

namespace {

constexpr uint64_t kFuzzSeed = 20261130;  // fixed, so that every run checks the same vectors
int passed = 0, failed = 0;

void report(bool ok, const std::string& what, const std::string& detail = "") {
  (ok ? passed : failed)++;
  std::printf("%s  %s\n", ok ? "OK    " : "NOT OK", what.c_str());
  if (!ok && !detail.empty()) std::printf("        %s\n", detail.c_str());
}

// Runs the parser on {"lab04_attention", args...}; argv is rebuilt each time, since
// getopt_long reorders it.
ParseResult parse(const std::vector<std::string>& args) {
  std::vector<std::string> storage = {"lab04_attention"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  return parse_options(int(storage.size()), argv.data());
}

std::string show(const std::vector<std::string>& args) {
  std::string s = "[";
  for (const std::string& a : args) s += (s.size() > 1 ? ", " : "") + quoted(a.c_str());
  return s + "]";
}

std::string describe(const Options& o) {
  char text[200];
  std::snprintf(text, sizeof text,
                "seed=%lld tokens=%lld embed=%lld head=%lld heads=%lld digits=%lld mask=%d "
                "scale=%d verbose=%d heatmap=%d help=%d",
                (long long)o.seed, (long long)o.tokens, (long long)o.embed, (long long)o.head,
                (long long)o.heads, (long long)o.digits, o.mask, o.scale, o.verbose, o.heatmap,
                o.help);
  return text;
}

void expect_accepted(const std::vector<std::string>& args, const Options& want) {
  const ParseResult r = parse(args);
  const bool ok = r.error.empty() && describe(r.options) == describe(want);
  report(ok, "accepts " + show(args),
         ok ? "" : "got " + (r.error.empty() ? describe(r.options) : "error: " + r.error));
}

void expect_rejected(const std::vector<std::string>& args, const std::string& message) {
  const ParseResult r = parse(args);
  report(r.error == message, "rejects " + show(args),
         "message: " + (r.error.empty() ? "(none)" : r.error) + "\n        wanted:  " + message);
}

// The default options with one edit applied.
Options changed(void (*edit)(Options&)) {
  Options o;
  edit(o);
  return o;
}

void table() {
  expect_accepted({}, Options{});
  expect_accepted({"--seed", "42", "-T", "5", "-C", "8", "--head", "3"},
                  changed([](Options& o) { o.seed = 42, o.tokens = 5, o.embed = 8, o.head = 3; }));
  expect_accepted(
      {"--tokens=4096", "--embed=1", "--head=4096", "--digits=9"},
      changed([](Options& o) { o.tokens = 4096, o.embed = 1, o.head = 4096, o.digits = 9; }));
  expect_accepted({"--seed", "0", "--digits", "0"},
                  changed([](Options& o) { o.seed = 0, o.digits = 0; }));
  expect_accepted({"--seed", "9223372036854775807"},
                  changed([](Options& o) { o.seed = std::numeric_limits<int64_t>::max(); }));
  expect_accepted({"-T7"}, changed([](Options& o) { o.tokens = 7; }));
  expect_accepted({"--no-mask", "--no-scale", "--verbose", "--heatmap"}, changed([](Options& o) {
                    o.mask = false, o.scale = false, o.verbose = o.heatmap = true;
                  }));
  expect_accepted({"-T", "5", "-T", "6"},
                  changed([](Options& o) { o.tokens = 6; }));                  // last one wins
  expect_accepted({"--tok", "9"}, changed([](Options& o) { o.tokens = 9; }));  // unique prefix
  expect_accepted({"--help", "--tokens", "0"}, changed([](Options& o) { o.help = true; }));
  expect_accepted({"-h"}, changed([](Options& o) { o.help = true; }));
  expect_accepted({"--"}, Options{});
  // Several heads: each head's size is C/N unless --head gives it; one head keeps HEAD's 6.
  expect_accepted({"--heads", "2"}, changed([](Options& o) { o.heads = 2, o.head = 3; }));
  expect_accepted({"--heads", "3", "-C", "12"},
                  changed([](Options& o) { o.heads = 3, o.embed = 12, o.head = 4; }));
  expect_accepted({"-C", "12", "--heads", "4", "--head", "5"},
                  changed([](Options& o) { o.embed = 12, o.heads = 4, o.head = 5; }));
  expect_accepted({"--heads", "1", "-C", "12"}, changed([](Options& o) { o.embed = 12; }));
  expect_accepted({"--heads", "16", "-C", "32"},
                  changed([](Options& o) { o.heads = 16, o.embed = 32, o.head = 2; }));
  expect_accepted({"--heads", "6"}, changed([](Options& o) { o.heads = 6, o.head = 1; }));

  const std::string tokens = "-T/--tokens takes an integer from 1 to 4096, not ";
  expect_rejected({"--tokens", "4x"}, tokens + "'4x'");
  expect_rejected({"--tokens", ""}, tokens + "''");
  expect_rejected({"-T", " 4"}, tokens + "' 4'");
  expect_rejected({"-T", "4 "}, tokens + "'4 '");
  expect_rejected({"-T", "+4"}, tokens + "'+4'");
  expect_rejected({"-T", "0"}, tokens + "'0'");
  expect_rejected({"-T", "-4"}, tokens + "'-4'");
  expect_rejected({"-T", "4097"}, tokens + "'4097'");
  expect_rejected({"-T", "0x10"}, tokens + "'0x10'");
  expect_rejected({"-T", "4.0"}, tokens + "'4.0'");
  expect_rejected({"-T", "99999999999999999999"}, tokens + "'99999999999999999999'");
  expect_rejected({"-C", "0"}, "-C/--embed takes an integer from 1 to 4096, not '0'");
  expect_rejected({"--head", "4097"}, "--head takes an integer from 1 to 4096, not '4097'");
  const std::string heads = "--heads takes an integer from 1 to 16, not ";
  expect_rejected({"--heads", "0"}, heads + "'0'");
  expect_rejected({"--heads", "-2"}, heads + "'-2'");
  expect_rejected({"--heads", "two"}, heads + "'two'");
  expect_rejected({"--heads", "17"}, heads + "'17'");
  expect_rejected({"--heads"}, "--heads needs a value: an integer from 1 to 16");
  const std::string divide = ": give a C that is a multiple of it, or each head's size with --head";
  expect_rejected({"--heads", "4"}, "--heads 4 does not divide -C/--embed 6" + divide);
  expect_rejected({"--heads", "7"}, "--heads 7 does not divide -C/--embed 6" + divide);
  expect_rejected({"-C", "3", "--heads", "5"}, "--heads 5 does not divide -C/--embed 3" + divide);
  expect_rejected({"--digits", "10"}, "--digits takes an integer from 0 to 9, not '10'");
  expect_rejected({"--digits", "-1"}, "--digits takes an integer from 0 to 9, not '-1'");
  const std::string seed = "--seed takes an integer from 0 to 9223372036854775807, not ";
  expect_rejected({"--seed", "-1"}, seed + "'-1'");
  expect_rejected({"--seed", "9223372036854775808"}, seed + "'9223372036854775808'");
  expect_rejected({"--seed", "three"}, seed + "'three'");
  expect_rejected({"--seed", "4\n2"}, seed + "'4\\x0a2'");  // one line, whatever was typed
  expect_rejected({"--seed", std::string(100, '7')}, seed + "'" + std::string(40, '7') + "...'");
  expect_rejected({"--seed", "\xc3\xa9"}, seed + "'\\xc3\\xa9'");
  expect_rejected({"--seed"}, "--seed needs a value: an integer from 0 to 9223372036854775807");
  expect_rejected({"-T"}, "-T/--tokens needs a value: an integer from 1 to 4096");
  expect_rejected({"--frobnicate"}, "unknown option '--frobnicate' (see --help)");
  expect_rejected({"--no"}, "unknown option '--no' (see --help)");  // --no-mask or --no-scale?
  expect_rejected({"-x"}, "unknown option '-x' (see --help)");
  expect_rejected({"--no-mask=yes"}, "--no-mask takes no value (see --help)");
  expect_rejected({"attention"},
                  "unexpected argument 'attention': the lab takes only options (see --help)");
  expect_rejected({"--", "-T"},
                  "unexpected argument '-T': the lab takes only options (see --help)");
  expect_rejected({"-"}, "unexpected argument '-': the lab takes only options (see --help)");
}

// Random argument vectors built from pieces that sit at and across every bound.
void fuzz(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  const std::vector<std::string> names = {
      "--seed",      "-T",         "--tokens",  "-C",        "--embed", "--head",  "--digits",
      "--no-mask",   "--no-scale", "--verbose", "--heatmap", "--tok",   "--no",    "--bogus",
      "-x",          "-",          "--",        "-TC",       "-hT",     "--seed=", "--tokens=",
      "--no-mask=1", "-h",         "--help",    "--heads",   "--heads="};
  const std::vector<std::string> values = {"0",
                                           "1",
                                           "2",
                                           "9",
                                           "10",
                                           "-1",
                                           "4095",
                                           "4096",
                                           "4097",
                                           "-0",
                                           "+4",
                                           " 4",
                                           "4 ",
                                           "4x",
                                           "",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "-9223372036854775808",
                                           "18446744073709551616",
                                           "007",
                                           "1e3",
                                           "0x10",
                                           "\xff\xfe",
                                           "\xc3\xa9",
                                           "a\nb",
                                           "\t",
                                           std::string(10000, '9'),
                                           std::string(300, 'z')};
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  int bad = 0;
  for (int n = 0; n < count; ++n) {
    std::vector<std::string> args;
    for (int i = int(rng() % 7); i > 0; --i) {
      switch (rng() % 4) {
        case 0: args.push_back(pick(names)); break;
        case 1: args.push_back(pick(values)); break;
        case 2: args.push_back(pick(names) + "=" + pick(values)); break;
        default: args.push_back(pick(names)), args.push_back(pick(values)); break;
      }
    }
    std::string problem;
    try {
      const ParseResult r = parse(args);
      const Options& o = r.options;
      if (!r.error.empty()) {
        if (r.error.find_first_of("\n\r") != std::string::npos)
          problem = "error of more than one line";
      } else if (o.seed < 0 || o.tokens < 1 || o.tokens > kMaxSize || o.embed < 1 ||
                 o.embed > kMaxSize || o.head < 1 || o.head > kMaxSize || o.digits < 0 ||
                 o.digits > kMaxDigits || o.heads < 1 || o.heads > kMaxHeads) {
        problem = "accepted out of range: " + describe(o);
      }
    } catch (...) {
      problem = "threw an exception";
    }
    if (!problem.empty() && ++bad <= 5) report(false, "fuzz vector " + show(args), problem);
  }
  report(bad == 0, "fuzz: " + std::to_string(count) + " argument vectors from seed " +
                       std::to_string(seed) + ", " + std::to_string(bad) + " bad");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {  // replay: the fuzz alone
    fuzz(std::strtoull(argv[1], nullptr, 10), argc > 2 ? std::atoi(argv[2]) : 100000);
  } else {
    table();
    fuzz(kFuzzSeed, 100000);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
