// Per-hop pipeline cost in ns/packet: bursts of 32 frames from memory through one SwitchNode
// (parse, classify, route, ECMP, TTL, [ECN, MMU admission], enqueue, schedule, dequeue,
// [MMU release]) for 64 B and 1024 B frames, in three variants measured in the same run:
//   plain   - the foundation hop: per-port FIFO limit, strict priority, no ECN (DIR-24-8 FIB)
//   full    - shared-buffer MMU, lossless PG (DSCP 26), WRED evaluated, DWRR (DIR-24-8 FIB)
//   full-sim- as full with the RIB-tree FIB the sim runner uses
//   conweave-src - as full, the switch a ConWeave source ToR and the frames RoCEv2 data (UDP 4791):
//              adds the per-flow epoch state, two path samples and the tag write per packet
//   conweave-dst - as full, the switch the destination ToR: tagged RoCEv2 data (phase 0, DATA)
//              from the uplinks to 4 connected hosts: tag parse, per-flow reorder state, scrub,
//              ARP + MAC lookup (the common, not-held case)
//   conga-src  - as conweave-src with CONGA: flowlet table, 4 DRE metrics, feedback pick, tag
//   full-dst   - the baseline for conweave-dst: the same delivery to connected hosts, ECMP fabric
// Timing: only the receive and dequeue loop is timed (manual time, two steady_clock reads per
// burst of 32: ~1 ns per frame); building the frames is not. (PauseTiming/ResumeTiming cost
// ~430 ns per burst here, a CPU-time system call each, part of which fell inside the timed
// region: ~5 ns per frame of the figures before 2026-12.)
// Run: build/bench/bench_pipeline
#include <benchmark/benchmark.h>

#include <chrono>
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
    Status st = InitEal(NoHugeEalArgs(512), EalAffinity::kKeep);
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
  c.fib = variant == 2 ? FibLayout::kPrefixHash : FibLayout::kDir24_8;
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
  const bool dst = variant == 4 || variant == 6;
  if (variant == 3 || variant == 5) {
    c.svis.push_back(SviConfig{100, 0x0B000001, 24});  // a ToR: it has a server subnet
  }
  if (variant == 3 || variant == 4) {
    c.load_balancing.scheme = LoadBalancingConfig::Scheme::kConweave;
    c.load_balancing.conweave_base_rtt = 4 * kUs;
  }
  if (variant == 5) {
    c.load_balancing.scheme = LoadBalancingConfig::Scheme::kConga;
    c.load_balancing.leaf_subnets = {{0x0B000000, 24}, {0x0A000000, 8}};
  }
  if (dst) {
    // Destination ToR: hosts 10.0.0.2..5 on ports 4..7 (VLAN 100), frames arrive on ports 0..3.
    c.routes.clear();
    c.svis.push_back(SviConfig{100, 0x0A000001, 24});
    for (uint16_t p = 4; p < 8; ++p) c.ports[p].vlan = 100;
  }
  const char* labels[] = {"plain", "full", "full-sim", "conweave-src", "conweave-dst", "conga-src", "full-dst"};
  state.SetLabel(labels[variant]);
  auto sw = SwitchNode::Create(c).value();
  NullEnv env(pool);
  sw->Attach(&env);
  if (dst) {
    for (uint16_t p = 4; p < 8; ++p) {
      sw->AddStaticNeighbor(0, 0x0A000002 + (p - 4), Mac{{2, 0, 0, 0, 3, static_cast<uint8_t>(p)}}, p);
    }
  }
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
  if (variant >= 3) u.dport = 4791;  // zero payload: BTH opcode 0x00 (RC SEND First), a data packet
  if (dst) u.src_mac = Mac{{2, 0, 0, 0, 9, 9}};  // the spine the frames came through (path id)
  Time now = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBurst; ++i) {
      u.sport = static_cast<uint16_t>(1000 + i);
      if (dst) u.dst_ip = 0x0A000002 + (i & 3);
      burst[i] = BuildUdp(Pool(), u);
      if (variant == 4) {
        // ConWeave tag as the source ToR writes it: valid, DATA, phase 0, epoch 1 (BTH byte 4).
        *rte_pktmbuf_mtod_offset(burst[i], uint8_t*, 14 + 20 + 8 + 4) = 0x80 | 1 << 2;
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) sw->Receive(now, static_cast<uint16_t>(i & 3), burst[i]);
    for (uint16_t p = 4; p < 8; ++p) {
      while (rte_mbuf* m = sw->Dequeue(now, p)) rte_pktmbuf_free(m);
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    now += kUs;
  }
  // The variant must have done its work: every frame forwarded, tags written or scrubbed.
  const auto st = sw->Stats();
  const uint64_t frames = state.iterations() * kBurst;
  uint64_t sent = 0;
  for (uint16_t p = 4; p < 8; ++p) sent += sw->tx_packets(p);
  if (sw->total_drops() != 0 || sent != frames) {
    state.SkipWithError(("frames dropped or lost: " + st["drops"].dump()).c_str());
  } else if ((variant == 3 && st["conweave"]["tagged"].get<uint64_t>() != frames) ||
             (variant == 4 && st["conweave"]["scrubbed"].get<uint64_t>() != frames) ||
             (variant == 5 && st["conga"]["tagged"].get<uint64_t>() != frames)) {
    state.SkipWithError("the load-balancing stage did not see every frame");
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  state.counters["ns_per_pkt"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBurst), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RoutedHop)->ArgsProduct({{64, 1024}, {0, 1, 2, 3, 4, 5, 6}})->UseManualTime();

}  // namespace
}  // namespace rocefab

BENCHMARK_MAIN();
