// The engine under a storm of what people do in the window: generations on the
// three families' small models in one process and one session (the window's
// worker keeps one), each left to finish, cancelled at a random token or unit
// (from the generating thread's event stream, as the window's Esc reaches it at
// the next boundary, or from another thread at a random moment), with policies
// and budgets switched at random unit boundaries, valid or not. Asserts that
// every run ends (finished, or CancelledError after a cancel; nothing else),
// that a cancel is acknowledged within one unit, that refused switches are
// reported and invalid ones never accepted, and that a finished run never holds
// more KV than the full cache. Under the asan preset LeakSanitizer checks the
// process for leaks at exit.
//
// KVSTUDIO_STORM_RUNS sets the number of generations (default 300; the test
// command runs 1,000, under the sanitizers too), and
// KVSTUDIO_STORM_SEED the random seed (a failure prints it).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/errors.h"
#include "engine/models/generation_session.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/models/var/var_random_init.h"
#include "engine/session/generation_events.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/tiny_mar.h"
#include "tests/engine/tiny_var.h"

using namespace kvs;

namespace {

using Clock = std::chrono::steady_clock;

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtoll(v, nullptr, 10);
}

// One family's model and what may be asked of it.
struct StormFamily {
  std::string name;
  std::string model_path;
  int64_t classes = 5;
  int64_t steps = 0;                 // masked models' decoding steps
  int64_t units = 0;                 // lines, scales or steps of a run
  std::vector<std::string> specs;    // valid policy specs (budgets included)
  std::vector<std::string> refused;  // specs the session must refuse on this model
};

// The three small bundles, written once for the whole storm.
struct StormModels {
  test::TempDir raster_dir, var_dir, mar_dir;
  std::vector<StormFamily> families;

  StormModels() {
    // 16x16 tokens, as the demo model: every raster policy's defaults apply.
    llamagen::GptConfig gpt = test::tiny_gqa_gpt();
    gpt.block_size = 256;
    llamagen::write_random_llamagen_bundle(raster_dir.path().string(), "storm-raster", gpt, test::tiny_vq(), 11);
    const var::VarConfig vc = test::tiny_var_config(3, {1, 2, 3, 4, 5, 6});
    var::write_random_var_bundle(var_dir.path().string(), "storm-var", vc, test::tiny_var_vqvae(vc), 12);
    mar::write_random_mar_bundle(mar_dir.path().string(), "storm-mar", test::tiny_mar_config(64, 4),
                                 test::tiny_kl_vae(), 13);
    families.push_back({"llamagen",
                        raster_dir.path().string(),
                        5,
                        0,
                        16,
                        {"full", "streaming:rho=1/4", "random:rho=1/2", "linear:rho=1/4", "linear:rho=1/2",
                         "headkv:rho=1/4", "h2o:rho=1/4", "snapkv:rho=1/3", "rkv:rho=1/4"},
                        {"linear:rho=7", "no-such-policy", "heatkv:budget=0.1", "lazymar"}});
    families.push_back({"var",
                        var_dir.path().string(),
                        5,
                        0,
                        6,
                        {"full", "streaming:rho=1/4", "amskv", "heatkv:budget=0.3", "scalekv:rho=1/2", "hack:rho=1/4",
                         "h2o:rho=1/4", "snapkv:rho=1/4"},
                        {"linear:rho=1/4", "heatkv:budget=7", "no-such-policy"}});
    families.push_back(
        {"mar",
         mar_dir.path().string(),
         5,
         8,
         8,
         {"full", "lazymar", "lazymar:selection=random", "lazymar:token_cache=off", "lazymar:condition_cache=off"},
         {"lazymar:layer=-1", "h2o:rho=1/4", "no-such-policy"}});
  }
};

enum class CancelMode { None, AtUnit, AtToken, FromAnotherThread };

// What one run saw, recorded by its event sink on the generating thread.
class StormSink : public EventSink {
 public:
  StormSink(GenerationSession& session, std::mt19937_64& rng, const StormFamily& family,
            const std::vector<StormFamily>& all, CancelMode mode, int64_t cancel_at)
      : session_(session), rng_(rng), family_(family), all_(all), mode_(mode), cancel_at_(cancel_at) {}

