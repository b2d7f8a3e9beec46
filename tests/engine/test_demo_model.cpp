// The bundled, trained demo model passes its quality gates and shows
// what teachers use it to show: locality — a line is generated mostly from the
// lines just above it, and some heads are almost purely local — and the
// class-token sink in some heads.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/world/scene_world.h"
#include "tests/engine/demo_bundle_checks.h"

namespace kvs {
namespace {

std::string demo_bundle_dir() { return test::shipped_demo_dir("llamagen-demo"); }

TEST(DemoModel, IsTrainedOnTheWorldAndPassesItsGates) {
  test::expect_demo_quality_gates(io::ModelBundle::open(demo_bundle_dir()));
}

// Mean over layers, heads and the queries that generate the last line, of the
// attention mass on (a) the class token and (b) the class token plus the local
// window: the two lines above the line being generated and that line so far.
TEST(DemoModel, AttentionIsLocalWithAClassTokenSink) {
  const io::ModelBundle bundle = io::ModelBundle::open(demo_bundle_dir());
  const llamagen::LlamaGenModel model = llamagen::LlamaGenModel::load(bundle, at::kCPU);
  const auto& cfg = model.gpt->config();
  const int64_t grid = cfg.grid_size(), cls = cfg.cls_token_num, classes = cfg.num_classes;

  // One image per class, sampled the way users sample (the bundle's defaults).
  GenerationRequest request;
  request.model_path = bundle.dir;
  request.threads = 1;
  request.seed = 7;
  for (int64_t c = 0; c < classes; ++c) request.class_ids.push_back(c);
  const GenerationResult result = GenerationSession().run(request);
  std::vector<int64_t> flat;
  for (const auto& t : result.tokens) flat.insert(flat.end(), t.begin(), t.end());
  const at::Tensor tokens = at::tensor(flat, at::TensorOptions().dtype(at::kLong)).view({classes, grid * grid});

  // Teacher-forced replay of the conditional rows with a full cache, watching attention.
  c10::NoGradGuard no_grad;
  KvStore cache = model.gpt->make_cache(classes, cls + grid * grid);
  model.gpt->prefill(at::arange(classes, at::TensorOptions().dtype(at::kLong)), cache);
  const int64_t last_line = grid - 1, first_query = last_line * grid - 1;  // this token predicts the line's first
  double sink_mass = 0, local_mass = 0, uniform_sink = 0, uniform_local = 0, total_mass = 0;
  std::vector<double> head_local(static_cast<size_t>(cfg.n_layer * cfg.n_head), 0.0);
  // Per (layer, KV head): LineAR's Observation 1 measure — attention per
  // condition token over attention per image token (1 = no preference).
  std::vector<double> head_sink_ratio(head_local.size(), 0.0);
  int64_t samples = 0;
  for (int64_t i = 0; i + 1 < grid * grid; ++i) {
    const int64_t position = cls + i;
    StepObserver observer;
    const bool watched = i >= first_query;
    if (watched) {
      observer.want_key_mass = true;
      observer.on_attention = [&](int64_t layer, const KvAttention& attention, const KvStore& store) {
        const at::Tensor mass =
            attention.key_mass.to(at::kCPU, at::kDouble).contiguous();  // [rows, kv_heads, capacity]
        const auto acc = mass.accessor<double, 3>();
        const int64_t window_start = cls + (last_line - 2) * grid;
        for (int64_t row = 0; row < classes; ++row)
          for (int64_t head = 0; head < mass.size(1); ++head) {
            const std::vector<int64_t> pos = store.positions(layer, row, head);
            double sink = 0, local = 0, all = 0;
            for (size_t s = 0; s < pos.size(); ++s) {
              const double w = acc[row][head][static_cast<int64_t>(s)];
              all += w;
              if (pos[s] < cls) sink += w;
              if (pos[s] < cls || pos[s] >= window_start) local += w;
            }
            const double group = static_cast<double>(cfg.n_head / mass.size(1));
            total_mass += all / group;
            head_local[static_cast<size_t>(layer * mass.size(1) + head)] += local;
            const double image_keys = static_cast<double>(pos.size()) - static_cast<double>(cls);
            head_sink_ratio[static_cast<size_t>(layer * mass.size(1) + head)] +=
                (sink / static_cast<double>(cls)) / std::max(1e-12, (all - sink) / image_keys);
            sink_mass += sink / group;
            local_mass += local / group;
            const double keys = static_cast<double>(pos.size());
            uniform_sink += cls / keys;
            uniform_local += (cls + static_cast<double>(position - window_start + 1)) / keys;
            ++samples;
          }
      };
    }
    model.gpt->decode_step(tokens.select(1, i), position, cache, observer);
  }
  ASSERT_GT(samples, 0);
  sink_mass /= samples;
  local_mass /= samples;
  uniform_sink /= samples;
  uniform_local /= samples;
  double most_local_head = 0;
  for (double m : head_local)
    most_local_head = std::max(most_local_head, m * static_cast<double>(head_local.size()) / samples);
  std::printf(
      "demo attention on the last line: class token %.3f (uniform %.3f), class token + two lines above + "
      "own line %.3f (uniform %.3f), most local head %.3f\n",
      sink_mass, uniform_sink, local_mass, uniform_local, most_local_head);
  // The sink per head and per layer (mean of its heads).
  const int64_t kv_heads = static_cast<int64_t>(head_sink_ratio.size()) / cfg.n_layer;
  const double per_head_samples = static_cast<double>(samples) / static_cast<double>(head_sink_ratio.size());
  double strongest_head = 0, strongest_layer = 0;
  int64_t strongest_head_layer = -1, strongest_head_index = -1;
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    double layer_ratio = 0;
    std::printf("class token : image token attention, layer %lld:", static_cast<long long>(l));
    for (int64_t h = 0; h < kv_heads; ++h) {
      const double r = head_sink_ratio[static_cast<size_t>(l * kv_heads + h)] / per_head_samples;
      std::printf(" %5.1fx", r);
      layer_ratio += r / static_cast<double>(kv_heads);
      if (r > strongest_head) {
        strongest_head = r;
        strongest_head_layer = l;
        strongest_head_index = h;
      }
    }
    std::printf("  (mean %.1fx)\n", layer_ratio);
    strongest_layer = std::max(strongest_layer, layer_ratio);
  }
  std::printf("strongest class-token sink: layer %lld head %lld, %.1fx an image token\n",
              static_cast<long long>(strongest_head_layer), static_cast<long long>(strongest_head_index),
              strongest_head);
  EXPECT_NEAR(total_mass / samples, 1.0, 1e-3);  // the measurement sees every key
  // Measured on the shipped model (seed 7): 0.38 vs 0.16 uniform; the most local
  // head puts 0.90 of its attention on that window.
  EXPECT_GT(local_mass, 0.3);
  EXPECT_GT(local_mass, 2 * uniform_local);
  EXPECT_GT(most_local_head, 0.8);
  // The class-token sink, measured as LineAR measures it (Observation 1: the
  // attention a condition token receives over what an average visual token
  // receives, "up to 20x in shallow layers" of real models). The class token's
  // key is zero (LlamaGen gives condition positions a zero rotary), so a head
  // sinks onto it by scoring every image key below 0. Averaged over all 48
  // heads the demo model barely prefers it (0.6 % of the mass against 0.4 % for
  // an even spread), but a few mid-stack heads do: measured on the shipped model
  // (seed 7) layer 3 head 4 gives it 22.8x and layer 2 head 6 14.4x an image
  // token, and layer 3's heads 7.3x on average.
  EXPECT_GT(sink_mass, uniform_sink);
  EXPECT_GT(strongest_head, 15.0);
  EXPECT_GT(strongest_layer, 5.0);
}

}  // namespace
}  // namespace kvs
