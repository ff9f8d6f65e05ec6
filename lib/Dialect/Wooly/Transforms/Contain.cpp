//===- Contain.cpp - A tenant's faults end its launch, not the device -----===//
//
// wooly-contain: what would take a device context down (or hold a device
// forever) ends the kernel's launch with an error code that the server
// reports to the kernel's tenant instead.
//
// Every kernel takes one more launch parameter, role `launch_status` (u64:
// the device address of a status record, or 0 for none), and every device
// function takes it as a trailing argument, passed on by each call. The
// record (kContainRecordBytes; its status word zeroed before the launch,
// the rest written only by the fault that sets it):
//
//   offset  0  u32  status: 0 running; 1 stopped by the host (the watchdog);
//                   2 trap, 3 brkpt, 4 failed assertion, 5 misaligned
//                   address (wooly::ContainStatus)
//   offset  4  u32  assertion: the line
//   offset  8  u64  assertion: the message; misaligned: the address
//   offset 16  u64  assertion: the file name
//   offset 24  u64  assertion: the function name
//   offset 32  u32  x3 the faulting thread's %ctaid
//   offset 44  u32  x3 its %tid
//
// What the pass does (each part an option, all on by default):
//
//   - watchdog: at the head of every loop (the target of a CFG back edge: a
//     successor that dominates its predecessor) the thread reads the status
//     (a volatile global load) and exits when it is not 0. So the host
//     stops a kernel that runs past its time budget within one loop
//     iteration of each thread, and a trap of one thread stops the others
//     as a trap does on the hardware.
//   - traps: `trap`, `brkpt` and calls of CUDA's `__assertfail` set the
//     status (a compare-and-swap from 0: the first fault wins, and only its
//     thread fills in the details) and exit the thread. Exited threads do
//     not hold up a block-wide barrier (PTX `exit`), so the rest of the
//     block ends at its next poll or at the end.
//   - alignment: a load, store or atomic of `n` bytes (n > 1, all of a
//     vector) in any state space but `.param` whose address is not a
//     multiple of `n` sets status 5 with the address instead of running
//     (the hardware's "misaligned address", which ends the context).
//
// With status address 0 (a launch that did not ask for containment) every
// site runs as written. Refused with a located error: indirect calls (the
// callee would not get the record). Recursion without loops is not polled.
//
//===----------------------------------------------------------------------===//

#include "VirtualBlocks.h"

#include "Wooly/Dialect/Wooly/Analysis/WaitLoops.h"
#include "Wooly/Dialect/Wooly/IR/Wooly.h"
#include "Wooly/Dialect/Wooly/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::wooly {
#define GEN_PASS_DEF_WOOLYCONTAIN
#include "Wooly/Dialect/Wooly/Transforms/Passes.h.inc"
} // namespace mlir::wooly

using namespace mlir;
using namespace mlir::wooly;

namespace {

/// ContainStatus values (include/Wooly/Runtime/Launch.h).
enum : int32_t { kTrap = 2, kBrkpt = 3, kAssert = 4, kMisaligned = 5 };

/// One function's containment: its status value, and the block every fault
/// site branches to.
class FunctionContainer {
public:
  FunctionContainer(FuncOp func, Value status) : func(func), status(status) {}

  /// Inserts the poll at the top of loop header `header`: its operations
  /// move to a new block, entered unless the status says stop.
  void poll(Block *header) {
    Location loc = func.getLoc();
    Block *rest = header->splitBlock(header->begin());
    Region *region = header->getParent();
    Block *check = new Block();
    Block *stop = new Block();
    region->getBlocks().insertAfter(Region::iterator(header), check);
    region->getBlocks().insertAfter(Region::iterator(check), stop);

    OpBuilder b(func.getContext());
    b.setInsertionPointToEnd(header);
    cf::CondBranchOp::create(b, loc, hasStatus(), check, ValueRange{}, rest,
                             ValueRange{});
    b.setInsertionPointToEnd(check);
    auto poll = LoadOp::create(
        b, loc, TypeRange{b.getI32Type()},
        StateSpaceAttr::get(b.getContext(), StateSpace::global), status,
        CacheOpAttr(), b.getUnitAttr(), MemOrderAttr(), MemScopeAttr());
    // The loop does not wait for it (findWaitLoops).
    poll->setAttr(kNoWaitAttr, b.getUnitAttr());
    Value v = poll.getResult(0);
    Value raised = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                         constant(b, loc, 0, 32));
    cf::CondBranchOp::create(b, loc, raised, stop, ValueRange{}, rest,
                             ValueRange{});
    b.setInsertionPointToEnd(stop);
    ExitOp::create(b, loc);
  }

  /// `trap` sets status 2 and exits; as written without a status record.
  void trap(TrapOp op) {
    Block *block = op->getBlock();
    Block *orig = block->splitBlock(op->getIterator());
    OpBuilder b(op);
    b.setInsertionPointToEnd(block);
    Location loc = op.getLoc();
    raiseIf(b, loc, hasStatus(), kTrap, {}, orig);
  }

