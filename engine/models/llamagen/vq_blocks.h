#pragma once
// The building blocks of LlamaGen's VQ tokenizer (tokenizer/tokenizer_image/
// vq_model.py: ResnetBlock, AttnBlock, Normalize, conv layers), as functions over
// a VQModel state_dict (name -> tensor). The engine's VqDecoder and the training
// tool's encoder (engine/training) share them, so both sides of the tokenizer run
// one implementation; with weights that require grad they build autograd graphs.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>

namespace kvs::llamagen::vq_blocks {

using Weights = std::map<std::string, at::Tensor>;

// Throws ModelMismatchError("VQ weights: missing tensor <name>").
const at::Tensor& weight(const Weights& w, const std::string& name);
// nn.Conv2d "<prefix>.weight/.bias" with symmetric padding.
at::Tensor conv(const Weights& w, const at::Tensor& x, const std::string& prefix, int64_t padding, int64_t stride = 1);
// Normalize(): GroupNorm(32 groups, eps 1e-6, affine).
at::Tensor group_norm(const Weights& w, const at::Tensor& x, const std::string& prefix);
// ResnetBlock (nin_shortcut when the tensor exists, i.e. in != out channels).
at::Tensor resnet_block(const Weights& w, const at::Tensor& x, const std::string& prefix);
// AttnBlock: single-head self-attention over all positions.
at::Tensor attn_block(const Weights& w, const at::Tensor& x, const std::string& prefix);

}  // namespace kvs::llamagen::vq_blocks
