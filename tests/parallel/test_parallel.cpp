// Tensor, sequence and CFG parallelism (docs/parallelism.md). The Parallel.* tests run in one
// process; the Mpi* tests run under mpirun (tests/parallel/extra.cmake) and compare every
// sharded result with the single-rank run of the same code in the same process.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/ops.h"
#include "backend/recording.h"
#include "dist/communicator.h"
#include "dist/mesh.h"
#include "io/checkpoint.h"
#include "models/wan/dit.h"
#include "models/wan/dit_parallel.h"
#include "models/wan/dit_parity.h"
#include "nn/linear.h"
#include "nn/parallel.h"
#include "nn/parallel_cfg.h"
#include "nn/ulysses.h"
#include "models/wan/t2v_load.h"
#include "pipeline/generate.h"
#include "test_diff.h"

using namespace vidax;

namespace {

const std::string kData = VIDAX_TEST_DATA_DIR;

Tensor random_tensor(const Shape& shape, uint32_t seed, double scale = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.f, static_cast<float>(scale));
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = nd(gen);
  return Tensor::from_f32(v, shape);
}

using vidax::test::Diff;
using vidax::test::diff;

// A group that only knows its size and rank (for sharding arithmetic; no data moves).
class ShapeOnlyGroup final : public dist::Communicator {
 public:
  using Communicator::all_gather;
  using Communicator::all_to_all;
  ShapeOnlyGroup(int size, int rank, std::vector<int> split_sizes = {})
      : size_(size), rank_(rank), split_sizes_(std::move(split_sizes)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "shape-only"; }
  void all_reduce_sum(void*, size_t, DType) override { fail(); }
  void all_gather(const void*, void*, size_t, DType) override { fail(); }
  void all_to_all(const void*, void*, size_t, DType) override { fail(); }
  void broadcast(void*, size_t, DType, int) override { fail(); }
  void barrier() override {}
  // Mesh splits tp, then sp, then cfg: the sizes are given in that order.
  std::unique_ptr<Communicator> split(int, int) override {
    const int n = split_sizes_.empty() ? 1 : split_sizes_.front();
    if (!split_sizes_.empty()) split_sizes_.erase(split_sizes_.begin());
    return std::make_unique<ShapeOnlyGroup>(n, 0);
  }
  [[noreturn]] void abort(const std::string& m) override { throw Error(m); }

 private:
  [[noreturn]] static void fail() { throw Error("ShapeOnlyGroup: no collectives"); }
  int size_, rank_;
  std::vector<int> split_sizes_;
};

wan::DiTConfig wan_config(int64_t dim, int64_t ffn, int64_t heads, int64_t layers) {
  return wan::DiTConfig::from_json({{"model_type", "t2v"}, {"patch_size", {1, 2, 2}}, {"text_len", 512},
                                    {"in_dim", 16}, {"dim", dim}, {"ffn_dim", ffn}, {"freq_dim", 256},
                                    {"text_dim", 4096}, {"out_dim", 16}, {"num_heads", heads},
                                    {"num_layers", layers}, {"qk_norm", true}, {"cross_attn_norm", true},
                                    {"eps", 1e-6}});
}

}  // namespace

// ---- one process ------------------------------------------------------------------

