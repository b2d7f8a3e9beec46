// kvstudio-cli: generate, inspect, verify and convert models from a terminal.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/core/crash_backtrace.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"

namespace {

const char* kUsage = R"(KV Studio command line — autoregressive image generation with KV-cache compression

usage: kvstudio-cli <command> [options]

commands:
  generate        generate images (default model: the bundled demo model)
  info <model>    architecture, parameter count and KV bytes per token of a bundle
  verify <case>   check the engine against a conformance case (<case>.json; see docs/conformance.md)
  convert         turn official checkpoints into a KV Studio bundle
  create-random   write a randomly initialised bundle (demo or any official size)
  inspect <png>   print the generation parameters stored in a PNG made by KV Studio
  policies        list the KV-cache policies and their parameters
  calibrate       offline calibration of a VAR model: HeatKV's scale-to-scale attention, AMS-KV's theta
  bench           compare KV-cache policies with the full cache (memory, speed, PSNR, SSIM)
  world           the procedural image world of the demo models: list classes, render a grid
  gallery         the images generated so far: list, search, remove, export (generate keeps each one)

global options:
  --log-level L   trace|debug|info|warn|error|off (default warn)
  --help          this text, or `kvstudio-cli <command> --help`
  --version       print the version

run-time dtype (generate, bench, calibrate, info):
  --dtype T       weights and KV cache in auto|f32|bf16|f16 (default auto: bf16 on CUDA, f32 on
                  the CPU); KV bytes follow it. verify always runs f32

decode path on a GPU (generate, bench):
  --cuda-graphs on|off
                  LlamaGen's decode step as CUDA graphs between eager attentions (default on;
                  KVSTUDIO_CUDA_GRAPHS=0 turns them off for the process); bench reports which ran
)";

}  // namespace

int main(int argc, char** argv) {
  kvs::install_crash_backtrace("kvstudio-cli");
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    kvs::set_log_level(kvs::LogLevel::Warn);
    // --log-level may appear anywhere; strip it before the command parses.
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--log-level" || args[i].rfind("--log-level=", 0) == 0) {
        std::string value;
        if (args[i] == "--log-level") {
          if (i + 1 >= args.size()) throw kvs::InvalidArgumentError("option --log-level needs a value");
          value = args[i + 1];
          args.erase(args.begin() + i, args.begin() + i + 2);
        } else {
          value = args[i].substr(std::strlen("--log-level="));
          args.erase(args.begin() + i);
        }
        kvs::set_log_level(kvs::parse_log_level(value));
        break;
      }
    }
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      std::fputs(kUsage, stdout);
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
      std::printf("kvstudio-cli %s\n", KVSTUDIO_VERSION);
      return 0;
    }
    const std::string command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "generate") return kvs::cli::cmd_generate(rest);
    if (command == "info") return kvs::cli::cmd_info(rest);
    if (command == "verify") return kvs::cli::cmd_verify(rest);
    if (command == "convert") return kvs::cli::cmd_convert(rest);
    if (command == "create-random") return kvs::cli::cmd_create_random(rest);
    if (command == "inspect") return kvs::cli::cmd_inspect(rest);
    if (command == "policies") return kvs::cli::cmd_policies(rest);
    if (command == "bench") return kvs::cli::cmd_bench(rest);
    if (command == "world") return kvs::cli::cmd_world(rest);
    if (command == "calibrate") return kvs::cli::cmd_calibrate(rest);
    if (command == "gallery") return kvs::cli::cmd_gallery(rest);
    throw kvs::InvalidArgumentError("unknown command '" + command + "' (see kvstudio-cli --help)");
  } catch (const kvs::CancelledError& e) {
    std::fprintf(stderr, "kvstudio-cli: %s\n", e.what());
    return 130;
  } catch (const kvs::Error& e) {
    std::fprintf(stderr, "kvstudio-cli: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::fprintf(stderr, "kvstudio-cli: internal error: %s\n", what.substr(0, what.find('\n')).c_str());
    return 3;
  }
}
