#include "engine/models/var/var_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "engine/core/errors.h"

namespace kvs::var {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgumentError(message);
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

// Constructor arguments that do not change inference.
const std::set<std::string> kIgnoredVarFields = {"drop_rate",      "attn_drop_rate",     "drop_path_rate",
                                                 "cond_drop_rate", "flash_if_available", "fused_if_available"};
const std::set<std::string> kIgnoredVqvaeFields = {"dropout", "beta", "using_znorm", "test_mode"};

}  // namespace

int64_t VarConfig::mlp_hidden() const {
  // Python round(): ties to even, like std::nearbyint in the default rounding mode.
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(embed_dim) * mlp_ratio));
}

int64_t VarConfig::scale_begin(int64_t si) const {
  int64_t begin = 0;
  for (int64_t i = 0; i < si; ++i) begin += scale_tokens(i);
  return begin;
}

int64_t VarConfig::total_tokens() const { return scale_begin(scales()); }

double VarConfig::attention_scale() const {
  return attn_l2_norm ? 1.0 : 0.25 / std::sqrt(static_cast<double>(head_dim()));
}

int64_t VarConfig::parameter_count() const {
  const int64_t c = embed_dim, h = mlp_hidden();
  int64_t per_block = 3 * c * c + 2 * c + c * c + c + h * c + h + c * h + c;
  if (attn_l2_norm) per_block += num_heads;
  per_block += shared_aln ? 6 * c : 6 * c * c + 6 * c;
  int64_t total = cvae * c + c + (num_classes + 1) * c + first_l() * c + total_tokens() * c + scales() * c;
  total += depth * per_block;
  if (shared_aln) total += 6 * c * c + 6 * c;
  total += 2 * c * c + 2 * c + vocab_size * c + vocab_size;
  return total;
}

void VarConfig::validate() const {
  require(depth > 0 && embed_dim > 0 && num_heads > 0, "var config: depth, embed_dim and num_heads must be positive");
  require(embed_dim % num_heads == 0, "var config: embed_dim " + std::to_string(embed_dim) +
                                          " is not divisible by num_heads " + std::to_string(num_heads));
  require(mlp_ratio > 0 && mlp_hidden() > 0, "var config: mlp_ratio must be positive");
  require(norm_eps > 0, "var config: norm_eps must be positive");
  require(num_classes > 0, "var config: num_classes must be positive");
  require(vocab_size > 0 && cvae > 0, "var config: vocab_size and Cvae must be positive");
  require(!patch_nums.empty(), "var config: patch_nums must not be empty");
  for (size_t i = 0; i < patch_nums.size(); ++i) {
    require(patch_nums[i] > 0, "var config: patch_nums must be positive (got " + join(patch_nums) + ")");
    require(i == 0 || patch_nums[i] > patch_nums[i - 1],
            "var config: patch_nums must increase from scale to scale (got " + join(patch_nums) + ")");
  }
}

bool VqvaeConfig::phi_is_identity() const { return std::abs(quant_resi) <= 1e-6; }

int64_t VqvaeConfig::phi_count() const {
  if (phi_is_identity()) return 0;
  if (share_quant_resi == 0)
    return default_qresi_counts > 0 ? default_qresi_counts : static_cast<int64_t>(v_patch_nums.size());
  if (share_quant_resi == 1) return 1;
  return share_quant_resi;
}

std::vector<double> VqvaeConfig::phi_ticks() const {
  if (share_quant_resi == 1) return {};
  const int64_t k = share_quant_resi == 0
                        ? (default_qresi_counts > 0 ? default_qresi_counts : static_cast<int64_t>(v_patch_nums.size()))
                        : share_quant_resi;
  const double kd = static_cast<double>(k);
  // np.linspace(1/3/K, 1-1/3/K, K) if K == 4 else np.linspace(1/2/K, 1-1/2/K, K):
  // y[i] = i * ((stop - start) / (K - 1)) + start, and y[K-1] = stop exactly.
  const double start = k == 4 ? 1.0 / 3.0 / kd : 1.0 / 2.0 / kd;
  const double stop = 1.0 - start;
  std::vector<double> ticks(static_cast<size_t>(k));
  if (k == 1) {
    ticks[0] = start;
    return ticks;
  }
  const double step = (stop - start) / static_cast<double>(k - 1);
  for (int64_t i = 0; i < k; ++i) {
    volatile double scaled = static_cast<double>(i) * step;  // no fused multiply-add: numpy rounds twice
    ticks[static_cast<size_t>(i)] = scaled + start;
  }
  ticks.back() = stop;
  return ticks;
}

