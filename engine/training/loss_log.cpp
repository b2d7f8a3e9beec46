#include "engine/training/loss_log.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/core/errors.h"

namespace kvs::training {

LossLog::LossLog(std::string path, std::vector<std::string> columns, int64_t resume_step)
    : path_(std::move(path)), columns_(std::move(columns)) {
  std::string header = "step";
  for (const auto& c : columns_) header += "," + c;
  std::vector<std::string> kept;
  if (resume_step >= 0) {
    std::ifstream in(path_);
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
      if (first) {
        first = false;
        continue;  // old header
      }
      const auto comma = line.find(',');
      if (comma == std::string::npos) continue;
      try {
        if (std::stoll(line.substr(0, comma)) <= resume_step) kept.push_back(line);
      } catch (const std::exception&) {
      }
    }
  }
  out_.open(path_, std::ios::trunc);
  if (!out_) throw FileError("file " + path_ + ": cannot write the loss log");
  out_ << header << "\n";
  for (const auto& l : kept) out_ << l << "\n";
  out_.flush();
}

void LossLog::append(int64_t step, const std::vector<double>& values) {
  out_ << step;
  char buf[32];
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (i < values.size() && std::isfinite(values[i])) {
      std::snprintf(buf, sizeof(buf), "%.6g", values[i]);
      out_ << "," << buf;
    } else {
      out_ << ",";
    }
  }
  out_ << "\n";
  out_.flush();
}

std::string format_log_line(int64_t step, int64_t total_steps, const std::vector<std::string>& names,
                            const std::vector<double>& values) {
  std::ostringstream s;
  s << "step " << step << "/" << total_steps;
  char buf[32];
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) continue;
    std::snprintf(buf, sizeof(buf), (std::fabs(v) < 1e-2 && v != 0) ? "%.2e" : "%.4f", v);
    s << " | " << names[i] << " " << buf;
  }
  return s.str();
}

}  // namespace kvs::training
