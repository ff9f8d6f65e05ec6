//===- SplitCodegen.cpp - A module's kernels in parallel --------*- C++ -*-===//
//
// Below LLVM IR, a module with several kernels is split into parts that are
// optimised and code-generated independently, on a thread pool, and their
// outputs joined (NVPTX: one PTX module). The parts depend on the module
// alone, never on the number of threads, and are joined in a fixed order, so
// the output is the same bytes whatever the thread count and scheduling.
//
// The parts:
//
//   roots   each kernel, and each non-local function no kernel reaches, in
//           module order, in at most 8 groups of consecutive roots of about
//           the same size (instructions). A group's part defines its roots
//           and every function they reach; a device function reached from
//           several parts is defined in each, keeping its name in the first
//           and renamed `<name>$p<part>` (internal) in the others, so that
//           the optimiser may change each copy as it likes.
//   globals a module variable that is internal and used by the functions of
//           one part only is defined there (the optimiser sees all its
//           uses; NVPTX may demote a `.shared` one into its kernel); every
//           other variable is an external declaration in the parts and is
//           defined in one last part that holds only variables and is not
//           optimised (the optimiser would drop variables it sees unused).
//
// Each part travels as bitcode, so that every part is parsed into its own
// LLVMContext and compiled with its own TargetMachine: no two threads share
// either. Symbols the optimiser creates in a part (switch tables,
// specialised functions) are local and renamed `<name>$p<part>` apart.
//
//===----------------------------------------------------------------------===//

#include "TargetCodegen.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <atomic>
#include <map>
#include <thread>

using namespace wooly;
using namespace wooly::detail;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

namespace {
/// The global values `c` refers to, through constant expressions and
/// aggregates.
void collectConstantRefs(const llvm::Constant *c,
                         llvm::SmallPtrSetImpl<const llvm::Constant *> &seen,
                         llvm::SetVector<const llvm::GlobalValue *> &out) {
  if (!seen.insert(c).second)
    return;
  if (auto *gv = llvm::dyn_cast<llvm::GlobalValue>(c)) {
    out.insert(gv);
    return;
  }
  for (const llvm::Use &op : c->operands())
    if (auto *oc = llvm::dyn_cast<llvm::Constant>(op.get()))
      collectConstantRefs(oc, seen, out);
}

/// The global values `f`'s instructions refer to, in a fixed order.
llvm::SetVector<const llvm::GlobalValue *>
functionRefs(const llvm::Function &f) {
  llvm::SetVector<const llvm::GlobalValue *> out;
  llvm::SmallPtrSet<const llvm::Constant *, 32> seen;
  for (const llvm::BasicBlock &bb : f)
    for (const llvm::Instruction &inst : bb)
      for (const llvm::Use &op : inst.operands())
        if (auto *c = llvm::dyn_cast<llvm::Constant>(op.get()))
          collectConstantRefs(c, seen, out);
  return out;
}

bool isKernel(const llvm::Function &f) {
  return f.getCallingConv() == llvm::CallingConv::PTX_Kernel ||
         f.getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL;
}

/// Removes the declarations nothing in `m` uses.
void dropUnusedDeclarations(llvm::Module &m) {
  for (llvm::Function &f : llvm::make_early_inc_range(m.functions())) {
    f.removeDeadConstantUsers();
    if (f.isDeclaration() && f.use_empty())
      f.eraseFromParent();
  }
  for (llvm::GlobalVariable &g : llvm::make_early_inc_range(m.globals())) {
    g.removeDeadConstantUsers();
    if (g.isDeclaration() && g.use_empty())
      g.eraseFromParent();
  }
}

std::string partSuffix(unsigned part) { return "$p" + std::to_string(part); }

/// Compiles the parts of `parts` from `next` on until none is left; the
/// output of part i goes to outputs[i], or its error to errors[i]. Each part
/// gets a TargetMachine of its own: the backend keeps state across the
/// modules a TargetMachine compiles (NVPTX numbers call sequences and
/// prototypes on), which would make a part's output depend on the parts
/// compiled before it on the same thread.
void compileParts(const TargetCodegen &targetCodegen,
                  llvm::ArrayRef<ModulePart> parts, unsigned optLevel,
                  std::atomic<size_t> &next, std::vector<std::string> &outputs,
                  std::vector<std::string> &errors) {
  for (size_t i = next++; i < parts.size(); i = next++) {
    Expected<std::unique_ptr<llvm::TargetMachine>> tm =
        targetCodegen.createTargetMachine();
    if (!tm) {
      errors[i] = llvm::toString(tm.takeError());
      continue;
    }
    Expected<std::string> out =
        compileModulePart(targetCodegen, **tm, parts[i], i, optLevel);
    if (out)
      outputs[i] = std::move(*out);
    else
      errors[i] = llvm::toString(out.takeError());
  }
}
} // namespace

