#pragma once
// Loss curves: one CSV row per logged step (step, then the named columns) in the
// run folder, plus a log line through the "train" module logger. On resume the
// rows after the resumed step are dropped, so the file always describes one
// uninterrupted run.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace kvs::training {

class LossLog {
 public:
  // `resume_step` < 0 starts a new file; otherwise rows with step > resume_step are dropped.
  LossLog(std::string path, std::vector<std::string> columns, int64_t resume_step);

  void append(int64_t step, const std::vector<double>& values);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> columns_;
  std::ofstream out_;
};

// "name value" pairs as one line: "step 120/4000 | loss 2.3141 | lr 3.0e-04 ...".
std::string format_log_line(int64_t step, int64_t total_steps, const std::vector<std::string>& names,
                            const std::vector<double>& values);

}  // namespace kvs::training