TEST(Parallel, ShardTableSplitsTheMegatronWay) {
  using nn::Split;
  const nn::ShardTable& t = wan::dit_tensor_parallel_table();
  EXPECT_EQ(nn::split_of(t, "blocks.3.self_attn.q.weight"), Split::Rows);
  EXPECT_EQ(nn::split_of(t, "blocks.3.self_attn.q.bias"), Split::Rows);
  EXPECT_EQ(nn::split_of(t, "blocks.3.self_attn.norm_k.weight"), Split::Rows);
  EXPECT_EQ(nn::split_of(t, "blocks.3.self_attn.o.weight"), Split::Columns);
  EXPECT_EQ(nn::split_of(t, "blocks.3.self_attn.o.bias"), Split::Replicated);  // added once after the sum
  EXPECT_EQ(nn::split_of(t, "blocks.0.cross_attn.v_img.bias"), Split::Rows);
  EXPECT_EQ(nn::split_of(t, "blocks.0.cross_attn.o.weight"), Split::Columns);
  EXPECT_EQ(nn::split_of(t, "blocks.0.ffn.0.weight"), Split::Rows);
  EXPECT_EQ(nn::split_of(t, "blocks.0.ffn.2.weight"), Split::Columns);
  EXPECT_EQ(nn::split_of(t, "blocks.0.ffn.2.bias"), Split::Replicated);
  for (const char* n : {"text_embedding.0.weight", "time_projection.1.weight", "head.head.weight",
                        "blocks.0.modulation", "blocks.0.norm3.weight", "patch_embedding.weight"})
    EXPECT_EQ(nn::split_of(t, n), Split::Replicated) << n;
}

TEST(Parallel, MeshMustFitHeadsAndFfn) {
  const wan::DiTConfig c = wan_config(1536, 8960, 12, 1);
  EXPECT_NO_THROW(wan::check_mesh_fits(c, dist::parse_mesh("sp=2,tp=2")));
  EXPECT_NO_THROW(wan::check_mesh_fits(c, dist::parse_mesh("sp=3,tp=4")));
  EXPECT_THROW(wan::check_mesh_fits(c, dist::parse_mesh("sp=8")), Error);  // 12 heads (Wan's README)
  EXPECT_THROW(wan::check_mesh_fits(c, dist::parse_mesh("tp=3,sp=1")), Error);  // ffn 8960 % 3
}

TEST(Parallel, SequenceChunksArePaddedWithZeros) {
  ShapeOnlyGroup g(4, 3);
  nn::SequenceParallel sp{&g, 45};
  EXPECT_EQ(sp.padded(), 48);
  EXPECT_EQ(sp.chunk(), 12);
  const Tensor x = random_tensor({1, 45, 3}, 1);
  const Tensor c = sp.local(x, 1);
  ASSERT_EQ(shape_str(c.shape()), "[1, 12, 3]");
  const std::vector<float> xv = x.to_f32_vector(), cv = c.to_f32_vector();
  for (int64_t i = 0; i < 12; ++i)
    for (int64_t f = 0; f < 3; ++f) {
      const int64_t token = 36 + i;
      EXPECT_EQ(cv[static_cast<size_t>(i * 3 + f)], token < 45 ? xv[static_cast<size_t>(token * 3 + f)] : 0.f);
    }
  nn::SequenceParallel one{nullptr, 45};
  EXPECT_EQ(one.local(x, 1).data_ptr(), x.data_ptr());  // one rank: the identity
}

// The tensor-parallel q/k norm: the slice of the row, with the row's whole sum of squares,
// gives exactly the slice of the single-rank RMSNorm.
TEST(Parallel, RmsNormWithTheWholeSumOfSquaresIsExact) {
  const Tensor x = random_tensor({2, 7, 48}, 2), w = random_tensor({48}, 3);
  const Tensor full = ops::rms_norm(x, w, 1e-6);
  const Tensor x64 = ops::cast(x, DType::F64);
  for (int parts : {1, 2, 4}) {
    const int64_t n = 48 / parts;
    Tensor ss;
    for (int r = 0; r < parts; ++r) {  // summed slice by slice, as the all-reduce does
      const Tensor s = x64.slice(-1, r * n, (r + 1) * n);
      const Tensor part = ops::sum(ops::mul(s, s), -1, true);
      ss = r == 0 ? part : ops::add(ss, part);
    }
    for (int r = 0; r < parts; ++r) {
      const Tensor got = ops::rms_norm_with_sum_sq(ops::copy(x.slice(-1, r * n, (r + 1) * n)), ss, 48,
                                                   ops::copy(w.slice(0, r * n, (r + 1) * n)), 1e-6);
      const Diff d = diff(ops::copy(full.slice(-1, r * n, (r + 1) * n)), got);
      EXPECT_LE(d.max_abs, 1e-7) << parts << " parts, slice " << r;
      EXPECT_LE(d.rel_l2, 1e-7);
    }
  }
}

