#include "engine/models/infinity/infinity_conformance.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <map>
#include <optional>

#include "engine/conformance/conformance_compare.h"
#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/models/infinity/bsq_codes.h"
#include "engine/models/infinity/bsq_decoder.h"
#include "engine/models/infinity/infinity_generation.h"
#include "engine/models/infinity/t5_encoder.h"
#include "engine/text/sentencepiece_tokenizer.h"

namespace kvs {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using namespace infinity;

nlohmann::json plain(const ojson& j) { return nlohmann::json::parse(j.dump()); }

InfinityConfig infinity_config_of_case(const ojson& manifest) {
  const ojson& ctor = manifest.at("constructors").at("infinity");
  const ojson& kwargs = ctor.at("kwargs");
  const ojson& model = kwargs.at("model_kwargs");
  const ojson& effective = ctor.at("effective");
  InfinityConfig c;
  c.depth = model.at("depth").get<int64_t>();
  c.embed_dim = model.at("embed_dim").get<int64_t>();
  c.num_heads = model.at("num_heads").get<int64_t>();
  c.mlp_ratio = model.at("mlp_ratio").get<double>();
  c.block_chunks = model.at("block_chunks").get<int64_t>();
  c.text_channels = kwargs.at("text_channels").get<int64_t>();
  c.text_maxlen = effective.value("text_maxlen", int64_t{512});
  c.spatial_patchify = kwargs.value("apply_spatial_patchify", 0) != 0;
  c.codebook_dim = manifest.at("constructors").at("vae").at("codebook_dim").get<int64_t>();
  c.norm_eps = effective.value("norm_eps", 1e-6);
  c.validate();
  return c;
}

BsqVaeConfig vae_config_of_case(const ojson& manifest, bool patchify) {
  const ojson& vae = manifest.at("constructors").at("vae");
  BsqVaeConfig c;
  c.codebook_dim = vae.at("codebook_dim").get<int64_t>();
  c.patch_size = vae.at("patch_size").get<int64_t>();
  c.base_ch = vae.at("base_ch").get<int64_t>();
  c.ch_mult = vae.at("ch_mult").get<std::vector<int64_t>>();
  c.num_res_blocks = vae.value("num_res_blocks", int64_t{2});
  c.spatial_patchify = patchify;
  c.validate();
  return c;
}

InfinitySchedule schedule_of_case(const ojson& manifest) {
  const ojson& derived = manifest.at("constructors").at("infinity").at("derived");
  InfinitySchedule s;
  s.scale_template = nearest_template(derived.at("h_div_w_template").get<double>());
  s.grids = scale_schedule(s.scale_template, derived.at("pn").get<std::string>());
  // The case's schedule must be the one the official table gives.
  std::vector<Grid> recorded;
  for (const auto& g : derived.at("scale_schedule"))
    recorded.push_back({g.at(1).get<int64_t>(), g.at(2).get<int64_t>()});
  if (recorded != s.grids)
    throw FormatError("Infinity case: its scale schedule is not the official one for its template");
  return s;
}

// The official image: ((clamp(x) + 1) / 2 * 255) truncated to uint8, NHWC, channels flipped to BGR.
at::Tensor to_uint8_bgr(const at::Tensor& decoded) {
  return ((decoded + 1) / 2).permute({0, 2, 3, 1}).mul(255).to(at::kByte).flip({3});
}

// One replayed run's records.
struct ReplayedRun {
  std::vector<at::Tensor> logits, bits, next_inputs;   // per scale [B, l, d, 2], [B, l, d]; per scale [B, l', d]
  std::vector<std::vector<at::Tensor>> block_outputs;  // [scale][block] [rows, l, C]
  at::Tensor summed_codes;
  at::Tensor text_norm, cond, memory;
};

class InfinityCaseRunner {
 public:
  InfinityCaseRunner(const ojson& manifest, const fs::path& dir, at::Device device)
      : manifest_(manifest), opened_(manifest, dir, "infinity"), device_(device) {
    config_ = infinity_config_of_case(manifest);
    schedule_ = schedule_of_case(manifest);
    offsets_ = schedule_.offsets();
    transformer_.emplace(config_, io::tensors_with_prefix(*opened_.weights, "infinity."), device, at::kFloat);
    const ojson& t5 = manifest.at("constructors").at("t5");
    t5_.emplace(T5Config::from_hf_json(plain(t5.at("config_json"))), io::tensors_with_prefix(*opened_.weights, "t5."),
                device, at::kFloat);
    decoder_.emplace(vae_config_of_case(manifest, config_.spatial_patchify),
                     io::tensors_with_prefix(*opened_.weights, "vae."), device, at::kFloat);
    const std::string folder = manifest.at("constructors").at("tokenizer").at("folder").get<std::string>();
    tokenizer_.emplace((dir / folder / "spiece.model").string());
  }

