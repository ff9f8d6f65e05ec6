//===- AsyncCopy.cpp - mbarriers and bulk copies on the CPU -----*- C++ -*-===//
//
// The entry points of Hopper's asynchronous data movement
// (include/Wooly/Runtime/CPU/ABI.h): mbarrier objects in the block's shared
// memory and `cp.async.bulk`/`cp.reduce.async.bulk`.
//
// A block's threads run on one worker, one at a time, so an mbarrier's word
// needs no atomics. A bulk copy is done when it is issued, by the issuing
// thread, and then completes its transaction bytes on its mbarrier: an
// asynchronous copy may complete at any time before its completion is
// observed, and nothing else can observe it earlier. `try_wait` suspends
// the fiber (ThreadStatus::AtMbarrier) until the scheduler sees the phase
// complete (FiberExecutor.cpp); a block in which no thread can move while
// some wait there is a deadlock.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "llvm/ADT/bit.h"

#include <cmath>

using namespace wooly;
using namespace wooly::cpu;
using namespace wooly::cpu::detail;

namespace {
constexpr uint64_t kCountMask = (uint64_t(1) << WOOLY_MBAR_COUNT_BITS) - 1;
constexpr unsigned kExpectedShift = WOOLY_MBAR_COUNT_BITS;
constexpr unsigned kTxShift = 2 * WOOLY_MBAR_COUNT_BITS;

/// An mbarrier's fields.
struct Mbar {
  uint64_t pending, expected;
  int64_t tx;
  uint64_t phase;

