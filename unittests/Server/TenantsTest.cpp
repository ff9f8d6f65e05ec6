//===- TenantsTest.cpp - The tenants file of wooly-serve ------------------===//

#include "Wooly/Server/Tenants.h"

#include "gtest/gtest.h"

using namespace wooly::server;

namespace {

std::string errorOf(llvm::Expected<TenantRegistry> r) {
  if (r)
    return "";
  return llvm::toString(r.takeError());
}

// A full entry and the defaults.
TEST(TenantsTest, ParsesEntries) {
  auto r = parseTenants("tenants:\n"
                        "  - name: inference\n"
                        "    token: \"s3cret-1\"\n"
                        "    class: latency-critical\n"
                        "    weight: 2\n"
                        "    sla_ms: 5\n"
                        "    memory: 4GiB\n"
                        "    dedup: false\n"
                        "  - name: batch\n"
                        "    token: t2\n",
                        "t.yaml");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_FALSE(r->open);
  ASSERT_EQ(r->tenants.size(), 2u);
  const TenantConfig *t = r->find("inference");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->token, "s3cret-1");
  EXPECT_EQ(t->priorityClass, PriorityClass::LatencyCritical);
  EXPECT_EQ(t->weight, 2u);
  EXPECT_EQ(t->slaMs, 5.0);
  EXPECT_EQ(t->quotaBytes, 4ull << 30);
  EXPECT_FALSE(t->dedup);
  const TenantConfig *b = r->find("batch");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->priorityClass, PriorityClass::Normal);
  EXPECT_EQ(b->weight, 1u);
  EXPECT_EQ(b->quotaBytes, 0u);
  EXPECT_TRUE(b->dedup);
  EXPECT_EQ(r->find("nobody"), nullptr);
}

// Each mistake is named with its line and column.
TEST(TenantsTest, ErrorsAreLocated) {
  EXPECT_EQ(errorOf(parseTenants("tenants:\n  - name: a\n    token: x\n"
                                 "    class: urgent\n",
                                 "t.yaml")),
            "t.yaml:4:12: unknown class 'urgent' (latency-critical, normal or "
            "best-effort)");
  EXPECT_EQ(errorOf(parseTenants("tenants:\n  - name: a\n", "t.yaml")),
            "t.yaml:2:5: tenant 'a' needs a 'token'");
  EXPECT_EQ(errorOf(parseTenants("tenants:\n  - name: a\n    token: x\n"
                                 "  - name: a\n    token: y\n",
                                 "t.yaml")),
            "t.yaml:4:5: tenant 'a' is listed twice");
  EXPECT_EQ(errorOf(parseTenants("tenants:\n  - name: a\n    token: x\n"
                                 "    sla_ms: 3\n",
                                 "t.yaml")),
            "t.yaml:2:5: tenant 'a': sla_ms is for latency-critical tenants "
            "only");
  EXPECT_EQ(errorOf(parseTenants("tenants:\n  - name: a\n    token: x\n"
                                 "    memory: lots\n",
                                 "t.yaml")),
            "t.yaml:4:13: 'lots' is not a byte size (e.g. 4096, 512MiB, "
            "4GiB, 1GB)");
  EXPECT_EQ(errorOf(parseTenants("tenants:\n  - name: a\n    token: x\n"
                                 "    colour: red\n",
                                 "t.yaml")),
            "t.yaml:4:5: unknown key 'colour' (name, token, class, weight, "
            "sla_ms, memory, dedup, limits)");
  EXPECT_EQ(errorOf(parseTenants("tenants:\n  - name: a\n    token: x\n"
                                 "    limits: {kernels: 3}\n",
                                 "t.yaml")),
            "t.yaml:4:14: unknown limit 'kernels' (modules, streams, events, "
            "graphs, allocations, outstanding, outstanding_bytes)");
  EXPECT_EQ(errorOf(parseTenants("tenants:\n  - name: a\n    token: x\n"
                                 "    limits: {modules: 0}\n",
                                 "t.yaml")),
            "t.yaml:4:23: a limit must be at least 1");
  EXPECT_NE(errorOf(parseTenants("tenants: [\n", "t.yaml")).find("t.yaml:"),
            std::string::npos);
  EXPECT_EQ(errorOf(parseTenants("other: 1\n", "t.yaml")),
            "t.yaml: expected a map with a 'tenants' list");
  EXPECT_NE(errorOf(loadTenants("/nonexistent/tenants.yaml"))
                .find("cannot read tenants file"),
            std::string::npos);
}

TEST(TenantsTest, Limits) {
  auto r = parseTenants("tenants:\n"
                        "  - name: a\n"
                        "    token: x\n"
                        "    limits:\n"
                        "      modules: 2\n"
                        "      outstanding: 100\n"
                        "      outstanding_bytes: 1MiB\n"
                        "  - name: b\n"
                        "    token: y\n",
                        "t.yaml");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const TenantConfig *a = r->find("a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->limits.modules, 2u);
  EXPECT_EQ(a->limits.outstanding, 100u);
  EXPECT_EQ(a->limits.outstandingBytes, 1u << 20);
  EXPECT_EQ(a->limits.streams, 0u); // the server's
  EXPECT_EQ(r->find("b")->limits.modules, 0u);
}

TEST(TenantsTest, ByteSizes) {
  EXPECT_EQ(*parseByteSize("4096"), 4096u);
  EXPECT_EQ(*parseByteSize("64KiB"), 65536u);
  EXPECT_EQ(*parseByteSize("1.5GiB"), 3ull << 29);
  EXPECT_EQ(*parseByteSize("2GB"), 2000000000u);
  EXPECT_EQ(*parseByteSize(" 8 MiB "), 8u << 20);
  auto bad = parseByteSize("12 furlongs");
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "'12 furlongs': unknown unit 'furlongs' (B, KiB, MiB, GiB, TiB, "
            "KB, MB, GB or TB)");
  auto huge = parseByteSize("99999999TiB");
  ASSERT_FALSE(bool(huge));
  llvm::consumeError(huge.takeError());
}

} // namespace
