#pragma once
// Trains LlamaGen's class-conditional GPT on tokenised world images (run folder
// WORK/gpt), as autoregressive/train/train_c2i.py does: next-token cross-entropy
// over all image tokens given the class token, class dropout (label -> null class
// with probability class_dropout_prob, which is what CFG needs), AdamW (betas 0.9,
// 0.95; decay on >= 2-D tensors), gradient clipping. The forward is the engine's
// own LlamaGenGpt::forward_teacher running on the trainable tensors (with its fused
// attention: same function, cheaper backward), so what is trained is what generates. Init as gpt.py: N(0, 0.02) for
// linear layers and embeddings, zero output layer, unit norms.
#include <cstdint>
#include <string>

#include "engine/models/llamagen/llamagen_config.h"
#include "engine/training/parameter_set.h"
#include "engine/training/training_loop.h"

namespace kvs::llamagen {
class LlamaGenGpt;
}

namespace kvs::training {

struct GptTrainSetup {
  llamagen::GptConfig model;  // vocab_size / block_size must fit the tokenizer
  std::string vq_run_dir;     // the trained tokenizer (WORK/vq)
  int64_t train_per_class = 1000;
  int64_t eval_per_class = 20;
};

// Sets model.vocab_size and model.block_size from the tokenizer checkpoint in vq_run_dir.
void fit_gpt_to_tokenizer(GptTrainSetup& setup);

ParameterSet init_gpt_parameters(const llamagen::GptConfig& config, uint64_t seed, at::Device device);

// Mean next-token cross-entropy of `codes` [B, T] given `labels` [B] (teacher
// forcing); `token_accuracy`, when given, receives the arg-max hit rate.
at::Tensor gpt_loss(const llamagen::LlamaGenGpt& gpt, const at::Tensor& labels, const at::Tensor& codes,
                    double* token_accuracy = nullptr);

TrainSummary train_gpt(const TrainOptions& options, const GptTrainSetup& setup);

}  // namespace kvs::training
