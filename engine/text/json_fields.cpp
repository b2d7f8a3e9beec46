#include "engine/text/json_fields.h"

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"

namespace kvs::text {

const nlohmann::json& json_field(const nlohmann::json& node, const std::string& key, const std::string& where) {
  if (!node.is_object()) throw FormatError(where + ": expected an object, got " + std::string(node.type_name()));
  const auto it = node.find(key);
  if (it == node.end()) throw FormatError(where + ": field '" + key + "' is missing");
  return *it;
}

std::string json_string(const nlohmann::json& node, const std::string& key, const std::string& where) {
  const nlohmann::json& v = json_field(node, key, where);
  if (!v.is_string()) {
    throw FormatError(where + ": field '" + key + "' must be a string, got " + std::string(v.type_name()));
  }
  return v.get<std::string>();
}

const nlohmann::json& json_array(const nlohmann::json& node, const std::string& key, const std::string& where) {
  const nlohmann::json& v = json_field(node, key, where);
  if (!v.is_array()) {
    throw FormatError(where + ": field '" + key + "' must be an array, got " + std::string(v.type_name()));
  }
  return v;
}

const nlohmann::json& json_object(const nlohmann::json& node, const std::string& key, const std::string& where) {
  const nlohmann::json& v = json_field(node, key, where);
  if (!v.is_object()) {
    throw FormatError(where + ": field '" + key + "' must be an object, got " + std::string(v.type_name()));
  }
  return v;
}

bool json_bool(const nlohmann::json& node, const std::string& key, bool fallback, const std::string& where) {
  if (!node.is_object()) throw FormatError(where + ": expected an object, got " + std::string(node.type_name()));
  const auto it = node.find(key);
  if (it == node.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    throw FormatError(where + ": field '" + key + "' must be true or false, got " + std::string(it->type_name()));
  }
  return it->get<bool>();
}

UnicodeRegex json_pattern(const nlohmann::json& node, const std::string& key, const std::string& where) {
  const nlohmann::json& p = json_object(node, key, where);
  if (p.contains("Regex")) return UnicodeRegex(json_string(p, "Regex", where), UnicodeRegex::Syntax::Regex, where);
  if (p.contains("String")) return UnicodeRegex(json_string(p, "String", where), UnicodeRegex::Syntax::Literal, where);
  throw FormatError(where + ": field '" + key + "' must hold \"Regex\" or \"String\"");
}

}  // namespace kvs::text
