#include "engine/models/lumina/image_vocabulary.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <vector>

#include "engine/core/errors.h"
#include "engine/text/bpe_tokenizer.h"

namespace kvs::lumina {

int64_t image_code_of_name(const std::string& name) {
  const std::string prefix = "IMGIMG";
  if (name.size() < prefix.size() + 2 || name.compare(0, prefix.size(), prefix) != 0 || name.back() != 'Z') return -1;
  int64_t code = 0;
  for (size_t i = prefix.size(); i + 1 < name.size(); ++i) {
    const char c = name[i];
    if (c < 'A' || c > 'J') return -1;
    code = code * 10 + (c - 'A');
  }
  return code;
}

std::string image_name_of_code(int64_t code) {
  const std::string digits = std::to_string(code);
  std::string name = "IMGIMG";
  for (char d : digits) name += static_cast<char>('A' + (d - '0'));
  return name + "Z";
}

ImageVocabulary ImageVocabulary::from_tokenizer(const text::BpeTokenizer& tokenizer, const LuminaTokenIds& ids,
                                                int64_t codebook_size) {
  auto name_of = [&](int64_t id) -> std::string {
    try {
      return tokenizer.token_text(id);
    } catch (const Error&) {
      throw ModelMismatchError("the tokenizer has no token " + std::to_string(id) +
                               " (Chameleon's vocabulary puts its image and layout tokens at ids 0..8831)");
    }
  };
  auto require_name = [&](int64_t id, const std::string& expected) {
    const std::string name = name_of(id);
    if (name != expected)
      throw ModelMismatchError("the tokenizer's token " + std::to_string(id) + " is '" + name +
                               "', where Chameleon's "
                               "vocabulary has " +
                               expected + " (not a Lumina-mGPT / Chameleon tokenizer?)");
  };
  require_name(ids.bos, "<s>");
  require_name(ids.end_of_image, "<eoss>");
  require_name(ids.begin_of_image, "<racm3:break>");
  require_name(ids.separator, "<reserved08706>");
  require_name(ids.end_of_line, "<reserved08799>");
  require_name(ids.grid_base, "<reserved08800>");

  ImageVocabulary v;
  v.first_image_ = ids.first_image;
  std::vector<int64_t> code_of_slot(static_cast<size_t>(codebook_size), -1);
  std::vector<int64_t> id_of_code(static_cast<size_t>(codebook_size), -1);
  for (int64_t slot = 0; slot < codebook_size; ++slot) {
    const int64_t id = ids.first_image + slot;
    const std::string name = name_of(id);
    const int64_t code = image_code_of_name(name);
    if (code < 0 || code >= codebook_size)
      throw ModelMismatchError("the tokenizer's token " + std::to_string(id) + " is '" + name +
                               "', not an image token IMGIMG<code>Z with a code below " +
                               std::to_string(codebook_size));
    if (id_of_code[static_cast<size_t>(code)] >= 0)
      throw ModelMismatchError("the tokenizer names image code " + std::to_string(code) + " twice (ids " +
                               std::to_string(id_of_code[static_cast<size_t>(code)]) + " and " + std::to_string(id) +
                               ")");
    id_of_code[static_cast<size_t>(code)] = id;
    code_of_slot[static_cast<size_t>(slot)] = code;
  }
  v.code_of_slot_ = at::tensor(code_of_slot, at::TensorOptions().dtype(at::kLong));
  v.id_of_code_ = at::tensor(id_of_code, at::TensorOptions().dtype(at::kLong));
  return v;
}

at::Tensor ImageVocabulary::codes_of(const at::Tensor& ids) const {
  const at::Tensor slot = ids.to(at::kCPU, at::kLong) - first_image_;
  if (slot.numel() > 0 && (slot.min().item<int64_t>() < 0 || slot.max().item<int64_t>() >= code_of_slot_.size(0)))
    throw InvalidArgumentError("an id handed to the VQGAN is not an image token");
  return code_of_slot_.index_select(0, slot.reshape({-1})).view(ids.sizes());
}

at::Tensor ImageVocabulary::ids_of(const at::Tensor& codes) const {
  const at::Tensor c = codes.to(at::kCPU, at::kLong);
  if (c.numel() > 0 && (c.min().item<int64_t>() < 0 || c.max().item<int64_t>() >= id_of_code_.size(0)))
    throw InvalidArgumentError("a VQ code is outside the codebook");
  return id_of_code_.index_select(0, c.reshape({-1})).view(codes.sizes());
}

}  // namespace kvs::lumina
