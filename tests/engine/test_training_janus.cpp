// The text-to-image demo trainer: Janus-Pro's generation path trained through
// the engine's own JanusModel. Gradients reach every trainable tensor through
// the teacher-forcing forward, a few steps lower the loss of a fixed batch, and
// the trained tensors are the ones the cached (generation) path reads: its
// logits for the first image token equal the teacher's.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cctype>
#include <cmath>

#include "engine/models/janus/janus_model.h"
#include "engine/models/janus/janus_random_init.h"
#include "engine/training/adamw.h"
#include "engine/training/janus/caption_data.h"
#include "engine/training/janus/janus_trainer.h"
#include "engine/training/training_loop.h"

namespace kvs::training {
namespace {

janus::JanusConfig tiny_config() {
  janus::JanusConfig c = janus::tiny_janus_config();
  c.language.vocab_size = 40;
  c.image_token_size = 16;
  c.vq.codebook_size = 16;
  c.image_size = 16;  // a 4x4 grid of a 4x-downsampling VQ
  c.language.max_position_embeddings = 64;
  return c;
}

TEST(TrainingJanus, GradientsReachEveryTensorAndLossFalls) {
  const janus::JanusConfig cfg = tiny_config();
  ParameterSet params = init_janus_parameters(cfg, 3, at::kCPU);
  for (const auto& p : params.items()) EXPECT_EQ(p.name.rfind("gen_vision_model.", 0), std::string::npos) << p.name;
  const janus::JanusModel model = janus::JanusModel::from_tensors(cfg, params.as_map(), at::kCPU, at::kFloat);
  ASSERT_EQ(model.vq, nullptr);
  at::Generator gen = step_generator(4, 0);
  const auto i64 = at::TensorOptions().dtype(at::kLong);
  const at::Tensor prompts = at::randint(cfg.language.vocab_size, {3, 5}, gen, i64);
  const at::Tensor codes = at::randint(cfg.image_token_size, {3, cfg.image_tokens()}, gen, i64);
  AdamW opt(params, {});
  double acc = -1;
  const double first = janus_loss(model, prompts, codes, &acc).item<double>();
  // Zero vision_head weights: nearly uniform logits (only its small default bias).
  EXPECT_NEAR(first, std::log(static_cast<double>(cfg.image_token_size)), 0.02);
  EXPECT_GE(acc, 0.0);
  double last = first;
  for (int step = 0; step < 30; ++step) {
    params.zero_grad();
    at::Tensor loss = janus_loss(model, prompts, codes);
    loss.backward();
    if (step == 3)
      for (const auto& p : params.items()) {
        ASSERT_TRUE(p.tensor.grad().defined()) << p.name;
        EXPECT_GT(p.tensor.grad().abs().sum().item<double>(), 0.0) << p.name;
      }
    clip_grad_norm(params, 1.0);
    opt.step(1e-2);
    last = loss.item<double>();
  }
  EXPECT_LT(last, first - 1.0);

  // The cached path (prefill the prompt, then one token at a time) reads the
  // same trained tensors: the prompt's last hidden state predicts image token 0
  // exactly as in teacher forcing.
  c10::NoGradGuard no_grad;
  KvStore cache = model.language->make_cache(1, cfg.language.max_position_embeddings);
  const at::Tensor row = prompts.narrow(0, 0, 1);
  at::Tensor cached = model.image_logits(
      model.language->forward(model.language->embed_text(row), 0, &cache).narrow(1, row.size(1) - 1, 1));
  at::Tensor teacher = model.image_logits(
      model.language->forward(model.language->embed_text(row), 0, nullptr).narrow(1, row.size(1) - 1, 1));
  EXPECT_TRUE(at::allclose(cached, teacher, 1e-4, 1e-4));
}

TEST(TrainingJanus, CaptionsFollowTheGrammarAndDifferPerPicture) {
  const std::vector<WorldItem> items = world_items(WorldSplit::Train, 2, world_class_count());
  const std::vector<std::string> captions = world_item_captions(items, 3, world::CaptionSplit::train);
  ASSERT_EQ(captions.size(), items.size() * 3);
  for (size_t i = 0; i < items.size(); ++i)
    for (int64_t k = 0; k < 3; ++k)
      EXPECT_EQ(captions[i * 3 + static_cast<size_t>(k)], world_item_caption(items[i], k, world::CaptionSplit::train));
  // Different caption seeds per picture: two pictures' first captions are not
  // drawn from one seed (same class, consecutive seeds, different wording or facts).
  EXPECT_NE(caption_seed(items[0].seed, 0), caption_seed(items[12].seed, 0));
  EXPECT_NE(captions[0], captions[12 * 3]);
}

// Swaps the words "left" and "right" (not "bright").
std::string swap_sides(const std::string& text) {
  auto word_at = [&](size_t i, const std::string& w) {
    const bool starts = i == 0 || !std::isalpha(static_cast<unsigned char>(text[i - 1]));
    const size_t end = i + w.size();
    return starts && text.compare(i, w.size(), w) == 0 &&
           (end == text.size() || !std::isalpha(static_cast<unsigned char>(text[end])));
  };
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (word_at(i, "left")) {
      out += "right";
      i += 4;
    } else if (word_at(i, "right")) {
      out += "left";
      i += 5;
    } else {
      out += text[i++];
    }
  }
  return out;
}

TEST(TrainingJanus, MirroredCaptionsDifferOnlyInTheirSides) {
  const std::vector<WorldItem> items = world_items(WorldSplit::Train, 6, world_class_count());
  const auto plain = world_item_captions(items, 2, world::CaptionSplit::train);
  const auto mirrored = world_item_captions(items, 2, world::CaptionSplit::train, true);
  ASSERT_EQ(plain.size(), mirrored.size());
  int changed = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(mirrored[i], swap_sides(plain[i])) << plain[i];
    changed += mirrored[i] != plain[i];
  }
  EXPECT_GT(changed, 20);  // many pictures name a side
}

}  // namespace
}  // namespace kvs::training
