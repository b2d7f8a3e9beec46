#pragma once
// What this CPU is, for reports beside measured figures: its model name and the
// instruction-set extensions the CPU kernels dispatch on. Torch-free.
#include <string>
#include <vector>

namespace kvs::kernels {

// The model name Linux reports (/proc/cpuinfo), "unknown CPU" elsewhere.
std::string cpu_model_name();

// The extensions of note that this CPU has, in a fixed order, by their Linux
// names: avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512_bf16, amx_bf16
// (the last only when Linux also lets this process use the tiles).
std::vector<std::string> cpu_kernel_flags();

// One line: "AMD EPYC; avx2 fma f16c; no AVX-512".
std::string cpu_summary();

}  // namespace kvs::kernels
