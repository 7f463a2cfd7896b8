// LTX-2 positions, RoPE tables (split and interleaved) and the rotation against the official
// ltx_core (tools/golden/ltx2_rope.py -> tests/golden/ltx2/ltx2_rope.safetensors).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "io/checkpoint.h"
#include "models/ltx2/rope.h"
#include "test_diff.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

io::Checkpoint golden() {
  return io::Checkpoint::open((fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "ltx2" / "ltx2_rope.safetensors").string());
}

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// The reference's [n_axes, T, 2] bounds as our start/end lists.
double positions_error(const Tensor& ref, const ltx2::Positions& p) {
  const std::vector<float> r = ref.to_f32_vector();
  if (ref.dim() != 3 || ref.size(0) != p.n_axes || ref.size(1) != p.tokens) return INFINITY;
  std::vector<float> s, e;
  for (size_t i = 0; i < r.size(); i += 2) {
    s.push_back(r[i]);
    e.push_back(r[i + 1]);
  }
  return std::max(max_abs(s, p.start), max_abs(e, p.end));
}

// The reference's table in our layout: split [H, T, hd/2] -> [T * H, hd/2]; interleaved [T, dim]
// (each value repeated for its pair) -> [T, dim/2].
std::vector<float> to_our_layout(const Tensor& ref, ltx2::RopeLayout layout) {
  const std::vector<float> r = ref.to_f32_vector();
  std::vector<float> out;
  if (layout == ltx2::RopeLayout::Split) {
    const int64_t H = ref.size(0), T = ref.size(1), h2 = ref.size(2);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < h2; ++i) out.push_back(r[static_cast<size_t>((h * T + t) * h2 + i)]);
  } else {
    for (size_t i = 0; i < r.size(); i += 2) {
      EXPECT_EQ(r[i], r[i + 1]) << "interleaved table entries come in pairs";
      out.push_back(r[i]);
    }
  }
  return out;
}

struct Case {
  const char* name;
  int64_t dim, heads;
  std::vector<int64_t> max_pos;
  bool video;     // positions: the video's (or the audio's)
  bool temporal;  // the cross-modal temporal axis only
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {{"video", 64, 2, {20, 2048, 2048}, true, false},
                                      {"video_pad", 80, 4, {20, 2048, 2048}, true, false},
                                      {"audio", 32, 2, {20}, false, false},
                                      {"cross", 32, 2, {20}, true, true},
                                      {"cross_audio", 32, 2, {20}, false, true}};
  return c;
}

}  // namespace

TEST(Ltx2Rope, PositionsMatchTheReference) {
  const auto f = golden();
  const ltx2::Positions v = ltx2::video_positions(3, 2, 3, 24.0);
  const ltx2::Positions a = ltx2::audio_positions(7);
  const double ev = positions_error(f.get("video.positions"), v), ea = positions_error(f.get("audio.positions"), a);
  EXPECT_LE(ev, 1e-7) << "video positions max_abs " << ev;
  EXPECT_LE(ea, 1e-7) << "audio positions max_abs " << ea;
  // The causal fix: frame 0 covers [0, 1/fps), frame 1 [1/fps, 9/fps).
  EXPECT_FLOAT_EQ(v.start[0], 0.0f);
  EXPECT_FLOAT_EQ(v.end[0], 1.0f / 24.0f);
  EXPECT_FLOAT_EQ(v.end[6], 9.0f / 24.0f);
  // Without it the reference's bounds are not met.
  EXPECT_GT(positions_error(f.get("video.positions"), ltx2::video_positions(3, 2, 3, 24.0, {}, false)), 1e-2);
  std::cout << "[ltx2 rope] positions max_abs video " << ev << " audio " << ea << "\n";
}