  static Mbar decode(uint64_t w) {
    Mbar m;
    m.pending = w & kCountMask;
    m.expected = (w >> kExpectedShift) & kCountMask;
    // Sign-extend the 21-bit transaction count.
    m.tx = int64_t((w >> kTxShift) << 43) >> 43;
    m.phase = w >> 63;
    return m;
  }
  uint64_t encode() const {
    return pending | expected << kExpectedShift |
           (uint64_t(tx) & kCountMask) << kTxShift | phase << 63;
  }
};

/// The mbarrier word at shared offset `offset` of `t`'s block, after
/// checking its bounds and alignment.
uint64_t *mbarrierWord(GpuThread *t, uint64_t offset, const char *what) {
  WoolyThreadCtx &c = t->ctx;
  if (offset > c.totalSmemSize || c.totalSmemSize - offset < 8)
    faultThread(t, FaultKind::IllegalAddress, [&] {
      return std::string(what) + " on an mbarrier at shared offset " +
             std::to_string(offset) + ", outside the block's " +
             std::to_string(c.totalSmemSize) + " bytes of shared memory";
    });
  if (offset % 8)
    faultThread(t, FaultKind::MisalignedAddress, [&] {
      return std::string(what) + " on an mbarrier at shared offset " +
             std::to_string(offset) + ", which is not 8-byte aligned";
    });
  return reinterpret_cast<uint64_t *>(c.shared + offset);
}

/// Completes the phase when nothing is pending.
void maybeComplete(Mbar &m) {
  if (m.pending == 0 && m.tx == 0) {
    m.phase ^= 1;
    m.pending = m.expected;
  }
}

/// The host address of `size` bytes at `addr` in `space` for `t`, checked;
/// faults otherwise.
char *bulkAddress(GpuThread *t, uint32_t space, uint64_t addr, uint32_t size,
                  bool write) {
  Worker *w = t->worker;
  if (space == 3 || space == 7) { // shared, shared::cluster
    if (addr > t->ctx.totalSmemSize || t->ctx.totalSmemSize - addr < size)
      faultThread(t, FaultKind::IllegalAddress, [&] {
        return "out-of-bounds bulk copy " + std::string(write ? "to" : "from") +
               " shared memory: " + std::to_string(size) + " bytes at offset " +
               std::to_string(addr) + " (the block has " +
               std::to_string(t->ctx.totalSmemSize) +
               " bytes of shared memory)";
      });
    return t->ctx.shared + addr;
  }
  if (!w->launch->reachable(w->linearBlock, addr, size, write))
    faultThread(t, FaultKind::IllegalAddress, [&] {
      return "out-of-bounds bulk copy " + std::string(write ? "to" : "from") +
             " global memory: " + std::to_string(size) +
             " bytes at address 0x" + hex(addr);
    });
  return reinterpret_cast<char *>(addr);
}

float wideHalf(uint16_t h, bool bf16);
uint16_t narrowHalf(float f, bool bf16);

/// `old op v` on raw element bits of `type`; false if unsupported.
bool reduceElement(uint32_t op, uint32_t type, uint64_t old, uint64_t v,
                   uint64_t &out) {
  bool f = type == WOOLY_ST_f16 || type == WOOLY_ST_bf16 ||
           type == WOOLY_ST_f32 || type == WOOLY_ST_f64;
  if (f) {
    double a, b;
    bool f16 = type == WOOLY_ST_f16 || type == WOOLY_ST_bf16,
         bf = type == WOOLY_ST_bf16;
    if (type == WOOLY_ST_f64) {
      a = llvm::bit_cast<double>(old), b = llvm::bit_cast<double>(v);
    } else if (type == WOOLY_ST_f32) {
      a = llvm::bit_cast<float>(uint32_t(old));
      b = llvm::bit_cast<float>(uint32_t(v));
    } else {
      a = wideHalf(uint16_t(old), bf);
      b = wideHalf(uint16_t(v), bf);
    }
    double r;
    if (op == WOOLY_AO_fadd) {
      // f32 and f64 additions round once; f16/bf16 sums of two halves
      // are exact in f32 and then rounded to the type once.
      if (type == WOOLY_ST_f32)
        r = double(float(a) + float(b));
      else
        r = a + b;
    } else if (op == WOOLY_AO_fmin || op == WOOLY_AO_fmax) {
      bool nanA = std::isnan(a), nanB = std::isnan(b);
      if (nanA && nanB)
        r = a;
      else if (nanA || nanB)
        r = nanA ? b : a;
      else if (a == b)
        r = (op == WOOLY_AO_fmin) == std::signbit(a) ? a : b;
      else
        r = (op == WOOLY_AO_fmin) == (a < b) ? a : b;
    } else {
      return false;
    }
    if (type == WOOLY_ST_f64)
      out = llvm::bit_cast<uint64_t>(r);
    else if (type == WOOLY_ST_f32)
      out = llvm::bit_cast<uint32_t>(float(r));
    else
      out = f16 ? narrowHalf(float(r), bf) : 0;
    return true;
  }
  bool is64 =
      type == WOOLY_ST_b64 || type == WOOLY_ST_u64 || type == WOOLY_ST_s64;
  uint64_t mask = is64 ? ~uint64_t(0) : 0xffffffffu;
  int64_t sa = is64 ? int64_t(old) : int64_t(int32_t(old));
  int64_t sb = is64 ? int64_t(v) : int64_t(int32_t(v));
  uint64_t ua = old & mask, ub = v & mask;
  switch (op) {
  case WOOLY_AO_add:
    out = ua + ub;
    break;
  case WOOLY_AO_umin:
    out = std::min(ua, ub);
    break;
  case WOOLY_AO_umax:
    out = std::max(ua, ub);
    break;
  case WOOLY_AO_smin:
    out = uint64_t(std::min(sa, sb));
    break;
  case WOOLY_AO_smax:
    out = uint64_t(std::max(sa, sb));
    break;
  case WOOLY_AO_inc:
    out = ua >= ub ? 0 : ua + 1;
    break;
  case WOOLY_AO_dec:
    out = ua == 0 || ua > ub ? ub : ua - 1;
    break;
  case WOOLY_AO_and:
    out = ua & ub;
    break;
  case WOOLY_AO_or:
    out = ua | ub;
    break;
  case WOOLY_AO_xor:
    out = ua ^ ub;
    break;
  default:
    return false;
  }
  out &= mask;
  return true;
}

/// The f32 value of f16 or bf16 bits `h`.
float wideHalf(uint16_t h, bool bf16) {
  return bf16 ? llvm::bit_cast<float>(uint32_t(h) << 16) : halfToFloat(h);
}

/// f32 -> f16 or bf16 bits, rounded to nearest even; NaN -> the canonical
/// NaN.
uint16_t narrowHalf(float f, bool bf16) {
  if (!bf16)
    return floatToHalf(f);
  uint32_t x = llvm::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000)
    return 0x7fff;
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

unsigned elementBytes(uint32_t type) {
  switch (type) {
  case WOOLY_ST_f16:
  case WOOLY_ST_bf16:
    return 2;
  case WOOLY_ST_b64:
  case WOOLY_ST_u64:
  case WOOLY_ST_s64:
  case WOOLY_ST_f64:
    return 8;
  default:
    return 4;
  }
}
} // namespace

bool detail::mbarrierPhaseDone(Worker &w, uint64_t offset, uint32_t parity) {
  uint64_t word;
  std::memcpy(&word, w.shared.data() + offset, 8);
  return (word >> 63) != (parity & 1);
}

