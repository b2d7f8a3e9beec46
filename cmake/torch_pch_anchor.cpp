// The one source of kvs_torch_pch: a target needs a file to own the precompiled
// header that the engine's targets reuse (cmake/KvsTorchPch.cmake).