int64_t VqvaeConfig::phi_index(int64_t si) const {
  if (share_quant_resi == 1) return 0;
  const int64_t sn = static_cast<int64_t>(v_patch_nums.size());
  const double at = sn > 1 ? static_cast<double>(si) / static_cast<double>(sn - 1) : 0.0;
  const std::vector<double> ticks = phi_ticks();
  int64_t best = 0;
  for (size_t i = 1; i < ticks.size(); ++i)  // argmin: the first of equal minima
    if (std::abs(ticks[i] - at) < std::abs(ticks[static_cast<size_t>(best)] - at)) best = static_cast<int64_t>(i);
  return best;
}

std::vector<int64_t> VqvaeConfig::phi_schedule() const {
  std::vector<int64_t> out;
  for (int64_t si = 0; si < static_cast<int64_t>(v_patch_nums.size()); ++si) out.push_back(phi_index(si));
  return out;
}

void VqvaeConfig::validate() const {
  require(vocab_size > 0 && z_channels > 0, "vae config: vocab_size and z_channels must be positive");
  require(!ch_mult.empty(), "vae config: ch_mult must not be empty");
  require(ch > 0 && num_res_blocks >= 0, "vae config: ch must be positive and num_res_blocks >= 0");
  for (int64_t m : ch_mult)
    require(m > 0 && (ch * m) % 32 == 0,
            "vae config: every decoder channel count ch*ch_mult must be a positive multiple of 32 (GroupNorm(32))");
  require(quant_conv_ks > 0 && quant_conv_ks % 2 == 1, "vae config: quant_conv_ks must be a positive odd number");
  require(share_quant_resi >= 0, "vae config: share_quant_resi must be >= 0");
  require(default_qresi_counts >= 0, "vae config: default_qresi_counts must be >= 0");
  require(!v_patch_nums.empty(), "vae config: v_patch_nums must not be empty");
  require(in_channels > 0, "vae config: in_channels must be positive");
}

std::vector<int64_t> patch_nums_for_resolution(int64_t image_size) {
  if (image_size == 256) return {1, 2, 3, 4, 5, 6, 8, 10, 13, 16};
  if (image_size == 512) return {1, 2, 3, 4, 6, 9, 13, 18, 24, 32};
  if (image_size == 1024) return {1, 2, 3, 4, 5, 7, 9, 12, 16, 21, 27, 36, 48, 64};
  throw InvalidArgumentError("VAR has no official scale schedule for " + std::to_string(image_size) +
                             " px (known: 256, 512, 1024)");
}

VarConfig var_preset(const std::string& name_in, int64_t image_size, int64_t num_classes) {
  std::string name = name_in;
  if (name.rfind("var-", 0) == 0) name = name.substr(4);
  struct Size {
    const char* name;
    int64_t depth;
    int64_t resolution;
    bool shared_aln;
  };
  static const Size kSizes[] = {{"d16", 16, 256, false},
                                {"d20", 20, 256, false},
                                {"d24", 24, 256, false},
                                {"d30", 30, 256, false},
                                {"d36", 36, 512, true}};
  for (const auto& s : kSizes) {
    if (name != s.name) continue;
    VarConfig c;
    c.depth = s.depth;
    c.embed_dim = 64 * s.depth;
    c.num_heads = s.depth;
    c.shared_aln = s.shared_aln;
    c.attn_l2_norm = true;
    c.num_classes = num_classes;
    c.patch_nums = patch_nums_for_resolution(image_size > 0 ? image_size : s.resolution);
    c.vocab_size = 4096;
    c.cvae = 32;
    c.validate();
    return c;
  }
  throw InvalidArgumentError("unknown VAR size '" + name_in + "' (known: d16, d20, d24, d30, d36)");
}

std::vector<std::string> var_preset_names() { return {"d16", "d20", "d24", "d30", "d36"}; }

VqvaeConfig vqvae_preset(const std::vector<int64_t>& patch_nums) {
  VqvaeConfig c;
  c.v_patch_nums = patch_nums;
  return c;
}

