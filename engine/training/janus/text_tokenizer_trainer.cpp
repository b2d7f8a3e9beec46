#include "engine/training/janus/text_tokenizer_trainer.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/models/janus/janus_tokenizer_files.h"
#include "engine/text/bpe_trainer.h"
#include "engine/training/janus/caption_data.h"

namespace kvs::training {

std::string text_tokenizer_dir(const std::string& work_dir) {
  return (std::filesystem::path(work_dir) / "text-tokenizer").string();
}

nlohmann::json train_text_tokenizer(const TextTokenizerSetup& setup) {
  if (setup.train_per_class < 1 || setup.captions_per_image < 1)
    throw InvalidArgumentError("text-tokenizer: --train-per-class and --captions-per-image must be at least 1");
  const auto t0 = std::chrono::steady_clock::now();
  const auto items = world_items(WorldSplit::Train, setup.train_per_class, world_class_count());
  const auto corpus = world_item_captions(items, setup.captions_per_image, world::CaptionSplit::train);
  const text::TrainedBpe bpe = text::train_byte_level_bpe(corpus, {setup.vocab_size, setup.min_frequency});
  const std::string dir = text_tokenizer_dir(setup.work_dir);
  const int64_t vocab = text::write_bpe_tokenizer_files(dir, bpe, janus::janus_tokenizer_file_options());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json manifest = {{"kind", "text-tokenizer"},
                             {"vocab_size", vocab},
                             {"bpe_vocab_size", static_cast<int64_t>(bpe.vocab.size())},
                             {"merges", static_cast<int64_t>(bpe.merges.size())},
                             {"requested_vocab_size", setup.vocab_size},
                             {"min_frequency", setup.min_frequency},
                             {"captions", static_cast<int64_t>(corpus.size())},
                             {"words", bpe.words},
                             {"distinct_words", bpe.distinct_words},
                             {"train_per_class", setup.train_per_class},
                             {"captions_per_image", setup.captions_per_image},
                             {"caption_split", "train"},
                             {"seconds", seconds}};
  if (!setup.command.empty()) manifest["command"] = setup.command;
  std::ofstream out(std::filesystem::path(dir) / "manifest.json");
  out << manifest.dump(2) << "\n";
  if (!out) throw FileError("cannot write " + dir + "/manifest.json");
  module_logger("train").info("text-tokenizer: " + std::to_string(bpe.merges.size()) + " merges learned from " +
                              std::to_string(corpus.size()) + " captions (" + std::to_string(bpe.distinct_words) +
                              " distinct words); " + std::to_string(vocab) + " tokens with the special ones, in " +
                              dir);
  return manifest;
}

}  // namespace kvs::training
