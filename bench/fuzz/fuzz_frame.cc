// Fuzz target: the frame parser (ParseFrame: Ethernet, 802.1Q, IPv4, UDP/TCP/ICMP, MAC control)
// and, for RoCEv2 frames, the BTH/RETH/AETH parser and the ICRC check, on arbitrary bytes.
#include "bench/fuzz/fuzz_common.h"
#include "common/wire/headers.h"
#include "common/wire/roce_headers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rocefab;
  rte_mbuf* m = fuzz::Frame(data, size);
  if (m == nullptr) return 0;
  ParsedFrame p;
  if (ParseFrame(m, &p) == ParseError::kOk && p.proto == kIpProtoUdp && p.dport == kRoceUdpPort) {
    RoceView v;
    if (ParseRoce(m, p, &v) == RoceParseError::kOk) FinalizeIcrc(m);
  }
  rte_pktmbuf_free(m);
  fuzz::ExpectNoMbufInUse("one frame");
  return 0;
}