  void on_event(const GenerationEvent& event) override {
    if (std::holds_alternative<TokenProgressEvent>(event)) {
      ++tokens;
      if (mode_ == CancelMode::AtToken && tokens == cancel_at_) request_cancel();
    } else if (const auto* u = std::get_if<UnitDoneEvent>(&event)) {
      ++units;
      if (cancel_requested) ++units_after_cancel;
      if (u->kv_bytes_logical > u->kv_bytes_full_equivalent) ++over_full;
      if (mode_ == CancelMode::AtUnit && units == cancel_at_) request_cancel();
      maybe_switch();
    } else if (const auto* p = std::get_if<PolicyChangedEvent>(&event)) {
      if (p->accepted) ++accepted;
      else {
        ++refused;
        if (p->message.empty()) ++refused_without_message;
      }
      if (p->accepted && is_refused_spec(p->policy)) ++invalid_accepted;
    } else if (std::holds_alternative<FinishedEvent>(event)) {
      ++finished;
    } else if (const auto* f = std::get_if<FailedEvent>(&event)) {
      ++failed;
      failed_cancelled = f->cancelled;
    }
  }

  // From another thread (FromAnotherThread) or this one.
  void request_cancel() {
    cancel_requested = true;
    session_.cancel();
  }

  std::atomic<int64_t> tokens{0}, units{0}, units_after_cancel{0};
  std::atomic<bool> cancel_requested{false};
  int64_t switches = 0, accepted = 0, refused = 0, refused_without_message = 0, invalid_accepted = 0;
  int64_t over_full = 0, finished = 0, failed = 0;
  bool failed_cancelled = false;

 private:
  bool is_refused_spec(const std::string& spec) const {
    return std::find(family_.refused.begin(), family_.refused.end(), spec) != family_.refused.end();
  }

  // At a unit boundary: now and then a new policy or budget, sometimes one this
  // model must refuse, sometimes another family's.
  void maybe_switch() {
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) > 0.3) return;
    const double pick = u(rng_);
    std::string spec;
    if (pick < 0.7) spec = family_.specs[rng_() % family_.specs.size()];
    else if (pick < 0.9) spec = family_.refused[rng_() % family_.refused.size()];
    else {
      const StormFamily& other = all_[rng_() % all_.size()];
      spec = other.specs[rng_() % other.specs.size()];
    }
    ++switches;
    session_.request_policy_change(spec);
  }

  GenerationSession& session_;
  std::mt19937_64& rng_;
  const StormFamily& family_;
  const std::vector<StormFamily>& all_;
  CancelMode mode_;
  int64_t cancel_at_;
};

// Aborts the process (with what it was doing) when no run makes progress for a
// minute: a hang must fail the test, not wait for ctest's timeout.
class HangWatchdog {
 public:
  HangWatchdog() : thread_([this] { watch(); }) {}
  ~HangWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void beat(const std::string& doing) {
    std::lock_guard<std::mutex> lock(mutex_);
    last_ = Clock::now();
    doing_ = doing;
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::seconds(1));
      if (!stop_ && Clock::now() - last_ > std::chrono::seconds(60)) {
        std::fprintf(stderr, "storm: no progress for 60 s while %s\n", doing_.c_str());
        std::abort();
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  Clock::time_point last_ = Clock::now();
  std::string doing_ = "starting";
  std::thread thread_;
};

}  // namespace

