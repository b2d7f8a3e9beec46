#include "engine/models/llamagen/decode_graphs.h"

#include <ATen/Functions.h>

#include <functional>

#include "engine/core/cuda_graphs.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"

namespace kvs::llamagen {

// The static buffers of one shape. The graphs read the inputs and write the
// outputs in place at every replay; the outputs live in the graphs' pool.
struct DecodeGraphs::Shape {
  int64_t rows = 0;
  at::Tensor tokens;                  // [rows, 1] int64: the step's image tokens
  at::Tensor rope;                    // [1, head_dim/2, 2] float32: the step's RoPE row
  at::Tensor attention;               // [rows, n_head, 1, head_dim]: the last attention's output
  std::vector<at::Tensor> hidden;     // per layer: its input hidden states [rows, 1, dim]
  std::vector<LlamaGenGpt::Qkv> qkv;  // per layer: q, k, v of the step's token
  at::Tensor logits;                  // [rows, 1, vocab] float32
};

DecodeGraphs::DecodeGraphs(const LlamaGenGpt& gpt, CudaGraphSet::Backend backend)
    : gpt_(gpt), backend_(backend), graphs_(std::make_unique<CudaGraphSet>(backend)) {}

DecodeGraphs::~DecodeGraphs() {
  shape_.reset();
  graphs_.reset();
}

bool DecodeGraphs::capture(int64_t rows) {
  shape_.reset();  // the buffers first, then the graphs and their pool
  graphs_->clear();
  const GptConfig& config = gpt_.config();
  const int64_t layers = config.n_layer;
  auto shape = std::make_unique<Shape>();
  Shape& s = *shape;
  const auto on_device = at::TensorOptions().device(gpt_.device());
  s.rows = rows;
  s.tokens = at::zeros({rows, 1}, on_device.dtype(at::kLong));
  s.rope = gpt_.rope_rows(0, 1).clone();
  s.attention = at::zeros({rows, config.n_head, 1, config.head_dim()}, on_device.dtype(gpt_.dtype()));
  s.hidden.resize(static_cast<size_t>(layers));
  s.qkv.resize(static_cast<size_t>(layers));
  // Graph 0: embedding and layer 0 up to attention; graph l: layer l-1 after
  // attention and layer l up to it; graph n_layer: the last layer's rest and the head.
  std::vector<std::function<void()>> bodies;
  bodies.push_back([this, &s] {
    s.hidden[0] = gpt_.image_embeddings(s.tokens);
    s.qkv[0] = gpt_.layer_qkv(0, s.hidden[0], s.rope);
  });
  for (int64_t l = 1; l < layers; ++l)
    bodies.push_back([this, &s, l] {
      const auto i = static_cast<size_t>(l);
      s.hidden[i] = gpt_.layer_output(l - 1, s.hidden[i - 1], s.attention);
      s.qkv[i] = gpt_.layer_qkv(l, s.hidden[i], s.rope);
    });
  bodies.push_back([this, &s, layers] {
    s.logits = gpt_.logits(gpt_.layer_output(layers - 1, s.hidden[static_cast<size_t>(layers - 1)], s.attention));
  });
  try {
    const at::Device device = gpt_.device();
    graphs_->capture(device.has_index() ? device.index() : -1, bodies);
  } catch (const Error& e) {
    failed_ = true;
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      module_logger("llamagen").warn(std::string(e.what()) + "; the decode step runs without CUDA graphs");
    return false;
  }
  shape_ = std::move(shape);
  ++captures_;
  return true;
}

at::Tensor DecodeGraphs::step(const at::Tensor& tokens, int64_t position, KvStore& cache,
                              const StepObserver& observer) {
  const GptConfig& config = gpt_.config();
  const bool real = backend_ == CudaGraphSet::Backend::Cuda;
  if ((real && (!gpt_.device().is_cuda() || !cuda_graphs_built())) || failed_) return {};
  if (position < config.cls_token_num || position >= config.cls_token_num + config.block_size) return {};
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return {};
  const int64_t rows = tokens.numel();
  if ((!shape_ || shape_->rows != rows) && !capture(rows)) return {};
  Shape& s = *shape_;
  s.tokens.copy_(tokens.reshape({rows, 1}));
  s.rope.copy_(gpt_.rope_rows(position, 1));
  const std::vector<int64_t> positions{position};
  graphs_->replay(0);
  for (int64_t l = 0; l < config.n_layer; ++l) {
    s.attention.copy_(gpt_.attend_cached(l, s.qkv[static_cast<size_t>(l)], cache, positions, observer));
    graphs_->replay(static_cast<size_t>(l + 1));
  }
  // The next replay overwrites the buffer: the caller gets a tensor of its own.
  return s.logits.select(1, 0).clone();
}

std::string decode_graphs_report(bool requested, bool on_cuda, int64_t graph_steps, int64_t steps, bool failed) {
  namespace report = cuda_graphs_report;
  if (!on_cuda) return report::kNone;
  if (!cuda_graphs_built()) return report::kNotBuilt;
  if (!requested) return report::kOff;
  if (graph_steps >= steps) return report::kOn;
  return graph_steps == 0 && failed ? report::kFailed : report::kPartly;
}

}  // namespace kvs::llamagen
