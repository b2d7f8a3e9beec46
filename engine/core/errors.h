#pragma once
// Typed engine exceptions. Every message names the thing the user can act on
// (a file, a tensor, an argument) and what was expected, e.g.
//   "file model.safetensors: tensor gpt.norm.weight has shape [64], expected [128]".
// The app and CLI catch kvs::Error and show what() — they never crash.
#include <stdexcept>
#include <string>

namespace kvs {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file is missing, unreadable or cannot be written.
class FileError : public Error {
 public:
  using Error::Error;
};

// A file exists but its content is malformed (corrupt header, bad JSON, spans out of bounds).
class FormatError : public Error {
 public:
  using Error::Error;
};

// Weights or configs do not fit the architecture (missing/unexpected keys, wrong shapes).
class ModelMismatchError : public Error {
 public:
  using Error::Error;
};

// A request or command-line argument is invalid (unknown class, impossible budget, ...).
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

// The requested device is unavailable (e.g. --device cuda on a machine without CUDA).
class DeviceError : public Error {
 public:
  using Error::Error;
};

// A running generation was cancelled by its owner; not a failure.
class CancelledError : public Error {
 public:
  CancelledError() : Error("generation cancelled") {}
};

}  // namespace kvs
