#pragma once
// The tokenizer.json "model" of type BPE: a vocabulary of pieces and a ranked
// list of merges. A pre-token is spelled as single characters, then the
// adjacent pair with the lowest merge rank (the leftmost among equals) is merged
// until no ranked pair is left. A merge's rank is its index in the list; a pair
// listed twice has the rank of its last listing, as in the library. Results are
// cached per pre-token behind a mutex, so one model serves concurrent encodes.
// Torch-free.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvs::text {

class BpeModel {
 public:
  // Reads {"type": "BPE", "vocab": {...}, "merges": [...], ...}. Merges may be
  // "a b" strings or ["a", "b"] pairs. Throws FormatError "<where>: ..." for an
  // unknown model type, a merge naming a piece missing from the vocabulary,
  // and options that would change the ids but are not supported
  // (continuing_subword_prefix, end_of_word_suffix, dropout).
  static BpeModel from_json(const nlohmann::json& model, const std::string& where);

  BpeModel(BpeModel&& other) noexcept;

  // The ids of one pre-token (already in the vocabulary's alphabet).
  std::vector<int64_t> encode(const std::string& piece) const;

  std::optional<int64_t> find(const std::string& piece) const;
  const std::string* piece(int64_t id) const;
  // Highest id + 1.
  int64_t id_limit() const { return static_cast<int64_t>(pieces_.size()); }

 private:
  BpeModel() = default;
  std::vector<int64_t> merge(const std::string& piece) const;

  struct Merge {
    int32_t rank;
    int64_t merged_id;
  };
  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> pieces_;  // by id; ids without a piece are empty
  std::vector<bool> has_piece_;
  std::unordered_map<uint64_t, Merge> merges_;  // key: left id << 32 | right id
  std::optional<int64_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

}  // namespace kvs::text
