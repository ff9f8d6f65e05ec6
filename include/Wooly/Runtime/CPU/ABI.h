//===- ABI.h - Contract between host-lowered kernels and the CPU runtime -===//
//
// The one place that fixes how code produced by `convert-wooly-to-llvm`
// talks to the CPU SIMT runtime (`lib/Runtime/CPU`): the layout of the
// per-thread context, the entry-point signature of a kernel, and the
// `__wooly_rt_*` functions the generated code calls. Plain C so that both
// sides include it; the lowering takes field offsets from `offsetof`.
//
// Address spaces on the host:
//   - global, const and generic addresses are host pointers (64-bit);
//   - shared addresses are byte offsets into the block's shared window
//     (`ctx->shared`, `ctx->totalSmemSize` bytes: static shared variables of
//     the module first, then the launch's dynamic shared memory); the generic
//     address of shared offset `o` is `ctx->shared + o`;
//   - local variables live on the executing thread's stack; their local and
//     generic addresses are the same host pointer;
//   - param addresses are host pointers into the launch's parameter buffer.
//
//===----------------------------------------------------------------------===//

#ifndef WOOLY_RUNTIME_CPU_ABI_H
#define WOOLY_RUNTIME_CPU_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One cached address range per memory-access site of a module. Each site
/// has a fixed access size, so the entry stores the first valid address
/// `lo` and the last valid start offset `last` (range size minus access
/// size): an access at `addr` is valid without asking the runtime when
/// `addr - lo <= last` in unsigned arithmetic (one compare; an address below
/// `lo` wraps to a huge offset). An empty entry points `lo` at a small
/// runtime-owned scratch buffer with `last = 0`, so nothing a kernel can
/// name matches it. The cache belongs to one worker and one launch.
typedef struct WoolyAccessRange {
  uint64_t lo;
  uint64_t last;
} WoolyAccessRange;

/// The context of one GPU thread, passed as the first argument of every
/// lowered function. Field order and sizes are part of the ABI.
typedef struct WoolyThreadCtx {
  uint32_t tid[3];
  uint32_t ntid[3];
  uint32_t ctaid[3];
  uint32_t nctaid[3];
  uint32_t laneid;
  uint32_t warpid;
  uint32_t nwarpid;
  uint32_t dynSmemSize;
  uint32_t totalSmemSize;
  uint32_t gridid;
  /// Base of the block's shared window (`totalSmemSize` bytes).
  char *shared;
  /// The launch's parameter buffer (CUDA layout).
  const char *params;
  /// Per-site access cache (see `WoolyAccessRange`); one per worker.
  WoolyAccessRange *siteCache;
  /// Runtime-private state of the executing thread (fiber, block, launch).
  void *runtime;
  /// What `.local` and `.param` accesses are checked against: the thread's
  /// live stack, from the stack pointer up to `localHi` (where the kernel's
  /// first frame begins; `localLo` is the stack's lowest address), and the
  /// parameter buffer's size.
  uint64_t localLo, localHi;
  uint64_t paramBytes;
  /// Region mode (`__wooly_regions_k`): the frame of the thread's warp,
  /// where values live from one region to the next (each slot holds the
  /// warp's 32 lanes' copies side by side; `laneid` picks one), and the
  /// region to run (0: the first); on return, the region to run next, or
  /// WOOLY_REGION_EXITED.
  char *regionFrame;
  uint32_t resume;
  uint32_t reserved;
} WoolyThreadCtx;

/// `WoolyThreadCtx::resume` of a thread whose region function returned at
/// the end of the kernel.
enum { WOOLY_REGION_EXITED = 0xffffffffu };

/// A lowered kernel `@k` is exported as `__wooly_kernel_k` with this type.
typedef void (*WoolyKernelFn)(WoolyThreadCtx *ctx, const char *params);

/// A kernel that never synchronises also gets `__wooly_block_k`, which runs
/// the threads of the block with linear index `start` and above, setting
/// `tid`, `laneid` and `warpid` in `ctx` (the other fields are the caller's).
typedef void (*WoolyBlockFn)(WoolyThreadCtx *ctx, const char *params,
                             uint32_t start);

