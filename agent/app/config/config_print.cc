#include "agent/app/config/config_print.h"

#include <CLI/CLI.hpp>
#include <optional>

#include "agent/kafka/kafka_secrets.h"

namespace kspool::agent {
namespace {

// `v` quoted so that CLI11's config reader (2.1) gives it back as it is: it strips one
// pair of outer quotes and has no escapes, so the quote must be a character `v` lacks.
// Its reader also cuts a line at '#' even inside quotes, and reads one line a value:
// such values cannot be written (nullopt).
std::optional<std::string> Quoted(const std::string& v) {
  if (v.find_first_of("#\n\r") != std::string::npos) return std::nullopt;
  for (char q : {'"', '\'', '`'}) {
    if (v.find(q) == std::string::npos) return q + v + q;
  }
  return std::nullopt;
}

}  // namespace

std::string EffectiveConfigText(const CLI::App& app) {
  std::string out =
      "# kspool-agent --print-config: the effective configuration (flags > environment > "
      "config file > defaults);\n# secret values read \"" +
      std::string(kRedacted) + "\". Usable as a --config file.\n";
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_lnames().empty()) continue;
    const std::string& name = opt->get_lnames().front();
    // Actions, not settings (and --config: the output is a whole config itself).
    if (name == "help" || name == "version" || name == "config" || name == "print-config") {
      continue;
    }
    const bool list = opt->get_items_expected_max() > 1;
    const bool flag = opt->get_items_expected_max() == 0;  // e.g. add_flag: true or false
    std::vector<std::string> values = opt->results();
    if (flag) {
      values = {values.empty() ? "false" : values.back()};
    } else if (!list) {
      values = {values.empty() ? opt->get_default_str() : values.back()};
    }
    if (name == "kafka-option") {
      for (std::string& v : values) v = RedactKafkaOption(v);
    }
    std::string text;
    bool writable = true;
    for (const std::string& v : values) {
      std::optional<std::string> q = Quoted(v);
      if (!q) writable = false;
      if (!text.empty()) text += ", ";
      text += q.value_or("");
    }
    if (!writable) {
      out += "# " + name + ": a value holds '#', a line break or every quote character, " +
             "which a config file cannot carry; give it as a flag or in the environment\n";
      continue;
    }
    // CLI11 refuses an empty list ("at least 1 required"): an empty one is shown, not set.
    const bool empty_list = list && values.empty();
    out += (empty_list ? "# " : "") + name + " = " + (list ? "[" + text + "]" : text) + "\n";
  }
  return out;
}

}  // namespace kspool::agent
