#pragma once
// The one exception the kernels throw. kernels/ is a leaf below the engine (it
// includes nothing from engine/), so it cannot throw the engine's typed errors;
// callers in the engine translate this into kvs::InvalidArgumentError, keeping
// the message, which already names the kernel, the argument and what was expected
// ("ragged attention: lengths has shape [2], expected [1, 2]").
#include <stdexcept>

namespace kvs::kernels {

// A kernel was called with arguments it cannot run on (sizes, shapes, dtypes,
// devices, missing buffers); nothing was written.
class KernelArgumentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace kvs::kernels
