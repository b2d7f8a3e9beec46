#include "engine/training/world_dataset.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/world/scene_world.h"

namespace kvs::training {
namespace {

const ModuleLog& log() {
  static const ModuleLog logger = module_logger("train");
  return logger;
}

void render_into(const WorldItem& item, int size_px, uint8_t* dst) {
  const RgbImage img = world::render_scene(static_cast<int>(item.class_id), item.seed, size_px);
  if (img.width != size_px || img.height != size_px || img.pixels.size() != static_cast<size_t>(size_px) * size_px * 3)
    throw InvalidArgumentError("world: scene " + std::to_string(item.class_id) + " rendered at the wrong size");
  std::memcpy(dst, img.pixels.data(), img.pixels.size());
}

}  // namespace

std::vector<WorldItem> world_items(WorldSplit split, int64_t per_class, int64_t num_classes, uint64_t first_index) {
  const uint64_t base = (split == WorldSplit::HeldOut ? kHeldOutSeedBase : 0) + first_index;
  if (first_index + static_cast<uint64_t>(per_class) > kHeldOutSeedBase)
    throw InvalidArgumentError("world data set: seed range exceeds its split");
  std::vector<WorldItem> items;
  items.reserve(static_cast<size_t>(per_class * num_classes));
  for (int64_t i = 0; i < per_class; ++i)
    for (int64_t c = 0; c < num_classes; ++c) items.push_back({c, base + static_cast<uint64_t>(i)});
  return items;
}

std::string seed_range_text(uint64_t first, uint64_t end) {
  std::string s = "[";
  s += std::to_string(first);
  s += ", ";
  s += std::to_string(end);
  s += ")";
  return s;
}

int64_t world_class_count() { return static_cast<int64_t>(world::scene_classes().size()); }

std::vector<std::string> world_class_names() {
  std::vector<std::string> names;
  for (const auto& c : world::scene_classes()) names.push_back(c.name);
  return names;
}

WorldImageSet WorldImageSet::render(std::vector<WorldItem> items, int size_px, int threads) {
  WorldImageSet set;
  set.items_ = std::move(items);
  set.size_px_ = size_px;
  const int64_t n = set.size();
  const int64_t bytes = static_cast<int64_t>(size_px) * size_px * 3;
  set.pixels_ = at::empty({n, size_px, size_px, 3}, at::TensorOptions().dtype(at::kByte));
  uint8_t* base = set.pixels_.data_ptr<uint8_t>();
  const int workers = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(n, 1)));
  if (workers == 1) {
    for (int64_t i = 0; i < n; ++i) render_into(set.items_[i], size_px, base + i * bytes);
    return set;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(workers);
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      try {
        for (int64_t i = w; i < n; i += workers) render_into(set.items_[i], size_px, base + i * bytes);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  }
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return set;
}

WorldImageSet WorldImageSet::render_cached(std::vector<WorldItem> items, int size_px, const std::string& cache_path,
                                           int threads) {
  std::error_code ec;
  if (std::filesystem::exists(cache_path, ec)) {
    try {
      auto reader = io::SafetensorsReader::open(cache_path);
      at::Tensor classes = reader->tensor("classes"), seeds = reader->tensor("seeds");
      at::Tensor pixels = reader->tensor("pixels");
      bool same = classes.numel() == static_cast<int64_t>(items.size()) &&
                  pixels.sizes() == at::IntArrayRef({static_cast<int64_t>(items.size()), size_px, size_px, 3});
      for (size_t i = 0; same && i < items.size(); ++i)
        same = classes.data_ptr<int64_t>()[i] == items[i].class_id &&
               static_cast<uint64_t>(seeds.data_ptr<int64_t>()[i]) == items[i].seed;
      if (same && !items.empty()) {
        // The world may have changed since the cache was written: re-render a sample.
        const int64_t bytes = static_cast<int64_t>(size_px) * size_px * 3;
        std::vector<uint8_t> probe(static_cast<size_t>(bytes));
        const size_t stride = std::max<size_t>(1, items.size() / 7);
        for (size_t i = 0; same && i < items.size(); i += stride) {
          render_into(items[i], size_px, probe.data());
          same = std::memcmp(probe.data(), pixels.data_ptr<uint8_t>() + static_cast<int64_t>(i) * bytes, bytes) == 0;
        }
      }
      if (same) {
        WorldImageSet set;
        set.items_ = std::move(items);
        set.size_px_ = size_px;
        set.pixels_ = pixels.clone();
        log().info("world images: " + std::to_string(set.size()) + " from cache " + cache_path);
        return set;
      }
      log().info("world images: cache " + cache_path + " is stale, rendering again");
    } catch (const Error& e) {
      log().warn("world images: ignoring unreadable cache " + cache_path + " (" + e.what() + ")");
    }
  }
  WorldImageSet set = render(std::move(items), size_px, threads);
  std::vector<int64_t> classes, seeds;
  for (const auto& it : set.items_) {
    classes.push_back(it.class_id);
    seeds.push_back(static_cast<int64_t>(it.seed));
  }
  const auto i64 = at::TensorOptions().dtype(at::kLong);
  std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path(), ec);
  io::write_safetensors(cache_path, {{"pixels", set.pixels_},
                                     {"classes", at::tensor(classes, i64)},
                                     {"seeds", at::tensor(seeds, i64)}});
  return set;
}

WorldImageSet WorldImageSet::mirrored() const {
  WorldImageSet set;
  set.items_ = items_;
  set.size_px_ = size_px_;
  set.pixels_ = pixels_.flip({2}).contiguous();  // [N, H, W, 3]: W is dimension 2
  return set;
}

at::Tensor WorldImageSet::labels() const {
  std::vector<int64_t> labels;
  labels.reserve(items_.size());
  for (const auto& it : items_) labels.push_back(it.class_id);
  return at::tensor(labels, at::TensorOptions().dtype(at::kLong));
}

at::Tensor WorldImageSet::batch(const at::Tensor& indices, at::Device device, const at::Tensor& flip) const {
  at::Tensor x = u8_images_to_input(pixels_.index_select(0, indices.to(at::kCPU, at::kLong)), device);
  if (flip.defined()) {
    at::Tensor f = flip.to(device, at::kBool).view({-1, 1, 1, 1});
    x = at::where(f, x.flip({3}), x);
  }
  return x;
}

}  // namespace kvs::training
