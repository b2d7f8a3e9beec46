#include "engine/text/sentencepiece_trainer.h"

#include <sentencepiece_trainer.h>

#include <unordered_map>

#include "engine/core/errors.h"

namespace kvs::text {
namespace {

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& sentences) : sentences_(sentences) {}
  bool done() const override { return index_ >= sentences_.size(); }
  void Next() override { ++index_; }
  const std::string& value() const override { return sentences_[index_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& sentences_;
  size_t index_ = 0;
};

}  // namespace

std::string train_t5_sentencepiece(const std::vector<std::string>& sentences, int vocab_size) {
  if (sentences.empty()) throw InvalidArgumentError("a SentencePiece model needs some text to train on");
  if (vocab_size < 8) throw InvalidArgumentError("a SentencePiece model needs at least 8 pieces");
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "unigram"},
      {"vocab_size", std::to_string(vocab_size)},
      {"pad_id", "0"},
      {"eos_id", "1"},
      {"unk_id", "2"},
      {"bos_id", "-1"},
      {"normalization_rule_name", "nmt_nfkc"},
      {"character_coverage", "1.0"},
      {"hard_vocab_limit", "false"},
      {"num_threads", "1"},
      {"minloglevel", "2"},
  };
  VectorIterator iterator(sentences);
  std::string model;
  const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, &iterator, &model);
  if (!status.ok()) throw InvalidArgumentError("training a SentencePiece model failed: " + status.ToString());
  return model;
}

const std::vector<std::string>& caption_corpus() {
  static const std::vector<std::string> corpus = {
      "a photo of a red sports car on a mountain road",
      "an oil painting of a lighthouse in a storm, dramatic light",
      "two dogs playing in the snow at sunset",
      "a small house by the lake, morning fog",
      "a bowl of fresh fruit on a wooden table",
      "a city street at night with neon signs and rain",
      "a portrait of an old man with a white beard",
      "a watercolor painting of a forest in autumn",
      "a cat sleeping on a blue sofa near the window",
      "a bird sitting on a branch covered with flowers",
      "a castle on a hill under a starry sky",
      "a plate of pasta with tomato sauce and basil",
      "a sailing boat on a calm sea at dawn",
      "a close-up photo of a yellow sunflower",
      "children flying kites in a green park",
      "a futuristic robot walking through a desert",
      "a mountain landscape with a river and pine trees",
      "a cup of coffee and a book on a rainy day",
      "an astronaut riding a horse on the moon",
      "a colorful hot air balloon over the fields",
      "a snowy village with warm lights in the windows",
      "a vintage bicycle leaning against a brick wall",
      "a tiger resting in tall grass, national geographic photo",
      "a bridge over a river in a quiet town",
      "an abstract painting with bold shapes and bright colors",
      "a field of lavender under a clear blue sky",
      "a wooden cabin in the woods, cozy and warm",
      "a busy market with fruit stalls and people",
      "a girl reading a book under a large tree",
      "a train crossing a bridge in the mountains",
      "blurry, low quality, watermark, distorted text",
      "high quality, detailed, sharp focus, beautiful lighting",
  };
  return corpus;
}

}  // namespace kvs::text