VarConfig var_config_from_json(const nlohmann::json& j) {
  require(j.is_object(), "var config must be a JSON object");
  VarConfig c;
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      if (k == "depth") c.depth = v.get<int64_t>();
      else if (k == "embed_dim") c.embed_dim = v.get<int64_t>();
      else if (k == "num_heads") c.num_heads = v.get<int64_t>();
      else if (k == "mlp_ratio") c.mlp_ratio = v.get<double>();
      else if (k == "norm_eps") c.norm_eps = v.get<double>();
      else if (k == "shared_aln") c.shared_aln = v.get<bool>();
      else if (k == "attn_l2_norm") c.attn_l2_norm = v.get<bool>();
      else if (k == "num_classes") c.num_classes = v.get<int64_t>();
      else if (k == "vocab_size") c.vocab_size = v.get<int64_t>();
      else if (k == "Cvae") c.cvae = v.get<int64_t>();
      else if (k == "patch_nums") c.patch_nums = v.get<std::vector<int64_t>>();
      else if (kIgnoredVarFields.count(k) == 0) throw InvalidArgumentError("var config: unknown field '" + k + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("var config: wrong value type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

nlohmann::json to_json(const VarConfig& c) {
  return {{"depth", c.depth},
          {"embed_dim", c.embed_dim},
          {"num_heads", c.num_heads},
          {"mlp_ratio", c.mlp_ratio},
          {"norm_eps", c.norm_eps},
          {"shared_aln", c.shared_aln},
          {"attn_l2_norm", c.attn_l2_norm},
          {"num_classes", c.num_classes},
          {"vocab_size", c.vocab_size},
          {"Cvae", c.cvae},
          {"patch_nums", c.patch_nums}};
}

VqvaeConfig vqvae_config_from_json(const nlohmann::json& j) {
  require(j.is_object(), "vae config must be a JSON object");
  VqvaeConfig c;
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      if (k == "vocab_size") c.vocab_size = v.get<int64_t>();
      else if (k == "z_channels") c.z_channels = v.get<int64_t>();
      else if (k == "ch") c.ch = v.get<int64_t>();
      else if (k == "ch_mult") c.ch_mult = v.get<std::vector<int64_t>>();
      else if (k == "num_res_blocks") c.num_res_blocks = v.get<int64_t>();
      else if (k == "using_sa") c.using_sa = v.get<bool>();
      else if (k == "using_mid_sa") c.using_mid_sa = v.get<bool>();
      else if (k == "in_channels") c.in_channels = v.get<int64_t>();
      else if (k == "quant_conv_ks") c.quant_conv_ks = v.get<int64_t>();
      else if (k == "quant_resi") c.quant_resi = v.get<double>();
      else if (k == "share_quant_resi") c.share_quant_resi = v.get<int64_t>();
      else if (k == "default_qresi_counts") c.default_qresi_counts = v.get<int64_t>();
      else if (k == "v_patch_nums") c.v_patch_nums = v.get<std::vector<int64_t>>();
      else if (kIgnoredVqvaeFields.count(k) == 0) throw InvalidArgumentError("vae config: unknown field '" + k + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("vae config: wrong value type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

nlohmann::json to_json(const VqvaeConfig& c) {
  return {{"vocab_size", c.vocab_size},
          {"z_channels", c.z_channels},
          {"ch", c.ch},
          {"ch_mult", c.ch_mult},
          {"num_res_blocks", c.num_res_blocks},
          {"using_sa", c.using_sa},
          {"using_mid_sa", c.using_mid_sa},
          {"in_channels", c.in_channels},
          {"quant_conv_ks", c.quant_conv_ks},
          {"quant_resi", c.quant_resi},
          {"share_quant_resi", c.share_quant_resi},
          {"default_qresi_counts", c.default_qresi_counts},
          {"v_patch_nums", c.v_patch_nums}};
}

void check_compatible(const VarConfig& var, const VqvaeConfig& vae) {
  if (var.vocab_size != vae.vocab_size)
    throw ModelMismatchError("VAR vocab_size " + std::to_string(var.vocab_size) +
                             " does not match the VQVAE vocab_size " + std::to_string(vae.vocab_size));
  if (var.cvae != vae.z_channels)
    throw ModelMismatchError("VAR Cvae " + std::to_string(var.cvae) + " does not match the VQVAE z_channels " +
                             std::to_string(vae.z_channels));
  if (var.patch_nums != vae.v_patch_nums)
    throw ModelMismatchError("VAR patch_nums (" + join(var.patch_nums) + ") do not match the VQVAE v_patch_nums (" +
                             join(vae.v_patch_nums) + ")");
}

}  // namespace kvs::var
