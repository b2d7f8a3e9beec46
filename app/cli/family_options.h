#pragma once
// Command-line options handed on to a model family (`convert`, `create-random`):
// the family reads what applies to it; what it did not read is refused, named.
#include <string>
#include <vector>

#include "app/cli/arg_parser.h"
#include "engine/session/model_family.h"

namespace kvs::cli {

// The parser's value options, minus those the command itself consumed.
FamilyOptions family_options(const ArgParser& parser, const std::vector<std::string>& consumed);

}  // namespace kvs::cli
