#include "engine/training/token_dataset.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/metrics/image_tensors.h"

namespace kvs::training {

TokenSet tokenize_images(const ImageTokenizer& tokenizer, const WorldImageSet& images, int64_t batch_size) {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> codes;
  const int64_t n = images.size();
  for (int64_t i = 0; i < n; i += batch_size) {
    const int64_t len = std::min(batch_size, n - i);
    codes.push_back(
        tokenizer.encode(u8_images_to_input(images.pixels().narrow(0, i, len), tokenizer.device)).to(at::kCPU));
  }
  TokenSet set;
  set.codes = codes.empty() ? at::empty({0, 0}, at::TensorOptions().dtype(at::kLong)) : at::cat(codes);
  set.labels = images.labels();
  return set;
}

TokenSet tokenize_images_cached(const ImageTokenizer& tokenizer, const WorldImageSet& images,
                                const std::string& cache_path, const std::string& tokenizer_id, int64_t batch_size) {
  const ModuleLog log = module_logger("train");
  std::error_code ec;
  const std::string images_id = std::to_string(images.size()) + "x" + std::to_string(images.image_size()) + ":" +
                                (images.size() ? std::to_string(images.items().back().seed) : "");
  if (std::filesystem::exists(cache_path, ec)) {
    try {
      auto reader = io::SafetensorsReader::open(cache_path);
      const auto& meta = reader->index().metadata;
      auto tok = meta.find("tokenizer"), img = meta.find("images");
      if (tok != meta.end() && tok->second == tokenizer_id && img != meta.end() && img->second == images_id) {
        TokenSet set;
        set.codes = reader->tensor("codes").to(at::kLong);
        set.labels = reader->tensor("labels").to(at::kLong);
        if (set.labels.equal(images.labels())) {
          log.info("tokens: " + std::to_string(set.size()) + " sequences from cache " + cache_path);
          return set;
        }
      }
    } catch (const Error& e) {
      log.warn("tokens: ignoring unreadable cache " + cache_path + " (" + e.what() + ")");
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  TokenSet set = tokenize_images(tokenizer, images, batch_size);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log.info("tokens: encoded " + std::to_string(set.size()) + " images in " + std::to_string(s) + " s");
  std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path(), ec);
  io::write_safetensors(cache_path, {{"codes", set.codes.to(at::kInt)}, {"labels", set.labels}},
                        {{"tokenizer", tokenizer_id}, {"images", images_id}});
  return set;
}

}  // namespace kvs::training
