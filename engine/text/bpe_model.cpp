#include "engine/text/bpe_model.h"

#include <cstdio>
#include <queue>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/json_fields.h"
#include "engine/text/utf8.h"

namespace kvs::text {
namespace {

// Bounds the cache's memory on long inputs; a piece past the limit is merged
// again next time, which changes nothing but speed.
constexpr size_t kCacheEntries = 10000;
constexpr size_t kCachedPieceBytes = 256;
// Ids index a table: a bound keeps a corrupt file from asking for gigabytes.
constexpr int64_t kMaxId = int64_t{1} << 24;

uint64_t pair_key(int64_t left, int64_t right) {
  return (static_cast<uint64_t>(left) << 32) | static_cast<uint64_t>(right);
}

std::pair<std::string, std::string> merge_sides(const nlohmann::json& m, size_t index, const std::string& where) {
  const std::string here = where + ": merge " + std::to_string(index);
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      throw FormatError(here + " '" + s + "' is not two pieces separated by one space");
    }
    return {s.substr(0, space), s.substr(space + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  }
  throw FormatError(here + " must be a string \"a b\" or a pair [\"a\", \"b\"]");
}

}  // namespace

BpeModel::BpeModel(BpeModel&& other) noexcept
    : vocab_(std::move(other.vocab_)),
      pieces_(std::move(other.pieces_)),
      has_piece_(std::move(other.has_piece_)),
      merges_(std::move(other.merges_)),
      unk_id_(other.unk_id_),
      fuse_unk_(other.fuse_unk_),
      byte_fallback_(other.byte_fallback_),
      ignore_merges_(other.ignore_merges_) {}

BpeModel BpeModel::from_json(const nlohmann::json& model, const std::string& where) {
  const std::string type = model.is_object() && model.contains("type") ? json_string(model, "type", where + ": model")
                                                                       : std::string("BPE");
  if (type != "BPE") throw FormatError(where + ": model type '" + type + "' is not supported (only BPE)");
  const std::string here = where + ": model";

  BpeModel m;
  for (const auto& [piece, id] : json_object(model, "vocab", here).items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxId) {
      throw FormatError(here + ": vocab entry '" + piece + "' must have an integer id in [0, " +
                        std::to_string(kMaxId) + ")");
    }
    const int64_t i = id.get<int64_t>();
    m.vocab_[piece] = i;
    if (static_cast<size_t>(i) >= m.pieces_.size()) {
      m.pieces_.resize(i + 1);
      m.has_piece_.resize(i + 1, false);
    }
    m.pieces_[i] = piece;
    m.has_piece_[i] = true;
  }

  const nlohmann::json& merges = json_array(model, "merges", here);
  for (size_t r = 0; r < merges.size(); ++r) {
    // Named copies rather than structured bindings: lambdas may not capture
    // those before clang 16.
    const auto sides = merge_sides(merges[r], r, here);
    const std::string& left = sides.first;
    const std::string& right = sides.second;
    const auto find_side = [&](const std::string& piece) {
      const auto it = m.vocab_.find(piece);
      if (it == m.vocab_.end()) {
        throw FormatError(here + ": merge " + std::to_string(r) + " '" + left + " " + right + "' names '" + piece +
                          "', which is not in the vocabulary");
      }
      return it->second;
    };
    const int64_t l = find_side(left), rt = find_side(right), merged = find_side(left + right);
    // A pair listed again takes the rank of its later listing: the library
    // inserts the merges into its table in order, each one overwriting the last.
    m.merges_.insert_or_assign(pair_key(l, rt), Merge{static_cast<int32_t>(r), merged});
  }

  if (model.contains("unk_token") && !model["unk_token"].is_null()) {
    const std::string unk = json_string(model, "unk_token", here);
    const auto it = m.vocab_.find(unk);
    if (it == m.vocab_.end()) throw FormatError(here + ": unk_token '" + unk + "' is not in the vocabulary");
    m.unk_id_ = it->second;
  }
  m.fuse_unk_ = json_bool(model, "fuse_unk", false, here);
  m.byte_fallback_ = json_bool(model, "byte_fallback", false, here);
  m.ignore_merges_ = json_bool(model, "ignore_merges", false, here);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && !model[key].is_null() && model[key] != "") {
      throw FormatError(here + ": " + key + " is not supported");
    }
  }
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0) {
    throw FormatError(here + ": dropout is not supported (it makes encoding random)");
  }
  return m;
}

std::optional<int64_t> BpeModel::find(const std::string& piece) const {
  const auto it = vocab_.find(piece);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::piece(int64_t id) const {
  if (id < 0 || id >= id_limit() || !has_piece_[id]) return nullptr;
  return &pieces_[id];
}

std::vector<int64_t> BpeModel::encode(const std::string& piece) const {
  if (piece.empty()) return {};
  if (ignore_merges_) {
    if (const auto id = find(piece)) return {*id};
  }
  const bool cacheable = piece.size() <= kCachedPieceBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    const auto it = cache_.find(piece);
    if (it != cache_.end()) return it->second;
  }
  std::vector<int64_t> ids = merge(piece);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kCacheEntries) cache_.emplace(piece, ids);
  }
  return ids;
}

std::vector<int64_t> BpeModel::merge(const std::string& piece) const {
  // The starting symbols: one per character; a character missing from the
  // vocabulary becomes its <0xXX> byte pieces (byte_fallback), else the unknown
  // piece (consecutive ones fused with fuse_unk), else it is dropped.
  struct Symbol {
    int64_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  bool last_was_unk = false;
  const auto push = [&](int64_t id) {
    const int n = static_cast<int>(symbols.size());
    symbols.push_back({id, n - 1, n + 1, true});
  };
  for (size_t pos = 0; pos < piece.size();) {
    const size_t len = decode_code_point(piece, pos).length;
    const std::string ch = piece.substr(pos, len);
    pos += len;
    if (const auto id = find(ch)) {
      push(*id);
      last_was_unk = false;
      continue;
    }
    if (byte_fallback_) {
      std::vector<int64_t> bytes;
      for (const char c : ch) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(c));
        if (const auto id = find(name)) bytes.push_back(*id);
      }
      if (bytes.size() == ch.size()) {
        for (const int64_t id : bytes) push(id);
        last_was_unk = false;
        continue;
      }
    }
    if (unk_id_) {
      if (!(fuse_unk_ && last_was_unk)) push(*unk_id_);
      last_was_unk = true;
    }
  }
  if (symbols.empty()) return {};
  symbols.back().next = -1;

  struct Candidate {
    int32_t rank;
    int pos;
    int64_t merged_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](int left) {
    if (left < 0) return;
    const int right = symbols[left].next;
    if (right < 0) return;
    const auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.merged_id});
  };
  for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.pos];
    if (!left.alive || left.next < 0) continue;
    // Stale entry: one of the two symbols has merged with another since.
    const auto it = merges_.find(pair_key(left.id, symbols[left.next].id));
    if (it == merges_.end() || it->second.merged_id != c.merged_id) continue;
    Symbol& right = symbols[left.next];
    right.alive = false;
    left.id = c.merged_id;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.pos;
    consider(left.prev);
    consider(c.pos);
  }

  std::vector<int64_t> ids;
  for (int i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
  return ids;
}

}  // namespace kvs::text
