#pragma once
// Size and buffer checks of the scoring kernels' arguments that need no look at
// the data, shared by the CPU twins and the CUDA entry points (whose segment
// descriptors live on the device, so only the CPU twins can check those too).
#include <string>

#include "kernels/kernel_error.h"
#include "kernels/segment_scoring.h"

namespace kvs::kernels::detail {

inline void require_size(const char* kernel, const char* name, int64_t value, int64_t minimum) {
  if (value < minimum)
    throw KernelArgumentError(std::string(kernel) + ": " + name + " is " + std::to_string(value) +
                              ", expected >= " + std::to_string(minimum));
}

inline void require_buffer(const char* kernel, const char* name, const void* pointer, bool needed) {
  if (needed && pointer == nullptr) throw KernelArgumentError(std::string(kernel) + ": " + name + " is null");
}

inline void check_key_score_sizes(const SegmentKeys& keys, const KeyScoreArgs& args) {
  const char* k = "attention key scores";
  require_size(k, "rows", keys.rows, 0);
  require_size(k, "kv_heads", keys.kv_heads, 1);
  require_size(k, "head_dim", keys.head_dim, 1);
  require_size(k, "stride", keys.stride, 0);
  require_size(k, "n_head", args.n_head, 1);
  require_size(k, "T", args.T, 0);
  if (args.n_head % keys.kv_heads != 0)
    throw KernelArgumentError(std::string(k) + ": n_head " + std::to_string(args.n_head) +
                              " is not a multiple of kv_heads " + std::to_string(keys.kv_heads));
  const bool any = keys.segments() > 0 && keys.stride > 0;
  require_buffer(k, "scores", args.scores, any);
  require_buffer(k, "starts", keys.starts, keys.segments() > 0);
  require_buffer(k, "lengths", keys.lengths, keys.segments() > 0);
  require_buffer(k, "keys", keys.keys, any);
  require_buffer(k, "queries", args.queries, any && args.T > 0);
  require_buffer(k, "positions", keys.positions, any && args.causal);
  require_buffer(k, "query_positions", args.query_positions, args.causal && args.T > 0);
}

inline void check_pool_sizes(const PoolArgs& args) {
  const char* k = "candidate pooling";
  require_size(k, "segments", args.segments, 0);
  require_size(k, "stride", args.stride, 0);
  require_size(k, "kernel", args.kernel, 1);
  if (args.kernel % 2 == 0)
    throw KernelArgumentError(std::string(k) + ": kernel " + std::to_string(args.kernel) +
                              " must be odd (a window centred on its slot)");
  const bool any = args.segments > 0 && args.stride > 0;
  require_buffer(k, "votes", args.votes, any);
  require_buffer(k, "candidates", args.candidates, any);
  require_buffer(k, "pooled", args.pooled, any);
}

inline void check_compaction_sizes(const CompactionArgs& args) {
  const char* k = "segment compaction";
  require_size(k, "head_dim", args.head_dim, 1);
  require_size(k, "segments", args.segments, 0);
  require_size(k, "stride", args.stride, 0);
  const bool any = args.segments > 0;
  require_buffer(k, "src_starts", args.src_starts, any);
  require_buffer(k, "dst_starts", args.dst_starts, any);
  require_buffer(k, "lengths", args.lengths, any);
  require_buffer(k, "new_lengths", args.new_lengths, any);
  require_buffer(k, "keep", args.keep, any && args.stride > 0);
  if ((args.positions == nullptr) != (args.new_positions == nullptr))
    throw KernelArgumentError(std::string(k) + ": positions and new_positions go together (both or neither)");
  if ((args.src_keys == nullptr) != (args.dst_keys == nullptr) ||
      (args.src_values == nullptr) != (args.dst_values == nullptr))
    throw KernelArgumentError(std::string(k) + ": a source buffer needs its destination (and back)");
}

}  // namespace kvs::kernels::detail
