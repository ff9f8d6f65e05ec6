//===- make-seeds.cpp - Writes the protocol fuzzer's seed corpus -*- C++
//-*-===//
//
// wooly-fuzz-seeds OUT_DIR writes one file per seed into OUT_DIR
// (fuzz/corpus/protocol; fuzz/make-seeds.sh runs it). Each seed is one
// client connection in wooly-fuzz-protocol's input format: well-formed
// calls (hello, module load of a tiny PTX module, malloc, copies, memset,
// launches, streams, events, graphs, module variables) and a few that the
// server must refuse (bad version, envelope or payload frames, addresses,
// kernels). Addresses are tagged allocation references and module hashes
// are left empty, for the harness to fill in (wooly-fuzz-protocol.cpp).
//
//===----------------------------------------------------------------------===//

#include "wooly.pb.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace pb = wooly::v1;

namespace {

/// Two kernels and two module variables: `add` computes y[i] += scale * x[i]
/// for i < n (nvcc -ptx -arch=sm_75, comments dropped), `spin` adds p[i % 4]
/// to `counter` n times (nvcc's loop, not unrolled).
const char *const kPtx = R"(.version 9.0
.target sm_75
.address_size 64
.global .align 4 .u32 counter;
.const .align 4 .f32 scale;
.visible .entry add(
	.param .u64 add_param_0,
	.param .u64 add_param_1,
	.param .u32 add_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [add_param_0];
	ld.param.u64 	%rd2, [add_param_1];
	ld.param.u32 	%r2, [add_param_2];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.u32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.u32 	%rd4, %r1, 4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.f32 	%f1, [%rd5];
	ld.const.f32 	%f2, [scale];
	cvta.to.global.u64 	%rd6, %rd2;
	add.s64 	%rd7, %rd6, %rd4;
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	st.global.f32 	[%rd7], %f4;
$L__BB0_2:
	ret;
}
.visible .entry spin(
	.param .u64 spin_param_0,
	.param .u32 spin_param_1
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<6>;
	ld.param.u64 	%rd1, [spin_param_0];
	ld.param.u32 	%r1, [spin_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB1_3;
	mov.u32 	%r2, 0;
	mov.u64 	%rd3, counter;
$L__BB1_2:
	and.b32  	%r3, %r2, 3;
	mul.wide.u32 	%rd4, %r3, 4;
	add.s64 	%rd5, %rd2, %rd4;
	ld.global.u32 	%r4, [%rd5];
	atom.global.add.u32 	%r5, [%rd3], %r4;
	add.s32 	%r2, %r2, 1;
	setp.lt.u32 	%p2, %r2, %r1;
	@%p2 bra 	$L__BB1_2;
$L__BB1_3:
	ret;
}
)";

/// The module handle of the first module load of a session.
constexpr uint64_t kModule = 1;

/// Allocation `index` of the connection plus `offset` (the harness resolves
/// it: wooly-fuzz-protocol.cpp, kAddressTag).
uint64_t alloc(uint64_t index, uint32_t offset = 0) {
  return 0xA110ull << 48 | index << 32 | offset;
}

/// The bytes of a little-endian value.
template <typename T> std::string bytesOf(T value) {
  std::string s(sizeof(T), '\0');
  std::memcpy(&s[0], &value, sizeof(T));
  return s;
}

/// A seed: the messages of one connection, each an envelope and payloads.
class Seed {
public:
  /// A message of one call (seq numbered in order) and its payload frames.
  Seed &call(const std::function<void(pb::Call &)> &fill,
             std::vector<std::string> payloads = {}) {
    return batch({fill}, std::move(payloads));
  }

  /// A message of several calls.
  Seed &batch(const std::vector<std::function<void(pb::Call &)>> &fills,
              std::vector<std::string> payloads = {}) {
    pb::Request r;
    r.set_version(pb::PROTOCOL_VERSION_CURRENT);
    for (const auto &fill : fills) {
      pb::Call *c = r.add_calls();
      c->set_seq(++seq);
      fill(*c);
    }
    payloads.insert(payloads.begin(), r.SerializeAsString());
    return raw(std::move(payloads));
  }

  /// A message of the frames given, as they are.
  Seed &raw(std::vector<std::string> frames) {
    messages.push_back(std::move(frames));
    return *this;
  }

