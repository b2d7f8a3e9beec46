#pragma once
#include <string>
#include <vector>

namespace kvs::cli {

// Each command returns the process exit code; errors are thrown as kvs::Error.
int cmd_generate(const std::vector<std::string>& args);
int cmd_info(const std::vector<std::string>& args);
int cmd_verify(const std::vector<std::string>& args);
int cmd_convert(const std::vector<std::string>& args);
int cmd_create_random(const std::vector<std::string>& args);
int cmd_inspect(const std::vector<std::string>& args);
int cmd_policies(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_bench_merge(const std::vector<std::string>& args);  // bench merge DIR...
int cmd_world(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_gallery(const std::vector<std::string>& args);  // gallery list|remove|export|path

}  // namespace kvs::cli
