// watch/resident.cpp: the watch's resident compiler. A compile of the lab spends most of its
// time loading LibTorch's precompiled header again; this compiler loads it once, when the watch
// starts, and keeps it: each save is then compiled in about a tenth of the time (clang's own
// incremental compiler, clang::Interpreter, used as a library; docs/performance.md has the
// figures). It compiles a save to an object, as clang++ would, and links it in the watch's
// process (LLVM's JIT linker) for the watch's runs to call; it never runs any of it itself.
//
// Each save is a new part of one translation unit, so the lab's text goes into a namespace of
// its own (lab04_part1, lab04_part2, ...), with an entry point, lab04_main_N, that calls its
// main. Anything that could make that part mean something else than the file compiled alone
// is refused, and the watch then compiles the save with clang++ as before (the reason is
// returned): any warning or error (clang++ then shows them as they are), a header or a macro
// left behind by an earlier save, a #pragma, a name of the lab that a name outside it would
// have overloaded, and code the part needs that no loaded library has.
//
// Built with the clang of Debian 12, 13 or testing (14, 19 or 21: their interfaces differ in a
// few calls, chosen by LLVM_VERSION_MAJOR). The watch loads it with dlopen, so that neither
// --once nor a build without it carries LLVM. clang 14 forgets, from one part to the next, the
// inline functions it has not emitted yet (later versions keep them): a part's missing
// functions are taken from those the earlier parts emitted, and from
// a normal compile of the lab ("the supply", compiled to bitcode by the build).

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Interpreter/Interpreter.h>
#include <clang/Lex/HeaderSearch.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <dlfcn.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

// Counts what clang says about a part; prints nothing (clang++ prints it, when asked).
struct Said : clang::DiagnosticConsumer {
  int count = 0;
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic&) override {
    if (level >= clang::DiagnosticsEngine::Warning) ++count;
  }
};

// Watches the preprocessor for what would outlive a part: a header read for the first time, a
// macro of the lab's (undefined again after the part) or one it undefines, a #pragma.
struct Outliving : clang::PPCallbacks {
  clang::SourceManager& sources;
  bool in_part = false;
  std::vector<std::string> defined;
  std::string refused;
  explicit Outliving(clang::SourceManager& sm) : sources(sm) {}
  bool ours(clang::SourceLocation at) const {
    return in_part && at.isValid() && !sources.getFileEntryForID(sources.getFileID(at));
  }
  // A header read for the first time defines its guard, a macro never defined before (a
  // header read again, as <cassert> is, defines again only what it had defined).
  void MacroDefined(const clang::Token& name, const clang::MacroDirective* directive) override {
    if (!in_part) return;
    if (ours(name.getLocation())) {
      defined.push_back(name.getIdentifierInfo()->getName().str());
      return;
    }
    for (const clang::MacroDirective* d = directive->getPrevious(); d; d = d->getPrevious())
      if (llvm::isa<clang::DefMacroDirective>(d)) return;
    refused = "it includes a header that no earlier compile had included";
  }
  void MacroUndefined(const clang::Token& name, const clang::MacroDefinition&,
                      const clang::MacroDirective*) override {
    if (ours(name.getLocation())) refused = "it undefines a macro";
  }
  void PragmaDirective(clang::SourceLocation at, clang::PragmaIntroducerKind) override {
    if (ours(at)) refused = "it has a #pragma";
  }
};