  /// The input: every frame as control byte, u16 length, bytes.
  std::string encode() const {
    std::string out;
    for (const auto &frames : messages)
      for (size_t i = 0; i < frames.size(); ++i) {
        out += char(i + 1 < frames.size() ? 1 : 0);
        out += bytesOf(uint16_t(frames[i].size()));
        out += frames[i];
      }
    return out;
  }

private:
  uint64_t seq = 0;
  std::vector<std::vector<std::string>> messages;
};

// Calls, as fillers for Seed::call.
auto hello(const char *tenant = "fuzz") {
  return [=](pb::Call &c) {
    c.mutable_hello()->set_tenant(tenant);
    c.mutable_hello()->set_client("wooly-fuzz-seeds");
  };
}
auto moduleLoad(std::string hash = "") {
  return [=](pb::Call &c) {
    c.mutable_module_load()->set_hash(hash);
    c.mutable_module_load()->set_payload_bytes(std::strlen(kPtx));
    c.mutable_module_load()->set_name("tiny");
  };
}
auto mallocOf(uint64_t bytes) {
  return [=](pb::Call &c) { c.mutable_malloc()->set_bytes(bytes); };
}
auto freeOf(uint64_t address) {
  return [=](pb::Call &c) { c.mutable_free()->set_address(address); };
}
auto copyIn(uint64_t dst, uint64_t bytes, uint64_t stream = 0,
            bool async = false) {
  return [=](pb::Call &c) {
    pb::CopyToDevice *m = c.mutable_copy_to_device();
    m->set_dst(dst);
    m->set_payload_bytes(bytes);
    m->set_stream(stream);
    m->set_async(async);
  };
}
auto copyOut(uint64_t src, uint64_t bytes, uint64_t stream = 0) {
  return [=](pb::Call &c) {
    pb::CopyFromDevice *m = c.mutable_copy_from_device();
    m->set_src(src);
    m->set_bytes(bytes);
    m->set_stream(stream);
  };
}
auto memsetOf(uint64_t dst, uint32_t value, uint64_t bytes, uint64_t stream = 0,
              bool async = false) {
  return [=](pb::Call &c) {
    pb::Memset *m = c.mutable_memset();
    m->set_dst(dst);
    m->set_value(value);
    m->set_bytes(bytes);
    m->set_stream(stream);
    m->set_async(async);
  };
}
auto copyD2D(uint64_t dst, uint64_t src, uint64_t bytes, bool async = false) {
  return [=](pb::Call &c) {
    pb::CopyDeviceToDevice *m = c.mutable_copy_device_to_device();
    m->set_dst(dst);
    m->set_src(src);
    m->set_bytes(bytes);
    m->set_async(async);
  };
}
/// `add` over n floats of allocations x and y (params: u64, u64, u32).
auto launchAdd(uint64_t x, uint64_t y, uint32_t n, uint64_t stream = 0,
               uint32_t block = 64, const char *kernel = "add") {
  return [=](pb::Call &c) {
    pb::Launch *l = c.mutable_launch();
    l->set_module(kModule);
    l->set_kernel(kernel);
    l->mutable_grid()->set_x((n + block - 1) / block);
    l->mutable_grid()->set_y(1);
    l->mutable_grid()->set_z(1);
    l->mutable_block()->set_x(block);
    l->mutable_block()->set_y(1);
    l->mutable_block()->set_z(1);
    l->set_params(bytesOf(x) + bytesOf(y) + bytesOf(n));
    l->set_stream(stream);
  };
}
/// `spin` n times over allocation p (params: u64, u32), one thread.
auto launchSpin(uint64_t p, uint32_t n) {
  return [=](pb::Call &c) {
    pb::Launch *l = c.mutable_launch();
    l->set_module(kModule);
    l->set_kernel("spin");
    for (pb::Dim3 *d : {l->mutable_grid(), l->mutable_block()}) {
      d->set_x(1);
      d->set_y(1);
      d->set_z(1);
    }
    l->set_params(bytesOf(p) + bytesOf(n));
  };
}
auto symbolIn(const char *symbol, uint64_t bytes, uint64_t offset = 0) {
  return [=](pb::Call &c) {
    pb::CopyToSymbol *m = c.mutable_copy_to_symbol();
    m->set_module(kModule);
    m->set_symbol(symbol);
    m->set_offset(offset);
    m->set_payload_bytes(bytes);
  };
}
auto symbolOut(const char *symbol, uint64_t bytes) {
  return [=](pb::Call &c) {
    pb::CopyFromSymbol *m = c.mutable_copy_from_symbol();
    m->set_module(kModule);
    m->set_symbol(symbol);
    m->set_bytes(bytes);
  };
}
void deviceSync(pb::Call &c) { c.mutable_device_synchronize(); }

/// `n` floats 1, 2, 3, ... as bytes.
std::string floats(uint32_t n) {
  std::string s;
  for (uint32_t i = 0; i < n; ++i)
    s += bytesOf(float(i + 1));
  return s;
}

std::vector<std::pair<std::string, Seed>> seeds() {
  const std::string ptx = kPtx;
  std::vector<std::pair<std::string, Seed>> all;
  auto add = [&](const char *name) -> Seed & {
    all.emplace_back(name, Seed());
    return all.back().second;
  };
  // A session with the tiny module and two 1 KiB allocations of 256 floats.
  auto withModule = [&](const char *name) -> Seed & {
    return add(name)
        .call(hello())
        .call(moduleLoad(), {ptx})
        .call(mallocOf(1024))
        .call(mallocOf(1024));
  };

  add("hello").call(hello());
  add("device")
      .call(hello())
      .call([](pb::Call &c) { c.mutable_get_device(); })
      .call([](pb::Call &c) { c.mutable_mem_info(); })
      .call([](pb::Call &c) { c.mutable_ping(); });
  add("module")
      .call(hello())
      .call(moduleLoad(), {ptx})
      .call([](pb::Call &c) {
        c.mutable_func_attributes()->set_module(kModule);
        c.mutable_func_attributes()->set_kernel("add");
      })
      .call([](pb::Call &c) {
        pb::Occupancy *o = c.mutable_occupancy();
        o->set_module(kModule);
        o->set_kernel("add");
        o->set_block_threads(128);
        o->set_dynamic_shared_bytes(1024);
      })
      .call([](pb::Call &c) {
        c.mutable_get_symbol()->set_module(kModule);
        c.mutable_get_symbol()->set_symbol("counter");
      })
      .call(
          [](pb::Call &c) { c.mutable_module_unload()->set_module(kModule); });
  // The hash alone first (NOT_FOUND unless cached), then with the text.
  add("module-by-hash")
      .call(hello())
      .call([](pb::Call &c) {
        c.mutable_module_load()->set_hash(
            "0000000000000000000000000000000000000000000000000000000000000000");
      })
      .call(moduleLoad(), {ptx});
  add("copies")
      .call(hello())
      .call(mallocOf(256))
      .call(mallocOf(256))
      .call(copyIn(alloc(0), 256), {floats(64)})
      .call(copyD2D(alloc(1), alloc(0), 256))
      .call(memsetOf(alloc(0, 16), 7, 64))
      .call(copyOut(alloc(1), 256))
      .call(copyOut(alloc(0, 8), 128))
      .call(freeOf(alloc(0)))
      .call(freeOf(alloc(1)));
  withModule("launch")
      .call(copyIn(alloc(0), 1024), {floats(256)})
      .call(symbolIn("scale", 4), {bytesOf(2.0f)})
      .call(launchAdd(alloc(0), alloc(1), 256))
      .call(deviceSync)
      .call(copyOut(alloc(1), 1024));
  // Asynchronous calls batched into one message, as the client sends them.
  withModule("launch-batched")
      .batch({copyIn(alloc(0), 1024, 0, true),
              launchAdd(alloc(0), alloc(1), 256),
              memsetOf(alloc(0), 0, 1024, 0, true),
              launchAdd(alloc(1), alloc(0), 200, 0, 32)},
             {floats(256)})
      .call(copyOut(alloc(0), 1024));
  withModule("streams")
      .call([](pb::Call &c) { c.mutable_stream_create(); })
      .batch({copyIn(alloc(0), 512, 2, true),
              memsetOf(alloc(1), 1, 64, 2, true),
              launchAdd(alloc(0), alloc(1), 128, 2)},
             {floats(128)})
      .call([](pb::Call &c) { c.mutable_stream_query()->set_stream(2); })
      .call([](pb::Call &c) { c.mutable_stream_synchronize()->set_stream(2); })
      .call(copyOut(alloc(1), 512, 2))
      .call([](pb::Call &c) { c.mutable_stream_destroy()->set_stream(2); });
  // Handles: module 1, streams and events from 2 on.
  withModule("events")
      .call([](pb::Call &c) { c.mutable_event_create(); })
      .call([](pb::Call &c) { c.mutable_event_create(); })
      .call([](pb::Call &c) { c.mutable_stream_create(); })
      .batch({[](pb::Call &c) { c.mutable_event_record()->set_event(2); },
              launchAdd(alloc(0), alloc(1), 256),
              [](pb::Call &c) {
                c.mutable_stream_wait_event()->set_stream(4);
                c.mutable_stream_wait_event()->set_event(2);
              },
              launchAdd(alloc(1), alloc(0), 256, 4),
              [](pb::Call &c) {
                c.mutable_event_record()->set_event(3);
                c.mutable_event_record()->set_stream(4);
              }})
      .call([](pb::Call &c) { c.mutable_event_synchronize()->set_event(3); })
      .call([](pb::Call &c) { c.mutable_event_query()->set_event(2); })
      .call([](pb::Call &c) {
        c.mutable_event_elapsed()->set_start(2);
        c.mutable_event_elapsed()->set_end(3);
      })
      .call([](pb::Call &c) { c.mutable_event_destroy()->set_event(2); });
  withModule("graph")
      .call([](pb::Call &c) {
        pb::GraphCreate *g = c.mutable_graph_create();
        launchAdd(alloc(0), alloc(1), 256)(*g->add_calls());
        memsetOf(alloc(0), 3, 1024, 0, true)(*g->add_calls());
        copyD2D(alloc(1, 512), alloc(0), 512, true)(*g->add_calls());
      })
      .call([](pb::Call &c) { c.mutable_graph_launch()->set_graph(2); })
      .call([](pb::Call &c) { c.mutable_graph_launch()->set_graph(2); })
      .call(deviceSync)
      .call([](pb::Call &c) { c.mutable_graph_destroy()->set_graph(2); });
  withModule("symbols")
      .call(symbolIn("counter", 4), {bytesOf(uint32_t(5))})
      .call(copyIn(alloc(0), 16), {floats(4)})
      .call(launchSpin(alloc(0), 100))
      .call(symbolOut("counter", 4))
      .call([](pb::Call &c) {
        c.mutable_get_symbol()->set_module(kModule);
        c.mutable_get_symbol()->set_symbol("scale");
      })
      .call(symbolIn("scale", 4, 2), {bytesOf(1.0f)});
  // A kernel that stores past its allocation: a sticky launch failure.
  withModule("kernel-fault")
      .call(launchAdd(alloc(0), alloc(1, 1 << 20), 256))
      .call(deviceSync)
      .call(mallocOf(64))
      .call([](pb::Call &c) { c.mutable_ping(); });
  withModule("launch-errors")
      .batch({launchAdd(alloc(0), alloc(1), 256, 0, 64, "nope"),
              launchAdd(alloc(0), alloc(1), 0),
              launchAdd(alloc(0), alloc(1), 4096, 0, 4096),
              launchAdd(alloc(0), alloc(1), 256, 99),
              [](pb::Call &c) {
                launchAdd(alloc(0), alloc(1), 256)(c);
                c.mutable_launch()->set_params("short");
              },
              [](pb::Call &c) {
                launchAdd(alloc(0), alloc(1), 256)(c);
                c.mutable_launch()->set_dynamic_shared_bytes(1u << 31);
              },
              [](pb::Call &c) {
                launchAdd(alloc(0), alloc(1), 256)(c);
                c.mutable_launch()->set_module(7);
              }})
      .call(deviceSync);
  withModule("unload-then-launch")
      .call([](pb::Call &c) { c.mutable_module_unload()->set_module(kModule); })
      .call(launchAdd(alloc(0), alloc(1), 256))
      .call(deviceSync);
  add("bad-addresses")
      .call(hello())
      .call(mallocOf(64))
      .call(copyIn(alloc(0, 60), 16), {floats(4)})
      .call(copyOut(alloc(0), 1ull << 40))
      .call(copyD2D(alloc(0, 32), alloc(0), 64))
      .call(memsetOf(alloc(0), 300, 64))
      .call(freeOf(alloc(0, 8)))
      .call(freeOf(alloc(0)))
      .call(freeOf(alloc(0)))
      .call(copyOut(0x1000, 4));
  add("memory-limits")
      .call(hello())
      .call(mallocOf(0))
      .call(mallocOf(1ull << 30))
      .call(mallocOf(~0ull))
      .call(mallocOf(60ull << 20))
      .call(mallocOf(8ull << 20))
      .call([](pb::Call &c) { c.mutable_mem_info(); });
  const std::string bad = ".version 9.0\n.target sm_75\n.address_size 64\n"
                          ".visible .entry add() { frob.b32 %r1; }\n";
  add("compile-error")
      .call(hello())
      .call(
          [&](pb::Call &c) {
            c.mutable_module_load()->set_payload_bytes(bad.size());
          },
          {bad})
      .call(mallocOf(64))
      .call(launchAdd(alloc(0), alloc(0), 4))
      .call(deviceSync);
  add("no-hello").call(mallocOf(64)).call(deviceSync);
  add("hello-twice").call(hello()).call(hello("other")).call(hello(""));
  add("version-mismatch").raw({[] {
    pb::Request r;
    r.set_version(7);
    r.add_calls()->set_seq(1);
    r.mutable_calls(0)->mutable_ping();
    return r.SerializeAsString();
  }()});
  add("malformed-envelope")
      .call(hello())
      .raw({"\xff\xff\xff not a request"})
      .raw({""})
      .call([](pb::Call &c) { c.mutable_ping(); });
  add("payload-frames")
      .call(hello())
      .call(mallocOf(64))
      .call(copyIn(alloc(0), 16))
      .call(copyIn(alloc(0), 16), {floats(3)})
      .call(mallocOf(64), {"unclaimed"})
      .call(moduleLoad(), {ptx.substr(0, 100)});
  // A synchronous call in the middle of a message.
  add("sync-not-last").call(hello()).batch({mallocOf(64), [](pb::Call &c) {
                                              c.mutable_ping();
                                            }});
  // Texture and surface objects over a 16 x 16 float4 array, one that is
  // not supported yet, and destroys of a guessed handle (0x100000001, a
  // fresh backend's first) as texture and as surface.
  auto texture = [](bool surface, uint32_t anisotropy) {
    return [=](pb::Call &c) {
      pb::TextureCreate *t = c.mutable_texture_create();
      pb::TextureResource *r = t->mutable_resource();
      r->set_kind(0);
      r->set_address(alloc(0));
      for (int i = 0; i < 4; ++i)
        r->add_channel_bits(32);
      r->set_channel_kind(2);
      r->set_width(16);
      r->set_height(16);
      pb::TextureSampling *s = t->mutable_sampling();
      for (int i = 0; i < 3; ++i)
        s->add_address_mode(uint32_t(i));
      s->set_filter_mode(1);
      for (int i = 0; i < 4; ++i)
        s->add_border_color(0.5f);
      s->set_max_anisotropy(anisotropy);
      t->set_surface(surface);
    };
  };
  auto destroy = [](bool surface) {
    return [=](pb::Call &c) {
      c.mutable_texture_destroy()->set_handle(0x100000001ull);
      c.mutable_texture_destroy()->set_surface(surface);
    };
  };
  add("textures")
      .call(hello())
      .call(mallocOf(16 * 16 * 16))
      .call(texture(false, 0))
      .call(texture(true, 0))
      .call(texture(false, 8))
      .call(destroy(false))
      .call(destroy(true))
      .call(freeOf(alloc(0)));
  return all;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: wooly-fuzz-seeds OUT_DIR\n");
    return 2;
  }
  int index = 0;
  for (const auto &[name, seed] : seeds()) {
    char file[256];
    std::snprintf(file, sizeof file, "%s/%02d-%s", argv[1], ++index,
                  name.c_str());
    std::FILE *f = std::fopen(file, "wb");
    std::string bytes = seed.encode();
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() ||
        std::fclose(f) != 0) {
      std::fprintf(stderr, "wooly-fuzz-seeds: cannot write %s\n", file);
      return 1;
    }
  }
  std::printf("wrote %d seeds to %s\n", index, argv[1]);
  return 0;
}
