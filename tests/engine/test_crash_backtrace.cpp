// The fatal-signal report: a crash prints the signal and a native stack on
// stderr and still ends the process with that signal. The engine test binary
// installs it for itself too, so that a crash in any test (say on a GPU
// machine lent for minutes) names where it happened.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "engine/core/crash_backtrace.h"

namespace kvs {
namespace {

const bool kInstalledForThisBinary = install_crash_backtrace("kvs_engine_tests");

// Runs `crash` in a child process and returns what it wrote to stderr and how it ended.
std::string run_crashing_child(void (*crash)(), int& wait_status) {
  int pipe_ends[2];
  EXPECT_EQ(::pipe(pipe_ends), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(pipe_ends[1], STDERR_FILENO);
    ::close(pipe_ends[0]);
    install_crash_backtrace("crash-child");
    crash();
    ::_exit(0);
  }
  ::close(pipe_ends[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_ends[0], buffer, sizeof(buffer))) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_ends[0]);
  ::waitpid(child, &wait_status, 0);
  return text;
}

void raise_segv() { ::raise(SIGSEGV); }
void raise_abort() { ::raise(SIGABRT); }

TEST(CrashBacktrace, SegfaultPrintsSignalAndStackThenDiesOfIt) {
  if (!kInstalledForThisBinary) GTEST_SKIP() << "sanitizer build: the sanitizer reports crashes itself";
  int status = 0;
  const std::string text = run_crashing_child(raise_segv, status);
  EXPECT_NE(text.find("crash-child: fatal signal 11 (SIGSEGV); native stack:"), std::string::npos) << text;
  // backtrace_symbols_fd writes one line per frame, each naming its object file.
  EXPECT_NE(text.find("kvs_engine_tests"), std::string::npos) << text;
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

TEST(CrashBacktrace, AbortIsReportedWithItsName) {
  if (!kInstalledForThisBinary) GTEST_SKIP() << "sanitizer build: the sanitizer reports crashes itself";
  int status = 0;
  const std::string text = run_crashing_child(raise_abort, status);
  EXPECT_NE(text.find("fatal signal 6 (SIGABRT)"), std::string::npos) << text;
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
}

}  // namespace
}  // namespace kvs
