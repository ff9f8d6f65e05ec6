//===- CoalesceTest.cpp - wooly-coalesce against separate launches -*- C++
//-*-===//
//
// Corpus kernels compiled with `wooly-coalesce{kernels=...}`. Each scenario
// is a list of parts (kernel, grid, block, parameters: scalars and buffers
// with initial contents). The parts run once each ALONE on the original
// kernel (same module) and once together in one launch of
// `__wooly_coalesced` on fresh copies of the same buffers; every buffer of
// every part must end bit-identical, and the outputs must have changed.
//
//===----------------------------------------------------------------------===//

#include "Wooly/Compiler/Compiler.h"
#include "Wooly/Compiler/LaunchParams.h"
#include "Wooly/Runtime/CPU/CpuDevice.h"
#include "Wooly/Runtime/CoalesceTable.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

using namespace wooly;
using namespace wooly::cpu;

namespace {

/// A kernel parameter: a scalar's bytes, or a buffer's initial contents.
struct Arg {
  bool isBuffer = false;
  std::vector<uint8_t> bytes;
};

template <class T> Arg scalar(T v) {
  Arg a;
  a.bytes.resize(sizeof(T));
  std::memcpy(a.bytes.data(), &v, sizeof(T));
  return a;
}

template <class T> Arg buffer(const std::vector<T> &v) {
  Arg a;
  a.isBuffer = true;
  a.bytes.resize(v.size() * sizeof(T));
  if (!v.empty())
    std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

std::vector<float> randF(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-4, 4);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(g);
  return v;
}

std::vector<int32_t> randI(size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t &x : v)
    x = d(g);
  return v;
}

/// One launch to fuse.
struct Part {
  std::string kernel;
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::vector<Arg> args;
};

class Coalesce : public ::testing::Test {
protected:
  CpuDevice device{options()};
  std::shared_ptr<const CompiledModule> module;
  LoadedModule *loaded = nullptr;
  std::vector<std::string> distinct;

  static CpuDevice::Options options() {
    CpuDevice::Options o;
    o.workers = 2;
    return o;
  }

  /// Compiles `file` with wooly-coalesce over `kernels`.
  void compileWith(const std::string &file,
                   const std::vector<std::string> &kernels) {
    auto text =
        llvm::MemoryBuffer::getFile(std::string(WOOLY_CORPUS_DIR) + "/" + file);
    ASSERT_TRUE(bool(text)) << file;
    CompileInput in;
    in.text = (*text)->getBuffer().str();
    in.name = file;
    CompileOptions o;
    std::string list;
    for (const std::string &k : kernels) {
      list += (list.empty() ? "" : ",") + k;
      if (std::find(distinct.begin(), distinct.end(), k) == distinct.end())
        distinct.push_back(k);
    }
    o.passes = "wooly-coalesce{kernels=" + list + "}";
    auto m = compile(in, llvm::cantFail(Target::parse("host")), o);
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    module = std::make_shared<const CompiledModule>(std::move(*m));
    auto l = device.loadModule(module);
    ASSERT_TRUE(bool(l)) << llvm::toString(l.takeError());
    loaded = *l;
  }

  uint64_t upload(const std::vector<uint8_t> &bytes) {
    uint64_t a = llvm::cantFail(
        device.memory().allocate(std::max<size_t>(bytes.size(), 1)));
    if (!bytes.empty())
      llvm::cantFail(
          device.memory().copyToDevice(a, bytes.data(), bytes.size()));
    return a;
  }

  std::vector<uint8_t> download(uint64_t addr, size_t bytes) {
    std::vector<uint8_t> v(bytes);
    if (bytes)
      llvm::cantFail(device.memory().copyFromDevice(v.data(), addr, bytes));
    return v;
  }

