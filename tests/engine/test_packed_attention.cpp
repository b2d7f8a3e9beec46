// Attention over the packed cache on a GPU (kernels/cuda/packed_attention.h)
// against its CPU twin, the ragged kernel, in the style of llama.cpp's
// test-backend-ops: random ragged layouts (empty and one-entry segments, grouped
// query heads, CFG pairs, causal blocks) in f32, bf16 and f16. The same KvStore
// operations run on a CUDA store and a CPU float32 store holding the same
// (dtype-rounded) numbers; the GPU output must match the CPU output. Skipped,
// with the reason, where no GPU is present; the CPU-side contracts (paths,
// token records, sampler RNG names) run everywhere. Also on a GPU: attend()'s key
// mass (the scoring kernel) and eviction (the compaction kernel) against the
// CPU store.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <limits>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/attention_accumulator.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/core/host_upload.h"
#include "engine/sampling/sampling_params.h"
#include "engine/sampling/token_record.h"
#include "engine/sampling/token_sampler.h"
#include "kernels/cuda/packed_attention.h"

namespace kvs {
namespace {

struct Layout {
  std::string name;
  int64_t rows, kv_heads, n_head, head_dim;
  int64_t prefix;        // entries appended before the evictions
  double keep_fraction;  // share of entries each segment keeps (per-segment random)
  bool empty_segment;    // one segment loses every entry
  bool one_entry;        // one segment keeps a single entry
  bool cfg_pairs;        // evictions mirrored onto the CFG partner rows
  int64_t queries;       // new entries appended and attended (1 = a decode step)
  bool causal_block;     // queries > 1 attend causally among themselves
};

std::vector<Layout> layouts() {
  return {
      {"decode-uniform", 2, 2, 4, 64, 9, 1.0, false, false, false, 1, false},
      {"decode-ragged-gqa", 3, 2, 8, 64, 40, 0.5, false, true, false, 1, false},
      {"decode-empty-segment", 2, 3, 6, 32, 17, 0.6, true, false, false, 1, false},
      {"decode-cfg-pairs", 4, 2, 4, 64, 33, 0.4, false, false, true, 1, false},
      {"block-noncausal", 2, 2, 4, 64, 20, 0.7, false, true, false, 5, false},
      {"block-causal", 2, 2, 4, 64, 20, 0.7, false, false, false, 6, true},
      {"mha-large-head", 1, 4, 4, 128, 70, 0.3, false, true, false, 1, false},
  };
}

at::Tensor keep_mask(const Layout& l, int64_t length, at::Generator& gen) {
  const int64_t rows = l.cfg_pairs ? l.rows / 2 : l.rows;
  at::Tensor keep = at::rand({rows, l.kv_heads, length}, gen) < l.keep_fraction;
  keep.select(2, 0).fill_(true);  // a sink, as the policies keep
  if (l.empty_segment) keep[0][0].fill_(false);
  if (l.one_entry) {
    keep[rows - 1][l.kv_heads - 1].fill_(false);
    keep[rows - 1][l.kv_heads - 1][length / 2] = true;
  }
  return keep;
}

// Runs the layout on a store of `dtype` on `device` and on a CPU float32 store,
// returns {device output, CPU output} as float32 CPU tensors.
// With `key_mass`, attention also returns the key mass: {device, CPU} in it.
std::pair<at::Tensor, at::Tensor> run_layout(const Layout& l, at::ScalarType dtype, const at::Device& device,
                                             std::string* path, std::pair<at::Tensor, at::Tensor>* key_mass = nullptr) {
  at::Generator gen = at::detail::createCPUGenerator(1234);
  KvStore gpu(1, l.rows, l.kv_heads, l.head_dim, 4, at::TensorOptions().dtype(dtype).device(device));
  KvStore cpu(1, l.rows, l.kv_heads, l.head_dim, 4, at::TensorOptions().dtype(at::kFloat));
  gpu.set_unit_headroom(l.queries);
  cpu.set_unit_headroom(l.queries);
  auto rounded = [&](at::Tensor x) { return x.to(dtype).to(at::kFloat); };
  auto append = [&](int64_t first, int64_t count) {
    at::Tensor k = rounded(at::randn({l.rows, l.kv_heads, count, l.head_dim}, gen));
    at::Tensor v = rounded(at::randn({l.rows, l.kv_heads, count, l.head_dim}, gen));
    std::vector<int64_t> pos;
    for (int64_t i = 0; i < count; ++i) pos.push_back(first + i);
    gpu.append(0, k.to(device, dtype), v.to(device, dtype), pos);
    cpu.append(0, k, v, pos);
    return pos;
  };
  append(0, l.prefix);
  if (l.keep_fraction < 1.0 || l.empty_segment || l.one_entry) {
    at::Tensor keep = keep_mask(l, l.prefix, gen);
    if (l.cfg_pairs) {
      gpu.retain_pairs(0, keep);
      cpu.retain_pairs(0, keep);
    } else {
      gpu.retain(0, keep);
      cpu.retain(0, keep);
    }
  }
  std::vector<int64_t> qpos;
  if (l.causal_block) {
    qpos = append(l.prefix, l.queries);
  } else {
    append(l.prefix, l.queries);  // the new entries; queries see all of them
    for (int64_t i = 0; i < l.queries; ++i) qpos.push_back(l.prefix + l.queries - 1);
  }
  at::Tensor q = rounded(at::randn({l.rows, l.n_head, l.queries, l.head_dim}, gen));
  *path = gpu.attention_path(0);
  const bool mass = key_mass != nullptr;
  const KvAttention on_gpu = gpu.attend(0, q.to(device, dtype), qpos, /*causal=*/true, false, mass);
  const KvAttention on_cpu = cpu.attend(0, q, qpos, /*causal=*/true, false, mass);
  if (mass) *key_mass = {on_gpu.key_mass.to(at::kCPU), on_cpu.key_mass};
  return {on_gpu.out.to(at::kCPU, at::kFloat), on_cpu.out};
}

TEST(PackedAttention, CpuBuffersTakeTheCpuKernel) {
  KvStore store(1, 2, 2, 16, 4, at::TensorOptions().dtype(at::kFloat));
  EXPECT_EQ(store.attention_path(0), "cpu-ragged");
  KvStore half(1, 2, 2, 16, 4, at::TensorOptions().dtype(at::kHalf));
  EXPECT_EQ(half.attention_path(0), "dense");
  EXPECT_EQ(kernels::packed_attention_kernel(at::zeros({4, 16}), 16, false), kernels::PackedAttentionKernel::None);
}

// The attention output, and the key mass H2O and the scale policies read (from
// the scoring kernel beside the packed attention), against the CPU kernel.
TEST(PackedAttention, GpuMatchesTheCpuTwinOnRaggedLayouts) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here: the packed GPU kernels are not run";
  const at::Device device(at::kCUDA, 0);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    const double tol = dtype == at::kFloat ? 2e-4 : 2e-2;
    for (const Layout& l : layouts()) {
      SCOPED_TRACE(l.name + " " + std::string(c10::toString(dtype)));
      std::string path;
      std::pair<at::Tensor, at::Tensor> mass;
      auto [gpu, cpu] = run_layout(l, dtype, device, &path, &mass);
      // A decode step on a GPU never takes the dense path.
      EXPECT_EQ(path, dtype == at::kFloat ? "memory-efficient" : "flash");
      ASSERT_EQ(gpu.sizes(), cpu.sizes());
      EXPECT_TRUE(at::isfinite(gpu).all().item<bool>());
      const double err = (gpu - cpu).abs().max().item<double>();
      EXPECT_LE(err, tol) << "largest difference " << err;
      ASSERT_EQ(mass.first.sizes(), mass.second.sizes());
      EXPECT_EQ(mass.first.scalar_type(), at::kFloat);
      // A key's mass sums up to the group's queries' weights on it: the tolerance grows with them.
      const double mass_err = (mass.first - mass.second).abs().max().item<double>();
      EXPECT_LE(mass_err, tol * l.queries * (l.n_head / l.kv_heads)) << "largest key-mass difference " << mass_err;
    }
  }
}

