// Emulated-RNIC costs and sim-runner speed:
//  - BM_BuildRoce / BM_ParseRoce: ns per generated / received RoCEv2 frame (1 KB payload, ICRC
//    computed / checked).
//  - BM_Icrc: the ICRC of a 1 KB-payload frame three ways, in the same run (byte-identical values,
//    checked): zlib's table CRC over a masked copy (the plain way, as rdma_rxe), DPDK's
//    rte_net_crc (PCLMULQDQ, one 128-bit lane) over a masked copy (rocefab before), and
//    ComputeIcrc (ISA-L, masked 48-byte header then the rest in place). Bytes per TSC cycle.
//  - BM_SimIncast16: a 16-to-1 RDMA WRITE incast through one ToR at 100 Gb/s with PFC and DCQCN,
//    1 ms of virtual time per iteration: packet-hops per wall second, events per wall second and
//    the slowdown against real time.
// Run: build/bench/bench_rnic
#include <benchmark/benchmark.h>

#include <isa-l/crc.h>
#include <rte_cycles.h>
#include <rte_net_crc.h>
#include <zlib.h>

#include <chrono>
#include <cstring>

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

// The masked pseudo-packet of rdma_rxe's rxe_icrc.c in a scratch copy (8 bytes of 0xFF, then the
// frame from IPv4 on with TOS, TTL, IP checksum, UDP checksum and BTH byte 4 set to ones).
uint32_t MaskedCopy(const uint8_t* frame, uint32_t n, uint8_t* scratch) {
  const uint32_t rest = n - 4 - 14;
  std::memset(scratch, 0xFF, 8);
  uint8_t* ip = scratch + 8;
  std::memcpy(ip, frame + 14, rest);
  ip[1] = ip[8] = ip[10] = ip[11] = ip[26] = ip[27] = ip[32] = 0xFF;
  return rest + 8;
}

void BM_Icrc(benchmark::State& state) {
  rte_mbuf* m = BuildRoce(Pool(), Spec());
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  const uint32_t n = rte_pktmbuf_pkt_len(m);
  static uint8_t scratch[16384];
  const int variant = static_cast<int>(state.range(0));
  rte_net_crc_set_alg(RTE_NET_CRC_SSE42);
  auto icrc = [&]() -> uint32_t {
    switch (variant) {
      case 0:
        return static_cast<uint32_t>(crc32(0L, scratch, MaskedCopy(d, n, scratch)));
      case 1:
        return rte_net_crc_calc(scratch, MaskedCopy(d, n, scratch), RTE_NET_CRC32_ETH);
      default:
        return ComputeIcrc(d, n, 14);
    }
  };
  if (icrc() != static_cast<uint32_t>(crc32(0L, scratch, MaskedCopy(d, n, scratch)))) {
    state.SkipWithError("ICRC differs from zlib's");
  }
  const uint64_t t0 = rte_rdtsc();
  for (auto _ : state) benchmark::DoNotOptimize(icrc());
  const double cycles = static_cast<double>(rte_rdtsc() - t0);
  rte_pktmbuf_free(m);
  const char* labels[] = {"zlib table + copy", "rte_net_crc + copy", "ComputeIcrc (ISA-L)"};
  state.SetLabel(labels[variant]);
  const double bytes = static_cast<double>(state.iterations()) * (n - 14 - 4 + 8);
  state.counters["bytes_per_cycle"] = bytes / cycles;
  state.counters["ns_per_pkt"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Icrc)->Arg(0)->Arg(1)->Arg(2);

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
