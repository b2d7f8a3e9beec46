#include "engine/models/infinity/infinity_converter.h"

#include <ATen/Functions.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/hf_folder.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/torch_checkpoint.h"
#include "engine/models/infinity/infinity_weights.h"
#include "engine/text/sentencepiece_tokenizer.h"

namespace kvs::infinity {
namespace {

namespace fs = std::filesystem;
using TensorMap = std::map<std::string, at::Tensor>;

bool is_safetensors(const fs::path& p) { return p.extension() == ".safetensors"; }

TensorMap read_file(const fs::path& path, const std::string& what, const std::vector<std::string>& keys) {
  if (!fs::exists(path)) throw FileError(what + " " + path.string() + " does not exist");
  TensorMap out;
  if (is_safetensors(path)) {
    auto reader = io::SafetensorsReader::open(path.string());
    for (const std::string& name : reader->names()) out.emplace(name, reader->tensor(name).clone());
    return out;
  }
  for (auto& [name, tensor] : io::read_torch_state_dict_under(path.string(), what, keys).tensors)
    out.emplace(name, tensor);
  return out;
}

const at::Tensor& need(const TensorMap& w, const std::string& name, const std::string& origin) {
  auto it = w.find(name);
  if (it == w.end()) throw ModelMismatchError(origin + ": no tensor " + name + " (is this an Infinity checkpoint?)");
  return it->second;
}

// The transformer's architecture from its tensor shapes.
InfinityConfig infer_transformer(const TensorMap& w, const std::string& origin) {
  InfinityConfig c;
  c.embed_dim = need(w, "pos_start", origin).size(2);
  c.text_channels = need(w, "text_norm.weight", origin).size(0);
  c.text_maxlen = need(w, "cfg_uncond", origin).size(0);
  c.level_embeddings = need(w, "lvl_embed.weight", origin).size(0);
  const std::regex chunked(R"(^block_chunks\.(\d+)\.module\.(\d+)\.)"), flat(R"(^blocks\.(\d+)\.)");
  int64_t chunks = 0, per_chunk = 0, flat_blocks = 0;
  for (const auto& [name, tensor] : w) {
    std::smatch m;
    if (std::regex_search(name, m, chunked)) {
      chunks = std::max<int64_t>(chunks, std::stoll(m[1]) + 1);
      per_chunk = std::max<int64_t>(per_chunk, std::stoll(m[2]) + 1);
    } else if (std::regex_search(name, m, flat)) {
      flat_blocks = std::max<int64_t>(flat_blocks, std::stoll(m[1]) + 1);
    }
  }
  if (chunks > 0 && flat_blocks > 0) throw ModelMismatchError(origin + ": both block_chunks.* and blocks.* keys");
  if (chunks > 0) {
    c.block_chunks = chunks;
    c.depth = chunks * per_chunk;
  } else if (flat_blocks > 0) {
    c.block_chunks = 1;
    c.depth = flat_blocks;
  } else {
    throw ModelMismatchError(origin + ": no transformer blocks (block_chunks.* or blocks.*)");
  }
  const std::string first = c.block_prefix(0);
  c.num_heads = need(w, first + "sa.scale_mul_1H11", origin).size(1);
  c.mlp_ratio = static_cast<double>(need(w, first + "ffn.fc1.weight", origin).size(0)) /
                static_cast<double>(c.embed_dim);
  return c;
}

// The decoder's architecture from its tensor shapes (wrapped names).
BsqVaeConfig infer_vae(const TensorMap& w, const std::string& origin) {
  BsqVaeConfig c;
  c.codebook_dim = need(w, "decoder.conv_in.conv.weight", origin).size(1);
  const std::regex level(R"(^decoder\.up\.(\d+)\.block\.(\d+)\.)");
  int64_t levels = 0, blocks = 0;
  std::set<int64_t> upsampled;
  for (const auto& [name, tensor] : w) {
    std::smatch m;
    if (std::regex_search(name, m, level)) {
      levels = std::max<int64_t>(levels, std::stoll(m[1]) + 1);
      blocks = std::max<int64_t>(blocks, std::stoll(m[2]) + 1);
    }
    static const std::regex up(R"(^decoder\.up\.(\d+)\.upsample\.)");
    if (std::regex_search(name, m, up)) upsampled.insert(std::stoll(m[1]));
  }
  if (levels == 0) throw ModelMismatchError(origin + ": no decoder levels (decoder.up.*)");
  c.num_res_blocks = blocks - 1;
  // ch_mult starts at 1 in every released VAE: level 0's width is base_ch.
  c.base_ch = need(w, "decoder.up.0.block.0.conv2.conv.weight", origin).size(0);
  c.ch_mult.clear();
  for (int64_t l = 0; l < levels; ++l) {
    const int64_t width = need(w, "decoder.up." + std::to_string(l) + ".block.0.conv2.conv.weight", origin).size(0);
    if (width % c.base_ch != 0) throw ModelMismatchError(origin + ": level widths are not multiples of level 0's");
    c.ch_mult.push_back(width / c.base_ch);
  }
  c.patch_size = int64_t{1} << upsampled.size();
  return c;
}

// vae.py load_cnn: a plain-named decoder ("conv_in.weight") maps onto the wrapped names.
TensorMap wrapped_decoder(const TensorMap& vae, int64_t& dropped) {
  TensorMap decoder;
  for (const auto& [name, tensor] : vae) {
    if (name.rfind("decoder.", 0) == 0) decoder.emplace(name, tensor);
    else ++dropped;  // the encoder and the quantizer's buffers: generation never reads them
  }
  if (decoder.count("decoder.conv_in.conv.weight") || !decoder.count("decoder.conv_in.weight")) return decoder;
  TensorMap out;
  const std::regex leaf(R"(^(.*)\.(weight|bias)$)");
  for (const auto& [name, tensor] : decoder) {
    std::smatch m;
    if (!std::regex_match(name, m, leaf)) {
      out.emplace(name, tensor);
      continue;
    }
    const std::string stem = m[1], kind = m[2];
    const bool norm = stem.find("norm") != std::string::npos && tensor.dim() == 1;
    out.emplace(stem + (norm ? ".norm." : ".conv.") + kind, tensor);
  }
  return out;
}

}  // namespace

InfinityConvertReport convert_infinity_checkpoint(const InfinityConvertOptions& options,
                                                  const std::function<void(double, const std::string&)>& progress) {
  if (options.checkpoint.empty() || options.vae.empty() || options.t5.empty() || options.out_dir.empty())
    throw InvalidArgumentError("convert --family infinity needs --checkpoint, --vae, --t5 and --out");
  const fs::path checkpoint(options.checkpoint), vae_path(options.vae), t5_dir(options.t5);
  if (!fs::is_directory(t5_dir))
    throw FileError("--t5 " + options.t5 + " is not a folder (the google/flan-t5-xl Hugging Face folder)");
  for (const char* file : {"config.json", "spiece.model"})
    if (!fs::exists(t5_dir / file)) throw FileError(options.t5 + " has no " + file + " (download the whole folder)");
  if (!fs::exists(vae_path)) throw FileError("--vae " + options.vae + " does not exist");
  if (!fs::exists(checkpoint)) throw FileError("--checkpoint " + options.checkpoint + " does not exist");
  const std::optional<at::ScalarType> dtype = io::parse_converted_dtype(options.weights_dtype);
  InfinityConvertReport report;

  if (progress) progress(0.0, "reading the Infinity checkpoint");
  TensorMap infinity;
  std::vector<std::shared_ptr<io::SafetensorsReader>> keep_alive;
  if (fs::is_directory(checkpoint)) {
    io::HfShardTensors shards = io::read_hf_shards(checkpoint, "Infinity", [](const std::string&) { return false; });
    infinity = std::move(shards.tensors);
    keep_alive = std::move(shards.readers);
  } else {
    infinity = read_file(checkpoint, "Infinity checkpoint", {"model", "module", "state_dict"});
  }
  if (progress) progress(0.4, "reading the VAE");
  int64_t dropped = 0;
  const TensorMap decoder = wrapped_decoder(read_file(vae_path, "BSQ-VAE checkpoint", {"vae", "state_dict", "model"}),
                                            dropped);
  if (progress) progress(0.5, "reading the T5 encoder");
  io::HfShardTensors t5 = io::read_hf_shards(t5_dir, "T5", [](const std::string& name) {
    // The decoder and LM head are not the encoder's; embed_tokens is tied to shared.
    return name.rfind("decoder.", 0) == 0 || name == "lm_head.weight" || name == "encoder.embed_tokens.weight";
  });
  dropped += t5.dropped;

  InfinityModelConfig& config = report.config;
  config.transformer = infer_transformer(infinity, "checkpoint " + options.checkpoint);
  config.vae = infer_vae(decoder, "VAE " + options.vae);
  config.transformer.codebook_dim = config.vae.codebook_dim;
  const int64_t bits = need(infinity, "word_embed.weight", "checkpoint " + options.checkpoint).size(1);
  if (bits == 4 * config.vae.codebook_dim) {
    config.transformer.spatial_patchify = config.vae.spatial_patchify = true;
  } else if (bits != config.vae.codebook_dim) {
    throw ModelMismatchError("the checkpoint's tokens carry " + std::to_string(bits) +
                             " bits but the VAE's latent has " + std::to_string(config.vae.codebook_dim) +
                             " (neither d nor 4d): not one model's files");
  }
  config.t5 = T5Config::from_hf_json(io::read_json_file(t5_dir / "config.json"));
  config.pixel_budget = options.pixel_budget;
  config.validate();
  const text::SentencePieceTokenizer tokenizer((t5_dir / "spiece.model").string());
  if (tokenizer.vocab_size() > config.t5.vocab_size)
    throw ModelMismatchError("spiece.model has more pieces than the T5 encoder's vocabulary");

  // Strict sets: nothing missing, nothing unknown (official buffers the port
  // recomputes are listed in the expected tensors too: zero_k_bias).
  io::check_tensor_set(io::shapes_of(infinity), transformer_expected_tensors(config.transformer),
                       "checkpoint " + options.checkpoint);
  io::check_tensor_set(io::shapes_of(decoder), vae_decoder_expected_tensors(config.vae), "VAE " + options.vae);
  io::check_tensor_set(io::shapes_of(t5.tensors), t5_expected_tensors(config.t5), "T5 " + options.t5);

  if (progress) progress(0.7, "writing the bundle");
  io::NamedTensors out;
  io::add_prefixed(out, infinity, transformer_expected_tensors(config.transformer), "infinity.", dtype,
                   "checkpoint " + options.checkpoint);
  io::add_prefixed(out, t5.tensors, t5_expected_tensors(config.t5), "t5.", dtype, "T5 " + options.t5);
  io::add_prefixed(out, decoder, vae_decoder_expected_tensors(config.vae), "vae.", dtype, "VAE " + options.vae);
  for (const auto& [name, tensor] : out)
    if (!at::isFloatingType(tensor.scalar_type())) throw FormatError("tensor " + name + " is not floating point");
  const std::string name = options.name.empty() ? checkpoint.stem().string() : options.name;
  const nlohmann::json provenance = {{"source",
                                      "converted from the official Infinity checkpoint, BSQ-VAE and T5 folder"},
                                     {"checkpoint", fs::absolute(checkpoint).string()},
                                     {"vae", fs::absolute(vae_path).string()},
                                     {"t5", fs::absolute(t5_dir).string()}};
  report.bytes_written = io::write_bundle(options.out_dir, infinity_manifest(name, config, provenance), out);
  report.tensors_written = static_cast<int64_t>(out.size());
  report.tensors_dropped = dropped;
  const fs::path tokenizer_dir = fs::path(options.out_dir) / "tokenizer";
  fs::create_directories(tokenizer_dir);
  fs::copy_file(t5_dir / "spiece.model", tokenizer_dir / "spiece.model", fs::copy_options::overwrite_existing);
  if (progress) progress(1.0, "done");
  return report;
}

}  // namespace kvs::infinity
