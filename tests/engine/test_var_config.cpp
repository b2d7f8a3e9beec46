// VAR configuration: the official presets and scale schedules, the phi schedule
// (numpy float64 ties reproduced), config JSON, the expected-weight lists with
// their strict checks, and VAR's sampler semantics.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "engine/io/tensor_spec.h"
#include "engine/models/var/var_config.h"
#include "engine/models/var/var_weights.h"
#include "engine/sampling/scale_sampler.h"

using namespace kvs;
using namespace kvs::var;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

io::ShapeMap shapes(const std::vector<io::ExpectedTensor>& list) {
  io::ShapeMap m;
  for (const auto& e : list) m[e.name] = e.shape;
  return m;
}

}  // namespace

TEST(VarConfig, OfficialPresets) {
  const VarConfig d16 = var_preset("d16");
  EXPECT_EQ(d16.embed_dim, 1024);
  EXPECT_EQ(d16.num_heads, 16);
  EXPECT_EQ(d16.head_dim(), 64);
  EXPECT_EQ(d16.mlp_hidden(), 4096);
  EXPECT_FALSE(d16.shared_aln);
  EXPECT_TRUE(d16.attn_l2_norm);
  EXPECT_EQ(d16.total_tokens(), 680);
  EXPECT_EQ(d16.scale_begin(9), 424);
  EXPECT_DOUBLE_EQ(d16.attention_scale(), 1.0);
  // The README's sizes: 310M (d16), 600M (d20), 1.0B (d24), 2.0B (d30), 2.3B (d36).
  EXPECT_NEAR(d16.parameter_count() / 1e6, 310, 10);
  EXPECT_NEAR(var_preset("var-d20").parameter_count() / 1e6, 600, 15);
  EXPECT_NEAR(var_preset("d24").parameter_count() / 1e9, 1.0, 0.05);
  EXPECT_NEAR(var_preset("d30").parameter_count() / 1e9, 2.0, 0.05);
  const VarConfig d36 = var_preset("d36");
  EXPECT_EQ(d36.embed_dim, 2304);
  EXPECT_EQ(d36.num_heads, 36);
  EXPECT_TRUE(d36.shared_aln);
  EXPECT_EQ(d36.patch_nums, (std::vector<int64_t>{1, 2, 3, 4, 6, 9, 13, 18, 24, 32}));
  EXPECT_EQ(d36.total_tokens(), 2240);
  EXPECT_NEAR(d36.parameter_count() / 1e9, 2.3, 0.1);
  EXPECT_EQ(var_preset("d16", 512).final_grid(), 32);
  EXPECT_EQ(patch_nums_for_resolution(1024).size(), 14u);
  EXPECT_NE(error_of([] { var_preset("d17"); }).find("unknown VAR size 'd17'"), std::string::npos);
  EXPECT_NE(error_of([] { patch_nums_for_resolution(300); }).find("300 px"), std::string::npos);
  const VqvaeConfig vae = vqvae_preset(d36.patch_nums);
  EXPECT_EQ(vae.image_size(), 512);
  EXPECT_EQ(vae.downsample(), 16);
  EXPECT_NO_THROW(check_compatible(d36, vae));
  EXPECT_NE(error_of([&] { check_compatible(d16, vae); }).find("patch_nums"), std::string::npos);
}

