#include "engine/text/tokenizer_files.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/errors.h"

namespace kvs::text {
namespace {

namespace fs = std::filesystem;

// A special token as transformers writes it: "text", {"content": "text", ...}
// (an AddedToken), or null.
std::optional<std::string> token_name(const nlohmann::json& file, const char* key, const std::string& where) {
  const auto it = file.find(key);
  if (it == file.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  throw FormatError(where + ": field '" + key + "' must be a token string or an object with \"content\"");
}

std::optional<bool> flag(const nlohmann::json& file, const char* key, const std::string& where) {
  const auto it = file.find(key);
  if (it == file.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw FormatError(where + ": field '" + key + "' must be true or false");
  return it->get<bool>();
}

}  // namespace

nlohmann::json read_json_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw FileError("file " + path + ": not found");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("file " + path + ": cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw FileError("file " + path + ": cannot be read");
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("file " + path + ": not valid JSON: " + e.what());
  }
}

TokenizerConfig read_tokenizer_config(const std::string& dir) {
  TokenizerConfig config;
  const std::string config_path = (fs::path(dir) / "tokenizer_config.json").string();
  const std::string map_path = (fs::path(dir) / "special_tokens_map.json").string();
  std::error_code ec;
  for (const std::string& path : {config_path, map_path}) {
    if (!fs::exists(path, ec)) continue;
    const nlohmann::json file = read_json_file(path);
    const std::string where = "file " + path;
    if (!file.is_object()) throw FormatError(where + ": expected a JSON object");
    // Read in order: special_tokens_map.json's names replace tokenizer_config.json's.
    if (auto v = token_name(file, "bos_token", where)) config.bos_token = v;
    if (auto v = token_name(file, "eos_token", where)) config.eos_token = v;
    if (auto v = token_name(file, "pad_token", where)) config.pad_token = v;
    if (auto v = token_name(file, "unk_token", where)) config.unk_token = v;
    if (path != config_path) continue;
    config.add_bos_token = flag(file, "add_bos_token", where);
    config.add_eos_token = flag(file, "add_eos_token", where);
    if (const auto cls = file.find("tokenizer_class"); cls != file.end() && cls->is_string()) {
      config.llama_class = *cls == "LlamaTokenizer" || *cls == "LlamaTokenizerFast";
    }
    const auto it = file.find("model_max_length");
    if (it != file.end() && !it->is_null()) {
      if (it->is_number_integer() || it->is_number_unsigned()) {
        if (!it->is_number_unsigned() || it->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
          config.model_max_length = it->get<int64_t>();
        }
      } else if (!it->is_number_float()) {
        throw FormatError(where + ": field 'model_max_length' must be a number");
      } else if (const double v = it->get<double>(); std::isfinite(v) && v < 9.2e18) {
        config.model_max_length = static_cast<int64_t>(v);
      }
    }
  }
  return config;
}

}  // namespace kvs::text
