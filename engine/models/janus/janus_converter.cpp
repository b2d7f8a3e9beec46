#include "engine/models/janus/janus_converter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/hf_folder.h"
#include "engine/io/tensor_spec.h"
#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/blocks/vq_weights.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/janus/janus_weights.h"

namespace kvs::janus {
namespace {

namespace fs = std::filesystem;

int64_t dim(const std::map<std::string, at::Tensor>& kept, const std::string& name, int64_t index,
            const std::string& origin) {
  auto it = kept.find(name);
  if (it == kept.end()) throw ModelMismatchError(origin + ": missing tensor " + name);
  if (it->second.dim() <= index) throw ModelMismatchError(origin + ": tensor " + name + " has too few dimensions");
  return it->second.size(index);
}

// MultiModalityCausalLM builds VQ_16(), which config.json does not describe:
// read the decoder's widths off its tensors (conv_out's input is ch x ch_mult[0]
// = ch; block j's output is ch x ch_mult[L-1-j]), so a checkpoint with another
// decoder size converts too and a mismatch is named by tensor, not by shape.
vq::VqConfig infer_vq_decoder(const std::map<std::string, at::Tensor>& kept, vq::VqConfig vq,
                              const std::string& origin) {
  const std::string p = "gen_vision_model.";
  int64_t levels = 0;
  while (kept.count(p + "decoder.conv_blocks." + std::to_string(levels) + ".res.0.conv1.weight")) ++levels;
  if (levels == 0) throw ModelMismatchError(origin + ": no gen_vision_model.decoder.conv_blocks tensors");
  int64_t res = 0;
  while (kept.count(p + "decoder.conv_blocks.0.res." + std::to_string(res) + ".conv1.weight")) ++res;
  vq.ch = dim(kept, p + "decoder.conv_out.weight", 1, origin);
  vq.decoder_ch_mult.assign(static_cast<size_t>(levels), 1);
  for (int64_t j = 0; j < levels; ++j) {
    const int64_t out = dim(kept, p + "decoder.conv_blocks." + std::to_string(j) + ".res.0.conv1.weight", 0, origin);
    if (out % vq.ch != 0) throw ModelMismatchError(origin + ": decoder block widths are not multiples of ch");
    vq.decoder_ch_mult[static_cast<size_t>(levels - 1 - j)] = out / vq.ch;
  }
  vq.num_res_blocks = res - 1;
  vq.z_channels = dim(kept, p + "post_quant_conv.weight", 0, origin);
  vq.validate();
  return vq;
}

}  // namespace

std::vector<std::string> janus_tokenizer_file_names() {
  return {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"};
}

JanusConvertReport convert_janus_checkpoint(const JanusConvertOptions& options,
                                            const std::function<void(double, const std::string&)>& progress) {
  const fs::path dir(options.checkpoint);
  if (!fs::is_directory(dir))
    throw FileError("--checkpoint " + options.checkpoint +
                    " is not a folder (Janus-Pro converts from the downloaded Hugging Face folder)");
  if (options.out_dir.empty()) throw InvalidArgumentError("--out is required");
  const std::optional<at::ScalarType> dtype = io::parse_converted_dtype(options.weights_dtype);
  JanusConvertReport report;
  report.config = janus_config_from_hf(io::read_json_file(dir / "config.json"));
  if (!fs::exists(dir / "tokenizer.json"))
    throw FileError(dir.string() + " has no tokenizer.json (download the whole model folder)");

  // Every tensor of every shard: the generation tensors are kept (checked
  // against the config below), the parts generation never uses are dropped, and
  // anything else means this is not the checkpoint the config describes.
  // gen_vision_model's encoder half is read too: it goes beside the weights
  // when it is all there (finishing a picture encodes with it).
  const std::string vq_prefix = "gen_vision_model.";
  auto is_encoder_key = [&](const std::string& name) {
    return name.rfind(vq_prefix, 0) == 0 && vq::is_vq_encoder_key(name.substr(vq_prefix.size()));
  };
  io::HfShardTensors shards = io::read_hf_shards(
      dir, "Janus-Pro", [&](const std::string& name) { return is_unused_janus_key(name) && !is_encoder_key(name); },
      [&](size_t i, size_t n, const std::string& file) {
        if (progress) progress(static_cast<double>(i) / n, "reading " + file);
      });
  report.weight_files = shards.files;
  report.tensors_dropped = shards.dropped;
  std::map<std::string, at::Tensor> kept, encoder;
  for (const auto& [name, tensor] : shards.tensors) {
    if (is_encoder_key(name)) encoder.emplace(name.substr(vq_prefix.size()), tensor);
    else kept.emplace(name, tensor);
  }
  report.config.vq = infer_vq_decoder(kept, report.config.vq, "checkpoint " + dir.string());
  report.config.image_size = options.image_size;
  try {
    report.config.validate();
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(std::string(e.what()) + " (set the generation size with --image-size)");
  }
  // Strict: every expected tensor present with its shape, nothing unexpected
  // (a mismatch means this is not the checkpoint config.json describes).
  io::check_tensor_set(io::shapes_of(kept), janus_expected_tensors(report.config), "checkpoint " + dir.string());
  report.encoder_kept = vq::is_complete_vq_encoder(encoder, report.config.vq,
                                                   "checkpoint " + dir.string() + " (gen_vision_model)");
  if (!report.encoder_kept) report.tensors_dropped += static_cast<int64_t>(encoder.size());
  io::NamedTensors out;
  io::add_prefixed(out, kept, janus_expected_tensors(report.config), "", dtype, "checkpoint " + dir.string());
  for (const auto& [name, tensor] : out) {
    if (!at::isFloatingType(tensor.scalar_type()))
      throw FormatError("checkpoint " + dir.string() + ": tensor " + name + " is not floating point");
  }
  if (progress) progress(0.9, "writing the bundle");
  const std::string name = options.name.empty() ? dir.filename().string() : options.name;
  nlohmann::json provenance = {{"source", "converted from the official Hugging Face folder"},
                               {"checkpoint", fs::absolute(dir).string()},
                               {"weight_files", report.weight_files}};
  report.bytes_written = io::write_bundle(options.out_dir, janus_manifest(name, report.config, provenance), out);
  report.tensors_written = static_cast<int64_t>(out.size());
  if (report.encoder_kept)
    vq::write_bundle_vq_encoder(options.out_dir, report.config.vq, encoder,
                                dtype.value_or(encoder.begin()->second.scalar_type()));
  const fs::path tokenizer_dir = fs::path(options.out_dir) / "tokenizer";
  fs::create_directories(tokenizer_dir);
  for (const std::string& file : janus_tokenizer_file_names())
    if (fs::exists(dir / file)) fs::copy_file(dir / file, tokenizer_dir / file, fs::copy_options::overwrite_existing);
  if (progress) progress(1.0, "done");
  return report;
}

}  // namespace kvs::janus
