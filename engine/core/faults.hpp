// Fault injection for supervision tests (issue 5). Compiled in always, inert unless a plan is given: with an
// empty plan the engine does not even wrap its backend.
//
// Grammar (windows are counted from 1 over the engine's whole life, restarts included, so a fault fires once
// and a rebuilt backend does not replay it):
//
//   SPEC  := FAULT ("," FAULT)*
//   FAULT := KIND "@" PARAM (":" PARAM)*
//   PARAM := NAME "=" VALUE
//
//   stall@window=N:seconds=S      window N blocks S seconds; backend release() ends the block early
//   wedge@window=N:seconds=S      like stall but deaf to release(): the engine thread stays stuck
//   throw@window=N | @every=K     the backend call throws a non-strata exception (std::runtime_error)
//   backend_error@window=N | @every=K   the backend call throws strata::Error (a device fault)
//   slow@window=N | @every=K:ms=M the window is delayed M milliseconds, then runs
//   random@p=P[:seed=S][:ms=M][:seconds=S]
//                                 each window, with probability P (0..1, a seeded stream), one of throw,
//                                 backend_error, slow (M ms, default 10) and, only when seconds is given,
//                                 stall for that long
//
// Example: stall@window=5:seconds=3,throw@window=7,backend_error@window=9,slow@every=1:ms=20,random@p=0.05:seed=1
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

enum class FaultKind { Stall, Wedge, Throw, BackendError, Slow, Random };

struct Fault {
  FaultKind kind = FaultKind::Slow;
  int64_t window = 0;  // fires at this window (1-based), or
  int64_t every = 0;   // at every window divisible by this
  double seconds = 0;  // stall/wedge duration; for random, enables stalls
  double ms = 0;       // slow delay
  double p = 0;        // random: probability per window
  uint64_t seed = 0;   // random: stream seed
};

struct FaultPlan {
  std::vector<Fault> faults;
  bool empty() const { return faults.empty(); }
};

// Throws strata::Error naming the fault and the parameter that is wrong.
FaultPlan parse_fault_spec(const std::string& spec);

const char* fault_kind_name(FaultKind k);

}  // namespace strata
