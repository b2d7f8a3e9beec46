// CUDA graphs of LlamaGen's decode step (engine/models/llamagen/decode_graphs.h):
// the switch and its report, everywhere; the step cut into graph bodies and fed
// between replays, through the Emulated backend on the CPU, against the eager
// step, token for token, under every kind of policy; and on a GPU the captured
// graphs against the eager step (same tokens, one capture per shape). The GPU
// tests are skipped, with the reason, where no CUDA device is present or the
// build has no CUDA graphs.
#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/cuda_graphs.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/llamagen/decode_graphs.h"
#include "engine/models/llamagen/llamagen_generation.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "tests/engine/test_helpers.h"

namespace kvs {
namespace {

using llamagen::DecodeGraphs;

// A 12x12 token grid, so that every policy below has a budget of three lines
// and evicts at most of the line ends of a run; grouped KV heads; three layers
// (four graphs a step).
llamagen::GptConfig small_gpt() {
  llamagen::GptConfig c = test::tiny_gqa_gpt();
  c.n_layer = 3;
  c.block_size = 144;
  return c;
}

struct SmallModel {
  test::TempDir dir;
  llamagen::LlamaGenModel model;
  SmallModel(at::Device device, at::ScalarType dtype) {
    llamagen::write_random_llamagen_bundle(dir.path().string(), "graphs", small_gpt(), test::tiny_vq(), 21);
    model = llamagen::LlamaGenModel::load(io::ModelBundle::open(dir.path().string()), device, dtype);
  }
};

// The policies of the raster family whose work sits between the graphs: none,
// line-end eviction on query scores (LineAR, HeadKV's heads), a window (StreamingLLM),
// key mass every step (H2O) and observation-window votes (SnapKV).
const std::vector<std::string> kPolicies{"full",        "linear:rho=1/4", "headkv:rho=1/4", "streaming:rho=1/4,sink=4",
                                         "h2o:rho=1/4", "snapkv:rho=1/4"};

struct Run {
  at::Tensor tokens;
  int64_t graph_steps = 0, decode_steps = 0;
};

Run generate(const llamagen::LlamaGenModel& model, const std::string& spec, DecodeGraphs* graphs, int64_t batch,
             double cfg, int64_t cfg_interval = -1) {
  const PolicyContext context = llamagen::raster_policy_context(model.gpt->config(), batch, cfg > 1.0, 3);
  std::unique_ptr<CachePolicy> policy = make_policy(spec, context);
  raster::RasterHooks hooks;
  hooks.policy = [&] { return policy.get(); };
  hooks.cache_capacity_tokens = policy->initial_entries();
  raster::RasterParams params;
  params.cfg_scale = cfg;
  params.cfg_interval = cfg_interval;
  params.seed = 3;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < batch; ++i) labels.push_back(i % 5);
  const raster::RasterResult r = llamagen::generate_raster(*model.gpt, at::tensor(labels, at::kLong), params, hooks,
                                                           graphs);
  return {r.tokens, r.graph_steps, r.decode_steps};
}

// Every policy, with CFG over the whole run and CFG dropped after step 20 (the
// rows halve mid-run: a second shape): the graph path gives the eager path's
// tokens, every decode step goes through the graphs, and a shape is captured
// once (the runs share one DecodeGraphs, as a loaded model does).
void expect_graphs_match_eager(const llamagen::LlamaGenModel& model, CudaGraphSet::Backend backend) {
  DecodeGraphs graphs(*model.gpt, backend);
  int64_t captures = 0, held_rows = 0;
  // A run captures at each shape it meets that is not the one held.
  auto expect_captures_for = [&](std::initializer_list<int64_t> rows_of_the_run, const std::string& what) {
    for (int64_t rows : rows_of_the_run)
      if (rows != held_rows) {
        ++captures;
        held_rows = rows;
      }
    EXPECT_EQ(graphs.captures(), captures) << what;
  };
  for (const std::string& spec : kPolicies) {
    const Run eager = generate(model, spec, nullptr, 2, 4.0);
    const Run replayed = generate(model, spec, &graphs, 2, 4.0);
    EXPECT_TRUE(at::equal(eager.tokens, replayed.tokens)) << spec;
    EXPECT_EQ(replayed.graph_steps, replayed.decode_steps) << spec;
    EXPECT_EQ(replayed.decode_steps, 143) << spec;
    EXPECT_EQ(eager.graph_steps, 0) << spec;
    expect_captures_for({4}, spec);  // the first run captures; the others reuse its graphs
  }
  for (const std::string& spec : kPolicies) {
    const Run eager = generate(model, spec, nullptr, 2, 4.0, /*cfg_interval=*/20);
    const Run replayed = generate(model, spec, &graphs, 2, 4.0, /*cfg_interval=*/20);
    EXPECT_TRUE(at::equal(eager.tokens, replayed.tokens)) << spec << ", CFG until step 20";
    EXPECT_EQ(replayed.graph_steps, replayed.decode_steps) << spec;
    expect_captures_for({4, 2}, spec + ", CFG until step 20");  // one shape is kept at a time
  }
  const Run eager = generate(model, "full", nullptr, 3, 1.0);
  const Run replayed = generate(model, "full", &graphs, 3, 1.0);
  EXPECT_TRUE(at::equal(eager.tokens, replayed.tokens)) << "batch 3 without CFG";
  expect_captures_for({3}, "batch 3 without CFG");
  EXPECT_FALSE(graphs.failed());
}

// A random bundle run through the session as the CLI runs it: graphs off, then
// on twice (the loaded model, and its graphs, are kept between runs).
struct SessionRuns {
  GenerationResult off, on, again;
};

SessionRuns run_session_with_and_without(const std::string& device, const std::string& policy) {
  test::TempDir dir;
  llamagen::write_random_llamagen_bundle(dir.path().string(), "graphs", small_gpt(), test::tiny_vq(), 21);
  GenerationRequest request;
  request.model_path = dir.path().string();
  request.class_ids = {1, 3};
  request.device = device;
  request.threads = 1;
  request.policy = parse_policy_spec(policy);
  GenerationSession session;
  SessionRuns runs;
  request.cuda_graphs = "off";
  runs.off = session.run(request);
  request.cuda_graphs = "on";
  runs.on = session.run(request);
  runs.again = session.run(request);
  return runs;
}

TEST(CudaGraphSwitch, ParsesOnAndOffOnly) {
  EXPECT_TRUE(parse_cuda_graphs("on"));
  EXPECT_FALSE(parse_cuda_graphs("off"));
  EXPECT_THROW(parse_cuda_graphs("auto"), InvalidArgumentError);
  EXPECT_THROW(parse_cuda_graphs("ON"), InvalidArgumentError);
  GenerationRequest request;
  request.class_ids = {1};
  EXPECT_EQ(request.cuda_graphs, "on");
  request.cuda_graphs = "off";
  EXPECT_NO_THROW(request.validate());
  request.cuda_graphs = "yes";
  EXPECT_THROW(request.validate(), InvalidArgumentError);
}

TEST(CudaGraphSwitch, ReportsWhichPathRan) {
  using llamagen::decode_graphs_report;
  EXPECT_EQ(decode_graphs_report(true, false, 0, 63, false), "n/a");
  if (cuda_graphs_built()) {
    EXPECT_EQ(decode_graphs_report(true, true, 63, 63, false), "on");
    EXPECT_EQ(decode_graphs_report(false, true, 0, 63, false), "off");
    EXPECT_EQ(decode_graphs_report(true, true, 20, 63, true), "partly");
    EXPECT_EQ(decode_graphs_report(true, true, 0, 63, true), "failed");
  } else {
    EXPECT_EQ(decode_graphs_report(true, true, 0, 63, false), "not built");
  }
  EXPECT_EQ(combine_cuda_graphs_reports("", "on"), "on");
  EXPECT_EQ(combine_cuda_graphs_reports("on", "on"), "on");
  EXPECT_EQ(combine_cuda_graphs_reports("off", ""), "off");
  EXPECT_EQ(combine_cuda_graphs_reports("on", "off"), "partly");
}

// A CPU run takes the switch and ignores it: the same tokens either way,
// reported as not applicable, and nothing is captured.
TEST(CudaGraphSwitch, CpuRunsIgnoreIt) {
  const SessionRuns runs = run_session_with_and_without("cpu", "linear:rho=1/4");
  EXPECT_EQ(runs.on.tokens, runs.off.tokens);
  EXPECT_EQ(runs.on.cuda_graphs, "n/a");
  EXPECT_EQ(runs.off.cuda_graphs, "n/a");

  SmallModel cpu(at::Device(at::kCPU), at::kFloat);
  KvStore cache = cpu.model.gpt->make_cache(1, 145);
  cpu.model.gpt->prefill(at::tensor({2}, at::kLong), cache);
  EXPECT_FALSE(cpu.model.decode_graphs->step(at::tensor({5}, at::kLong), 1, cache).defined());
  EXPECT_EQ(cpu.model.decode_graphs->captures(), 0);
  EXPECT_EQ(cache.length(0, 0, 0), 1);  // the refused step left the cache as it was
}

// The graph bodies run eagerly at each replay: the step's cut and its buffers
// give the eager step's tokens, bit for bit, under every policy, in f32 and bf16.
TEST(DecodeGraphsEmulated, SameTokensAsTheEagerStepUnderEveryPolicy) {
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    SCOPED_TRACE(dtype == at::kFloat ? "f32" : "bf16");
    SmallModel cpu(at::Device(at::kCPU), dtype);
    expect_graphs_match_eager(cpu.model, CudaGraphSet::Backend::Emulated);
  }
}

