#include "tests/engine/test_helpers.h"

#include <fstream>

#include <random>
#include <sstream>
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"

namespace kvs::test {

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() / ("kvstudio-test-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

llamagen::GptConfig tiny_gqa_gpt() {
  llamagen::GptConfig c;
  c.dim = 64;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_kv_head = 2;
  c.multiple_of = 32;
  c.vocab_size = 64;
  c.num_classes = 5;
  c.block_size = 16;
  return c;
}

llamagen::VqConfig tiny_vq() {
  llamagen::VqConfig c;
  c.codebook_size = 64;
  c.codebook_embed_dim = 4;
  c.z_channels = 32;
  c.ch = 32;
  c.decoder_ch_mult = {1, 1};
  c.num_res_blocks = 1;
  return c;
}

PolicyContext small_policy_context(int64_t grid, int64_t rows, bool cfg, int64_t n_head, int64_t kv_heads) {
  PolicyContext c;
  c.n_layer = 1;
  c.n_head = n_head;
  c.kv_heads = kv_heads;
  c.head_dim = 4;
  c.grid_height = grid;
  c.grid_width = grid;
  c.batch = cfg ? rows / 2 : rows;
  c.cfg = cfg;
  return c;
}

std::string policy_error(const std::string& spec, const PolicyContext& context) {
  try {
    make_policy(spec, context);
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  return "no error";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string conformance_dir() { return KVSTUDIO_CONFORMANCE_DIR; }

std::string conformance_skip_reason() {
  if (std::filesystem::exists(conformance_dir() + "/llamagen_c2i_tiny.json")) return "";
  return "no conformance data at " + conformance_dir() + " (docs/conformance.md)";
}

std::string fixture_skip_reason(const std::string& dir, const char* variable) {
  std::string why = conformance_skip_reason();
  if (why.empty() && dir.empty()) why = std::string(variable) + " is not set (ctest's fixture step writes that folder)";
  return why;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kvs::test
