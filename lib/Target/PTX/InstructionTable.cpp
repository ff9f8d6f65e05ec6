//===- InstructionTable.cpp - PTX opcode table and modifier checks -*- C++
//-*-===//
//
// Builds the opcode table of PTXInstructions.def once, finds an
// instruction's row and checks its modifiers against it: a modifier the
// opcode does not take is a located error, as is one that PTX has but the
// importer does not implement yet.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/ADT/StringMap.h"

#include <atomic>

using namespace mlir;
using namespace mlir::wooly;
using namespace mlir::wooly::ptx;
using llvm::StringRef;

/// Adds each space-separated word of `words` to `info` as `kind`.
static void addModifiers(InstructionInfo &info, StringRef words,
                         ModifierKind kind) {
  SmallVector<StringRef> split;
  words.split(split, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef w : split) {
    bool inserted = info.modifiers.insert(w, kind).second;
    assert(inserted && "modifier listed twice for one opcode");
    (void)inserted;
  }
}

const InstructionInfo *Importer::lookupInstruction(StringRef opcode) {
  static const ShortStringMap<InstructionInfo> table = [] {
    ShortStringMap<InstructionInfo> t;
    auto add = [&](StringRef spelling, Opcode opcode,
                   InstructionInfo::Handler handler, unsigned flags,
                   unsigned maxTypes, StringRef handled, StringRef ignored,
                   StringRef unsupported) {
      auto [row, inserted] = t.insert(spelling, InstructionInfo());
      assert(inserted && "opcode listed twice");
      (void)inserted;
      InstructionInfo &info = *row;
      info.opcode = opcode;
      info.handler = handler;
      info.flags = flags;
      info.maxTypes = maxTypes;
      addModifiers(info, handled, ModifierKind::Handled);
      addModifiers(info, ignored, ModifierKind::Ignored);
      addModifiers(info, unsupported, ModifierKind::Unsupported);
      if (maxTypes)
        for (uint32_t i = 0; i <= getMaxEnumValForScalarType(); ++i)
          if (auto s = symbolizeScalarType(i);
              s && (*s != ScalarType::b1 || opcode == Opcode::Mma ||
                    opcode == Opcode::Wmma))
            info.modifiers.insert(stringifyScalarType(*s), ModifierKind::Type);
    };
#define PTX_INSTRUCTION(Id, Spelling, Handler, Flags, MaxTypes, Modifiers,     \
                        Ignored, Unsupported)                                  \
  add(Spelling, Opcode::Id, &Importer::Handler, Flags, MaxTypes, Modifiers,    \
      Ignored, Unsupported);
#include "PTXInstructions.def"
    return t;
  }();
  return table.find(opcode);
}

/// Returns `inst` as written, without operands: `ld.global.v2.f32`.
unsigned Importer::nextOpSlot() {
  static std::atomic<unsigned> next{0};
  return next++;
}

static std::string spell(const Instruction &inst) {
  std::string full = inst.opcode.str();
  for (StringRef m : inst.mods)
    full += "." + m.str();
  return full;
}

LogicalResult Importer::unknownModifier(const Instruction &inst, StringRef m) {
  // Modifiers point into the buffer, after their dot.
  return error(m.data() - 1,
               "unknown modifier '." + m + "' in '" + spell(inst) + "'");
}

LogicalResult Importer::checkTypeCount(const Instruction &inst,
                                       unsigned maxTypes) {
  unsigned types = 0;
  for (StringRef m : inst.mods)
    if (symbolizeScalarType(m) && ++types > maxTypes)
      return error(m.data() - 1, "too many type modifiers in '" + spell(inst) +
                                     "': '" + inst.opcode + "' takes " +
                                     Twine(maxTypes));
  return success();
}

namespace {
/// Classes of modifiers of which an instruction takes at most one (with
/// two, its handler would pick one silently), as bits: `lo` and `hi` are
/// comparisons (`setp.lo`) and result halves (`mul.hi`).
enum Exclusive : unsigned {
  kRounding = 1,
  kVector = 2,
  kComparison = 4,
  kScope = 8,
  kOrder = 16,
  kOperation = 32,
  kHalf = 64,
};

/// The classes of modifier `m` (0 for none).
unsigned exclusiveClasses(StringRef m) {
  static const llvm::StringMap<unsigned> classes = [] {
    llvm::StringMap<unsigned> c;
    auto add = [&](unsigned k, std::initializer_list<StringRef> ms) {
      for (StringRef m : ms)
        c[m] |= k;
    };
    add(kRounding, {"rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi",
                    "rs", "approx", "full"});
    add(kVector, {"v2", "v4", "v8"});
    add(kComparison,
        {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ",
         "neu", "ltu", "leu", "gtu", "geu", "num", "nan"});
    add(kScope, {"cta", "cluster", "gpu", "sys"});
    add(kOrder,
        {"weak", "relaxed", "acquire", "release", "acq_rel", "sc", "volatile"});
    add(kOperation,
        {"add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas"});
    add(kHalf, {"lo", "hi", "wide"});
    return c;
  }();
  auto it = classes.find(m);
  return it == classes.end() ? 0 : it->second;
}

/// The words of an error about two modifiers of the classes `k`.
StringRef className(unsigned k) {
  if (k & kRounding)
    return "rounding modes";
  if (k & kVector)
    return "vector widths";
  if (k & kComparison)
    return "comparisons";
  if (k & kScope)
    return "scopes";
  if (k & kOrder)
    return "memory orders";
  if (k & kOperation)
    return "operations";
  return "result halves";
}
} // namespace

LogicalResult Importer::checkModifiers(const Instruction &inst,
                                       const InstructionInfo &info) {
  unsigned types = 0;
  // The exclusive classes of the modifiers seen so far.
  SmallVector<unsigned, 8> classes;
  for (auto [i, m] : llvm::enumerate(inst.mods)) {
    const ModifierKind *kind = info.modifiers.find(m);
    if (!kind)
      return unknownModifier(inst, m);
    classes.push_back(0);
    if (*kind == ModifierKind::Handled || *kind == ModifierKind::Ignored) {
      // The same modifier twice, or two of one exclusive class (`.rn.rz`,
      // `.v2.v4`, `.eq.lt`, `.relaxed.acquire`...). The layouts of wmma
      // and mma (`.row.row`) are an operand each, so they may repeat.
      unsigned k = classes.back() = exclusiveClasses(m);
      for (unsigned j = 0; j < i; ++j) {
        StringRef earlier = inst.mods[j];
        if (earlier == m && m != "row" && m != "col")
          return error(m.data() - 1, "repeated modifier '." + m + "' in '" +
                                         spell(inst) + "'");
        if (unsigned both = k & classes[j])
          return error(m.data() - 1,
                       "conflicting modifiers '." + earlier + "' and '." + m +
                           "' in '" + spell(inst) + "': it takes one of the " +
                           className(both));
      }
    }
    switch (*kind) {
    case ModifierKind::Handled:
    case ModifierKind::Ignored:
      break;
    case ModifierKind::Type:
      if (++types > info.maxTypes)
        return checkTypeCount(inst, info.maxTypes);
      break;
    case ModifierKind::Unsupported:
      return error(m.data() - 1, "unsupported PTX instruction '" + spell(inst) +
                                     "': '." + m + "' is not supported yet");
    }
  }
  return success();
}

LogicalResult Importer::unsupported(Instruction &inst) {
  return error(inst.loc, "unsupported PTX instruction '" + spell(inst) + "'");
}
