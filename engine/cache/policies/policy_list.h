#pragma once
// A list of policy specs as a person types it ("full,linear:rho=1/6,n_init=4,
// streaming:rho=1/4"), split into specs: the command line's --policies and the
// window's --compare read it the same way.
#include <string>
#include <vector>

namespace kvs {

// A comma followed by "key=" continues the previous spec, one followed by a
// policy name (policy_registry()) starts a new spec. Throws InvalidArgumentError
// for an empty list, a parameter before any policy, or an unknown policy name
// (listing the known ones).
std::vector<std::string> split_policy_list(const std::string& text);

}  // namespace kvs
