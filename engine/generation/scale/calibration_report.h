#pragma once
// How `kvstudio-cli calibrate` prints a next-scale calibration, the same for
// every family: a table per policy, and the time a calibration file records.
#include <string>

namespace kvs {
struct AmsKvCalibration;
struct HeadVarianceProfile;
struct LayerSelectivityProfile;
struct ScaleAttentionProfile;
}  // namespace kvs

namespace kvs::scale {

// HeatKV: per source scale, how much later scales lean on it (mean S-CAS over heads, and its spread).
std::string scas_table(const ScaleAttentionProfile& profile);
// AMS-KV: per layer the statistic theta is chosen on, and which layers fall below theta.
std::string similarity_table(const AmsKvCalibration& calibration);
// ScaleKV: per layer and scale the ASI's Z-score within the scale (Eq. 3); the
// lowest become drafters (how many depends on the run's budget and drafter share).
std::string selectivity_table(const LayerSelectivityProfile& profile);
// HACK: per layer each head's score (the mean normalised attention variance) and
// its class at the default split (the upper half of the scores contextual).
std::string variance_table(const HeadVarianceProfile& profile);

// Now in UTC, ISO 8601.
std::string utc_now();

}  // namespace kvs::scale
