#include "engine/models/mar/mar_conformance.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "engine/conformance/conformance_compare.h"
#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/mar_weights.h"
#include "engine/models/mar/masked_generation.h"

namespace kvs {
namespace {

using ojson = nlohmann::ordered_json;

// The text of the first call `name(...)` in `text` (brackets balanced), or "".
std::string call_text(const std::string& text, const std::string& name) {
  size_t at = 0;
  while ((at = text.find(name + "(", at)) != std::string::npos) {
    const bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_');
    if (!word_start) {
      at += name.size();
      continue;
    }
    int depth = 0;
    for (size_t i = at + name.size(); i < text.size(); ++i) {
      if (text[i] == '(' || text[i] == '[') ++depth;
      if (text[i] == ')' || text[i] == ']') --depth;
      if (depth == 0) return text.substr(at, i - at + 1);
    }
    return "";
  }
  return "";
}

// The value text of `key=...` inside a call text: a [list], a 'string' (without
// quotes) or everything up to the next ',' or ')'. "" when absent.
std::string argument(const std::string& call, const std::string& key) {
  size_t pos = 0;
  while ((pos = call.find(key, pos)) != std::string::npos) {
    const bool word_start = pos == 0 ||
                            !(std::isalnum(static_cast<unsigned char>(call[pos - 1])) || call[pos - 1] == '_');
    size_t eq = pos + key.size();
    while (eq < call.size() && call[eq] == ' ') ++eq;
    if (!word_start || eq >= call.size() || call[eq] != '=') {
      pos += key.size();
      continue;
    }
    size_t begin = eq + 1;
    while (begin < call.size() && call[begin] == ' ') ++begin;
    if (begin >= call.size()) return "";
    const char first = call[begin];
    if (first == '[') {
      const size_t end = call.find(']', begin);
      return end == std::string::npos ? "" : call.substr(begin, end - begin + 1);
    }
    if (first == '\'' || first == '"') {
      const size_t end = call.find(first, begin + 1);
      return end == std::string::npos ? "" : call.substr(begin + 1, end - begin - 1);
    }
    size_t end = begin;
    while (end < call.size() && call[end] != ',' && call[end] != ')') ++end;
    std::string value = call.substr(begin, end - begin);
    while (!value.empty() && value.back() == ' ') value.pop_back();
    return value;
  }
  return "";
}

double number_argument(const std::string& call, const std::string& key, double fallback) {
  const std::string v = argument(call, key);
  if (v.empty()) return fallback;
  try {
    size_t used = 0;
    const double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
  }
  throw FormatError("cannot read " + key + "=" + v + " in the recorded call '" + call + "'");
}

std::vector<int64_t> list_argument(const std::string& call, const std::string& key) {
  std::string v = argument(call, key);
  std::vector<int64_t> out;
  if (v.size() < 2 || v.front() != '[') return out;
  v = v.substr(1, v.size() - 2);
  size_t begin = 0;
  while (begin < v.size()) {
    size_t end = v.find(',', begin);
    if (end == std::string::npos) end = v.size();
    const std::string item = v.substr(begin, end - begin);
    try {
      out.push_back(std::stoll(item));
    } catch (const std::exception&) {
      throw FormatError("cannot read " + key + "=[" + v + "] in the recorded call '" + call + "'");
    }
    begin = end + 1;
  }
  return out;
}

// The meaning text of the first io tensor that records `call_name(`.
std::string recorded_call(const ojson& tensors, const std::string& call_name) {
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    const std::string text = call_text(it.value().value("meaning", ""), call_name);
    if (!text.empty()) return text;
  }
  return "";
}

mar::MarConfig mar_config_of(const ojson& ctor) {
  return mar::mar_config_from_json(nlohmann::json::parse(ctor.at("mar").at("args").dump()));
}

// The VAE decoder from the weights' shapes; the recorded constructor call, when
// it states them, must agree.
mar::KlVaeConfig vae_config_of(const ojson& ctor, const io::SafetensorsReader& weights) {
  io::ShapeMap shapes;
  for (const auto& e : weights.index().tensors)
    if (e.name.rfind("vae.", 0) == 0) shapes[e.name.substr(4)] = e.shape;
  mar::KlVaeConfig c = mar::infer_kl_vae_config(shapes, "file " + weights.path());
  const std::string call = ctor.contains("vae") ? ctor["vae"].value("call", "") : "";
  const std::string decoder = call_text(call, "Decoder");
  if (!decoder.empty()) {
    const double ch = number_argument(decoder, "ch", static_cast<double>(c.ch));
    const std::vector<int64_t> ch_mult = list_argument(decoder, "ch_mult");
    if (static_cast<int64_t>(ch) != c.ch || (!ch_mult.empty() && ch_mult != c.ch_mult))
      throw FormatError("the case's VAE call '" + decoder + "' disagrees with its weights' shapes");
  }
  return c;
}

}  // namespace

