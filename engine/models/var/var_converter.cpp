#include "engine/models/var/var_converter.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/converted_state_dict.h"
#include "engine/io/torch_checkpoint.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_weights.h"

namespace kvs::var {
namespace {
namespace fs = std::filesystem;
using io::count_indexed;
using io::StateDict;

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

VarConfig infer_var(const StateDict& sd, const VarConvertOptions& opt, const std::string& origin) {
  VarConfig c;
  c.depth = count_indexed(sd, "blocks.", "attn.mat_qkv.weight");
  if (c.depth == 0)
    throw ModelMismatchError(origin + ": no blocks.N.attn.mat_qkv.weight tensors (not a VAR checkpoint?)");
  const at::Tensor& word = io::need_tensor(sd, "word_embed.weight", origin);
  c.embed_dim = word.size(0);
  c.cvae = word.size(1);
  c.num_classes = io::need_tensor(sd, "class_emb.weight", origin).size(0) - 1;  // + the null class
  c.vocab_size = io::need_tensor(sd, "head.weight", origin).size(0);
  c.shared_aln = sd.count("shared_ada_lin.1.weight") > 0;
  c.attn_l2_norm = sd.count("blocks.0.attn.scale_mul_1H11") > 0;
  c.num_heads = opt.num_heads;
  if (c.num_heads == 0)
    c.num_heads = c.attn_l2_norm ? io::need_tensor(sd, "blocks.0.attn.scale_mul_1H11", origin).size(1) : c.depth;
  if (c.embed_dim % c.num_heads != 0)
    throw InvalidArgumentError(origin + ": width " + std::to_string(c.embed_dim) + " is not divisible by " +
                               std::to_string(c.num_heads) + " heads; pass --n-head");
  c.mlp_ratio = static_cast<double>(io::need_tensor(sd, "blocks.0.ffn.fc1.weight", origin).size(0)) /
                static_cast<double>(c.embed_dim);
  const int64_t total = io::need_tensor(sd, "pos_1LC", origin).size(1);
  const int64_t scales = io::need_tensor(sd, "lvl_embed.weight", origin).size(0);
  if (!opt.patch_nums.empty()) {
    c.patch_nums = opt.patch_nums;
  } else {
    c.patch_nums.clear();
    for (int64_t px : {256, 512, 1024}) {
      std::vector<int64_t> pn = patch_nums_for_resolution(px);
      int64_t l = 0;
      for (int64_t p : pn) l += p * p;
      if (l == total && static_cast<int64_t>(pn.size()) == scales) c.patch_nums = pn;
    }
    if (c.patch_nums.empty())
      throw InvalidArgumentError(origin + ": " + std::to_string(total) + " tokens in " + std::to_string(scales) +
                                 " scales match no official schedule (256/512/1024 px); pass --patch-nums");
  }
  c.validate();
  if (c.total_tokens() != total || c.scales() != scales)
    throw ModelMismatchError(origin + ": patch_nums " + join(c.patch_nums) + " give " +
                             std::to_string(c.total_tokens()) + " tokens in " + std::to_string(c.scales()) +
                             " scales, the checkpoint has " + std::to_string(total) + " in " + std::to_string(scales));
  return c;
}

VqvaeConfig infer_vae(const StateDict& sd, const VarConvertOptions& opt, const std::vector<int64_t>& patch_nums,
                      const std::string& origin) {
  VqvaeConfig c;
  const at::Tensor& emb = io::need_tensor(sd, "quantize.embedding.weight", origin);
  c.vocab_size = emb.size(0);
  c.z_channels = emb.size(1);
  c.v_patch_nums = patch_nums;
  const int64_t levels = count_indexed(sd, "decoder.up.", "block.0.conv1.weight");
  if (levels == 0) throw ModelMismatchError(origin + ": no decoder.up tensors (not a VAR VQVAE?)");
  c.num_res_blocks = count_indexed(sd, "decoder.up.0.block.", "conv1.weight") - 1;
  // Official decoders start at ch_mult 1: level 0 has `ch` channels.
  c.ch = io::need_tensor(sd, "decoder.up.0.block.0.conv2.weight", origin).size(0);
  c.ch_mult.assign(static_cast<size_t>(levels), 1);
  for (int64_t level = 0; level < levels; ++level)
    c.ch_mult[static_cast<size_t>(level)] =
        io::need_tensor(sd, "decoder.up." + std::to_string(level) + ".block.0.conv2.weight", origin).size(0) / c.ch;
  c.using_sa = sd.count("decoder.up." + std::to_string(levels - 1) + ".attn.0.qkv.weight") > 0;
  c.using_mid_sa = sd.count("decoder.mid.attn_1.qkv.weight") > 0;
  c.in_channels = io::need_tensor(sd, "decoder.conv_out.weight", origin).size(0);
  c.quant_conv_ks = io::need_tensor(sd, "post_quant_conv.weight", origin).size(-1);
  c.quant_resi = opt.quant_resi;
  const int64_t partially = count_indexed(sd, "quantize.quant_resi.qresi_ls.", "weight");
  const int64_t non_shared = count_indexed(sd, "quantize.quant_resi.", "weight");
  if (partially > 0) {
    c.share_quant_resi = partially;
  } else if (sd.count("quantize.quant_resi.qresi.weight")) {
    c.share_quant_resi = 1;
  } else if (non_shared > 0) {
    c.share_quant_resi = 0;
    c.default_qresi_counts = non_shared == static_cast<int64_t>(patch_nums.size()) ? 0 : non_shared;
  } else {
    c.quant_resi = 0.0;  // phi is the identity: no convolutions stored
  }
  c.validate();
  return c;
}

bool is_unused_var_key(const std::string& name) {
  if (name == "lvl_1L" || name == "attn_bias_for_masking") return true;
  const std::string suffix = ".attn.zero_k_bias";
  return name.rfind("blocks.", 0) == 0 && name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

VarConvertReport convert_var_checkpoint(const VarConvertOptions& opt, const VarConvertProgress& progress) {
  auto log = module_logger("convert");
  auto report_progress = [&](double f, const std::string& stage) {
    if (progress) progress(f, stage);
    log.info(stage);
  };
  if (opt.checkpoint.empty()) throw InvalidArgumentError("convert needs --checkpoint <var_d*.pth>");
  if (opt.tokenizer.empty()) throw InvalidArgumentError("convert needs --tokenizer <vae_ch160v4096z32.pth>");
  if (opt.out_dir.empty()) throw InvalidArgumentError("convert needs --out <folder>");
  const std::optional<at::ScalarType> dtype = io::parse_converted_dtype(
      opt.weights_dtype);  // validates the option early
  std::error_code ec;
  for (const auto& [what, path] :
       {std::pair<std::string, std::string>{"checkpoint", opt.checkpoint}, {"tokenizer", opt.tokenizer}})
    if (!fs::exists(path, ec)) throw FileError(what + " " + path + ": does not exist");

  VarConvertReport report;
  report_progress(0.0, "reading VAR checkpoint " + opt.checkpoint);
  StateDict var_sd = io::load_unwrapped_state_dict(opt.checkpoint, "checkpoint");
  const std::string var_origin = "checkpoint " + opt.checkpoint;
  report.var = infer_var(var_sd, opt, var_origin);
  for (auto it = var_sd.begin(); it != var_sd.end();) {
    if (is_unused_var_key(it->first)) {
      report.dropped_keys.push_back("var." + it->first);
      it = var_sd.erase(it);
    } else {
      ++it;
    }
  }
  io::check_tensor_set(io::shapes_of(var_sd), var_expected_tensors(report.var), var_origin);

  report_progress(0.4, "reading VQVAE " + opt.tokenizer);
  StateDict vae_sd = io::load_unwrapped_state_dict(opt.tokenizer, "tokenizer");
  const std::string vae_origin = "tokenizer " + opt.tokenizer;
  report.vae = infer_vae(vae_sd, opt, report.var.patch_nums, vae_origin);
  for (auto it = vae_sd.begin(); it != vae_sd.end();) {
    if (is_unused_vqvae_key(it->first) || it->first == "quantize.ema_vocab_hit_SV") {
      report.dropped_keys.push_back("vae." + it->first);
      it = vae_sd.erase(it);
    } else {
      ++it;
    }
  }
  io::check_tensor_set(io::shapes_of(vae_sd), vqvae_expected_tensors(report.vae), vae_origin);
  check_compatible(report.var, report.vae);

  report_progress(0.7, "writing bundle " + opt.out_dir);
  io::NamedTensors tensors;
  io::add_prefixed(tensors, var_sd, var_expected_tensors(report.var), "var.", dtype, var_origin);
  io::add_prefixed(tensors, vae_sd, vqvae_expected_tensors(report.vae), "vae.", dtype, vae_origin);
  const std::string name = opt.name.empty() ? fs::path(opt.checkpoint).stem().string() : opt.name;
  nlohmann::json provenance = {{"source", "official VAR checkpoint"},
                               {"checkpoint", fs::path(opt.checkpoint).filename().string()},
                               {"tokenizer", fs::path(opt.tokenizer).filename().string()},
                               {"converted_by", "kvstudio-cli convert"}};
  nlohmann::json manifest = var_manifest(name, report.var, report.vae, provenance);
  // demo_sample.ipynb's settings.
  manifest["sampling_defaults"] = {{"cfg_scale", 4.0}, {"temperature", 1.0}, {"top_k", 900}, {"top_p", 0.95}};
  report.bytes_written = io::write_bundle(opt.out_dir, manifest, tensors);
  report.tensors_written = static_cast<int64_t>(tensors.size());
  report_progress(1.0, "done");
  return report;
}

}  // namespace kvs::var
