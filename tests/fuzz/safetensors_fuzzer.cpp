// libFuzzer target for the safetensors container parser (engine/io/safetensors_format).
// Any input must either parse into an index whose spans all lie inside the data
// section and do not overlap (row-scaled pairs' scales included), or throw kvs::FormatError — never crash, hang or
// throw anything else.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "engine/core/errors.h"
#include "engine/io/safetensors_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const kvs::io::SafetensorsIndex index = kvs::io::parse_safetensors(data, size, "fuzz-input");
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (const auto& t : index.tensors) {
      if (t.end < t.begin || t.end > index.data_bytes) std::abort();
      if (t.nbytes() != t.numel() * kvs::io::dtype_size(t.dtype) && t.numel() != 0) std::abort();
      if (t.end > t.begin) spans.emplace_back(t.begin, t.end);
      if (t.row_scaled) {  // a folded "::row_scale" pair: F32 [rows] inside the data
        if (t.dtype != kvs::io::DType::I8 || t.shape.empty()) std::abort();
        if (t.scale_end > index.data_bytes || t.scale_end - t.scale_begin != 4 * static_cast<uint64_t>(t.shape[0]))
          std::abort();
        if (t.scale_end > t.scale_begin) spans.emplace_back(t.scale_begin, t.scale_end);
      }
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      if (spans[i].first < spans[i - 1].second) std::abort();
    if (index.data_offset + index.data_bytes != size) std::abort();
  } catch (const kvs::FormatError&) {
  }
  return 0;
}
