#include "engine/models/llamagen/llamagen_converter.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <set>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/converted_state_dict.h"
#include "engine/io/torch_checkpoint.h"
#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_weights.h"

namespace kvs::llamagen {
namespace {
namespace fs = std::filesystem;
using io::count_indexed;
using io::StateDict;

GptConfig infer_gpt(const StateDict& sd, const ConvertOptions& opt, int64_t downsample, const std::string& origin) {
  GptConfig c;
  const at::Tensor& tok = io::need_tensor(sd, "tok_embeddings.weight", origin);
  const at::Tensor& cls = io::need_tensor(sd, "cls_embedding.embedding_table.weight", origin);
  c.vocab_size = tok.size(0);
  c.dim = tok.size(1);
  c.n_layer = count_indexed(sd, "layers.", "attention.wqkv.weight");
  if (c.n_layer == 0)
    throw ModelMismatchError(origin + ": no layers.N.attention.wqkv.weight tensors (not a LlamaGen GPT?)");
  c.num_classes = cls.size(0) - 1;  // the official models carry the CFG null row
  c.n_head = opt.n_head;
  if (c.n_head == 0) {
    for (const auto& name : gpt_preset_names()) {
      GptConfig p = gpt_preset(name);
      if (p.dim == c.dim && p.n_layer == c.n_layer) c.n_head = p.n_head;
    }
  }
  if (c.n_head == 0)
    throw InvalidArgumentError(origin + ": dim " + std::to_string(c.dim) + " with " + std::to_string(c.n_layer) +
                               " layers matches no official GPT size; pass --n-head");
  const int64_t qkv_rows = io::need_tensor(sd, "layers.0.attention.wqkv.weight", origin).size(0);
  const int64_t kv_heads = (qkv_rows - c.dim) / 2 / c.head_dim();
  if (kv_heads != c.n_head) c.n_kv_head = kv_heads;
  int64_t image_size = opt.image_size;
  if (image_size == 0) {
    // Official names end in the resolution: c2i_B_384.pt, c2i_XXL_256.pt.
    const std::string stem = fs::path(opt.checkpoint).stem().string();
    const size_t underscore = stem.rfind('_');
    const std::string tail = underscore == std::string::npos ? "" : stem.substr(underscore + 1);
    if ((tail.size() == 3 || tail.size() == 4) &&
        std::all_of(tail.begin(), tail.end(), [](unsigned char ch) { return std::isdigit(ch); }))
      image_size = std::stoll(tail);
  }
  if (image_size == 0)
    throw InvalidArgumentError(origin +
                               ": cannot tell the image size from the file name; pass --image-size (256 or 384)");
  if (image_size % downsample != 0)
    throw InvalidArgumentError("image size " + std::to_string(image_size) + " is not a multiple of the tokenizer's " +
                               std::to_string(downsample) + "x downsampling");
  c.block_size = (image_size / downsample) * (image_size / downsample);
  c.validate();
  return c;
}

VqConfig infer_vq(const StateDict& sd, const std::string& origin) {
  VqConfig c;
  const at::Tensor& emb = io::need_tensor(sd, "quantize.embedding.weight", origin);
  c.codebook_size = emb.size(0);
  c.codebook_embed_dim = emb.size(1);
  c.z_channels = io::need_tensor(sd, "post_quant_conv.weight", origin).size(0);
  const int64_t levels = count_indexed(sd, "decoder.conv_blocks.", "res.0.conv1.weight");
  if (levels == 0) throw ModelMismatchError(origin + ": no decoder.conv_blocks tensors (not a LlamaGen VQ model?)");
  // Official decoders start at ch_mult 1 (the last conv block has `ch` channels).
  c.ch =
      io::need_tensor(sd, "decoder.conv_blocks." + std::to_string(levels - 1) + ".res.0.conv1.weight", origin).size(0);
  c.decoder_ch_mult.assign(levels, 1);
  for (int64_t j = 0; j < levels; ++j) {
    const int64_t out =
        io::need_tensor(sd, "decoder.conv_blocks." + std::to_string(j) + ".res.0.conv1.weight", origin).size(0);
    c.decoder_ch_mult[levels - 1 - j] = out / c.ch;
  }
  c.num_res_blocks = count_indexed(sd, "decoder.conv_blocks.0.res.", "conv1.weight") - 1;
  c.validate();
  return c;
}

}  // namespace

ConvertReport convert_llamagen_checkpoint(const ConvertOptions& opt, const ConvertProgress& progress) {
  auto log = module_logger("convert");
  auto report_progress = [&](double f, const std::string& stage) {
    if (progress) progress(f, stage);
    log.info(stage);
  };
  if (opt.checkpoint.empty()) throw InvalidArgumentError("convert needs --checkpoint <c2i_*.pt>");
  if (opt.tokenizer.empty()) throw InvalidArgumentError("convert needs --tokenizer <vq_ds16_c2i.pt>");
  if (opt.out_dir.empty()) throw InvalidArgumentError("convert needs --out <folder>");
  const std::optional<at::ScalarType> dtype = io::parse_converted_dtype(
      opt.weights_dtype);  // validates the option early
  std::error_code ec;
  for (const auto& [what, path] :
       {std::pair<std::string, std::string>{"tokenizer", opt.tokenizer}, {"checkpoint", opt.checkpoint}})
    if (!fs::exists(path, ec)) throw FileError(what + " " + path + ": does not exist");

  report_progress(0.0, "reading tokenizer " + opt.tokenizer);
  StateDict vq_sd = io::load_unwrapped_state_dict(opt.tokenizer, "tokenizer");
  const std::string vq_origin = "tokenizer " + opt.tokenizer;
  ConvertReport report;
  report.vq = infer_vq(vq_sd, vq_origin);
  // The encoder half goes beside the weights when it is all there (finishing a
  // picture encodes with it); the rest generation never reads is dropped.
  std::map<std::string, at::Tensor> encoder;
  for (auto it = vq_sd.begin(); it != vq_sd.end();) {
    if (is_unused_vq_key(it->first)) {
      if (vq::is_vq_encoder_key(it->first)) encoder.emplace(it->first, it->second);
      else report.dropped_keys.push_back(it->first);
      it = vq_sd.erase(it);
    } else {
      ++it;
    }
  }
  report.encoder_kept = vq::is_complete_vq_encoder(encoder, report.vq, vq_origin);
  if (!report.encoder_kept)
    for (const auto& [name, t] : encoder) report.dropped_keys.push_back(name);
  io::check_tensor_set(io::shapes_of(vq_sd), vq_decoder_expected_tensors(report.vq), vq_origin);

  report_progress(0.3, "reading GPT checkpoint " + opt.checkpoint);
  StateDict gpt_sd = io::load_unwrapped_state_dict(opt.checkpoint, "checkpoint");
  const std::string gpt_origin = "checkpoint " + opt.checkpoint;
  report.gpt = infer_gpt(gpt_sd, opt, report.vq.downsample(), gpt_origin);
  io::check_tensor_set(io::shapes_of(gpt_sd), gpt_expected_tensors(report.gpt), gpt_origin);
  if (report.gpt.vocab_size != report.vq.codebook_size)
    throw ModelMismatchError("checkpoint vocab_size " + std::to_string(report.gpt.vocab_size) +
                             " does not match the tokenizer codebook size " + std::to_string(report.vq.codebook_size));

  report_progress(0.6, "writing bundle " + opt.out_dir);
  io::NamedTensors tensors;
  io::add_prefixed(tensors, gpt_sd, gpt_expected_tensors(report.gpt), "gpt.", dtype, gpt_origin);
  io::add_prefixed(tensors, vq_sd, vq_decoder_expected_tensors(report.vq), "vq.", dtype, vq_origin);
  const std::string name = opt.name.empty() ? fs::path(opt.checkpoint).stem().string() : opt.name;
  nlohmann::json provenance = {{"source", "official LlamaGen checkpoint"},
                               {"checkpoint", fs::path(opt.checkpoint).filename().string()},
                               {"tokenizer", fs::path(opt.tokenizer).filename().string()},
                               {"converted_by", "kvstudio-cli convert"}};
  nlohmann::json manifest = llamagen_manifest(name, report.gpt, report.vq, provenance);
  manifest["sampling_defaults"] = {{"cfg_scale", 4.0}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}};
  report.bytes_written = io::write_bundle(opt.out_dir, manifest, tensors);
  report.tensors_written = static_cast<int64_t>(tensors.size());
  if (report.encoder_kept)
    vq::write_bundle_vq_encoder(opt.out_dir, report.vq, encoder, dtype.value_or(encoder.begin()->second.scalar_type()));
  report_progress(1.0, "done");
  return report;
}

}  // namespace kvs::llamagen
