#include "engine/models/mar/lazymar_policy.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "engine/models/mar/diffusion_head.h"
#include "engine/models/mar/gaussian_diffusion.h"
#include "engine/models/mar/lazymar_head_cache.h"
#include "engine/models/mar/mar_flops.h"

namespace kvs {
namespace {

using mar::MarFlops;
using mar::MarStack;

// [rows, heads, n, hd] -> [rows, n, heads * hd]
at::Tensor to_token_major(const at::Tensor& kv) {
  return kv.permute({0, 2, 1, 3}).reshape({kv.size(0), kv.size(2), kv.size(1) * kv.size(3)});
}

// [rows, n, heads * hd] -> [rows, heads, n, hd]
at::Tensor to_head_major(const at::Tensor& kv, int64_t heads) {
  return kv.view({kv.size(0), kv.size(1), heads, kv.size(2) / heads}).permute({0, 2, 1, 3});
}

// The rows of `x` [rows, n, d] where `select` [rows, n] is true (the same count in every row), in position order.
at::Tensor select_tokens(const at::Tensor& x, const at::Tensor& select) {
  return at::masked_select(x, select.unsqueeze(-1)).reshape({x.size(0), -1, x.size(2)});
}

void scatter_tokens(at::Tensor& dst, const at::Tensor& select, const at::Tensor& src) {
  dst.masked_scatter_(select.unsqueeze(-1).expand_as(dst), src.contiguous());
}

// Buffer positions (always false) prepended to a [rows, seq_len] grid mask.
at::Tensor with_buffer(const at::Tensor& grid, int64_t buffer, bool buffer_value) {
  at::Tensor b = at::full({grid.size(0), buffer}, buffer_value, grid.options().dtype(at::kBool));
  return at::cat({b, grid.to(at::kBool)}, 1);
}

}  // namespace

const std::vector<double>& lazymar_official_retention() {
  // models/basic.py RETAIN_RATIO_SCHEDULE (one entry per step of a 64-step run).
  static const std::vector<double> table = {1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  1.0,
                                            1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  1.0,  0.6,  0.5,
                                            0.5,  0.5,  0.5,  0.4,  0.4,  0.4,  0.4,  0.4,  0.15, 0.15, 0.15,
                                            0.15, 0.15, 0.12, 0.12, 0.12, 0.12, 0.12, 0.05, 0.05, 0.05, 0.05,
                                            0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05,
                                            0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05};
  return table;
}

void LazyMarParams::validate() const {
  auto bad = [](const std::string& what) { throw InvalidArgumentError("policy lazymar: " + what); };
  if (start < 0)
    bad("start " + std::to_string(start) + " is impossible (must be >= 0: the first step that may refresh)");
  if (interval < 1)
    bad("interval " + std::to_string(interval) +
        " is impossible (must be >= 1; 1 refreshes every step, i.e. no caching)");
  if (retention != "official" && retention != "constant")
    bad("retention must be one of official, constant, got '" + retention + "'");
  if (!(ratio > 0 && ratio <= 1)) bad("ratio " + std::to_string(ratio) + " is impossible (must be 0 < ratio <= 1)");
  if (extra < 0) bad("extra " + std::to_string(extra) + " is impossible (must be >= 0)");
  if (layer < 0) bad("layer " + std::to_string(layer) + " is impossible (a 0-based decoder block index, >= 0)");
  if (head_threshold < 1)
    bad("head_threshold " + std::to_string(head_threshold) +
        " is impossible (must be >= 1; 1 runs the full head at every reverse step)");
}

LazyMarParams LazyMarParams::from(const PolicyParams& p) {
  LazyMarParams out;
  out.start = p.integer("start");
  out.interval = p.integer("interval");
  out.retention = p.text("retention");
  out.ratio = p.real("ratio");
  out.extra = p.integer("extra");
  out.layer = p.integer("layer");
  out.selection = lazymar_selection_named(p.text("selection"));
  out.token_cache = p.text("token_cache") == "on";
  out.condition_cache = p.text("condition_cache") == "on";
  out.head_cache = p.text("head_cache") == "on";
  out.head_threshold = p.integer("head_threshold");
  out.validate();
  return out;
}

double LazyMarParams::retention_ratio(int64_t step, int64_t steps) const {
  if (retention == "constant") return ratio;
  const auto& table = lazymar_official_retention();
  const int64_t n = static_cast<int64_t>(table.size());
  const int64_t index = steps > 0 ? std::min(n - 1, std::max<int64_t>(0, step * n / steps)) : 0;
  return table[static_cast<size_t>(index)];
}

bool serves_masked_family(const std::string& name) {
  for (const auto& info : policy_registry())
    if (info.name == name)
      return std::find(info.families.begin(), info.families.end(), "masked") != info.families.end();
  return false;
}

std::unique_ptr<LazyMarCache> make_masked_feature_cache(const std::string& spec, const mar::MarConfig& config,
                                                        mar::MarFlopCounter* flops, uint64_t seed) {
  return make_masked_feature_cache(parse_policy_spec(spec), config, flops, seed);
}

std::unique_ptr<LazyMarCache> make_masked_feature_cache(const PolicySpec& parsed, const mar::MarConfig& config,
                                                        mar::MarFlopCounter* flops, uint64_t seed) {
  const PolicyInfo& info = find_policy(parsed.name);
  if (!serves_masked_family(info.name)) {
    std::string names;
    for (const auto& i : policy_registry())
      if (serves_masked_family(i.name)) names += (names.empty() ? "" : ", ") + i.name;
    throw InvalidArgumentError("policy '" + parsed.text() +
                               "' is a KV-cache policy for raster/scale models; masked (MAR) models take " + names +
                               " (MAR recomputes every step and has no KV cache to evict from)");
  }
  const PolicyParams params(parsed.params, info.params, info.name);
  if (info.name == "full") return nullptr;
  return std::make_unique<LazyMarCache>(LazyMarParams::from(params), config, flops, seed);
}

LazyMarCache::LazyMarCache(LazyMarParams params, const mar::MarConfig& config, mar::MarFlopCounter* flops,
                           uint64_t seed)
    : params_(std::move(params)),
      config_(config),
      flops_(flops),
      generator_(at::detail::createCPUGenerator(seed ^ 0x5eed)) {
  params_.validate();
  sim_layer_ = std::min(params_.layer, config_.decoder_depth - 1);
}

void LazyMarCache::count(double f) const {
  if (flops_) flops_->add(f);
}

at::Tensor LazyMarCache::condition(const mar::MarTransformer& t, const mar::MarStepInput& in) {
  const int64_t rows = in.tokens.size(0);
  const int64_t batch = in.cfg ? rows / 2 : rows;
  const int64_t want_rows = (in.cfg && params_.condition_cache) ? batch : rows;
  const bool caches_ready = !dec_in_.defined() ? false : dec_in_.size(0) == want_rows;
  const bool refresh_now = params_.is_refresh(in.step) || !caches_ready || in.step == 0;
  report_ = StepReport{};
  report_.step = in.step;
  report_.refresh = refresh_now;
  at::Tensor z = refresh_now ? refresh(t, in) : lazy(t, in);
  report_.recomputed_tokens = report_.recomputed.size(0) > 0 ? report_.recomputed[0].sum().item<int64_t>() : 0;
  return z;
}

at::Tensor LazyMarCache::refresh(const mar::MarTransformer& t, const mar::MarStepInput& in) {
  const mar::MarConfig& c = config_;
  const int64_t rows = in.tokens.size(0), batch = in.cfg ? rows / 2 : rows;
  cached_rows_ = (in.cfg && params_.condition_cache) ? batch : rows;
  const int64_t known = c.seq_len() - static_cast<int64_t>(std::llround(in.mask[0].sum().item<double>()));
  const int64_t enc_tokens = c.buffer_size + known, positions = c.buffer_size + c.seq_len();

  // Exactly forward_mae_encoder / forward_mae_decoder, through the same pieces, storing as it goes.
  at::Tensor x = t.encoder_input(in.tokens, in.mask, in.class_embedding);
  const at::Tensor keep = t.encoder_keep_mask(in.mask).narrow(0, 0, cached_rows_);
  enc_k_.assign(static_cast<size_t>(c.encoder_depth), {});
  enc_v_.assign(static_cast<size_t>(c.encoder_depth), {});
  for (int64_t l = 0; l < c.encoder_depth; ++l) {
    const mar::MarBlockQkv qkv = t.block_qkv(MarStack::Encoder, l, x);
    const int64_t width = c.encoder_embed_dim;
    at::Tensor kg = at::zeros({cached_rows_, positions, width}, x.options());
    at::Tensor vg = at::zeros_like(kg);
    scatter_tokens(kg, keep, to_token_major(qkv.k.narrow(0, 0, cached_rows_)));
    scatter_tokens(vg, keep, to_token_major(qkv.v.narrow(0, 0, cached_rows_)));
    enc_k_[static_cast<size_t>(l)] = kg;
    enc_v_[static_cast<size_t>(l)] = vg;
    x = t.block_mlp(MarStack::Encoder, l, t.block_attend(MarStack::Encoder, l, x, qkv.q, qkv.k, qkv.v));
  }
  at::Tensor d = t.decoder_input(t.encoder_output(x), in.mask);
  dec_in_ = d.narrow(0, 0, cached_rows_).clone();
  dec_k_.assign(static_cast<size_t>(c.decoder_depth), {});
  dec_v_.assign(static_cast<size_t>(c.decoder_depth), {});
  for (int64_t l = 0; l < c.decoder_depth; ++l) {
    const mar::MarBlockQkv qkv = t.block_qkv(MarStack::Decoder, l, d);
    observe(l, qkv.q, qkv.k, qkv.v);
    if (l == sim_layer_) sim_v_ = qkv.v.narrow(0, 0, cached_rows_).clone();
    if (l > sim_layer_) {
      dec_k_[static_cast<size_t>(l)] = to_token_major(qkv.k.narrow(0, 0, cached_rows_)).clone();
      dec_v_[static_cast<size_t>(l)] = to_token_major(qkv.v.narrow(0, 0, cached_rows_)).clone();
    }
    d = t.block_mlp(MarStack::Decoder, l, t.block_attend(MarStack::Decoder, l, d, qkv.q, qkv.k, qkv.v));
  }
  dec_last_ = d.narrow(0, 0, cached_rows_).clone();
  if (in.cfg && params_.condition_cache) cond_diff_ = d.narrow(0, batch, batch) - d.narrow(0, 0, batch);
  count(MarFlops::full_transformer(c, rows, known));
  (void)enc_tokens;
  report_.unconditional_computed = true;
  report_.recomputed = at::ones({batch, c.seq_len()}, at::TensorOptions().dtype(at::kBool));
  return t.decoder_output(d);
}

at::Tensor LazyMarCache::lazy(const mar::MarTransformer& t, const mar::MarStepInput& in) {
  const mar::MarConfig& c = config_;
  const int64_t rows = in.tokens.size(0), batch = in.cfg ? rows / 2 : rows, R = cached_rows_;
  const int64_t buffer = c.buffer_size, positions = buffer + c.seq_len();
  const int64_t known = c.seq_len() - static_cast<int64_t>(std::llround(in.mask[0].sum().item<double>()));
  const int64_t enc_tokens = buffer + known;
  const at::Tensor tokens = in.tokens.narrow(0, 0, R), mask = in.mask.narrow(0, 0, R);
  const at::Tensor class_embedding = in.class_embedding.narrow(0, 0, R);
  const at::Device device = t.device();

  // --- Encoder: the buffer and the tokens predicted at the previous step; the other known tokens' K/V are cached.
  at::Tensor x_all = t.encoder_input(tokens, mask, class_embedding);  // [R, enc_tokens, E]
  count(MarFlops::encoder_input(c, R));
  const at::Tensor keep = t.encoder_keep_mask(mask);  // [R, positions]
  const at::Tensor before = in.predicted_before.narrow(0, 0, R).to(device);
  const at::Tensor update = params_.token_cache ? with_buffer(before, buffer, true).logical_and(keep) : keep;
  const at::Tensor update_in_seq = at::masked_select(update, keep).reshape({R, enc_tokens});
  at::Tensor x = select_tokens(x_all, update_in_seq);
  const int64_t updated = x.size(1);
  const int64_t enc_heads = t.num_heads(MarStack::Encoder);
  for (int64_t l = 0; l < c.encoder_depth; ++l) {
    const mar::MarBlockQkv qkv = t.block_qkv(MarStack::Encoder, l, x);
    at::Tensor& kg = enc_k_[static_cast<size_t>(l)];
    at::Tensor& vg = enc_v_[static_cast<size_t>(l)];
    scatter_tokens(kg, update, to_token_major(qkv.k));
    scatter_tokens(vg, update, to_token_major(qkv.v));
    const at::Tensor k = to_head_major(select_tokens(kg, keep), enc_heads);
    const at::Tensor v = to_head_major(select_tokens(vg, keep), enc_heads);
    x = t.block_mlp(MarStack::Encoder, l, t.block_attend(MarStack::Encoder, l, x, qkv.q, k, v));
    count(MarFlops::block_qkv(c, false, R, updated) + MarFlops::block_attend(c, false, R, updated, enc_tokens) +
          MarFlops::block_mlp(c, false, R, updated));
  }
  at::Tensor encoded = at::zeros({R, enc_tokens, c.encoder_embed_dim}, x.options());
  scatter_tokens(encoded, update_in_seq, t.encoder_output(x));
  // decoder_embed runs on every kept position (as the official lazy path); only the updated ones are taken.
  const at::Tensor fresh_in = t.decoder_input(encoded, mask);
  count(MarFlops::decoder_input(c, R, known));
  dec_in_ = at::where(update.unsqueeze(-1), fresh_in, dec_in_);

  // --- Decoder: every token up to block s, then the selected ones.
  at::Tensor d = dec_in_;
  for (int64_t l = 0; l < sim_layer_; ++l) {
    if (observer_) {
      const mar::MarBlockQkv qkv = t.block_qkv(MarStack::Decoder, l, d);
      observe(l, qkv.q, qkv.k, qkv.v);
      d = t.block_mlp(MarStack::Decoder, l, t.block_attend(MarStack::Decoder, l, d, qkv.q, qkv.k, qkv.v));
    } else {
      d = t.block_forward(MarStack::Decoder, l, d);
    }
    count(MarFlops::block(c, true, R, positions));
  }
  const int64_t dec_heads = t.num_heads(MarStack::Decoder);
  const mar::MarBlockQkv qs = t.block_qkv(MarStack::Decoder, sim_layer_, d);
  observe(sim_layer_, qs.q, qs.k, qs.v);
  d = t.block_attend(MarStack::Decoder, sim_layer_, d, qs.q, qs.k, qs.v);
  count(MarFlops::block_qkv(c, true, R, positions) + MarFlops::block_attend(c, true, R, positions, positions));
  // S(x_i): cosine similarity of this step's and the previous step's values, averaged over heads.
  const at::Tensor score = at::cosine_similarity(qs.v, sim_v_, -1, 1e-8).mean(1);  // [R, positions]
  sim_v_ = qs.v.clone();
  const at::Tensor forced =
      with_buffer(at::logical_or(in.to_predict.narrow(0, 0, R), in.predicted_before.narrow(0, 0, R)), buffer, false)
          .to(device);
  const int64_t forced_count = forced[0].sum().item<int64_t>();
  at::Tensor selected = at::ones({R, positions}, forced.options());
  if (params_.token_cache) {
    const double ratio = params_.retention_ratio(in.step, in.num_iter);
    const int64_t by_ratio = static_cast<int64_t>(std::floor(static_cast<double>(positions) * ratio + 1e-9));
    const int64_t ratio_count = std::min(positions, std::max(forced_count + params_.extra, by_ratio));
    const at::Tensor unknown = with_buffer(mask > 0.5, buffer, false).to(device);
    selected = select_recomputed_tokens(params_.selection, {buffer, score, forced, unknown}, ratio_count, generator_);
  }
  const int64_t selected_count = selected[0].sum().item<int64_t>();
  report_.similarity = score.to(at::kCPU);
  report_.selected = selected.to(at::kCPU);
  report_.forced_tokens = forced_count;
  report_.selected_tokens = selected_count;
  at::Tensor xs = t.block_mlp(MarStack::Decoder, sim_layer_, select_tokens(d, selected));
  count(MarFlops::block_mlp(c, true, R, selected_count));
  for (int64_t l = sim_layer_ + 1; l < c.decoder_depth; ++l) {
    const mar::MarBlockQkv qkv = t.block_qkv(MarStack::Decoder, l, xs);
    at::Tensor& kg = dec_k_[static_cast<size_t>(l)];
    at::Tensor& vg = dec_v_[static_cast<size_t>(l)];
    scatter_tokens(kg, selected, to_token_major(qkv.k));
    scatter_tokens(vg, selected, to_token_major(qkv.v));
    if (observer_) {
      // Image 0's queries back at their positions (zeros where this step reused features).
      const at::Tensor q0 = qkv.q.narrow(0, 0, 1);
      at::Tensor q_full = at::zeros({1, q0.size(1), positions, q0.size(3)}, q0.options());
      q_full.index_copy_(2, selected[0].nonzero().squeeze(1), q0);
      observe(l, q_full, to_head_major(kg, dec_heads), to_head_major(vg, dec_heads));
    }
    xs = t.block_mlp(MarStack::Decoder, l,
                     t.block_attend(MarStack::Decoder, l, xs, qkv.q, to_head_major(kg, dec_heads),
                                    to_head_major(vg, dec_heads)));
    count(MarFlops::block_qkv(c, true, R, selected_count) +
          MarFlops::block_attend(c, true, R, selected_count, positions) +
          MarFlops::block_mlp(c, true, R, selected_count));
  }
  scatter_tokens(dec_last_, selected, xs);
  at::Tensor out = dec_last_;
  if (in.cfg && params_.condition_cache) out = at::cat({dec_last_, dec_last_ + cond_diff_}, 0);
  report_.unconditional_computed = !(in.cfg && params_.condition_cache);
  report_.recomputed = selected.narrow(0, 0, batch).narrow(1, buffer, c.seq_len()).to(at::kCPU);
  (void)rows;
  return t.decoder_output(out);
}

void LazyMarCache::observe(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const {
  if (!observer_ || !observer_->on_qkv) return;
  observer_->on_qkv(MarStack::Decoder, layer,
                    mar::MarBlockQkv{q.narrow(0, 0, 1), k.narrow(0, 0, 1), v.narrow(0, 0, 1)});
}

mar::GaussianDiffusion::ModelFn LazyMarCache::head_model(const mar::DiffusionHead& head,
                                                         const mar::GaussianDiffusion& diffusion,
                                                         const mar::MarStepInput& input, const at::Tensor& z_rows,
                                                         double cfg) {
  (void)input;
  if (!params_.head_cache) return {};
  return LazyMarHeadCache::model_fn(std::make_shared<LazyMarHeadCache>(head, config_, diffusion.num_timesteps(),
                                                                       params_.head_threshold, z_rows, cfg, flops_));
}

}  // namespace kvs
