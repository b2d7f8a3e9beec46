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
#include <vector>

namespace kvs::conv_blocks {

using Weights = std::map<std::string, at::Tensor>;

// at::conv2d and at::bmm, except that on the CPU bf16 and f16 operands are
// multiplied in float32 and the result rounded back to their dtype. A half-
// precision run's decoders keep their dtype between operations (as the official
// bf16 decodes do), but LibTorch's CPU convolution and matmul in bf16/f16 take a
// reference GEMM on CPUs without the AVX-512 BF16 / AMX instructions: measured on
// a 2-core AMD EPYC (AVX2, no AVX-512), LlamaGen's VQ decoder in bf16 did not
// finish one 384x384 image in minutes. A bf16 product sums in float32 anyway,
// so the numbers are a bf16 product's up to the summation order; on the GPU the
// calls are LibTorch's own.
at::Tensor conv2d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, int64_t stride,
                  int64_t padding);
at::Tensor bmm(const at::Tensor& a, const at::Tensor& b);

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

// The taming-transformers / LDM Decoder (taming/modules/diffusionmodules/model.py),
// as MAR's KL-16 and Chameleon's VQGAN use it: conv_in; mid = ResnetBlock,
// AttnBlock, ResnetBlock; for level L-1 .. 0, num_res_blocks + 1 ResnetBlocks
// (each followed by an AttnBlock where the level's resolution is listed in
// attn_resolutions) and, above level 0, a nearest x2 upsampling and a 3x3 conv;
// GroupNorm, swish, conv_out. No tanh. Weights under "<prefix>conv_in", ...
struct TamingDecoderShape {
  std::vector<int64_t> ch_mult;
  int64_t num_res_blocks = 2;
  std::vector<int64_t> attn_resolutions;
  int64_t resolution = 256;  // only decides where attn_resolutions apply
};
at::Tensor taming_decoder(const Weights& w, const at::Tensor& z, const TamingDecoderShape& shape,
                          const std::string& prefix = "decoder.");

}  // namespace kvs::conv_blocks
