#include "engine/core/crash_backtrace.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace kvs {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizerOwnsSignals = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitizerOwnsSignals = true;
#else
constexpr bool kSanitizerOwnsSignals = false;
#endif
#else
constexpr bool kSanitizerOwnsSignals = false;
#endif

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
char g_program[64] = "kvstudio";
bool g_installed = false;

// Only async-signal-safe calls from here on: write(), backtrace() (its library
// is loaded at install time, so it does not allocate here), backtrace_symbols_fd().
void write_text(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "?";
  }
}

void on_fatal_signal(int signal_number) {
  char number[4] = {static_cast<char>('0' + signal_number / 10 % 10), static_cast<char>('0' + signal_number % 10), 0,
                    0};
  write_text("\n");
  write_text(g_program);
  write_text(": fatal signal ");
  write_text(signal_number >= 10 ? number : number + 1);
  write_text(" (");
  write_text(signal_name(signal_number));
  write_text("); native stack:\n");
  void* frames[64];
  const int count = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, count, STDERR_FILENO);
  // SA_RESETHAND restored the default action: raising again ends the process
  // the way the signal would have (exit status, core dump).
  ::raise(signal_number);
}

}  // namespace

bool install_crash_backtrace(const char* program_name) {
  if (kSanitizerOwnsSignals) return false;
  std::strncpy(g_program, program_name ? program_name : "kvstudio", sizeof(g_program) - 1);
  g_program[sizeof(g_program) - 1] = 0;
  if (g_installed) return true;
  void* warm_up[2];
  ::backtrace(warm_up, 2);  // loads libgcc's unwinder now, not inside the handler
  static char alternate_stack[64 * 1024];
  stack_t stack{};
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof(alternate_stack);
  ::sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  for (const int signal_number : kFatalSignals) ::sigaction(signal_number, &action, nullptr);
  g_installed = true;
  return true;
}

}  // namespace kvs
