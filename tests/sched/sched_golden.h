// Loading the sched.* golden files (tools/golden/sched_flow.py) for the tests.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "parity/parity.h"

#include "rng/golden_reader.h"

namespace vidax::testing {

inline GoldenFile load_sched_golden(const std::string& file) {
  return GoldenFile::load(std::string(VIDAX_TEST_DATA_DIR) + "/golden/" + file);
}

// A tests/golden/ file opened as the parity runners take it (its kind and config from the metadata).
inline parity::Golden open_parity_golden(const std::string& file) {
  const std::string path = std::string(VIDAX_TEST_DATA_DIR) + "/golden/" + file;
  auto ck = io::Checkpoint::open(path);
  const auto& meta = ck.metadata();
  return parity::Golden{path, ck, meta.at("kind"), nlohmann::json::parse(meta.at("config"))};
}

// Every sched golden file and its kind.
struct SchedCase {
  const char* file;
  const char* kind;
};
inline constexpr SchedCase kSchedCases[] = {
    {"sched_flow_unipc_n10_s5.safetensors", "sched.flow_unipc"},
    {"sched_flow_unipc_n5_s3.safetensors", "sched.flow_unipc"},
    {"sched_flow_unipc_n50_s5.safetensors", "sched.flow_unipc"},
    {"sched_flow_unipc_n8_s5_nocorr.safetensors", "sched.flow_unipc"},  // disable_corrector [0, 3]
    {"sched_flow_unipc_n6_s3_order1.safetensors", "sched.flow_unipc"},
    {"sched_flow_dpmpp_n6_s3_order1.safetensors", "sched.flow_dpmpp"},
    {"sched_flow_unipc_diffusers_n10_s3.safetensors", "sched.flow_unipc"},
    {"sched_flow_unipc_diffusers_n5_s5.safetensors", "sched.flow_unipc"},
    {"sched_flow_dpmpp_n10_s5.safetensors", "sched.flow_dpmpp"},
    {"sched_flow_dpmpp_n5_s3.safetensors", "sched.flow_dpmpp"},
    {"sched_flow_euler_n10_s5.safetensors", "sched.flow_euler"},
    {"sched_flow_euler_n5_s3.safetensors", "sched.flow_euler"},
    {"sched_flow_euler_n5_s3_stochastic.safetensors", "sched.flow_euler"},
    {"sched_flow_match_discrete_n50_s7.safetensors", "sched.flow_match_discrete"},
    {"sched_flow_match_discrete_n10_s7.safetensors", "sched.flow_match_discrete"},
    {"sched_flow_match_discrete_n6_s5p3.safetensors", "sched.flow_match_discrete"},
    {"sched_flow_match_discrete_n5_s17.safetensors", "sched.flow_match_discrete"},
    {"sched_flow_match_discrete_n4_s7_noreverse.safetensors", "sched.flow_match_discrete"},
};

}  // namespace vidax::testing