TEST(Ltx2Rope, TablesAndRotationMatchTheReference) {
  const auto f = golden();
  const ltx2::Positions v = ltx2::video_positions(3, 2, 3, 24.0), a = ltx2::audio_positions(7);
  int checked = 0;
  for (const Case& c : cases())
    for (ltx2::RopeLayout layout : {ltx2::RopeLayout::Split, ltx2::RopeLayout::Interleaved}) {
      const std::string key = std::string(c.name) + (layout == ltx2::RopeLayout::Split ? ".split" : ".interleaved");
      const ltx2::Positions& base = c.video ? v : a;
      const ltx2::Positions p = c.temporal ? ltx2::temporal(base) : base;
      const ltx2::RopeTables t = ltx2::rope_tables(p, {c.dim, c.heads, 10000.0, c.max_pos, layout});
      const double ec = max_abs(to_our_layout(f.get(key + ".cos"), layout), t.cos.to_f32_vector());
      const double es = max_abs(to_our_layout(f.get(key + ".sin"), layout), t.sin.to_f32_vector());
      const Tensor out = ltx2::apply_rope(f.get(std::string(c.name) + ".q"), t);
      const test::Diff d = test::diff(f.get(key + ".out"), out);
      EXPECT_LE(ec, 1e-6) << key << ".cos";
      EXPECT_LE(es, 1e-6) << key << ".sin";
      EXPECT_LE(d.max_abs, 1e-6) << key << ".out";
      std::cout << "[ltx2 rope] " << key << " max_abs cos " << ec << " sin " << es << " out " << d.max_abs << "\n";
      ++checked;
    }
  EXPECT_EQ(checked, 10);
}

// Guard: the rotation is not the identity. The identity tables (all angles 0) give back q exactly;
// the real tables move q by a clear margin (the reference's output differs from q by > 0.5 max_abs).
TEST(Ltx2Rope, RotationIsNotANoOp) {
  const auto f = golden();
  const Tensor q = f.get("video.q");
  const ltx2::Positions v = ltx2::video_positions(3, 2, 3, 24.0);
  for (ltx2::RopeLayout layout : {ltx2::RopeLayout::Split, ltx2::RopeLayout::Interleaved}) {
    ltx2::RopeTables t = ltx2::rope_tables(v, {64, 2, 10000.0, {20, 2048, 2048}, layout});
    const Tensor out = ltx2::apply_rope(q, t);
    EXPECT_GT(test::diff(q, out).max_abs, 0.5) << "the rotation left q (almost) unchanged";
    EXPECT_GT(test::diff(f.get("video.q"), f.get(std::string("video.") + (layout == ltx2::RopeLayout::Split ? "split" : "interleaved") + ".out")).max_abs, 0.5);
    ltx2::RopeTables id = t;
    id.cos = Tensor::from_f32(std::vector<float>(static_cast<size_t>(t.cos.numel()), 1.0f), t.cos.shape());
    id.sin = Tensor::from_f32(std::vector<float>(static_cast<size_t>(t.sin.numel()), 0.0f), t.sin.shape());
    EXPECT_EQ(test::diff(q, ltx2::apply_rope(q, id)).max_abs, 0.0);
  }
}

TEST(Ltx2Rope, RejectsBadInput) {
  const ltx2::Positions v = ltx2::video_positions(2, 1, 1, 25.0);
  EXPECT_THROW(ltx2::video_positions(0, 1, 1, 25.0), Error);
  EXPECT_THROW(ltx2::video_positions(1, 1, 1, 0.0), Error);
  EXPECT_THROW(ltx2::audio_positions(0), Error);
  EXPECT_THROW(ltx2::rope_tables(v, {64, 2, 10000.0, {20}, ltx2::RopeLayout::Split}), Error);      // 1 max_pos, 3 axes
  EXPECT_THROW(ltx2::rope_tables(v, {66, 4, 10000.0, {20, 2048, 2048}, ltx2::RopeLayout::Split}), Error);  // 66 % 8
  EXPECT_THROW(ltx2::rope_tables(v, {63, 1, 10000.0, {20, 2048, 2048}, ltx2::RopeLayout::Interleaved}), Error);
  const ltx2::RopeTables t = ltx2::rope_tables(v, {64, 2, 10000.0, {20, 2048, 2048}, ltx2::RopeLayout::Split});
  EXPECT_THROW(ltx2::apply_rope(Tensor::from_f32(std::vector<float>(3 * 64), {1, 3, 64}), t), Error);  // 3 tokens, tables 2
  EXPECT_THROW(ltx2::apply_rope(Tensor::from_f32(std::vector<float>(2 * 32), {1, 2, 32}), t), Error);  // width
}
