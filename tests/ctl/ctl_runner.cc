#include "tests/ctl/ctl_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support/child_process.h"

namespace kspool::testing {

CtlResult RunCtl(const std::vector<std::string>& args, const std::string& scratch_dir) {
  static std::atomic<int> counter{0};
  const std::string err_path = scratch_dir + "/kspoolctl-" + std::to_string(counter++) + ".err";
  std::vector<std::string> argv = {KSPOOL_CTL_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  CtlResult r;
  {
    ChildProcess child(argv, err_path);
    // Every output line ends with a newline; the stream ends when the process exits.
    while (std::optional<std::string> line = child.WaitForLine("", std::chrono::seconds(60))) {
      r.out += *line + "\n";
    }
    std::optional<int> status = child.Wait(std::chrono::seconds(60));
    if (status && WIFEXITED(*status)) r.exit_code = WEXITSTATUS(*status);
  }
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  r.err = ss.str();
  return r;
}

std::vector<nlohmann::json> JsonLines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::string Normalize(std::string text, const std::map<std::string, std::string>& exact) {
  for (const auto& [from, to] : exact) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  static const std::regex kTime(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  static const std::regex kDuration(R"(\((age|lag) [0-9.]+[a-z]+(\d\d[a-z]+)?\))");
  text = std::regex_replace(text, kTime, "YYYY-MM-DDTHH:MM:SS.mmmZ");
  return std::regex_replace(text, kDuration, "($1 <duration>)");
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(KSPOOL_CTL_GOLDEN_DIR) + "/" + name + ".txt";
  if (const char* update = std::getenv("CTL_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no golden file " << path << "; run with CTL_UPDATE_GOLDEN=1 to create it";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(actual, want.str()) << "output differs from " << path
                                << " (CTL_UPDATE_GOLDEN=1 rewrites it)";
}

}  // namespace kspool::testing
