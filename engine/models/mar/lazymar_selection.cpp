#include "engine/models/mar/lazymar_selection.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <limits>

#include "engine/core/errors.h"

namespace kvs {

const std::vector<std::string>& lazymar_selection_names() {
  static const std::vector<std::string> names = {"max_similarity", "min_similarity", "random", "predicted",
                                                 "unpredicted"};
  return names;
}

LazyMarSelection lazymar_selection_named(const std::string& name) {
  const auto& names = lazymar_selection_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<LazyMarSelection>(i);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw InvalidArgumentError("policy lazymar: parameter selection must be one of " + list + ", got '" + name + "'");
}

bool lazymar_selection_uses_ratio(LazyMarSelection selection) {
  return selection != LazyMarSelection::Predicted && selection != LazyMarSelection::Unpredicted;
}

at::Tensor select_recomputed_tokens(LazyMarSelection selection, const LazyMarStepTokens& tokens, int64_t count,
                                    at::Generator& generator) {
  const at::Tensor& forced = tokens.forced;
  const int64_t rows = forced.size(0), positions = forced.size(1);
  if (selection == LazyMarSelection::Unpredicted) return forced | ~tokens.unknown;  // caches unknown, unforced tokens
  if (selection == LazyMarSelection::Predicted) {
    // Caches the tokens predicted before the previous step: every other position is recomputed.
    at::Tensor is_buffer = at::zeros({rows, positions}, forced.options());
    is_buffer.narrow(1, 0, tokens.buffer).fill_(true);
    return forced | tokens.unknown | is_buffer;
  }
  if (count >= positions) return at::ones({rows, positions}, forced.options());
  // Recompute the lowest-ranked: least similar (V), most similar (IV) or random (III).
  at::Tensor score;
  if (selection == LazyMarSelection::MaxSimilarity) score = tokens.similarity;
  else if (selection == LazyMarSelection::MinSimilarity) score = -tokens.similarity;
  else score = at::rand({rows, positions}, generator, at::kFloat).to(tokens.similarity.device());
  const at::Tensor ranked = score.masked_fill(forced, -std::numeric_limits<float>::infinity());
  const at::Tensor order = std::get<1>(ranked.sort(/*stable=*/true, /*dim=*/1, /*descending=*/false));
  at::Tensor selected = at::zeros({rows, positions}, forced.options());
  selected.scatter_(1, order.narrow(1, 0, count), true);
  return selected;
}

}  // namespace kvs
