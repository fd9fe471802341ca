#pragma once
// A per-test mbuf pool whose in-use count is checked for leaks when the test ends.
#include <gtest/gtest.h>
#include <rte_mempool.h>

#include <string>

#include "common/eal.h"

namespace rocefab::testing {

class PoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    // Room for 4 KB RoCE MTU frames.
    auto p = CreateHostOnlyPktPool("testpool" + std::to_string(n++), 32767, 4096 + RTE_PKTMBUF_HEADROOM + 384);
    ASSERT_TRUE(p.ok()) << p.message();
    pool_ = p.value();
  }
  void TearDown() override {
    if (pool_ != nullptr) {
      EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "mbufs leaked";
      rte_mempool_free(pool_);
    }
  }
  rte_mempool* pool_ = nullptr;
};

}  // namespace rocefab::testing
