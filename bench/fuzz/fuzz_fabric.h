#pragma once
// Shared setup of the fuzz targets that drive a whole fabric under the sim runner (rnic, lb).
#include <utility>

#include "run/sim_fabric.h"
#include "topo/clos.h"

namespace rocefab::fuzz {

// A scenario on a Clos of built-in hosts at 10 Gb/s running `duration` of virtual time, with a
// 262 us NIC retransmission timeout (timeout_exp 6) so that retransmissions happen within it.
// Traps if the Clos cannot be built (a defect of the target, not a finding).
inline Scenario ClosScenario(int spines, int tors, int hosts_per_tor, Time duration) {
  ClosSpec spec;
  spec.spines = spines;
  spec.tors = tors;
  spec.hosts_per_tor = hosts_per_tor;
  spec.link_rate = 10 * kGbps;
  spec.host_kind = HostKind::kBuiltin;
  auto topo = BuildClos(spec);
  if (!topo.ok()) __builtin_trap();
  Scenario s;
  s.name = "fuzz";
  s.topology = topo.value();
  s.duration = duration;
  s.nic.timeout_exp = 6;
  return s;
}

// Connects a QP of host a to one of host b (PSNs 100 from a, 200 from b): {a's QPN, b's QPN}.
inline std::pair<uint32_t, uint32_t> ConnectQps(EmulatedHost& a, EmulatedHost& b) {
  const uint32_t qa = a.rnic().NextQpn(), qb = b.rnic().NextQpn();
  a.rnic().CreateQp(b.config().ip, qb, 100, 200);
  b.rnic().CreateQp(a.config().ip, qa, 200, 100);
  return {qa, qb};
}

}  // namespace rocefab::fuzz
