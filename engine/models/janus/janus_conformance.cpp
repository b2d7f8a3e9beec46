#include "engine/models/janus/janus_conformance.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <map>
#include <optional>
#include <regex>

#include "engine/conformance/conformance_compare.h"
#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/janus/janus_generation.h"
#include "engine/models/janus/janus_model.h"

namespace kvs {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

nlohmann::json plain(const ojson& j) { return nlohmann::json::parse(j.dump()); }

// The case's constructor arguments -> our config. The image grid is not a
// constructor argument: it is the io's image-token count; the decoder is the
// case's size-capped VQ (its constructor names the channel width).
janus::JanusConfig config_of_case(const ojson& manifest, int64_t image_tokens) {
  const ojson& ctor = manifest.at("constructors");
  const nlohmann::json l = plain(ctor.at("language_model").at("LlamaConfig_effective"));
  const nlohmann::json cfg = plain(ctor.at("config"));
  janus::JanusConfig c;
  nlohmann::json vq_json = plain(ctor.at("gen_vision_model").at("ModelArgs"));
  vq_json["ch"] = ctor.at("gen_vision_model").value("encoder_decoder_ch", 128);
  c.vq = vq::vq_config_from_json(vq_json);
  const int64_t grid = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(image_tokens))));
  if (grid * grid != image_tokens) throw FormatError("janus case: image tokens are not a square grid");
  c.image_size = grid * c.vq.downsample();
  c.language.hidden_size = l.at("hidden_size");
  c.language.intermediate_size = l.at("intermediate_size");
  c.language.num_hidden_layers = l.at("num_hidden_layers");
  c.language.num_attention_heads = l.at("num_attention_heads");
  c.language.num_key_value_heads = l.at("num_key_value_heads");
  c.language.vocab_size = l.at("vocab_size");
  c.language.rope_theta = l.at("rope_theta");
  c.language.rms_norm_eps = l.at("rms_norm_eps");
  c.language.max_position_embeddings = l.at("max_position_embeddings");
  c.image_token_size = cfg.at("gen_vision_config").at("image_token_size");
  c.gen_embed_dim = cfg.at("gen_vision_config").at("n_embed");
  c.aligner_depth = cfg.at("gen_aligner_config").at("depth");
  c.head_embed = cfg.at("gen_head_config").at("image_token_embed");
  c.validate();
  return c;
}

double call_number(const std::string& call, const std::string& key, double fallback) {
  std::smatch m;
  if (std::regex_search(call, m, std::regex(key + R"(\s*=\s*(-?[0-9.eE+-]+))"))) return std::stod(m[1]);
  return fallback;
}

// The official unconditional row: the prompt with positions 1..P-2 set to the pad id.
at::Tensor unconditional_row(const at::Tensor& prompt, int64_t pad_id) {
  at::Tensor row = prompt.clone();
  const int64_t p = row.size(0);
  if (p > 2) row.narrow(0, 1, p - 2).fill_(pad_id);
  return row;
}

