#pragma once
// Typed reads of tokenizer JSON fields: a missing or mistyped field becomes a
// FormatError "<where>: field 'x' ..." instead of nlohmann's bare type error.
// Torch-free.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/text/unicode_regex.h"

namespace kvs::text {

const nlohmann::json& json_field(const nlohmann::json& node, const std::string& key, const std::string& where);
std::string json_string(const nlohmann::json& node, const std::string& key, const std::string& where);
const nlohmann::json& json_array(const nlohmann::json& node, const std::string& key, const std::string& where);
const nlohmann::json& json_object(const nlohmann::json& node, const std::string& key, const std::string& where);
// A boolean field that may be absent (then `fallback`).
bool json_bool(const nlohmann::json& node, const std::string& key, bool fallback, const std::string& where);
// {"Regex": "..."} or {"String": "..."}, compiled.
UnicodeRegex json_pattern(const nlohmann::json& node, const std::string& key, const std::string& where);

}  // namespace kvs::text
