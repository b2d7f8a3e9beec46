#pragma once
// kvstudio-train subcommands. Each returns the process exit code and throws
// kvs::Error for anything the user can fix. Each family (LlamaGen, VAR, MAR) adds
// its trainers as subcommands here and in main.cpp's table.
#include <string>
#include <vector>

namespace kvs::train_app {

int cmd_vq(const std::vector<std::string>& args, const std::string& command_line);
int cmd_classifier(const std::vector<std::string>& args, const std::string& command_line);
int cmd_gpt(const std::vector<std::string>& args, const std::string& command_line);
int cmd_var_vae(const std::vector<std::string>& args, const std::string& command_line);
int cmd_var(const std::vector<std::string>& args, const std::string& command_line);
int cmd_kl_vae(const std::vector<std::string>& args, const std::string& command_line);
int cmd_mar(const std::vector<std::string>& args, const std::string& command_line);
int cmd_text_tokenizer(const std::vector<std::string>& args, const std::string& command_line);
int cmd_janus(const std::vector<std::string>& args, const std::string& command_line);
int cmd_export(const std::vector<std::string>& args, const std::string& command_line);
int cmd_evaluate(const std::vector<std::string>& args, const std::string& command_line);
int cmd_compact(const std::vector<std::string>& args, const std::string& command_line);

}  // namespace kvs::train_app
