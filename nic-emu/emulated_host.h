#pragma once
/// @file emulated_host.h
/// EmulatedHost: a built-in IPv4 end host with one port. It stands in for a Linux host where a
/// namespace cannot exist (the sim runner) and produces the same traffic patterns as the live
/// runner's tools: ping-like ICMP echo probes (RTT per reply) and constant-bit-rate UDP flows
/// (the stand-in for iperf3 bulk streams). It answers ARP and ICMP echo for its address and
/// resolves its next hop (gateway, or the peer on its own subnet) by ARP like a kernel does.
///
/// UDP payloads start with a 24-byte probe header {magic "RFAB", flow id, seq, send time (ps)}
/// so receivers measure one-way latency, loss and ECN CE marks per flow.
///
/// Priorities: a flow's priority is the traffic class of its DSCP under the fabric's QoS profile;
/// with PCP trust the host tags its frames (802.1Q VID 0, PCP = priority). The host keeps one
/// transmit queue per priority, serves them by strict priority and obeys received PFC/PAUSE on
/// lossless priorities, so it is a test source that honours pause. A CBR source whose queue is
/// full waits (back-pressure) instead of dropping. Never reads a clock.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mbuf_fifo.h"
#include "common/node.h"
#include "common/pause_state.h"
#include "common/qos.h"
#include "common/timer_key.h"
#include "common/wire/headers.h"
#include "nic-emu/rnic.h"

namespace rocefab {

struct EmulatedHostConfig {
  std::string name;
  Ipv4 ip = 0;
  int prefix_len = 24;
  Ipv4 gateway = 0;
  Mac mac{};
  BitRate rate;                   ///< NIC link rate
  size_t tx_queue_packets = 256;  ///< per-priority transmit queue; sources wait when it is full
  QosProfile qos = QosProfile::Named("roce").value();  ///< DSCP -> priority, trust, lossless set
  RnicConfig rnic;                                     ///< the host's emulated RoCEv2 NIC
};

/// Constant-bit-rate UDP flow. The frame rate is `rate` measured on the wire (WireBytes).
struct UdpFlowSpec {
  uint32_t flow_id = 0;  ///< unique per scenario
  Ipv4 dst = 0;
  uint16_t sport = 0, dport = 5001;
  uint16_t payload = 1000;  ///< UDP payload bytes, 24..1472
  BitRate rate;
  Time start = 0;
  Time stop = kTimeNever;  ///< no packet starts at or after this time
  int64_t count = -1;      ///< packets to send; -1 = until stop
  uint8_t dscp = 0;
  bool ecn = false;  ///< send ECT(0)
};

/// ICMP echo probes, like `ping -c count -i interval -s size`.
struct PingSpec {
  uint16_t id = 0;  ///< ICMP identifier, unique per host
  Ipv4 dst = 0;
  int count = 10;
  Time interval = kMs;
  uint16_t size = 56;  ///< ICMP data bytes (ping -s)
  Time start = 0;
  Time stop = kTimeNever;  ///< no probe is sent at or after this time
};

class EmulatedHost final : public Node {
 public:
  explicit EmulatedHost(EmulatedHostConfig cfg);
  ~EmulatedHost() override;

  void AddFlow(const UdpFlowSpec& f) { flows_.push_back(FlowState{f}); }
  void AddPing(const PingSpec& p) { pings_.push_back(PingState{p}); }

  uint16_t num_ports() const override { return 1; }
  void Start(Time now) override;
  void Receive(Time now, uint16_t port, rte_mbuf* m) override;
  rte_mbuf* Dequeue(Time now, uint16_t port) override;
  void OnTimer(Time now, uint64_t cookie) override;
  nlohmann::json Stats() const override;

  const EmulatedHostConfig& config() const { return cfg_; }
  Rnic& rnic() { return *rnic_; }
  const Rnic& rnic() const { return *rnic_; }
  /// Fault hook: a dead host neither receives nor sends (its link stays up).
  void SetDead(bool dead) { dead_ = dead; }
  bool dead() const { return dead_; }

