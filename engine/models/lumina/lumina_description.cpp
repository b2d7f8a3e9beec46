#include "engine/models/lumina/lumina_config.h"
#include "engine/models/lumina/lumina_family.h"

namespace kvs::lumina {

const FamilyDescription& lumina_description() {
  static const FamilyDescription d = [] {
    FamilyDescription f;
    f.name = "lumina-mgpt";
    f.display_name = "text-to-image (Lumina-mGPT)";
    f.summary = "text-conditional, raster next-token; every image row ends in an end-of-line token";
    f.unit = GenerationUnit::Line;
    f.conditioning = Conditioning::Text;
    f.grid = "token rows after the prompt and a 3-token header, each row W image tokens and an end-of-line token";
    f.measures_kv_bytes = true;
    f.overlays.attention_map = true;
    f.overlays.retained_masks = true;
    f.policy_family = "raster";
    // ρ = 1/8 is LineAR's and HeadKV's headline budget on Lumina-mGPT (294 = 6 lines of 49 at 768 px).
    f.compare_presets = {"",
                         "full",
                         "linear:rho=1/8",
                         "headkv:rho=1/8",
                         "streaming:rho=1/8",
                         "h2o:rho=1/8",
                         "snapkv:rho=1/8",
                         "rkv:rho=1/8",
                         "random:rho=1/8",
                         "linear:rho=1/6"};
    f.request_options = {"prompt", "negative_prompt", "images", "image_size"};
    f.conformance_constructor = "lumina_generation";
    f.random_presets = {"lumina-mgpt-tiny", "lumina-mgpt-small"};
    for (const std::string& size : lumina_preset_names()) f.random_presets.push_back(size);
    f.convert_usage =
        "--checkpoint DIR --vqgan DIR --out DIR [--dtype keep|f32|f16|bf16 (default keep)]\n"
        "  [--image-size PX (default: from the folder's name, else 768)] [--name NAME]\n"
        "  --checkpoint: the Hugging Face folder (Alpha-VLLM/Lumina-mGPT-7B-768 and siblings) as downloaded:\n"
        "  config.json, tokenizer.json (+ tokenizer_config.json, special_tokens_map.json), and\n"
        "  *.safetensors shards with their index. --vqgan: Chameleon's tokenizer folder\n"
        "  (ckpts/chameleon/tokenizer) with vqgan.yaml and vqgan.ckpt";
    f.converts_from_folder = true;
    f.convert_inputs = {{"--checkpoint", "Model folder",
                         "the downloaded Alpha-VLLM/Lumina-mGPT-7B-768 (or sibling) folder", true},
                        {"--vqgan", "VQGAN folder",
                         "Chameleon's tokenizer folder (ckpts/chameleon/tokenizer: vqgan.yaml, vqgan.ckpt)", true}};
    f.create_random_usage =
        "[--preset lumina-mgpt-7b|lumina-mgpt-34b|lumina-mgpt-small|lumina-mgpt-tiny] [--seed N]\n"
        "  [--dtype f32|f16|bf16 (default bf16; small and tiny f32)]\n"
        "  A randomly initialised Lumina-mGPT bundle with a byte-level tokenizer in Chameleon's vocabulary\n"
        "  layout: measure speed and memory of the official sizes without a download (lumina-mgpt-7b\n"
        "  needs about 15 GB of RAM to write in bf16).";
    return f;
  }();
  return d;
}

}  // namespace kvs::lumina
