// MAR configs and weight lists: the official presets, JSON in upstream spelling,
// the expected state-dict names/shapes, and strict, named weight errors.
#include <ATen/Functions.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/mar/mar_config.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/models/mar/mar_weights.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;
using namespace kvs::mar;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(MarConfig, OfficialPresets) {
  const MarConfig b = mar_preset("mar-B");
  EXPECT_EQ(b.encoder_embed_dim, 768);
  EXPECT_EQ(b.encoder_depth, 12);
  EXPECT_EQ(b.decoder_depth, 12);
  EXPECT_EQ(b.encoder_num_heads, 12);
  EXPECT_EQ(b.diffloss_d, 6);
  EXPECT_EQ(b.diffloss_w, 1024);
  EXPECT_EQ(b.buffer_size, 64);
  EXPECT_EQ(b.seq_len(), 256);
  EXPECT_EQ(b.token_embed_dim(), 16);
  EXPECT_EQ(b.encoder_mlp_hidden(), 3072);
  const MarConfig l = mar_preset("mar_large");
  EXPECT_EQ(l.encoder_embed_dim, 1024);
  EXPECT_EQ(l.decoder_depth, 16);
  EXPECT_EQ(l.decoder_num_heads, 16);
  EXPECT_EQ(l.diffloss_d, 8);
  EXPECT_EQ(l.diffloss_w, 1280);
  const MarConfig h = mar_preset("MAR-H", 10);
  EXPECT_EQ(h.encoder_embed_dim, 1280);
  EXPECT_EQ(h.encoder_depth, 20);
  EXPECT_EQ(h.encoder_num_heads, 16);
  EXPECT_EQ(h.diffloss_d, 12);
  EXPECT_EQ(h.diffloss_w, 1536);
  EXPECT_EQ(h.class_num, 10);
  EXPECT_EQ(mar_preset("b").encoder_embed_dim, 768);
  EXPECT_NE(error_of([] { mar_preset("mar-XL"); }).find("known: mar-B, mar-L, mar-H"), std::string::npos);
  // The README's model sizes (MAR + diffusion head): 208M, 479M, 943M.
  EXPECT_NEAR(mar_parameter_count(b) / 1e6, 208, 2.5);
  EXPECT_NEAR(mar_parameter_count(l) / 1e6, 479, 5);
  EXPECT_NEAR(mar_parameter_count(mar_preset("mar-H")) / 1e6, 943, 10);
  const KlVaeConfig kl = kl16_config();
  EXPECT_EQ(kl.embed_dim, 16);
  EXPECT_EQ(kl.ch, 128);
  EXPECT_EQ(kl.ch_mult, (std::vector<int64_t>{1, 1, 2, 2, 4}));
  EXPECT_EQ(kl.upsampling(), 16);
  EXPECT_TRUE(kl.attn_resolutions.empty());
  EXPECT_DOUBLE_EQ(kl.latent_scale, 0.2325);
  EXPECT_DOUBLE_EQ(mar_sampling_defaults("mar-L").at("cfg_scale").get<double>(), 3.0);
}

TEST(MarConfig, JsonRoundTripAndUpstreamSpelling) {
  MarConfig c = mar_preset("mar-B");
  c.num_sampling_steps = "ddim50";
  const MarConfig back = mar_config_from_json(to_json(c));
  EXPECT_EQ(to_json(back), to_json(c));
  // The conformance cases' constructor args: training-only fields are accepted, an integer step count too.
  nlohmann::json args = {{"img_size", 256},          {"vae_stride", 16},
                         {"patch_size", 1},          {"encoder_embed_dim", 64},
                         {"encoder_depth", 1},       {"encoder_num_heads", 2},
                         {"decoder_embed_dim", 64},  {"decoder_depth", 1},
                         {"decoder_num_heads", 2},   {"mlp_ratio", 4.0},
                         {"vae_embed_dim", 16},      {"class_num", 10},
                         {"buffer_size", 64},        {"diffloss_d", 1},
                         {"diffloss_w", 64},         {"num_sampling_steps", 40},
                         {"mask_ratio_min", 0.7},    {"label_drop_prob", 0.1},
                         {"attn_dropout", 0.0},      {"proj_dropout", 0.0},
                         {"diffusion_batch_mul", 1}, {"grad_checkpointing", false}};
  EXPECT_EQ(mar_config_from_json(args).num_sampling_steps, "40");
  args["bogus"] = 1;
  EXPECT_NE(error_of([&] { mar_config_from_json(args); }).find("unknown field 'bogus'"), std::string::npos);
  args.erase("bogus");
  args["encoder_num_heads"] = 3;
  EXPECT_NE(error_of([&] { mar_config_from_json(args); }).find("not divisible by encoder_num_heads 3"),
            std::string::npos);
  const KlVaeConfig vae = kl_vae_config_from_json(to_json(kl16_config()));
  EXPECT_EQ(to_json(vae), to_json(kl16_config()));
  EXPECT_NE(error_of([] { kl_vae_config_from_json({{"ch", 40}}); }).find("multiple of 32"), std::string::npos);
}

