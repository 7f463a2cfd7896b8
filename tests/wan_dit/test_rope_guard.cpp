// A guard for the bug class of a RoPE that silently does nothing (issue 20, item 7: a rotation
// written in place through a slice that a copy-semantics framework dropped): the Wan DiT block with
// its RoPE tables must give a different output from the same block with an identity rotation
// (cos = 1, sin = 0), and ops::rope must be exact for the identity and move every token but the
// first (position 0) for the real tables. If RoPE were a no-op anywhere on that path, the two
// block outputs would be equal.
#include <gtest/gtest.h>

#include "backend/ops.h"
#include "models/wan/dit_block.h"
#include "models/wan/rope.h"
#include "wan_dit/helpers.h"

using namespace vidax;

namespace {
Tensor input(const std::string& name, const Shape& shape, double bound = 1.0) {
  return nn::synthetic_uniform(31, name, shape, bound);
}
wan::RopeTables identity_like(const wan::RopeTables& t) {
  return {Tensor::full(t.cos.shape(), 1.0, t.cos.dtype()), Tensor::zeros(t.sin.shape(), t.sin.dtype())};
}
}  // namespace

TEST(WanRopeGuard, IdentityTablesAreExactAndRealTablesRotate) {
  const wan::DiTConfig cfg = wan_dit_test::tiny_config();
  const std::array<int64_t, 3> grid{2, 3, 4};
  const wan::RopeTables rope = wan::rope_tables(cfg, grid);
  const int64_t L = 24, H = cfg.num_heads, D = cfg.dim / cfg.num_heads;
  ASSERT_EQ(rope.cos.shape(), (Shape{L, D / 2}));
  const Tensor q = input("q", {1, L, H, D});
  const Tensor same = ops::rope(q, identity_like(rope).cos, identity_like(rope).sin, ops::RopeMode::InterleavedPairs);
  EXPECT_EQ(same.to_f32_vector(), q.to_f32_vector());
  const Tensor rot = ops::rope(q, rope.cos, rope.sin, ops::RopeMode::InterleavedPairs);
  const std::vector<float> a = q.to_f32_vector(), b = rot.to_f32_vector();
  for (int64_t l = 0; l < L; ++l) {
    bool moved = false;
    for (int64_t i = l * H * D; i < (l + 1) * H * D; ++i) moved |= a[i] != b[i];
    EXPECT_EQ(moved, l != 0) << "token " << l;  // position (0, 0, 0) has angle 0 on every axis
  }
}

TEST(WanRopeGuard, TheBlockWithItsRopeDiffersFromAnIdentityRotation) {
  const wan::DiTConfig cfg = wan_dit_test::tiny_config();
  for (DType compute : {DType::F32, DType::BF16}) {
    nn::ParamSource params = wan_dit_test::synthetic_params(41);
    const wan::DiTBlock block = wan::DiTBlock::load(params, "blocks.0", cfg, compute);
    const std::array<int64_t, 3> grid{2, 3, 4};
    const wan::RopeTables rope = wan::rope_tables(cfg, grid);
    const Tensor x = input("x", {1, 24, cfg.dim});
    const Tensor e0 = input("e0", {1, 6, cfg.dim}, 0.1);
    const wan::CrossKV text = block.cross_kv(input("context", {1, cfg.text_len, cfg.dim}), Tensor(), cfg);
    const Tensor with_rope = block.forward(x, e0, rope, text, cfg);
    const Tensor without = block.forward(x, e0, identity_like(rope), text, cfg);
    const Tensor again = block.forward(x, e0, rope, text, cfg);
    EXPECT_EQ(with_rope.to_f32_vector(), again.to_f32_vector());  // deterministic: the difference is RoPE's
    // What the block adds to its input (the residual stream would hide a small change).
    const Tensor dx = ops::sub(with_rope, x), dx_identity = ops::sub(without, x);
    const double d = vidax::test::rel_l2(dx, dx_identity);
    std::printf("%s: the block's update with RoPE vs an identity rotation: rel_l2 %.3g\n", dtype_name(compute), d);
    // A no-op RoPE gives 0 here; measured 0.04 (fp32 and bf16: the FFN and cross-attention parts of
    // the update do not depend on positions), 10x above bf16's rounding (2^-8).
    EXPECT_GT(d, 0.01) << dtype_name(compute) << ": the block's output does not depend on its RoPE tables";
  }
}
