#include "engine/models/infinity/infinity_family.h"
#include "engine/models/infinity/infinity_random_init.h"

namespace kvs::infinity {

const FamilyDescription& infinity_description() {
  static const FamilyDescription d = [] {
    FamilyDescription f;
    f.name = "infinity";
    f.display_name = "next-scale text-to-image (Infinity)";
    f.summary = "text-conditional (T5), next-scale prediction of BSQ bits";
    f.unit = GenerationUnit::Scale;
    f.conditioning = Conditioning::Text;
    f.grid = "pyramid of token maps of the chosen aspect ratio, coarse to fine; each token carries d bits";
    f.measures_kv_bytes = true;
    f.overlays.attention_map = true;
    f.overlays.retained_masks = true;
    f.overlays.scale_matrix = true;
    f.policy_family = "scale";
    f.compare_presets = {"", "full", "streaming:rho=0.25", "h2o:rho=0.25", "snapkv:rho=0.25", "amskv"};
    f.request_options = {"prompt", "negative_prompt", "images", "image_size"};
    // `calibrate` stores these per image size (infinity_calibration.h); runs measure them on first use otherwise.
    f.calibrated_policies = {"heatkv", "amskv", "scalekv", "hack"};
    f.conformance_constructor = "infinity";
    f.random_presets = infinity_random_presets();
    f.convert_usage =
        "--checkpoint infinity_2b_reg.pth|infinity_8b_weights/ --vae infinity_vae_d32reg.pth --t5 flan-t5-xl/ --out "
        "DIR\n"
        "  [--dtype keep|f32|f16|bf16 (default keep)] [--pixel-budget 0.06M|0.25M|0.60M|1M (default 1M)] [--name "
        "NAME]\n"
        "  --checkpoint: the .pth state dict (2B) or the folder of safetensors shards (8B); --vae: the BSQ-VAE\n"
        "  .pth (or a .safetensors of its state dict); --t5: the google/flan-t5-xl folder (config.json,\n"
        "  spiece.model, weights). Only the VAE's decoder and T5's encoder are kept";
    f.convert_inputs = {
        {"--checkpoint", "Transformer", "infinity_2b_reg.pth, or the folder of infinity_8b_weights shards", false},
        {"--vae", "BSQ-VAE", "infinity_vae_d32reg.pth (2B) or infinity_vae_d56_f8_14_patchify.pth (8B)", false},
        {"--t5", "T5 encoder", "the downloaded google/flan-t5-xl folder (config.json, spiece.model, weights)", true}};
    f.create_random_usage =
        "[--preset infinity-2b|infinity-8b|infinity-small|infinity-tiny] [--seed N]\n"
        "  [--dtype f32|f16|bf16 (default bf16; small and tiny f32)]\n"
        "  A randomly initialised Infinity bundle (transformer, T5 encoder, BSQ-VAE decoder) with a small\n"
        "  SentencePiece tokenizer trained on a few captions: measure speed and memory of the official sizes\n"
        "  without a download (infinity-2b with flan-t5-xl needs about 7 GB in bf16).";
    return f;
  }();
  return d;
}

}  // namespace kvs::infinity