// The kernel entry itself: an empty segment gives zeros, the others a plain
// softmax over their own slots only (slots past a length hold garbage here).
TEST(PackedAttention, GpuEmptySegmentsGiveZerosAndUnusedSlotsAreNeverRead) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here: the packed GPU kernels are not run";
  at::Generator gen = at::detail::createCPUGenerator(3);
  const int64_t d = 64, group = 2;
  // Three segments (rows 3, one KV head): slots [0,5) use 4, [5,5) none, [5,12) use 6.
  const std::vector<int32_t> starts = {0, 5, 5, 12}, lengths = {4, 0, 6};
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    at::Tensor k = at::randn({12, d}, gen).to(dtype).to(at::kFloat),
               v = at::randn({12, d}, gen).to(dtype).to(at::kFloat);
    k[4].fill_(std::numeric_limits<float>::quiet_NaN());  // past segment 0's length
    v[11].fill_(std::numeric_limits<float>::infinity());  // past segment 2's length
    at::Tensor q = at::randn({3, group, 1, d}, gen).to(dtype).to(at::kFloat);
    kernels::PackedSegments seg{at::tensor(starts).to(at::kCUDA), at::tensor(lengths).to(at::kCUDA), 6};
    at::Tensor out = kernels::packed_attention(q.to(at::kCUDA, dtype), k.to(at::kCUDA, dtype), v.to(at::kCUDA, dtype),
                                               seg, 1, false, 0.125)
                         .to(at::kCPU, at::kFloat);
    for (int64_t s = 0; s < 3; ++s) {
      at::Tensor expected = at::zeros({group, 1, d});
      if (lengths[s] > 0) {
        at::Tensor ks = k.narrow(0, starts[s], lengths[s]), vs = v.narrow(0, starts[s], lengths[s]);
        expected = at::matmul(at::softmax(at::matmul(q[s], ks.t()) * 0.125, -1), vs);
      }
      EXPECT_LE((out[s] - expected).abs().max().item<double>(), dtype == at::kFloat ? 1e-4 : 2e-2)
          << "segment " << s << " " << c10::toString(dtype);
    }
  }
}