// What keeps a part from being parsed at all: an #include of a header that no compile has read
// yet (clang 19 crashes parsing some, <regex> among them, inside the part's namespace, where
// clang 14 returned errors), of one named by a macro, or of one in quotes (clang++ looks for it
// beside the lab, and a part in memory has no folder). The directives are found by clang's own
// lexer, which reads comments, line splices and %: as the preprocessor does; an #include in an
// #if 0 counts too (clang++ then compiles the save).
std::string unparsable(clang::Preprocessor& pp, const std::string& text) {
  const char* begin = text.c_str();
  clang::Lexer lexer(clang::SourceLocation(), pp.getLangOpts(), begin, begin, begin + text.size());
  clang::Token token;
  lexer.LexFromRawLexer(token);
  while (token.isNot(clang::tok::eof)) {
    bool directive = token.is(clang::tok::hash) && token.isAtStartOfLine();
    lexer.LexFromRawLexer(token);
    if (!directive || !token.is(clang::tok::raw_identifier)) continue;
    llvm::StringRef kind = token.getRawIdentifier();
    if (kind != "include" && kind != "import" && kind != "include_next") continue;
    if (kind == "include_next") return "it has an #include_next";
    lexer.setParsingPreprocessorDirective(true);
    lexer.LexIncludeFilename(token);
    lexer.setParsingPreprocessorDirective(false);
    if (!token.is(clang::tok::header_name)) return "it includes a header named by a macro";
    std::string spelled(token.getLiteralData(), token.getLength());
    if (spelled.front() == '"') return "it includes " + spelled + ", a header beside the lab";
    clang::HeaderSearch& search = pp.getHeaderSearchInfo();
#if LLVM_VERSION_MAJOR >= 17
    clang::ConstSearchDirIterator found_in = nullptr;
#else
    const clang::DirectoryLookup* found_in = nullptr;
#endif
    auto file =
        search.LookupFile(spelled.substr(1, spelled.size() - 2), {}, /*isAngled=*/true, nullptr,
                          &found_in, {}, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (!file) return "it includes " + spelled + ", which is not found";
#if LLVM_VERSION_MAJOR >= 17
    bool read = pp.alreadyIncluded(*file);
#else
    search.getFileInfo(&file->getFileEntry());  // what the precompiled header says of it
    bool read = pp.alreadyIncluded(&file->getFileEntry());
#endif
    if (!read) return "it includes " + spelled + ", a header that no earlier compile had included";
    lexer.LexFromRawLexer(token);
  }
  return "";
}

std::string mangled_free(const llvm::Module& m) {  // a used symbol no loaded library defines
  for (const llvm::Function& f : m.functions())
    if (f.isDeclaration() && !f.use_empty() && !f.isIntrinsic() &&
        !dlsym(RTLD_DEFAULT, f.getName().str().c_str()))
      return f.getName().str();
  for (const llvm::GlobalVariable& g : m.globals())
    if (g.isDeclaration() && !g.use_empty() && !dlsym(RTLD_DEFAULT, g.getName().str().c_str()))
      return g.getName().str();
  return "";
}

// What a later part may take from a module: its inline and template functions, and the
// headers' internal ones under their own name; none of the lab's own code, no constructor.
std::unique_ptr<llvm::Module> shareable(const llvm::Module& m) {
  std::unique_ptr<llvm::Module> shared = llvm::CloneModule(m);
  for (llvm::Function& f : shared->functions()) {
    if (f.isDeclaration()) continue;
    bool header_internal = f.hasLocalLinkage() && f.getName().str().rfind("_Z", 0) == 0;
    if (header_internal || f.hasLinkOnceLinkage() || f.hasWeakLinkage()) {
      f.setLinkage(llvm::GlobalValue::WeakODRLinkage);  // kept by every link into the library
      f.setVisibility(llvm::GlobalValue::HiddenVisibility);
    } else {
      f.deleteBody();
      f.setComdat(nullptr);
    }
  }
  for (llvm::GlobalVariable& g : shared->globals()) {
    if (!g.hasInitializer() || g.hasLocalLinkage() || g.hasLinkOnceLinkage() || g.hasWeakLinkage())
      continue;
    g.setInitializer(nullptr);
    g.setLinkage(llvm::GlobalValue::ExternalLinkage);
    g.setComdat(nullptr);
  }
  if (llvm::GlobalVariable* ctors = shared->getGlobalVariable("llvm.global_ctors"))
    ctors->eraseFromParent();
  return shared;
}

// The library's definitions a part uses, and those they use in turn (through code, constant
// expressions and initializers: a vtable names its functions).
std::set<const llvm::GlobalValue*> used_by(const llvm::Module& part, const llvm::Module& library) {
  std::set<const llvm::GlobalValue*> needed;
  std::set<const llvm::Constant*> seen;
  std::vector<const llvm::GlobalValue*> work;
  std::function<void(const llvm::Value*)> use = [&](const llvm::Value* v) {
    if (auto* g = llvm::dyn_cast<llvm::GlobalValue>(v)) {
      if (!g->isDeclaration() && needed.insert(g).second) work.push_back(g);
    } else if (auto* c = llvm::dyn_cast<llvm::Constant>(v); c && seen.insert(c).second) {
      for (const llvm::Use& operand : c->operands()) use(operand.get());
    }
  };
  for (const llvm::GlobalValue& g : part.global_values())
    if (g.isDeclaration() && g.hasName())
      if (const llvm::GlobalValue* defined = library.getNamedValue(g.getName())) use(defined);
  while (!work.empty()) {
    const llvm::GlobalValue* g = work.back();
    work.pop_back();
    if (auto* f = llvm::dyn_cast<llvm::Function>(g)) {
      for (const llvm::BasicBlock& block : *f)
        for (const llvm::Instruction& i : block)
          for (const llvm::Use& operand : i.operands()) use(operand.get());
      if (f->hasPersonalityFn()) use(f->getPersonalityFn());
    } else if (auto* v = llvm::dyn_cast<llvm::GlobalVariable>(g); v && v->hasInitializer()) {
      use(v->getInitializer());
    } else if (auto* a = llvm::dyn_cast<llvm::GlobalAlias>(g)) {
      use(a->getAliasee());
    }
  }
  return needed;
}

// What a part takes from the library: a copy of the functions it uses (and theirs), the rest
// declarations. Copying the whole library cost a save more than compiling a small lab.
std::unique_ptr<llvm::Module> library_for(const llvm::Module& part, const llvm::Module& library) {
  std::set<const llvm::GlobalValue*> needed = used_by(part, library);
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(
      library, map, [&needed](const llvm::GlobalValue* g) { return needed.count(g) > 0; });
  for (llvm::GlobalObject& g : copy->global_objects())
    if (g.isDeclaration()) g.setComdat(nullptr);  // a declaration is in no comdat
  return copy;
}

}  // namespace

