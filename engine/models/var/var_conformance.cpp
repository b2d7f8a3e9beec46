#include "engine/models/var/var_conformance.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cctype>
#include <map>
#include <optional>

#include "engine/conformance/conformance_compare.h"
#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/var/var_generation.h"
#include "engine/models/var/var_model.h"

namespace kvs {
namespace {

using ojson = nlohmann::ordered_json;

// The arguments of the recorded autoregressive_infer_cfg(...) call.
struct InferCall {
  double cfg = 1.5;
  int64_t top_k = 0;
  double top_p = 0.0;  // upstream spelling: 0 = off
  uint64_t seed = 0;
  bool more_smooth = false;
  bool found = false;
};

// "name" followed by a digits suffix -> the number, e.g. ("idx_s7", "idx_s") -> 7.
std::optional<int64_t> index_suffix(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  int64_t value = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])) || i - prefix.size() > 6) return std::nullopt;
    value = value * 10 + (name[i] - '0');
  }
  return value;
}

// The text after "key=" up to the next ',' or ')' within `call`, or "".
std::string argument(const std::string& call, const std::string& key) {
  size_t pos = 0;
  while ((pos = call.find(key, pos)) != std::string::npos) {
    const bool word_start = pos == 0 ||
                            !(std::isalnum(static_cast<unsigned char>(call[pos - 1])) || call[pos - 1] == '_');
    size_t eq = pos + key.size();
    while (eq < call.size() && call[eq] == ' ') ++eq;
    if (word_start && eq < call.size() && call[eq] == '=') {
      size_t begin = eq + 1, end = begin;
      while (end < call.size() && call[end] != ',' && call[end] != ')') ++end;
      std::string value = call.substr(begin, end - begin);
      while (!value.empty() && value.front() == ' ') value.erase(value.begin());
      while (!value.empty() && value.back() == ' ') value.pop_back();
      return value;
    }
    pos += key.size();
  }
  return "";
}

// Finds the first "autoregressive_infer_cfg(" call text in the io tensors' meanings.
InferCall parse_infer_call(const ojson& tensors) {
  InferCall call;
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    const std::string meaning = it.value().value("meaning", "");
    const size_t at = meaning.find("autoregressive_infer_cfg(");
    if (at == std::string::npos) continue;
    const std::string text = meaning.substr(at, meaning.find(')', at) == std::string::npos
                                                    ? std::string::npos
                                                    : meaning.find(')', at) - at + 1);
    if (argument(text, "cfg").empty()) continue;  // a mention, not the call
    try {
      call.cfg = std::stod(argument(text, "cfg"));
      if (!argument(text, "top_k").empty()) call.top_k = std::stoll(argument(text, "top_k"));
      if (!argument(text, "top_p").empty()) call.top_p = std::stod(argument(text, "top_p"));
      if (!argument(text, "g_seed").empty()) call.seed = std::stoull(argument(text, "g_seed"));
      call.more_smooth = argument(text, "more_smooth") == "True";
    } catch (const std::exception&) {
      throw FormatError("cannot read the arguments of the recorded call '" + text + "'");
    }
    call.found = true;
    return call;
  }
  return call;
}

var::VarConfig var_config_of(const ojson& ctor) {
  nlohmann::json var_json = nlohmann::json::parse(ctor.at("var_args").dump());
  const auto& vae_args = ctor.at("vae_args");
  var_json["vocab_size"] = vae_args.at("vocab_size").get<int64_t>();
  var_json["Cvae"] = vae_args.at("z_channels").get<int64_t>();
  return var::var_config_from_json(var_json);
}

var::VqvaeConfig vqvae_config_of(const ojson& ctor) {
  nlohmann::json vae_json = nlohmann::json::parse(ctor.at("vae_args").dump());
  if (ctor.contains("vae_decoder") && ctor["vae_decoder"].contains("kwargs")) {
    const nlohmann::json kwargs = nlohmann::json::parse(ctor["vae_decoder"]["kwargs"].dump());
    vae_json.update(kwargs);
  }
  return var::vqvae_config_from_json(vae_json);
}

}  // namespace

