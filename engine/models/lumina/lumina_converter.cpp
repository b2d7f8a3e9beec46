#include "engine/models/lumina/lumina_converter.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/hf_folder.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/simple_yaml.h"
#include "engine/io/tensor_spec.h"
#include "engine/io/torch_checkpoint.h"
#include "engine/models/lumina/lumina_model.h"
#include "engine/models/lumina/lumina_weights.h"
#include "engine/text/bpe_tokenizer.h"

namespace kvs::lumina {
namespace {

namespace fs = std::filesystem;

void require_file(const fs::path& path, const std::string& what) {
  if (!fs::exists(path))
    throw FileError(path.parent_path().string() + " has no " + path.filename().string() + " (" + what + ")");
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Image token id -> name of a tokenizer file's model.vocab, for ids 4..8195.
std::map<int64_t, std::string> image_names(const fs::path& file) {
  const nlohmann::json j = io::read_json_file(file);
  if (!j.contains("model") || !j.at("model").contains("vocab") || !j.at("model").at("vocab").is_object())
    throw FormatError(file.string() + ": no model.vocab");
  std::map<int64_t, std::string> names;
  for (const auto& [name, id] : j.at("model").at("vocab").items())
    if (id.is_number_integer() && id.get<int64_t>() >= 4 && id.get<int64_t>() < 4 + 8192)
      names[id.get<int64_t>()] = name;
  return names;
}

// The trained resolution from the folder's name ("Lumina-mGPT-7B-768" -> 768).
int64_t size_from_name(const std::string& name) {
  std::smatch m;
  if (std::regex_search(name, m, std::regex(R"(-(512|768|1024)(\b|-|$))"))) return std::stoll(m[1]);
  return 768;
}

}  // namespace

LuminaConvertReport convert_lumina_checkpoint(const LuminaConvertOptions& options,
                                              const std::function<void(double, const std::string&)>& progress) {
  const fs::path dir(options.checkpoint), vq_dir(options.vqgan);
  if (!fs::is_directory(dir))
    throw FileError("--checkpoint " + options.checkpoint +
                    " is not a folder (Lumina-mGPT converts from the downloaded Hugging Face folder)");
  if (options.vqgan.empty())
    throw InvalidArgumentError("--vqgan is required: the folder with Chameleon's vqgan.yaml and vqgan.ckpt");
  if (!fs::is_directory(vq_dir)) throw FileError("--vqgan " + options.vqgan + " is not a folder");
  if (options.out_dir.empty()) throw InvalidArgumentError("--out is required");
  const std::optional<at::ScalarType> dtype = io::parse_converted_dtype(options.weights_dtype);
  require_file(dir / "config.json", "the model's configuration");
  require_file(dir / "tokenizer.json", "download the whole model folder");
  require_file(vq_dir / "vqgan.yaml", "Chameleon's VQGAN configuration");
  require_file(vq_dir / "vqgan.ckpt", "Chameleon's VQGAN weights");

  LuminaConvertReport report;
  LuminaConfig& config = report.config;
  config.lm = chameleon_config_from_hf(io::read_json_file(dir / "config.json"));
  const nlohmann::json yaml = io::parse_simple_yaml(read_text(vq_dir / "vqgan.yaml"), (vq_dir / "vqgan.yaml").string());
  if (!yaml.contains("model") || !yaml.at("model").is_object() || !yaml.at("model").contains("params"))
    throw FormatError((vq_dir / "vqgan.yaml").string() + ": no model.params section");
  config.vqgan = vqgan_config_from_params(yaml.at("model").at("params"));
  config.image_size = options.image_size > 0 ? options.image_size : size_from_name(dir.filename().string());
  config.validate();
  // The tokenizer must be a Chameleon vocabulary the model can hold.
  const text::BpeTokenizer tokenizer = text::BpeTokenizer::load(dir.string());
  if (tokenizer.vocab_size() > config.lm.vocab_size)
    throw ModelMismatchError("tokenizer.json has " + std::to_string(tokenizer.vocab_size()) +
                             " tokens, more than the model's vocabulary of " + std::to_string(config.lm.vocab_size));
  ImageVocabulary::from_tokenizer(tokenizer, config.ids, config.vqgan.n_embed);
  // The official code reads the image names from Meta's text_tokenizer.json in the
  // Chameleon folder; where the folder has it, its names must be the ones the
  // bundle keeps (tokenizer.json's), or the two programs would decode differently.
  if (fs::exists(vq_dir / "text_tokenizer.json") &&
      image_names(vq_dir / "text_tokenizer.json") != image_names(dir / "tokenizer.json"))
    throw ModelMismatchError((vq_dir / "text_tokenizer.json").string() + " names the image tokens differently from " +
                             (dir / "tokenizer.json").string() + " (the two downloads are not of one model)");

  io::HfShardTensors shards = io::read_hf_shards(dir, "Lumina-mGPT", is_unused_chameleon_key,
                                                 [&](size_t i, size_t n, const std::string& file) {
                                                   if (progress)
                                                     progress(0.8 * static_cast<double>(i) / n, "reading " + file);
                                                 });
  report.weight_files = shards.files;
  report.tensors_dropped = shards.dropped;
  const std::map<std::string, at::Tensor>& lm = shards.tensors;
  if (progress) progress(0.8, "reading vqgan.ckpt");
  std::map<std::string, at::Tensor> vqgan;
  for (auto& [name, tensor] :
       io::read_torch_state_dict_under((vq_dir / "vqgan.ckpt").string(), "VQGAN checkpoint", {"state_dict"}).tensors) {
    if (is_unused_vqgan_key(name)) {
      ++report.tensors_dropped;
      continue;
    }
    vqgan.emplace(name, tensor);
  }
  io::check_tensor_set(io::shapes_of(lm), chameleon_expected_tensors(config.lm), "checkpoint " + dir.string());
  io::check_tensor_set(io::shapes_of(vqgan), vqgan_decoder_expected_tensors(config.vqgan),
                       "VQGAN " + (vq_dir / "vqgan.ckpt").string());
  io::NamedTensors out;
  io::add_prefixed(out, lm, chameleon_expected_tensors(config.lm), "", dtype, "checkpoint " + dir.string());
  io::add_prefixed(out, vqgan, vqgan_decoder_expected_tensors(config.vqgan), "vqgan.", dtype,
                   "VQGAN " + vq_dir.string());
  for (const auto& [name, tensor] : out)
    if (!at::isFloatingType(tensor.scalar_type()))
      throw FormatError("checkpoint " + dir.string() + ": tensor " + name + " is not floating point");
  if (progress) progress(0.9, "writing the bundle");
  const std::string name = options.name.empty() ? dir.filename().string() : options.name;
  nlohmann::json provenance = {{"source", "converted from the official Hugging Face folder and Chameleon's VQGAN"},
                               {"checkpoint", fs::absolute(dir).string()},
                               {"vqgan", fs::absolute(vq_dir).string()},
                               {"weight_files", report.weight_files}};
  report.bytes_written = io::write_bundle(options.out_dir, lumina_manifest(name, config, provenance), out);
  report.tensors_written = static_cast<int64_t>(out.size());
  const fs::path tokenizer_dir = fs::path(options.out_dir) / "tokenizer";
  fs::create_directories(tokenizer_dir);
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    if (fs::exists(dir / file)) fs::copy_file(dir / file, tokenizer_dir / file, fs::copy_options::overwrite_existing);
  if (progress) progress(1.0, "done");
  return report;
}

}  // namespace kvs::lumina