// Why the GPU tests cannot run here, or empty when they can.
std::string gpu_skip_reason() {
  if (!cuda_available()) return "no CUDA device here: CUDA graphs are not captured";
  if (!cuda_graphs_built()) return "this build has no CUDA graphs (LibTorch's CUDA part is not linked)";
  return "";
}

// Captured graphs on the GPU give the eager step's tokens (the same kernels on
// the same values), for every policy, with a second shape mid-run, in bf16 (the
// GPU default, flash attention) and f32 (memory-efficient attention).
TEST(CudaGraphs, SameTokensAsTheEagerStepAndOneCapturePerShape) {
  const std::string skip = gpu_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  for (const at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    SCOPED_TRACE(dtype == at::kFloat ? "f32" : "bf16");
    SmallModel gpu(at::Device(at::kCUDA, 0), dtype);
    expect_graphs_match_eager(gpu.model, CudaGraphSet::Backend::Cuda);
  }
}

// Through the session, as the CLI runs it: --cuda-graphs on and off give the same
// tokens and say which path ran, and the graphs kept from one run serve the next.
TEST(CudaGraphs, SessionReportsThePathAndKeepsTheGraphsBetweenRuns) {
  const std::string skip = gpu_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (cuda_graphs_disabled_by_environment()) GTEST_SKIP() << "KVSTUDIO_CUDA_GRAPHS switches them off here";
  const SessionRuns runs = run_session_with_and_without("cuda", "headkv:rho=1/4");
  EXPECT_EQ(runs.on.tokens, runs.off.tokens);
  EXPECT_EQ(runs.again.tokens, runs.off.tokens);
  EXPECT_EQ(runs.off.cuda_graphs, "off");
  EXPECT_EQ(runs.on.cuda_graphs, "on");
  EXPECT_EQ(runs.again.cuda_graphs, "on");
}

}  // namespace
}  // namespace kvs