// Per-rank resident weights shrink as 1/tp: the real Wan 2.1 1.3B and 14B shapes on Meta
// tensors (no memory), split as a tp-rank mesh would split them.
TEST(Parallel, WeightBytesShrinkAsOneOverTp) {
  struct Model { const char* name; wan::DiTConfig cfg; };
  const Model models[] = {{"Wan2.1 1.3B", wan_config(1536, 8960, 12, 30)},
                          {"Wan2.1 14B", wan_config(5120, 13824, 40, 40)}};
  for (const Model& m : models) {
    int64_t one = 0;
    for (int tp : {1, 2, 4}) {
      Trace trace;
      RecordingScope rec(trace);
      ShapeOnlyGroup world(tp, tp - 1, {tp, 1, 1});
      dist::Mesh mesh(world, dist::MeshShape{1, 1, tp});
      nn::ParamSource src = nn::ParamSource::generated(
          [](const std::string&, const Shape& s) { return Tensor::empty(s, DType::BF16, Device::Meta); }, "meta");
      wan::WanDiT dit(m.cfg, src, wan::Precision::F32, &mesh);
      if (tp == 1) one = dit.weight_bytes();
      EXPECT_EQ(dit.full_weight_bytes(), one);
      const double ratio = static_cast<double>(dit.weight_bytes()) / static_cast<double>(one);
      std::printf("%s bf16 weights, tp=%d: %.3f GB per rank (%.4f of unsplit; 1/tp = %.4f)\n", m.name, tp,
                  static_cast<double>(dit.weight_bytes()) / 1e9, ratio, 1.0 / tp);
      EXPECT_LE(ratio, 1.0 / tp + 0.02);  // only embeddings, modulation and the head stay whole
      EXPECT_GE(ratio, 1.0 / tp);
    }
  }
}

