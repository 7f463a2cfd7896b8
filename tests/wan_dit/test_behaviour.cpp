// Determinism, batching, cache reuse and the errors a user meets with bad input.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/ops.h"
#include "models/wan/dit.h"
#include "wan_dit/helpers.h"

using namespace vidax;

namespace {

Tensor random_input(const std::string& name, const Shape& shape) {
  return nn::synthetic_uniform(7, name, shape, 1.0);
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// Expects fn to throw a vidax::Error whose message contains `needle`.
template <class F>
void expect_error(F&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(WanDiT, SameInputsTwiceGiveBitIdenticalOutput) {
  const wan::DiTConfig cfg = wan_dit_test::tiny_config();
  for (wan::Precision p : {wan::Precision::F32, wan::Precision::BF16}) {
    nn::ParamSource params = wan_dit_test::synthetic_params(11);
    const wan::WanDiT model(cfg, params, p);
    const Tensor x = random_input("x", {4, 3, 6, 8});
    const Tensor ctx = random_input("ctx", {5, 40});
    const wan::TextContext t1 = model.encode_context(ctx), t2 = model.encode_context(ctx);
    const Tensor a = model.forward(x, {999.0}, t1);
    const Tensor b = model.forward(x, {999.0}, t2);
    const Tensor c = model.forward(x, {999.0}, t1);  // the cached K/V reused
    EXPECT_EQ(a.shape(), (Shape{4, 3, 6, 8}));
    EXPECT_TRUE(bit_identical(a, b)) << wan::precision_name(p);
    EXPECT_TRUE(bit_identical(a, c)) << wan::precision_name(p);
    EXPECT_TRUE(ops::all_finite(a));
    // A different timestep changes the output (the time embedding is wired in).
    EXPECT_FALSE(bit_identical(a, model.forward(x, {500.0}, t1)));
  }
}

TEST(WanDiT, ABatchOfTwoEqualsTwoSingleRuns) {
  const wan::DiTConfig cfg = wan_dit_test::tiny_config();
  nn::ParamSource params = wan_dit_test::synthetic_params(12);
  const wan::WanDiT model(cfg, params, wan::Precision::F32);
  const Tensor x0 = random_input("x0", {4, 2, 4, 6}), x1 = random_input("x1", {4, 2, 4, 6});
  const Tensor c0 = random_input("c0", {16, 40}), c1 = random_input("c1", {16, 40});
  const Tensor y0 = model.forward(x0, {999.0}, model.encode_context(c0));
  const Tensor y1 = model.forward(x1, {3.0}, model.encode_context(c1));
  const Tensor xb = ops::concat({x0.unsqueeze(0), x1.unsqueeze(0)}, 0);
  const Tensor cb = ops::concat({c0.unsqueeze(0), c1.unsqueeze(0)}, 0);
  const Tensor yb = model.forward(xb, {999.0, 3.0}, model.encode_context(cb));
  ASSERT_EQ(yb.shape(), (Shape{2, 4, 2, 4, 6}));
  EXPECT_LE(wan_dit_test::diff(y0, yb.select(0, 0)).rel_l2, 1e-6);
  EXPECT_LE(wan_dit_test::diff(y1, yb.select(0, 1)).rel_l2, 1e-6);
  // Per-request contexts concatenated (the CFG branches) give the same batch.
  const wan::TextContext cc = wan::concat_batch({model.encode_context(c0), model.encode_context(c1)});
  EXPECT_EQ(cc.blocks[1].k.shape(), (Shape{2, 16, 2, 24}));
  EXPECT_LE(wan_dit_test::diff(yb, model.forward(xb, {999.0, 3.0}, cc)).rel_l2, 1e-6);
}

// The reference zero-pads the prompt to text_len before the projection and
// attends to the padded rows: an explicitly zero-padded prompt gives the same output.
TEST(WanDiT, ContextIsZeroPaddedToTextLen) {
  const wan::DiTConfig cfg = wan_dit_test::tiny_config();
  nn::ParamSource params = wan_dit_test::synthetic_params(13);
  const wan::WanDiT model(cfg, params, wan::Precision::F32);
  const Tensor x = random_input("x", {4, 1, 4, 4});
  const Tensor ctx = random_input("ctx", {5, 40});
  const Tensor padded = ops::pad(ctx, {0, 0, 0, 11});
  const Tensor a = model.forward(x, {999.0}, model.encode_context(ctx));
  const Tensor b = model.forward(x, {999.0}, model.encode_context(padded));
  EXPECT_TRUE(bit_identical(a, b));
  // ... and the padded rows matter (they are not masked): 5 rows without padding would differ.
  wan::DiTConfig short_cfg = cfg;
  short_cfg.text_len = 5;
  nn::ParamSource params2 = wan_dit_test::synthetic_params(13);
  const wan::WanDiT unpadded(short_cfg, params2, wan::Precision::F32);
  EXPECT_GT(wan_dit_test::diff(a, unpadded.forward(x, {999.0}, unpadded.encode_context(ctx))).rel_l2, 1e-4);
}

TEST(WanDiT, BadShapesGiveClearErrors) {
  const wan::DiTConfig cfg = wan_dit_test::tiny_config();
  nn::ParamSource params = wan_dit_test::synthetic_params(14);
  const wan::WanDiT model(cfg, params, wan::Precision::F32);
  const wan::TextContext text = model.encode_context(random_input("c", {5, 40}));
  expect_error([&] { model.forward(random_input("x", {4, 2, 5, 8}), {1.0}, text); }, "height 5");
  expect_error([&] { model.forward(random_input("x", {4, 2, 6, 7}), {1.0}, text); }, "width 7");
  expect_error([&] { model.forward(random_input("x", {3, 2, 6, 8}), {1.0}, text); }, "3 channels");
  expect_error([&] { model.forward(random_input("x", {2, 3, 6, 8}), {1.0}, text); }, "in_dim = 4");
  expect_error([&] { model.forward(random_input("x", {6, 8}), {1.0}, text); }, "[C, F, H, W]");
  expect_error([&] { model.forward(random_input("x", {4, 2, 6, 8}), {1.0, 2.0}, text); }, "batch");
  expect_error([&] { model.encode_context(random_input("c", {5, 41})); }, "text_dim = 40");
  expect_error([&] { model.encode_context(random_input("c", {17, 40})); }, "text_len");
  wan::DiTConfig p2 = cfg;
  p2.patch_size = {2, 2, 2};
  nn::ParamSource params2 = wan_dit_test::synthetic_params(14);
  const wan::WanDiT model2(p2, params2, wan::Precision::F32);
  expect_error([&] { model2.forward(random_input("x", {4, 3, 6, 8}), {1.0}, model2.encode_context(
                                                                              random_input("c", {5, 40}))); },
               "frames 3");
}

TEST(WanDiT, LoadingIsStrict) {
  const wan::DiTConfig cfg = wan_dit_test::tiny_config();
  // The full official parameter set with its shapes, as the model asks for it.
  std::map<std::string, Tensor> full;
  nn::ParamSource probe = nn::ParamSource::generated(
      [&](const std::string& n, const Shape& s) { return full[n] = nn::synthetic_uniform(15, n, s, 0.1); },
      "probe");
  { const wan::WanDiT m(cfg, probe, wan::Precision::F32); }
  EXPECT_TRUE(full.count("blocks.1.cross_attn.norm_k.weight"));
  EXPECT_TRUE(full.count("head.modulation"));
  {
    nn::ParamSource ok = nn::ParamSource::from_map(full, "full.safetensors");
    const wan::WanDiT m(cfg, ok, wan::Precision::F32);
    EXPECT_NO_THROW(ok.expect_all_taken());
  }
  {
    auto missing = full;
    missing.erase("blocks.1.ffn.2.bias");
    nn::ParamSource src = nn::ParamSource::from_map(missing, "m.safetensors");
    expect_error([&] { wan::WanDiT m(cfg, src, wan::Precision::F32); }, "missing parameter 'blocks.1.ffn.2.bias'");
  }
  {
    auto wrong = full;
    wrong["blocks.0.self_attn.q.weight"] = nn::synthetic_uniform(1, "w", {48, 40}, 0.1);
    nn::ParamSource src = nn::ParamSource::from_map(wrong, "w.safetensors");
    expect_error([&] { wan::WanDiT m(cfg, src, wan::Precision::F32); }, "[48, 48]");
  }
  {
    auto extra = full;
    extra["blocks.2.modulation"] = nn::synthetic_uniform(1, "m", {1, 6, 48}, 0.1);
    nn::ParamSource src = nn::ParamSource::from_map(extra, "e.safetensors");
    const wan::WanDiT m(cfg, src, wan::Precision::F32);
    expect_error([&] { src.expect_all_taken(); }, "blocks.2.modulation");
    expect_error([&] { wan::WanDiT::from_weights(cfg, extra, wan::Precision::BF16, "e.safetensors"); },
                 "e.safetensors: 1 tensor(s) not used by the model: blocks.2.modulation");
  }
}

// I2V: the image features and the conditioning latent are required, and checked.
TEST(WanDiT, ImageConditioningIsRequiredAndChecked) {
  wan::DiTConfig cfg = wan_dit_test::tiny_config();
  cfg.model_type = "i2v", cfg.text_len = 512, cfg.in_dim = 9, cfg.num_layers = 1;
  nn::ParamSource params = wan_dit_test::synthetic_params(16);
  const wan::WanDiT model(cfg, params, wan::Precision::F32);
  const Tensor ctx = random_input("c", {5, 40});
  const Tensor clip = random_input("clip", {257, 1280});
  const Tensor x = random_input("x", {4, 1, 4, 4});
  expect_error([&] { model.encode_context(ctx); }, "needs clip_fea and y");
  expect_error([&] { model.encode_context(ctx, random_input("clip", {256, 1280}), random_input("y", {5, 1, 4, 4})); },
               "clip_fea");
  const wan::TextContext text = model.encode_context(ctx, clip, random_input("y", {5, 1, 4, 4}));
  EXPECT_EQ(text.image.shape(), (Shape{1, 257, 48}));
  EXPECT_EQ(model.forward(x, {999.0}, text).shape(), (Shape{4, 1, 4, 4}));
  expect_error([&] { model.forward(random_input("x", {4, 1, 4, 6}), {999.0}, text); }, "does not match the latent");
  const wan::TextContext wrong_y = model.encode_context(ctx, clip, random_input("y", {4, 1, 4, 4}));
  expect_error([&] { model.forward(x, {999.0}, wrong_y); }, "in_dim = 9");
  // A T2V model refuses image inputs.
  nn::ParamSource p2 = wan_dit_test::synthetic_params(16);
  const wan::WanDiT t2v(wan_dit_test::tiny_config(), p2, wan::Precision::F32);
  expect_error([&] { t2v.encode_context(ctx, clip, random_input("y", {5, 1, 4, 4})); }, "clip_fea / y given");
}
