#include "engine/session/bundle_info.h"

#include <cstdarg>
#include <cstdio>

#include "engine/io/safetensors_format.h"
#include "engine/io/safetensors_reader.h"

namespace kvs {

StoredWeights stored_weights(const std::string& weights_path, const std::vector<std::string>& prefixes) {
  StoredWeights out;
  out.params.assign(prefixes.size() + 1, 0);
  auto reader = io::SafetensorsReader::open(weights_path);
  for (const auto& e : reader->index().tensors) {
    size_t part = 0;
    while (part < prefixes.size() && e.name.rfind(prefixes[part], 0) != 0) ++part;
    out.params[part] += static_cast<int64_t>(e.numel());
    const std::string dtype = e.row_scaled ? "I8 row-scaled" : io::dtype_name(e.dtype);
    if (out.dtypes.find(dtype) == std::string::npos) out.dtypes += (out.dtypes.empty() ? "" : ",") + dtype;
  }
  return out;
}

std::string kv_cache_text(int64_t kv_per_token_f32, int64_t tokens) {
  return format_text(
      "%lld bytes/token in float32 (%lld in fp16/bf16); full image: %.2f MiB per sequence,\n"
      "x2 with CFG (conditional + unconditional rows)",
      (long long)kv_per_token_f32, (long long)kv_per_token_f32 / 2, kv_per_token_f32 * tokens / 1048576.0);
}

std::string join_ints(const std::vector<int64_t>& values) {
  std::string s;
  for (int64_t x : values) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

std::string format_text(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

}  // namespace kvs