  /// Fresh buffers for `p` (their addresses) and its parameter buffer.
  std::vector<uint8_t> materialize(const Part &p,
                                   std::vector<uint64_t> &buffers) {
    const KernelInfo *k = module->findKernel(p.kernel);
    EXPECT_TRUE(k) << p.kernel;
    if (!k)
      return {};
    EXPECT_EQ(k->paramOffsets.size(), p.args.size()) << p.kernel;
    std::vector<uint8_t> params(userParamBufferSize(*k), 0);
    for (size_t i = 0; i < p.args.size() && i < k->paramOffsets.size(); ++i) {
      const Arg &a = p.args[i];
      if (a.isBuffer) {
        uint64_t addr = upload(a.bytes);
        buffers.push_back(addr);
        EXPECT_EQ(k->paramSizes[i], 8u);
        std::memcpy(params.data() + k->paramOffsets[i], &addr, 8);
      } else {
        EXPECT_EQ(k->paramSizes[i], a.bytes.size()) << p.kernel << " " << i;
        std::memcpy(params.data() + k->paramOffsets[i], a.bytes.data(),
                    a.bytes.size());
      }
    }
    return params;
  }

  /// The contents of `p`'s buffers at `addrs`.
  std::vector<std::vector<uint8_t>> contents(const Part &p,
                                             const std::vector<uint64_t> &a) {
    std::vector<std::vector<uint8_t>> out;
    size_t b = 0;
    for (const Arg &arg : p.args)
      if (arg.isBuffer)
        out.push_back(download(a[b++], arg.bytes.size()));
    return out;
  }

  /// Runs every part alone and all fused; expects identical buffers.
  void check(const std::vector<Part> &parts) {
    ASSERT_TRUE(loaded);
    const KernelInfo *fusedInfo = module->findKernel("__wooly_coalesced");
    ASSERT_TRUE(fusedInfo);
    ASSERT_EQ(fusedInfo->paramRoles.size(), 1u);
    EXPECT_EQ(fusedInfo->paramRoles[0], "coalesce_table");

    // Alone.
    std::vector<std::vector<std::vector<uint8_t>>> alone;
    for (const Part &p : parts) {
      std::vector<uint64_t> bufs;
      std::vector<uint8_t> params = materialize(p, bufs);
      LaunchConfig c;
      c.grid = p.grid;
      c.block = p.block;
      llvm::Error e = device.launch(loaded, p.kernel, c, params);
      ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
      alone.push_back(contents(p, bufs));
      // Something was computed.
      bool changed = false;
      size_t b = 0;
      for (const Arg &arg : p.args)
        if (arg.isBuffer)
          changed |= alone.back()[b++] != arg.bytes;
      EXPECT_TRUE(changed) << p.kernel << " wrote nothing";
    }

    // Fused.
    std::vector<CoalescePart> table;
    std::vector<std::vector<uint64_t>> fusedBufs(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      const Part &p = parts[i];
      CoalescePart cp;
      cp.kernelIndex =
          uint32_t(std::find(distinct.begin(), distinct.end(), p.kernel) -
                   distinct.begin());
      for (int d = 0; d < 3; ++d) {
        cp.grid[d] = p.grid[d];
        cp.block[d] = p.block[d];
      }
      cp.params = upload(materialize(p, fusedBufs[i]));
      table.push_back(cp);
    }
    assignFirstBlocks(table);
    uint64_t tableAddr = upload(encodeCoalesceTable(table));
    auto params = extendParams(*fusedInfo, {}, {{"coalesce_table", tableAddr}});
    ASSERT_TRUE(bool(params)) << llvm::toString(params.takeError());
    LaunchConfig c;
    c.grid = {uint32_t(coalescedGrid(table)), 1, 1};
    c.block = {coalescedBlock(table), 1, 1};
    c.dynamicSharedBytes = coalescedDynamicShared(table);
    llvm::Error e = device.launch(loaded, "__wooly_coalesced", c, *params);
    ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));

    for (size_t i = 0; i < parts.size(); ++i) {
      auto got = contents(parts[i], fusedBufs[i]);
      ASSERT_EQ(got.size(), alone[i].size());
      for (size_t b = 0; b < got.size(); ++b)
        EXPECT_TRUE(got[b] == alone[i][b])
            << "part " << i << " (" << parts[i].kernel << "), buffer " << b
            << " differs from the part run alone";
    }
  }
};

