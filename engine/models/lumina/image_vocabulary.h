#pragma once
// Chameleon's image tokens in its text vocabulary (chameleon_vae_ori/vocab.py
// VocabTranslation): ids 4..8195 are named "IMGIMG" + the VQ code's decimal
// digits written with the letters A..J (A = 0) + "Z". The id of a code is read
// from those names, never computed as an offset: a tokenizer is free to order
// them (the conformance cases shuffle them on purpose). Also checks that the
// layout tokens the generation loop writes carry their Chameleon names.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "engine/models/lumina/lumina_config.h"

namespace kvs::text {
class BpeTokenizer;
}

namespace kvs::lumina {

class ImageVocabulary {
 public:
  // ModelMismatchError naming the id when a name is not where Chameleon's layout
  // puts it, or when the 8192 image names are not the codes 0..8191 once each.
  static ImageVocabulary from_tokenizer(const text::BpeTokenizer& tokenizer, const LuminaTokenIds& ids,
                                        int64_t codebook_size);

  // Image-token ids (any shape, int64) -> VQ codes; InvalidArgumentError when an
  // id is not an image token.
  at::Tensor codes_of(const at::Tensor& ids) const;
  // VQ codes -> image-token ids.
  at::Tensor ids_of(const at::Tensor& codes) const;

 private:
  int64_t first_image_ = 4;
  at::Tensor code_of_slot_;  // [8192] int64: code of id first_image + i
  at::Tensor id_of_code_;    // [8192] int64
};

// "IMGIMGBCZ" -> 12; -1 when `name` is not an image-token name.
int64_t image_code_of_name(const std::string& name);
// 12 -> "IMGIMGBCZ".
std::string image_name_of_code(int64_t code);

}  // namespace kvs::lumina
