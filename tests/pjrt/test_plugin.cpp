// The plugin loader and its bad input (issue 21): each case a clear error naming the plugin and
// its versions, never an abort. Every TEST is its own ctest process (gtest_discover_tests), so a
// plugin that aborted would fail only its own test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "pjrt_test.h"
#include "pipeline/error_of.h"

using namespace vidax;
using vidax::test::error_of;
using ::testing::HasSubstr;

namespace {

#ifdef VIDAX_PJRT_FAKE_DIR
std::string fake(const char* name) { return std::string(VIDAX_PJRT_FAKE_DIR) + "/fake_pjrt_" + name + ".so"; }
#else
std::string fake(const char*) { return ""; }
#endif

}  // namespace

TEST(PjrtCompileOptions, NeverEmptyAndTheSmallestIsTheSixBytes) {
  EXPECT_EQ(pjrt::CompileOptions{}.serialize(), std::string("\x1a\x04\x20\x01\x28\x01", 6));
  pjrt::CompileOptions spmd;
  spmd.num_partitions = 4;
  spmd.spmd = true;
  EXPECT_EQ(spmd.serialize(), std::string("\x1a\x06\x20\x01\x28\x04\x30\x01", 8));
  pjrt::CompileOptions bad;
  bad.num_replicas = 0;
  EXPECT_THAT(error_of([&] { bad.serialize(); }), HasSubstr("must be >= 1"));
}

TEST(PjrtPlugin, ResolvesTheFlagThenTheEnvironment) {
  ::setenv("VIDAX_PJRT_PLUGIN", "/from/env.so", 1);
  EXPECT_EQ(pjrt::Plugin::resolve_path("/from/flag.so"), "/from/flag.so");
  EXPECT_EQ(pjrt::Plugin::resolve_path(""), "/from/env.so");
  ::unsetenv("VIDAX_PJRT_PLUGIN");
  EXPECT_THAT(error_of([] { pjrt::Plugin::resolve_path(""); }),
              HasSubstr("pass --pjrt-plugin FILE or set VIDAX_PJRT_PLUGIN"));
}

TEST(PjrtPlugin, ReportsThePinnedPluginsVersionsAndDevices) {
  VIDAX_REQUIRE_PJRT();
  auto p = pjrt::Plugin::load(VIDAX_PJRT_TEST_PLUGIN);
  EXPECT_EQ(p->info().api_major, 0);
  EXPECT_EQ(p->info().api_minor, 81);
  EXPECT_EQ(p->info().stablehlo_version, "1.13.3");
  pjrt::Client c(p);
  EXPECT_EQ(c.info().platform, "cpu");
  EXPECT_EQ(c.device_count(), 4u);
  EXPECT_THAT(c.info().str(), HasSubstr("(PJRT API 0.81, StableHLO 1.13.3, platform cpu)"));
  pjrt::Client one(p, {{"cpu_device_count", 1}});
  EXPECT_EQ(one.device_count(), 1u);
}

TEST(PjrtPlugin, RunsAModuleOnTheFallbackPluginToo) {
  VIDAX_REQUIRE_PJRT();
  if (!std::filesystem::exists(VIDAX_PJRT_TEST_FALLBACK))
    GTEST_SKIP() << VIDAX_PJRT_TEST_FALLBACK << " not fetched (VIDAX_PJRT_FALLBACK=1 scripts/fetch-pjrt-plugin.sh)";
  auto p = pjrt::Plugin::load(VIDAX_PJRT_TEST_FALLBACK);
  EXPECT_EQ(p->info().api_minor, 115);
  EXPECT_EQ(p->info().stablehlo_version, "1.20.0");
  pjrt::Client c(p);
  const pjrt::Executable e = c.compile(R"(module {
  func.func public @main(%a: tensor<3xf32>) -> (tensor<3xf32>) {
    %0 = "stablehlo.multiply"(%a, %a) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%0) : (tensor<3xf32>) -> ()
  }
})");
  const pjrt::Buffer a = c.upload(Tensor::from_f32({1, -2, 3}, {3}));
  const auto out = e.execute({&a});
  EXPECT_EQ(out[0].to_host().to_f32_vector(), (std::vector<float>{1, 4, 9}));
}

