#pragma once
// The one place text becomes a number: command-line options, family options and
// policy parameters all parse here, so they accept and refuse the same texts.
// Torch-free.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvs {

// "0.25", "4", "1/6" -> number; nullopt for anything else (empty, trailing
// characters, a zero denominator, inf/nan).
std::optional<double> parse_number_text(const std::string& text);

// Whole-text integer / number for option `option`; throws InvalidArgumentError
// "option --x expects an integer, got '...'" (or "... must not be negative").
int64_t parse_int_option(const std::string& option, const std::string& text);
uint64_t parse_u64_option(const std::string& option, const std::string& text);
double parse_double_option(const std::string& option, const std::string& text);
// "1,2,3" -> {1, 2, 3}; every item an integer.
std::vector<int64_t> parse_int_list_option(const std::string& option, const std::string& text);

}  // namespace kvs
