#include "engine/models/janus/janus_config.h"
#include "engine/models/janus/janus_family.h"

namespace kvs::janus {

const FamilyDescription& janus_description() {
  static const FamilyDescription d = [] {
    FamilyDescription f;
    f.name = "janus-pro";
    f.display_name = "text-to-image (Janus-Pro)";
    f.summary = "text-conditional, raster next-token";
    f.unit = GenerationUnit::Line;
    f.conditioning = Conditioning::Text;
    f.grid = "square token grid after the prompt, generated row by row";
    f.measures_kv_bytes = true;
    f.overlays.attention_map = true;
    f.overlays.retained_masks = true;
    f.policy_family = "raster";
    // ρ = 1/6 is the budget LineAR reports its Janus-Pro speed-ups at.
    f.compare_presets = {"",
                         "full",
                         "linear:rho=1/6",
                         "headkv:rho=1/6",
                         "streaming:rho=1/6",
                         "h2o:rho=1/6",
                         "snapkv:rho=1/6",
                         "rkv:rho=1/6",
                         "random:rho=1/6",
                         "linear:rho=0.25"};
    f.request_options = {"prompt", "negative_prompt", "images", "from_image"};
    f.conformance_constructor = "gen_aligner";
    f.random_presets = {"janus-pro-tiny"};
    for (const std::string& size : janus_preset_names()) f.random_presets.push_back(size);
    f.convert_usage =
        "--checkpoint DIR --out DIR [--dtype keep|f32|f16|bf16 (default keep)] [--image-size PX (default 384)]\n"
        "  [--name NAME]\n"
        "  DIR: the official Hugging Face folder (deepseek-ai/Janus-Pro-1B or -7B) as downloaded:\n"
        "  config.json, tokenizer.json (+ tokenizer_config.json, special_tokens_map.json), and\n"
        "  *.safetensors or pytorch_model*.bin shards with their index";
    f.converts_from_folder = true;
    f.create_random_usage =
        "[--preset janus-pro-1b|janus-pro-7b|janus-pro-tiny] [--seed N] [--dtype f32|f16|bf16 (default bf16; tiny "
        "f32)]\n"
        "  [--vq-encoder yes]  (also a random VQ encoder, so that the bundle can finish pictures)\n"
        "  A randomly initialised Janus-Pro bundle with a byte-level tokenizer: measure speed and\n"
        "  memory of the official sizes without a download (janus-pro-7b needs about 15 GB of RAM\n"
        "  to write in bf16).";
    return f;
  }();
  return d;
}

}  // namespace kvs::janus