/// A kernel split into regions (`__wooly_regions_k`) may also get
/// `__wooly_warp_k`, which runs the 32 lanes of a warp at once: lane `l`'s
/// context is `stride * l` bytes after `ctx` (lane 0's). Every lane must be
/// runnable at the same region (`resume`); each runs to its next cut.
/// Returns the region that follows where all 32 stopped, if that is the
/// same barrier, or WOOLY_REGION_EXITED if all exited; then only lane 0's
/// `resume` is set, and the caller sets the other lanes' when it needs
/// them. Otherwise returns 0, the lanes having left as `__wooly_regions_k`
/// leaves one thread.
typedef uint32_t (*WoolyWarpFn)(WoolyThreadCtx *ctx, const char *params,
                                uint64_t stride);

/// Flags of `__wooly_rt_check` and `__wooly_rt_space_oob`.
enum {
  WOOLY_ACCESS_READ = 1,
  WOOLY_ACCESS_WRITE = 2,
  /// The access must be aligned to its size (a power of two), as on the
  /// GPU (loads, stores, atomics, cp.async): a misaligned one faults with
  /// "misaligned address" (checked inline; the slow paths tell which).
  WOOLY_ACCESS_ALIGNED = 4,
};

/// Slow path of an access check (global, const or generic space): if
/// `[addr, addr + size)` lies inside one live allocation, a module global,
/// the block's shared window or the thread's stack, refills `*entry` (the
/// site's cache entry; may be null) when the range may be cached and
/// returns; otherwise records an out-of-bounds launch error and ends the
/// launch (does not return). When it returns it has read `*ctx` and written
/// only `*entry` and runtime-private memory: the lowering declares it so
/// (`memory(argmem: readwrite, inaccessiblemem: readwrite)`, `ctx`
/// read-only), which lets LLVM keep context fields in registers across it.
void __wooly_rt_check(WoolyThreadCtx *ctx, WoolyAccessRange *entry,
                      uint64_t addr, uint32_t size, uint32_t flags);

/// The `space` of `__wooly_rt_space_oob` (Wooly's StateSpace values; the
/// lowering checks that they match).
enum {
  WOOLY_SPACE_LOCAL = 5,
  WOOLY_SPACE_PARAM = 6,
};

/// Reports a `.local` or `.param` access (`space`: WOOLY_SPACE_*)
/// of `size` bytes at `addr` outside the thread's stack or the parameter
/// buffer (`flags` as for `__wooly_rt_check`); does not return.
void __wooly_rt_space_oob(WoolyThreadCtx *ctx, uint64_t addr, uint32_t size,
                          uint32_t flags, uint32_t space);

/// Reports a shared-memory access `[offset, offset + size)` outside the
/// block's shared window; does not return.
void __wooly_rt_shared_oob(WoolyThreadCtx *ctx, uint32_t site, uint64_t offset,
                           uint32_t size);

/// `bar.sync`/`barrier.sync`/`bar.arrive` on barrier `id` expecting `count`
/// threads (0: all threads of the block that have not exited).
void __wooly_rt_barrier(WoolyThreadCtx *ctx, uint32_t id, uint32_t count,
                        uint32_t arriveOnly);

/// `wooly.iteration_barrier`: waits until every thread of the block that
/// has not exited waits here; meanwhile the thread counts as exited for the
/// block's other barriers and warp collectives.
void __wooly_rt_iteration_barrier(WoolyThreadCtx *ctx);

/// `bar.red.{popc,and,or}` over `pred`; returns the reduction.
uint32_t __wooly_rt_bar_red(WoolyThreadCtx *ctx, uint32_t op, uint32_t id,
                            uint32_t count, uint32_t pred);