TEST(PjrtBadInput, AMissingFile) {
  VIDAX_REQUIRE_PJRT();
  const std::string m = error_of([] { pjrt::Plugin::load("/nonexistent/dir/xla_plugin.so"); });
  EXPECT_THAT(m, HasSubstr("PJRT plugin /nonexistent/dir/xla_plugin.so: no such file"));
}

TEST(PjrtBadInput, AFileThatIsNotASharedLibrary) {
  VIDAX_REQUIRE_PJRT();
  const std::string path = testing::TempDir() + "/not_a_library.so";
  std::ofstream(path) << "just text\n";
  EXPECT_THAT(error_of([&] { pjrt::Plugin::load(path); }),
              HasSubstr("PJRT plugin " + path + ": not a loadable shared library"));
}

TEST(PjrtBadInput, ALibraryWithoutGetPjrtApi) {
  VIDAX_REQUIRE_PJRT();
  const std::string path = fake("not_a_plugin");
  EXPECT_THAT(error_of([&] { pjrt::Plugin::load(path); }),
              HasSubstr("PJRT plugin " + path + ": not a PJRT plugin (it exports no GetPjrtApi)"));
}

TEST(PjrtBadInput, AnIncompatibleApiVersion) {
  VIDAX_REQUIRE_PJRT();
  const std::string path = fake("bad_version");
  const std::string m = error_of([&] { pjrt::Plugin::load(path); });
  EXPECT_THAT(m, HasSubstr("PJRT plugin " + path + " (PJRT API 99.0"));
  EXPECT_THAT(m, HasSubstr("incompatible PJRT API version 99.0"));
  EXPECT_THAT(m, HasSubstr("runs plugins of API 0.x with x >= "));
}

TEST(PjrtBadInput, APluginThatFindsNoDevice) {
  VIDAX_REQUIRE_PJRT();
  const std::string path = fake("no_device");
  auto p = pjrt::Plugin::load(path);
  const std::string m = error_of([&] { pjrt::Client c(p); });
  EXPECT_THAT(m, HasSubstr("PJRT plugin " + path + " (PJRT API 0.81, StableHLO 1.2.3)"));
  EXPECT_THAT(m, HasSubstr("creating a client"));
  EXPECT_THAT(m, HasSubstr("No visible fake devices"));
}

TEST(PjrtBadInput, AClientWithZeroDevices) {
  VIDAX_REQUIRE_PJRT();
  const std::string path = fake("zero_devices");
  auto p = pjrt::Plugin::load(path);
  EXPECT_THAT(error_of([&] { pjrt::Client c(p); }),
              HasSubstr("PJRT plugin " + path + " (PJRT API 0.81, StableHLO 1.2.3, platform fake): the client has "
                        "no addressable device"));
}

TEST(PjrtBadInput, AModuleThePluginRejects) {
  VIDAX_REQUIRE_PJRT();
  const pjrt::Client& c = pjrt_test::session().client();
  const std::string m = error_of([&] { c.compile("module { this is not stablehlo }"); });
  EXPECT_THAT(m, HasSubstr("(PJRT API 0.81, StableHLO 1.13.3, platform cpu): compiling the StableHLO module "
                           "(the plugin rejected it)"));
  // A well-formed module with a type error is rejected too, not aborted.
  const std::string t = error_of([&] {
    c.compile(R"(module {
  func.func public @main(%a: tensor<3xf32>) -> (tensor<4xf32>) {
    "func.return"(%a) : (tensor<3xf32>) -> ()
  }
})");
  });
  EXPECT_THAT(t, HasSubstr("the plugin rejected it"));
}

TEST(PjrtBadInput, AWrongArgumentCountIsCheckedBeforeExecute) {
  VIDAX_REQUIRE_PJRT();
  const pjrt::Client& c = pjrt_test::session().client();
  const pjrt::Executable e = c.compile(R"(module {
  func.func public @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>) {
    %0 = "stablehlo.add"(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%0) : (tensor<3xf32>) -> ()
  }
})");
  const pjrt::Buffer a = c.upload(Tensor::from_f32({1, 2, 3}, {3}));
  EXPECT_THAT(error_of([&] { e.execute({&a}); }), HasSubstr("executing"));
}
