#pragma once
// The entries gallery_writer adds, the n-th one built from n alone, so that the
// kill test can tell a complete row from a damaged one field by field. The
// prompt and request are long enough that a row spans several database pages
// (a torn write would show as a half-written row).
#include <cstdint>
#include <string>

#include "engine/gallery/gallery_entry.h"

namespace kvs::test {

inline GalleryEntry gallery_writer_entry(int64_t n) {
  const std::string tag = std::to_string(n);
  GalleryEntry e;
  e.created = "2026-01-01T00:00:00Z";
  e.png_path = "/gallery-writer/" + tag + ".png";
  e.model_name = "writer-model-" + std::to_string(n % 3);
  e.model_dir = "/models/writer";
  e.family = "llamagen";
  e.prompt = "entry " + tag + " " + std::string(3000 + static_cast<size_t>(n % 97), static_cast<char>('a' + n % 26));
  e.class_id = -1;
  e.seed = static_cast<uint64_t>(n);
  e.policy = "linear:rho=1/" + std::to_string(2 + n % 5);
  e.cfg_scale = 4;
  e.temperature = 1;
  e.top_k = n % 10;
  e.top_p = 1;
  e.width = 64;
  e.height = 64;
  e.tokens_per_second = static_cast<double>(n) / 4;
  e.elapsed_ms = static_cast<double>(n) * 2;
  e.kv_bytes_full = n * 1000;
  e.kv_bytes_peak = n * 700;
  e.kv_bytes_logical_final = n * 500;
  e.request_json = "{\"seed\":" + tag + ",\"pad\":\"" + std::string(2000, 'r') + "\"}";
  e.source = "writer";
  return e;
}

}  // namespace kvs::test
