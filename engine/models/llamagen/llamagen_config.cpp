#include "engine/models/llamagen/llamagen_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "engine/core/errors.h"

namespace kvs::llamagen {
namespace {

int64_t find_multiple(int64_t n, int64_t k) { return n % k == 0 ? n : n + k - (n % k); }

void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgumentError(message);
}

// Fields that upstream's ModelArgs carries but that do not change inference.
const std::set<std::string> kIgnoredGptFields = {"initializer_range", "token_dropout_p", "attn_dropout_p",
                                                 "resid_dropout_p",   "ffn_dropout_p",   "drop_path_rate",
                                                 "caption_dim",       "max_batch_size",  "max_seq_len"};

}  // namespace

int64_t GptConfig::ffn_hidden_dim() const {
  int64_t hidden = 4 * dim;
  hidden = static_cast<int64_t>(2 * hidden / 3.0);
  if (ffn_dim_multiplier) hidden = static_cast<int64_t>(*ffn_dim_multiplier * hidden);
  return find_multiple(hidden, multiple_of);
}

int64_t GptConfig::grid_size() const {
  return static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(block_size))));
}

int64_t GptConfig::parameter_count() const {
  const int64_t kv = kv_heads() * head_dim();
  const int64_t per_layer = dim * (dim + 2 * kv) + dim * dim + 3 * dim * ffn_hidden_dim() + 2 * dim;
  return vocab_size * dim + label_rows() * dim + n_layer * per_layer + dim + dim * vocab_size;
}

void GptConfig::validate() const {
  require(dim > 0 && n_layer > 0 && n_head > 0, "gpt config: dim, n_layer and n_head must be positive");
  require(dim % n_head == 0,
          "gpt config: dim " + std::to_string(dim) + " is not divisible by n_head " + std::to_string(n_head));
  require(head_dim() % 4 == 0, "gpt config: head_dim " + std::to_string(head_dim()) +
                                   " must be a multiple of 4 (2-D RoPE splits it into row and column pairs)");
  require(kv_heads() > 0 && n_head % kv_heads() == 0, "gpt config: n_head " + std::to_string(n_head) +
                                                          " is not a multiple of n_kv_head " +
                                                          std::to_string(kv_heads()));
  require(vocab_size > 0 && num_classes > 0, "gpt config: vocab_size and num_classes must be positive");
  require(cls_token_num == 1, "gpt config: cls_token_num must be 1 for class-conditional (c2i) models");
  require(multiple_of > 0, "gpt config: multiple_of must be positive");
  require(block_size > 0 && grid_size() * grid_size() == block_size,
          "gpt config: block_size " + std::to_string(block_size) + " is not a square number of tokens");
  require(norm_eps > 0, "gpt config: norm_eps must be positive");
}

GptConfig gpt_preset(const std::string& name, int64_t image_size, int64_t downsample, int64_t num_classes,
                     int64_t vocab_size) {
  GptConfig c;
  struct Size {
    const char* name;
    int64_t n_layer, n_head, dim;
  };
  static const Size kSizes[] = {{"GPT-B", 12, 12, 768},    {"GPT-L", 24, 16, 1024},    {"GPT-XL", 36, 20, 1280},
                                {"GPT-XXL", 48, 24, 1536}, {"GPT-XXXL", 48, 40, 2560}, {"GPT-1B", 22, 32, 2048},
                                {"GPT-3B", 24, 32, 3200},  {"GPT-7B", 32, 32, 4096}};
  for (const auto& s : kSizes) {
    if (name == s.name) {
      c.n_layer = s.n_layer;
      c.n_head = s.n_head;
      c.dim = s.dim;
      require(image_size % downsample == 0, "image size must be a multiple of the tokenizer downsampling");
      const int64_t grid = image_size / downsample;
      c.block_size = grid * grid;
      c.num_classes = num_classes;
      c.vocab_size = vocab_size;
      return c;
    }
  }
  std::string known;
  for (const auto& s : kSizes) known += std::string(known.empty() ? "" : ", ") + s.name;
  throw InvalidArgumentError("unknown LlamaGen GPT size '" + name + "' (known: " + known + ")");
}

std::vector<std::string> gpt_preset_names() {
  return {"GPT-B", "GPT-L", "GPT-XL", "GPT-XXL", "GPT-XXXL", "GPT-1B", "GPT-3B", "GPT-7B"};
}

GptConfig gpt_config_from_json(const nlohmann::json& j) {
  require(j.is_object(), "gpt config must be a JSON object");
  GptConfig c;
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      if (k == "dim") c.dim = v.get<int64_t>();
      else if (k == "n_layer") c.n_layer = v.get<int64_t>();
      else if (k == "n_head") c.n_head = v.get<int64_t>();
      else if (k == "n_kv_head") c.n_kv_head = v.is_null() ? std::nullopt : std::optional<int64_t>(v.get<int64_t>());
      else if (k == "multiple_of") c.multiple_of = v.get<int64_t>();
      else if (k == "ffn_dim_multiplier")
        c.ffn_dim_multiplier = v.is_null() ? std::nullopt : std::optional<double>(v.get<double>());
      else if (k == "rope_base") c.rope_base = v.get<double>();
      else if (k == "norm_eps") c.norm_eps = v.get<double>();
      else if (k == "num_classes") c.num_classes = v.get<int64_t>();
      else if (k == "class_dropout_prob") c.class_dropout_prob = v.get<double>();
      else if (k == "vocab_size") c.vocab_size = v.get<int64_t>();
      else if (k == "cls_token_num") c.cls_token_num = v.get<int64_t>();
      else if (k == "block_size") c.block_size = v.get<int64_t>();
      else if (k == "model_type")
        require(v == "c2i", "gpt config: model_type '" + v.dump() + "' is not supported (only c2i)");
      else if (kIgnoredGptFields.count(k) == 0) throw InvalidArgumentError("gpt config: unknown field '" + k + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("gpt config: wrong value type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

nlohmann::json to_json(const GptConfig& c) {
  nlohmann::json j = {{"dim", c.dim},
                      {"n_layer", c.n_layer},
                      {"n_head", c.n_head},
                      {"n_kv_head", c.n_kv_head ? nlohmann::json(*c.n_kv_head) : nlohmann::json(nullptr)},
                      {"multiple_of", c.multiple_of},
                      {"ffn_dim_multiplier",
                       c.ffn_dim_multiplier ? nlohmann::json(*c.ffn_dim_multiplier) : nlohmann::json(nullptr)},
                      {"rope_base", c.rope_base},
                      {"norm_eps", c.norm_eps},
                      {"num_classes", c.num_classes},
                      {"class_dropout_prob", c.class_dropout_prob},
                      {"vocab_size", c.vocab_size},
                      {"cls_token_num", c.cls_token_num},
                      {"block_size", c.block_size},
                      {"model_type", "c2i"}};
  return j;
}

}  // namespace kvs::llamagen
