// GPT training through the engine's own forward: gradients reach every weight,
// a few steps lower the loss on a fixed batch, and a run resumed from its
// checkpoint continues with exactly the losses of the uninterrupted run.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <fstream>

#include "engine/core/errors.h"
#include "engine/models/llamagen/llamagen_gpt.h"
#include "engine/training/adamw.h"
#include "engine/training/llamagen/gpt_trainer.h"
#include "engine/training/training_loop.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/training_test_options.h"

namespace kvs::training {
namespace {

llamagen::GptConfig tiny_gpt() {
  llamagen::GptConfig c;
  c.dim = 32;
  c.n_layer = 2;
  c.n_head = 4;
  c.multiple_of = 16;
  c.vocab_size = 16;
  c.num_classes = 3;
  c.block_size = 16;  // 4x4 tokens
  return c;
}

struct FixedBatch {
  at::Tensor labels = at::tensor({0, 1, 2, 1}, at::TensorOptions().dtype(at::kLong));
  at::Tensor codes;
  FixedBatch() {
    at::Generator gen = step_generator(5, 0);
    codes = at::randint(16, {4, 16}, gen, at::TensorOptions().dtype(at::kLong));
  }
};

TEST(TrainingGpt, GradientsReachEveryWeightAndLossFalls) {
  const llamagen::GptConfig cfg = tiny_gpt();
  ParameterSet params = init_gpt_parameters(cfg, 1, at::kCPU);
  llamagen::LlamaGenGpt gpt(cfg, params.as_map(), at::kCPU);
  FixedBatch batch;
  AdamW opt(params, {});
  const double first = gpt_loss(gpt, batch.labels, batch.codes).item<double>();
  EXPECT_NEAR(first, std::log(16.0), 1e-4);  // zero-initialised output layer: uniform logits
  double last = first;
  for (int step = 0; step < 25; ++step) {
    params.zero_grad();
    at::Tensor loss = gpt_loss(gpt, batch.labels, batch.codes);
    loss.backward();
    if (step == 0)
      for (const auto& p : params.items()) {
        // At init only the output layer gets a gradient (its zero weights block the rest).
        if (p.name == "output.weight") {
          ASSERT_TRUE(p.tensor.grad().defined());
          EXPECT_GT(p.tensor.grad().abs().sum().item<double>(), 0.0);
        }
      }
    if (step == 3)
      for (const auto& p : params.items()) {
        if (p.name == "cls_embedding.embedding_table.weight") continue;  // null-class row stays untouched
        ASSERT_TRUE(p.tensor.grad().defined()) << p.name;
        EXPECT_GT(p.tensor.grad().abs().sum().item<double>(), 0.0) << p.name;
      }
    clip_grad_norm(params, 1.0);
    opt.step(1e-2);
    last = loss.item<double>();
  }
  EXPECT_LT(last, first - 1.0);
  // The engine's incremental path sees the trained weights too (shared tensors).
  at::Tensor teacher = gpt.forward_teacher(batch.labels, batch.codes.narrow(1, 0, 15)).detach();
  EXPECT_TRUE(std::isfinite(teacher.sum().item<double>()));
}

TEST(TrainingGpt, FusedTeacherAttentionMatchesExplicit) {
  for (llamagen::GptConfig cfg : {tiny_gpt(), test::tiny_gqa_gpt()}) {
    ParameterSet params = init_gpt_parameters(cfg, 2, at::kCPU);
    {
      c10::NoGradGuard no_grad;
      params.get("output.weight").normal_(0.0, 0.5);
    }
    llamagen::LlamaGenGpt gpt(cfg, params.as_map(), at::kCPU);
    at::Tensor labels = at::tensor({int64_t{0}, int64_t{1}});
    at::Tensor codes = at::randint(cfg.vocab_size, {2, cfg.block_size - 1}, at::TensorOptions().dtype(at::kLong));
    using A = llamagen::LlamaGenGpt::TeacherAttention;
    at::Tensor fused = gpt.forward_teacher(labels, codes, A::Fused).detach();
    EXPECT_TRUE(at::allclose(fused, gpt.forward_teacher(labels, codes, A::Explicit).detach(), 1e-5, 1e-5));
  }
}

// One tiny GPT run on the fixed batch through run_training; returns the loss.csv rows.
std::vector<std::string> run_tiny(const std::string& work, int64_t stop_at, bool resume) {
  const llamagen::GptConfig cfg = tiny_gpt();
  ParameterSet params = init_gpt_parameters(cfg, 9, at::kCPU);
  llamagen::LlamaGenGpt gpt(cfg, params.as_map(), at::kCPU);
  FixedBatch batch;
  int64_t steps_run = 0;
  TrainOptions o = test::tiny_train_options(work, stop_at, resume, &steps_run, 11, 1e-2);
  TrainingTask task;
  task.kind = "gpt";
  task.params = &params;
  task.config = {{"tiny", true}};
  task.step = [&](int64_t, at::Generator& gen) {
    // Randomness from the step generator: a resumed run must draw the same rows.
    at::Tensor idx = at::randint(4, {2}, gen, at::TensorOptions().dtype(at::kLong));
    return StepResult{gpt_loss(gpt, batch.labels.index_select(0, idx), batch.codes.index_select(0, idx)), {}};
  };
  run_training(o, task);
  std::ifstream in(work + "/gpt/loss.csv");
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(line.substr(0, line.find(",", line.find(",") + 1)));
  return rows;  // "step,loss"
}

TEST(TrainingGpt, ResumeGivesIdenticalNextStepLoss) {
  test::TempDir straight, interrupted;
  const std::vector<std::string> a = run_tiny(straight.path().string(), 0, false);
  const std::vector<std::string> first = run_tiny(interrupted.path().string(), 3, false);
  ASSERT_EQ(first.size(), 4u);  // header + steps 1..3
  // Resuming without --resume is refused; with it, steps 4..6 continue the run.
  EXPECT_THROW(run_tiny(interrupted.path().string(), 0, false), InvalidArgumentError);
  const std::vector<std::string> b = run_tiny(interrupted.path().string(), 0, true);
  ASSERT_EQ(a.size(), 7u);
  ASSERT_EQ(b.size(), 7u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "row " << i;
}

}  // namespace
}  // namespace kvs::training
