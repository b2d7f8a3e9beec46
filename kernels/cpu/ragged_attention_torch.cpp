#include "kernels/cpu/ragged_attention_torch.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <string>
#include <vector>

#include "kernels/cpu/ragged_attention.h"
#include "kernels/kernel_error.h"

namespace kvs::kernels {
namespace {

std::string shape_string(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void check_tensor(const at::Tensor& tensor, const char* name, at::ScalarType dtype,
                  const std::vector<int64_t>& expected_shape) {
  const std::string prefix = std::string("ragged attention: ") + name;
  if (!tensor.defined()) throw KernelArgumentError(prefix + " is undefined");
  if (!tensor.device().is_cpu())
    throw KernelArgumentError(prefix + " is on " + tensor.device().str() + ", expected the CPU");
  if (tensor.scalar_type() != dtype)
    throw KernelArgumentError(prefix + " has dtype " + std::string(c10::toString(tensor.scalar_type())) +
                              ", expected " + c10::toString(dtype));
  if (tensor.sizes() != at::IntArrayRef(expected_shape))
    throw KernelArgumentError(prefix + " has shape " + shape_string(tensor.sizes()) + ", expected " +
                              shape_string(expected_shape));
}

// keys and values: float32 or bf16, both the same.
KvElementType cache_element_type(const at::Tensor& keys) {
  if (keys.scalar_type() == at::kBFloat16) return KvElementType::bf16;
  if (keys.scalar_type() != at::kFloat)
    throw KernelArgumentError(std::string("ragged attention: keys has dtype ") + c10::toString(keys.scalar_type()) +
                              ", expected Float or BFloat16");
  return KvElementType::f32;
}

// The leading sizes come from keys and queries; a wrong rank there cannot be
// described as an expected shape yet, so it is reported on its own.
void check_rank(const at::Tensor& tensor, const char* name, int64_t rank, const char* layout) {
  if (!tensor.defined()) throw KernelArgumentError(std::string("ragged attention: ") + name + " is undefined");
  if (tensor.dim() != rank)
    throw KernelArgumentError(std::string("ragged attention: ") + name + " has shape " + shape_string(tensor.sizes()) +
                              ", expected " + layout);
}

// Allocates the outputs, fills in the query side of the arguments and runs the kernel.
RaggedAttentionResult run_kernel(RaggedKvView view, const at::Tensor& queries, const at::Tensor& query_positions,
                                 bool causal, double scale, bool want_probs, bool want_key_mass) {
  const int64_t rows = view.rows, n_head = queries.size(1), t = queries.size(2), d = view.head_dim;
  const at::Tensor q = queries.contiguous(), qpos = query_positions.contiguous();
  const auto options = at::TensorOptions().dtype(at::kFloat);
  RaggedAttentionResult result;
  // The kernel writes every element (zeros where nothing is visible), so the
  // outputs need no initialisation.
  result.out = at::empty({rows, n_head, t, d}, options);
  if (want_probs) result.probs = at::empty({rows, n_head, t, view.capacity}, options);
  if (want_key_mass) result.key_mass = at::empty({rows, view.kv_heads, view.capacity}, options);

  RaggedAttentionArgs args;
  args.queries = q.data_ptr<float>();
  args.n_head = n_head;
  args.T = t;
  args.query_positions = qpos.data_ptr<int64_t>();
  args.causal = causal;
  args.scale = static_cast<float>(scale);
  args.out = result.out.data_ptr<float>();
  args.probs = want_probs ? result.probs.data_ptr<float>() : nullptr;
  args.key_mass = want_key_mass ? result.key_mass.data_ptr<float>() : nullptr;

  ragged_attention_cpu(view, args);
  return result;
}

}  // namespace

RaggedAttentionResult ragged_attention(const at::Tensor& queries, const at::Tensor& query_positions,
                                       const at::Tensor& keys, const at::Tensor& values, const at::Tensor& lengths,
                                       const at::Tensor& positions, bool causal, double scale, bool want_probs,
                                       bool want_key_mass) {
  check_rank(keys, "keys", 4, "[rows, kv_heads, capacity, head_dim]");
  check_rank(queries, "queries", 4, "[rows, n_head, T, head_dim]");
  const int64_t rows = keys.size(0), kv_heads = keys.size(1), capacity = keys.size(2), d = keys.size(3);
  const int64_t n_head = queries.size(1), t = queries.size(2);
  const KvElementType element_type = cache_element_type(keys);
  check_tensor(keys, "keys", keys.scalar_type(), {rows, kv_heads, capacity, d});
  check_tensor(values, "values", keys.scalar_type(), {rows, kv_heads, capacity, d});
  check_tensor(lengths, "lengths", at::kLong, {rows, kv_heads});
  check_tensor(positions, "positions", at::kLong, {rows, kv_heads, capacity});
  check_tensor(queries, "queries", at::kFloat, {rows, n_head, t, d});
  check_tensor(query_positions, "query_positions", at::kLong, {t});

  const at::Tensor k = keys.contiguous(), v = values.contiguous();
  const at::Tensor len = lengths.contiguous(), pos = positions.contiguous();
  RaggedKvView view;
  view.keys = k.data_ptr();
  view.values = v.data_ptr();
  view.element_type = element_type;
  view.lengths = len.data_ptr<int64_t>();
  view.positions = pos.data_ptr<int64_t>();
  view.rows = rows;
  view.kv_heads = kv_heads;
  view.capacity = capacity;
  view.head_dim = d;
  return run_kernel(view, queries, query_positions, causal, scale, want_probs, want_key_mass);
}

RaggedAttentionResult ragged_attention_packed(const at::Tensor& queries, const at::Tensor& query_positions,
                                              const at::Tensor& keys, const at::Tensor& values,
                                              const at::Tensor& offsets, const at::Tensor& lengths,
                                              const at::Tensor& positions, bool causal, double scale, bool want_probs,
                                              bool want_key_mass) {
  check_rank(keys, "keys", 2, "[total_slots, head_dim]");
  check_rank(positions, "positions", 3, "[rows, kv_heads, capacity]");
  check_rank(queries, "queries", 4, "[rows, n_head, T, head_dim]");
  const int64_t slots = keys.size(0), d = keys.size(1);
  const int64_t rows = positions.size(0), kv_heads = positions.size(1), capacity = positions.size(2);
  const int64_t n_head = queries.size(1), t = queries.size(2);
  const KvElementType element_type = cache_element_type(keys);
  check_tensor(keys, "keys", keys.scalar_type(), {slots, d});
  check_tensor(values, "values", keys.scalar_type(), {slots, d});
  check_tensor(offsets, "offsets", at::kLong, {rows, kv_heads});
  check_tensor(lengths, "lengths", at::kLong, {rows, kv_heads});
  check_tensor(positions, "positions", at::kLong, {rows, kv_heads, capacity});
  check_tensor(queries, "queries", at::kFloat, {rows, n_head, t, d});
  check_tensor(query_positions, "query_positions", at::kLong, {t});

  const at::Tensor k = keys.contiguous(), v = values.contiguous();
  const at::Tensor off = offsets.contiguous(), len = lengths.contiguous(), pos = positions.contiguous();
  RaggedKvView view;
  view.keys = k.data_ptr();
  view.values = v.data_ptr();
  view.element_type = element_type;
  view.lengths = len.data_ptr<int64_t>();
  view.positions = pos.data_ptr<int64_t>();
  view.offsets = off.data_ptr<int64_t>();
  view.total_slots = slots;
  view.rows = rows;
  view.kv_heads = kv_heads;
  view.capacity = capacity;
  view.head_dim = d;
  return run_kernel(view, queries, query_positions, causal, scale, want_probs, want_key_mass);
}

}  // namespace kvs::kernels
