#include "engine/models/llamagen/rope_2d.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>
#include <c10/util/BFloat16.h>

namespace kvs::llamagen {

at::Tensor rope_2d_table(int64_t grid_size, int64_t head_dim, double base, int64_t cls_token_num) {
  const int64_t half_dim = head_dim / 2;
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  // Same float32 operation order as upstream: base ** (arange(0, half, 2)[:half/2] / half).
  at::Tensor exponents = at::arange(0, half_dim, 2, at::TensorOptions().dtype(at::kLong))
                             .slice(0, 0, half_dim / 2)
                             .to(at::kFloat)
                             .div(static_cast<double>(half_dim));
  at::Tensor freqs = at::reciprocal(at::pow(at::scalar_tensor(base, f32), exponents));
  at::Tensor t = at::arange(grid_size, at::TensorOptions().dtype(at::kLong)).to(at::kFloat);
  freqs = at::outer(t, freqs);  // [grid, head_dim/4]
  at::Tensor grid = at::cat({freqs.unsqueeze(1).expand({grid_size, grid_size, -1}),
                             freqs.unsqueeze(0).expand({grid_size, grid_size, -1})},
                            -1);  // [grid, grid, head_dim/2]
  at::Tensor cache = at::stack({at::cos(grid), at::sin(grid)}, -1).flatten(0, 1);
  return at::cat({at::zeros({cls_token_num, half_dim, 2}, f32), cache});
}

at::Tensor apply_rope_reference(const at::Tensor& x, const at::Tensor& table) {
  const auto sizes = x.sizes();
  at::Tensor xs = x.to(at::kFloat).reshape({sizes[0], sizes[1], sizes[2], sizes[3] / 2, 2});
  at::Tensor f = table.view({1, sizes[1], 1, sizes[3] / 2, 2});
  at::Tensor x0 = xs.select(-1, 0), x1 = xs.select(-1, 1);
  at::Tensor c = f.select(-1, 0), s = f.select(-1, 1);
  at::Tensor out = at::stack({x0 * c - x1 * s, x1 * c + x0 * s}, -1).flatten(3);
  return out.to(x.scalar_type());
}

namespace {

inline float as_float(float v) { return v; }
inline float as_float(c10::BFloat16 v) { return static_cast<float>(v); }
template <typename T>
T from_float(float v) {
  return T(v);  // bf16: round to nearest even, as LibTorch's conversion
}

// One pass over x's elements in place of the reference's ten operations. x may
// be a strided view (q and k are slices of the fused qkv projection); its last
// dimension must be dense. Products, the difference and the sum round one by one
// in float32 (the file is compiled without fused multiply-adds), so the result
// is the reference's bit for bit.
template <typename T>
at::Tensor rotate_pairs(const at::Tensor& x, const at::Tensor& table) {
  const int64_t b = x.size(0), t = x.size(1), h = x.size(2), d = x.size(3), pairs = d / 2;
  const T* in = x.data_ptr<T>();
  const int64_t sb = x.stride(0), st = x.stride(1), sh = x.stride(2);
  const at::Tensor f = table.contiguous();
  const float* cs = f.data_ptr<float>();
  at::Tensor out = at::empty({b, t, h, d}, x.options());
  T* o = out.data_ptr<T>();
  at::parallel_for(0, b * t, 16, [&](int64_t first, int64_t last) {
    for (int64_t bt = first; bt < last; ++bt) {
      const int64_t bi = bt / t, ti = bt % t;
      const float* row_table = cs + ti * pairs * 2;
      for (int64_t hi = 0; hi < h; ++hi) {
        const T* src = in + bi * sb + ti * st + hi * sh;
        T* dst = o + ((bi * t + ti) * h + hi) * d;
        for (int64_t i = 0; i < pairs; ++i) {
          const float x0 = as_float(src[2 * i]), x1 = as_float(src[2 * i + 1]);
          const float c = row_table[2 * i], s = row_table[2 * i + 1];
          const float c0 = x0 * c, s1 = x1 * s, c1 = x1 * c, s0 = x0 * s;
          dst[2 * i] = from_float<T>(c0 - s1);
          dst[2 * i + 1] = from_float<T>(c1 + s0);
        }
      }
    }
  });
  return out;
}

}  // namespace

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& table) {
  const bool cpu_fast = x.device().is_cpu() && table.device().is_cpu() && x.dim() == 4 && x.size(3) % 2 == 0 &&
                        x.stride(3) == 1 && table.scalar_type() == at::kFloat && table.dim() == 3 &&
                        table.size(0) == x.size(1) && table.size(1) * 2 == x.size(3) &&
                        (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16) &&
                        !(c10::GradMode::is_enabled() && x.requires_grad());
  if (!cpu_fast) return apply_rope_reference(x, table);
  if (x.scalar_type() == at::kFloat) return rotate_pairs<float>(x, table);
  return rotate_pairs<c10::BFloat16>(x, table);
}

}  // namespace kvs::llamagen