TEST(VarConfig, PhiScheduleReproducesNumpyFloat64Ties) {
  VqvaeConfig c;  // share_quant_resi 4, 10 scales
  EXPECT_EQ(c.phi_schedule(), (std::vector<int64_t>{0, 0, 1, 1, 1, 2, 2, 3, 3, 3}));
  // The float64 ticks recorded in the conformance case.
  const std::vector<double> ticks = c.phi_ticks();
  ASSERT_EQ(ticks.size(), 4u);
  EXPECT_EQ(ticks[0], 0.08333333333333333);
  EXPECT_EQ(ticks[1], 0.36111111111111105);
  EXPECT_EQ(ticks[2], 0.6388888888888888);
  EXPECT_EQ(ticks[3], 0.9166666666666666);
  // The 512-px schedule also has 10 scales: the same table.
  c.v_patch_nums = patch_nums_for_resolution(512);
  EXPECT_EQ(c.phi_schedule(), (std::vector<int64_t>{0, 0, 1, 1, 1, 2, 2, 3, 3, 3}));
  c.share_quant_resi = 1;
  EXPECT_EQ(c.phi_count(), 1);
  EXPECT_EQ(c.phi_schedule(), std::vector<int64_t>(10, 0));
  c.share_quant_resi = 0;  // one phi per scale (ticks linspace(1/20, 19/20, 10))
  EXPECT_EQ(c.phi_count(), 10);
  EXPECT_EQ(c.phi_schedule(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  c.quant_resi = 0;
  EXPECT_EQ(c.phi_count(), 0);
  EXPECT_TRUE(c.phi_is_identity());
}

TEST(VarConfig, JsonRoundTripAndUnknownFields) {
  VarConfig c = var_preset("d36");
  EXPECT_EQ(to_json(var_config_from_json(to_json(c))), to_json(c));
  VqvaeConfig v = vqvae_preset(c.patch_nums);
  EXPECT_EQ(to_json(vqvae_config_from_json(to_json(v))), to_json(v));
  nlohmann::json j = to_json(c);
  j["drop_path_rate"] = 0.1;  // training-only: accepted
  EXPECT_NO_THROW(var_config_from_json(j));
  j["bogus"] = 1;
  EXPECT_NE(error_of([&] { var_config_from_json(j); }).find("unknown field 'bogus'"), std::string::npos);
  nlohmann::json bad = to_json(c);
  bad["num_heads"] = 7;
  EXPECT_NE(error_of([&] { var_config_from_json(bad); }).find("not divisible by num_heads 7"), std::string::npos);
  bad = to_json(c);
  bad["patch_nums"] = {1, 3, 2};
  EXPECT_NE(error_of([&] { var_config_from_json(bad); }).find("must increase"), std::string::npos);
}

TEST(VarWeights, OfficialNamesAndStrictChecks) {
  VarConfig c = var_preset("d16");
  auto var_list = var_expected_tensors(c);
  io::ShapeMap have = shapes(var_list);
  EXPECT_EQ(have.at("blocks.15.ada_lin.1.weight"), (std::vector<int64_t>{6144, 1024}));
  EXPECT_EQ(have.at("blocks.0.attn.scale_mul_1H11"), (std::vector<int64_t>{1, 16, 1, 1}));
  EXPECT_EQ(have.at("pos_1LC"), (std::vector<int64_t>{1, 680, 1024}));
  EXPECT_EQ(have.count("shared_ada_lin.1.weight"), 0u);
  int64_t params = 0;
  for (const auto& e : var_list) {
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    params += n;
  }
  EXPECT_EQ(params, c.parameter_count());
  // d36: shared AdaLN (one projection, per-block ada_gss).
  io::ShapeMap d36 = shapes(var_expected_tensors(var_preset("d36")));
  EXPECT_EQ(d36.at("shared_ada_lin.1.weight"), (std::vector<int64_t>{6 * 2304, 2304}));
  EXPECT_EQ(d36.at("blocks.35.ada_gss"), (std::vector<int64_t>{1, 1, 6, 2304}));
  EXPECT_EQ(d36.count("blocks.0.ada_lin.1.weight"), 0u);

  // vae_ch160v4096z32: decoder levels, fused attention, partially shared phi.
  io::ShapeMap vae = shapes(vqvae_expected_tensors(vqvae_preset(c.patch_nums)));
  EXPECT_EQ(vae.at("quantize.quant_resi.qresi_ls.3.weight"), (std::vector<int64_t>{32, 32, 3, 3}));
  EXPECT_EQ(vae.at("decoder.mid.attn_1.qkv.weight"), (std::vector<int64_t>{1920, 640, 1, 1}));
  EXPECT_EQ(vae.at("decoder.up.4.attn.2.qkv.weight"), (std::vector<int64_t>{1920, 640, 1, 1}));
  EXPECT_EQ(vae.at("decoder.up.3.block.0.nin_shortcut.weight"), (std::vector<int64_t>{320, 640, 1, 1}));
  EXPECT_EQ(vae.count("decoder.up.2.block.0.nin_shortcut.weight"), 0u);
  EXPECT_EQ(vae.at("decoder.up.1.upsample.conv.weight"), (std::vector<int64_t>{160, 160, 3, 3}));
  EXPECT_EQ(vae.count("decoder.up.0.upsample.conv.weight"), 0u);
  EXPECT_EQ(vae.at("decoder.conv_out.weight"), (std::vector<int64_t>{3, 160, 3, 3}));
  EXPECT_TRUE(is_unused_vqvae_key("encoder.conv_in.weight"));
  EXPECT_TRUE(is_unused_vqvae_key("quant_conv.bias"));
  EXPECT_FALSE(is_unused_vqvae_key("post_quant_conv.bias"));

  // Strict check: every problem named; buffers accepted when present, shape-checked.
  io::ShapeMap file;
  for (const auto& [k, v] : have) file["var." + k] = v;
  file.erase("var.head.bias");
  file["var.head_nm.ada_lin.1.weight"] = {2048, 1000};
  file["var.blocks.0.attn.bogus"] = {1};
  file["var.lvl_1L"] = {1, 680};
  file["var.attn_bias_for_masking"] = {1, 1, 680, 681};
  auto expected = prefixed_with_present_buffers(file, "var.", var_list, var_buffer_tensors(c));
  const std::string msg = error_of([&] { io::check_tensor_set(file, expected, "file w.safetensors"); });
  EXPECT_NE(msg.find("missing tensors: var.head.bias"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected tensors: var.blocks.0.attn.bogus"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tensor var.head_nm.ada_lin.1.weight has shape [2048,1000], expected [2048,1024]"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("var.attn_bias_for_masking has shape"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("var.lvl_1L"), std::string::npos) << msg;
}

TEST(ScaleSampler, TopKTopPFollowUpstreamVar) {
  const float inf = std::numeric_limits<float>::infinity();
  // probs ~ softmax([0, 1, 2, 3]) = [0.032, 0.087, 0.237, 0.644]
  at::Tensor logits = at::tensor({0.f, 1.f, 2.f, 3.f}).view({1, 1, 4});
  // top_p = 0.7: ascending cumsum [0.032, 0.119, 0.356, 1.0] <= 0.3 removes the two smallest.
  at::Tensor f = filter_var_top_k_top_p(logits, 0, 0.7);
  EXPECT_EQ(f[0][0][0].item<float>(), -inf);
  EXPECT_EQ(f[0][0][1].item<float>(), -inf);
  EXPECT_EQ(f[0][0][2].item<float>(), 2.f);
  // A tiny top_p keeps the most likely token only; top_p >= 1 removes nothing.
  EXPECT_EQ((filter_var_top_k_top_p(logits, 0, 1e-3) > -inf).sum().item<int64_t>(), 1);
  EXPECT_TRUE(at::equal(filter_var_top_k_top_p(logits, 0, 1.0), logits));
  // top-k keeps ties with the k-th value.
  at::Tensor ties = at::tensor({1.f, 3.f, 3.f, 0.f}).view({1, 1, 4});
  EXPECT_EQ((filter_var_top_k_top_p(ties, 1, 1.0) > -inf).sum().item<int64_t>(), 2);
  // Seeded sampling over [B, l, V] is reproducible; greedy takes the arg-max.
  at::Tensor wide = at::randn({2, 9, 50});
  SamplingParams p;
  ScaleSampler a(7), b(7);
  at::Tensor ia = a.sample(wide, p);
  EXPECT_EQ(ia.sizes(), (at::IntArrayRef{2, 9}));
  EXPECT_TRUE(at::equal(ia, b.sample(wide, p)));
  p.sample = false;
  EXPECT_TRUE(at::equal(ScaleSampler(1).sample(wide, p), wide.argmax(-1)));
}
