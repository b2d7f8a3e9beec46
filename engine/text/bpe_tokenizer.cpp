#include "engine/text/bpe_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/added_tokens.h"
#include "engine/text/bpe_model.h"
#include "engine/text/decoder.h"
#include "engine/text/json_fields.h"
#include "engine/text/normalizer.h"
#include "engine/text/pre_tokenizer.h"
#include "engine/text/tokenizer_files.h"
#include "engine/text/utf8.h"

namespace kvs::text {

struct BpeTokenizer::Impl {
  explicit Impl(BpeModel m) : model(std::move(m)) {}

  BpeModel model;
  std::unique_ptr<Normalizer> normalizer;
  PreTokenizer pre_tokenizer;
  TokenDecoder decoder;
  std::vector<AddedToken> added;
  std::unordered_map<int64_t, size_t> added_by_id;  // index into `added`
  std::unordered_map<std::string, int64_t> added_by_content;
  std::unique_ptr<AddedTokenMatcher> raw_matcher;         // tokens with normalized = false
  std::unique_ptr<AddedTokenMatcher> normalized_matcher;  // the others, normalized
  std::vector<int64_t> prefix, suffix;                    // what add_special_tokens adds
  std::optional<int64_t> bos, eos, pad;
  std::optional<int64_t> max_length;

  std::optional<int64_t> find(const std::string& token) const {
    if (const auto it = added_by_content.find(token); it != added_by_content.end()) return it->second;
    return model.find(token);
  }

  // The piece behind `id` (an added token's content first), or nullptr.
  const std::string* piece(int64_t id, const AddedToken** added_token) const {
    *added_token = nullptr;
    if (const auto it = added_by_id.find(id); it != added_by_id.end()) {
      *added_token = &added[it->second];
      return &added[it->second].content;
    }
    return model.piece(id);
  }

