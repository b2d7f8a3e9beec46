#pragma once
// Resident memory of this process, read from /proc/self/status (Linux). Used by
// the benchmarks; returns 0 where the file or the field is unavailable.
#include <cstdint>

namespace kvs {

// VmHWM: the peak resident set size since the process started, or since the
// last reset_process_peak_resident().
int64_t process_peak_resident_bytes();

// Resets VmHWM to the current resident size (Linux: writes 5 to
// /proc/self/clear_refs), so that the next phase measures its own peak. Returns
// false where that is not possible (the peak then covers every earlier phase).
bool reset_process_peak_resident();

// VmRSS: the resident set size now.
int64_t process_resident_bytes();

// MemAvailable of /proc/meminfo: what the system can give a process without
// swapping (0 where unknown). Loaders use it to refuse a model that cannot fit
// with a message instead of being killed by the kernel half way.
int64_t system_available_bytes();

}  // namespace kvs
