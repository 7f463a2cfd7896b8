// The request check's memory half: a plan's peak over its phases, a refusal
// above the machine's memory naming every item, a warning above what is free.
#include <gtest/gtest.h>

#include "error_of.h"
#include "pipeline/memory_plan.h"

using namespace vidax::pipeline;
using vidax::test::error_of;

TEST(MemoryPlan, PeakIsTheLargestPhase) {
  MemoryPlan p;
  p.items = {{"text encoder weights", 10e9}, {"DiT weights", 4e9}, {"DiT activations", 1e9}, {"VAE", 2e9}};
  EXPECT_DOUBLE_EQ(p.peak_bytes(), 17e9);  // no phases: everything at once
  p.phases = {{0}, {1, 2}, {1, 3}};
  EXPECT_DOUBLE_EQ(p.peak_bytes(), 10e9);
  p.phases = {{0, 1}, {1, 2}, {1, 3}};
  EXPECT_DOUBLE_EQ(p.peak_bytes(), 14e9);
}

TEST(MemoryPlan, RefusesAboveTheMachineWarnsAboveWhatIsFree) {
  MemoryPlan p;
  p.items = {{"DiT weights (bf16)", 28.6e9}, {"DiT activations", 2e9}};
  const std::string e = error_of([&] { check_memory(p, 20e9, 24e9, {}); });
  EXPECT_NE(e.find("this request needs about 30.6 GB of memory (DiT weights (bf16) 28.6 GB, DiT activations 2 GB; "
                   "peak 30.6 GB) but the machine has 24 GB in all"),
            std::string::npos) << e;
  std::string warned;
  check_memory(p, 20e9, 64e9, [&](const std::string& w) { warned = w; });
  EXPECT_NE(warned.find("only 20 GB are available now"), std::string::npos) << warned;
  warned.clear();
  check_memory(p, 40e9, 64e9, [&](const std::string& w) { warned = w; });
  EXPECT_EQ(warned, "");
  EXPECT_NO_THROW(check_memory(p, -1, -1, {}));  // unknown machine: not checked
}

TEST(MemoryPlan, MachineFactsAreRead) {
  EXPECT_GT(mem_total_bytes(), 0);
  EXPECT_GT(mem_available_bytes(), 0);
  EXPECT_LE(mem_available_bytes(), mem_total_bytes());
}