  ConformanceReport run() {
    ConformanceReport& report = opened_.report;
    check_outputs(opened_.tensors, report, [&](const std::string& name, const ojson& spec, ConformanceCheck& check) {
      return produce(name, spec, check);
    });
    return report;
  }

 private:
  at::Tensor ref(const std::string& name) const { return opened_.io_file->tensor(name); }

  std::vector<int64_t> ids(const std::string& text) const { return tokenizer_->encode_t5(text); }
  at::Tensor ids_tensor(const std::string& text) const {
    return at::tensor(ids(text), at::TensorOptions().dtype(at::kLong));
  }
  at::Tensor t5_rows(const std::string& text) const { return t5_->encode(ids_tensor(text)).to(at::kFloat); }

  // A run's settings: the genN runs' "run" field sits on genN_input_ids, the batched one's on bat_kv_compact.
  const ojson& run_spec(const std::string& run) const {
    const std::string key = run == "bat" ? "bat_kv_compact" : run + "_input_ids";
    return opened_.tensors.at(key).at("run");
  }

  InfinityParams params_of(const ojson& spec) const {
    InfinityParams p;
    if (spec.contains("cfg_list")) {
      p.cfg = spec.at("cfg_list").get<std::vector<double>>();
      p.tau = spec.at("tau_list").get<std::vector<double>>();
    } else {
      p.cfg = {spec.at("cfg").get<double>()};
      p.tau = {spec.at("tau").get<double>()};
    }
    p.sampling.top_k = spec.at("top_k").get<int64_t>();
    p.sampling.top_p = spec.at("top_p").get<double>();
    p.seed = spec.at("g_seed").get<uint64_t>();
    return p;
  }