/// Warp collectives: the calling lane contributes `in[0..nin)` and waits
/// until every lane of `mask` (that exists and has not exited) has reached a
/// collective; the runtime then computes each lane's `out[0..nout)`.
/// The encoding of `in`/`out` per kind is documented with the enum.
enum WoolyWarpKind {
  /// `bar.warp.sync`: no data.
  WOOLY_WARP_SYNC = 0,
  /// `shfl.sync`: in = {mode (up,down,bfly,idx), value, lane, clamp};
  /// out = {value, valid}.
  WOOLY_WARP_SHFL = 1,
  /// `vote.sync`: in = {mode (all,any,uni,ballot), pred}; out = {result}.
  WOOLY_WARP_VOTE = 2,
  /// `match.sync`: in = {mode (any,all), lo, hi, is64}; out = {mask, pred}.
  WOOLY_WARP_MATCH = 3,
  /// `redux.sync`: in = {op (ReduxKind), value}; out = {result}.
  WOOLY_WARP_REDUX = 4,
  /// `activemask`: no input; out = {mask of the lanes that reached it}.
  WOOLY_WARP_ACTIVEMASK = 5,
  /// `ldmatrix`: in = {shared offset lo, hi, count (1,2,4), trans};
  /// out = count words.
  WOOLY_WARP_LDMATRIX = 6,
  /// `mma.sync`: in = {shape code, types (a | b<<8 | c<<16 | d<<24, as
  /// ScalarType), flags (layout a | layout b<<1 | satfinite<<2 | single-bit
  /// operation<<3: 0 none, 1 .xor.popc, 2 .and.popc), na, nb, nc, then
  /// na + nb + nc words of fragments (64-bit elements take two words)};
  /// out = the D fragment's words.
  WOOLY_WARP_MMA = 7,
  /// `wmma.load`: in = {role (a,b,c), layout, shape code, type, space,
  /// addr lo, addr hi, stride (elements)}; out = the fragment's words.
  WOOLY_WARP_WMMA_LOAD = 8,
  /// `wmma.store.d`: in = {layout, shape code, type, space, addr lo,
  /// addr hi, stride, then the fragment's words}; no output.
  WOOLY_WARP_WMMA_STORE = 9,
  /// `wmma.mma`: encoded as for `WOOLY_WARP_MMA`.
  WOOLY_WARP_WMMA_MMA = 10,
  /// `elect.sync`: no input; out = {leader lane, 1 in the leader else 0}.
  WOOLY_WARP_ELECT = 11,
  /// `stmatrix`: in = {shared offset lo, hi, count (1,2,4), trans, then
  /// count words}; no output.
  WOOLY_WARP_STMATRIX = 12,
};
/// Shape codes of `mma`/`wmma`: `m | n << 8 | k << 16` (k up to 256).
void __wooly_rt_warp(WoolyThreadCtx *ctx, uint32_t kind, uint32_t mask,
                     const uint32_t *in, uint32_t nin, uint32_t *out,
                     uint32_t nout);

/// The Wooly dialect's ScalarType and AtomicOp values
/// (include/Wooly/Dialect/Wooly/IR/WoolyEnums.td), as runtime calls receive
/// them: the element types of warp matrix operations and bulk reductions,
/// and the reduction operations. The host lowering checks that they agree
/// with the dialect (static_asserts in WoolyToLLVM.cpp).
enum WoolyScalarType {
  WOOLY_ST_b16 = 2,
  WOOLY_ST_b32 = 3,
  WOOLY_ST_b64 = 4,
  WOOLY_ST_u8 = 6,
  WOOLY_ST_u32 = 8,
  WOOLY_ST_u64 = 9,
  WOOLY_ST_s8 = 10,
  WOOLY_ST_s32 = 12,
  WOOLY_ST_s64 = 13,
  WOOLY_ST_f16 = 14,
  WOOLY_ST_bf16 = 16,
  WOOLY_ST_tf32 = 18,
  WOOLY_ST_f32 = 19,
  WOOLY_ST_f64 = 20,
  WOOLY_ST_e4m3 = 21,
  WOOLY_ST_e5m2 = 22,
  WOOLY_ST_s4 = 25,
  WOOLY_ST_u4 = 26,
  WOOLY_ST_b1 = 29,
};
enum WoolyAtomicOp {
  WOOLY_AO_add = 0,
  WOOLY_AO_fadd = 1,
  WOOLY_AO_umin = 2,
  WOOLY_AO_smin = 3,
  WOOLY_AO_fmin = 4,
  WOOLY_AO_umax = 5,
  WOOLY_AO_smax = 6,
  WOOLY_AO_fmax = 7,
  WOOLY_AO_inc = 8,
  WOOLY_AO_dec = 9,
  WOOLY_AO_and = 10,
  WOOLY_AO_or = 11,
  WOOLY_AO_xor = 12,
};

