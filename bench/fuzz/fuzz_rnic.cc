// Fuzz target: the emulated RNIC's RC transport (responder and requester: PSN checks, NAKs,
// RETH/AETH handling, read responses, CNPs) fed with RoCEv2 frames whose header fields and
// payload come from the input, addressed to a connected QP, in a 2-host fabric under the sim
// runner; then a legitimate WRITE must still complete or fail with a status, and every mbuf be
// back once the fabric is gone. A crash, a sanitizer report or a leaked mbuf is a finding.
// Input: repeated 25-byte records [op, flags, psn:3, va:8, rkey:4, dma_len:4, syndrome, msn:3]
// (flags bit 0: to the other QP number, bit 1: from host 1 to host 0, bit 2: ack_req, bit 3:
// becn), each followed by (dma_len & 0x7ff) payload bytes as far as the input goes.
#include <memory>

#include "bench/fuzz/fuzz_common.h"
#include "bench/fuzz/fuzz_fabric.h"
#include "common/wire/roce_headers.h"

namespace {

uint32_t Be(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rocefab;
  rte_mempool* pool = fuzz::Pool();
  {
    Scenario s = fuzz::ClosScenario(1, 1, 2, 3 * kMs);
    auto made = SimFabric::Create(s, pool);
    if (!made.ok()) __builtin_trap();
    SimFabric& f = *made.value();
    EmulatedHost* h[2] = {&f.host(0), &f.host(1)};
    const auto [q0, q1] = fuzz::ConnectQps(*h[0], *h[1]);
    f.runner().Run(50 * kUs);
    Time now = 50 * kUs;
    size_t i = 0;
    int frames = 0;
    while (size - i >= 25 && frames < 32) {
      const uint8_t* r = data + i;
      i += 25;
      const int from = (r[1] >> 1) & 1, to = 1 - from;
      RoceFrameSpec fs;
      fs.src_mac = h[from]->config().mac;
      fs.dst_mac = h[to]->config().mac;
      fs.src_ip = h[from]->config().ip;
      fs.dst_ip = h[to]->config().ip;
      fs.op = static_cast<RoceOp>(r[0]);
      fs.dest_qp = (r[1] & 1) ? Be(r + 2, 3) : (to == 1 ? q1 : q0);
      fs.psn = Be(r + 2, 3);
      fs.ack_req = r[1] & 4;
      fs.becn = r[1] & 8;
      fs.va = static_cast<uint64_t>(Be(r + 5, 4)) << 32 | Be(r + 9, 4);
      fs.rkey = Be(r + 13, 4);
      fs.dma_len = Be(r + 17, 4);
      fs.syndrome = r[21];
      fs.msn = Be(r + 22, 3);
      const size_t want = fs.dma_len & 0x7ff;
      const size_t n = want < size - i ? want : size - i;
      fs.payload_len = static_cast<uint32_t>(n);
      fs.payload = data + i;
      i += n;
      ++frames;
      if (rte_mbuf* m = BuildRoce(pool, fs)) h[to]->Receive(now, 0, m);
      now += 2 * kUs;
      f.runner().Run(now);
    }
    // The QP must still carry (or fail) a real message.
    h[0]->rnic().PostSend(now, q0, WorkRequest{WorkRequest::Op::kWrite, 1, 8192, 0x10000000, 7});
    f.runner().Run(s.duration);
  }
  fuzz::ExpectNoMbufInUse("an RNIC run");
  return 0;
}
