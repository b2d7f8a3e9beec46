#include "engine/models/mar/mar_family.h"

namespace kvs::mar {

const FamilyDescription& mar_description() {
  static const FamilyDescription d = [] {
    FamilyDescription f;
    f.name = "mar";
    f.display_name = "masked (MAR)";
    f.summary = "class-conditional, masked autoregressive with a diffusion head";
    f.unit = GenerationUnit::Step;
    f.conditioning = Conditioning::ClassLabel;
    f.grid = "square latent grid, filled in a random order";
    // MAR keeps no KV cache across steps: its cost is the FLOPs a step executes.
    f.measures_kv_bytes = false;
    f.measures_flops = true;
    f.discrete_tokens = false;
    f.overlays.recomputed_tokens = true;
    f.overlays.flops = true;
    f.policy_family = "masked";
    f.compare_presets = {"",
                         "full",
                         "lazymar",
                         "lazymar:interval=4",
                         "lazymar:retention=constant,ratio=0.25",
                         "lazymar:condition_cache=off"};
    f.request_options = {"steps", "cfg_schedule"};
    f.conformance_constructor = "mar";
    f.random_presets = {"mar-demo", "mar-B", "mar-L", "mar-H"};
    f.convert_usage =
        "--checkpoint mar_base/checkpoint-last.pth --tokenizer kl16.ckpt --out DIR\n"
        "  [--weights ema|raw (default ema: the model_ema entry the official evaluation uses)]\n"
        "  [--n-head N (default: official table, 12 for width 768, 16 for 1024/1280)] [--vae-stride 16]\n"
        "  [--diffusion-steps 100 (the diffusion head's respaced steps)] [--dtype keep|f32|f16|bf16] [--name NAME]";
    f.create_random_usage =
        "--preset mar-demo|mar-B|mar-L|mar-H\n"
        "  [--classes N] [--diffusion-steps 100] [--seed N] [--dtype ...]\n"
        "  A randomly initialised MAR bundle (masked, diffusion head) with the KL-16 VAE decoder\n"
        "  (mar-demo: a small 64-px model for tests and demos).";
    return f;
  }();
  return d;
}

}  // namespace kvs::mar