TEST(MarWeights, OfficialNamesAndShapes) {
  const MarConfig c = mar_preset("mar-B");
  io::ShapeMap shapes;
  for (const auto& e : mar_expected_tensors(c)) shapes[e.name] = e.shape;
  EXPECT_EQ(shapes.at("encoder_pos_embed_learned"), (std::vector<int64_t>{1, 320, 768}));
  EXPECT_EQ(shapes.at("diffusion_pos_embed_learned"), (std::vector<int64_t>{1, 256, 768}));
  EXPECT_EQ(shapes.at("encoder_blocks.11.attn.qkv.weight"), (std::vector<int64_t>{2304, 768}));
  EXPECT_EQ(shapes.at("diffloss.net.time_embed.mlp.0.weight"), (std::vector<int64_t>{1024, 256}));
  EXPECT_EQ(shapes.at("diffloss.net.final_layer.linear.weight"), (std::vector<int64_t>{32, 1024}));
  EXPECT_EQ(shapes.at("diffloss.net.res_blocks.5.adaLN_modulation.1.weight"), (std::vector<int64_t>{3072, 1024}));
  EXPECT_EQ(shapes.count("encoder_blocks.12.norm1.weight"), 0u);
  io::ShapeMap vae;
  for (const auto& e : kl_vae_expected_tensors(kl16_config())) vae[e.name] = e.shape;
  EXPECT_EQ(vae.at("decoder.conv_in.weight"), (std::vector<int64_t>{512, 16, 3, 3}));
  EXPECT_EQ(vae.at("decoder.up.1.block.0.nin_shortcut.weight"), (std::vector<int64_t>{128, 256, 1, 1}));
  EXPECT_EQ(vae.count("decoder.up.4.attn.0.q.weight"), 0u);  // kl16: no attention in the up blocks
  EXPECT_EQ(vae.count("decoder.up.0.upsample.conv.weight"), 0u);
  EXPECT_EQ(vae.at("post_quant_conv.weight"), (std::vector<int64_t>{16, 16, 1, 1}));
  // The decoder architecture is recovered from the shapes.
  const KlVaeConfig inferred = infer_kl_vae_config(vae, "test");
  EXPECT_EQ(to_json(inferred), to_json(kl16_config()));
  EXPECT_TRUE(is_unused_vae_key("encoder.conv_in.weight"));
  EXPECT_TRUE(is_unused_vae_key("quant_conv.bias"));
  EXPECT_TRUE(is_unused_vae_key("loss.logvar"));
  EXPECT_FALSE(is_unused_vae_key("decoder.conv_in.weight"));
}

TEST(MarWeights, LoadingNamesEveryBadTensor) {
  test::TempDir dir;
  const MarConfig c = demo_mar_config();
  const KlVaeConfig v = demo_kl_vae_config();
  write_random_mar_bundle(dir.path().string(), "tiny", c, v, 3);
  auto reader = io::SafetensorsReader::open(dir.file("weights.safetensors"));
  io::NamedTensors tensors;
  for (const auto& name : reader->names()) {
    if (name == "mar.mask_token") continue;  // missing
    at::Tensor t = reader->tensor(name);
    if (name == "mar.decoder_norm.bias") t = at::zeros({7});  // bad shape
    tensors.emplace_back(name, t);
  }
  tensors.emplace_back("mar.encoder_blocks.0.attn.bogus", at::zeros({2}));  // unexpected
  tensors.emplace_back("gpt.tok_embeddings.weight", at::zeros({2}));        // another family's
  io::write_safetensors(dir.file("broken.safetensors"), tensors);
  auto broken = io::SafetensorsReader::open(dir.file("broken.safetensors"));
  const std::string message = error_of([&] { MarModel::from_weights(c, v, *broken, at::Device(at::kCPU)); });
  EXPECT_NE(message.find("missing tensors: mar.mask_token"), std::string::npos) << message;
  EXPECT_NE(message.find("mar.encoder_blocks.0.attn.bogus"), std::string::npos) << message;
  EXPECT_NE(message.find("gpt.tok_embeddings.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("tensor mar.decoder_norm.bias has shape [7], expected [128]"), std::string::npos) << message;
  // A model.json whose config does not fit the weights names the mismatch too.
  MarConfig wider = c;
  wider.diffloss_w = 256;
  const std::string mismatch = error_of([&] { MarModel::from_weights(wider, v, *reader, at::Device(at::kCPU)); });
  EXPECT_NE(mismatch.find("mar.diffloss.net.time_embed.mlp.0.weight has shape [128,256], expected [256,256]"),
            std::string::npos)
      << mismatch;
}
