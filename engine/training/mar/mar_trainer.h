#pragma once
// Trains MAR (LTH14/mar models/mar.py MAR.forward, engine_mar.py train_one_epoch)
// on the scaled KL-VAE latents of world images (run folder WORK/mar):
//   - latents: posterior.sample() * latent_scale of the cached moments of the image
//     or its mirror (p = 0.5), as engine_mar.py with --use_cached (mar_latents.h);
//   - patchify, one random generation order per image, one mask ratio per batch from
//     the truncated normal on [mask_ratio_min, 1] centred at 1 with std 0.25
//     (scipy truncnorm, sampled here by inverting the normal CDF), the first
//     ceil(seq_len * ratio) positions of each order masked;
//   - class dropout: the class embedding -> fake_latent with label_drop_prob (0.1);
//   - forward_mae_encoder (the engine's MarTransformer::forward_encoder: the
//     masked tokens are dropped, as in training upstream) and forward_mae_decoder,
//     on the trainable tensors: training runs the inference code. attn/proj dropout
//     are 0 here (upstream trains with 0.1; the engine has no dropout and a tiny
//     demo on a small data set is not the regime where it pays off);
//   - diffusion loss on every token's condition repeated diffusion_batch_mul times
//     (upstream's README trains with 4), averaged over the masked rows only
//     (DiffLoss with mask): mse on the noise + the learned-range VB term
//     (diffusion_loss.h) through the engine's DiffusionHead. Only the masked rows are
//     evaluated — the same loss and gradients as upstream's masked average over all rows;
//   - AdamW betas (0.9, 0.95), weight decay 0.02, no decay on 1-D tensors (misc.
//     add_weight_decay), gradient clip 3.0; warm-up then constant lr (upstream) or cosine;
//   - EMA of the weights (upstream ema_rate 0.9999 over ~2M steps; for a run of
//     ~10^4 steps that would still be mostly the initial weights, so ours defaults to
//     0.999, a 1000-step horizon); the export ships the EMA weights, as the official
//     evaluation and the converter (model_ema) use them.
// Sampling respacing (MarConfig::num_sampling_steps, stored in the bundle): the
// demo uses "ddim25", not upstream's "100"/"25" which keep t = 999 (see
// engine/models/mar/mar_random_init.h: a briefly trained head blows up there).
// Init: MAR.initialize_weights (xavier_uniform Linear, N(0, 0.02) embeddings,
// mask token, fake latent and position embeddings, LayerNorm 1/0) and
// SimpleMLPAdaLN.initialize_weights (xavier Linear, N(0, 0.02) time MLP, zero
// adaLN modulations and output layer).
#include <cstdint>
#include <map>
#include <string>

#include "engine/models/mar/mar_config.h"
#include "engine/training/mar/diffusion_loss.h"
#include "engine/training/parameter_set.h"
#include "engine/training/training_loop.h"

namespace kvs::mar {
class MarTransformer;
class DiffusionHead;
}  // namespace kvs::mar

namespace kvs::training {

struct MarTrainSetup {
  mar::MarConfig model;     // vae_embed_dim / seq size must fit the VAE
  std::string vae_run_dir;  // the trained KL VAE (WORK/kl-vae)
  double mask_ratio_min = 0.7;
  double label_drop_prob = 0.1;
  int64_t diffusion_batch_mul = 4;
  double ema_rate = 0.999;  // 0: no EMA (the export ships the raw weights)
  bool flip = true;         // draw the mirror's latents half of the time
  int64_t train_per_class = 1000;
  int64_t eval_per_class = 20;
};

// Prefix of the EMA copies kept in the ParameterSet (and so in every checkpoint).
inline constexpr const char* kEmaPrefix = "ema.";

// Sets model.vae_embed_dim and img_size / vae_stride (image size and the VAE's
// downsampling) from the KL VAE checkpoint in vae_run_dir; FileError when there is none.
void fit_mar_to_vae(MarTrainSetup& setup);

ParameterSet init_mar_parameters(const mar::MarConfig& config, uint64_t seed, at::Device device, bool with_ema);
// Name -> tensor of the model (`ema` false) or of its EMA copies (names without the prefix).
std::map<std::string, at::Tensor> mar_weights(const ParameterSet& params, bool ema);
// The diffusion head's tensors ("diffloss.net." stripped) of a MAR state dict.
std::map<std::string, at::Tensor> diffusion_head_weights(const std::map<std::string, at::Tensor>& mar_weights);

// MAR.patchify: latents [B, C, H, W] -> [B, (H/p)(W/p), C p^2].
at::Tensor mar_patchify(const at::Tensor& latents, int64_t patch_size);
// truncnorm((min - 1) / 0.25, 0, loc=1, scale=0.25) at the uniform draw u in [0, 1).
double mask_ratio_from_uniform(double u, double mask_ratio_min);
// random_masking: [B, L] float mask, 1 at the first num_masked positions of each order.
at::Tensor mask_from_orders(const at::Tensor& orders, int64_t num_masked);

// One training batch, fully drawn (what MAR.forward draws itself upstream).
struct MarBatch {
  at::Tensor tokens;      // [B, L, C] ground-truth (scaled) latents
  at::Tensor labels;      // [B] int64
  at::Tensor mask;        // [B, L] float, 1 = masked (predicted)
  at::Tensor drop_label;  // [B] bool: class embedding -> fake_latent
};

// forward_mae_decoder(forward_mae_encoder(tokens, mask, class embedding with
// dropout)) -> z [B, L, D]: the condition of the diffusion head.
at::Tensor mar_condition(const mar::MarTransformer& transformer, const MarBatch& batch);

struct MarLoss {
  at::Tensor loss;  // scalar, with autograd
  double mse = 0, vb = 0;
};
// MAR.forward_loss on `batch`; t and the noise are drawn from `gen` for all
// B * L * diffusion_batch_mul rows (t first), then the masked rows are evaluated.
MarLoss mar_loss(const mar::MarTransformer& transformer, const mar::DiffusionHead& head,
                 const DiffusionTrainingLoss& diffusion, const MarBatch& batch, int64_t diffusion_batch_mul,
                 at::Generator& gen);

TrainSummary train_mar(const TrainOptions& options, const MarTrainSetup& setup);

}  // namespace kvs::training
