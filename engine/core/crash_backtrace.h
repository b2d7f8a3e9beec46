#pragma once
// A native stack on stderr when a program dies of a fatal signal. A crash on a
// machine that is lent for minutes (a GPU machine without a debugger at hand)
// must say where it happened in the one run there is; the default SIGSEGV says
// nothing. Torch-free, so that every program and test binary can install it.

namespace kvs {

// Installs handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (on an
// alternate stack, so a stack overflow is reported too) that write
// "<program>: fatal signal N (NAME); native stack:" and the frames to stderr,
// then let the signal take its default course (same exit status, core dump if
// enabled). Returns false, installing nothing, in a sanitizer build: its own
// report is better. Calling it again only updates the program name.
bool install_crash_backtrace(const char* program_name);

}  // namespace kvs
