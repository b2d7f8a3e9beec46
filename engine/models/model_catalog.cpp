#include "engine/models/model_catalog.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/llamagen/llamagen_config.h"
#include "engine/models/mar/mar_config.h"
#include "engine/models/mar/mar_weights.h"
#include "engine/models/var/var_config.h"

namespace kvs {
namespace fs = std::filesystem;

ModelSummary summarize_model_bundle(const std::string& dir) {
  ModelSummary s;
  s.dir = dir;
  s.name = fs::path(dir).filename().string();
  try {
    const io::ModelBundle bundle = io::ModelBundle::open(dir);
    s.dir = bundle.dir;
    s.name = bundle.name();
    s.family = bundle.family();
    s.class_names = bundle.class_names();
    const nlohmann::json& m = bundle.manifest;
    if (m.contains("provenance") && m["provenance"].is_object())
      s.note = m["provenance"].value("note", std::string());
    if (m.contains("sampling_defaults") && m["sampling_defaults"].is_object()) {
      const auto& d = m["sampling_defaults"];
      if (d.contains("cfg_scale") && d["cfg_scale"].is_number()) s.sampling_defaults.cfg_scale = d["cfg_scale"].get<double>();
      if (d.contains("temperature") && d["temperature"].is_number()) s.sampling_defaults.temperature = d["temperature"].get<double>();
      if (d.contains("top_p") && d["top_p"].is_number()) s.sampling_defaults.top_p = d["top_p"].get<double>();
      if (d.contains("top_k") && d["top_k"].is_number_integer()) s.sampling_defaults.top_k = d["top_k"].get<int64_t>();
      if (d.contains("steps") && d["steps"].is_number_integer()) s.sampling_defaults.steps = d["steps"].get<int64_t>();
      if (d.contains("cfg_schedule") && d["cfg_schedule"].is_string())
        s.sampling_defaults.cfg_schedule = d["cfg_schedule"].get<std::string>();
    }
    std::error_code ec;
    const auto size = fs::file_size(bundle.weights_path(), ec);
    if (ec) throw FileError("weights file " + bundle.weights_path() + " is missing or unreadable");
    s.weights_bytes = static_cast<int64_t>(size);
    if (s.family == "var") {
      // Next-scale: the grid is the final scale's token map; no condition entries.
      const var::VarConfig c = var::var_config_from_json(m.at("architecture").at("var"));
      const var::VqvaeConfig v = var::vqvae_config_from_json(m.at("tokenizer"));
      s.n_layer = c.depth;
      s.n_head = c.num_heads;
      s.kv_heads = c.num_heads;
      s.head_dim = c.head_dim();
      s.grid = c.final_grid();
      s.scale_sides = c.patch_nums;
      s.condition_tokens = 0;
      s.num_classes = c.num_classes;
      s.image_size = v.image_size();
      s.gpt_parameters = c.parameter_count();
      s.kv_bytes_per_token = 2 * c.depth * c.num_heads * c.head_dim() * 4;
      std::ostringstream a;
      a << "VAR depth " << c.depth << ", width " << c.embed_dim << ", " << c.num_heads << " heads";
      if (c.shared_aln) a << " (shared AdaLN)";
      a << "; " << c.scales() << " scales up to " << s.grid << "x" << s.grid << " (" << c.total_tokens()
        << " tokens), " << s.image_size << " px; VQVAE " << v.vocab_size << " codes";
      s.architecture = a.str();
      return s;
    }
    if (s.family == "mar") {
      // Masked: no KV cache; the buffer positions play the condition tokens' part.
      const mar::MarConfig c = mar::mar_config_from_json(m.at("architecture").at("mar"));
      const mar::KlVaeConfig v = mar::kl_vae_config_from_json(m.at("tokenizer"));
      s.n_layer = c.decoder_depth;
      s.n_head = c.decoder_num_heads;
      s.kv_heads = c.decoder_num_heads;
      s.head_dim = c.decoder_embed_dim / c.decoder_num_heads;
      s.grid = c.seq_h();
      s.condition_tokens = c.buffer_size;
      s.num_classes = c.class_num;
      s.image_size = c.seq_h() * c.patch_size * v.upsampling();
      s.gpt_parameters = mar::mar_parameter_count(c);
      s.kv_bytes_per_token = 0;
      std::ostringstream a;
      a << "MAR width " << c.encoder_embed_dim << ", " << c.encoder_depth << "+" << c.decoder_depth << " blocks, "
        << c.encoder_num_heads << " heads; diffusion head " << c.diffloss_d << " x " << c.diffloss_w << "; " << s.grid
        << "x" << s.grid << " tokens, " << s.image_size << " px; KL VAE";
      s.architecture = a.str();
      return s;
    }
    if (s.family != "llamagen")
      throw InvalidArgumentError("model family '" + s.family + "' is not supported yet (supported: llamagen, var, mar)");
    const auto& arch = m.at("architecture");
    const llamagen::GptConfig g = llamagen::gpt_config_from_json(arch.at("gpt"));
    g.validate();
    llamagen::VqConfig v;
    if (m.contains("tokenizer")) v = llamagen::vq_config_from_json(m.at("tokenizer"));
    s.n_layer = g.n_layer;
    s.n_head = g.n_head;
    s.kv_heads = g.kv_heads();
    s.head_dim = g.head_dim();
    s.grid = g.grid_size();
    s.condition_tokens = g.cls_token_num;
    s.num_classes = g.num_classes;
    s.image_size = g.grid_size() * v.downsample();
    s.gpt_parameters = g.parameter_count();
    s.kv_bytes_per_token = 2 * g.n_layer * g.kv_heads() * g.head_dim() * 4;
    std::ostringstream a;
    a << "GPT dim " << g.dim << " x " << g.n_layer << " layers, " << g.n_head << " heads";
    if (g.kv_heads() != g.n_head) a << " (" << g.kv_heads() << " KV)";
    a << "; " << s.grid << "x" << s.grid << " tokens, " << s.image_size << " px; VQ " << v.codebook_size << " codes";
    s.architecture = a.str();
  } catch (const Error& e) {
    s.problem = e.what();
  } catch (const nlohmann::json::exception& e) {
    s.problem = "model.json in " + dir + ": " + e.what();
  } catch (const std::exception& e) {
    s.problem = e.what();
  }
  return s;
}

std::vector<ModelSummary> find_model_bundles(const std::vector<std::string>& folders) {
  std::vector<ModelSummary> out;
  std::set<std::string> seen;
  auto add = [&](const fs::path& dir) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(dir, ec);
    const std::string key = ec ? dir.string() : canonical.string();
    if (!seen.insert(key).second) return;
    out.push_back(summarize_model_bundle(key));
  };
  for (const std::string& folder : folders) {
    std::error_code ec;
    if (folder.empty() || !fs::is_directory(folder, ec)) continue;
    if (fs::exists(fs::path(folder) / "model.json", ec)) {
      add(folder);
      continue;
    }
    std::vector<fs::path> children;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory(ec) && fs::exists(it->path() / "model.json", ec)) children.push_back(it->path());
    std::sort(children.begin(), children.end());
    for (const auto& c : children) add(c);
  }
  return out;
}

}  // namespace kvs