// Eviction on a GPU (the compaction kernel) leaves the store a CPU store's
// retain leaves: the same lengths, positions and entries, with and without a
// unit headroom (which shrinks the segments into new capacities), the keep mask
// given on the host or on the GPU.
TEST(PackedAttention, GpuEvictionMatchesTheCpuStore) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here: the GPU eviction is not run";
  const at::Device device(at::kCUDA, 0);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (bool fitted : {false, true}) {
      for (const Layout& l : layouts()) {
        SCOPED_TRACE(l.name + " " + std::string(c10::toString(dtype)) + (fitted ? " fitted" : ""));
        at::Generator gen = at::detail::createCPUGenerator(11);
        KvStore gpu(1, l.rows, l.kv_heads, l.head_dim, l.prefix, at::TensorOptions().dtype(dtype).device(device));
        KvStore cpu(1, l.rows, l.kv_heads, l.head_dim, l.prefix, at::TensorOptions().dtype(dtype));
        if (fitted) {
          gpu.set_unit_headroom(2);
          cpu.set_unit_headroom(2);
        }
        std::vector<int64_t> pos;
        for (int64_t i = 0; i < l.prefix; ++i) pos.push_back(i);
        const at::Tensor k = at::randn({l.rows, l.kv_heads, l.prefix, l.head_dim}, gen).to(dtype);
        const at::Tensor v = at::randn({l.rows, l.kv_heads, l.prefix, l.head_dim}, gen).to(dtype);
        gpu.append(0, k.to(device), v.to(device), pos);
        cpu.append(0, k, v, pos);
        const at::Tensor keep = keep_mask(l, l.prefix, gen);
        // A policy that decides on the GPU hands over a mask there (LineAR does).
        const at::Tensor gpu_keep = fitted ? keep.to(device) : keep;
        if (l.cfg_pairs) {
          gpu.retain_pairs(0, gpu_keep);
          cpu.retain_pairs(0, keep);
        } else {
          gpu.retain(0, gpu_keep);
          cpu.retain(0, keep);
        }
        const int64_t longest = cpu.max_length(0);
        ASSERT_EQ(gpu.max_length(0), longest);
        EXPECT_TRUE(at::equal(gpu.positions_tensor(0), cpu.positions_tensor(0)));
        EXPECT_EQ(gpu.memory().bytes_allocated, cpu.memory().bytes_allocated);
        for (int64_t r = 0; r < l.rows; ++r)
          for (int64_t h = 0; h < l.kv_heads; ++h) {
            const int64_t n = cpu.length(0, r, h);
            ASSERT_EQ(gpu.length(0, r, h), n) << "row " << r << ", head " << h;
            // Entries past a segment's length are not the store's: compare the kept ones.
            EXPECT_TRUE(at::equal(gpu.keys(0, longest)[r][h].narrow(0, 0, n).to(at::kCPU),
                                  cpu.keys(0, longest)[r][h].narrow(0, 0, n)));
            EXPECT_TRUE(at::equal(gpu.values(0, longest)[r][h].narrow(0, 0, n).to(at::kCPU),
                                  cpu.values(0, longest)[r][h].narrow(0, 0, n)));
          }
        // And the next decode step attends over what was kept.
        pos = {l.prefix};
        const at::Tensor k1 = at::randn({l.rows, l.kv_heads, 1, l.head_dim}, gen).to(dtype);
        gpu.append(0, k1.to(device), k1.to(device), pos);
        cpu.append(0, k1, k1, pos);
        const at::Tensor q = at::randn({l.rows, l.n_head, 1, l.head_dim}, gen).to(dtype);
        const at::Tensor out_gpu = gpu.attend(0, q.to(device), pos, true).out.to(at::kCPU, at::kFloat);
        const at::Tensor out_cpu = cpu.attend(0, q, pos, true).out.to(at::kFloat);
        EXPECT_LE((out_gpu - out_cpu).abs().max().item<double>(), dtype == at::kFloat ? 2e-4 : 2e-2);
      }
    }
  }
}