  /// `brkpt` and `call @__assertfail(...)`: status 3 or 4 and exit; as
  /// written without a status record.
  void fault(Operation *op, int32_t code, ValueRange details) {
    Block *block = op->getBlock();
    Block *rest = block->splitBlock(std::next(op->getIterator()));
    Block *orig = block->splitBlock(op->getIterator());
    OpBuilder b(op->getContext());
    b.setInsertionPointToEnd(orig);
    cf::BranchOp::create(b, op->getLoc(), rest);
    b.setInsertionPointToEnd(block);
    raiseIf(b, op->getLoc(), hasStatus(), code, details, orig);
  }

  /// A memory access `op` of `bytes` at `addr`: status 5 when misaligned.
  void checkAlignment(Operation *op, Value addr, uint64_t bytes) {
    Block *block = op->getBlock();
    Block *rest = block->splitBlock(op->getIterator());
    OpBuilder b(op->getContext());
    b.setInsertionPointToEnd(block);
    Location loc = op->getLoc();
    unsigned width = addr.getType().getIntOrFloatBitWidth();
    Value low =
        arith::AndIOp::create(b, loc, addr, constant(b, loc, bytes - 1, width));
    Value bad = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, low,
                                      constant(b, loc, 0, width));
    bad = arith::AndIOp::create(b, loc, bad, hasStatus());
    Value addr64 =
        width == 64
            ? addr
            : arith::ExtUIOp::create(b, loc, b.getI64Type(), addr).getResult();
    raiseIf(b, loc, bad, kMisaligned, {constant(b, loc, 0, 32), addr64}, rest);
  }

private:
  static Value constant(OpBuilder &b, Location loc, int64_t v, unsigned bits) {
    return arith::ConstantIntOp::create(b, loc, v, bits);
  }

  /// `status != 0`, computed once at the top of the function.
  Value hasStatus() {
    if (statusNonZero)
      return statusNonZero;
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    Location loc = func.getLoc();
    statusNonZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                          status, constant(b, loc, 0, 64));
    return statusNonZero;
  }

  /// Ends the current block with a branch to the raise block (with `code`
  /// and `details`: line (i32), then up to three u64s) when `cond`, else to
  /// `otherwise`.
  void raiseIf(OpBuilder &b, Location loc, Value cond, int32_t code,
               ValueRange details, Block *otherwise) {
    SmallVector<Value> args{constant(b, loc, code, 32)};
    args.push_back(details.empty() ? constant(b, loc, 0, 32) : details[0]);
    for (unsigned i = 1; i < 4; ++i)
      args.push_back(i < details.size() ? details[i] : constant(b, loc, 0, 64));
    cf::CondBranchOp::create(b, loc, cond, raiseBlock(), args, otherwise,
                             ValueRange{});
  }

  /// The function's one raise block, made at its first use:
  /// ^raise(%code: i32, %line: i32, %a: i64, %b: i64, %c: i64): the first
  /// fault of the launch records its details; the thread exits.
  Block *raiseBlock() {
    if (raise)
      return raise;
    MLIRContext *ctx = func.getContext();
    Location loc = func.getLoc();
    OpBuilder b(ctx);
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    raise = new Block();
    Block *fill = new Block();
    Block *out = new Block();
    Region &body = func.getBody();
    body.push_back(raise);
    body.push_back(fill);
    body.push_back(out);
    Value code = raise->addArgument(i32, loc);
    SmallVector<Value> fields{raise->addArgument(i32, loc)};
    for (int i = 0; i < 3; ++i)
      fields.push_back(raise->addArgument(i64, loc));

    auto global = StateSpaceAttr::get(ctx, StateSpace::global);
    b.setInsertionPointToEnd(raise);
    Value old = AtomOp::create(b, loc, i32, global,
                               AtomicOpAttr::get(ctx, AtomicOp::cas), status,
                               ValueRange{constant(b, loc, 0, 32), code},
                               MemOrderAttr(), MemScopeAttr());
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, old,
                                        constant(b, loc, 0, 32));
    cf::CondBranchOp::create(b, loc, first, fill, ValueRange{}, out,
                             ValueRange{});

    b.setInsertionPointToEnd(fill);
    auto store = [&](int64_t offset, Value v) {
      Value at =
          arith::AddIOp::create(b, loc, status, constant(b, loc, offset, 64));
      StoreOp::create(b, loc, global, at, ValueRange{v}, CacheOpAttr(),
                      UnitAttr(), MemOrderAttr(), MemScopeAttr());
    };
    store(4, fields[0]);
    store(8, fields[1]);
    store(16, fields[2]);
    store(24, fields[3]);
    for (int d = 0; d < 3; ++d) {
      auto dim = DimAttr::get(ctx, static_cast<Dim>(d));
      store(32 + 4 * d,
            SRegOp::create(b, loc, i32, SpecialReg::ctaid, dim).getResult());
      store(44 + 4 * d,
            SRegOp::create(b, loc, i32, SpecialReg::tid, dim).getResult());
    }
    cf::BranchOp::create(b, loc, out);

    b.setInsertionPointToEnd(out);
    ExitOp::create(b, loc);
    return raise;
  }

  FuncOp func;
  Value status;
  Value statusNonZero;
  Block *raise = nullptr;
};

