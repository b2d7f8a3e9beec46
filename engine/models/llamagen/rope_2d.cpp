#include "engine/models/llamagen/rope_2d.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

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

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& table) {
  const auto sizes = x.sizes();
  at::Tensor xs = x.to(at::kFloat).reshape({sizes[0], sizes[1], sizes[2], sizes[3] / 2, 2});
  at::Tensor f = table.view({1, sizes[1], 1, sizes[3] / 2, 2});
  at::Tensor x0 = xs.select(-1, 0), x1 = xs.select(-1, 1);
  at::Tensor c = f.select(-1, 0), s = f.select(-1, 1);
  at::Tensor out = at::stack({x0 * c - x1 * s, x1 * c + x0 * s}, -1).flatten(3);
  return out.to(x.scalar_type());
}

}  // namespace kvs::llamagen
