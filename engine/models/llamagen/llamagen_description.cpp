#include "engine/models/llamagen/llamagen_family.h"

#include "engine/models/llamagen/llamagen_config.h"

namespace kvs::llamagen {

const FamilyDescription& llamagen_description() {
  static const FamilyDescription d = [] {
    FamilyDescription f;
    f.name = "llamagen";
    f.display_name = "raster (LlamaGen)";
    f.summary = "class-conditional, raster next-token";
    f.unit = GenerationUnit::Line;
    f.conditioning = Conditioning::ClassLabel;
    f.grid = "square token grid, generated row by row";
    f.measures_kv_bytes = true;
    f.overlays.attention_map = true;
    f.overlays.retained_masks = true;
    f.policy_family = "raster";
    f.compare_presets = {"",
                         "full",
                         "linear:rho=0.25",
                         "streaming:rho=0.25",
                         "headkv:rho=0.25",
                         "h2o:rho=0.25",
                         "snapkv:rho=0.25",
                         "rkv:rho=0.25",
                         "random:rho=0.25",
                         "linear:rho=0.125"};
    f.request_options = {"cfg_interval", "from_image"};
    f.conformance_constructor = "gpt";
    f.random_presets = {"demo"};
    for (const std::string& size : gpt_preset_names()) f.random_presets.push_back(size);
    f.convert_usage =
        "--checkpoint c2i_B_384.pt --tokenizer vq_ds16_c2i.pt --out DIR\n"
        "  [--image-size 256|384 (default: from the file name)] [--n-head N (default: official size table)]\n"
        "  [--dtype keep|f32|f16|bf16 (default keep)] [--name NAME]";
    f.create_random_usage =
        "[--preset demo|GPT-B|GPT-L|GPT-XL|GPT-XXL|GPT-XXXL|GPT-1B|GPT-3B|GPT-7B]\n"
        "  [--image-size 256|384] [--tokenizer VQ-16|VQ-8] [--classes N] [--seed N] [--dtype f32|f16|bf16]\n"
        "  [--vq-encoder yes]  (also a random VQ encoder, so that the bundle can finish pictures)\n"
        "  A randomly initialised LlamaGen bundle: the demo preset is the bundled default model\n"
        "  (untrained); official sizes let you measure speed and memory without a download.";
    return f;
  }();
  return d;
}

}  // namespace kvs::llamagen
