#include "engine/models/janus/janus_tokenizer_files.h"

#include "engine/text/byte_level.h"

namespace kvs::janus {

std::vector<std::string> janus_special_tokens() {
  return {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<|User|>",      "<|Assistant|>", "<｜▁pad▁｜>",
          "<image_placeholder>",     "<begin_of_image>",      "<end_of_image>"};
}

text::TokenizerFileOptions janus_tokenizer_file_options() {
  text::TokenizerFileOptions o;
  o.special_tokens = janus_special_tokens();
  o.bos_token = o.special_tokens[0];
  o.eos_token = o.special_tokens[1];
  o.pad_token = o.special_tokens[4];
  o.add_bos_token = true;
  o.model_max_length = 16384;
  return o;
}

int64_t write_byte_level_tokenizer(const std::string& dir) {
  text::TrainedBpe bytes;
  for (int b = 0; b < 256; ++b) bytes.vocab.push_back(text::bytes_to_byte_level(std::string(1, static_cast<char>(b))));
  return text::write_bpe_tokenizer_files(dir, bytes, janus_tokenizer_file_options());
}

}  // namespace kvs::janus
