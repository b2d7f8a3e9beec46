#pragma once
// Trains VAR's class-conditional next-scale transformer on tokenised world images
// (run folder WORK/var), as FoundationVision/VAR trainer.py VARTrainer.train_step:
//   - ids of every scale from the trained VQVAE (img_to_idxBl, extracted once and
//     cached like LlamaGen's codes);
//   - teacher-forcing input idxBl_to_var_input: for each scale after the first, the
//     f_hat accumulated up to the previous scale area-downsampled to the scale's
//     size (the engine's MultiScaleVqvae::ids_to_var_input, i.e. exactly what
//     generation feeds at that scale);
//   - the engine's VarTransformer::forward_teacher (block-causal mask) on the
//     trainable tensors, rebuilt every step because it pre-computes a few tensors
//     (lvl_embed + pos_1LC, the q/0/v bias, the clamped head scales) from its weights;
//   - condition dropout (VAR.forward: label -> num_classes with probability
//     cond_drop_rate, upstream 0.1), which is what CFG samples from;
//   - cross-entropy over all L tokens, every token weighted equally (upstream's
//     loss_weight = 1/L, no label smoothing by default);
//   - AdamW betas (0.9, 0.95), decay 0.05, no decay on 1-D tensors and on
//     pos_start, pos_1LC, lvl_embed and scale_mul_1H11 (upstream filter_params).
// Init: VAR.init_weights with upstream's defaults (init_std = sqrt(1 / 3C),
// head x 0.02, AdaLN x 0.5 with gamma x alng, proj/fc2 / sqrt(2 depth)).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/var/var_config.h"
#include "engine/training/parameter_set.h"
#include "engine/training/training_loop.h"

namespace kvs::var {
class MultiScaleVqvae;
class VarTransformer;
}  // namespace kvs::var

namespace kvs::training {

struct VarTrainSetup {
  var::VarConfig model;     // vocab_size / Cvae / patch_nums must fit the tokenizer
  std::string vae_run_dir;  // the trained VQVAE (WORK/var-vae)
  double cond_drop_rate = 0.1;
  double init_adaln_gamma = 1e-3;  // upstream --alng (1e-3 in the README's recipes, 1e-5 default)
  int64_t train_per_class = 1000;
  int64_t eval_per_class = 20;
};

// Sets model.vocab_size, cvae and patch_nums from the VQVAE checkpoint in vae_run_dir.
void fit_var_to_tokenizer(VarTrainSetup& setup);

ParameterSet init_var_parameters(const var::VarConfig& config, uint64_t seed, at::Device device,
                                 double init_adaln_gamma = 1e-3);

// Splits flattened multi-scale ids [B, L] (scale 0 first) into per-scale [B, pn^2].
std::vector<at::Tensor> split_scales(const var::VarConfig& config, const at::Tensor& tokens);

// Mean cross-entropy over all L tokens of `tokens` [B, L] given `labels` [B];
// `token_accuracy`, when given, receives the arg-max hit rate.
at::Tensor var_loss(const var::VarTransformer& model, const var::MultiScaleVqvae& vqvae, const at::Tensor& labels,
                    const at::Tensor& tokens, double* token_accuracy = nullptr);

TrainSummary train_var(const TrainOptions& options, const VarTrainSetup& setup);

}  // namespace kvs::training
