#include "topo/compat.h"

#include <algorithm>

#include "nic-emu/dcqcn.h"
#include "switch/conweave.h"
#include "switch/mmu.h"
#include "switch/switch_config.h"

namespace rocefab {

namespace {

// Header bytes of a RoCEv2 data frame without FCS (Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4)
// and of an ACK (the same with AETH 4, no payload).
constexpr int64_t kDataHeaders = 14 + 20 + 8 + 12 + 4;
constexpr int64_t kAckFrame = kDataHeaders + 4;

class NoCompat final : public CompatModel {
 public:
  std::string_view name() const override { return "none"; }
  const WireModel& wire() const override { return EthernetWire::Instance(); }
  // Propagation both ways, the store-and-forward of one MTU data frame on every link but the
  // first (whose serialization is in the flow's byte term) and of the ACK on every link.
  Time BaseRtt(const PathShape& p, uint32_t mtu) const override {
    const Time data = TxTime(WireBytes(mtu + kDataHeaders), p.rate);
    const Time ack = TxTime(WireBytes(kAckFrame), p.rate);
    return 2 * p.links * p.prop + (p.links - 1) * data + p.links * ack;
  }
  // Every byte on the wire: per packet Ethernet 14 + FCS 4 + preamble/IFG 20 + IPv4 20 + UDP 8 +
  // BTH 12 + ICRC 4, and the RETH (16) of the first.
  Time IdealFct(uint64_t size, uint32_t mtu, BitRate rate, Time base_rtt) const override {
    const uint64_t pkts = std::max<uint64_t>(1, (size + mtu - 1) / mtu);
    const uint64_t overhead = 14 + 4 + 20 + 20 + 8 + 12 + 4;
    return base_rtt + TxTime(static_cast<int64_t>(size + pkts * overhead + 16), rate);
  }
  // Four cable delays, the data frame serialized on the two forward hops and a 64-byte reply on
  // the two return hops.
  Time ConweaveBaseRtt(Time prop, BitRate rate, uint32_t mtu, int links) const override {
    const int64_t frame = static_cast<int64_t>(mtu) + kDataHeaders + 4;  // + FCS
    return links * (2 * prop + TxTime(frame + 20, rate) + TxTime(64 + 20, rate));
  }
  void LosslessDefaults(PfcConfig*, BufferConfig* buffer) const override {
    buffer->lossless.pg.xon_offset = 4608;  // SONiC's default XON_OFFSET_TH (2 x 2304-byte cells)
  }
  void ConweaveDefaults(ConweaveParams*) const override {}
  bool ReferenceEcmp() const override { return false; }
  void DcqcnRules(DcqcnConfig*) const override {}
};

class ConweaveNs3Compat final : public CompatModel {
 public:
  static constexpr uint64_t kHeaderBytes = 48;  // CustomHeader::GetStaticWholeHeaderSize, no INT
  std::string_view name() const override { return "conweave-ns3"; }
  const WireModel& wire() const override { return Ns3PppWire::Instance(); }
  // network-load-balance.cc: rtt = 2 x delay + txDelay, txDelay = one payload per link, in ns.
  Time BaseRtt(const PathShape& p, uint32_t mtu) const override {
    const int64_t tx_ns = static_cast<int64_t>(mtu) * 8 * 1000000000 / p.rate.bps();
    return 2 * p.links * p.prop + p.links * tx_ns * kNs;
  }
  // qp_finish: base_rtt + (size + packets x 48) x 8e9 / bps, integer ns.
  Time IdealFct(uint64_t size, uint32_t mtu, BitRate rate, Time base_rtt) const override {
    const uint64_t pkts = size == 0 ? 1 : (size - 1) / mtu + 1;
    const __int128 bytes = size + pkts * kHeaderBytes;
    const auto ns = static_cast<int64_t>(bytes * 8 * 1000000000 / rate.bps());
    return base_rtt + ns * kNs;
  }
  // run.py: 4 us on the 2-tier leaf-spine, 8 us on the 3-tier fat-tree (1 us links).
  Time ConweaveBaseRtt(Time prop, BitRate, uint32_t, int links) const override {
    return 2 * links * prop;
  }
  void LosslessDefaults(PfcConfig* pfc, BufferConfig* buffer) const override {
    pfc->pause_time = 5 * kUs;
    pfc->xoff_every_frame = true;
    buffer->lossless.pg.xon_offset = 16;
    buffer->lossless_shared_beyond_limit = true;
  }
  // switch-node.cc SendToDev: ConWeave's RouteInput runs before DoSwitchSend's admission; held
  // packets are admitted when conweave-voq.cc releases them.
  bool ReferenceEcmp() const override { return true; }
  void DcqcnRules(DcqcnConfig* dcqcn) const override {
    dcqcn->first_decrease_delay = dcqcn->decrease_interval;
  }
  void ConweaveDefaults(ConweaveParams* conweave) const override {
    conweave->charge_held_to_buffer = false;
  }
};

}  // namespace

const CompatModel& CompatModel::None() {
  static const NoCompat m;
  return m;
}

Result<const CompatModel*> CompatModel::Named(const std::string& name) {
  static const ConweaveNs3Compat ns3;
  if (name == "none") return &None();
  if (name == "conweave-ns3") return static_cast<const CompatModel*>(&ns3);
  return Result<const CompatModel*>::Error("must be \"none\" or \"conweave-ns3\", got \"" + name +
                                           "\"");
}

}  // namespace rocefab