extern "C" {

uint64_t __wooly_rt_mbarrier(WoolyThreadCtx *ctx, uint32_t op, uint64_t offset,
                             uint32_t count, uint32_t tx) {
  GpuThread *t = threadOf(ctx);
  uint64_t *word = mbarrierWord(t, offset, "mbarrier operation");
  if (op == WOOLY_MBAR_INIT) {
    if (count == 0 || count > WOOLY_MBAR_MAX_COUNT)
      faultThread(t, [&] {
        return "mbarrier.init with count " + std::to_string(count) +
               " (it must be 1 to " + std::to_string(WOOLY_MBAR_MAX_COUNT) +
               ")";
      });
    *word = Mbar{count, count, 0, 0}.encode();
    return 0;
  }
  if (op == WOOLY_MBAR_INVAL) {
    *word = 0;
    return 0;
  }
  Mbar m = Mbar::decode(*word);
  if (m.expected == 0)
    faultThread(t, [&] {
      return "mbarrier operation on an uninitialised or invalidated mbarrier "
             "at shared offset " +
             std::to_string(offset);
    });
  uint64_t phase = m.phase;
  int64_t bytes = int64_t(tx);
  if (op == WOOLY_MBAR_COMPLETE_TX)
    bytes = -bytes;
  if (m.tx + bytes > WOOLY_MBAR_MAX_COUNT ||
      m.tx + bytes < -int64_t(WOOLY_MBAR_MAX_COUNT))
    faultThread(t, [&] {
      return "mbarrier transaction count out of range (" +
             std::to_string(m.tx + bytes) + " bytes pending at shared offset " +
             std::to_string(offset) + ")";
    });
  m.tx += bytes;
  if (op == WOOLY_MBAR_ARRIVE || op == WOOLY_MBAR_ARRIVE_DROP) {
    if (count > m.pending)
      faultThread(t, [&] {
        return "mbarrier arrive of " + std::to_string(count) + " with only " +
               std::to_string(m.pending) +
               " arrivals pending at shared offset " + std::to_string(offset);
      });
    m.pending -= count;
    if (op == WOOLY_MBAR_ARRIVE_DROP)
      m.expected -= std::min<uint64_t>(count, m.expected);
  }
  uint64_t state = phase << 63 | m.pending;
  maybeComplete(m);
  *word = m.encode();
  return state;
}

uint32_t __wooly_rt_mbarrier_wait(WoolyThreadCtx *ctx, uint64_t offset,
                                  uint32_t parity, uint32_t blocking) {
  GpuThread *t = threadOf(ctx);
  Worker *w = t->worker;
  mbarrierWord(t, offset, "mbarrier wait");
  if (mbarrierPhaseDone(*w, offset, parity))
    return 1;
  if (!w->fiberMode)
    faultThread(t, "internal error: mbarrier wait reached outside fiber mode");
  if (!blocking) {
    // Let the others move before the thread tests again.
    t->status = ThreadStatus::Yielded;
    yieldToScheduler(t);
    return 0;
  }
  t->mbarOffset = offset;
  t->mbarParity = parity & 1;
  ++w->atMbarrier;
  t->status = ThreadStatus::AtMbarrier;
  yieldToScheduler(t);
  return 1;
}

void __wooly_rt_bulk_copy(WoolyThreadCtx *ctx, uint32_t dstSpace, uint64_t dst,
                          uint32_t srcSpace, uint64_t src, uint32_t size,
                          uint64_t mbar, uint32_t redop, uint32_t redType) {
  GpuThread *t = threadOf(ctx);
  if (size % 16 || dst % 16 || src % 16)
    faultThread(t, FaultKind::MisalignedAddress, [&] {
      return "bulk copy of " + std::to_string(size) + " bytes from 0x" +
             hex(src) + " to 0x" + hex(dst) +
             ": the size and both addresses must be multiples of 16";
    });
  char *d = bulkAddress(t, dstSpace, dst, size, true);
  const char *s = bulkAddress(t, srcSpace, src, size, false);
  if (redop == 0xffffffffu) {
    std::memmove(d, s, size);
  } else {
    unsigned n = elementBytes(redType);
    bool global = dstSpace == 1;
    for (uint32_t i = 0; i < size; i += n) {
      uint64_t v = 0, old = 0, next = 0;
      std::memcpy(&v, s + i, n);
      // Global memory is shared with other blocks' workers: each element
      // is reduced atomically (compare-and-swap on its bytes).
      for (;;) {
        if (global && n == 2) {
          old = __atomic_load_n(reinterpret_cast<uint16_t *>(d + i),
                                __ATOMIC_RELAXED);
        } else if (global && n == 4) {
          old = __atomic_load_n(reinterpret_cast<uint32_t *>(d + i),
                                __ATOMIC_RELAXED);
        } else if (global) {
          old = __atomic_load_n(reinterpret_cast<uint64_t *>(d + i),
                                __ATOMIC_RELAXED);
        } else {
          std::memcpy(&old, d + i, n);
        }
        if (!reduceElement(redop, redType, old, v, next))
          faultThread(t, "cp.reduce.async.bulk: unsupported operation or "
                         "type");
        if (!global) {
          std::memcpy(d + i, &next, n);
          break;
        }
        bool done;
        if (n == 2) {
          uint16_t o = uint16_t(old);
          done = __atomic_compare_exchange_n(
              reinterpret_cast<uint16_t *>(d + i), &o, uint16_t(next), false,
              __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        } else if (n == 4) {
          uint32_t o = uint32_t(old);
          done = __atomic_compare_exchange_n(
              reinterpret_cast<uint32_t *>(d + i), &o, uint32_t(next), false,
              __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        } else {
          done = __atomic_compare_exchange_n(
              reinterpret_cast<uint64_t *>(d + i), &old, next, false,
              __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        }
        if (done)
          break;
      }
    }
  }
  if (mbar != ~uint64_t(0))
    __wooly_rt_mbarrier(ctx, WOOLY_MBAR_COMPLETE_TX, mbar, 0, size);
}

} // extern "C"
