// The drain simulator (issue 25; FoundationDB's simulation testing and TigerBeetle's VOPR
// are the models): one seeded PRNG drives writers appending keyed and unkeyed messages
// to several topics through the real WAL (on the fault-injecting file system), the real
// DrainLoop one pass at a time, a simulated Kafka (sim_kafka.h), the manual clock, and
// crashes and power cuts of the whole agent. A model kept on the side is checked after
// every step (Simulation::Check, simulation.cc lists the invariants), and the drain's
// own recount (DrainLoop::CheckInvariants). No threads of its own and no sleeps: the
// same seed and fault set give the same run, and the same digest.
// Thread safety: none; one simulation per thread.
#pragma once

#include <cstdint>
#include <string>

#include "tests/sim/sim_faults.h"

namespace kspool::sim {

struct SimConfig {
  uint64_t seed = 1;
  FaultSet faults = FaultSet::All();
  int steps = 3000;      // faulty steps; then a healing phase that must drain everything
  bool verbose = false;  // trace faults and the drain's configuration on stderr
  // Fail when an entry Kafka held at the restart is produced again (the one-copy
  // invariant of reconciliation).
  bool check_reconcile = true;
};

struct SimResult {
  bool ok = true;
  std::string violation;  // the first invariant broken, with the step and sim time
  uint64_t digest = 0;    // of everything that happened: equal for equal runs
  uint64_t steps = 0;
  uint64_t faults = 0;    // faults injected
  uint64_t appended = 0;  // acknowledged entries
  uint64_t landed = 0;    // messages that reached the simulated Kafka (duplicates too)
  uint64_t discarded = 0;
};

SimResult RunSimulation(const SimConfig& config);

}  // namespace kspool::sim