  void encode_text(const std::string& text, std::vector<int64_t>& ids) const {
    for (const std::string& piece : pre_tokenizer.split(text)) {
      const std::vector<int64_t> piece_ids = model.encode(piece);
      ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
  }
};

namespace {

std::vector<AddedToken> read_added_tokens(const nlohmann::json& root, const std::string& where) {
  std::vector<AddedToken> tokens;
  const auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return tokens;
  if (!it->is_array()) throw FormatError(where + ": field 'added_tokens' must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& node = (*it)[i];
    const std::string here = where + ": added_tokens[" + std::to_string(i) + "]";
    const nlohmann::json& id = json_field(node, "id", here);
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      throw FormatError(here + ": id must be a non-negative integer");
    AddedToken t;
    t.id = id.get<int64_t>();
    t.content = json_string(node, "content", here);
    require_valid_utf8(t.content, here + " content");
    t.single_word = json_bool(node, "single_word", false, here);
    t.lstrip = json_bool(node, "lstrip", false, here);
    t.rstrip = json_bool(node, "rstrip", false, here);
    t.special = json_bool(node, "special", false, here);
    // The library's default: special tokens are matched in the raw text.
    t.normalized = json_bool(node, "normalized", !t.special, here);
    tokens.push_back(std::move(t));
  }
  return tokens;
}

// The ids a TemplateProcessing "single" template puts around the text ($A).
void read_post_processor(const nlohmann::json& node, const std::string& where, std::vector<int64_t>& prefix,
                         std::vector<int64_t>& suffix) {
  if (node.is_null()) return;
  const std::string type = json_string(node, "type", where + ": post_processor");
  const std::string here = where + ": post_processor " + type;
  if (type == "ByteLevel") return;  // offsets only; the ids stay as they are
  if (type == "Sequence") {
    for (const auto& item : json_array(node, "processors", here)) read_post_processor(item, where, prefix, suffix);
    return;
  }
  if (type != "TemplateProcessing") {
    throw FormatError(where + ": post_processor type '" + type +
                      "' is not supported (supported: null, TemplateProcessing, ByteLevel, Sequence)");
  }
  const nlohmann::json& specials = json_field(node, "special_tokens", here);
  bool seen_text = false;
  for (const auto& item : json_array(node, "single", here)) {
    if (item.contains("Sequence")) {
      seen_text = true;
      continue;
    }
    const std::string name = json_string(json_object(item, "SpecialToken", here), "id", here + ": SpecialToken");
    const nlohmann::json& entry = json_object(specials, name, here + ": special_tokens");
    for (const auto& id : json_array(entry, "ids", here + ": special_tokens." + name)) {
      if (!id.is_number_integer()) throw FormatError(here + ": special_tokens." + name + " ids must be integers");
      (seen_text ? suffix : prefix).push_back(id.get<int64_t>());
    }
  }
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::~BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;

BpeTokenizer BpeTokenizer::load(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "tokenizer.json").string();
  const std::string where = "file " + path;
  const nlohmann::json root = read_json_file(path);
  if (!root.is_object()) throw FormatError(where + ": expected a JSON object");

  auto impl = std::make_unique<Impl>(BpeModel::from_json(json_field(root, "model", where), where));
  impl->normalizer = Normalizer::from_json(root.value("normalizer", nlohmann::json()), where);
  impl->pre_tokenizer = PreTokenizer::from_json(root.value("pre_tokenizer", nlohmann::json()), where);
  impl->decoder = TokenDecoder::from_json(root.value("decoder", nlohmann::json()), where);

  impl->added = read_added_tokens(root, where);
  std::vector<AddedToken> raw, normalized;
  for (size_t i = 0; i < impl->added.size(); ++i) {
    const AddedToken& t = impl->added[i];
    impl->added_by_id[t.id] = i;
    impl->added_by_content[t.content] = t.id;
    if (!t.normalized) {
      raw.push_back(t);
    } else {
      AddedToken n = t;
      if (impl->normalizer) n.content = impl->normalizer->apply(n.content);
      normalized.push_back(std::move(n));
    }
  }
  impl->raw_matcher = std::make_unique<AddedTokenMatcher>(std::move(raw));
  impl->normalized_matcher = std::make_unique<AddedTokenMatcher>(std::move(normalized));

  const TokenizerConfig config = read_tokenizer_config(dir);
  const auto resolve = [&](const std::optional<std::string>& name, const char* what) -> std::optional<int64_t> {
    if (!name) return std::nullopt;
    const auto id = impl->find(*name);
    if (!id) {
      throw FormatError("folder " + dir + ": " + what + " '" + *name +
                        "' is neither in the vocabulary nor an added token");
    }
    return id;
  };
  impl->bos = resolve(config.bos_token, "bos_token");
  impl->eos = resolve(config.eos_token, "eos_token");
  impl->pad = resolve(config.pad_token, "pad_token");
  impl->max_length = config.model_max_length;

  // transformers' Llama tokenizers rebuild the post-processor from
  // add_bos_token (default on) and add_eos_token (default off); other classes
  // follow them when written, and tokenizer.json's template otherwise.
  if (config.llama_class || config.add_bos_token.has_value() || config.add_eos_token.has_value()) {
    const bool add_bos = config.add_bos_token.value_or(config.llama_class);
    const bool add_eos = config.add_eos_token.value_or(false);
    if (add_bos && !impl->bos) throw FormatError("folder " + dir + ": add_bos_token is set but there is no bos_token");
    if (add_eos && !impl->eos) throw FormatError("folder " + dir + ": add_eos_token is set but there is no eos_token");
    if (add_bos) impl->prefix.push_back(*impl->bos);
    if (add_eos) impl->suffix.push_back(*impl->eos);
  } else {
    read_post_processor(root.value("post_processor", nlohmann::json()), where, impl->prefix, impl->suffix);
    // Every encode adds these ids: one the tokenizer does not know would reach
    // a model's embedding as an index past its table.
    for (const auto* ids : {&impl->prefix, &impl->suffix})
      for (const int64_t id : *ids) {
        const AddedToken* added = nullptr;
        if (impl->piece(id, &added) == nullptr)
          throw FormatError(where + ": post_processor adds token id " + std::to_string(id) +
                            ", which is neither in the vocabulary nor an added token");
      }
  }
  return BpeTokenizer(std::move(impl));
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  require_valid_utf8(text, "text to encode");
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = impl_->prefix;
  for (const TextSegment& raw : impl_->raw_matcher->split(text)) {
    if (raw.id) {
      ids.push_back(*raw.id);
      continue;
    }
    const std::string normalized = impl_->normalizer ? impl_->normalizer->apply(raw.text) : raw.text;
    for (const TextSegment& seg : impl_->normalized_matcher->split(normalized)) {
      if (seg.id) {
        ids.push_back(*seg.id);
      } else {
        impl_->encode_text(seg.text, ids);
      }
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), impl_->suffix.begin(), impl_->suffix.end());
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (const int64_t id : ids) {
    const AddedToken* added = nullptr;
    const std::string* piece = impl_->piece(id, &added);
    if (!piece) throw InvalidArgumentError("token id " + std::to_string(id) + " is not in the vocabulary");
    if (skip_special_tokens && added && added->special) continue;
    pieces.push_back(*piece);
  }
  return impl_->decoder.decode(pieces);
}

std::string BpeTokenizer::token_text(int64_t id) const { return decode({id}); }

int64_t BpeTokenizer::token_id(const std::string& token) const {
  if (const auto id = impl_->find(token)) return *id;
  throw InvalidArgumentError("token '" + token + "' is neither in the vocabulary nor an added token");
}

std::optional<int64_t> BpeTokenizer::find_token(const std::string& token) const { return impl_->find(token); }
std::optional<int64_t> BpeTokenizer::bos_id() const { return impl_->bos; }
std::optional<int64_t> BpeTokenizer::eos_id() const { return impl_->eos; }
std::optional<int64_t> BpeTokenizer::pad_id() const { return impl_->pad; }
std::optional<int64_t> BpeTokenizer::model_max_length() const { return impl_->max_length; }

int64_t BpeTokenizer::vocab_size() const {
  int64_t n = impl_->model.id_limit();
  for (const AddedToken& t : impl_->added) n = std::max(n, t.id + 1);
  return n;
}

}  // namespace kvs::text
