#pragma once
// What a cache policy and the window see of one scale of a next-scale network,
// per layer. Every next-scale family's transformer takes one per scale.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>

#include "engine/cache/kv_store.h"

namespace kvs {

struct ScaleObserver {
  std::function<void(int64_t layer)> before_layer;  // e.g. cancellation checks
  // The scale's keys as cached [rows, num_heads, T, head_dim], right after the append.
  std::function<void(int64_t layer, const at::Tensor& keys)> on_keys;
  // The scale's queries [rows, num_heads, T, head_dim] as the store attends with
  // them (the model's attention scale folded in), right after the append.
  std::function<void(int64_t layer, const at::Tensor& queries)> on_queries;
  // After the append, before the scale's queries attend (a policy's rolling).
  std::function<void(int64_t layer, KvStore& cache)> before_attention;
  bool want_key_mass = false;  // KvAttention::key_mass for on_attention
  bool want_probs = false;     // KvAttention::probs for on_attention
  std::function<void(int64_t layer, const KvAttention& attention, const KvStore& cache)> on_attention;
  // Networks with a text cross-attention (Infinity): row 0's attention mass on
  // each text token [text tokens] (float32, CPU), summed over the scale's
  // queries and averaged over the heads; asked for when set.
  std::function<void(int64_t layer, const at::Tensor& text_mass)> on_text_attention;
  // After the layer attended (its entries for this scale are in the store): the
  // place for per-layer eviction.
  std::function<void(int64_t layer, KvStore& cache)> after_layer;
};

}  // namespace kvs