/// mbarrier objects (8 bytes of shared memory) as the CPU backend lays them
/// out: bits 0-20 the pending arrival count, 21-41 the expected arrival
/// count, 42-62 the transaction count (signed, in bytes), 63 the phase's
/// parity. The state an arrive returns has the parity of the phase it
/// arrived on in bit 63 and the pending count after the arrival in bits
/// 0-20 (`mbarrier.pending_count`).
enum {
  WOOLY_MBAR_COUNT_BITS = 21,
  WOOLY_MBAR_MAX_COUNT = (1 << 20) - 1,
};

/// What `__wooly_rt_mbarrier` does.
enum WoolyMbarrierOp {
  WOOLY_MBAR_INIT = 0,
  WOOLY_MBAR_ARRIVE = 1,
  WOOLY_MBAR_ARRIVE_DROP = 2,
  WOOLY_MBAR_EXPECT_TX = 3,
  WOOLY_MBAR_COMPLETE_TX = 4,
  WOOLY_MBAR_INVAL = 5,
};

/// An mbarrier operation on the object at shared offset `offset`: `init`
/// (with `count`), `inval`, `expect_tx`/`complete_tx` of `tx` bytes, or an
/// arrive of `count` after an `expect_tx` of `tx` (`arrive_drop` also
/// lowers the expected count). Returns an arrive's state (see above).
uint64_t __wooly_rt_mbarrier(WoolyThreadCtx *ctx, uint32_t op, uint64_t offset,
                             uint32_t count, uint32_t tx);

/// `mbarrier.test_wait`/`try_wait` (`blocking`) on the object at shared
/// offset `offset`: 1 when the phase of parity `parity` has completed.
/// try_wait suspends the thread until it has (fiber mode); test_wait
/// yields to the block's other threads before it returns 0.
uint32_t __wooly_rt_mbarrier_wait(WoolyThreadCtx *ctx, uint64_t offset,
                                  uint32_t parity, uint32_t blocking);

/// `cp.async.bulk`/`cp.reduce.async.bulk` of `size` bytes from `src` in
/// `srcSpace` to `dst` in `dstSpace` (StateSpace values: global addresses
/// are host pointers, shared ones offsets in the block's window), done at
/// once; `redop` is an AtomicOp (0xffffffff: a copy) on elements of
/// ScalarType `redType`. With `mbar` (a shared offset; 0xffffffff... none)
/// the copy then completes `size` transaction bytes on that mbarrier.
void __wooly_rt_bulk_copy(WoolyThreadCtx *ctx, uint32_t dstSpace, uint64_t dst,
                          uint32_t srcSpace, uint64_t src, uint32_t size,
                          uint64_t mbar, uint32_t redop, uint32_t redType);

/// `exit` from a device function (or a kernel that cannot return): ends the
/// calling thread. Does not return.
void __wooly_rt_exit(WoolyThreadCtx *ctx);

/// `trap`: ends the launch with an error naming the kernel. Does not return.
void __wooly_rt_trap(WoolyThreadCtx *ctx);

/// An indirect call to `target`, which is no device function of the
/// module: ends the launch with an error. Does not return.
void __wooly_rt_bad_call(WoolyThreadCtx *ctx, uint64_t target);

/// Device-side `malloc`: a 16-byte aligned block of `size` bytes in the
/// device heap of the calling block's memory domain (DeviceHeap.h), or 0
/// where the heap has no room.
uint64_t __wooly_rt_malloc(WoolyThreadCtx *ctx, uint64_t size);

/// Device-side `free` of a block `__wooly_rt_malloc` returned (0: nothing).
/// Any other address ends the launch with an error.
void __wooly_rt_free(WoolyThreadCtx *ctx, uint64_t ptr);