std::optional<std::vector<ModulePart>>
detail::splitModuleByRoots(llvm::Module &m, unsigned maxParts) {
  // One kernel (the common small module): nothing else to look at.
  unsigned numKernels = llvm::count_if(m, [](const llvm::Function &f) {
    return !f.isDeclaration() && isKernel(f);
  });
  if (numKernels < 2)
    return std::nullopt;
  if (!m.getModuleInlineAsm().empty() || !m.aliases().empty() ||
      !m.ifuncs().empty())
    return std::nullopt;
  // What variables' initializers refer to: variables only (a function
  // there would have to be defined with them).
  llvm::SmallPtrSet<const llvm::GlobalValue *, 8> initRefs;
  for (const llvm::GlobalVariable &g : m.globals()) {
    if (g.getName().starts_with("llvm."))
      return std::nullopt;
    if (!g.hasInitializer())
      continue;
    llvm::SetVector<const llvm::GlobalValue *> refs;
    llvm::SmallPtrSet<const llvm::Constant *, 8> seen;
    collectConstantRefs(g.getInitializer(), seen, refs);
    for (const llvm::GlobalValue *r : refs) {
      if (!llvm::isa<llvm::GlobalVariable>(r))
        return std::nullopt;
      initRefs.insert(r);
    }
  }

  // The functions each definition reaches.
  llvm::DenseMap<const llvm::Function *,
                 llvm::SetVector<const llvm::GlobalValue *>>
      refs;
  for (const llvm::Function &f : m)
    if (!f.isDeclaration())
      refs[&f] = functionRefs(f);
  auto closure = [&](const llvm::Function *root) {
    llvm::SetVector<const llvm::Function *> fns;
    fns.insert(root);
    for (size_t i = 0; i < fns.size(); ++i)
      for (const llvm::GlobalValue *r : refs.find(fns[i])->second)
        if (auto *f = llvm::dyn_cast<llvm::Function>(r))
          if (!f->isDeclaration())
            fns.insert(f);
    return fns;
  };

  // Kernels first, then the non-local functions no kernel reaches.
  llvm::SmallPtrSet<const llvm::Function *, 32> reached;
  for (const llvm::Function &f : m)
    if (!f.isDeclaration() && isKernel(f))
      for (const llvm::Function *g : closure(&f))
        reached.insert(g);
  std::vector<const llvm::Function *> roots;
  for (const llvm::Function &f : m)
    if (!f.isDeclaration() &&
        (isKernel(f) || (!f.hasLocalLinkage() && !reached.contains(&f))))
      roots.push_back(&f);

  // Private symbols are named apart by the backend (a private prefix),
  // which a declaration in another part would not have: internal instead.
  for (llvm::GlobalValue &g : m.global_values())
    if (g.hasPrivateLinkage())
      g.setLinkage(llvm::GlobalValue::InternalLinkage);

  // Consecutive roots in at most `maxParts` groups of about the same
  // number of instructions (what they reach): a part costs a pipeline and
  // a code generator of its own, so there are not more than threads can
  // use. A root goes to the group its middle instruction falls in.
  std::vector<llvm::SetVector<const llvm::Function *>> rootFns;
  std::vector<uint64_t> weights;
  uint64_t total = 0;
  for (const llvm::Function *root : roots) {
    rootFns.push_back(closure(root));
    uint64_t w = 1;
    for (const llvm::Function *f : rootFns.back())
      w += f->getInstructionCount();
    weights.push_back(w);
    total += w;
  }
  uint64_t numGroups = std::min<uint64_t>(roots.size(), std::max(1u, maxParts));
  std::vector<llvm::SetVector<const llvm::Function *>> partFns;
  uint64_t before = 0;
  int64_t lastGroup = -1;
  for (size_t r = 0; r < roots.size(); ++r) {
    int64_t group =
        int64_t((2 * before + weights[r]) * numGroups / (2 * total));
    before += weights[r];
    if (group != lastGroup)
      partFns.emplace_back();
    lastGroup = group;
    for (const llvm::Function *f : rootFns[r])
      partFns.back().insert(f);
  }
  size_t numParts = partFns.size();

  llvm::DenseMap<const llvm::Function *, unsigned> firstPart;
  llvm::DenseMap<const llvm::GlobalVariable *, llvm::SmallVector<unsigned, 2>>
      varParts;
  for (unsigned p = 0; p < numParts; ++p) {
    llvm::SmallPtrSet<const llvm::GlobalVariable *, 16> vars;
    for (const llvm::Function *f : partFns[p]) {
      firstPart.try_emplace(f, p);
      for (const llvm::GlobalValue *r : refs.find(f)->second)
        if (auto *g = llvm::dyn_cast<llvm::GlobalVariable>(r))
          if (vars.insert(g).second)
            varParts[g].push_back(p);
    }
  }
  // The part that defines each variable; numParts: the variables' part.
  auto owner = [&](const llvm::GlobalVariable *g) -> unsigned {
    auto it = varParts.find(g);
    if (g->hasLocalLinkage() && it != varParts.end() &&
        it->second.size() == 1 && !initRefs.contains(g))
      return it->second.front();
    return numParts;
  };

  std::vector<ModulePart> parts;
  auto addPart = [&](llvm::Module &part, bool optimize) {
    dropUnusedDeclarations(part);
    ModulePart out;
    out.optimize = optimize;
    llvm::raw_string_ostream os(out.bitcode);
    llvm::WriteBitcodeToFile(part, os);
    parts.push_back(std::move(out));
  };
  for (unsigned p = 0; p < numParts; ++p) {
    llvm::ValueToValueMapTy vmap;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(m, vmap, [&](const llvm::GlobalValue *gv) {
          if (auto *f = llvm::dyn_cast<llvm::Function>(gv))
            return partFns[p].contains(f);
          auto *g = llvm::dyn_cast<llvm::GlobalVariable>(gv);
          return g && owner(g) == p;
        });
    for (const llvm::Function *f : partFns[p]) {
      if (firstPart.lookup(f) == p)
        continue;
      auto *copy = llvm::cast<llvm::Function>(vmap[f]);
      copy->setLinkage(llvm::GlobalValue::InternalLinkage);
      copy->setName(f->getName() + partSuffix(p));
    }
    // Kernels of other parts were cloned as declarations.
    addPart(*part, /*optimize=*/true);
  }
  // The variables no part defines.
  bool anyShared =
      llvm::any_of(m.globals(), [&](const llvm::GlobalVariable &g) {
        return owner(&g) == numParts;
      });
  if (anyShared) {
    llvm::ValueToValueMapTy vmap;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(m, vmap, [&](const llvm::GlobalValue *gv) {
          auto *g = llvm::dyn_cast<llvm::GlobalVariable>(gv);
          return g && owner(g) == numParts;
        });
    // No function here uses its variables: only the module's own
    // declarations (dynamic `.shared`) are kept besides them.
    for (llvm::Function &f : llvm::make_early_inc_range(part->functions()))
      if (f.use_empty())
        f.eraseFromParent();
    for (llvm::GlobalVariable &g : m.globals())
      if (!g.isDeclaration() && owner(&g) != numParts)
        llvm::cast<llvm::GlobalVariable>(vmap[&g])->eraseFromParent();
    ModulePart out;
    out.optimize = false;
    llvm::raw_string_ostream os(out.bitcode);
    llvm::WriteBitcodeToFile(*part, os);
    parts.push_back(std::move(out));
  }
  return parts;
}