  const ReplayedRun& replayed(const std::string& run) {
    auto found = runs_.find(run);
    if (found != runs_.end()) return found->second;
    const ojson& spec = run_spec(run);
    TextRows prompts, negatives;
    if (run == "bat") {
      prompts.rows = opened_.input("bat_kv_compact").to(at::kFloat);
      const at::Tensor lens = opened_.input("bat_lens").to(at::kLong);
      prompts.lengths.assign(lens.data_ptr<int64_t>(), lens.data_ptr<int64_t>() + lens.numel());
      negatives.rows = opened_.input("bat_neg_kv_compact").to(at::kFloat);
      const at::Tensor neg = opened_.input("bat_neg_lens").to(at::kLong);
      negatives.lengths.assign(neg.data_ptr<int64_t>(), neg.data_ptr<int64_t>() + neg.numel());
    } else {
      // gen_one_img: the prompt through encode_prompt; the negative prompt only when non-empty.
      prompts.rows = t5_rows(spec.at("prompt").get<std::string>());
      prompts.lengths = {prompts.rows.size(0)};
      const std::string negative = spec.value("negative_prompt", "");
      if (!negative.empty()) {
        negatives.rows = t5_rows(negative);
        negatives.lengths = {negatives.rows.size(0)};
      }
    }
    const int64_t batch = prompts.texts(), bits = config_.token_bits();
    const at::Tensor ref_bits = ref(run + "_bits").to(at::kLong);
    const at::Tensor exp_q = opened_.input(run + "_exp_q").to(at::kFloat);
    ReplayedRun r;
    InfinityNetworkOptions options;
    options.draws_override = [&](int64_t si) {
      const int64_t begin = offsets_[static_cast<size_t>(si)], n = offsets_[static_cast<size_t>(si) + 1] - begin;
      return exp_q.narrow(1, begin, n).reshape({batch * n * bits, 2});
    };
    options.bits_override = [&](int64_t si, const at::Tensor& guided, const at::Tensor& own) {
      const int64_t begin = offsets_[static_cast<size_t>(si)], n = offsets_[static_cast<size_t>(si) + 1] - begin;
      r.logits.push_back(guided.view({batch, n, bits, 2}).to(at::kCPU));
      r.bits.push_back(own.to(at::kCPU));
      return ref_bits.narrow(1, begin, n);  // continue with the reference bits
    };
    options.next_inputs = &r.next_inputs;
    options.block_outputs = &r.block_outputs;
    options.block_output_scales = 2;
    const InfinityText* text = nullptr;
    options.text_out = &text;
    const InfinityParams params = params_of(spec);
    auto network = text_conditioned_infinity(*transformer_, prompts, negatives, schedule_, params, options);
    scale::ScaleResult result =
        scale::generate(*network,
                        scale_shape(schedule_, batch, params.uses_cfg(static_cast<int64_t>(schedule_.grids.size()))));
    r.summed_codes = result.f_hat.to(at::kCPU);
    r.text_norm = text->normed.to(at::kCPU);
    r.cond = text->cond.to(at::kCPU);
    r.memory = text->memory.to(at::kCPU);
    return runs_.emplace(run, std::move(r)).first->second;
  }

  at::Tensor decoded(const at::Tensor& summed_codes) const { return decoder_->decode_raw(summed_codes.to(device_)); }

