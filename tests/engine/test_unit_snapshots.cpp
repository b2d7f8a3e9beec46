// What a unit's snapshot says about the cache, checked against numbers worked
// out by hand from the policies' parameters on a small random raster model
// (6x6 tokens, 2 layers, 2 KV heads, one condition token): the entries evicted
// per unit, the policy's regions, and the process memory.
//
// Timing of a raster run: token i enters the cache at the step that samples
// token i + 1 (its after_token runs there), so the snapshot of line u holds the
// condition token and image tokens 0 .. 6u + 4, and the eviction at the end of
// line u - 1 belongs to line u.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/models/generation_session.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

struct UnitRecorder : EventSink {
  std::vector<UnitDoneEvent> units;
  std::string family;
  void on_event(const GenerationEvent& e) override {
    if (auto* u = std::get_if<UnitDoneEvent>(&e)) units.push_back(*u);
    if (auto* s = std::get_if<StartedEvent>(&e)) family = s->family;
  }
};

std::vector<UnitDoneEvent> run_units(const test::TempDir& dir, const std::string& policy,
                                     std::string* family = nullptr) {
  llamagen::GptConfig gpt = test::tiny_gqa_gpt();
  gpt.block_size = 36;  // 6 x 6 tokens
  llamagen::write_random_llamagen_bundle(dir.path().string(), "tiny6", gpt, test::tiny_vq(), 7);
  GenerationRequest r;
  r.model_path = dir.path().string();
  r.class_ids = {3};
  r.seed = 11;
  r.device = "cpu";
  r.threads = 1;
  r.policy = parse_policy_spec(policy);
  r.emit_retained_masks = true;
  GenerationSession session;
  UnitRecorder rec;
  session.run(r, &rec);
  if (family) *family = rec.family;
  return rec.units;
}

const CacheRegion* find_region(const UnitDoneEvent& u, const std::string& name) {
  for (const auto& r : u.regions)
    if (r.name == name) return &r;
  return nullptr;
}

::testing::AssertionResult has_region(const UnitDoneEvent& u, const std::string& name, int64_t begin, int64_t end) {
  const CacheRegion* r = find_region(u, name);
  if (!r) return ::testing::AssertionFailure() << "unit " << u.unit_index << " has no region " << name;
  if (r->begin != begin || r->end != end)
    return ::testing::AssertionFailure() << "unit " << u.unit_index << " region " << name << " is [" << r->begin << ", "
                                         << r->end << "), expected [" << begin << ", " << end << ")";
  return ::testing::AssertionSuccess();
}

// Retained entries of image 0 in [begin, end), for one layer and KV head.
int64_t retained_in(const RetainedMasks& m, int64_t layer, int64_t head, int64_t begin, int64_t end) {
  int64_t n = 0;
  for (int64_t p = begin; p < end; ++p) n += m.retained(layer, head, p) ? 1 : 0;
  return n;
}

}  // namespace

