// kvstudio-train text-tokenizer: the text-to-image demo's byte-level BPE tokenizer.
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/core/errors.h"
#include "engine/training/janus/text_tokenizer_trainer.h"

namespace kvs::train_app {

int cmd_text_tokenizer(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args, {"--work", "--vocab-size", "--min-frequency", "--train-per-class", "--captions-per-image"},
                   {"--help"}, 0);
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train text-tokenizer --work DIR [options]\n"
        "  Learns a byte-level BPE tokenizer on the train-split captions of the world's training\n"
        "  pictures and writes it, with Janus-Pro's special tokens, as a Hugging Face tokenizer\n"
        "  folder in DIR/text-tokenizer.\n"
        "  --vocab-size N           byte symbols + merges, without the special tokens (default 1024)\n"
        "  --min-frequency N        fewest occurrences of a pair that is merged (default 2)\n"
        "  --train-per-class N      training pictures per class (default 1000)\n"
        "  --captions-per-image K   captions of each picture (default 4)\n");
    return 0;
  }
  training::TextTokenizerSetup s;
  s.work_dir = p.get("--work", "");
  if (s.work_dir.empty()) throw InvalidArgumentError("text-tokenizer needs --work DIR");
  s.vocab_size = p.get_int("--vocab-size", 1024);
  s.min_frequency = p.get_int("--min-frequency", 2);
  s.train_per_class = p.get_int("--train-per-class", 1000);
  s.captions_per_image = p.get_int("--captions-per-image", 4);
  s.command = command_line;
  const nlohmann::json m = training::train_text_tokenizer(s);
  std::printf("text-tokenizer: %lld tokens (%lld merges) from %lld captions in %s\n",
              static_cast<long long>(m.at("vocab_size").get<int64_t>()),
              static_cast<long long>(m.at("merges").get<int64_t>()),
              static_cast<long long>(m.at("captions").get<int64_t>()),
              training::text_tokenizer_dir(s.work_dir).c_str());
  return 0;
}

}  // namespace kvs::train_app