  bool produce(const std::string& name, const ojson& spec, ConformanceCheck& check) {
    if (name.rfind("tok_ids_", 0) == 0) {
      check = compare_with_reference(name, spec, ids_tensor(spec.at("text").get<std::string>()),
                                     ref(name).to(at::kLong));
      return true;
    }
    const size_t underscore = name.find('_');
    const std::string run = name.substr(0, underscore), field = name.substr(underscore + 1);
    if (run == "tf") {
      if (field == "x_BLC_wo_prefix") {
        check = compare_with_reference(name, spec, teacher_inputs(ref("tf_bits").to(at::kLong)), ref(name));
        check.note = "from the reference bits tf_bits";
        return true;
      }
      if (field == "logits") {
        const at::Tensor rows = opened_.input("tf_kv_compact").to(at::kFloat);
        const at::Tensor lens = opened_.input("tf_lens").to(at::kLong);
        const std::vector<int64_t> lengths(lens.data_ptr<int64_t>(), lens.data_ptr<int64_t>() + lens.numel());
        const InfinityText text = transformer_->encode_text(rows, lengths);
        const at::Tensor logits = transformer_->forward_teacher(text, ref("tf_x_BLC_wo_prefix").to(at::kFloat),
                                                                transformer_->rope_table(schedule_.scale_template,
                                                                                         schedule_.grids),
                                                                offsets_);
        check = compare_with_reference(name, spec, logits, ref(name));
        return true;
      }
      return false;  // tf_bits: the training quantizer's labels (debug, not on the inference path)
    }
    if (run == "dec" && field == "clamped") {
      check = compare_with_reference(name, spec, decoded(ref("bat_summed_codes").to(at::kFloat)).clamp(-1, 1),
                                     ref(name));
      check.note = "decoded from the reference bat_summed_codes";
      return true;
    }
    if (run != "bat" && run.rfind("gen", 0) != 0) return false;
    if (field == "input_ids") {
      check = compare_with_reference(name, spec, ids_tensor(spec.at("text").get<std::string>()),
                                     ref(name).to(at::kLong));
    } else if (field == "neg_input_ids") {
      check = compare_with_reference(name, spec, ids_tensor(spec.at("text").get<std::string>()),
                                     ref(name).to(at::kLong));
    } else if (field == "t5_hidden") {
      check = compare_with_reference(name, spec, t5_rows(run_spec(run).at("prompt").get<std::string>()), ref(name));
    } else if (field == "neg_t5_hidden") {
      check = compare_with_reference(name, spec, t5_rows(run_spec(run).at("negative_prompt").get<std::string>()),
                                     ref(name));
    } else {
      const ReplayedRun& r = replayed(run);
      if (field == "text_norm") {
        check = compare_with_reference(name, spec, r.text_norm, ref(name));
      } else if (field == "cond_BD") {
        check = compare_with_reference(name, spec, r.cond, ref(name));
      } else if (field == "ca_kv") {
        check = compare_with_reference(name, spec, r.memory, ref(name));
      } else if (field == "blocks_s0" || field == "blocks_s1") {
        const size_t si = field.back() == '0' ? 0 : 1;
        check = compare_with_reference(name, spec, at::stack(r.block_outputs.at(si), 0).to(at::kCPU), ref(name));
      } else if (field == "logits") {
        check = compare_with_reference(name, spec, at::cat(r.logits, 1), ref(name));
        check.note = "forced replay along the reference bits";
      } else if (field == "bits") {
        const std::string mask = spec.value("compare_where", run + "_decisive");
        check = compare_with_reference(name, spec, at::cat(r.bits, 1), ref(name).to(at::kLong), ref(mask));
      } else if (field == "next_input") {
        check = compare_with_reference(name, spec, at::cat(r.next_inputs, 1), ref(name));
      } else if (field == "summed_codes") {
        check = compare_with_reference(name, spec, r.summed_codes, ref(name));
      } else if (field == "image_raw") {
        check = compare_with_reference(name, spec, decoded(r.summed_codes), ref(name));
      } else if (field == "image_uint8_bgr") {
        at::Tensor image = to_uint8_bgr(decoded(r.summed_codes).clamp(-1, 1)).to(at::kCPU);
        if (ref(name).dim() == 3) image = image[0];
        check = compare_with_reference(name, spec, image, ref(name));
      } else {
        return false;
      }
    }
    return true;
  }

  // The next-scale inputs of the reference bits [B, L, d_inf] (the teacher-forcing inputs).
  at::Tensor teacher_inputs(const at::Tensor& bits) const {
    const int64_t batch = bits.size(0);
    auto sink = make_code_sink(batch, config_, schedule_.grids, device_);
    std::vector<at::Tensor> inputs;
    for (size_t si = 0; si < schedule_.grids.size(); ++si) {
      const int64_t begin = offsets_[si], n = offsets_[si + 1] - begin;
      at::Tensor next = sink->add_scale(static_cast<int64_t>(si), bits.narrow(1, begin, n).to(device_));
      if (next.defined()) inputs.push_back(next.to(at::kCPU));
    }
    return at::cat(inputs, 1);
  }

  const ojson& manifest_;
  OpenedConformanceCase opened_;
  at::Device device_;
  InfinityConfig config_;
  InfinitySchedule schedule_;
  std::vector<int64_t> offsets_;
  std::optional<InfinityTransformer> transformer_;
  std::optional<T5Encoder> t5_;
  std::optional<BsqDecoder> decoder_;
  std::optional<text::SentencePieceTokenizer> tokenizer_;
  std::map<std::string, ReplayedRun> runs_;
};

}  // namespace

ConformanceReport run_infinity_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                           c10::Device device) {
  InfinityCaseRunner runner(manifest, dir, device);
  return runner.run();
}

}  // namespace kvs