Expected<std::string>
detail::compileModulePart(const TargetCodegen &targetCodegen,
                          llvm::TargetMachine &tm, const ModulePart &part,
                          unsigned index, unsigned optLevel) {
  llvm::LLVMContext ctx;
  Expected<std::unique_ptr<llvm::Module>> m = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(part.bitcode, "part" + std::to_string(index)), ctx);
  if (!m)
    return m.takeError();
  if (part.optimize) {
    llvm::StringSet<> before;
    for (llvm::GlobalValue &g : (*m)->global_values())
      before.insert(g.getName());
    optimizeModule(**m, tm, optLevel, targetCodegen);
    for (llvm::GlobalValue &g : (*m)->global_values())
      if (g.hasLocalLinkage() && !before.contains(g.getName()))
        g.setName(g.getName() + partSuffix(index));
  }
  return emitCode(tm, **m, targetCodegen.fileType());
}

Expected<std::vector<std::string>>
detail::compileModuleParts(const TargetCodegen &targetCodegen,
                           llvm::ArrayRef<ModulePart> parts, unsigned optLevel,
                           unsigned threads) {
  std::vector<std::string> outputs(parts.size()), errors(parts.size());
  std::atomic<size_t> next{0};
  unsigned workers =
      std::max(1u, std::min<unsigned>(threads, unsigned(parts.size())));
  if (workers == 1) {
    compileParts(targetCodegen, parts, optLevel, next, outputs, errors);
  } else {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(workers));
    for (unsigned w = 0; w < workers; ++w)
      pool.async([&] {
        compileParts(targetCodegen, parts, optLevel, next, outputs, errors);
      });
    pool.wait();
  }
  std::string message;
  for (const std::string &e : errors)
    if (!e.empty())
      message += (message.empty() ? "" : "\n") + e;
  if (!message.empty())
    return llvm::createStringError(message);
  return outputs;
}