/// The address and byte count of a memory access whose alignment the
/// hardware checks (0 bytes: none).
std::pair<Value, uint64_t> accessOf(Operation *op) {
  using vblocks::typeBytes;
  auto sum = [](TypeRange types) {
    uint64_t n = 0;
    for (Type t : types)
      n += typeBytes(t);
    return n;
  };
  if (auto ld = dyn_cast<LoadOp>(op))
    if (ld.getSpace() != StateSpace::param)
      return {ld.getAddr(), sum(ld.getResultTypes())};
  if (auto st = dyn_cast<StoreOp>(op))
    if (st.getSpace() != StateSpace::param)
      return {st.getAddr(), sum(st.getValues().getTypes())};
  if (auto at = dyn_cast<AtomOp>(op))
    return {at.getAddr(), typeBytes(at.getResult().getType())};
  if (auto red = dyn_cast<RedOp>(op))
    return {red.getAddr(), typeBytes(red.getValue().getType())};
  return {Value(), 0};
}

struct WoolyContainPass : wooly::impl::WoolyContainBase<WoolyContainPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();

    if (failed(vblocks::refuseIndirectCalls(
            module, "wooly-contain",
            "device functions receive the status record as an extra "
            "argument")))
      return signalPassFailure();

    // The status record: a launch parameter of kernels, a trailing argument
    // of device functions.
    Builder b(ctx);
    llvm::DenseMap<Operation *, SmallVector<Value>> statusOf;
    SmallVector<FuncOp> funcs;
    for (auto func : module.getOps<FuncOp>()) {
      if (func.isDeclaration())
        continue;
      funcs.push_back(func);
      if (func.getKernel()) {
        statusOf[func] = {vblocks::appendLaunchParam(func, "launch_status",
                                                     b.getI64Type(), "u64")};
        continue;
      }
      unsigned n = func.getNumArguments();
      if (failed(func.insertArguments(
              {n}, {b.getI64Type()},
              {b.getDictionaryAttr(
                  {b.getNamedAttr("wooly.type", b.getStringAttr("u64"))})},
              {func.getLoc()}))) {
        func.emitOpError("wooly-contain: cannot append the status argument");
        return signalPassFailure();
      }
      statusOf[func] = {func.getArgument(n)};
    }

    if (failed(vblocks::passOnTrailingArgs(module, statusOf, "wooly-contain")))
      return signalPassFailure();

    for (FuncOp func : funcs) {
      FunctionContainer fc(func, statusOf.lookup(func).front());
      Region &body = func.getBody();
      // The sites first: the polls below are the pass's own accesses.
      SmallVector<Operation *> sites;
      func.walk([&](Operation *op) {
        if (isa<TrapOp, BrkptOp>(op))
          sites.push_back(op);
        else if (auto call = dyn_cast<CallOp>(op);
                 call && call.getCallee() == "__assertfail")
          sites.push_back(op);
        else if (alignment && accessOf(op).second > 1)
          sites.push_back(op);
      });
      // Loop heads, from the CFG as written.
      if (watchdog && !body.hasOneBlock()) {
        DominanceInfo dom(func);
        llvm::SetVector<Block *> headers;
        for (Block &block : body)
          for (Block *succ : block.getSuccessors())
            if (dom.dominates(succ, &block))
              headers.insert(succ);
        for (Block *header : headers)
          fc.poll(header);
      }
      for (Operation *op : sites) {
        if (auto trap = dyn_cast<TrapOp>(op)) {
          if (traps)
            fc.trap(trap);
        } else if (isa<BrkptOp>(op)) {
          if (traps)
            fc.fault(op, kBrkpt, {});
        } else if (auto call = dyn_cast<CallOp>(op);
                   call && call.getCallee() == "__assertfail") {
          // __assertfail(message, file, line, function, charSize).
          if (!traps)
            continue;
          if (call.getNumOperands() < 4) {
            call.emitOpError("wooly-contain: __assertfail takes (message, "
                             "file, line, function, size)");
            return signalPassFailure();
          }
          OpBuilder ob(call);
          auto asI64 = [&](Value v) -> Value {
            if (v.getType().isInteger(64))
              return v;
            return arith::ExtUIOp::create(ob, call.getLoc(), ob.getI64Type(),
                                          v);
          };
          auto asI32 = [&](Value v) -> Value {
            if (v.getType().isInteger(32))
              return v;
            return arith::TruncIOp::create(ob, call.getLoc(), ob.getI32Type(),
                                           v);
          };
          SmallVector<Value> details{
              asI32(call.getOperand(2)), asI64(call.getOperand(0)),
              asI64(call.getOperand(1)), asI64(call.getOperand(3))};
          fc.fault(op, kAssert, details);
        } else {
          auto [addr, bytes] = accessOf(op);
          if (llvm::isPowerOf2_64(bytes))
            fc.checkAlignment(op, addr, bytes);
        }
      }
    }
  }
};

} // namespace