ConformanceReport run_mar_conformance(const ojson& manifest, const std::filesystem::path& dir, c10::Device device) {
  OpenedConformanceCase opened(manifest, dir, "mar");
  ConformanceReport& report = opened.report;
  const auto& ctor = manifest.at("constructors");
  const mar::MarConfig mar_config = mar_config_of(ctor);
  const mar::KlVaeConfig vae_config = vae_config_of(ctor, *opened.weights);
  const mar::MarModel model = mar::MarModel::from_weights(mar_config, vae_config, *opened.weights, device);
  auto input = [&](const std::string& name) { return opened.input(name).to(device); };
  auto call_of = [&](const std::string& tensor, const std::string& call_name) {
    const std::string meaning = opened.tensors.contains(tensor) ? opened.tensors[tensor].value("meaning", "") : "";
    std::string text = call_text(meaning, call_name);
    if (text.empty()) text = recorded_call(opened.tensors, call_name);
    return text;
  };

  // Lazily computed pieces shared by several checks.
  std::optional<mar::MaskedResult> generation;
  std::string generation_note;
  auto generate = [&]() -> const mar::MaskedResult& {
    if (generation) return *generation;
    const std::string call = call_of("tokens", "sample_tokens");
    if (call.empty()) throw FormatError("the case records no sample_tokens(...) call");
    mar::MaskedParams params;
    params.num_iter = static_cast<int64_t>(number_argument(call, "num_iter", 64));
    params.cfg = number_argument(call, "cfg", 1.0);
    const std::string schedule = argument(call, "cfg_schedule");
    if (!schedule.empty()) params.cfg_schedule = schedule;
    params.temperature = number_argument(call, "temperature", 1.0);
    // Replay: the orders, then per iteration the initial draw and one draw per reverse step.
    std::vector<at::Tensor> draws;
    for (int64_t i = 0; i < params.num_iter; ++i) {
      draws.push_back(opened.io_file->tensor("noise_it" + std::to_string(i) + "_init"));
      for (const at::Tensor& step : opened.io_file->tensor("noise_it" + std::to_string(i) + "_steps").unbind(0))
        draws.push_back(step);
    }
    mar::ReplayMarRandom rng(opened.io_file->tensor("orders"), std::move(draws));
    generation = mar::generate_masked(model, input("labels"), params, rng);
    if (rng.draws_used() != rng.draws_total())
      throw FormatError("the run used " + std::to_string(rng.draws_used()) + " of " +
                        std::to_string(rng.draws_total()) + " recorded draws");
    generation_note = "num_iter " + std::to_string(params.num_iter) + ", cfg " + argument(call, "cfg") + " " +
                      params.cfg_schedule + ", " + std::to_string(rng.draws_used()) + " draws replayed";
    return *generation;
  };
  std::optional<std::pair<at::Tensor, at::Tensor>> psteps;  // sample, pred_xstart: [T, N, C]
  auto run_psteps = [&]() -> const std::pair<at::Tensor, at::Tensor>& {
    if (psteps) return *psteps;
    const std::string call = call_of("pstep_sample", "p_sample");
    const double cfg = number_argument(call, "cfg_scale", 1.0);
    const double temperature = number_argument(call, "temperature", 1.0);
    const at::Tensor x = input("pstep_x"), c = input("pstep_z"), noise = input("pstep_noise");
    const int64_t steps = model.diffusion->num_timesteps();
    if (noise.size(0) != steps)
      throw FormatError("pstep_noise holds " + std::to_string(noise.size(0)) + " steps, the sampler has " +
                        std::to_string(steps));
    mar::GaussianDiffusion::ModelFn fn = [&](const at::Tensor& xt, int64_t, const at::Tensor& t) {
      return cfg != 1.0 ? model.head->forward_with_cfg(xt, t, c, cfg) : model.head->forward(xt, t, c);
    };
    std::vector<at::Tensor> samples, starts;
    for (int64_t j = 0; j < steps; ++j) {
      auto step = model.diffusion->p_sample(fn, x, steps - 1 - j, noise[j], temperature);
      samples.push_back(step.sample);
      starts.push_back(step.pred_xstart);
    }
    psteps = std::make_pair(at::stack(samples), at::stack(starts));
    return *psteps;
  };
  std::optional<at::Tensor> encoded;
  auto encode = [&]() -> const at::Tensor& {
    if (!encoded)
      encoded = model.transformer->forward_encoder(input("tokens_in"), input("mask"),
                                                   model.transformer->class_embedding(input("labels")));
    return *encoded;
  };

  check_outputs(opened.tensors, report, [&](const std::string& name, const ojson& spec, ConformanceCheck& check) {
    if (name == "enc_out") {
      check = compare_with_reference(name, spec, encode(), opened.io_file->tensor(name));
    } else if (name == "z") {
      // The decoder on its own: fed the reference encoder output.
      at::Tensor z = model.transformer->forward_decoder(input("enc_out"), input("mask"));
      check = compare_with_reference(name, spec, z, opened.io_file->tensor(name));
    } else if (name == "head_out") {
      check = compare_with_reference(name, spec, model.head->forward(input("head_x"), input("head_t"), input("head_c")),
                                     opened.io_file->tensor(name));
    } else if (name == "head_out_cfg") {
      const double cfg = number_argument(call_of(name, "forward_with_cfg"), "cfg_scale", 1.0);
      at::Tensor out = model.head->forward_with_cfg(input("head_x"), input("head_t"), input("head_c"), cfg);
      check = compare_with_reference(name, spec, out, opened.io_file->tensor(name));
    } else if (name == "tokens") {
      const auto& result = generate();
      check = compare_with_reference(name, spec, model.unpatchify(result.tokens), opened.io_file->tensor(name));
      check.note = generation_note;
    } else if (name == "images") {
      // The whole pipeline: our own sampled tokens through vae.decode(tokens / 0.2325).
      at::Tensor images = model.decode_tokens(generate().tokens);
      check = compare_with_reference(name, spec, images, opened.io_file->tensor(name));
      check.note = "decoded from our tokens";
    } else if (name == "pstep_sample") {
      check = compare_with_reference(name, spec, run_psteps().first, opened.io_file->tensor(name));
    } else if (name == "pstep_pred_xstart") {
      check = compare_with_reference(name, spec, run_psteps().second, opened.io_file->tensor(name));
    } else {
      return false;
    }
    return true;
  });

  // The respaced schedule the case derives (an exact list, not an io tensor).
  const auto& derived = ctor.at("mar").value("derived", ojson::object());
  if (derived.contains("gen_diffusion_timestep_map")) {
    ConformanceCheck check;
    check.tensor = "gen_diffusion_timestep_map";
    check.role = "derived";
    check.exact = true;
    const auto expected = derived["gen_diffusion_timestep_map"].get<std::vector<int64_t>>();
    const auto& got = model.diffusion->timestep_map();
    check.elements = static_cast<int64_t>(expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      if (i >= got.size() || got[i] != expected[i]) ++check.mismatches;
    if (got.size() != expected.size()) {
      check.note = "got " + std::to_string(got.size()) + " steps, expected " + std::to_string(expected.size());
      check.mismatches = std::max<int64_t>(check.mismatches, 1);
    }
    check.passed = check.mismatches == 0;
    report.checks.push_back(check);
  }
  return report;
}

}  // namespace kvs
