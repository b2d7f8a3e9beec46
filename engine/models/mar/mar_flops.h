#pragma once
// FLOPs of a MAR run, counted from the shapes of the matmuls that actually run:
// every call site of a transformer or diffusion-head piece adds the work of the
// tensors it was given (engine/models/mar/mar_flops.cpp). Torch-free.
//
// Convention: a matmul [m, k] x [k, n] is 2·m·k·n FLOPs; attention of q queries
// over k keys of width w (summed over heads) is 2·q·k·w (Q·Kᵀ) + 2·q·k·w (P·V).
// Layer norms, softmax, activations and additions are not counted.
//
// (Two helpers wrote this file at the same time; this API is the agreed one —
// see build/notes/helper-mar-split.md.)
#include <cstdint>

#include "engine/models/mar/mar_config.h"

namespace kvs::mar {

struct MarFlops {
  static double linear(int64_t rows, int64_t in, int64_t out);
  static double attention(int64_t queries, int64_t keys, int64_t width);
  // One timm Block's pieces (decoder: the decoder's width and MLP) on `rows` sequences.
  static double block_qkv(const MarConfig& c, bool decoder, int64_t rows, int64_t tokens);
  static double block_attend(const MarConfig& c, bool decoder, int64_t rows, int64_t queries, int64_t keys);
  static double block_mlp(const MarConfig& c, bool decoder, int64_t rows, int64_t tokens);
  static double block(const MarConfig& c, bool decoder, int64_t rows, int64_t tokens);
  static double encoder_input(const MarConfig& c, int64_t rows);                 // z_proj on every grid token
  static double decoder_input(const MarConfig& c, int64_t rows, int64_t known);  // decoder_embed
  // forward_mae_encoder + forward_mae_decoder on `rows` sequences with `known` known tokens.
  static double full_transformer(const MarConfig& c, int64_t rows, int64_t known);
  // The diffusion head's pieces on `rows` rows.
  static double head_condition(const MarConfig& c, int64_t rows);
  static double head_input(const MarConfig& c, int64_t rows);
  static double head_res_block(const MarConfig& c, int64_t rows);
  static double head_final(const MarConfig& c, int64_t rows);
  static double head_forward(const MarConfig& c, int64_t rows);
};

// Accumulates the FLOPs of a run: `total` over the run, `step` over the current step.
struct MarFlopCounter {
  double total = 0;
  double step = 0;
  void begin_step() { step = 0; }
  void add(double flops) {
    total += flops;
    step += flops;
  }
};

}  // namespace kvs::mar
