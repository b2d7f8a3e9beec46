#pragma once
// `kvstudio-train text-tokenizer`: the demo text-to-image model's tokenizer, a
// byte-level BPE (engine/text/bpe_trainer.h) learned on the train-split captions
// of the training pictures, written with Janus-Pro's special tokens as a Hugging
// Face tokenizer folder in WORK/text-tokenizer (the files a converted Janus-Pro
// checkpoint carries, read by the same loader), plus manifest.json recording
// what it was trained on.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kvs::training {

struct TextTokenizerSetup {
  std::string work_dir;
  int64_t vocab_size = 1024;  // byte symbols + merges (the special tokens come on top)
  int64_t min_frequency = 2;
  int64_t train_per_class = 1000;
  int64_t captions_per_image = 4;
  std::string command;
};

// Writes WORK/text-tokenizer; returns its manifest (vocabulary, merges, corpus size).
nlohmann::json train_text_tokenizer(const TextTokenizerSetup& setup);

// WORK/text-tokenizer.
std::string text_tokenizer_dir(const std::string& work_dir);

}  // namespace kvs::training
