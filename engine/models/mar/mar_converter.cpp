#include "engine/models/mar/mar_converter.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/converted_state_dict.h"
#include "engine/io/torch_checkpoint.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_weights.h"

namespace kvs::mar {
namespace {
namespace fs = std::filesystem;
using io::StateDict;

int64_t exact_sqrt(int64_t n) {
  const int64_t r = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  return r * r == n ? r : -1;
}

int64_t official_heads(int64_t width) {
  if (width == 768) return 12;
  if (width == 1024 || width == 1280) return 16;
  return 0;
}

std::string preset_for_width(int64_t width) {
  if (width == 1024) return "mar-L";
  if (width == 1280) return "mar-H";
  return "mar-B";
}

MarConfig infer_mar(const StateDict& sd, const MarConvertOptions& opt, const KlVaeConfig& vae,
                    const std::string& origin) {
  const io::ShapeMap shapes = io::shapes_of(sd);
  MarConfig c;
  const at::Tensor& z_proj = io::need_tensor(sd, "z_proj.weight", origin);
  c.encoder_embed_dim = z_proj.size(0);
  const int64_t token_dim = z_proj.size(1);
  c.encoder_depth = io::count_indexed(shapes, "encoder_blocks.", "attn.qkv.weight");
  c.decoder_depth = io::count_indexed(shapes, "decoder_blocks.", "attn.qkv.weight");
  if (c.encoder_depth == 0 || c.decoder_depth == 0)
    throw ModelMismatchError(origin + ": no encoder_blocks.N / decoder_blocks.N tensors (not a MAR checkpoint?)");
  c.decoder_embed_dim = io::need_tensor(sd, "decoder_embed.weight", origin).size(0);
  c.mlp_ratio = static_cast<double>(io::need_tensor(sd, "encoder_blocks.0.mlp.fc1.weight", origin).size(0)) /
                static_cast<double>(c.encoder_embed_dim);
  const int64_t seq_len = io::need_tensor(sd, "diffusion_pos_embed_learned", origin).size(1);
  c.buffer_size = io::need_tensor(sd, "encoder_pos_embed_learned", origin).size(1) - seq_len;
  c.class_num = io::need_tensor(sd, "class_emb.weight", origin).size(0);
  c.diffloss_w = io::need_tensor(sd, "diffloss.net.input_proj.weight", origin).size(0);
  c.diffloss_d = io::count_indexed(shapes, "diffloss.net.res_blocks.", "in_ln.weight");
  c.vae_embed_dim = vae.embed_dim;
  const int64_t seq_h = exact_sqrt(seq_len);
  if (seq_h <= 0)
    throw ModelMismatchError(origin + ": " + std::to_string(seq_len) + " tokens do not form a square grid");
  const int64_t patch = token_dim % vae.embed_dim == 0 ? exact_sqrt(token_dim / vae.embed_dim) : -1;
  if (patch <= 0)
    throw ModelMismatchError(origin + ": token width " + std::to_string(token_dim) + " is not the VAE's " +
                             std::to_string(vae.embed_dim) + " channels times a square patch");
  c.patch_size = patch;
  c.vae_stride = opt.vae_stride;
  c.img_size = seq_h * patch * opt.vae_stride;
  c.encoder_num_heads = opt.num_heads > 0 ? opt.num_heads : official_heads(c.encoder_embed_dim);
  c.decoder_num_heads = opt.num_heads > 0 ? opt.num_heads : official_heads(c.decoder_embed_dim);
  if (c.encoder_num_heads == 0 || c.decoder_num_heads == 0)
    throw InvalidArgumentError(origin + ": width " + std::to_string(c.encoder_embed_dim) +
                               " is not an official MAR size, so the head count is unknown; pass --n-head");
  c.num_sampling_steps = opt.num_sampling_steps;
  c.validate();
  return c;
}

}  // namespace

MarConvertReport convert_mar_checkpoint(const MarConvertOptions& opt, const MarConvertProgress& progress) {
  auto log = module_logger("convert");
  auto report_progress = [&](double f, const std::string& stage) {
    if (progress) progress(f, stage);
    log.info(stage);
  };
  if (opt.checkpoint.empty()) throw InvalidArgumentError("convert needs --checkpoint <checkpoint-last.pth>");
  if (opt.vae.empty()) throw InvalidArgumentError("convert needs --tokenizer <kl16.ckpt>");
  if (opt.out_dir.empty()) throw InvalidArgumentError("convert needs --out <folder>");
  if (opt.vae_stride <= 0) throw InvalidArgumentError("--vae-stride must be positive");
  const std::optional<at::ScalarType> dtype = io::parse_converted_dtype(
      opt.weights_dtype);  // validates the option early
  std::error_code ec;
  for (const auto& [what, path] :
       {std::pair<std::string, std::string>{"checkpoint", opt.checkpoint}, {"tokenizer", opt.vae}})
    if (!fs::exists(path, ec)) throw FileError(what + " " + path + ": does not exist");

  MarConvertReport report;
  report_progress(0.0, "reading KL-VAE " + opt.vae);
  const std::string vae_origin = "tokenizer " + opt.vae;
  StateDict vae_sd = io::unwrapped_state_dict(io::read_torch_state_dict(opt.vae, "tokenizer"), vae_origin);
  for (auto it = vae_sd.begin(); it != vae_sd.end();) {
    if (is_unused_vae_key(it->first)) {
      report.dropped_keys.push_back("vae." + it->first);
      it = vae_sd.erase(it);
    } else {
      ++it;
    }
  }
  report.vae = infer_kl_vae_config(io::shapes_of(vae_sd), vae_origin);
  io::check_tensor_set(io::shapes_of(vae_sd), kl_vae_expected_tensors(report.vae), vae_origin);

  report_progress(0.2, "reading MAR checkpoint " + opt.checkpoint);
  const std::string mar_origin = "checkpoint " + opt.checkpoint;
  const std::vector<std::string> keys = opt.use_ema
                                            ? std::vector<std::string>{"model_ema", "model", "module", "state_dict"}
                                            : std::vector<std::string>{"model", "module", "state_dict"};
  io::TorchStateDict loaded = io::read_torch_state_dict_under(opt.checkpoint, "checkpoint", keys);
  report.source_key = loaded.selected_key;
  if (opt.use_ema && loaded.selected_key != "model_ema") {
    report.warnings.push_back(
        "the checkpoint has no EMA weights (\"model_ema\"); converted " +
        (loaded.selected_key.empty() ? std::string("its top-level state dict") : "\"" + loaded.selected_key + "\"") +
        " instead (the official evaluation uses the EMA weights)");
    log.warn(report.warnings.back());
  }
  StateDict mar_sd = io::unwrapped_state_dict(std::move(loaded.tensors), mar_origin);
  report.mar = infer_mar(mar_sd, opt, report.vae, mar_origin);
  io::check_tensor_set(io::shapes_of(mar_sd), mar_expected_tensors(report.mar), mar_origin);
  check_compatible(report.mar, report.vae);

  report_progress(0.6, "writing bundle " + opt.out_dir);
  io::NamedTensors tensors;
  io::add_prefixed(tensors, mar_sd, mar_expected_tensors(report.mar), "mar.", dtype, mar_origin);
  io::add_prefixed(tensors, vae_sd, kl_vae_expected_tensors(report.vae), "vae.", dtype, vae_origin);
  std::string name = opt.name;
  if (name.empty()) {
    const fs::path ckpt = fs::absolute(fs::path(opt.checkpoint));
    name = ckpt.parent_path().filename().string();
    if (name.empty() || name == "." || name == "/") name = ckpt.stem().string();
  }
  nlohmann::json provenance = {{"source", "official MAR checkpoint"},
                               {"checkpoint", fs::path(opt.checkpoint).filename().string()},
                               {"checkpoint_entry", report.source_key},
                               {"tokenizer", fs::path(opt.vae).filename().string()},
                               {"converted_by", "kvstudio-cli convert"}};
  nlohmann::json manifest = mar_manifest(name, report.mar, report.vae, provenance);
  manifest["sampling_defaults"] = mar_sampling_defaults(preset_for_width(report.mar.encoder_embed_dim));
  report.bytes_written = io::write_bundle(opt.out_dir, manifest, tensors);
  report.tensors_written = static_cast<int64_t>(tensors.size());
  report_progress(1.0, "done");
  return report;
}

}  // namespace kvs::mar