TEST(Parallel, CfgBranchesOnOneRankRunBothInOrder) {
  std::vector<int> order;
  auto [c, u] = nn::cfg_parallel_branches(nullptr, [&](int b) {
    order.push_back(b);
    return Tensor::full({2}, b == 0 ? 1.0 : 2.0, DType::F32);
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.to_f32_vector(), (std::vector<float>{1, 1}));
  EXPECT_EQ(u.to_f32_vector(), (std::vector<float>{2, 2}));
}

// ---- under mpirun ---------------------------------------------------------------------

namespace {

// The mesh `spec` over the world, or nullptr (the test is skipped) when the world has another size.
std::unique_ptr<dist::Mesh> mesh_for(const std::string& spec) {
  dist::Communicator& w = dist::world();
  const dist::MeshShape shape = dist::parse_mesh(spec);
  if (w.size() != shape.world()) return nullptr;
  return std::make_unique<dist::Mesh>(w, shape);
}

#define MESH_OR_SKIP(var, spec)                                                         \
  auto var = mesh_for(spec);                                                            \
  if (!var) GTEST_SKIP() << "needs mpirun -np " << dist::parse_mesh(spec).world();

// Sharded == single rank (the same code, nullptr mesh), for the output and every inter.* tap,
// and both within the parity tolerance of the official output.
void expect_golden_equal(const std::string& name, const dist::Mesh& mesh) {
  const std::string path = kData + "/golden/" + name;
  const io::Checkpoint file = io::Checkpoint::open(path);
  const nlohmann::json config = nlohmann::json::parse(file.metadata().at("config"));
  const auto single = wan::run_dit_golden(file, config, "fp32", path, nullptr);
  const auto sharded = wan::run_dit_golden(file, config, "fp32", path, &mesh);
  ASSERT_EQ(single.size(), sharded.size());
  ASSERT_TRUE(single.count("output")) << name;
  for (const auto& [tname, expected] : single) {
    ASSERT_TRUE(sharded.count(tname)) << tname;
    const Diff d = diff(expected, sharded.at(tname));
    if (mesh.rank() == 0)
      std::printf("%s %s %s: vs single rank max_abs %.3g rel_l2 %.3g%s\n", mesh.shape().str().c_str(), name.c_str(),
                  tname.c_str(), d.max_abs, d.rel_l2, d.max_abs == 0 ? " (bit-exact)" : "");
    EXPECT_LE(d.rel_l2, 1e-6) << name << " " << tname << " on " << mesh.shape().str();
  }
  const Diff g = diff(file.get("output"), sharded.at("output"));
  EXPECT_LE(g.rel_l2, 1e-5) << name << ": sharded output vs the official output";
}

void expect_goldens_equal(const dist::Mesh& mesh) {
  const char* files[] = {"wan_dit_heads4_odd_b2.safetensors", "wan_dit_tiny_b2.safetensors",
                         "wan_dit_tiny.safetensors",          "wan_dit_diffusers_tiny.safetensors",
                         "wan_dit_i2v_tiny.safetensors",      "wan_dit_flf2v_tiny.safetensors",
                         // VACE: the vace blocks sharded as the main ones, the hints per token chunk
                         "wan_dit_vace_default_b2.safetensors", "wan_dit_vace_tiny.safetensors",
                         "wan_dit_vace_diffusers_tiny.safetensors"};
  int compared = 0;
  for (const char* f : files) {
    const io::Checkpoint file = io::Checkpoint::open(kData + "/golden/" + f);
    const wan::DiTConfig cfg = wan::DiTConfig::from_json(nlohmann::json::parse(file.metadata().at("config")));
    if (cfg.num_heads % (mesh.shape().tp * mesh.shape().sp) != 0) continue;  // e.g. 2 heads on sp=2 x tp=2
    expect_golden_equal(f, mesh);
    ++compared;
  }
  // A mesh that no golden fits would otherwise pass having compared nothing.
  EXPECT_GT(compared, 0) << "no DiT golden has heads divisible by sp x tp of " << mesh.shape().str();
}

// The tiny T2V pipeline, 3 UniPC steps with CFG (tests/golden/pipeline/wan_pipeline_tiny): latents of the
// mesh run == latents of the single-rank run (and both near the official run's). Rank 0 alone runs
// the single-rank reference and compares (every rank checks the official latents).
void expect_pipeline_equal(const dist::Mesh& mesh) {
  using namespace vidax::pipeline;
  const std::string golden = kData + "/golden/pipeline/wan_pipeline_tiny.safetensors";
  io::Checkpoint g = io::Checkpoint::open(golden);
  const auto cfg = nlohmann::json::parse(g.metadata().at("config"));
  auto run = [&](const dist::Mesh* m) {
    pipeline::LoadOptions lo;
    lo.weights_dir = kData + "/golden/pipeline/wan_pipeline_tiny";
    lo.precision = "fp32";
    lo.mesh = m;
    wan::LoadedT2V loaded = wan::load_t2v(lo);
    const pipeline::Request r = pipeline::request_from_json(cfg, loaded.preset.variant.defaults.negative_prompt);
    return pipeline::run_generation(loaded.parts, r, {}, /*decode=*/false).latents;
  };
  const Tensor sharded = run(&mesh);
  const Diff o = diff(g.get("output.latents"), sharded);
  EXPECT_LT(o.rel_l2, 1e-4);
  if (mesh.rank() != 0) return;
  const Diff d = diff(run(nullptr), sharded);
  std::printf("%s pipeline 3 steps: latents vs single rank max_abs %.3g rel_l2 %.3g%s; vs official rel_l2 %.3g\n",
              mesh.shape().str().c_str(), d.max_abs, d.rel_l2, d.max_abs == 0 ? " (bit-exact)" : "", o.rel_l2);
  EXPECT_LE(d.rel_l2, 1e-6);
}

}  // namespace

// Row-parallel Linear with a NON-ZERO bias (vidax-anchor §5 row 13): the bias must be added once.
TEST(MpiRanks, RowParallelAddsTheBiasOnce) {
  dist::Communicator& w = dist::world();
  if (w.size() == 1) GTEST_SKIP() << "run under mpirun";
  const int n = w.size(), r = w.rank();
  const int64_t in = 8 * n, out = 6;
  const Tensor W = random_tensor({out, in}, 5), b = ops::add_scalar(random_tensor({out}, 6, 0.1), 1.0);
  const Tensor x = random_tensor({3, 5, in}, 7);
  const Tensor full = ops::linear(x, W, b);
  nn::Linear l = nn::Linear::make(ops::copy(W.slice(1, r * 8, (r + 1) * 8)), b, DType::F32);
  l.reduce = &w;
  const Tensor got = l(ops::copy(x.slice(-1, r * 8, (r + 1) * 8)));
  const Diff d = diff(full, got);
  EXPECT_LE(d.rel_l2, 1e-6);
  EXPECT_LE(d.max_abs, 1e-5);  // a bias summed n times would be off by (n-1) * b >= n-1 - ...
}

// Ulysses with a token count no group size divides: equal to attention over the whole sequence.
TEST(MpiRanks, UlyssesMasksThePaddedKeys) {
  dist::Communicator& w = dist::world();
  if (w.size() == 1) GTEST_SKIP() << "run under mpirun";
  const int64_t L = 45, H = 4 * w.size(), D = 8;
  const Tensor q = random_tensor({2, L, H, D}, 8), k = random_tensor({2, L, H, D}, 9), v = random_tensor({2, L, H, D}, 10);
  const Tensor full = ops::attention(q, k, v);
  nn::SequenceParallel sp{&w, L};
  const Tensor got = sp.gather(nn::ulysses_attention(sp.local(q, 1), sp.local(k, 1), sp.local(v, 1), sp), 1);
  const Diff d = diff(full, got);
  if (w.rank() == 0) std::printf("Ulysses %d ranks, 45 tokens: max_abs %.3g\n", w.size(), d.max_abs);
  EXPECT_LE(d.rel_l2, 1e-6);
}

TEST(MpiNp2, Sp2Goldens) { MESH_OR_SKIP(m, "sp=2"); expect_goldens_equal(*m); }
TEST(MpiNp2, Tp2Goldens) { MESH_OR_SKIP(m, "tp=2"); expect_goldens_equal(*m); }
TEST(MpiNp2, Cfg2Goldens) { MESH_OR_SKIP(m, "cfg=2"); expect_goldens_equal(*m); }
TEST(MpiNp2, Cfg2Pipeline) { MESH_OR_SKIP(m, "cfg=2"); expect_pipeline_equal(*m); }
TEST(MpiNp2, Sp2Pipeline) { MESH_OR_SKIP(m, "sp=2"); expect_pipeline_equal(*m); }
TEST(MpiNp2, Tp2Pipeline) { MESH_OR_SKIP(m, "tp=2"); expect_pipeline_equal(*m); }
TEST(MpiNp4, Sp2Tp2Goldens) { MESH_OR_SKIP(m, "sp=2,tp=2"); expect_goldens_equal(*m); }
TEST(MpiNp4, Cfg2Sp2Goldens) { MESH_OR_SKIP(m, "cfg=2,sp=2"); expect_goldens_equal(*m); }
TEST(MpiNp4, Tp4Goldens) { MESH_OR_SKIP(m, "tp=4"); expect_goldens_equal(*m); }
TEST(MpiNp4, Sp4Goldens) { MESH_OR_SKIP(m, "sp=4"); expect_goldens_equal(*m); }
TEST(MpiNp4, Cfg2Sp2Pipeline) { MESH_OR_SKIP(m, "cfg=2,sp=2"); expect_pipeline_equal(*m); }
TEST(MpiNp4, Cfg2Tp2Pipeline) { MESH_OR_SKIP(m, "cfg=2,tp=2"); expect_pipeline_equal(*m); }
