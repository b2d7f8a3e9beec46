#pragma once
// The policy registry seen without ATen, for code that must not include it (the
// Qt window, docs/design.md): the registry's own descriptions (names, one-line
// summaries, typed parameters with defaults, ranges and one sentence of help;
// policy_description.h), not a copy, so that the window, the CLI and the
// benchmarks list exactly the same policies and parameters.
//
// Ranges are UI hints (slider and spin-box bounds); the registry stays the one
// validator (policy_spec_problem() and the session check every spec). Numbers in
// parameter values parse with kvs::parse_number_text (engine/core/number_parsing.h).
#include <cstddef>
#include <map>
#include <string>

#include "engine/cache/policies/policy_description.h"
#include "engine/cache/policies/policy_spec.h"

namespace kvs {

// Every registered policy's description, in registry order ("full" first).
// Iterating yields const PolicyDescription&.
class PolicyCatalog {
 public:
  class Iterator {
   public:
    explicit Iterator(size_t index) : index_(index) {}
    const PolicyDescription& operator*() const;
    const PolicyDescription* operator->() const { return &**this; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const Iterator& other) const = default;

   private:
    size_t index_;
  };

  size_t size() const;
  const PolicyDescription& operator[](size_t index) const;
  Iterator begin() const { return Iterator(0); }
  Iterator end() const { return Iterator(size()); }
};

PolicyCatalog policy_catalog();
// nullptr when unknown.
const PolicyDescription* find_policy_entry(const std::string& name);

// Empty when the name and parameters are valid; else the registry's message.
// Budgets that need the model's grid are checked when a run starts.
std::string policy_spec_problem(const std::string& spec);

}  // namespace kvs
