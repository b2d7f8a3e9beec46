#pragma once
// The loop of every masked family (MAR's sample_tokens): the images' tokens
// start unknown; each image draws a random generation order; step k of
// num_iter keeps the first mask_len positions of each order unknown, with
// mask_len = floor(seq_len * cos(pi/2 * (k+1)/num_iter)) clamped to
// [1, unknown - 1], and the network predicts the positions that become known
// now (all remaining ones at the last step) under this step's guidance
// (linear: 1 + (cfg - 1) * (seq_len - mask_len) / seq_len, or constant). The
// schedule's arithmetic is upstream's (a float64 cosine, float32 mask_len and
// guidance). The loop owns the schedule, the token state, cancellation before
// every step and the per-step callback; a family hands in its network
// (MaskedNetwork: how it draws the orders and predicts a step's tokens).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvs::masked {

// Tokens still unknown after step `step` when `unknown_now` are unknown before it.
int64_t mask_len_after_step(int64_t step, int64_t num_iter, int64_t seq_len, int64_t unknown_now);
// The guidance of a step whose mask_len is `mask_len` ("linear" or "constant";
// float32 arithmetic, as upstream).
float cfg_for_step(double cfg, const std::string& schedule, int64_t mask_len, int64_t seq_len);
// mask_by_order: the first `mask_len` positions of each order [B, seq_len] are (still) unknown.
at::Tensor mask_by_order(int64_t mask_len, const at::Tensor& orders);

// What the network is asked at one step (image rows only; a network with
// guidance doubles them itself).
struct MaskedStepPlan {
  int64_t step = 0, num_iter = 0;
  const at::Tensor* tokens = nullptr;      // [B, seq_len, C]: known tokens, zeros elsewhere
  const at::Tensor* unknown = nullptr;     // [B, seq_len] bool: unknown before this step
  const at::Tensor* to_predict = nullptr;  // [B, seq_len] bool: predicted at this step
  int64_t unknown_count = 0;               // tokens per image unknown before this step
  float cfg = 1.0f;                        // this step's guidance (1: none)
};

class MaskedNetwork {
 public:
  virtual ~MaskedNetwork() = default;
  // The images' generation orders [B, seq_len] (int64, each row a permutation),
  // drawn once before the first step.
  virtual at::Tensor orders(int64_t images, int64_t seq_len) = 0;
  // The tokens of the positions plan.to_predict marks, [n, C], in the order
  // of (image, position).
  virtual at::Tensor predict(const MaskedStepPlan& plan) = 0;
};

struct MaskedShape {
  int64_t images = 1, seq_len = 0, channels = 0;
  int64_t num_iter = 64;
  double cfg = 1.0;
  std::string cfg_schedule = "linear";
  at::Device device = at::kCPU;  // where the token state lives
};

// What on_step sees after a step (image rows only).
struct MaskedStep {
  int64_t step = 0, steps_total = 0;
  int64_t tokens_done = 0;                     // known tokens per image after this step
  int64_t predicted = 0;                       // tokens per image predicted at this step
  double cfg = 1.0;                            // this step's guidance
  const at::Tensor* tokens = nullptr;          // [B, seq_len, C]: known tokens, zeros elsewhere
  const at::Tensor* predicted_mask = nullptr;  // [B, seq_len] bool: predicted at this step
  const at::Tensor* known = nullptr;           // [B, seq_len] bool: known after this step
  const at::Tensor* orders = nullptr;          // [B, seq_len] int64: the generation orders
};

struct MaskedLoopHooks {
  std::function<bool()> cancelled;  // checked before every step; true throws CancelledError
  std::function<void(const MaskedStep&)> on_step;
};

struct MaskedResult {
  at::Tensor tokens;  // [B, seq_len, C]
  at::Tensor orders;  // [B, seq_len] int64
  std::vector<int64_t> predicted_per_step;
  std::vector<double> cfg_per_step;
};

MaskedResult generate(MaskedNetwork& network, const MaskedShape& shape, const MaskedLoopHooks& hooks = {});

}  // namespace kvs::masked
