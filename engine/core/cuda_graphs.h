#pragma once
// The switch of CUDA graphs for the steady decode step, and the words a run
// reports its decode path with (docs/design.md#cuda-graphs-for-the-decode-step).
// Torch-free: the CLI, the bench and the window read it.
#include <string>

namespace kvs {

// `--cuda-graphs on|off` and GenerationRequest::cuda_graphs: true for "on",
// false for "off"; InvalidArgumentError naming both for anything else.
bool parse_cuda_graphs(const std::string& value);

// KVSTUDIO_CUDA_GRAPHS=0 (or off) in the environment switches the graphs off for
// the whole process, whatever a request asks for. Read once.
bool cuda_graphs_disabled_by_environment();

// Whether this build can capture CUDA graphs: it links LibTorch's CUDA part. A
// build that opens it at run time (the packages, engine/core/cuda_backend.h) or
// a LibTorch without CUDA cannot, and runs every decode step eagerly.
bool cuda_graphs_built();

// How a run's decode steps ran (GenerationResult::cuda_graphs, bench's
// "cuda_graphs"), so that a measurement says which path it timed.
namespace cuda_graphs_report {
inline constexpr const char* kOn = "on";               // every decode step replayed captured graphs
inline constexpr const char* kPartly = "partly";       // not every one did: the others ran eagerly (a capture
                                                       // failed mid-run, or another run held the graphs)
inline constexpr const char* kOff = "off";             // switched off: --cuda-graphs off or KVSTUDIO_CUDA_GRAPHS=0
inline constexpr const char* kFailed = "failed";       // capture failed: eager, said once in the log
inline constexpr const char* kNotBuilt = "not built";  // cuda_graphs_built() is false
inline constexpr const char* kNone = "n/a";            // a CPU run, or a family without them
}  // namespace cuda_graphs_report

// One word for two runs' reports (a bench's policies and runs, its shards):
// the word when they agree or one is empty, else "partly".
std::string combine_cuda_graphs_reports(const std::string& a, const std::string& b);

}  // namespace kvs
