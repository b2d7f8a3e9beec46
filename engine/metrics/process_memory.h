#pragma once
// Resident memory of this process, read from /proc/self/status (Linux). Used by
// the benchmarks; returns 0 where the file or the field is unavailable.
#include <cstdint>

namespace kvs {

// VmHWM: the peak resident set size since the process started. It never
// decreases, so a per-phase peak is only meaningful for the phase that raised it.
int64_t process_peak_resident_bytes();

// VmRSS: the resident set size now.
int64_t process_resident_bytes();

}  // namespace kvs
