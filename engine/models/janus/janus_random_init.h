#pragma once
// Randomly initialised Janus-Pro bundles (`create-random --preset
// janus-pro-1b|janus-pro-7b|janus-pro-tiny`, `bench --random janus-pro-1b`): the
// official architectures without a download, for speed and memory runs, and a
// tiny one for tests. The tokenizer is the byte-level one of
// janus_tokenizer_files.h.
#include <cstdint>
#include <string>

#include "engine/models/janus/janus_config.h"

namespace kvs::janus {

// "janus-pro-tiny": hidden 128, 2 layers, 4 heads over 2 KV heads (grouped-query
// attention exercised), a 16x16 grid of 64 px from a 3-level VQ decoder.
JanusConfig tiny_janus_config();

// The config of a random preset: janus_preset() names or "janus-pro-tiny".
JanusConfig random_janus_config(const std::string& preset);

void write_random_janus_bundle(const std::string& dir, const std::string& name, const JanusConfig& config,
                               uint64_t seed, const std::string& weights_dtype);

}  // namespace kvs::janus
