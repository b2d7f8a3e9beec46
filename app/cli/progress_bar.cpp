#include "app/cli/progress_bar.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace kvs::cli {

ProgressBar::ProgressBar(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) == 1) {}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

void ProgressBar::draw(int64_t done, int64_t total, double tps, bool final) {
  const double fraction = total > 0 ? static_cast<double>(done) / total : 0;
  const double eta = tps > 0 ? (total - done) / tps : NAN;
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %3d%% %lld/%lld tokens  %.1f tok/s  ETA %s   ", label_.c_str(), bar.c_str(),
                 static_cast<int>(fraction * 100), static_cast<long long>(done), static_cast<long long>(total), tps,
                 format_duration(eta).c_str());
    if (final) std::fputc('\n', stderr);
    std::fflush(stderr);
  } else {
    const int quarter = static_cast<int>(fraction * 4);
    if (quarter != last_quarter_ || final) {
      last_quarter_ = quarter;
      std::fprintf(stderr, "%s %3d%% %lld/%lld tokens  %.1f tok/s  ETA %s\n", label_.c_str(),
                   static_cast<int>(fraction * 100), static_cast<long long>(done), static_cast<long long>(total), tps,
                   format_duration(eta).c_str());
    }
  }
}

void ProgressBar::on_event(const GenerationEvent& event) {
  if (quiet_) return;
  if (const auto* s = std::get_if<StartedEvent>(&event)) {
    label_ = s->model_name;
    per_scale_ = s->unit_name == "scale";
    if (per_scale_)
      std::fprintf(stderr, "generating %lld image(s) in %lld scales up to %lldx%lld tokens with %s on %s\n",
                   static_cast<long long>(s->batch), static_cast<long long>(s->units_total),
                   static_cast<long long>(s->grid_height), static_cast<long long>(s->grid_width), s->model_name.c_str(),
                   s->device.c_str());
    else
      std::fprintf(stderr, "generating %lld image(s) of %lldx%lld tokens with %s on %s\n",
                   static_cast<long long>(s->batch), static_cast<long long>(s->grid_height),
                   static_cast<long long>(s->grid_width), s->model_name.c_str(), s->device.c_str());
  } else if (const auto* u = std::get_if<UnitDoneEvent>(&event); u != nullptr && per_scale_) {
    if (tty_) std::fputc('\r', stderr);
    std::fprintf(stderr, "scale %lld/%lld done at %.2f s  KV %.2f MiB retained of %.2f MiB full%s\n",
                 static_cast<long long>(u->unit_index + 1), static_cast<long long>(u->units_total),
                 u->elapsed_ms / 1000.0, u->kv_bytes_logical / 1048576.0, u->kv_bytes_full_equivalent / 1048576.0,
                 tty_ ? "                    " : "");
  } else if (const auto* p = std::get_if<TokenProgressEvent>(&event)) {
    const auto now = std::chrono::steady_clock::now();
    const bool final = p->tokens_done == p->tokens_total;
    if (final || !tty_ || now - last_draw_ > std::chrono::milliseconds(100)) {
      last_draw_ = now;
      draw(p->tokens_done, p->tokens_total, p->tokens_per_second, final);
    }
  } else if (const auto* f = std::get_if<FailedEvent>(&event)) {
    if (tty_) std::fputc('\n', stderr);
    (void)f;
  }
}

}  // namespace kvs::cli
