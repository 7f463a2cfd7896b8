// The parity runners (rng.torch_cpu, sched.flow_*) on the committed golden
// files: every output* tensor of each file is produced, with its shape, and
// equal to the reference values bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "sched/parity_runners.h"
#include "sched/sched_golden.h"

namespace vidax {
namespace {

// Same values (as doubles) and shape; returns the number of differing elements.
int64_t differing(const Tensor& want, const Tensor& got) {
  EXPECT_EQ(want.shape(), got.shape());
  auto a = want.to_f64_vector(), b = got.to_f64_vector();
  if (a.size() != b.size()) return -1;
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) bad += std::memcmp(&a[i], &b[i], sizeof(double)) != 0;
  return bad;
}

void check_file(const std::string& file, parity::Produced (*runner)(const parity::Golden&, const parity::Options&)) {
  SCOPED_TRACE(file);
  auto g = testing::open_parity_golden(file);
  auto produced = runner(g, parity::Options{});
  int compared = 0;
  for (const auto& name : g.file.names()) {
    if (name.rfind("output", 0) != 0) continue;
    ASSERT_TRUE(produced.count(name)) << "runner did not produce " << name;
    EXPECT_EQ(differing(g.file.get(name), produced.at(name)), 0) << name;
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

TEST(ParityRunners, RngTorchCpu) {
  check_file("rng_torch_cpu.safetensors", run_rng_torch_cpu);
  check_file("rng_torch_cpu_default.safetensors", run_rng_torch_cpu);
}

TEST(ParityRunners, FlowSamplers) {
  for (const auto& c : testing::kSchedCases) check_file(c.file, sched::run_flow_sampler);
}

TEST(ParityRunners, TorchScalarMathWithinOneUlp) {
  auto g = testing::open_parity_golden("sched_torch_scalar_math.safetensors");
  auto produced = sched::run_torch_scalar_math(g, {});
  ASSERT_EQ(produced.size(), 3u);
  for (const auto& [name, got] : produced) {
    auto c = parity::compare(name, g.file.get(name), got, 1e-7);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << name << " rel_l2 " << c.rel_l2;
  }
  EXPECT_EQ(differing(g.file.get("output.expm1"), produced.at("output.expm1")), 0);
}

TEST(ParityRunners, RejectMalformedNames) {
  auto g = testing::open_parity_golden("rng_torch_cpu.safetensors");
  g.config["torch_version"] = "2.3";
  EXPECT_THROW(run_rng_torch_cpu(g, {}), Error);  // unverified torch version
  auto s = testing::open_parity_golden("sched_flow_unipc_n5_s3.safetensors");
  s.config["num_inference_steps"] = 6;  // one more step than the file has model outputs for
  EXPECT_THROW(sched::run_flow_sampler(s, {}), Error);
}

}  // namespace
}  // namespace vidax