ConformanceReport run_var_conformance(const ojson& manifest, const std::filesystem::path& dir, c10::Device device) {
  OpenedConformanceCase opened(manifest, dir, "var");
  ConformanceReport& report = opened.report;
  const auto& ctor = manifest.at("constructors");
  const var::VarConfig var_config = var_config_of(ctor);
  const var::VqvaeConfig vae_config = vqvae_config_of(ctor);

  const var::VarModel model = var::VarModel::from_weights(var_config, vae_config, *opened.weights, device);
  auto input = [&](const std::string& name) { return opened.input(name); };
  const int64_t scales = var_config.scales();
  auto ids_named = [&](const std::string& prefix) {
    std::vector<at::Tensor> ids;
    for (int64_t si = 0; si < scales; ++si) ids.push_back(input(prefix + std::to_string(si)));
    return ids;
  };

  // Lazily computed pieces shared by several checks.
  std::optional<at::Tensor> teacher_input, teacher_logits;
  std::optional<var::ScaleResult> generation;
  std::string generation_note;
  auto generate = [&]() -> const var::ScaleResult& {
    if (!generation) {
      const InferCall call = parse_infer_call(opened.tensors);
      if (!call.found) throw FormatError("the case records no autoregressive_infer_cfg(...) call");
      if (call.more_smooth) throw InvalidArgumentError("more_smooth=True (Gumbel smoothing) is not supported");
      var::ScaleParams params;
      params.cfg = call.cfg;
      params.seed = call.seed;
      params.sampling.top_k = call.top_k;
      params.sampling.top_p = call.top_p > 0 ? call.top_p : 1.0;
      var::ScaleHooks hooks;
      hooks.record_logits_scales = scales;
      generation = var::generate_scales(*model.transformer, *model.vqvae, input("label_B"), params, hooks);
      generation_note = "cfg=" + std::to_string(call.cfg).substr(0, 5) + ", top_k=" + std::to_string(call.top_k) +
                        ", seed " + std::to_string(call.seed);
    }
    return *generation;
  };
  std::optional<at::Tensor> reference_decoded;
  auto decode_reference = [&]() -> const at::Tensor& {
    if (!reference_decoded) reference_decoded = model.vqvae->decode_raw(input("f_hat"));
    return *reference_decoded;
  };

  check_outputs(opened.tensors, report, [&](const std::string& name, const ojson& spec, ConformanceCheck& check) {
    if (name == "x_BLCv_wo_first_l") {
      if (!teacher_input) teacher_input = model.vqvae->ids_to_var_input(ids_named("gt_idx_s"));
      check = compare_with_reference(name, spec, *teacher_input, opened.io_file->tensor(name));
    } else if (name == "logits") {
      // The transformer on its own: fed the reference teacher-forcing input.
      if (!teacher_logits)
        teacher_logits = model.transformer->forward_teacher(input("label_B"), input("x_BLCv_wo_first_l"));
      check = compare_with_reference(name, spec, *teacher_logits, opened.io_file->tensor(name));
    } else if (auto si = index_suffix(name, "idx_s")) {
      const auto& result = generate();
      if (*si >= static_cast<int64_t>(result.ids.size())) throw FormatError("scale index out of range");
      check = compare_with_reference(name, spec, result.ids[static_cast<size_t>(*si)],
                                     opened.io_file->tensor(name).to(at::kLong));
      check.note = generation_note;
    } else if (auto si_logits = index_suffix(name, "infer_cfg_logits_s")) {
      const auto& result = generate();
      if (*si_logits >= static_cast<int64_t>(result.scale_logits.size())) throw FormatError("scale index out of range");
      check = compare_with_reference(name, spec, result.scale_logits[static_cast<size_t>(*si_logits)],
                                     opened.io_file->tensor(name));
    } else if (name == "f_hat") {
      check = compare_with_reference(name, spec, generate().f_hat, opened.io_file->tensor(name));
    } else if (name == "image") {
      // The pipeline's own output: our f_hat through fhat_to_img, to [0, 1].
      at::Tensor image = (model.vqvae->fhat_to_img(generate().f_hat) + 1.0) * 0.5;
      check = compare_with_reference(name, spec, image, opened.io_file->tensor(name));
      check.note = "decoded from our f_hat";
    } else if (name == "fhat_to_img") {
      check = compare_with_reference(name, spec, decode_reference().clamp(-1, 1), opened.io_file->tensor(name));
      check.note = "decoded from reference f_hat";
    } else if (name == "dec_raw") {
      check = compare_with_reference(name, spec, decode_reference(), opened.io_file->tensor(name));
      check.note = "decoded from reference f_hat";
    } else {
      return false;
    }
    return true;
  });
  return report;
}

}  // namespace kvs