/// `which` of `__wooly_rt_sreg` for `%envreg0`; `%envreg<N>` is this + N.
enum { WOOLY_SREG_ENVREG0 = 64 };

/// Timers and ids that change while a thread runs: `which` is the
/// SpecialReg value (`clock`, `clock64`, `globaltimer`, `smid`, ...); and
/// the driver-defined `%envreg<N>` (`WOOLY_SREG_ENVREG0 + N`): the high and
/// low halves of a cooperative launch's grid workspace in 1 and 2, 0
/// otherwise.
uint64_t __wooly_rt_sreg(WoolyThreadCtx *ctx, uint32_t which);

/// `isspacep`: 1 when generic `addr` is in `space` (StateSpace value).
uint32_t __wooly_rt_isspacep(WoolyThreadCtx *ctx, uint32_t space,
                             uint64_t addr);

/// `nanosleep`: yields the calling thread to the others of its block.
void __wooly_rt_nanosleep(WoolyThreadCtx *ctx, uint32_t ns);

/// Texture and surface instructions (`__wooly_rt_texture`): what `op`
/// holds, field by field (shift and meaning).
enum WoolyTextureOp {
  /// Bits 0-2: the instruction: 0 tex, 1 tld4, 2 suld.b, 3 sust.b,
  /// 4 sust.p, 5 sured.b.
  WOOLY_TEX_KIND_SHIFT = 0,
  /// Bits 3-5: the geometry (the TexGeometry value).
  WOOLY_TEX_GEOMETRY_SHIFT = 3,
  /// Bit 6: integer (s32) coordinates.
  WOOLY_TEX_INT_COORDS_SHIFT = 6,
  /// Bits 7-8: tex/tld4 results: 0 f32, 1 s32, 2 u32.
  WOOLY_TEX_RESULT_SHIFT = 7,
  /// Bits 9-10: tld4's component (r, g, b, a).
  WOOLY_TEX_COMPONENT_SHIFT = 9,
  /// Bits 11-12: tex's level: 0 none, 1 `.level`, 2 `.grad`.
  WOOLY_TEX_MODE_SHIFT = 11,
  /// Bits 13-14: surfaces: log2 of the element's bytes (b8 ... b64).
  WOOLY_TEX_ELEMENT_SHIFT = 13,
  /// Bits 15-17: surfaces: the vector width (1, 2, 4).
  WOOLY_TEX_VECTOR_SHIFT = 15,
  /// Bits 18-19: surfaces: out-of-range accesses (SurfClamp: trap, clamp,
  /// zero).
  WOOLY_TEX_CLAMP_SHIFT = 18,
  /// Bits 20-23: sured's operation (the AtomicOp value).
  WOOLY_TEX_RED_SHIFT = 20,
};

/// A texture or surface instruction on the object `handle` (`op`: see
/// WoolyTextureOp). `in` holds 32-bit words: the layer of a layered
/// geometry, the coordinates (f32 bits or s32), then tex's level (f32) or
/// gradients (x then y, one per coordinate), or a surface store's values
/// (64-bit ones as two words, low first). `out` receives tex/tld4's four
/// words or suld's elements (64-bit ones as two words). An invalid handle,
/// another tenant's object or a `.trap` access out of range ends the
/// launch.
void __wooly_rt_texture(WoolyThreadCtx *ctx, uint32_t op, uint64_t handle,
                        const uint32_t *in, uint32_t *out);

/// `txq`/`suq` (`surface` non-zero): attribute `query` (the TexQuery value)
/// of the object `handle`, at mipmap level `level` (`txq.level`; 0
/// otherwise).
uint32_t __wooly_rt_texquery(WoolyThreadCtx *ctx, uint32_t query,
                             uint32_t surface, uint64_t handle, int32_t level);

/// CUDA's device-side `vprintf(format, args)` with the argument buffer
/// laid out as nvcc does (each argument aligned to its size).
int32_t __wooly_rt_vprintf(WoolyThreadCtx *ctx, uint64_t format, uint64_t args);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // WOOLY_RUNTIME_CPU_ABI_H
