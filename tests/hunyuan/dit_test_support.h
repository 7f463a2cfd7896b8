// What the HunyuanVideo 1.0 and 1.5 DiT tests share (tests/hunyuan/test_dit_parity.cpp,
// tests/hunyuan15/test_dit.cpp): the golden files of a kind in a folder, one case per file and
// precision, the golden comparison (every output / inter.* tensor within the precision's bound),
// a loaded golden for the controls, and an error-message check.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/checkpoint.h"
#include "nn/params.h"
#include "translate/source.h"
#include "translate/translate.h"
#include "test_diff.h"
#include "test_expect.h"
#include "test_names.h"

namespace vidax::test::hunyuan_dit {

// The bf16 run's bound against the fp32 reference: bf16 GEMM inputs (8 bits of mantissa) through
// 2-6 blocks; measured at most 4.3e-3 (1.0) and 5.8e-3 (1.5) relative L2 on these files
// (docs/models/hunyuanvideo.md).
constexpr double kBf16Bound = 1e-2;

// The .safetensors files of `dir` whose __metadata__.kind is `kind` (a folder may hold other
// kinds' goldens too), sorted.
inline std::vector<std::string> golden_files(const std::filesystem::path& dir, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors" && io::Checkpoint::open(e.path().string()).metadata().at("kind") == kind)
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Case {
  std::string file, precision;
};
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.file << " (" << c.precision << ")"; }

inline std::vector<Case> all_cases(const std::vector<std::string>& files) {
  std::vector<Case> out;
  for (const auto& f : files)
    for (const char* p : {"fp32", "bf16"}) out.push_back({f, p});
  return out;
}

inline std::string case_name(const testing::TestParamInfo<Case>& i) {
  return gtest_name(std::filesystem::path(i.param.file).stem().string()) + "_" + i.param.precision;
}

// Every output* / inter.* tensor of the file against what the kind produced: relative L2 within
// 1e-5 (fp32) or kBf16Bound (bf16), and at fp32 max abs within fp32_max_abs when it is >= 0.
// Prints each tensor's numbers; returns how many were compared.
inline int expect_matches(const io::Checkpoint& file, const std::map<std::string, Tensor>& produced,
                          const std::string& precision, double fp32_max_abs = -1) {
  const double bound = precision == "fp32" ? 1e-5 : kBf16Bound;
  int compared = 0;
  for (const std::string& name : file.names()) {
    if (name.rfind("output", 0) != 0 && name.rfind("inter.", 0) != 0) continue;
    auto it = produced.find(name);
    EXPECT_NE(it, produced.end()) << name << " is not produced (every tap of these files is an engine tap)";
    if (it == produced.end()) continue;
    const Diff d = diff(file.get(name), it->second);
    std::printf("  %-40s max_abs=%.3g rel_l2=%.3g\n", name.c_str(), d.max_abs, d.rel_l2);
    EXPECT_LE(d.rel_l2, bound) << name << " (" << precision << ") " << d.note;
    if (precision == "fp32" && fp32_max_abs >= 0) {
      EXPECT_LE(d.max_abs, fp32_max_abs) << name;
    }
    ++compared;
  }
  return compared;
}

// A golden's model and inputs, for the controls: Config / Inputs of either DiT.
template <class Config, class Inputs>
struct Loaded {
  io::Checkpoint file;
  Config cfg;
  std::map<std::string, Tensor> params;  // engine names
  Inputs in;
};

template <class Config, class Inputs>
double output_error(const Loaded<Config, Inputs>& l, const Tensor& got) {
  return rel_l2(l.file.get("output"), got);
}

// The integer values of a mask tensor.
inline std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (double v : t.to_f64_vector()) out.push_back(static_cast<int64_t>(v));
  return out;
}

// f() must throw an Error whose message contains `what`.
using test::expect_error;

// A key list the reference code wrote (name -> shape, a JSON object; tools/golden/*_keylists.py).
inline std::map<std::string, Shape> key_list(const std::filesystem::path& path) {
  std::ifstream f(path);
  const auto j = nlohmann::json::parse(f);
  std::map<std::string, Shape> out;
  for (const auto& [k, v] : j.items()) out[k] = v.get<Shape>();
  return out;
}

// The keys as shape-only BF16 tensors (no data), each under `prefix`.
inline translate::MemorySource shapes_only(const std::map<std::string, Shape>& keys, const std::string& prefix = "") {
  translate::MemorySource src("key list");
  for (const auto& [k, s] : keys) src.add(prefix + k, DType::BF16, s);
  return src;
}

// Model(cfg, params, BF16) takes exactly the spec's parameters, names and shapes (shape-only Meta
// tensors: no memory, so the published size is cheap).
template <class Model, class Config>
void expect_model_takes_exactly(const Config& cfg, const translate::ParamSpec& spec) {
  std::map<std::string, Shape> taken;
  nn::ParamSource params = nn::ParamSource::generated(
      [&taken](const std::string& name, const Shape& shape) {
        taken[name] = shape;
        return Tensor::empty(shape, DType::BF16, Device::Meta);
      },
      "meta");
  const Model model(cfg, params, DType::BF16);
  std::map<std::string, Shape> want;
  for (const auto& p : spec.params) want[p.name] = p.shape;
  EXPECT_EQ(taken, want);
}

}  // namespace vidax::test::hunyuan_dit
