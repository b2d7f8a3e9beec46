// Corner cases where the Hugging Face `tokenizers` library's behaviour is easy
// to get subtly wrong, on the floor's own classes. Every expected value here was
// checked against the library (tokenizers 0.23: Tokenizer.from_str);
// make_tokenizer_fixture.py's duplicate_merges variant checks the same case on a
// full tokenizer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/bpe_model.h"

namespace {

using kvs::text::BpeModel;

BpeModel abc_model(const nlohmann::json& merges) {
  return BpeModel::from_json(
      {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}}}, {"merges", merges}}, "test");
}

// The library builds its merge table by inserting every listed merge in order,
// so a pair listed twice has the rank of its last listing. "b c" first and again
// after "a b" therefore ranks below "a b": "abc" is ab + c, not a + bc.
TEST(BpeModelSemantics, APairListedTwiceHasTheRankOfItsLastListing) {
  EXPECT_EQ(abc_model({"b c", "a b"}).encode("abc"), (std::vector<int64_t>{0, 4})) << "a + bc";
  EXPECT_EQ(abc_model({"b c", "a b", "b c"}).encode("abc"), (std::vector<int64_t>{3, 2})) << "ab + c";
  EXPECT_EQ(abc_model(nlohmann::json::array({{"b", "c"}, {"a", "b"}, {"b", "c"}})).encode("abc"),
            (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(abc_model({"a b", "b c", "a b"}).encode("abc"), (std::vector<int64_t>{0, 4})) << "a + bc";
}

}  // namespace
