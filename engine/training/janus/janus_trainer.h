#pragma once
// Trains the demo text-to-image model (run folder WORK/janus): Janus-Pro's
// generation architecture — the LLaMA language model, gen_embed -> gen_aligner
// for image tokens in, gen_head out — on captioned world pictures tokenised by a
// trained VQ tokenizer (WORK/vq) and a trained text tokenizer
// (WORK/text-tokenizer). The forward is the engine's own JanusModel running on
// the trainable tensors (the teacher-forcing path of JanusLanguageModel), so what
// is trained is what generates.
//
// A training sequence is what generation feeds the model: the caption in the
// official prompt format (janus_prompt.h: chat template, BOS, the image-start
// tag) at positions 0..P-1, then the image tokens; next-token cross-entropy over
// the image tokens only (the text is given, as in text-to-image training).
// Condition dropout: with probability condition_dropout a prompt becomes its CFG
// unconditional row (every token but the first and the last replaced by the pad
// token), exactly the row classifier-free guidance runs at generation time.
//
// Choices where Janus-Pro's paper and code are silent (its training code is not
// public):
// - Prompts have different lengths and generation never pads them, so a batch
//   holds prompts of one token length: an anchor example is drawn, the rest of
//   the batch from the examples of the same prompt length.
// - Init: transformers' LLaMA init for the language model (N(0, 0.02) for every
//   matrix and the text embedding, norms 1); PyTorch's defaults for gen_aligner
//   and gen_head (nn.Linear) and gen_embed (nn.Embedding, N(0, 1)), except
//   gen_head.vision_head.weight = 0 so training starts from nearly uniform image
//   logits (as LlamaGen's output layer does; its bias keeps the small default).
// - AdamW decay on >= 2-D tensors, as for the LlamaGen demo.
// - Mirroring (`mirror`) adds every training picture mirrored left-right, captioned
//   from its mirrored facts with the same caption seeds: pairs of captions that
//   differ only in "left" and "right" over pictures that differ only in the side
//   things are on, which is what ties the side words to the picture. Plain flips
//   (as the tokenizer trainers use) would teach captions that lie about the side.
// - `init_from` starts from a shipped janus-pro bundle's generator instead of the
//   init above (fresh AdamW state; the language sizes must be the bundle's). The
//   image tokenizer must then be an encoder fitted to that bundle's decoder
//   (`kvstudio-train vq --decoder-from BUNDLE`), so that the codes mean what they
//   meant when the bundle was trained.
#include <cstdint>
#include <string>

#include "engine/models/janus/janus_config.h"
#include "engine/training/parameter_set.h"
#include "engine/training/training_loop.h"

namespace kvs::janus {
struct JanusModel;
}

namespace kvs::training {

struct JanusTrainSetup {
  janus::JanusConfig model;        // the language sizes; the rest follows the tokenizers
  std::string vq_run_dir;          // WORK/vq
  std::string text_tokenizer_dir;  // WORK/text-tokenizer
  int64_t train_per_class = 1000;
  int64_t eval_per_class = 20;
  int64_t captions_per_image = 4;
  double condition_dropout = 0.1;
  bool mirror = false;    // also train on the pictures mirrored left-right, with mirrored captions
  std::string init_from;  // a janus-pro bundle folder whose generator the run starts from
};

// Sets the VQ config, image size, image vocabulary, gen_embed width and text
// vocabulary from the two tokenizers (FileError when one is missing).
void fit_janus_to_tokenizers(JanusTrainSetup& setup);

ParameterSet init_janus_parameters(const janus::JanusConfig& config, uint64_t seed, at::Device device);

// Mean next-image-token cross-entropy of `codes` [B, T] after the prompts
// `prompt_ids` [B, P] (one length); `token_accuracy` receives the arg-max hit rate.
at::Tensor janus_loss(const janus::JanusModel& model, const at::Tensor& prompt_ids, const at::Tensor& codes,
                      double* token_accuracy = nullptr);

TrainSummary train_janus(const TrainOptions& options, const JanusTrainSetup& setup);

}  // namespace kvs::training
