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
          if (auto s = symbolizeScalarType(i))
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

LogicalResult Importer::checkModifiers(const Instruction &inst,
                                       const InstructionInfo &info) {
  unsigned types = 0;
  for (StringRef m : inst.mods) {
    const ModifierKind *kind = info.modifiers.find(m);
    if (!kind)
      return unknownModifier(inst, m);
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
