// drain_sim: runs the drain simulator (simulation.h) over seeds.
//
//   drain_sim --seed S [--faults SPEC] [--steps N] [--verbose]   one seed (a replay)
//   drain_sim --ci [--budget-seconds T] [--fixed K]   the registered CI run: the fixed
//                                            seeds (the first K of them; default all
//                                            six), then fresh random ones until T
//                                            (default 45) s have passed, with the CI
//                                            fault set
//   drain_sim --seeds N | --minutes M        soak: N random seeds, or for M minutes
//   drain_sim --known-defects FILE [--shard I/N]   the seeds of known defects
//                                            (known_defects.txt); with --shard, only
//                                            the I-th of every N seed lines (0-based), so
//                                            that ctest can run a long list on every core
// SPEC: all (default; ci with --ci), none, ci, or names with - or + (sim_faults.h), e.g.
// "all,-power_cut". On a failure it prints the seed, the broken invariant and a one-line
// replay command, and exits 1. Each run prints its digest: the same seed and fault set
// give the same digest.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/check.h"
#include "tests/sim/simulation.h"

namespace {

using kspool::sim::FaultSet;
using kspool::sim::SimConfig;
using kspool::sim::SimResult;

// Seeds every CI run covers first (then fresh ones): a spread that reaches each fault kind.
constexpr uint64_t kCiSeeds[] = {1, 2, 3, 4, 5, 6};

std::string g_self = "drain_sim";
SimConfig g_current;  // for the DCHECK handler: the seed being run

std::string Replay(const SimConfig& c) {
  return g_self + " --seed " + std::to_string(c.seed) + " --faults " + c.faults.ToString() +
         " --steps " + std::to_string(c.steps) + " --verbose";
}

void OnCheckFailure(const std::string&) {
  std::fprintf(stderr, "drain_sim: seed %llu FAILED (a KSPOOL_DCHECK in the drain)\nreplay: %s\n",
               static_cast<unsigned long long>(g_current.seed), Replay(g_current).c_str());
}

// An abort outside the drain's checks (an assertion in RocksDB under injected faults)
// must still name its seed: the replay line is written ahead for each seed, and the
// SIGABRT handler only write()s it (async-signal-safe).
char g_abort_line[1024];
size_t g_abort_len = 0;

void OnAbort(int) {
  if (g_abort_len > 0) (void)!::write(2, g_abort_line, g_abort_len);
}

void PrepareAbortLine(const SimConfig& c) {
  const std::string line = "drain_sim: seed " + std::to_string(c.seed) +
                           " aborted\nreplay: " + Replay(c) + "\n";
  g_abort_len = std::min(line.size(), sizeof(g_abort_line));
  std::memcpy(g_abort_line, line.data(), g_abort_len);
}

struct Totals {
  uint64_t seeds = 0, steps = 0, faults = 0;
};

// Runs one seed; false (after printing the seed and a replay line) when it failed.
bool RunOne(const SimConfig& c, Totals* totals, bool quiet) {
  g_current = c;
  PrepareAbortLine(c);
  SimResult r = kspool::sim::RunSimulation(c);
  ++totals->seeds;
  totals->steps += r.steps;
  totals->faults += r.faults;
  if (!quiet || !r.ok) {
    std::printf("seed %llu: %s, %llu steps, %llu faults, %llu appended, %llu landed, %llu discarded, "
                "digest %016llx\n",
                static_cast<unsigned long long>(c.seed), r.ok ? "ok" : "FAILED",
                static_cast<unsigned long long>(r.steps), static_cast<unsigned long long>(r.faults),
                static_cast<unsigned long long>(r.appended), static_cast<unsigned long long>(r.landed),
                static_cast<unsigned long long>(r.discarded), static_cast<unsigned long long>(r.digest));
  }
  if (!r.ok) {
    std::printf("  invariant broken: %s\n  replay: %s\n", r.violation.c_str(), Replay(c).c_str());
  }
  std::fflush(stdout);
  return r.ok;
}

int Usage(const std::string& error) {
  std::fprintf(stderr,
               "drain_sim: %s\nusage: drain_sim [--seed S | --seeds N | --minutes M | --ci "
               "[--budget-seconds T] [--fixed K] | --known-defects FILE [--shard I/N]] [--faults "
               "SPEC] [--steps N] "
               "[--verbose]\n",
               error.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGABRT, OnAbort);  // abort() still ends the process once it returns
  // The drain's warnings, thousands per seed; KSPOOL_SIM_LOG=1 keeps them for a replay.
  if (std::getenv("KSPOOL_SIM_LOG") == nullptr) spdlog::set_level(spdlog::level::off);
  g_self = argv[0];
  // Every append and settle is an fsync: on tmpfs a seed takes a fraction of the time,
  // and what the simulator tests is the drain's logic, not the disk.
  struct stat shm;
  if (std::getenv("TMPDIR") == nullptr && stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode)) {
    setenv("TMPDIR", "/dev/shm", 1);
  }
  kspool::SetCheckFailureHandler(&OnCheckFailure);
  SimConfig base;
  bool ci = false, have_seed = false, faults_given = false;
  uint64_t seeds = 0;
  double minutes = 0, budget = 45;
  size_t fixed_count = std::size(kCiSeeds);
  std::string known, faults_spec;
  unsigned shard = 0, shards = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--seed") {
      base.seed = std::strtoull(value().c_str(), nullptr, 10);
      have_seed = true;
    } else if (a == "--seeds") {
      seeds = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--minutes") {
      minutes = std::strtod(value().c_str(), nullptr);
    } else if (a == "--ci") {
      ci = true;
    } else if (a == "--fixed") {
      fixed_count =
          std::min<size_t>(std::strtoull(value().c_str(), nullptr, 10), std::size(kCiSeeds));
    } else if (a == "--budget-seconds") {
      budget = std::strtod(value().c_str(), nullptr);
    } else if (a == "--faults") {
      faults_spec = value();
      faults_given = true;
    } else if (a == "--steps") {
      base.steps = std::atoi(value().c_str());
    } else if (a == "--verbose") {
      base.verbose = true;
    } else if (a == "--known-defects") {
      known = value();
    } else if (a == "--shard") {
      const std::string v = value();
      if (std::sscanf(v.c_str(), "%u/%u", &shard, &shards) != 2 || shards == 0 || shard >= shards) {
        return Usage("--shard wants I/N with 0 <= I < N, not '" + v + "'");
      }
    } else {
      return Usage("unknown argument " + a);
    }
  }
  std::string error;
  if (faults_given && !FaultSet::Parse(faults_spec, ci ? FaultSet::Ci() : FaultSet::All(), &base.faults, &error)) {
    return Usage(error);
  }
  if (!faults_given && ci) base.faults = FaultSet::Ci();

  Totals totals;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool ok = true;
  if (!known.empty()) {
    // Lines: <defect> <seed> <fault spec> [comment]; '#' starts a comment line.
    std::ifstream in(known);
    if (!in) return Usage("cannot read " + known);
    std::string line;
    int still_failing = 0;
    for (unsigned index = 0; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      if (index++ % shards != shard) continue;
      std::istringstream ls(line);
      std::string defect;
      SimConfig c = base;
      std::string spec;
      ls >> defect >> c.seed >> spec;
      if (!FaultSet::Parse(spec, FaultSet::All(), &c.faults, &error)) return Usage(error);
      std::printf("defect %s: ", defect.c_str());
      std::fflush(stdout);
      // In a child: a KSPOOL_DCHECK aborts the process, and the other seeds must run.
      const pid_t pid = fork();
      if (pid == 0) std::_Exit(RunOne(c, &totals, false) ? 0 : 1);
      int status = 0;
      waitpid(pid, &status, 0);
      ++totals.seeds;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        ok = false;
        ++still_failing;
      }
    }
    std::printf("drain_sim: %llu known-defect seeds, %d still failing\n",
                static_cast<unsigned long long>(totals.seeds), still_failing);
    return ok ? 0 : 1;
  } else if (have_seed) {
    ok = RunOne(base, &totals, false);
  } else {
    std::random_device rd;
    std::mt19937_64 fresh((static_cast<uint64_t>(rd()) << 32) ^ rd());
    std::vector<uint64_t> fixed;
    if (ci) fixed.assign(std::begin(kCiSeeds), std::begin(kCiSeeds) + fixed_count);
    const double limit_s = ci ? budget : minutes * 60;
    for (size_t n = 0; ok; ++n) {
      if (n >= fixed.size()) {
        if (seeds > 0 && totals.seeds >= seeds) break;
        if (seeds == 0 && elapsed_s() >= limit_s) break;
      }
      SimConfig c = base;
      c.seed = n < fixed.size() ? fixed[n] : fresh() % 1'000'000'000'000ull;
      ok = RunOne(c, &totals, n >= fixed.size() && !base.verbose);
    }
  }
  const double s = elapsed_s();
  std::printf("drain_sim: %llu seeds, %llu steps, %llu faults in %.1f s (%.1f seeds/min, %.0f faults/min); faults: %s; %s\n",
              static_cast<unsigned long long>(totals.seeds), static_cast<unsigned long long>(totals.steps),
              static_cast<unsigned long long>(totals.faults), s, totals.seeds * 60 / std::max(s, 1e-9),
              totals.faults * 60 / std::max(s, 1e-9), base.faults.ToString().c_str(), ok ? "all passed" : "FAILED");
  return ok ? 0 : 1;
}
