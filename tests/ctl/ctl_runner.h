// Runs kspoolctl as a real process and normalizes its output for golden comparisons.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kspool::testing {

struct CtlResult {
  int exit_code = -1;  // -1: it did not exit in time, or died of a signal
  std::string out;
  std::string err;
};

// Runs `kspoolctl args...`; its stderr goes to a file under `scratch_dir`.
CtlResult RunCtl(const std::vector<std::string>& args, const std::string& scratch_dir);

// kspoolctl's JSON Lines output (--json), one value per line.
std::vector<nlohmann::json> JsonLines(const std::string& out);

// Replaces what differs between runs: each key of `exact` by its value, times by a
// placeholder of the same width (columns stay aligned), ages and lags by "<duration>".
std::string Normalize(std::string text, const std::map<std::string, std::string>& exact);

// Compares `actual` with tests/ctl/golden/<name>.txt; with CTL_UPDATE_GOLDEN=1 in the
// environment, rewrites the file instead. (Not KSPOOL_*: the agent the tests start
// refuses unknown KSPOOL_* variables.)
void ExpectGolden(const std::string& name, const std::string& actual);

}  // namespace kspool::testing
