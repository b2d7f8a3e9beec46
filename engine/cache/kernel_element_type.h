#pragma once
// The scoring and compaction kernels' element type of a KvStore buffer dtype,
// shared by the store's files that call the kernels.
#include <c10/core/ScalarType.h>

#include "kernels/segment_scoring.h"

namespace kvs {

// f32, bf16, f16; throws InvalidArgumentError for any other dtype.
kernels::ScoreElementType kernel_element_type(at::ScalarType dtype);

}  // namespace kvs
