#include "engine/training/mar/mar_latents.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/metrics/image_tensors.h"
#include "engine/training/mar/kl_vae_model.h"

namespace kvs::training {

LatentSet encode_latents(const KlVaeModel& vae, const WorldImageSet& images, bool with_flips, int64_t batch_size) {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> moments, flipped;
  const int64_t n = images.size();
  for (int64_t i = 0; i < n; i += batch_size) {
    const int64_t len = std::min(batch_size, n - i);
    at::Tensor x = u8_images_to_input(images.pixels().narrow(0, i, len), vae.device());
    moments.push_back(vae.encode_moments(x).to(at::kCPU));
    if (with_flips) flipped.push_back(vae.encode_moments(x.flip({3})).to(at::kCPU));
  }
  LatentSet set;
  if (n == 0) throw InvalidArgumentError("MAR latents: no images to encode");
  set.moments = at::cat(moments);
  if (with_flips) set.moments_flip = at::cat(flipped);
  set.labels = images.labels();
  return set;
}

LatentSet encode_latents_cached(const KlVaeModel& vae, const WorldImageSet& images, bool with_flips,
                                const std::string& cache_path, const std::string& vae_id, int64_t batch_size) {
  const ModuleLog log = module_logger("train");
  std::error_code ec;
  const std::string images_id = std::to_string(images.size()) + "x" + std::to_string(images.image_size()) + ":" +
                                (images.size() ? std::to_string(images.items().back().seed) : "") +
                                (with_flips ? "+flips" : "");
  if (std::filesystem::exists(cache_path, ec)) {
    try {
      auto reader = io::SafetensorsReader::open(cache_path);
      const auto& meta = reader->index().metadata;
      auto vae_it = meta.find("vae"), img = meta.find("images");
      if (vae_it != meta.end() && vae_it->second == vae_id && img != meta.end() && img->second == images_id) {
        LatentSet set;
        set.moments = reader->tensor("moments").to(at::kFloat);
        if (with_flips) set.moments_flip = reader->tensor("moments_flip").to(at::kFloat);
        set.labels = reader->tensor("labels").to(at::kLong);
        if (set.labels.equal(images.labels())) {
          log.info("latents: " + std::to_string(set.size()) + " images from cache " + cache_path);
          return set;
        }
      }
    } catch (const Error& e) {
      log.warn("latents: ignoring unreadable cache " + cache_path + " (" + e.what() + ")");
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  LatentSet set = encode_latents(vae, images, with_flips, batch_size);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log.info("latents: encoded " + std::to_string(set.size()) + " images" + (with_flips ? " and their mirrors" : "") +
           " in " + std::to_string(s) + " s");
  std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path(), ec);
  io::NamedTensors tensors = {{"moments", set.moments}, {"labels", set.labels}};
  if (with_flips) tensors.emplace_back("moments_flip", set.moments_flip);
  io::write_safetensors(cache_path, tensors, {{"vae", vae_id}, {"images", images_id}});
  return set;
}

double measured_latent_scale(const at::Tensor& moments) {
  auto parts = moments.to(at::kDouble).chunk(2, 1);
  const at::Tensor mean = parts[0], logvar = parts[1].clamp(-30.0, 20.0);
  const double variance = mean.var(/*unbiased=*/false).item<double>() + at::exp(logvar).mean().item<double>();
  if (!(variance > 0) || !std::isfinite(variance))
    throw InvalidArgumentError("MAR latents: the VAE's latents have variance " + std::to_string(variance) +
                               "; cannot derive a latent scale (is the VAE trained?)");
  return 1.0 / std::sqrt(variance);
}

}  // namespace kvs::training
