#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>

#include "engine/conformance/conformance_compare.h"
#include "engine/conformance/conformance_report.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/llamagen/llamagen_conformance.h"
#include "engine/models/llamagen/llamagen_generation.h"
#include "engine/models/llamagen/llamagen_model.h"

namespace kvs {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

struct GenerateCall {
  double cfg_scale = 1.0;
  int64_t cfg_interval = -1;
  double temperature = 1.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  bool sample = true;
  uint64_t seed = 0;
};

// Reads generate() arguments from the recorded call text; later calls ("same as
// above with cfg_scale=1.0") inherit what they do not restate.
GenerateCall parse_generate_call(const std::string& call, GenerateCall base) {
  std::smatch m;
  auto number = [&](const char* key, auto& out) {
    std::regex re(std::string(key) + R"(\s*=\s*(-?[0-9.eE+-]+))");
    if (std::regex_search(call, m, re)) out = static_cast<std::decay_t<decltype(out)>>(std::stod(m[1]));
  };
  number("cfg_scale", base.cfg_scale);
  number("cfg_interval", base.cfg_interval);
  number("temperature", base.temperature);
  number("top_k", base.top_k);
  number("top_p", base.top_p);
  if (std::regex_search(call, m, std::regex(R"(manual_seed\((\d+)\))"))) base.seed = std::stoull(m[1]);
  if (std::regex_search(call, m, std::regex(R"(sample_logits\s*=\s*(True|False))"))) base.sample = m[1] == "True";
  return base;
}

ConformanceReport run_llamagen(const ojson& manifest, const fs::path& dir, at::Device device) {
  OpenedConformanceCase opened(manifest, dir, "llamagen");
  ConformanceReport& report = opened.report;
  const auto& ctor = manifest.at("constructors");
  llamagen::GptConfig gpt_config = llamagen::gpt_config_from_json(
      nlohmann::json::parse(ctor.at("gpt").at("ModelArgs").dump()));
  nlohmann::json vq_json = nlohmann::json::parse(ctor.at("vq").at("ModelArgs").dump());
  vq_json["ch"] = ctor.at("vq").value("encoder_decoder_ch", 128);
  llamagen::VqConfig vq_config = llamagen::vq_config_from_json(vq_json);

  const llamagen::LlamaGenModel model = llamagen::LlamaGenModel::from_weights(gpt_config, vq_config, *opened.weights,
                                                                              device);
  auto input = [&](const std::string& name) { return opened.input(name); };

  // Lazily computed pieces shared by several checks.
  std::optional<at::Tensor> teacher_logits;
  auto teacher = [&]() -> at::Tensor {
    if (!teacher_logits) {
      at::Tensor tokens_in = input("tokens_in");
      teacher_logits = model.gpt->forward_teacher(input("labels"), tokens_in.narrow(1, 0, tokens_in.size(1) - 1));
    }
    return *teacher_logits;
  };
  struct GenRun {
    GenerateCall call;
    raster::RasterResult result;
  };
  std::map<std::string, GenRun> generations;
  GenerateCall last_call;
  std::optional<at::Tensor> decoded;
  std::string decoded_from;

  check_outputs(opened.tensors, report, [&](const std::string& name, const ojson& spec, ConformanceCheck& check) {
    const std::string call = spec.value("call", "");
    std::smatch m;
    if (name == "logits") {
      check = compare_with_reference(name, spec, teacher(), opened.io_file->tensor(name));
    } else if (name == "loss") {
      at::Tensor logits = teacher();
      at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                               input("tokens_in").to(device, at::kLong).reshape({-1}));
      check = compare_with_reference(name, spec, loss.reshape({1}), opened.io_file->tensor(name));
    } else if (std::regex_match(name, m, std::regex(R"(tokens_cfg([0-9.]+))"))) {
      GenerateCall g = parse_generate_call(call, last_call);
      if (call.find("cfg_scale") == std::string::npos) g.cfg_scale = std::stod(m[1]);
      last_call = g;
      raster::RasterParams params;
      params.cfg_scale = g.cfg_scale;
      params.cfg_interval = g.cfg_interval;
      // The references drew from torch.manual_seed(seed): the CPU generator.
      params.sampling = SamplingParams{g.temperature, g.top_k, g.top_p, g.sample, SamplerRng::Cpu};
      params.seed = g.seed;
      raster::RasterHooks hooks;
      hooks.record_logits_steps = 16;
      auto result = llamagen::generate_raster(*model.gpt, input("labels"), params, hooks);
      check = compare_with_reference(name, spec, result.tokens, opened.io_file->tensor(name).to(at::kLong));
      generations[name] = GenRun{g, std::move(result)};
    } else if (std::regex_match(name, m, std::regex(R"(gen_cfg_logits_steps(\d+)to(\d+))"))) {
      const GenRun* run = nullptr;
      for (const auto& [n, r] : generations)
        if (r.call.cfg_scale > 1.0 && (run == nullptr)) run = &r;
      if (run == nullptr) {
        check.skipped = true;
        check.note = "no CFG generation ran before it";
      } else {
        const int64_t first = std::stoll(m[1]), last = std::stoll(m[2]);
        std::vector<at::Tensor> steps(run->result.step_logits.begin() + first,
                                      run->result.step_logits.begin() + last + 1);
        check = compare_with_reference(name, spec, at::stack(steps), opened.io_file->tensor(name));
      }
    } else if (name == "images" || name == "images_uint8_nhwc") {
      if (!decoded) {
        std::smatch d;
        std::string source = "tokens_cfg4";
        if (std::regex_search(call, d, std::regex(R"(decode_code\((\w+))"))) source = d[1];
        else if (!opened.tensors.contains(source)) throw FormatError("cannot tell which tokens the images decode");
        // Decode the reference tokens so the decoder is checked on its own.
        at::Tensor codes = opened.io_file->tensor(source);
        const int64_t grid = gpt_config.grid_size();
        decoded = model.vq->decode_codes(codes, grid, grid);
        decoded_from = source;
      }
      at::Tensor got = name == "images" ? *decoded : llamagen::images_to_uint8_nhwc(*decoded);
      check = compare_with_reference(name, spec, got, opened.io_file->tensor(name));
      check.note = "decoded from reference " + decoded_from;
    } else {
      return false;
    }
    return true;
  });
  return report;
}

}  // namespace

ConformanceReport run_llamagen_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                           c10::Device device) {
  return run_llamagen(manifest, dir, device);
}

}  // namespace kvs
