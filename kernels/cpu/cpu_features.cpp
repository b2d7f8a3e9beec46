#include "kernels/cpu/cpu_features.h"

#include <fstream>
#include <utility>

#include "kernels/cpu/skinny_linear.h"

namespace kvs::kernels {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto begin = line.find_first_not_of(" \t", colon + 1);
    if (begin != std::string::npos) return line.substr(begin);
  }
  return "unknown CPU";
}

std::vector<std::string> cpu_kernel_flags() {
  std::vector<std::string> flags;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const std::pair<bool, const char*> known[] = {
      {__builtin_cpu_supports("avx2") != 0, "avx2"},
      {__builtin_cpu_supports("fma") != 0, "fma"},
      {__builtin_cpu_supports("f16c") != 0, "f16c"},
      {__builtin_cpu_supports("avx512f") != 0, "avx512f"},
      {__builtin_cpu_supports("avx512bw") != 0, "avx512bw"},
      {__builtin_cpu_supports("avx512vl") != 0, "avx512vl"},
      {__builtin_cpu_supports("avx512bf16") != 0, "avx512_bf16"},
      {cpu_has_amx_bf16(), "amx_bf16"},
  };
  for (const auto& [has, name] : known)
    if (has) flags.emplace_back(name);
#endif
  return flags;
}

std::string cpu_summary() {
  std::string text = cpu_model_name() + ";";
  bool avx512 = false;
  const std::vector<std::string> flags = cpu_kernel_flags();
  for (const std::string& flag : flags) {
    text += " " + flag;
    avx512 = avx512 || flag == "avx512f";
  }
  if (flags.empty()) text += " no AVX2";
  if (!avx512) text += "; no AVX-512";
  return text;
}

}  // namespace kvs::kernels
