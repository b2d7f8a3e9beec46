#pragma once
// Terminal progress for a generation: a redrawn bar with tokens/s and ETA on a
// terminal; a few plain lines when stderr is not a terminal (logs, CI). Next-scale
// models (unit "scale") also report every scale as it completes.
#include <chrono>
#include <string>

#include "engine/session/generation_events.h"

namespace kvs::cli {

class ProgressBar : public EventSink {
 public:
  explicit ProgressBar(bool quiet);
  void on_event(const GenerationEvent& event) override;

 private:
  void draw(int64_t done, int64_t total, double tokens_per_second, bool final);
  bool quiet_;
  bool tty_;
  int last_quarter_ = -1;
  std::chrono::steady_clock::time_point last_draw_{};
  std::string label_;
  bool per_scale_ = false;  // the run's unit is a scale: one line per scale
};

std::string format_duration(double seconds);

}  // namespace kvs::cli
