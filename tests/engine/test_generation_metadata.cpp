// PNG metadata of text requests (engine/session/generation_metadata.h): the
// human-readable "parameters" chunk in the layout other image tools read, the
// "kvstudio" JSON chunk's request with the prompt, and reading both back; class
// requests keep their layout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/session/generation_metadata.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

GenerationResult two_image_result() {
  GenerationResult result;
  RgbImage img;
  img.width = 8;
  img.height = 6;
  img.pixels.assign(static_cast<size_t>(8 * 6 * 3), 90);
  result.images = {img, img};
  result.tokens = {std::vector<int32_t>(576, 1), std::vector<int32_t>(576, 2)};
  result.model_name = "janus-pro-1b";
  result.policy = "linear:rho=0.25";
  result.device = "cpu";
  return result;
}

GenerationRequest text_request() {
  GenerationRequest r;
  r.model_path = "/models/janus-pro-1b";
  r.prompt = "a red fox in the snow,\nwinter light";
  r.negative_prompt = "blurry, low quality";
  r.images = 2;
  r.seed = 7;
  r.cfg_scale = 5;
  r.dtype = "bf16";
  r.policy = parse_policy_spec("linear:rho=0.25");
  return r;
}

}  // namespace

TEST(GenerationMetadata, TextRequestParametersChunkIsPromptNegativeThenSettings) {
  const PngTextChunks chunks = generation_png_chunks(text_request(), two_image_result(), 1, {}, "9.9");
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].first, "parameters");
  EXPECT_EQ(chunks[0].second,
            "a red fox in the snow,\nwinter light\n"
            "Negative prompt: blurry, low quality\n"
            "Steps: 576, Sampler: multinomial, CFG scale: 5, CFG interval: -1, Seed: 7, Temperature: 1, Top-k: 0, "
            "Top-p: 1, Size: 8x6, Batch size: 2, Batch pos: 1, Model: janus-pro-1b, KV policy: linear:rho=0.25, "
            "Version: KV Studio 9.9");
  const nlohmann::json meta = nlohmann::json::parse(chunks[1].second);
  EXPECT_FALSE(meta.contains("class_id"));
  const nlohmann::json& request = meta.at("request");
  EXPECT_EQ(request.at("prompt"), "a red fox in the snow,\nwinter light");
  EXPECT_EQ(request.at("negative_prompt"), "blurry, low quality");
  EXPECT_EQ(request.at("images"), 2);
  EXPECT_EQ(request.at("dtype"), "bf16");
}

TEST(GenerationMetadata, TextRequestWithoutNegativePromptHasNoNegativeLine) {
  GenerationRequest r = text_request();
  r.negative_prompt.clear();
  const PngTextChunks chunks = generation_png_chunks(r, two_image_result(), 0, {}, "1");
  EXPECT_EQ(chunks[0].second.rfind("a red fox in the snow,\nwinter light\nSteps: 576, ", 0), 0u) << chunks[0].second;
  EXPECT_EQ(chunks[0].second.find("Negative prompt"), std::string::npos);
}

TEST(GenerationMetadata, TextPngReadsBackThePromptAndNoClass) {
  test::TempDir dir;
  const GenerationRequest r = text_request();
  const GenerationResult result = two_image_result();
  write_png(dir.file("fox.png"), result.images[1], generation_png_chunks(r, result, 1, {}, "1"));
  const RecalledImage back = read_generation_png(dir.file("fox.png"));
  EXPECT_TRUE(back.request.is_text());
  EXPECT_EQ(back.request.prompt, r.prompt);
  EXPECT_EQ(back.request.negative_prompt, r.negative_prompt);
  EXPECT_EQ(back.request.dtype, "bf16");
  EXPECT_EQ(back.request.images, 1);  // this one image
  EXPECT_TRUE(back.request.class_ids.empty());
  EXPECT_EQ(back.class_id, -1);
  EXPECT_EQ(back.class_name, "");
  EXPECT_EQ(back.request.seed, 7u);
  EXPECT_EQ(back.model_name, "janus-pro-1b");
  EXPECT_EQ(back.parameters_text, generation_png_chunks(r, result, 1, {}, "1")[0].second);
  EXPECT_NO_THROW(back.request.validate());

  // The JSON request itself reads back field for field.
  const GenerationRequest again = request_from_json(to_json(r));
  EXPECT_EQ(again.prompt, r.prompt);
  EXPECT_EQ(again.negative_prompt, r.negative_prompt);
  EXPECT_EQ(again.images, 2);
  EXPECT_EQ(again.dtype, "bf16");
}

TEST(GenerationMetadata, ClassPngKeepsItsLayout) {
  test::TempDir dir;
  GenerationRequest r;
  r.class_ids = {3, 5};
  r.seed = 42;
  GenerationResult result = two_image_result();
  result.model_name = "demo";
  const PngTextChunks chunks = generation_png_chunks(r, result, 1, {"a", "b", "c", "d", "e", "goldfish"}, "1");
  EXPECT_EQ(chunks[0].second.rfind("goldfish (class 5)\nSteps: 576, Sampler: multinomial, ", 0), 0u);
  write_png(dir.file("c.png"), result.images[1], chunks);
  const RecalledImage back = read_generation_png(dir.file("c.png"));
  EXPECT_FALSE(back.request.is_text());
  EXPECT_EQ(back.class_id, 5);
  EXPECT_EQ(back.class_name, "goldfish");
  EXPECT_EQ(back.request.class_ids, std::vector<int64_t>{5});
}

TEST(GenerationMetadata, RequestFieldsOfTheWrongTypeAreFormatErrors) {
  EXPECT_THROW(request_from_json(nlohmann::json{{"prompt", 3}}), FormatError);
  EXPECT_THROW(request_from_json(nlohmann::json{{"negative_prompt", nlohmann::json::array({"a"})}}), FormatError);
  EXPECT_THROW(request_from_json(nlohmann::json{{"images", "two"}}), FormatError);
  EXPECT_THROW(request_from_json(nlohmann::json{{"dtype", false}}), FormatError);
  try {
    request_from_json(nlohmann::json{{"prompt", 3}});
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'prompt' has the wrong type"), std::string::npos) << e.what();
  }
}
