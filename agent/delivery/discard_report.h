// The discard report (README, "Observing it": per topic, counts by outcome up to the
// commit point and after it) in its two public shapes: the admin API's protobuf and the
// JSON of GET /discards. Pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "kspool/v1/admin.pb.h"
#include "wal/report.h"

namespace kspool::agent {

kspool::v1::GetDiscardReportResponse ReportToProto(const wal::Report& report, int64_t now_ms);
nlohmann::json ReportToJson(const kspool::v1::GetDiscardReportResponse& report);

}  // namespace kspool::agent