struct lab04_resident {
  std::unique_ptr<clang::Interpreter> interpreter;
  Said* said = nullptr;                   // owned by the diagnostics engine
  Outliving* outliving = nullptr;         // owned by the preprocessor
  std::unique_ptr<llvm::Module> library;  // what earlier parts and the supply emitted
  std::unique_ptr<llvm::orc::LLJIT> jit;  // links each part, in this process
  llvm::orc::JITDylib* linked = nullptr;  // the last part's code
  int parts = 0;
  bool broken = false;  // a part failed: this compiler is not used again
  std::string supply;   // bitcode of a normal compile, read at the next compile
  std::string why;
};

namespace {

// A name of the part that would have overloaded, or been hidden by, a name outside it: the
// global namespace's, or one a using-directive of the part brings in. The part's anonymous
// and inline namespaces and its extern "C" blocks are the part's scope too.
std::string overloaded_name(clang::DeclContext* scope,
                            const std::vector<clang::DeclContext*>& outside) {
  for (clang::Decl* d : scope->decls()) {
    auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d);
    if ((ns && (ns->isAnonymousNamespace() || ns->isInline())) ||
        llvm::isa<clang::LinkageSpecDecl>(d)) {
      if (std::string name = overloaded_name(llvm::cast<clang::DeclContext>(d), outside);
          !name.empty())
        return name;
      continue;
    }
    auto* named = llvm::dyn_cast<clang::NamedDecl>(d);
    if (!named || !named->getDeclName() || llvm::isa<clang::UsingDirectiveDecl>(d)) continue;
    for (clang::DeclContext* where : outside)
      if (!where->lookup(named->getDeclName()).empty()) return named->getNameAsString();
  }
  return "";
}

std::string overloaded_name(clang::ASTContext& ctx, clang::NamespaceDecl* part) {
  std::vector<clang::DeclContext*> outside = {ctx.getTranslationUnitDecl()->getPrimaryContext()};
  for (clang::UsingDirectiveDecl* u : part->using_directives())
    if (clang::NamespaceDecl* ns = u->getNominatedNamespace()) outside.push_back(ns);
  return overloaded_name(part, outside);
}

clang::NamespaceDecl* part_namespace(clang::ASTContext& ctx, const std::string& name) {
  auto found = ctx.getTranslationUnitDecl()->getPrimaryContext()->lookup(&ctx.Idents.get(name));
  for (clang::NamedDecl* d : found)
    if (auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) return ns;
  return nullptr;
}

void add_to_library(lab04_resident& r, std::unique_ptr<llvm::Module> shared) {
  if (!r.library)
    r.library = std::move(shared);
  else if (llvm::Linker::linkModules(*r.library, std::move(shared)))
    r.broken = true;
}

void add_supply(lab04_resident& r, llvm::LLVMContext& context) {
  if (r.supply.empty()) return;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> normal = llvm::parseIRFile(r.supply, error, context);
  r.supply.clear();
  if (normal) add_to_library(r, shareable(*normal));
}