unsigned detail::defaultCompileThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return std::max(1u, std::min(n, 8u));
}

//===----------------------------------------------------------------------===//
// Joining PTX
//===----------------------------------------------------------------------===//

namespace {
/// One top-level statement of a PTX module as LLVM's NVPTX backend writes
/// it.
struct PTXItem {
  enum class Kind { Variable, FunctionDecl, FunctionDef };
  Kind kind;
  std::string name;
  /// The statement's text without the final newline; a function
  /// definition's with the comment lines before it.
  std::string text;
};

/// The identifier at `s[i]` (PTX: letters, digits, `_`, `$`, `%`).
StringRef identifierAt(StringRef s, size_t i) {
  size_t e = i;
  while (e < s.size() &&
         (llvm::isAlnum(s[e]) || s[e] == '_' || s[e] == '$' || s[e] == '%'))
    ++e;
  return s.slice(i, e);
}

/// The name a statement declares: a function's after `.func`/`.entry` and
/// its optional return parameters, a variable's first token that is not a
/// directive or a number.
std::string statementName(StringRef stmt, bool function) {
  if (function) {
    size_t at = stmt.find(".entry");
    if (at == StringRef::npos)
      at = stmt.find(".func");
    size_t i = stmt.find_first_not_of(" \t\n", stmt.find(' ', at));
    if (i != StringRef::npos && stmt[i] == '(') {
      // Return parameters.
      int depth = 0;
      for (; i < stmt.size(); ++i) {
        depth += stmt[i] == '(' ? 1 : stmt[i] == ')' ? -1 : 0;
        if (depth == 0)
          break;
      }
      i = stmt.find_first_not_of(" \t\n", i + 1);
    }
    return i == StringRef::npos ? "" : identifierAt(stmt, i).str();
  }
  StringRef rest = stmt;
  while (!rest.empty()) {
    rest = rest.ltrim(" \t\n");
    StringRef token = identifierAt(rest, 0);
    if (token.empty()) {
      if (rest.empty() || rest[0] != '.')
        break;
      // A directive: skip it.
      rest = rest.drop_front();
      rest = rest.drop_front(identifierAt(rest, 0).size());
      continue;
    }
    if (!llvm::isDigit(token[0]))
      return token.str();
    rest = rest.drop_front(token.size());
  }
  return "";
}

/// Splits `ptx` into its header (up to `.address_size`) and top-level
/// statements; an error for text it does not recognise.
Error parsePTX(StringRef ptx, std::string &header,
               std::vector<PTXItem> &items) {
  size_t headerEnd = ptx.find(".address_size");
  if (headerEnd == StringRef::npos)
    return llvm::createStringError("no .address_size in a part's PTX");
  headerEnd = ptx.find('\n', headerEnd);
  header = ptx.take_front(headerEnd).str();
  StringRef rest = ptx.drop_front(headerEnd);
  std::string comments;
  while (true) {
    rest = rest.ltrim(" \t\n");
    if (rest.empty())
      return Error::success();
    if (rest.starts_with("//")) {
      StringRef line = rest.take_until([](char c) { return c == '\n'; });
      comments += "\t" + line.str() + "\n";
      rest = rest.drop_front(line.size());
      continue;
    }
    // One statement: up to a `;` outside braces and parentheses, or for a
    // function definition the `}` that closes its body. Comments inside
    // are skipped.
    bool function = false;
    StringRef head = rest.take_until([](char c) { return c == '\n'; });
    for (StringRef kw : {".func", ".entry"})
      if (head.contains(kw))
        function = true;
    int depth = 0;
    size_t i = 0, end = StringRef::npos;
    bool body = false;
    for (; i < rest.size(); ++i) {
      char c = rest[i];
      if (c == '/' && i + 1 < rest.size() && rest[i + 1] == '/') {
        i = rest.find('\n', i);
        if (i == StringRef::npos)
          break;
        continue;
      }
      if (c == '(' || c == '{') {
        body |= c == '{' && depth == 0;
        ++depth;
      } else if (c == ')' || c == '}') {
        --depth;
        if (depth == 0 && c == '}' && function && body) {
          end = i + 1;
          break;
        }
      } else if (c == ';' && depth == 0) {
        end = i + 1;
        break;
      }
    }
    if (end == StringRef::npos)
      return llvm::createStringError("unterminated statement in a part's PTX");
    PTXItem item;
    item.kind = !function ? PTXItem::Kind::Variable
                : body    ? PTXItem::Kind::FunctionDef
                          : PTXItem::Kind::FunctionDecl;
    StringRef stmt = rest.take_front(end);
    item.name = statementName(stmt, function);
    if (item.name.empty())
      return llvm::createStringError("a statement without a name in a "
                                     "part's PTX: " +
                                     stmt.take_front(80));
    // The comments before declarations (`// .globl kernel` comes before
    // the declarations the backend writes just before the kernel) go with
    // the next function definition.
    item.text = stmt.str();
    if (item.kind == PTXItem::Kind::FunctionDef) {
      item.text = comments + item.text;
      comments.clear();
    }
    items.push_back(std::move(item));
    rest = rest.drop_front(end);
  }
}
} // namespace

