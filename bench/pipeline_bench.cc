// Per-hop pipeline cost in ns/packet: bursts of 32 frames from memory through one SwitchNode
// (parse, classify, route, ECMP, TTL, [ECN, MMU admission], enqueue, schedule, dequeue,
// [MMU release]) for 64 B and 1024 B frames, in three variants measured in the same run:
//   plain   - the foundation hop: per-port FIFO limit, strict priority, no ECN (DIR-24-8 FIB)
//   full    - shared-buffer MMU, lossless PG (DSCP 26), WRED evaluated, DWRR (DIR-24-8 FIB)
//   full-sim- as full with the RIB-tree FIB the sim runner uses
//   conweave-src - as full, the switch a ConWeave source ToR and the frames RoCEv2 data (UDP 4791):
//              adds the per-flow epoch state, two path samples and the tag write per packet
// Run: build/bench/bench_pipeline
#include <benchmark/benchmark.h>

#include <vector>

#include "common/eal.h"
#include "switch/switch_node.h"

namespace rocefab {
namespace {

class NullEnv final : public NodeEnv {
 public:
  explicit NullEnv(rte_mempool* p) : pool_(p) {}
  void WakeTx(uint16_t) override {}
  void ScheduleTimer(Time, uint64_t) override {}
  rte_mempool* pool() override { return pool_; }

 private:
  rte_mempool* pool_;
};

rte_mempool* Pool() {
  static rte_mempool* pool = [] {
    Status st = InitEal(NoHugeEalArgs(512));
    if (!st.ok()) std::abort();
    return CreatePktPool("benchpool", 16383).value();
  }();
  return pool;
}

void BM_RoutedHop(benchmark::State& state) {
  const uint16_t frame = static_cast<uint16_t>(state.range(0));
  rte_mempool* pool = Pool();  // starts EAL before the LPM is created
  SwitchConfig c;
  c.name = "bench";
  c.router_mac = Mac{{2, 0, 0, 0, 0, 1}};
  for (int i = 0; i < 8; ++i) c.ports.push_back({"p" + std::to_string(i), 100 * kGbps, 0});
  RouteGroup g;
  for (uint16_t p = 4; p < 8; ++p) g.members.push_back(NextHop{p, Mac{{2, 0, 0, 0, 1, static_cast<uint8_t>(p)}}});
  c.routes.push_back(RouteConfig{0x0A000000, 8, g});
  const int variant = static_cast<int>(state.range(1));
  c.fib = variant == 2 ? FibLayout::kTree : FibLayout::kDir24_8;
  if (variant == 0) {
    c.buffer.shared = false;
    c.buffer.size = 1 << 20;
    c.scheduler.strict_mask = 0xFF;
  } else {
    c.buffer.shared = true;
    c.buffer.size = 12 << 20;
    c.scheduler.strict_mask = 0xC0;
    c.wred[3].enabled = true;  // evaluated on every frame; queues stay below Kmin here
  }
  if (variant == 3) {
    c.load_balancing.scheme = LoadBalancingConfig::Scheme::kConweave;
    c.load_balancing.conweave_base_rtt = 4 * kUs;
    c.svis.push_back(SviConfig{100, 0x0B000001, 24});  // a ToR: it has a server subnet
  }
  state.SetLabel(variant == 0 ? "plain" : variant == 1 ? "full" : variant == 2 ? "full-sim" : "conweave-src");
  auto sw = SwitchNode::Create(c).value();
  NullEnv env(pool);
  sw->Attach(&env);
  constexpr int kBurst = 32;
  std::vector<rte_mbuf*> burst(kBurst);
  UdpSpec u;
  u.src_mac = Mac{{2, 0, 0, 0, 2, 2}};
  u.dst_mac = c.router_mac;
  u.src_ip = 0x0B000001;
  u.dst_ip = 0x0A000001;
  u.payload_len = static_cast<uint16_t>(frame - 42);
  u.dscp = 26;  // lossless TC3
  u.ecn = 2;
  if (variant == 3) u.dport = 4791;  // zero payload: BTH opcode 0x00 (RC SEND First), a data packet
  Time now = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < kBurst; ++i) {
      u.sport = static_cast<uint16_t>(1000 + i);
      burst[i] = BuildUdp(Pool(), u);
    }
    state.ResumeTiming();
    for (int i = 0; i < kBurst; ++i) sw->Receive(now, static_cast<uint16_t>(i & 3), burst[i]);
    for (uint16_t p = 4; p < 8; ++p) {
      while (rte_mbuf* m = sw->Dequeue(now, p)) rte_pktmbuf_free(m);
    }
    now += kUs;
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  state.counters["ns_per_pkt"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBurst), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RoutedHop)->ArgsProduct({{64, 1024}, {0, 1, 2, 3}});

}  // namespace
}  // namespace rocefab

BENCHMARK_MAIN();