// The part's constructors, gathered into one function that the run calls (a part is linked
// in the watch, where none of the lab may run).
void gather_constructors(llvm::Module& m, const std::string& name) {
  std::vector<std::pair<uint64_t, llvm::Function*>> ctors;
  llvm::GlobalVariable* list = m.getGlobalVariable("llvm.global_ctors");
  if (list && list->hasInitializer())
    if (auto* entries = llvm::dyn_cast<llvm::ConstantArray>(list->getInitializer()))
      for (llvm::Value* entry : entries->operands())
        if (auto* e = llvm::dyn_cast<llvm::ConstantStruct>(entry))
          if (auto* f = llvm::dyn_cast<llvm::Function>(e->getOperand(1)->stripPointerCasts()))
            ctors.push_back({llvm::cast<llvm::ConstantInt>(e->getOperand(0))->getZExtValue(), f});
  std::stable_sort(ctors.begin(), ctors.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  llvm::LLVMContext& c = m.getContext();
  auto* init = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(c), false),
                                      llvm::GlobalValue::ExternalLinkage, name, m);
  llvm::IRBuilder<> code(llvm::BasicBlock::Create(c, "", init));
  for (auto& ctor : ctors) code.CreateCall(ctor.second);
  code.CreateRetVoid();
  if (list) list->eraseFromParent();
}

bool object_code(llvm::Module& m, llvm::SmallVectorImpl<char>& object, std::string& why) {
  std::string error;
  const auto& triple = m.getTargetTriple();  // a string, a Triple from LLVM 21
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return why = error, false;
#if LLVM_VERSION_MAJOR >= 18
  const auto level = llvm::CodeGenOptLevel::None;
  const auto file = llvm::CodeGenFileType::ObjectFile;
  const auto no_code_model = std::nullopt;
#else
  const auto level = llvm::CodeGenOpt::None;
  const auto file = llvm::CGFT_ObjectFile;
  const auto no_code_model = llvm::None;
#endif
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "x86-64", "", llvm::TargetOptions(), llvm::Reloc::PIC_, no_code_model, level));
  llvm::raw_svector_ostream out(object);
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr, file))
    return why = "no object writer for this target", false;
  passes.run(m);
  return true;
}

}  // namespace

extern "C" {

struct lab04_entry {
  void (*init)();            // the part's constructors
  int (*main)(int, char**);  // its main, as main(argc, argv)
};

}  // extern "C"

namespace {

// Links the part's object in this process (LLVM's JIT linker: no linker to start, no library
// to load), in a library of its own; the previous part's is removed, no run of it being left.
bool link_part(lab04_resident& r, int n, llvm::SmallVectorImpl<char>& code, lab04_entry* entry) {
  auto failed = [&r](llvm::Error e) { return r.why = llvm::toString(std::move(e)), false; };
  if (!r.jit) {
    auto jit = llvm::orc::LLJITBuilder().create();
    if (!jit) return failed(jit.takeError());
    r.jit = std::move(*jit);
  }
  llvm::orc::ExecutionSession& session = r.jit->getExecutionSession();
  if (r.linked) {
    if (llvm::Error e = session.removeJITDylib(*r.linked)) return failed(std::move(e));
    r.linked = nullptr;
  }
  auto library = session.createJITDylib("lab04_part" + std::to_string(n));
  if (!library) return failed(library.takeError());
  r.linked = &*library;
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      r.jit->getDataLayout().getGlobalPrefix());
  if (!process) return failed(process.takeError());
  r.linked->addGenerator(std::move(*process));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(code.data(), code.size()),
                                                     "lab04_part" + std::to_string(n));
  if (llvm::Error e = r.jit->addObjectFile(*r.linked, std::move(buffer)))
    return failed(std::move(e));
  auto init = r.jit->lookup(*r.linked, "lab04_init_" + std::to_string(n));
  if (!init) return failed(init.takeError());
  auto main = r.jit->lookup(*r.linked, "lab04_main_" + std::to_string(n));
  if (!main) return failed(main.takeError());
#if LLVM_VERSION_MAJOR >= 17
  entry->init = init->toPtr<void (*)()>();
  entry->main = main->toPtr<int (*)(int, char**)>();
#else
  entry->init = llvm::jitTargetAddressToFunction<void (*)()>(init->getAddress());
  entry->main = llvm::jitTargetAddressToFunction<int (*)(int, char**)>(main->getAddress());