// retain_layers with masks on the GPU (what LineAR hands over): one wait for
// every layer's mask, and the layers end as a CPU store's per-layer retain.
TEST(PackedAttention, GpuRetainLayersMatchesTheCpuStore) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here: the GPU eviction is not run";
  const at::Device device(at::kCUDA, 0);
  const Layout l = layouts()[1];
  at::Generator gen = at::detail::createCPUGenerator(13);
  KvStore gpu(3, l.rows, l.kv_heads, l.head_dim, l.prefix, at::TensorOptions().dtype(at::kBFloat16).device(device));
  KvStore cpu(3, l.rows, l.kv_heads, l.head_dim, l.prefix, at::TensorOptions().dtype(at::kBFloat16));
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < l.prefix; ++i) pos.push_back(i);
  std::vector<at::Tensor> keeps;
  for (int64_t layer = 0; layer < 3; ++layer) {
    const at::Tensor k = at::randn({l.rows, l.kv_heads, l.prefix, l.head_dim}, gen).to(at::kBFloat16);
    gpu.append(layer, k.to(device), k.to(device), pos);
    cpu.append(layer, k, k, pos);
    keeps.push_back(layer == 1 ? at::Tensor() : keep_mask(l, l.prefix, gen));
  }
  std::vector<at::Tensor> on_gpu;
  for (const at::Tensor& keep : keeps) on_gpu.push_back(keep.defined() ? keep.to(device) : keep);
  gpu.retain_layers(on_gpu);
  cpu.retain(0, keeps[0]);
  cpu.retain(2, keeps[2]);
  for (int64_t layer = 0; layer < 3; ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    EXPECT_TRUE(at::equal(gpu.positions_tensor(layer), cpu.positions_tensor(layer)));
    const int64_t longest = cpu.max_length(layer);
    ASSERT_EQ(gpu.max_length(layer), longest);
    for (int64_t r = 0; r < l.rows; ++r)
      for (int64_t h = 0; h < l.kv_heads; ++h) {
        const int64_t n = cpu.length(layer, r, h);
        EXPECT_TRUE(at::equal(gpu.keys(layer, longest)[r][h].narrow(0, 0, n).to(at::kCPU),
                              cpu.keys(layer, longest)[r][h].narrow(0, 0, n)));
      }
  }
}

TEST(PackedAttention, GpuDensePathAgreesWithThePackedPath) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here: the packed GPU kernels are not run";
  // Asking for probabilities forces the dense path on the same store.
  const Layout l = layouts()[1];
  at::Generator gen = at::detail::createCPUGenerator(7);
  KvStore store(1, l.rows, l.kv_heads, l.head_dim, 4, at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA));
  store.set_unit_headroom(1);
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < l.prefix; ++i) pos.push_back(i);
  store.append(0, at::randn({l.rows, l.kv_heads, l.prefix, l.head_dim}, gen).to(at::kCUDA, at::kBFloat16),
               at::randn({l.rows, l.kv_heads, l.prefix, l.head_dim}, gen).to(at::kCUDA, at::kBFloat16), pos);
  store.retain(0, keep_mask(l, l.prefix, gen));
  at::Tensor q = at::randn({l.rows, l.n_head, 1, l.head_dim}, gen).to(at::kCUDA, at::kBFloat16);
  at::Tensor packed = store.attend(0, q, {l.prefix}, true).out.to(at::kCPU, at::kFloat);
  at::Tensor dense = store.attend(0, q, {l.prefix}, true, true, false).out.to(at::kCPU, at::kFloat);
  EXPECT_LE((packed - dense).abs().max().item<double>(), 2e-2);
}

// Host tensors go up without a wait and arrive whole, also when not contiguous;
// on the CPU the helper is a plain .to().
TEST(HostUpload, TensorsArriveAsTheyLeft) {
  const at::Tensor host = at::arange(24, at::TensorOptions().dtype(at::kLong)).view({2, 3, 4}).transpose(1, 2);
  EXPECT_TRUE(at::equal(upload_without_wait(host, at::Device(at::kCPU)), host));
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here: the upload to a GPU is not run";
  const at::Tensor on_gpu = upload_without_wait(host, at::Device(at::kCUDA, 0));
  EXPECT_TRUE(on_gpu.is_cuda());
  EXPECT_TRUE(at::equal(on_gpu.to(at::kCPU), host));
}

