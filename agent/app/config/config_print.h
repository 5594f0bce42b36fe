// --print-config: the effective configuration as the text of a --config file, one
// `flag = "value"` line per flag (lists as ["a", "b"]), every flag included, secrets
// redacted (agent/kafka/kafka_secrets.h). Read back with --config it gives the same
// configuration, except that a redacted value is then "[redacted]".
// Thread safety: a pure function of a parsed CLI::App.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace kspool::agent {

// After app.parse(): each option's value from the command line, the environment or the
// config file, else its default ("true"/"false" for a flag). The actions --help,
// --version, --print-config, and --config, are left out.
std::string EffectiveConfigText(const CLI::App& app);

}  // namespace kspool::agent
