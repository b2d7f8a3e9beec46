#pragma once
// The convolutional building blocks of the taming / LDM autoencoders (ResnetBlock,
// AttnBlock, Normalize, conv layers, as in LlamaGen's tokenizer/tokenizer_image/
// vq_model.py, VAR's basic_vae.py and MAR's vae.py), as functions over a state
// dict (name -> tensor). The three families' image decoders and the training
// tool's encoders share them, so every tokenizer runs one implementation; with
// weights that require grad they build autograd graphs. A floor of its own below
// the families, so that none of them includes another.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>

namespace kvs::conv_blocks {

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

}  // namespace kvs::conv_blocks