// H2O's accumulated attention kept on the GPU (where the key mass is) gives the
// sums the CPU gives, through a CFG drop, for the deciding rows and their partners.
TEST(PackedAttention, GpuAccumulatedAttentionMatchesTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here: the accumulator is not run on a GPU";
  at::Generator gen = at::detail::createCPUGenerator(29);
  AttentionAccumulator gpu(1, 12), cpu(1, 12);
  for (int64_t step = 0; step < 5; ++step) {
    const int64_t rows = step < 3 ? 4 : 2;  // CFG pairs, then the conditional rows only
    const at::Tensor mass = at::rand({rows, 2, 8}, gen);
    const at::Tensor positions =
        at::randperm(12, gen).narrow(0, 0, 8).view({1, 1, 8}).expand({rows, 2, 8}).contiguous();
    gpu.add(0, mass.to(at::kCUDA), positions);
    cpu.add(0, mass, positions);
  }
  const at::Tensor slots = at::arange(8, at::TensorOptions().dtype(at::kLong)).view({1, 1, 8}).expand({2, 2, 8});
  const at::Tensor on_gpu = gpu.slot_scores(0, slots, 2, 2, false);
  EXPECT_TRUE(on_gpu.is_cuda());
  EXPECT_LE((on_gpu.to(at::kCPU) - cpu.slot_scores(0, slots, 2, 2, false)).abs().max().item<double>(), 1e-12);
}

TEST(TokenRecord, HostCopyFollowsOncePerInterval) {
  at::Tensor host = at::zeros({2, 6}, at::TensorOptions().dtype(at::kLong));
  TokenRecord record(host, at::Device(at::kCPU), 3);
  for (int64_t i = 0; i < 6; ++i) {
    record.put(i, at::full({2}, i + 1, at::TensorOptions().dtype(at::kLong)));
    EXPECT_EQ(record.host(i + 1)[1][i].item<int64_t>(), i + 1);  // CPU ids: always current
  }
  EXPECT_EQ(record.on_device(6).sum().item<int64_t>(), 2 * 21);
}

TEST(TokenRecord, GpuIdsReachTheHostAtIntervalEnds) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here";
  at::Tensor host = at::zeros({1, 4}, at::TensorOptions().dtype(at::kLong));
  TokenRecord record(host, at::Device(at::kCUDA, 0), 2);
  record.put(0, at::full({1}, 5, at::TensorOptions().dtype(at::kLong).device(at::kCUDA)));
  EXPECT_EQ(record.host(1)[0][0].item<int64_t>(), 0);  // not yet copied
  record.put(1, at::full({1}, 6, at::TensorOptions().dtype(at::kLong).device(at::kCUDA)));
  at::Tensor two = record.host(2);
  EXPECT_EQ(two[0][0].item<int64_t>(), 5);
  EXPECT_EQ(two[0][1].item<int64_t>(), 6);
}

TEST(SamplerRng, NamesParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(parse_sampler_rng("auto"), SamplerRng::Auto);
  EXPECT_EQ(parse_sampler_rng("device"), SamplerRng::Auto);
  EXPECT_EQ(parse_sampler_rng("cpu"), SamplerRng::Cpu);
  try {
    parse_sampler_rng("gpu0");
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown sampler RNG 'gpu0'"), std::string::npos) << e.what();
  }
}

TEST(SamplerRng, GpuDrawsStayOnTheGpuUnlessTheCpuIsAskedFor) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here";
  at::Tensor logits = at::randn({3, 50}, at::TensorOptions().device(at::kCUDA));
  SamplingParams p;
  TokenSampler a(9), b(9), c(9);
  at::Tensor ids_a = a.sample(logits, p), ids_b = b.sample(logits, p);
  EXPECT_TRUE(ids_a.is_cuda());
  EXPECT_TRUE(at::equal(ids_a.cpu(), ids_b.cpu()));  // the same seed, the same draws
  p.rng = SamplerRng::Cpu;
  at::Tensor ids_c = c.sample(logits, p);
  EXPECT_TRUE(ids_c.device().is_cpu());
  TokenSampler d(9);
  EXPECT_TRUE(at::equal(ids_c, d.sample(logits.cpu(), p)));  // exactly the CPU run's draw
}

}  // namespace
}  // namespace kvs