TEST(UnitSnapshots, StreamingReportsItsEvictionsAndRegions) {
  test::TempDir dir;
  std::string family;
  const auto units = run_units(dir, "streaming:budget=6,sink=2", &family);
  EXPECT_EQ(family, "llamagen");
  ASSERT_EQ(units.size(), 6u);
  // B = 6 image entries per segment, cut after every step once a 7th arrives:
  // steps 6 .. 34 evict one each (token 35 is never fed). Steps 6-10 fall in
  // line 1, six steps in each later line: per layer x 2 KV heads.
  const std::vector<int64_t> per_layer = {0, 10, 12, 12, 12, 12};
  for (size_t u = 0; u < units.size(); ++u) {
    EXPECT_EQ(units[u].evicted_per_layer, std::vector<int64_t>(2, per_layer[u])) << u;
    EXPECT_EQ(units[u].evicted_entries, 2 * per_layer[u]) << u;
  }
  // Line 0: image tokens 0-4 cached, nothing evicted: sinks = tokens 0-1
  // (positions 1-2), the window the rest.
  EXPECT_TRUE(has_region(units[0], "sinks", 1, 3));
  EXPECT_TRUE(has_region(units[0], "window", 3, 6));
  // Line 5: tokens 0-34 fed; the window is the 4 most recent (31-34).
  EXPECT_TRUE(has_region(units[5], "sinks", 1, 3));
  EXPECT_TRUE(has_region(units[5], "window", 32, 36));
  // The regions are what the cache holds: every retained image entry lies in one.
  for (const auto& u : units) {
    ASSERT_TRUE(u.retained.has_value());
    const CacheRegion* sinks = find_region(u, "sinks");
    const CacheRegion* window = find_region(u, "window");
    ASSERT_TRUE(sinks && window);
    for (int64_t l = 0; l < u.retained->n_layer; ++l)
      for (int64_t h = 0; h < u.retained->kv_heads; ++h)
        EXPECT_EQ(retained_in(*u.retained, l, h, 1, u.retained->positions),
                  (sinks->end - sinks->begin) + (window->end - window->begin))
            << u.unit_index;
  }
  // The process's memory comes with every unit (Linux reports it).
  EXPECT_TRUE(units.back().process_resident_bytes.has_value());
  EXPECT_GT(units.back().process_resident_bytes.value_or(0), 0);
  EXPECT_GE(units.back().process_peak_resident_bytes.value_or(0), units.back().process_resident_bytes.value_or(0));
}

TEST(UnitSnapshots, LinearReportsItsEvictionsAndRegions) {
  test::TempDir dir;
  const auto units = run_units(dir, "linear:budget=18,n_init=2,r=1");
  ASSERT_EQ(units.size(), 6u);
  // B = 18, n = 6: the line ends at steps 17, 23, 29 find 18 image entries and
  // evict 6 mid tokens each (down to B - n = 12); they fall in lines 3, 4, 5.
  const std::vector<int64_t> per_layer = {0, 0, 0, 12, 12, 12};
  for (size_t u = 0; u < units.size(); ++u) {
    EXPECT_EQ(units[u].evicted_per_layer, std::vector<int64_t>(2, per_layer[u])) << u;
    EXPECT_EQ(units[u].evicted_entries, 2 * per_layer[u]) << u;
  }
  // Line 0 (tokens 0-4 cached, no line end yet): anchors and the line buffer.
  EXPECT_TRUE(has_region(units[0], "anchors", 1, 3));
  EXPECT_TRUE(has_region(units[0], "buffer", 3, 6));
  EXPECT_EQ(find_region(units[0], "middle"), nullptr);
  EXPECT_EQ(find_region(units[0], "recent"), nullptr);
  // Line 5: the last line end (after token 29) kept anchors 0-1 and the recent
  // line 4 (tokens 24-29) and chose from tokens 2-23; tokens 30-34 since then.
  EXPECT_TRUE(has_region(units[5], "anchors", 1, 3));
  EXPECT_TRUE(has_region(units[5], "middle", 3, 25));
  EXPECT_TRUE(has_region(units[5], "recent", 25, 31));
  EXPECT_TRUE(has_region(units[5], "buffer", 31, 36));
  // Anchors, recent lines and buffer are all cached; the middle keeps
  // B - n - anchors - recent = 12 - 2 - 6 = 4 entries per segment.
  const RetainedMasks& m = *units[5].retained;
  for (int64_t l = 0; l < m.n_layer; ++l)
    for (int64_t h = 0; h < m.kv_heads; ++h) {
      EXPECT_EQ(retained_in(m, l, h, 1, 3), 2);
      EXPECT_EQ(retained_in(m, l, h, 3, 25), 4);
      EXPECT_EQ(retained_in(m, l, h, 25, 36), 11);
    }
}

TEST(UnitSnapshots, FullCacheEvictsNothingAndHasNoRegions) {
  test::TempDir dir;
  const auto units = run_units(dir, "full");
  ASSERT_EQ(units.size(), 6u);
  for (const auto& u : units) {
    EXPECT_EQ(u.evicted_entries, 0);
    EXPECT_EQ(u.evicted_per_layer, std::vector<int64_t>(2, 0));
    EXPECT_TRUE(u.regions.empty());
  }
}
