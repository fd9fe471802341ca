// Fuzz target: a whole SwitchNode (parse, classify, PFC/PAUSE, ARP, bridging, routing, MMU,
// scheduler) under the sim runner, fed with frames cut from the input. Every frame must be
// forwarded or dropped with a reason and every mbuf back in the pool once the switch and the
// runner are gone; a crash, a sanitizer report or a leaked mbuf is a finding.
// Input: repeated [port:1][len:2 big-endian][bytes:len] records (port 0: access port of VLAN
// 100, anything else: the routed port); a short tail is one more frame on port 0.
#include <memory>

#include "bench/fuzz/fuzz_common.h"
#include "common/mbuf_fifo.h"
#include "common/node.h"
#include "common/runtime/sim_runner.h"
#include "switch/switch_node.h"

namespace rocefab {
namespace {

// Sends the frames it is given on its only port; frees what comes back.
class Injector final : public Node {
 public:
  explicit Injector(const char* name) : Node(name) {}
  void Add(rte_mbuf* m) { out_.Push(m); }
  uint16_t num_ports() const override { return 1; }
  void Start(Time) override { env_->WakeTx(0); }
  void Receive(Time, uint16_t, rte_mbuf* m) override { rte_pktmbuf_free(m); }
  rte_mbuf* Dequeue(Time, uint16_t) override { return out_.empty() ? nullptr : out_.Pop(); }
  nlohmann::json Stats() const override { return {}; }

 private:
  MbufFifo out_;
};

std::unique_ptr<SwitchNode> MakeSwitch() {
  SwitchConfig c;
  c.name = "sw";
  c.router_mac = Mac{{0x02, 0x52, 0x53, 0, 0, 1}};
  c.loopback = 0x0AFF0001;
  c.ports = {{"sw/p0", 10 * kGbps, 100}, {"sw/p1", 10 * kGbps, 0}};
  c.svis = {{100, 0x0A010001, 24}};
  RouteGroup up;
  up.members.push_back(NextHop{1, Mac{{0x02, 0x52, 0x53, 0, 0, 2}}});
  c.routes.push_back(RouteConfig{0x0A020000, 16, up});
  auto s = SwitchNode::Create(c);
  if (!s.ok()) __builtin_trap();
  return std::move(s).value();
}

}  // namespace
}  // namespace rocefab

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rocefab;
  rte_mempool* pool = fuzz::Pool();  // starts EAL first (the route table's rte_fib needs it)
  {
    auto sw = MakeSwitch();
    Injector access("access"), routed("routed");
    SimRunner r(pool);
    const uint32_t a = r.AddNode(&access), b = r.AddNode(sw.get()), c = r.AddNode(&routed);
    if (!r.Connect(a, 0, b, 0, 10 * kGbps, kUs).ok() || !r.Connect(c, 0, b, 1, 10 * kGbps, kUs).ok())
      __builtin_trap();
    size_t i = 0;
    int frames = 0;
    while (i < size && frames < 64) {
      if (size - i < 3) {
        if (rte_mbuf* m = fuzz::Frame(data + i, size - i)) access.Add(m);
        break;
      }
      const uint8_t port = data[i];
      const size_t len = (static_cast<size_t>(data[i + 1]) << 8 | data[i + 2]) % 2048;
      i += 3;
      const size_t n = len < size - i ? len : size - i;
      if (rte_mbuf* m = fuzz::Frame(data + i, n)) (port == 0 ? access : routed).Add(m);
      i += n;
      ++frames;
    }
    r.Run(10 * kMs);  // ARP retries, PFC pause expiry and ageing included
  }
  fuzz::ExpectNoMbufInUse("a switch run");
  return 0;
}
