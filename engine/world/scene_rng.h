#pragma once
// The procedural world's random numbers (internal to engine/world).
//
// splitmix64 (Steele, Lea & Flood 2014) with our own integer→float conversions, so
// the sequence is the same with every compiler and standard library (the standard
// distributions are implementation-defined and are not used here).
#include <cstdint>

namespace kvs::world::detail {

inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SceneRng {
 public:
  explicit SceneRng(uint64_t seed) : state_(seed) {}

  uint64_t next_u64() {
    state_ += 0x9E3779B97F4A7C15ull;
    return splitmix64_mix(state_);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(uniform()); }
  // Uniform integer in [0, n) for n >= 1 (multiply-shift on 32 random bits).
  int below(int n) { return static_cast<int>(((next_u64() >> 32) * static_cast<uint64_t>(n < 1 ? 1 : n)) >> 32); }
  // Uniform integer in [lo, hi], both ends included.
  int range(int lo, int hi) { return lo + below(hi - lo + 1); }
  bool chance(double p) { return uniform() < p; }
  // Roughly normal (Irwin–Hall sum of four uniforms, rescaled to unit variance).
  float normal(float mean, float stddev) {
    const double s = uniform() + uniform() + uniform() + uniform() - 2.0;
    return mean + stddev * static_cast<float>(s * 1.7320508075688772);
  }
  // An independent stream (for a sub-part of a scene whose number of draws varies).
  SceneRng fork() { return SceneRng(splitmix64_mix(next_u64() ^ 0xD1B54A32D192ED03ull)); }

 private:
  uint64_t state_;
};

}  // namespace kvs::world::detail
