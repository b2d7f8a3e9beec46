// A trained work folder becomes a bundle that the engine loads like any converted
// checkpoint, and the loaded networks compute what the training networks computed.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include "engine/io/model_bundle.h"
#include "engine/models/blocks/vq_decoder.h"
#include "engine/models/llamagen/llamagen_gpt.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/training/checkpoint.h"
#include "engine/training/llamagen/bundle_export.h"
#include "engine/training/llamagen/gpt_trainer.h"
#include "engine/training/llamagen/vq_model.h"
#include "engine/training/world_dataset.h"
#include "tests/engine/test_helpers.h"

namespace kvs::training {
namespace {

TEST(TrainingExport, BundleReproducesTheTrainingNetworks) {
  test::TempDir work;
  VqModelConfig vq_cfg;
  vq_cfg.arch.codebook_size = 16;
  vq_cfg.arch.codebook_embed_dim = 4;
  vq_cfg.arch.z_channels = 32;
  vq_cfg.arch.ch = 32;
  vq_cfg.arch.decoder_ch_mult = {1, 2};
  vq_cfg.arch.num_res_blocks = 1;
  ParameterSet vq_params = init_vq_parameters(vq_cfg, 4, at::kCPU);
  save_checkpoint(work.file("vq"), vq_params, nullptr, 7,
                  {{"kind", "vq"}, {"seed", 4}, {"config", {{"model", to_json(vq_cfg)}, {"image_size", 16}}}});

  llamagen::GptConfig gpt_cfg;
  gpt_cfg.dim = 32;
  gpt_cfg.n_layer = 2;
  gpt_cfg.n_head = 4;
  gpt_cfg.multiple_of = 16;
  gpt_cfg.vocab_size = 16;
  gpt_cfg.num_classes = world_class_count();
  gpt_cfg.block_size = 64;  // 16 px / 2 = 8x8 tokens
  ParameterSet gpt_params = init_gpt_parameters(gpt_cfg, 5, at::kCPU);
  {
    c10::NoGradGuard no_grad;  // a zero output layer would make every logit 0
    gpt_params.get("output.weight").normal_(0.0, 0.5);
  }
  const auto vq_manifest = read_checkpoint_manifest(work.file("vq"));
  save_checkpoint(work.file("gpt"), gpt_params, nullptr, 9,
                  {{"kind", "gpt"},
                   {"config", {{"model", llamagen::to_json(gpt_cfg)}, {"tokenizer", vq_manifest->at("weights")}}}});

  BundleExportOptions o;
  o.work_dir = work.path().string();
  o.out_dir = work.file("bundle");
  o.dtype = "f32";
  o.command = "test";
  export_llamagen_bundle(o);
  const io::ModelBundle bundle = io::ModelBundle::open(o.out_dir);
  EXPECT_EQ(bundle.class_names(), world_class_names());
  EXPECT_EQ(bundle.manifest["provenance"]["tokenizer_training"]["steps"], 7);
  EXPECT_EQ(bundle.manifest["sampling_defaults"]["cfg_scale"], 4.0);
  const llamagen::LlamaGenModel loaded = llamagen::LlamaGenModel::load(bundle, at::kCPU);

  c10::NoGradGuard no_grad;
  VqModel trained_vq(vq_cfg, vq_params.as_map(), at::kCPU);
  VqOutput out = trained_vq.forward(at::rand({2, 3, 16, 16}) * 2 - 1, false);
  EXPECT_TRUE(at::allclose(loaded.vq->decode_codes(out.quantized.codes, 8, 8), out.reconstruction, 1e-5, 1e-5));

  llamagen::LlamaGenGpt trained_gpt(gpt_cfg, gpt_params.as_map(), at::kCPU);
  at::Tensor labels = at::tensor({int64_t{0}, gpt_cfg.num_classes - 1});
  at::Tensor codes = out.quantized.codes.narrow(1, 0, 20);
  at::Tensor expected = trained_gpt.forward_teacher(labels, codes);
  EXPECT_TRUE(at::allclose(loaded.gpt->forward_teacher(labels, codes), expected, 1e-5, 1e-5));

  // F16 bundles (what ships) stay close.
  o.dtype = "f16";
  o.out_dir = work.file("bundle16");
  export_llamagen_bundle(o);
  const llamagen::LlamaGenModel half = llamagen::LlamaGenModel::load(io::ModelBundle::open(o.out_dir), at::kCPU);
  EXPECT_LT((half.gpt->forward_teacher(labels, codes) - expected).abs().max().item<double>(), 2e-2);
}

}  // namespace
}  // namespace kvs::training
