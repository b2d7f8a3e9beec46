#include "engine/io/random_bundle.h"

#include <ATen/CPUGeneratorImpl.h>

#include "engine/io/bundle_weights.h"

namespace kvs::io {

int64_t write_random_bundle(const std::string& dir, const nlohmann::json& manifest,
                            const std::vector<RandomBundlePart>& parts, uint64_t seed,
                            const std::string& weights_dtype) {
  // Parsed before drawing: a bad type name costs nothing and writes nothing.
  const at::ScalarType dtype = parse_weights_dtype(weights_dtype);
  at::Generator gen = at::detail::createCPUGenerator(seed);
  NamedTensors tensors;
  for (const RandomBundlePart& part : parts)
    for (const ExpectedTensor& e : part.tensors)
      tensors.emplace_back(part.prefix + e.name, part.draw(e, gen).to(dtype));
  return write_bundle(dir, manifest, tensors);
}

int64_t fan_in(const ExpectedTensor& tensor) {
  int64_t n = 1;
  for (size_t i = 1; i < tensor.shape.size(); ++i) n *= tensor.shape[i];
  return n;
}

}  // namespace kvs::io
