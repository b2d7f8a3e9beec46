#pragma once
// LazyMAR's token selection at a lazy step (§3.2.1 "Token Selection for Caching"):
// which positions the decoder recomputes from the similarity block on
// (I_compute); the others reuse their cached features. The five strategies are
// those of the ablation in §4.4 (Table 3, "Token Selection Strategies"); the
// paper's method is V, the default:
//   I   unpredicted:    the unpredicted tokens are cached;
//   II  predicted:      only the predicted tokens are cached;
//   III random:         random tokens are cached (Figure 6's "Random Cache" when
//                       the count comes from a constant ratio);
//   IV  min_similarity: the tokens of least value similarity are cached;
//   V   max_similarity: the tokens of greatest value similarity are cached.
// Choices where the paper is silent:
// - every strategy recomputes the forced tokens (predicted at this step and at the
//   previous one), as the pipeline does: the paper's token types 2 and 3, whose
//   caching it rules out before comparing strategies;
// - III, IV and V recompute the same number of tokens, the retention ratio's
//   count (the paper's Table 3 gives the three the same FLOPs); the forced tokens
//   are kept out of the ranking;
// - I and II recompute what their token type leaves, whatever the ratio: I the
//   buffer, the tokens predicted at earlier steps and the forced ones; II the
//   buffer, the unpredicted tokens and the forced ones. The buffer (the class
//   positions) is neither predicted nor unpredicted, so neither caches it;
// - III draws uniform scores per row and step from a generator seeded by the
//   request's seed (reproducible).
// Every row recomputes the same number of positions (MAR masks as many tokens in
// every image at a step), which the packed decoder batch relies on.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kvs {

enum class LazyMarSelection { MaxSimilarity, MinSimilarity, Random, Predicted, Unpredicted };

// The spec's names ("max_similarity", ...), in the order the registry lists them.
const std::vector<std::string>& lazymar_selection_names();
LazyMarSelection lazymar_selection_named(const std::string& name);  // throws InvalidArgumentError
// Whether the strategy recomputes the retention ratio's count (III, IV, V) rather
// than what a token type leaves (I, II).
bool lazymar_selection_uses_ratio(LazyMarSelection selection);

// One lazy step's positions (buffer first), over the cached rows, [rows, positions].
struct LazyMarStepTokens {
  int64_t buffer = 0;     // the leading buffer (class) positions
  at::Tensor similarity;  // float: S(x_i), cosine of block s's values with the previous step's
  at::Tensor forced;      // bool: predicted at this step or at the previous one (never the buffer)
  at::Tensor unknown;     // bool: not predicted before this step (never the buffer)
};

// I_compute, bool [rows, positions] on the similarity's device. `count` (forced
// included) applies to the ratio strategies; `generator` (CPU) serves random.
at::Tensor select_recomputed_tokens(LazyMarSelection selection, const LazyMarStepTokens& tokens, int64_t count,
                                    at::Generator& generator);

}  // namespace kvs
