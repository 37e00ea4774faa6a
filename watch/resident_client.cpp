// watch/resident_client.cpp: the watch's side of its resident compiler (watch/resident.cpp, a
// library the watch loads with dlopen, so that --once and a build without it carry no LLVM).
// Once the first run is shown, and again whenever the watch is idle after a save ended it,
// the compiler starts with the lab's own compile flags (Ninja's command for the module's
// object) and compiles the lab once, unused, to have read what it needs of the precompiled
// header. A save is then compiled and linked in the watch, and each run, a child of the watch,
// calls what was linked. Whatever it refuses is compiled by clang++, as before
// (watch/lab_watch.cpp).

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "watch.h"

namespace watch {

#ifdef LAB_RESIDENT
namespace {

constexpr const char* kSource = LAB_SOURCE;  // the lab
constexpr int kPartsBeforeRestart = 100;     // saves a compiler takes before a new one starts

struct Compiler;  // lab04_resident, in watch/resident.cpp
using Start = Compiler* (*)(int, const char* const*);
using Supply = void (*)(Compiler*, const char*);
struct Linked {  // resident.cpp's lab04_entry
  void (*init)();
  int (*main)(int, char**);
};
using Compile = int (*)(Compiler*, const char*, const char*, Linked*, const char**);
enum Compiled { kCompiled = 0, kClangSays = 1, kRefused = 2, kLacking = 3 };  // resident.cpp's
using Usable = int (*)(Compiler*);
using Stop = void (*)(Compiler*);

struct Resident {
  bool loaded = false, failed = false;  // the library: loaded, or could not be
  Start start = nullptr;
  Supply supply = nullptr;
  Compile compile = nullptr;
  Usable usable = nullptr;
  Stop stop = nullptr;
  Compiler* compiler = nullptr;
  bool warm = false;          // it compiled the lab once since it started
  int parts = 0;              // the saves it compiled since it started
  bool wants_supply = false;  // it lacked a function: the bitcode of the lab is built at idle
  std::string compiled;       // the last lab it compiled: what a new compiler warms up on
  std::vector<std::string> flags;
};
Resident g;

// The words of a command as sh would split them (quotes and backslashes; no expansions).
std::vector<std::string> words_of(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(word), word.clear(), in_word = false;
    } else if (c == '\'') {
      size_t end = command.find('\'', i + 1);
      if (end == std::string::npos) return {};
      word += command.substr(i + 1, end - i - 1), i = end, in_word = true;
    } else if (c == '"') {
      for (++i; i < command.size() && command[i] != '"'; ++i) {
        if (command[i] == '\\' && i + 1 < command.size()) ++i;
        word += command[i];
      }
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i], in_word = true;
    } else {
      word += c, in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

// The compile command's flags, without the compiler, its input, its output and its
// dependency file; clang's own headers named (the driver would look for them beside the
// watch).
std::vector<std::string> flags_of(const std::string& compile) {
  std::vector<std::string> words = words_of(compile), flags;
  size_t first = 1;  // after the compiler, and a launcher before it (cmake/python_habits.sh)
  while (first < words.size() && words[first].rfind("-", 0) != 0) ++first;
  for (size_t i = first; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "-o" || w == "-MF" || w == "-MT" || w == "-c") {
      ++i;
    } else if (w != "-MD") {
      flags.push_back(w);
    }
  }
  flags.insert(flags.end(), {"-resource-dir", LAB_RESOURCE_DIR});
  return flags;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

bool load_library() {
  if (g.loaded || g.failed) return g.loaded;
  // Debian testing's LibTorch carries an LLVM of its own and exports its C++ names, and the
  // watch loaded it first: clang's LLVM would bind its globals to LibTorch's copy (two LLVMs in
  // one registry: a double free). Where a name of LLVM's is loaded already, the compiler is
  // loaded with RTLD_DEEPBIND, so that clang's libraries bind to their own names first; only
  // there (the sanitizers' runtimes refuse RTLD_DEEPBIND: a sanitized watch there compiles each
  // save with clang++).
  int mode = RTLD_NOW | RTLD_LOCAL;
  if (dlsym(RTLD_DEFAULT, "_ZN4llvm14TargetRegistry7targetsEv")) mode |= RTLD_DEEPBIND;
  if ((mode & RTLD_DEEPBIND) && kSanitized) return g.failed = true, false;
  void* lib = dlopen(LAB_RESIDENT, mode);
  if (lib) {
    g.start = reinterpret_cast<Start>(dlsym(lib, "lab04_resident_start"));
    g.supply = reinterpret_cast<Supply>(dlsym(lib, "lab04_resident_supply"));
    g.compile = reinterpret_cast<Compile>(dlsym(lib, "lab04_resident_compile"));
    g.usable = reinterpret_cast<Usable>(dlsym(lib, "lab04_resident_usable"));
    g.stop = reinterpret_cast<Stop>(dlsym(lib, "lab04_resident_stop"));
  }
  g.loaded = g.start && g.supply && g.compile && g.usable && g.stop;
  g.failed = !g.loaded;
  return g.loaded;
}

std::string saved_lab() {
  std::ifstream in(kSource, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

// Compiles a lab and links it here: kCompiled, or why not (resident.cpp's Compiled).
int compile(const std::string& text, std::string& why, Linked& linked) {
  if (text.empty()) return why = "the lab could not be read", kRefused;
  const char* said = "";
  int done = g.compile(g.compiler, text.c_str(), kSource, &linked, &said);
  ++g.parts;
  why = said;
  return done;
}

}  // namespace

bool resident_available() { return exists(LAB_RESIDENT) && exists(LAB_SUPPLY); }

void resident_learn(const std::string& compile) { g.flags = flags_of(compile); }

void resident_idle() {
  if (g.flags.empty() || !load_library()) return;
  // A compiler that a save ended, or one that grew with many saves (each part stays in its
  // translation unit: about 3 MB a save), is replaced by a new one.
  if (g.compiler && (!g.usable(g.compiler) || g.parts >= kPartsBeforeRestart))
    g.stop(g.compiler), g.compiler = nullptr;
  if (g.wants_supply) {  // the lab as bitcode, with the functions the compiler lacked
    Build b = start_build({"lab04_supply"}, false);
    if (finish_build(b, false) && g.compiler) g.supply(g.compiler, LAB_SUPPLY);
    g.wants_supply = false;
  }
  if (!g.compiler) {
    std::vector<const char*> argv;
    for (const std::string& f : g.flags) argv.push_back(f.c_str());
    g.compiler = g.start(int(argv.size()), argv.data());
    if (!g.compiler) return;
    g.warm = false, g.parts = 0;
    if (exists(LAB_SUPPLY)) g.supply(g.compiler, LAB_SUPPLY);
  }
  if (!g.warm) {      // what the lab needs of the header, read now rather than at the next save;
    std::string why;  // on the last lab that compiled (a save with a typo would end it again)
    Linked unused;
    compile(g.compiled.empty() ? saved_lab() : g.compiled, why, unused);
    g.warm = true;
  }
}

bool resident_build(Entry& entry, std::string& why) {
  why.clear();
  if (!g.compiler || !g.usable(g.compiler)) return false;
  Linked linked{};
  std::string text = saved_lab();
  int done = compile(text, why, linked);
  if (done != kCompiled) {
    g.wants_supply = done == kLacking;
    if (done == kClangSays) why.clear();  // clang++ shows what it says
    return false;
  }
  g.compiled = text;
  entry = {"", "", linked.init, linked.main};
  return true;
}

#else  // a build without the resident compiler: every save is compiled by clang++

bool resident_available() { return false; }
void resident_learn(const std::string&) {}
void resident_idle() {}
bool resident_build(Entry&, std::string& why) { return why.clear(), false; }

#endif

}  // namespace watch