  // --- services for the RNIC engine ---
  /// Sends a frame to `dst` through ARP resolution on priority `prio`.
  void SendFrame(Time now, rte_mbuf* m, Ipv4 dst, uint8_t prio) { Send(now, m, dst, prio); }
  /// MAC of the next hop towards `dst`; starts ARP and returns nullopt when unknown.
  /// Installs the ARP entry ip -> mac (a neighbour known before traffic starts).
  void AddStaticNeighbor(Ipv4 ip, const Mac& mac) { arp_[ip] = mac; }
  std::optional<Mac> NextHopMac(Time now, Ipv4 dst);
  /// Sends a PFC frame (class-enable `enable`, time `quanta`) ahead of all data.
  void SendPfc(Time now, uint8_t enable, uint16_t quanta);
  void Kick() { env_->WakeTx(0); }
  /// Schedules the RNIC's timer `key` (its engine is set to the RNIC's): Rnic::OnTimer.
  void ScheduleRnicTimer(Time at, TimerKey key);
  rte_mempool* pool() { return env_->pool(); }
  /// The runner's link framing model (NodeEnv::wire); Ethernet before the host is attached.
  const WireModel& wire() const { return env_ != nullptr ? env_->wire() : EthernetWire::Instance(); }
  /// Frame accounting (FrameBalance): a frame the host or its RNIC built (`m` null: none, not
  /// counted); a frame freed as a loss (not for this host, unparsable, a full queue); a frame
  /// freed after being acted on (PFC, ARP, ICMP, a UDP probe, a RoCE packet processed).
  rte_mbuf* Created(rte_mbuf* m) {
    if (m != nullptr) ++frames_created_;
    return m;
  }
  void Discard(rte_mbuf* m) {
    ++frames_dropped_;
    rte_pktmbuf_free(m);
  }
  void Consume(rte_mbuf* m) {
    ++frames_consumed_;
    rte_pktmbuf_free(m);
  }
  std::optional<FrameBalance> frame_balance() const override;

  struct RxFlow {
    Ipv4 src = 0;
    uint64_t packets = 0, bytes = 0, out_of_order = 0;
    uint32_t next_seq = 0;
    uint64_t ce_packets = 0;
    Time first_rx = 0, last_rx = 0;
    Time lat_min = kTimeNever, lat_max = 0;
    double lat_sum = 0;
  };
  struct FlowState {
    UdpFlowSpec spec;
    int64_t sent = 0;
    uint64_t tx_dropped = 0;
    uint64_t deferred = 0;  ///< send attempts that waited for queue space (back-pressure)
    Time interval = 0;
    Time last_sent = 0;
  };
  struct PingState {
    PingSpec spec;
    int sent = 0;
    std::vector<Time> send_times;
    std::vector<Time> rtts;  ///< in order of arrival
  };
  const std::map<uint32_t, RxFlow>& rx_flows() const { return rx_flows_; }
  const std::vector<FlowState>& flows() const { return flows_; }
  const std::vector<PingState>& pings() const { return pings_; }
  uint64_t not_for_me() const { return not_for_me_; }
  const PauseState& pause() const { return pause_; }

 private:
  void Send(Time now, rte_mbuf* m, Ipv4 dst, uint8_t prio);
  void Transmit(rte_mbuf* m, uint8_t prio);
  void SendFlowPacket(Time now, size_t idx);
  void SendPing(Time now, size_t idx);
  void HandleArp(Time now, rte_mbuf* m, const ParsedFrame& p);
  Ipv4 NextHop(Ipv4 dst) const;

  EmulatedHostConfig cfg_;
  std::array<MbufFifo, 8> txq_;
  MbufFifo ctrl_;  // MAC control (PFC), never paused
  std::unique_ptr<Rnic> rnic_;
  bool dead_ = false;
  bool rnic_waits_arp_ = false;
  Time wake_at_ = -1;
  PauseState pause_;
  Time expiry_timer_at_ = -1;
  Time last_now_ = 0;
  std::vector<FlowState> flows_;
  std::vector<PingState> pings_;
  std::map<Ipv4, Mac> arp_;
  std::map<Ipv4, MbufFifo> arp_pending_;
  std::map<uint32_t, RxFlow> rx_flows_;
  uint64_t tx_packets_ = 0, rx_packets_ = 0, not_for_me_ = 0, tx_queue_drops_ = 0;
  uint64_t pfc_frames_rx_ = 0;  // MAC control frames parsed as PFC or PAUSE, any priorities
  uint64_t arp_unresolved_drops_ = 0, echo_replies_sent_ = 0, rx_other_ = 0;
  uint64_t no_mbuf_ = 0;  // frames not built: the mbuf pool was empty
  uint64_t frames_received_ = 0, frames_created_ = 0, frames_dropped_ = 0, frames_consumed_ = 0;
  uint64_t ctrl_sent_ = 0;
  // Counts a failed frame build (nullptr) in no_mbuf_, a built one as created; returns `m`.
  rte_mbuf* Counted(rte_mbuf* m) {
    if (m == nullptr) ++no_mbuf_;
    return Created(m);
  }
};

}  // namespace rocefab
