#include "tests/sim/sim_faults.h"

#include <sstream>

namespace kspool::sim {

bool FaultSet::Parse(const std::string& spec, FaultSet base, FaultSet* out, std::string* error) {
  FaultSet s = base;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    if (item == "all") {
      s = All();
      continue;
    }
    if (item == "none") {
      s = FaultSet();
      continue;
    }
    if (item == "ci") {
      s = Ci();
      continue;
    }
    bool on = true;
    if (item[0] == '-' || item[0] == '+') {
      on = item[0] == '+';
      item = item.substr(1);
    }
    bool found = false;
    for (const FaultInfo& f : AllFaults()) {
      if (item == f.name) {
        s.Set(f.fault, on);
        found = true;
      }
    }
    if (!found) {
      *error = "unknown fault kind '" + item + "'";
      return false;
    }
  }
  *out = s;
  return true;
}

FaultSet FaultSet::Ci() {
  FaultSet s = All();
  for (const Waiting& w : WaitingForFixes()) s.Set(w.fault, false);
  return s;
}

std::string FaultSet::ToString() const {
  if (bits_ == All().bits_) return "all";
  std::string out;
  for (const FaultInfo& f : AllFaults()) {
    if (!Has(f.fault)) continue;
    if (!out.empty()) out += ",";
    out += f.name;
  }
  return out.empty() ? "none" : "none," + out;  // parses back to this set
}

}  // namespace kspool::sim
