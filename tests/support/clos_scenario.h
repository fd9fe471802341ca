#pragma once
// The starting point of most scenario tests: a named scenario on a Clos of built-in hosts.
#include <gtest/gtest.h>

#include <string>

#include "topo/clos.h"
#include "topo/scenario.h"

namespace rocefab::testing {

/// A scenario called `name` on the Clos `spec` (its hosts always built-in: the sim has no
/// namespaces), running for `duration`. A Clos that cannot be built fails the calling test.
inline Scenario ClosScenario(const std::string& name, ClosSpec spec, Time duration) {
  spec.host_kind = HostKind::kBuiltin;
  auto t = BuildClos(spec);
  EXPECT_TRUE(t.ok()) << t.message();
  Scenario s;
  s.name = name;
  if (t.ok()) s.topology = t.value();
  s.duration = duration;
  return s;
}

}  // namespace rocefab::testing