#endif
  return true;
}

#define LAB_NAME_OF(f) LAB_NAME_OF_(f)
#define LAB_NAME_OF_(f) #f

// Registers this machine's target with clang's LLVM. LibTorch may carry an LLVM of its own and
// export that LLVM's C functions (Debian 13's does, for its tensor-expression compiler); the
// watch loads LibTorch first, so llvm::InitializeNativeTarget(), which calls them by name, would
// register the target in LibTorch's copy, and clang's would find none. They are taken from the
// library that holds clang's LLVM instead.
bool initialize_native_target() {
  Dl_info info{};
  void* llvm_library = nullptr;
  if (dladdr(reinterpret_cast<void*>(&llvm::TargetRegistry::targets), &info) && info.dli_fname)
    llvm_library = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!llvm_library) return false;
  for (const char* name : {LAB_NAME_OF(LLVM_NATIVE_TARGETINFO), LAB_NAME_OF(LLVM_NATIVE_TARGET),
                           LAB_NAME_OF(LLVM_NATIVE_TARGETMC), LAB_NAME_OF(LLVM_NATIVE_ASMPRINTER),
                           LAB_NAME_OF(LLVM_NATIVE_ASMPARSER)}) {
    auto initialize = reinterpret_cast<void (*)()>(dlsym(llvm_library, name));
    if (!initialize) return dlclose(llvm_library), false;
    initialize();
  }
  dlclose(llvm_library);  // (it stays loaded: clang's library needs it)
  return llvm::TargetRegistry::targets().begin() != llvm::TargetRegistry::targets().end();
}

}  // namespace