TEST(EngineStorm, GenerationsCancelledAndSwitchedAtRandomEndCleanly) {
  const int64_t runs = std::max<int64_t>(1, env_int("KVSTUDIO_STORM_RUNS", 300));
  const auto seed = static_cast<uint64_t>(env_int("KVSTUDIO_STORM_SEED", 20261125));
  std::mt19937_64 rng(seed);
  StormModels models;
  GenerationSession session;  // one for the whole storm: models are reloaded when the family changes
  HangWatchdog watchdog;

  struct Counts {
    int64_t runs = 0, finished = 0, cancelled = 0, switches = 0, accepted = 0, refused = 0;
  };
  std::vector<Counts> per_family(models.families.size());
  int64_t most_units_after_cancel = 0, cancels_from_threads = 0;
  const auto start = Clock::now();

  for (int64_t i = 0; i < runs; ++i) {
    const size_t fi = rng() % models.families.size();
    const StormFamily& family = models.families[fi];
    GenerationRequest req;
    req.model_path = family.model_path;
    req.device = "cpu";
    req.threads = 1;
    req.seed = rng() % 1000;
    req.class_ids = {static_cast<int64_t>(rng() % family.classes)};
    if (rng() % 3 == 0) req.class_ids.push_back(static_cast<int64_t>(rng() % family.classes));
    req.cfg_scale = rng() % 4 == 0 ? 1.0 : 4.0;
    req.steps = family.steps;
    req.policy = parse_policy_spec(family.specs[rng() % family.specs.size()]);
    req.preview_every_units = static_cast<int>(rng() % 3);
    req.emit_retained_masks = rng() % 2 == 0;
    req.emit_attention_map = rng() % 4 == 0;

    const auto mode = static_cast<CancelMode>(rng() % 4);
    // Anywhere in the run: a unit, or a token of the run's first units.
    const int64_t cancel_at = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(family.units));
    const std::string what = "run " + std::to_string(i) + " (" + family.name + ", " + req.policy.text() + ", seed " +
                             std::to_string(seed) + ")";
    SCOPED_TRACE(what);
    watchdog.beat(what);
    StormSink sink(session, rng, family, models.families, mode, cancel_at);

    std::thread canceller;
    if (mode == CancelMode::FromAnotherThread) {
      const auto delay = std::chrono::microseconds(rng() % 20000);
      canceller = std::thread([&sink, delay] {
        std::this_thread::sleep_for(delay);
        sink.request_cancel();
      });
      ++cancels_from_threads;
    }
    bool cancelled = false, finished = false;
    std::string other_error;
    GenerationResult result;
    try {
      result = session.run(req, &sink);
      finished = true;
    } catch (const CancelledError&) {
      cancelled = true;
    } catch (const std::exception& e) {
      other_error = e.what();
    }
    if (canceller.joinable()) canceller.join();

    ASSERT_TRUE(other_error.empty()) << "a run failed with something other than a cancel: " << other_error;
    ASSERT_TRUE(finished || cancelled);
    if (cancelled) {
      EXPECT_TRUE(sink.cancel_requested.load()) << "cancelled without a cancel";
      EXPECT_EQ(sink.failed, 1);
      EXPECT_TRUE(sink.failed_cancelled);
      // Acknowledged within one unit of the request.
      EXPECT_LE(sink.units_after_cancel.load(), 1);
      most_units_after_cancel = std::max(most_units_after_cancel, sink.units_after_cancel.load());
    } else {
      EXPECT_EQ(sink.finished, 1);
      EXPECT_LE(result.kv_bytes_logical_final, result.kv_bytes_full);
      EXPECT_FALSE(result.images.empty());
    }
    EXPECT_EQ(sink.over_full, 0) << "a unit held more KV than the full cache";
    EXPECT_EQ(sink.invalid_accepted, 0) << "a spec this model must refuse was accepted";
    EXPECT_EQ(sink.refused_without_message, 0);
    Counts& c = per_family[fi];
    ++c.runs;
    c.finished += finished;
    c.cancelled += cancelled;
    c.switches += sink.switches;
    c.accepted += sink.accepted;
    c.refused += sink.refused;
    if (HasFailure()) break;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (size_t fi = 0; fi < per_family.size(); ++fi) {
    const Counts& c = per_family[fi];
    std::printf(
        "storm: %-8s %4lld runs: %4lld finished, %4lld cancelled; %4lld policy switches asked, %4lld accepted, "
        "%4lld refused\n",
        models.families[fi].name.c_str(), (long long)c.runs, (long long)c.finished, (long long)c.cancelled,
        (long long)c.switches, (long long)c.accepted, (long long)c.refused);
  }
  std::printf(
      "storm: %lld runs in %.1f s (seed %llu), %lld cancels from another thread, at most %lld unit(s) "
      "after a cancel\n",
      (long long)runs, seconds, (unsigned long long)seed, (long long)cancels_from_threads,
      (long long)most_units_after_cancel);
}