uint32_t ceilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

Part vecAdd(int n, uint32_t block, unsigned seed) {
  Part p;
  p.kernel = "vec_add";
  p.grid = {ceilDiv(n, block), 1, 1};
  p.block = {block, 1, 1};
  p.args = {scalar<int32_t>(n), buffer(randF(n, seed)),
            buffer(randF(n, seed + 1)), buffer(std::vector<float>(n, 0.f))};
  return p;
}

TEST_F(Coalesce, SameKernelThreeTenants) {
  compileWith("elementwise.sm_80.ptx", {"vec_add", "vec_add", "vec_add"});
  check({vecAdd(1000, 128, 1), vecAdd(777, 64, 3), vecAdd(4096, 256, 5)});
}

TEST_F(Coalesce, TwoKernelsOneLaunch) {
  compileWith("elementwise.sm_80.ptx", {"saxpy", "int_ops"});
  Part s;
  s.kernel = "saxpy";
  int n = 1500;
  s.grid = {ceilDiv(n, 128), 1, 1};
  s.block = {128, 1, 1};
  s.args = {scalar<int32_t>(n), scalar<float>(1.75f), buffer(randF(n, 7)),
            buffer(randF(n, 8))};
  Part i;
  i.kernel = "int_ops";
  int m = 900;
  i.grid = {ceilDiv(m, 96), 1, 1};
  i.block = {96, 1, 1};
  i.args = {scalar<int32_t>(m), buffer(randI(m, -100000, 100000, 9)),
            buffer(randI(m, 1, 5000, 10)),
            buffer(std::vector<int32_t>(m * 8, 7))};
  check({s, i, s});
}

TEST_F(Coalesce, DifferentBlockSizesWithBarriers) {
  compileWith("reduction.sm_80.ptx", {"block_sum_i32", "warp_vote"});
  Part a;
  a.kernel = "block_sum_i32";
  int n = 256 * 5 + 77;
  a.grid = {ceilDiv(n, 256), 1, 1};
  a.block = {256, 1, 1};
  a.args = {scalar<int32_t>(n), buffer(randI(n, -1000000, 1000000, 11)),
            buffer(std::vector<int32_t>(a.grid[0], 0))};
  Part b = a;
  int n2 = 160 * 4 + 45;
  b.grid = {ceilDiv(n2, 160), 1, 1};
  b.block = {160, 1, 1};
  b.args = {scalar<int32_t>(n2), buffer(randI(n2, -1000000, 1000000, 12)),
            buffer(std::vector<int32_t>(b.grid[0], 0))};
  Part v;
  v.kernel = "warp_vote";
  int w = 32 * 9;
  v.grid = {ceilDiv(w, 64), 1, 1};
  v.block = {64, 1, 1};
  v.args = {scalar<int32_t>(w), buffer(randI(w, -3, 3, 13)),
            buffer(std::vector<uint32_t>(4 * 9, 0xdeadbeef))};
  check({a, v, b});
}

TEST_F(Coalesce, TwoDimensionalGridsAndBlocks) {
  compileWith("transpose.sm_80.ptx", {"transpose_padded", "transpose_naive"});
  const int rows = 70, cols = 45;
  Part t;
  t.kernel = "transpose_padded";
  t.grid = {ceilDiv(cols, 32), ceilDiv(rows, 32), 1};
  t.block = {32, 8, 1};
  t.args = {scalar<int32_t>(rows), scalar<int32_t>(cols),
            buffer(randF(rows * cols, 14)),
            buffer(std::vector<float>(rows * cols, 0.f))};
  Part u;
  u.kernel = "transpose_naive";
  const int r2 = 33, c2 = 50;
  u.grid = {ceilDiv(c2, 16), ceilDiv(r2, 8), 1};
  u.block = {16, 8, 1};
  u.args = {scalar<int32_t>(r2), scalar<int32_t>(c2),
            buffer(randF(r2 * c2, 15)),
            buffer(std::vector<float>(r2 * c2, 0.f))};
  Part v = u;
  v.grid = {ceilDiv(c2, 4), ceilDiv(r2, 4), 2}; // z blocks: duplicates.
  v.block = {4, 4, 2};
  check({t, u, v});
}

