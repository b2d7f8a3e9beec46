#include "engine/models/lumina/lumina_conformance.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <optional>
#include <regex>

#include "engine/conformance/conformance_compare.h"
#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/lumina/lumina_generation.h"
#include "engine/models/lumina/lumina_model.h"
#include "engine/models/lumina/lumina_prompt.h"
#include "engine/sampling/token_sampler.h"
#include "engine/text/bpe_tokenizer.h"

namespace kvs {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using namespace lumina;

nlohmann::json plain(const ojson& j) { return nlohmann::json::parse(j.dump()); }

double call_number(const std::string& call, const std::string& key, double fallback) {
  std::smatch m;
  if (std::regex_search(call, m, std::regex(key + R"(\s*=\s*(-?[0-9.eE+-]+))"))) return std::stod(m[1]);
  return fallback;
}

// The case's constructor arguments -> our config; the VQGAN from the yaml's
// parameters as the manifest records them.
LuminaConfig config_of_case(const ojson& manifest) {
  const ojson& ctor = manifest.at("constructors");
  LuminaConfig c;
  c.lm = chameleon_config_from_hf(plain(ctor.at("ChameleonConfig_effective")));
  const ojson& vq = ctor.at("vqgan");
  c.vqgan = vqgan_config_from_params(
      {{"embed_dim", vq.at("embed_dim")}, {"n_embed", vq.at("n_embed")}, {"ddconfig", plain(vq.at("ddconfig"))}});
  const ojson& layout = ctor.at("image_layout");
  c.image_size = layout.at("width_px_in_prompt").get<int64_t>();
  c.validate();
  return c;
}

// softmax(top-k(scores) / T): the distribution the official loop hands to
// torch.multinomial (TemperatureLogitsWarper only when T != 1).
at::Tensor sampling_probs(const at::Tensor& scores, int64_t top_k, double temperature) {
  at::Tensor s = filter_top_k_top_p(scores.to(at::kCPU, at::kFloat), top_k, 1.0);
  if (temperature != 1.0) s = s / temperature;
  return at::softmax(s, -1);
}

ConformanceReport run_lumina(const ojson& manifest, const fs::path& dir, at::Device device) {
  OpenedConformanceCase opened(manifest, dir, "lumina-mgpt");
  ConformanceReport& report = opened.report;
  const LuminaConfig config = config_of_case(manifest);
  LuminaModel model = LuminaModel::from_weights(config, *opened.weights, device, at::kFloat);
  const std::string case_name = manifest.at("case").get<std::string>();
  model.attach_tokenizer((dir / (case_name + ".files") / "hf_model").string());
  const ojson& layout = manifest.at("constructors").at("image_layout");
  const LuminaImageSize size{layout.at("width_px_in_prompt").get<int64_t>(),
                             layout.at("height_px_in_prompt").get<int64_t>()};
  // The settings as numbers where the case records them, else read from the call.
  const ojson& generation = manifest.at("constructors").at("lumina_generation");
  const std::string call = generation.value("call", "");
  auto setting = [&](const char* key, double fallback) {
    return generation.contains(key) && generation.at(key).is_number() ? generation.at(key).get<double>()
                                                                      : call_number(call, key, fallback);
  };
  const double cfg = setting("cfg", 3.0);
  // create_logits_processor keeps at least one token: max(k, 1).
  const int64_t image_top_k = std::max<int64_t>(1, static_cast<int64_t>(setting("image_top_k", 2000)));
  const int64_t text_top_k = std::max<int64_t>(1, static_cast<int64_t>(setting("text_top_k", 10)));
  const double temperature = setting("temperature", 1.0);
  const std::string prompt_text = manifest.at("prompt_text").get<std::string>();
  const std::vector<int64_t> prompt = lumina_text_ids(*model.tokenizer, config, prompt_text);
  const int64_t p = static_cast<int64_t>(prompt.size());
  const int64_t body = size.body_tokens();

  const at::Tensor q = opened.input("sample_exp_q").to(at::kFloat);
  auto replay = [&](int64_t step, const at::Tensor& probs) {
    return (probs / q.select(0, step).unsqueeze(0)).argmax(-1);
  };

  // The replayed run, once.
  struct Run {
    at::Tensor tokens;  // [S] every sampled token
    LuminaRecord record;
    at::Tensor tf_own;  // teacher-forced logits over our own tokens [S, V]
  };
  std::optional<Run> run;
  auto teacher_forced = [&](const at::Tensor& generated) {
    at::Tensor ids =
        at::cat({at::tensor(prompt, at::TensorOptions().dtype(at::kLong)), generated.to(at::kLong)}).unsqueeze(0);
    at::Tensor hidden = model.lm->forward(model.lm->embed(ids), 0, nullptr);
    return model.lm->logits(hidden.select(0, 0).narrow(0, p - 1, generated.size(0) + 1));
  };
  auto the_run = [&]() -> Run& {
    if (run) return *run;
    Run r;
    raster::RasterParams params;
    params.cfg_scale = cfg;
    params.sampling.top_k = image_top_k;
    params.sampling.temperature = temperature;
    params.sampling.rng = SamplerRng::Cpu;
    params.choose = [&](int64_t step, const at::Tensor& logits) {
      return replay(step + 3, sampling_probs(logits, image_top_k, temperature));
    };
    LuminaSteps steps;
    steps.size = size;
    steps.text_top_k = text_top_k;
    steps.record_steps = 8;
    steps.choose_header = [&](int64_t step, const at::Tensor& logits) {
      return replay(step, sampling_probs(logits, step == 0 ? text_top_k : image_top_k, temperature));
    };
    raster::RasterResult result = generate_from_prompt(model, prompt, {}, 1, params, steps, {}, &r.record);
    // The official loop's last two steps: <eoss> forced, then the separator in
    // text mode (no CFG once the image is closed, the text top-k).
    at::Tensor generated = at::cat({r.record.header.reshape({-1}), result.tokens.reshape({-1}),
                                    at::full({1}, config.ids.end_of_image, at::TensorOptions().dtype(at::kLong))});
    r.tf_own = teacher_forced(generated);
    const int64_t last = generated.size(0);
    at::Tensor final_token = replay(last, sampling_probs(r.tf_own.narrow(0, last, 1), text_top_k, temperature));
    r.tokens = at::cat({generated, final_token.reshape({1})});
    run = std::move(r);
    return *run;
  };
  std::optional<at::Tensor> decoded;
  auto reference_codes = [&] {
    const at::Tensor gen = opened.io_file->tensor("gen_tokens").to(at::kLong);
    at::Tensor grid = gen.narrow(0, 3, body).reshape({size.token_height(), size.line_tokens()});
    return model.vocabulary->codes_of(grid.narrow(1, 0, size.token_width()).contiguous());
  };

  check_outputs(opened.tensors, report, [&](const std::string& name, const ojson& spec, ConformanceCheck& check) {
    auto ref = [&] { return opened.io_file->tensor(name); };
    if (name == "prompt_ids") {
      check = compare_with_reference(name, spec, at::tensor(prompt, at::TensorOptions().dtype(at::kLong)),
                                     ref().to(at::kLong));
    } else if (name == "uncond_prompt_ids") {
      check = compare_with_reference(name, spec, the_run().record.header.reshape({-1}), ref().to(at::kLong));
      check.note = "the header the replayed run wrote";
    } else if (name == "gen_tokens") {
      check = compare_with_reference(name, spec, the_run().tokens, ref().to(at::kLong));
      check.note = "sampling replayed from sample_exp_q";
    } else if (name == "tf_logits") {
      const at::Tensor gen = opened.io_file->tensor("gen_tokens").to(at::kLong);
      check = compare_with_reference(name, spec, teacher_forced(gen.narrow(0, 0, gen.size(0) - 1)), ref());
    } else if (name == "uncond_logits_steps3to7") {
      const auto& u = the_run().record.uncond_logits;
      check = compare_with_reference(name, spec, at::cat(std::vector<at::Tensor>(u.begin(), u.begin() + 5)), ref());
    } else if (name == "cfg_scores_steps3to7") {
      const LuminaRecord& r = the_run().record;
      std::vector<at::Tensor> rows;
      for (size_t s = 0; s < 5; ++s)
        rows.push_back(combine_cfg(at::cat({r.cond_logits[3 + s], r.uncond_logits[s]}), cfg));
      check = compare_with_reference(name, spec, at::cat(rows), ref());
    } else if (name == "probs_steps0to7") {
      const LuminaRecord& r = the_run().record;
      std::vector<at::Tensor> rows;
      for (int64_t s = 0; s < 8; ++s) {
        if (s < 3) {
          rows.push_back(
              sampling_probs(r.cond_logits[static_cast<size_t>(s)], s == 0 ? text_top_k : image_top_k, temperature));
          continue;
        }
        at::Tensor scores =
            combine_cfg(at::cat({r.cond_logits[static_cast<size_t>(s)], r.uncond_logits[static_cast<size_t>(s - 3)]}),
                        cfg);
        rows.push_back(
            sampling_probs(constrain_body_logits(scores, s - 3, size, config.ids), image_top_k, temperature));
      }
      check = compare_with_reference(name, spec, at::cat(rows), ref());
    } else if (name == "probs_last2") {
      const Run& r = the_run();
      const int64_t eoi_step = 3 + body;
      // The <eoss> step's scores are forced whatever CFG gave.
      at::Tensor forced = sampling_probs(constrain_body_logits(r.tf_own.narrow(0, eoi_step, 1), body, size, config.ids),
                                         image_top_k, temperature);
      at::Tensor text = sampling_probs(r.tf_own.narrow(0, eoi_step + 1, 1), text_top_k, temperature);
      check = compare_with_reference(name, spec, at::cat({forced, text}), ref());
    } else if (name == "image_codes") {
      check = compare_with_reference(name, spec, reference_codes(), ref().to(at::kLong));
      check.note = "from the reference gen_tokens through the tokenizer's image names";
    } else if (name == "image_decoded" || name == "image_uint8_hwc") {
      if (!decoded) decoded = model.vqgan->decode_codes(reference_codes().unsqueeze(0));
      at::Tensor got = name == "image_decoded" ? *decoded : lumina_images_to_uint8_nhwc(*decoded)[0];
      check = compare_with_reference(name, spec, got, ref());
      check.note = "decoded from the reference gen_tokens";
    } else {
      return false;
    }
    return true;
  });
  return report;
}

}  // namespace

ConformanceReport run_lumina_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                         c10::Device device) {
  return run_lumina(manifest, dir, device);
}

}  // namespace kvs
