#pragma once
// A SentencePiece unigram model trained the way T5's was set up (pad 0, eos 1,
// unk 2, no bos, the nmt_nfkc normaliser), for bundles that need a tokenizer of
// that kind and cannot download one: create-random's Infinity bundles. Torch-free.
#include <string>
#include <vector>

namespace kvs::text {

// Trains on `sentences` (one thread, so the same sentences give the same model)
// with at most `vocab_size` pieces (fewer when the text has fewer) and returns
// the model file's bytes (spiece.model). InvalidArgumentError when training fails.
std::string train_t5_sentencepiece(const std::vector<std::string>& sentences, int vocab_size);

// A few hundred words of plain English captions to train a small tokenizer on.
const std::vector<std::string>& caption_corpus();

}  // namespace kvs::text
