#include "engine/models/blocks/transformer_blocks.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>
#include <c10/util/BFloat16.h>

#include <cmath>
#include <limits>

namespace kvs::transformer_blocks {
namespace {

bool fast_path_applies(const at::Tensor& x, const at::Tensor& weight) {
  const at::ScalarType dtype = x.scalar_type();
  if (!x.device().is_cpu() || !weight.device().is_cpu()) return false;
  if ((dtype != at::kFloat && dtype != at::kBFloat16) || weight.scalar_type() != dtype) return false;
  if (x.dim() < 1 || weight.dim() != 1 || x.size(-1) != weight.size(0) || x.numel() == 0) return false;
  return !(c10::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad()));
}

inline float as_float(float v) { return v; }
inline float as_float(c10::BFloat16 v) { return static_cast<float>(v); }

// One element's `normed.to(dtype) * weight`: float32 has nothing to round; bf16
// rounds the normed value, then the product (LibTorch multiplies bf16 in float32
// and rounds to nearest even, as c10::BFloat16's constructor does).
inline float scaled(float normed, float w) { return normed * w; }
inline c10::BFloat16 scaled(float normed, c10::BFloat16 w) {
  return c10::BFloat16(static_cast<float>(c10::BFloat16(normed)) * static_cast<float>(w));
}

template <typename T>
at::Tensor rms_norm_rows(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const int64_t n = x.size(-1), rows = x.numel() / n;
  const at::Tensor xc = x.contiguous(), wc = weight.contiguous();
  const T* in = xc.data_ptr<T>();
  const T* w = wc.data_ptr<T>();
  at::Tensor squares = at::empty({rows, n}, x.options().dtype(at::kFloat));
  float* sq = squares.data_ptr<float>();
  for (int64_t i = 0; i < rows * n; ++i) {
    const float v = as_float(in[i]);
    sq[i] = v * v;
  }
  // LibTorch's own reduction: its summation order is what makes the mean, and
  // with it the whole result, equal the reference's bit for bit.
  const at::Tensor mean = at::mean(squares, {-1});
  const float* m = mean.data_ptr<float>();
  at::Tensor out = at::empty(x.sizes(), x.options());
  T* o = out.data_ptr<T>();
  // `mean + eps` adds eps as a float32 scalar; rsqrt is 1 / sqrt, both rounded once.
  const float eps_f = static_cast<float>(eps);
  at::parallel_for(0, rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float inv_rms = 1.0f / std::sqrt(m[r] + eps_f);
      for (int64_t i = 0; i < n; ++i) o[r * n + i] = scaled(as_float(in[r * n + i]) * inv_rms, w[i]);
    }
  });
  return out;
}

}  // namespace

at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor normed = xf * at::rsqrt(at::mean(xf * xf, {-1}, /*keepdim=*/true) + eps);
  return normed.to(x.scalar_type()) * weight;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (!fast_path_applies(x, weight)) return rms_norm_reference(x, weight, eps);
  if (x.scalar_type() == at::kFloat) return rms_norm_rows<float>(x, weight, eps);
  return rms_norm_rows<c10::BFloat16>(x, weight, eps);
}

at::Tensor rotate_half_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

at::Tensor causal_grouped_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3), hkv = k.size(1);
  const int64_t group = h / hkv;
  at::Tensor qg = q.reshape({b, hkv, group * t, d});
  at::Tensor scores = at::matmul(qg.to(at::kFloat), k.to(at::kFloat).transpose(-1, -2)) *
                      (1.0 / std::sqrt(static_cast<double>(d)));
  if (t > 1) {
    at::Tensor mask = at::triu(at::ones({t, t}, at::TensorOptions().dtype(at::kBool)), 1).to(q.device());
    scores = scores.view({b, hkv, group, t, t})
                 .masked_fill(mask, -std::numeric_limits<float>::infinity())
                 .view({b, hkv, group * t, t});
  }
  at::Tensor probs = at::softmax(scores, -1);
  return at::matmul(probs, v.to(at::kFloat)).view({b, h, t, d}).to(q.scalar_type());
}

}  // namespace kvs::transformer_blocks