extern "C" {

// Starts the compiler with the lab's compile flags (the compiler, the output, the source and
// the dependency-file options left out). Null when it cannot start.
lab04_resident* lab04_resident_start(int argc, const char* const* argv) {
  if (!initialize_native_target()) return nullptr;
  std::vector<const char*> args(argv, argv + argc);
#if LLVM_VERSION_MAJOR >= 17
  // From clang 15 on, an incremental compiler is one with -fincremental-extensions, a language
  // option the header was built without (clang++'s compiles of the lab use it too), so loading
  // it would fail; it changes how new input is parsed, nothing of what the header holds.
  args.push_back("-Xclang");
  args.push_back("-fno-validate-pch");
  clang::IncrementalCompilerBuilder builder;
  builder.SetCompilerArgs(args);
  auto compiler = builder.CreateCpp();
#else
  auto compiler = clang::IncrementalCompilerBuilder::create(args);
#endif
  if (!compiler) return llvm::consumeError(compiler.takeError()), nullptr;
  auto* r = new lab04_resident;
  r->said = new Said;
  (*compiler)->getDiagnostics().setClient(r->said, /*ShouldOwnClient=*/true);
  auto interpreter = clang::Interpreter::create(std::move(*compiler));
  if (!interpreter) {
    llvm::consumeError(interpreter.takeError());
    delete r;
    return nullptr;
  }
  r->interpreter = std::move(*interpreter);
  // Its first part: a part that fails must never be the first (clang 14 then crashes). It
  // calls main(argc, argv) or main(), as the lab wrote it.
  auto first = r->interpreter->Parse(
      "#include <type_traits>\ntemplate <class F> int lab04_call(F f, int c, char** v) {\n"
      "  if constexpr (std::is_invocable_v<F, int, char**>) return f(c, v);\n"
      "  else return f();\n}\n");
  if (!first) {
    llvm::consumeError(first.takeError());
    delete r;
    return nullptr;
  }
  if (first->TheModule) add_to_library(*r, shareable(*first->TheModule));
  auto& ci = const_cast<clang::CompilerInstance&>(*r->interpreter->getCompilerInstance());
  auto outliving = std::make_unique<Outliving>(ci.getSourceManager());
  r->outliving = outliving.get();
  ci.getPreprocessor().addPPCallbacks(std::move(outliving));
  return r;
}

// A normal compile of the lab, as bitcode: the functions it emitted are added to the library
// at the next compile (bitcode is read into the interpreter's own LLVM context).
void lab04_resident_supply(lab04_resident* r, const char* bitcode) {
  if (r) r->supply = bitcode;
}

// Whether it can compile again (a failed part, or one that left something behind, ends it).
int lab04_resident_usable(lab04_resident* r) { return r && !r->broken; }

void lab04_resident_stop(lab04_resident* r) { delete r; }

// What lab04_resident_compile() did.
enum Compiled {
  kCompiled = 0,   // the object is written, and runs as the lab compiled alone would
  kClangSays = 1,  // an error or a warning: clang++ shows them as they are
  kRefused = 2,    // it could mean something else here than alone (*why says what)
  kLacking = 3,    // it needs a function no loaded library has: a normal compile of it has it
};

// Compiles `text`, the lab saved at `source`, and links it in this process: `entry` receives
// its constructors and its main, for a run to call (in a child: nothing of the lab runs here).
// Anything but kCompiled: the caller compiles it with clang++.
int lab04_resident_compile(lab04_resident* r, const char* text, const char* source,
                           lab04_entry* entry, const char** why) {
  *why = "";
  if (!r || r->broken) return kRefused;
  int n = ++r->parts;
  std::string part = "lab04_part" + std::to_string(n),
              entry_name = "lab04_main_" + std::to_string(n);
  std::string code;
  std::string quoted;
  for (const char* c = source; *c; ++c)
    quoted += (*c == '"' || *c == '\\') ? std::string("\\") + *c : std::string(1, *c);
  code += "namespace " + part + " {\n#line 1 \"" + quoted + "\"\n" + text + "\n}\n";
  code += "extern \"C\" int " + entry_name + "(int c, char** v) { return lab04_call(&" + part +
          "::main, c, v); }\n";
  clang::Preprocessor& pp =
      const_cast<clang::CompilerInstance&>(*r->interpreter->getCompilerInstance())
          .getPreprocessor();
  if (std::string refused = unparsable(pp, text); !refused.empty()) {
    r->why = refused;  // nothing was parsed: the compiler stays usable
    return *why = r->why.c_str(), kRefused;
  }
  r->said->count = 0;
  r->outliving->defined.clear();
  r->outliving->refused.clear();
  r->outliving->in_part = true;
  auto parsed = r->interpreter->Parse(code);
  r->outliving->in_part = false;
  if (!r->outliving->defined.empty()) {  // the lab's macros end with its part
    std::string undefine;
    for (const std::string& name : r->outliving->defined) undefine += "#undef " + name + "\n";
    if (auto cleaned = r->interpreter->Parse(undefine); !cleaned) {
      llvm::consumeError(cleaned.takeError());
      r->broken = true;
    }
  }
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    r->broken = true;  // clang 14 cannot take back a failed part
    return kClangSays;
  }
  if (!parsed->TheModule) return *why = "clang made no code", kRefused;
  llvm::Module& m = *parsed->TheModule;
  add_supply(*r, m.getContext());
  std::unique_ptr<llvm::Module> shared = shareable(m);
  bool linked = !r->library || !llvm::Linker::linkModules(m, library_for(m, *r->library),
                                                          llvm::Linker::Flags::LinkOnlyNeeded);
  add_to_library(*r, std::move(shared));
  if (!r->outliving->refused.empty()) {
    r->broken = true;  // what it left behind would change the next parts
    return *why = r->outliving->refused.c_str(), kRefused;
  }
  if (r->said->count > 0) return kClangSays;
  clang::ASTContext& ctx = r->interpreter->getCompilerInstance()->getASTContext();
  clang::NamespaceDecl* ns = part_namespace(ctx, part);
  if (!ns) return *why = "the lab's part was not found", kRefused;
  if (std::string name = overloaded_name(ctx, ns); !name.empty()) {
    r->why = "its name " + name + " is also a name outside it, which it would overload";
    return *why = r->why.c_str(), kRefused;
  }
  if (!linked) return *why = "its code could not be linked to the earlier saves'", kRefused;
  if (std::string missing = mangled_free(m); !missing.empty()) {
    // Said in words a student reads: an operator or a function, never its signature.
    bool op = llvm::demangle(missing).find("operator") != std::string::npos;
    r->why = std::string("it uses ") + (op ? "an operator" : "a function") +
             " of LibTorch's that the watch's compiler had not loaded yet (it has for the next saves)";
    return *why = r->why.c_str(), kLacking;
  }
  gather_constructors(m, "lab04_init_" + std::to_string(n));
  llvm::SmallVector<char, 0> object;
  if (!object_code(m, object, r->why)) return *why = r->why.c_str(), kRefused;
  if (!link_part(*r, n, object, entry)) return *why = r->why.c_str(), kRefused;
  return kCompiled;
}

}  // extern "C"
