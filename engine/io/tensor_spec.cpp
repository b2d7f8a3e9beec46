#include "engine/io/tensor_spec.h"

#include <cctype>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/safetensors_format.h"

namespace kvs::io {
namespace {

std::string join_limited(const std::vector<std::string>& items, std::size_t limit = 12) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > limit) out += ", ... (" + std::to_string(items.size() - limit) + " more)";
  return out;
}

}  // namespace

void check_tensor_set(const ShapeMap& have, const std::vector<ExpectedTensor>& expected, const std::string& origin) {
  std::vector<std::string> missing, unexpected, wrong_shape;
  std::set<std::string> expected_names;
  for (const auto& e : expected) {
    expected_names.insert(e.name);
    auto it = have.find(e.name);
    if (it == have.end()) {
      missing.push_back(e.name);
    } else if (it->second != e.shape) {
      wrong_shape.push_back("tensor " + e.name + " has shape " + shape_string(it->second) + ", expected " +
                            shape_string(e.shape));
    }
  }
  for (const auto& [name, shape] : have)
    if (expected_names.count(name) == 0) unexpected.push_back(name);
  if (missing.empty() && unexpected.empty() && wrong_shape.empty()) return;
  // Appended piece by piece (GCC 12 warns falsely on `"literal" + std::string&&` chains).
  std::string msg = origin;
  msg += ":";
  auto add = [&msg](const char* label, const std::string& list) {
    msg += label;
    msg += list;
    msg += ";";
  };
  if (!wrong_shape.empty()) add(" ", join_limited(wrong_shape, 6));
  if (!missing.empty()) add(" missing tensors: ", join_limited(missing));
  if (!unexpected.empty()) add(" unexpected tensors: ", join_limited(unexpected));
  msg.pop_back();
  throw ModelMismatchError(msg);
}

int64_t count_indexed(const ShapeMap& shapes, const std::string& prefix, const std::string& suffix) {
  std::set<int64_t> idx;
  for (const auto& entry : shapes) {
    const std::string& k = entry.first;
    if (k.rfind(prefix, 0) != 0) continue;
    size_t pos = prefix.size(), digits = 0;
    while (pos + digits < k.size() && std::isdigit(static_cast<unsigned char>(k[pos + digits]))) ++digits;
    if (digits == 0 || digits > 9 || k.compare(pos + digits, std::string::npos, "." + suffix) != 0) continue;
    idx.insert(std::stoll(k.substr(pos, digits)));
  }
  return static_cast<int64_t>(idx.size());
}

}  // namespace kvs::io