// Atomics count every thread that runs: idle threads (the fused block is
// larger than two of the parts') must not run the part. histogram256 also
// strides by %ntid * %nctaid.
TEST_F(Coalesce, IdleThreadsDoNotRun) {
  compileWith("histogram.sm_80.ptx", {"histogram256", "histogram_float"});
  Part h;
  h.kernel = "histogram256";
  const int n = 10007;
  std::vector<uint8_t> data(n);
  auto r = randI(n, 0, 255, 18);
  for (int i = 0; i < n; ++i)
    data[i] = uint8_t(i % 3 ? r[i] : 17);
  h.grid = {4, 1, 1};
  h.block = {192, 1, 1};
  h.args = {scalar<int32_t>(n), buffer(data),
            buffer(std::vector<uint32_t>(256, 0))};
  auto floats = [](int m, uint32_t block, unsigned seed) {
    Part f;
    f.kernel = "histogram_float";
    const int nbins = 37;
    f.grid = {ceilDiv(m, block), 1, 1};
    f.block = {block, 1, 1};
    f.args = {scalar<int32_t>(m),     buffer(randF(m, seed)),
              scalar<float>(-2.5f),   scalar<float>(3.0f),
              scalar<int32_t>(nbins), buffer(std::vector<int32_t>(nbins, 0))};
    return f;
  };
  check({floats(3001, 96, 19), h, floats(2000, 256, 20)});
}

TEST_F(Coalesce, FunctionScopeLocalMemory) {
  compileWith("localmem.sm_80.ptx", {"bubble_sort_per_thread", "local_lut"});
  Part s;
  s.kernel = "bubble_sort_per_thread";
  const int nthreads = 150, k = 12;
  s.grid = {ceilDiv(nthreads, 64), 1, 1};
  s.block = {64, 1, 1};
  s.args = {scalar<int32_t>(nthreads), scalar<int32_t>(k),
            buffer(randI(k * nthreads, -1000, 1000, 16)),
            buffer(std::vector<int32_t>(k * nthreads, -7))};
  Part l;
  l.kernel = "local_lut";
  const int n = 1000;
  l.grid = {ceilDiv(n, 128), 1, 1};
  l.block = {128, 1, 1};
  l.args = {scalar<int32_t>(n), buffer(randI(n, INT32_MIN, INT32_MAX, 17)),
            buffer(std::vector<int32_t>(n, 0))};
  check({s, l});
}

TEST_F(Coalesce, FusedKernelReportsSharedMemoryAndRegisters) {
  compileWith("reduction.sm_80.ptx", {"block_sum_f32", "block_sum_i32"});
  ASSERT_TRUE(module);
  const KernelInfo *f = module->findKernel("block_sum_f32");
  const KernelInfo *i = module->findKernel("block_sum_i32");
  const KernelInfo *fused = module->findKernel("__wooly_coalesced");
  ASSERT_TRUE(f && i && fused);
  EXPECT_GT(f->staticSharedBytes, 0u);
  EXPECT_GT(i->staticSharedBytes, 0u);
  // Both kernels' shared variables coexist in the fused kernel.
  EXPECT_GE(fused->staticSharedBytes,
            f->staticSharedBytes + i->staticSharedBytes);
  EXPECT_GT(fused->registerEstimate, 0u);
}

} // namespace
