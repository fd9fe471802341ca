// gtest main for tests that need DPDK: starts EAL without hugepages or root (--no-huge
// --no-shconf), then runs the tests.
#include <gtest/gtest.h>

#include <cstdio>

#include "common/eal.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  rocefab::Status st = rocefab::InitEal(rocefab::NoHugeEalArgs(1536), rocefab::EalAffinity::kKeep);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}
