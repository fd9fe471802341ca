// Fuzz target: the load balancers' tag paths (switch/switch_conweave.cc, switch/switch_conga.cc)
// in a 2-tier Clos (2 spines, 2 ToRs, one host each) under the sim runner. ConWeave or CONGA
// (the input's first byte) runs in every ToR while a real WRITE crosses the fabric; the input
// adds frames on any switch port: RoCEv2 frames between the two hosts whose BTH byte 4 and UDP
// checksum (where both schemes keep their tag: epoch, phase, TAIL/RTT_REQUEST flag, timestamp;
// CE, feedback, path) and opcode, QPN, PSN and payload length are fuzzed, and ConWeave control
// packets (UDP port 49791: RTT_REPLY, CLEAR, NOTIFY) with fuzzed payload. Every frame must be
// forwarded or dropped with a reason, and every mbuf back once the fabric is gone; a crash, a
// sanitizer report or a leaked mbuf is a finding.
// Input: [scheme:1] then 16-byte records [switch:1, port:1, kind:1, from:1, tag8:1, tag16:2,
// op:1, qpn:3, psn:3, len:2] (kind bit 0: a ConWeave control packet, else RoCE; from bit 0:
// host 1 to host 0), each RoCE frame's payload cut from what follows, 2 us apart.
#include <rte_ip.h>
#include <rte_udp.h>

#include <cstring>
#include <memory>

#include "bench/fuzz/fuzz_common.h"
#include "bench/fuzz/fuzz_fabric.h"
#include "common/wire/headers.h"
#include "common/wire/roce_headers.h"

namespace {

using namespace rocefab;

uint32_t Be(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

// A 64-byte UDP/IPv4 frame to the ConWeave control port with `payload` (8 bytes).
rte_mbuf* ControlFrame(rte_mempool* pool, const Mac& src, const Mac& dst, Ipv4 sip, Ipv4 dip,
                       const uint8_t* payload) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return nullptr;
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, 60));
  std::memset(p, 0, 60);
  std::memcpy(p, dst.addr_bytes, 6);
  std::memcpy(p + 6, src.addr_bytes, 6);
  p[12] = 0x08;  // IPv4
  rte_ipv4_hdr ip{};
  ip.version_ihl = 0x45;
  ip.type_of_service = 48 << 2;  // CS6, as the switches send them
  ip.total_length = rte_cpu_to_be_16(46);
  ip.time_to_live = 64;
  ip.next_proto_id = kIpProtoUdp;
  ip.src_addr = rte_cpu_to_be_32(sip);
  ip.dst_addr = rte_cpu_to_be_32(dip);
  ip.hdr_checksum = rte_ipv4_cksum(&ip);
  std::memcpy(p + 14, &ip, sizeof ip);
  rte_udp_hdr udp{};
  udp.src_port = rte_cpu_to_be_16(49791);
  udp.dst_port = rte_cpu_to_be_16(49791);
  udp.dgram_len = rte_cpu_to_be_16(26);
  std::memcpy(p + 34, &udp, sizeof udp);
  std::memcpy(p + 42, payload, 8);
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rte_mempool* pool = fuzz::Pool();
  if (size < 1) return 0;
  {
    Scenario s = fuzz::ClosScenario(2, 2, 1, 2 * kMs);
    s.sw.load_balancing.scheme = (data[0] & 1) ? LoadBalancingConfig::Scheme::kConga
                                               : LoadBalancingConfig::Scheme::kConweave;
    auto made = SimFabric::Create(s, pool);
    if (!made.ok()) __builtin_trap();
    SimFabric& f = *made.value();
    EmulatedHost* h[2] = {&f.host(0), &f.host(1)};
    const auto [q0, q1] = fuzz::ConnectQps(*h[0], *h[1]);
    // A real message crosses while the fuzzed frames arrive: flows in the tables, paths busy.
    h[0]->rnic().PostSend(0, q0, WorkRequest{WorkRequest::Op::kWrite, 1, 256 * 1024, 0x10000000, 7});
    f.runner().Run(20 * kUs);
    Time now = 20 * kUs;
    size_t i = 1;
    int frames = 0;
    while (size - i >= 16 && frames < 48) {
      const uint8_t* r = data + i;
      i += 16;
      SwitchNode& sw = f.sw(r[0] % f.num_switches());
      const uint16_t port = static_cast<uint16_t>(r[1] % sw.num_ports());
      const int from = r[3] & 1, to = 1 - from;
      const Mac& src_mac = h[from]->config().mac;
      const Mac& dst_mac = sw.config().router_mac;
      rte_mbuf* m = nullptr;
      if (r[2] & 1) {
        m = ControlFrame(pool, src_mac, dst_mac, h[to]->config().ip, h[from]->config().ip, r + 4);
      } else {
        RoceFrameSpec fs;
        fs.src_mac = src_mac;
        fs.dst_mac = dst_mac;
        fs.src_ip = h[from]->config().ip;
        fs.dst_ip = h[to]->config().ip;
        fs.sport = static_cast<uint16_t>(0xC000 | (r[2] >> 1));
        fs.op = static_cast<RoceOp>(r[7]);
        fs.dest_qp = (r[2] & 2) ? Be(r + 8, 3) : (to == 1 ? q1 : q0);
        fs.psn = Be(r + 11, 3);
        fs.va = 0x10000000;
        fs.rkey = 7;
        const size_t want = Be(r + 14, 2) % 1100;
        const size_t n = want < size - i ? want : size - i;
        fs.payload_len = static_cast<uint32_t>(n);
        fs.dma_len = static_cast<uint32_t>(n);
        fs.payload = data + i;
        i += n;
        m = BuildRoce(pool, fs);
        if (m != nullptr) {
          // The tag fields: BTH byte 4 and the UDP checksum (both outside the ICRC).
          auto* b = rte_pktmbuf_mtod(m, uint8_t*);
          b[14 + 20 + 8 + 4] = r[4];
          b[14 + 20 + 6] = r[5];
          b[14 + 20 + 7] = r[6];
        }
      }
      ++frames;
      if (m != nullptr) sw.Receive(now, port, m);
      now += 2 * kUs;
      f.runner().Run(now);
    }
    f.runner().Run(s.duration);
  }
  fuzz::ExpectNoMbufInUse("a load-balanced fabric run");
  return 0;
}
