// Emulated-RNIC costs and sim-runner speed:
//  - BM_BuildRoce / BM_ParseRoce: ns per generated / received RoCEv2 frame (1 KB payload, ICRC
//    computed / checked, zlib crc32).
//  - BM_SimIncast16: a 16-to-1 RDMA WRITE incast through one ToR at 100 Gb/s with PFC and DCQCN,
//    1 ms of virtual time per iteration: packet-hops per wall second, events per wall second and
//    the slowdown against real time.
// Run: build/bench/bench_rnic
#include <benchmark/benchmark.h>

#include <chrono>

#include "common/eal.h"
#include "common/wire/roce_headers.h"
#include "topo/clos.h"
#include "run/sim_fabric.h"

namespace rocefab {
namespace {

rte_mempool* Pool() {
  static rte_mempool* pool = [] {
    if (!InitEal(NoHugeEalArgs(1536), EalAffinity::kKeep).ok()) std::abort();
    return CreateHostOnlyPktPool("rnicbench", 131071).value();
  }();
  return pool;
}

RoceFrameSpec Spec() {
  RoceFrameSpec s;
  s.src_ip = 0x0A010002;
  s.dst_ip = 0x0A010102;
  s.op = RoceOp::kWriteMiddle;
  s.payload_len = 1024;
  s.dest_qp = 17;
  return s;
}

void BM_BuildRoce(benchmark::State& state) {
  rte_mempool* pool = Pool();
  RoceFrameSpec s = Spec();
  for (auto _ : state) {
    rte_mbuf* m = BuildRoce(pool, s);
    benchmark::DoNotOptimize(m);
    rte_pktmbuf_free(m);
    ++s.psn;
  }
  state.counters["ns_per_pkt"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_BuildRoce);

void BM_ParseRoce(benchmark::State& state) {
  rte_mbuf* m = BuildRoce(Pool(), Spec());
  ParsedFrame p;
  ParseFrame(m, &p);
  RoceView v;
  for (auto _ : state) {
    ParsedFrame q;
    benchmark::DoNotOptimize(ParseFrame(m, &q));
    benchmark::DoNotOptimize(ParseRoce(m, q, &v));
  }
  rte_pktmbuf_free(m);
  state.counters["ns_per_pkt"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ParseRoce);

void BM_SimIncast16(benchmark::State& state) {
  rte_mempool* pool = Pool();
  ClosSpec c;
  c.spines = 1;
  c.tors = 1;
  c.hosts_per_tor = 17;
  c.link_rate = 100 * kGbps;
  c.host_kind = HostKind::kBuiltin;
  Scenario s;
  s.name = "incast16";
  s.topology = BuildClos(c).value();
  s.duration = kMs;
  for (uint8_t q : {3, 4}) {
    s.sw.wred[q].enabled = true;
    s.sw.wred[q].kmin = 100'000;
    s.sw.wred[q].kmax = 400'000;
    s.sw.wred[q].pmax = 0.2;
  }
  s.dcqcn_profile = "conweave";
  for (int h = 1; h <= 16; ++h) {
    TrafficItem t;
    PerftestSpec& pt = t.spec.emplace<PerftestSpec>();
    t.from = "h" + std::to_string(h);
    t.to = "h0";
    pt.size = 1 << 20;
    pt.iterations = 1000000;
    s.traffic.push_back(t);
  }
  double hops = 0, events = 0, wall = 0, sim = 0;
  for (auto _ : state) {
    auto f = SimFabric::Create(s, pool);
    const auto w0 = std::chrono::steady_clock::now();
    f.value()->runner().Run(s.duration);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    hops += static_cast<double>(f.value()->runner().frames_delivered());
    events += static_cast<double>(f.value()->runner().events_executed());
    sim += s.duration / 1e12;
  }
  state.counters["packet_hops_per_s"] = hops / wall;
  state.counters["events_per_s"] = events / wall;
  state.counters["x_slower_than_real_time"] = wall / sim;
}
BENCHMARK(BM_SimIncast16)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace rocefab

BENCHMARK_MAIN();
