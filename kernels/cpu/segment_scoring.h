#pragma once
// CPU twins of the CUDA scoring and compaction kernels (kernels/cuda/segment_scoring.h):
// the same descriptors (kernels/segment_scoring.h), plain loops, float32 arithmetic
// (bf16 / f16 keys widened as they are read). They are the reference the GPU
// kernels are tested against, and are themselves tested against the policies'
// own tensor code (tests/engine/test_segment_scoring.cpp). The key scores also
// serve the policies on the CPU (KvStore::key_scores): their dot products are
// vectorised and their segments run on LibTorch's threads (at::parallel_for).
//
// All functions validate what they can read on the host (sizes, buffers, every
// segment's start and length) and throw kvs::kernels::KernelArgumentError before
// writing anything.
#include "kernels/segment_scoring.h"

namespace kvs::kernels {

// One score per entry (see KeyScoreArgs): per segment, per grouped query head and
// query, a softmax over the entries the query sees (candidates, causality), its
// weights summed or averaged into args.scores.
void attention_key_scores_cpu(const SegmentKeys& keys, const KeyScoreArgs& args);

// Max / average pooling of votes over the candidates' slot order (see PoolArgs).
void pool_candidate_scores_cpu(const PoolArgs& args);

// Stable per-segment compaction by keep flags (see CompactionArgs).
void compact_segments_cpu(const CompactionArgs& args);

// float32 value of an element of `type` (bf16 / f16 bit patterns widened exactly).
float widen_element(const void* data, int64_t index, ScoreElementType type);

}  // namespace kvs::kernels
