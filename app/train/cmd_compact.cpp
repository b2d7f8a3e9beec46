// kvstudio-train compact: a bundle's generator matrices stored as row-scaled int8.
#include <cstdio>
#include <sstream>

#include "app/cli/arg_parser.h"
#include "app/train/train_commands.h"
#include "engine/core/errors.h"
#include "engine/io/row_scaled_int8.h"

namespace kvs::train_app {

int cmd_compact(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args, {"--bundle", "--prefixes"}, {"--help"}, 0);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-train compact --bundle DIR --prefixes P1,P2,...\n"
        "  Stores every matrix (rank >= 2, at least 4096 weights) of DIR's weights whose name\n"
        "  starts with one of the prefixes as int8 with one float32 scale per output row, about\n"
        "  half the size of F16; biases, norms, small tables and other prefixes are kept byte\n"
        "  for byte. Loading decodes them to float, so a loaded model is as large as before.\n"
        "  Records the storage under provenance.weights_storage in DIR/model.json. The\n"
        "  generated images change: measure the gates again with `kvstudio-train evaluate`.\n"
        "  Example (LlamaGen demo, tokenizer untouched): --prefixes gpt.");
    return 0;
  }
  std::vector<std::string> prefixes;
  std::stringstream list(p.require("--prefixes"));
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty()) prefixes.push_back(item);
  if (prefixes.empty()) throw InvalidArgumentError("option --prefixes needs at least one tensor name prefix");
  const io::RowScaledStoreResult r = io::store_row_scaled(p.require("--bundle"), prefixes, command_line);
  std::printf("compact: %lld tensors stored row-scaled int8; weights file %.2f MiB -> %.2f MiB\n",
              static_cast<long long>(r.tensors_converted), r.bytes_before / 1048576.0, r.bytes_after / 1048576.0);
  return 0;
}

}  // namespace kvs::train_app