ConformanceReport run_janus(const ojson& manifest, const fs::path& dir, at::Device device) {
  OpenedConformanceCase opened(manifest, dir, "janus-pro");
  ConformanceReport& report = opened.report;
  auto input = [&](const std::string& name) { return opened.input(name); };
  const at::Tensor input_ids = input("input_ids").to(at::kLong);
  const at::Tensor image_tokens_in = input("image_tokens_in").to(at::kLong);
  const int64_t pad_id = input("pad_id").to(at::kLong).reshape({-1})[0].item<int64_t>();
  const int64_t prompt_len = input_ids.size(1), batch = input_ids.size(0);
  const janus::JanusConfig config = config_of_case(manifest, image_tokens_in.size(1));
  const janus::JanusModel model = janus::JanusModel::from_weights(config, *opened.weights, device, at::kFloat);

  std::optional<at::Tensor> img_embeds, hidden;
  auto teacher_embeds = [&] {
    if (!img_embeds) img_embeds = model.image_embeds(image_tokens_in.narrow(1, 0, image_tokens_in.size(1) - 1));
    return *img_embeds;
  };
  auto teacher_hidden = [&] {
    if (!hidden)
      hidden = model.language->forward(at::cat({model.language->embed_text(input_ids), teacher_embeds()}, 1), 0,
                                       nullptr);
    return *hidden;
  };
  // One official generate() call per prompt (parallel_size = 1), stacked.
  struct Run {
    at::Tensor tokens;               // [B, N]
    std::vector<at::Tensor> logits;  // per step [B, V]
  };
  std::map<std::string, Run> runs;
  auto generate = [&](const std::string& name, const std::string& call, const at::Tensor* exp_q) -> const Run& {
    auto found = runs.find(name);
    if (found != runs.end()) return found->second;
    raster::RasterParams params;
    params.cfg_scale = call_number(call, "cfg_weight", 5.0);
    const double temperature = call_number(call, "temperature", 1.0);
    params.sampling.temperature = temperature;
    params.sampling.top_k = 0;
    params.sampling.top_p = 1.0;
    params.sampling.sample = exp_q != nullptr;
    params.sampling.rng = SamplerRng::Cpu;  // the references drew from the CPU generator
    raster::RasterHooks hooks;
    hooks.record_logits_steps = 3;
    std::vector<at::Tensor> tokens, logits;
    for (int64_t b = 0; b < batch; ++b) {
      if (exp_q != nullptr) {
        // torch.multinomial(probs, 1) on the CPU is argmax(probs / q), q the
        // recorded Exp(1) draws of that step.
        const at::Tensor q = exp_q->select(0, b);
        params.choose = [q, temperature](int64_t step, const at::Tensor& logits) {
          const at::Tensor probs = at::softmax(logits.to(at::kCPU) / temperature, -1);
          return (probs / q.select(0, step).unsqueeze(0)).argmax(-1);
        };
      }
      const at::Tensor prompt = input_ids.select(0, b);
      auto result = janus::generate_from_prompt(model, prompt, unconditional_row(prompt, pad_id), 1, params, hooks);
      tokens.push_back(result.tokens);
      logits.push_back(at::stack(result.step_logits) /
                       temperature);  // [3, 1, V], as the reference: after the temperature
    }
    Run run{at::cat(tokens), {}};
    at::Tensor all = at::cat(logits, 1);  // [3, B, V]
    for (int64_t s = 0; s < all.size(0); ++s) run.logits.push_back(all.select(0, s));
    return runs.emplace(name, std::move(run)).first->second;
  };
  std::optional<at::Tensor> decoded;

  check_outputs(opened.tensors, report, [&](const std::string& name, const ojson& spec, ConformanceCheck& check) {
    const std::string call = spec.value("call", "");
    std::smatch m;
    auto ref = [&] { return opened.io_file->tensor(name); };
    if (name == "tf_img_embeds") {
      check = compare_with_reference(name, spec, teacher_embeds(), ref());
    } else if (name == "tf_hidden") {
      check = compare_with_reference(name, spec, teacher_hidden(), ref());
    } else if (name == "tf_logits") {
      at::Tensor h = teacher_hidden();
      check = compare_with_reference(name, spec,
                                     model.image_logits(h.narrow(1, prompt_len - 1, h.size(1) - prompt_len + 1)),
                                     ref());
    } else if (name == "gen_tokens_greedy") {
      check = compare_with_reference(name, spec, generate(name, call, nullptr).tokens, ref().to(at::kLong));
    } else if (std::regex_match(name, m, std::regex(R"(gen_cfg_logits_steps(\d+)to(\d+))"))) {
      const std::string source = "gen_tokens_greedy";
      const std::string source_call = opened.tensors.at(source).value("call", "");
      const Run& run = generate(source, source_call, nullptr);
      const size_t first = std::stoul(m[1]), last = std::stoul(m[2]);
      if (last >= run.logits.size()) throw FormatError("janus case: " + name + " asks for more steps than recorded");
      std::vector<at::Tensor> steps(run.logits.begin() + first, run.logits.begin() + last + 1);
      check = compare_with_reference(name, spec, at::stack(steps), ref());
    } else if (name == "gen_tokens_sampled") {
      const at::Tensor q = input("sample_exp_q").to(at::kFloat);
      check = compare_with_reference(name, spec, generate(name, call, &q).tokens, ref().to(at::kLong));
      check.note = "sampling replayed from sample_exp_q";
    } else if (name == "images" || name == "images_uint8_nhwc") {
      if (!decoded) {
        // Decode the reference tokens, so the decoder is checked on its own.
        const int64_t grid = config.grid_size();
        decoded = model.vq->decode_codes(opened.io_file->tensor("gen_tokens_greedy"), grid, grid);
      }
      at::Tensor got = name == "images" ? *decoded : janus::janus_images_to_uint8_nhwc(*decoded);
      check = compare_with_reference(name, spec, got, ref());
      check.note = "decoded from reference gen_tokens_greedy";
    } else {
      return false;
    }
    return true;
  });
  return report;
}

}  // namespace

ConformanceReport run_janus_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                        c10::Device device) {
  return run_janus(manifest, dir, device);
}

}  // namespace kvs