Expected<std::string> detail::joinPTXParts(llvm::ArrayRef<std::string> parts) {
  if (parts.empty())
    return llvm::createStringError("no parts to join");
  std::string header;
  std::vector<std::vector<PTXItem>> partItems(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    std::string h;
    if (Error e = parsePTX(parts[p], h, partItems[p]))
      return std::move(e);
    if (p == 0)
      header = h;
    else if (h != header)
      return llvm::createStringError("the parts' PTX headers differ");
  }
  // Each variable is defined by one part (declared, `.extern`, in the
  // others); a variable only declared everywhere is a declaration of the
  // module (dynamic `.shared`), kept once.
  std::map<std::string, std::pair<size_t, size_t>> variableAt;
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t i = 0; i < partItems[p].size(); ++i) {
      const PTXItem &item = partItems[p][i];
      if (item.kind != PTXItem::Kind::Variable)
        continue;
      bool isDecl = StringRef(item.text).contains(".extern ");
      auto [it, inserted] = variableAt.try_emplace(item.name, p, i);
      if (!inserted && !isDecl) {
        const PTXItem &prev = partItems[it->second.first][it->second.second];
        if (!StringRef(prev.text).contains(".extern "))
          return llvm::createStringError("variable '" + item.name +
                                         "' is defined by two parts");
        it->second = {p, i};
      }
    }
  std::string out = header + "\n";
  // Function declarations first (each once: the same text everywhere), then
  // the variables, then each part's functions in part order.
  std::map<std::string, std::string> declared;
  for (const std::vector<PTXItem> &items : partItems)
    for (const PTXItem &item : items) {
      if (item.kind != PTXItem::Kind::FunctionDecl)
        continue;
      auto [it, inserted] = declared.try_emplace(item.name, item.text);
      if (inserted)
        out += "\n" + item.text + "\n";
      else if (it->second != item.text)
        return llvm::createStringError("function '" + item.name +
                                       "' is declared differently by two "
                                       "parts");
    }
  // The variables' part comes last: its variables go first (the
  // initializers of the others may refer to them, not the reverse); within
  // a part, the backend's order.
  for (size_t p = parts.size(); p-- > 0;)
    for (size_t i = 0; i < partItems[p].size(); ++i) {
      const PTXItem &item = partItems[p][i];
      if (item.kind == PTXItem::Kind::Variable &&
          variableAt[item.name] == std::make_pair(p, i))
        out += "\n" + item.text + "\n";
    }
  llvm::StringSet<> defined;
  for (const std::vector<PTXItem> &items : partItems)
    for (const PTXItem &item : items) {
      if (item.kind != PTXItem::Kind::FunctionDef)
        continue;
      if (!defined.insert(item.name).second)
        return llvm::createStringError("function '" + item.name +
                                       "' is defined by two parts");
      out += "\n" + item.text + "\n";
    }
  return out;
}
