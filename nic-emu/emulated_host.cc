#include "nic-emu/emulated_host.h"

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <algorithm>
#include <cstring>

#include "common/packet.h"
#include "common/wire/pfc_frame.h"

namespace rocefab {
namespace {

// Timer kinds of the host itself (TimerKey engine 0; the RNIC's timers are engine kRnicEngine).
enum class HostTimer : uint8_t {
  kFlow = 1,  ///< arg: flow index
  kPing = 2,  ///< arg: ping index
  kArp = 3,   ///< arg: the next hop's IPv4 address
  kPauseExpiry = 4,
  kWake = 6,  ///< a paced QP becomes ready
};
constexpr uint8_t kRnicEngine = 1;
uint64_t Key(HostTimer k, uint32_t arg = 0) { return TimerKey::Of(k, arg).Pack(); }
constexpr uint32_t kProbeMagic = 0x52464142;  // "RFAB"
constexpr Time kArpRetry = 1 * kMs;

struct ProbeHeader {
  rte_be32_t magic;
  rte_be32_t flow_id;
  rte_be32_t seq;
  rte_be32_t pad;
  int64_t send_time;  // host byte order; never leaves rocefab's own hosts
};
static_assert(sizeof(ProbeHeader) == 24);

uint16_t Frame(uint16_t udp_payload) { return static_cast<uint16_t>(14 + 20 + 8 + udp_payload); }

}  // namespace

EmulatedHost::EmulatedHost(EmulatedHostConfig cfg) : Node(cfg.name), cfg_(std::move(cfg)) {
  rnic_ = std::make_unique<Rnic>(this, cfg_.rnic, cfg_.rate.bps() > 0 ? cfg_.rate : 100 * kGbps);
}

EmulatedHost::~EmulatedHost() {
  for (auto& [ip, q] : arp_pending_) q.Clear();
  rnic_.reset();
}

std::optional<Mac> EmulatedHost::NextHopMac(Time now, Ipv4 dst) {
  const Ipv4 nh = NextHop(dst);
  auto it = arp_.find(nh);
  if (it != arp_.end()) return it->second;
  rnic_waits_arp_ = true;
  auto [pit, inserted] = arp_pending_.try_emplace(nh);
  if (inserted) {
    Mac zero{};
    if (rte_mbuf* req = Counted(BuildArp(env_->pool(), false, cfg_.mac, cfg_.ip, zero, nh)))
      Transmit(req, 0);
    env_->ScheduleTimer(now + kArpRetry, Key(HostTimer::kArp, nh));
  }
  return std::nullopt;
}

void EmulatedHost::SendPfc(Time now, uint8_t enable, uint16_t quanta) {
  std::array<uint16_t, 8> q{};
  q.fill(quanta);
  if (rte_mbuf* m = Counted(BuildPfc(env_->pool(), cfg_.mac, enable, q))) {
    Meta(m)->enqueue_time = now;  // the decision time (the live runner's PFC reaction time)
    ctrl_.Push(m);
    env_->WakeTx(0);
  }
}

void EmulatedHost::ScheduleRnicTimer(Time at, TimerKey key) {
  key.engine = kRnicEngine;
  env_->ScheduleTimer(at, key.Pack());
}

namespace {
// Inserts an 802.1Q priority tag (VID 0) after the MAC addresses.
bool InsertPriorityTag(rte_mbuf* m, uint8_t pcp) {
  uint8_t* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(m, 4));
  if (d == nullptr) return false;
  std::memmove(d, d + 4, 12);
  d[12] = 0x81;
  d[13] = 0x00;
  d[14] = static_cast<uint8_t>(pcp << 5);
  d[15] = 0;
  return true;
}
}  // namespace

Ipv4 EmulatedHost::NextHop(Ipv4 dst) const {
  const Ipv4 mask = cfg_.prefix_len == 0 ? 0 : ~((1ull << (32 - cfg_.prefix_len)) - 1);
  return (dst & mask) == (cfg_.ip & mask) ? dst : cfg_.gateway;
}

void EmulatedHost::Start(Time now) {
  for (size_t i = 0; i < flows_.size(); ++i) {
    FlowState& f = flows_[i];
    if (f.spec.rate.bps() <= 0) continue;  // nothing to send (configs reject this; defensive)
    f.interval = TxTime(WireBytes(Frame(f.spec.payload)), f.spec.rate);
    env_->ScheduleTimer(std::max(now, f.spec.start),
                        Key(HostTimer::kFlow, static_cast<uint32_t>(i)));
  }
  for (size_t i = 0; i < pings_.size(); ++i) {
    env_->ScheduleTimer(std::max(now, pings_[i].spec.start),
                        Key(HostTimer::kPing, static_cast<uint32_t>(i)));
  }
}

void EmulatedHost::Transmit(rte_mbuf* m, uint8_t prio) {
  if (txq_[prio].size() >= cfg_.tx_queue_packets) {
    ++tx_queue_drops_;
    Discard(m);
    return;
  }
  if (prio != 0 && cfg_.qos.trust == QosTrust::kPcp &&
      rte_be_to_cpu_16(rte_pktmbuf_mtod(m, rte_ether_hdr*)->ether_type) == kEtherTypeIpv4) {
    if (!InsertPriorityTag(m, prio)) {
      ++tx_queue_drops_;
      Discard(m);
      return;
    }
  }
  txq_[prio].Push(m);
  env_->WakeTx(0);
}

void EmulatedHost::Send(Time now, rte_mbuf* m, Ipv4 dst, uint8_t prio) {
  const Ipv4 nh = NextHop(dst);
  auto it = arp_.find(nh);
  if (it != arp_.end()) {
    rte_pktmbuf_mtod(m, rte_ether_hdr*)->dst_addr = it->second;
    Transmit(m, prio);
    return;
  }
  auto [pit, inserted] = arp_pending_.try_emplace(nh);
  if (pit->second.size() >= 256) {
    ++arp_unresolved_drops_;
    Discard(m);
    return;
  }
  Meta(m)->tc = prio;
  pit->second.Push(m);
  if (inserted) {
    Mac zero{};
    if (rte_mbuf* req = Counted(BuildArp(env_->pool(), false, cfg_.mac, cfg_.ip, zero, nh)))
      Transmit(req, 0);
    env_->ScheduleTimer(now + kArpRetry, Key(HostTimer::kArp, nh));
  }
}

void EmulatedHost::SendFlowPacket(Time now, size_t idx) {
  FlowState& f = flows_[idx];
  if (now >= f.spec.stop || (f.spec.count >= 0 && f.sent >= f.spec.count)) return;
  const uint8_t prio = cfg_.qos.dscp_to_tc[f.spec.dscp & 63];  // the NIC maps DSCP to priority
  if (txq_[prio].size() >= cfg_.tx_queue_packets) {
    ++f.deferred;  // the NIC queue is full (paused or slower link): wait, as a blocked sender does
    env_->ScheduleTimer(now + f.interval, Key(HostTimer::kFlow, static_cast<uint32_t>(idx)));
    return;
  }
  UdpSpec s;
  s.src_mac = cfg_.mac;
  s.src_ip = cfg_.ip;
  s.dst_ip = f.spec.dst;
  s.sport = f.spec.sport;
  s.dport = f.spec.dport;
  s.dscp = f.spec.dscp;
  s.ecn = f.spec.ecn ? 2 : 0;  // ECT(0)
  s.payload_len = f.spec.payload;
  rte_mbuf* m = Counted(BuildUdp(env_->pool(), s));
  if (m != nullptr) {
    // The UDP payload starts at byte 42, not 8-byte aligned: written through a copy (UBSan
    // found the direct stores misaligned).
    ProbeHeader ph{};
    ph.magic = rte_cpu_to_be_32(kProbeMagic);
    ph.flow_id = rte_cpu_to_be_32(f.spec.flow_id);
    ph.seq = rte_cpu_to_be_32(static_cast<uint32_t>(f.sent));
    ph.send_time = now;
    std::memcpy(rte_pktmbuf_mtod_offset(m, uint8_t*, 42), &ph, sizeof ph);
    auto* udp = rte_pktmbuf_mtod_offset(m, rte_udp_hdr*, 34);
    udp->dgram_cksum = 0;
    udp->dgram_cksum = rte_ipv4_udptcp_cksum(rte_pktmbuf_mtod_offset(m, rte_ipv4_hdr*, 14), udp);
    Send(now, m, f.spec.dst, prio);
  } else {
    ++f.tx_dropped;
  }
  ++f.sent;
  f.last_sent = now;
  const Time next = now + f.interval;
  if (next < f.spec.stop && (f.spec.count < 0 || f.sent < f.spec.count)) {
    env_->ScheduleTimer(next, Key(HostTimer::kFlow, static_cast<uint32_t>(idx)));
  }
}

void EmulatedHost::SendPing(Time now, size_t idx) {
  PingState& p = pings_[idx];
  if (p.sent >= p.spec.count || now >= p.spec.stop) return;
  rte_mbuf* m = Counted(BuildIcmpEcho(env_->pool(), false, cfg_.mac, cfg_.mac, cfg_.ip, p.spec.dst,
                                      p.spec.id, static_cast<uint16_t>(p.sent), p.spec.size));
  p.send_times.push_back(now);
  ++p.sent;
  if (m != nullptr) Send(now, m, p.spec.dst, 0);
  if (p.sent < p.spec.count) {
    env_->ScheduleTimer(p.spec.start + p.sent * p.spec.interval,
                        Key(HostTimer::kPing, static_cast<uint32_t>(idx)));
  }
}

void EmulatedHost::OnTimer(Time now, uint64_t cookie) {
  const TimerKey key = TimerKey::Unpack(cookie);
  if (key.engine == kRnicEngine) return rnic_->OnTimer(now, key);
  switch (key.kind_as<HostTimer>()) {
    case HostTimer::kFlow:
      return SendFlowPacket(now, key.arg);
    case HostTimer::kPing:
      return SendPing(now, key.arg);
    case HostTimer::kArp: {
      const Ipv4 nh = static_cast<Ipv4>(key.arg);
      auto it = arp_pending_.find(nh);
      if (it == arp_pending_.end()) return;
      Mac zero{};
      if (rte_mbuf* req = Counted(BuildArp(env_->pool(), false, cfg_.mac, cfg_.ip, zero, nh))) {
        Transmit(req, 0);
      }
      env_->ScheduleTimer(now + kArpRetry, Key(HostTimer::kArp, nh));
      return;
    }
    case HostTimer::kPauseExpiry:
      expiry_timer_at_ = -1;
      env_->WakeTx(0);
      return;
    case HostTimer::kWake:
      if (now >= wake_at_) wake_at_ = -1;  // timers may fire late in real time
      env_->WakeTx(0);
      return;
  }
}

rte_mbuf* EmulatedHost::Dequeue(Time now, uint16_t /*port*/) {
  last_now_ = now;
  if (!ctrl_.empty()) {
    ++ctrl_sent_;
    return ctrl_.Pop();
  }
  if (dead_) return nullptr;
  const uint8_t paused = pause_.PausedMask(now) & cfg_.qos.lossless_mask;
  bool waiting = false;
  Time wake = kTimeNever;
  for (int q = 7; q >= 0; --q) {
    if ((paused >> q) & 1) {
      waiting |= !txq_[q].empty() || ((rnic_->data_priority_mask() >> q) & 1);
      continue;
    }
    if (!txq_[q].empty()) {
      ++tx_packets_;
      return txq_[q].Pop();
    }
    if ((rnic_->data_priority_mask() >> q) & 1) {
      if (rte_mbuf* m = rnic_->PullData(now, static_cast<uint8_t>(q), &wake)) {
        ++tx_packets_;
        return m;
      }
    }
  }
  if (wake != kTimeNever && (wake_at_ < 0 || wake < wake_at_ || wake_at_ <= now)) {
    wake_at_ = wake;
    env_->ScheduleTimer(wake, Key(HostTimer::kWake));
  }
  if (waiting) {
    const Time at = pause_.NextExpiry(now, paused);
    if (at != kTimeNever && at != expiry_timer_at_) {
      expiry_timer_at_ = at;
      env_->ScheduleTimer(at, Key(HostTimer::kPauseExpiry));
    }
  }
  return nullptr;
}

void EmulatedHost::HandleArp(Time now, rte_mbuf* m, const ParsedFrame& p) {
  const auto* arp = rte_pktmbuf_mtod_offset(m, const rte_arp_hdr*, p.l3_offset);
  const uint16_t op = rte_be_to_cpu_16(arp->arp_opcode);
  const Ipv4 sip = rte_be_to_cpu_32(arp->arp_data.arp_sip);
  const Ipv4 tip = rte_be_to_cpu_32(arp->arp_data.arp_tip);
  const Mac sha = arp->arp_data.arp_sha;
  if (tip == cfg_.ip) {
    arp_[sip] = sha;
    auto it = arp_pending_.find(sip);
    if (it != arp_pending_.end()) {
      while (!it->second.empty()) {
        rte_mbuf* f = it->second.Pop();
        rte_pktmbuf_mtod(f, rte_ether_hdr*)->dst_addr = sha;
        Transmit(f, Meta(f)->tc);
      }
      arp_pending_.erase(it);
    }
    if (rnic_waits_arp_) {
      rnic_waits_arp_ = false;
      env_->WakeTx(0);
    }
    if (op == RTE_ARP_OP_REQUEST) {
      if (rte_mbuf* r = Counted(BuildArp(env_->pool(), true, cfg_.mac, cfg_.ip, sha, sip)))
        Transmit(r, 0);
    }
  }
  (void)now;
  Consume(m);
}

void EmulatedHost::Receive(Time now, uint16_t /*port*/, rte_mbuf* m) {
  last_now_ = now;
  ++frames_received_;
  if (dead_) {
    Discard(m);
    return;
  }
  ++rx_packets_;
  ParsedFrame p;
  if (ParseFrame(m, &p) != ParseError::kOk) {
    ++rx_other_;
    Discard(m);
    return;
  }
  const auto* eth = rte_pktmbuf_mtod(m, const rte_ether_hdr*);
  if (!MacEq(eth->dst_addr, cfg_.mac) && !rte_is_broadcast_ether_addr(&eth->dst_addr) &&
      p.ether_type != kEtherTypeMacControl) {
    ++not_for_me_;  // a flooded frame for another station
    Discard(m);
    return;
  }
  if (p.ether_type == kEtherTypeMacControl) {
    PfcFrame f;
    if (ParsePfc(m, &f)) {
      ++pfc_frames_rx_;
      pause_.Apply(now, f, cfg_.rate, cfg_.qos.lossless_mask);
      env_->WakeTx(0);
      Consume(m);
    } else {
      ++rx_other_;
      Discard(m);
    }
    return;
  }
  if (p.ether_type == kEtherTypeArp) return HandleArp(now, m, p);
  if (p.ether_type != kEtherTypeIpv4 || p.dst_ip != cfg_.ip) {
    ++rx_other_;
    Discard(m);
    return;
  }
  if (p.proto == kIpProtoIcmp) {
    auto* icmp = rte_pktmbuf_mtod_offset(m, rte_icmp_hdr*, p.l4_offset);
    if (icmp->icmp_type == RTE_IP_ICMP_ECHO_REQUEST) {
      uint16_t len = 0;
      L4Payload(m, p, &len);
      rte_mbuf* r = Counted(BuildIcmpEcho(env_->pool(), true, cfg_.mac, cfg_.mac, cfg_.ip, p.src_ip,
                                          rte_be_to_cpu_16(icmp->icmp_ident),
                                          rte_be_to_cpu_16(icmp->icmp_seq_nb), len));
      if (r != nullptr) {
        ++echo_replies_sent_;
        Send(now, r, p.src_ip, 0);
      }
    } else if (icmp->icmp_type == RTE_IP_ICMP_ECHO_REPLY) {
      const uint16_t id = rte_be_to_cpu_16(icmp->icmp_ident);
      const uint16_t seq = rte_be_to_cpu_16(icmp->icmp_seq_nb);
      for (auto& ps : pings_) {
        if (ps.spec.id == id && seq < ps.send_times.size()) {
          ps.rtts.push_back(now - ps.send_times[seq]);
          break;
        }
      }
    }
    Consume(m);
    return;
  }
  if (p.proto == kIpProtoUdp && p.dport == kRoceUdpPort) return rnic_->OnFrame(now, m, p);
  if (p.proto == kIpProtoUdp) {
    uint16_t len = 0;
    const uint8_t* pl = L4Payload(m, p, &len);
    if (pl != nullptr && len >= sizeof(ProbeHeader)) {
      ProbeHeader ph;
      std::memcpy(&ph, pl, sizeof ph);
      if (rte_be_to_cpu_32(ph.magic) == kProbeMagic) {
        RxFlow& f = rx_flows_[rte_be_to_cpu_32(ph.flow_id)];
        const uint32_t seq = rte_be_to_cpu_32(ph.seq);
        if (f.packets == 0) f.first_rx = now;
        f.src = p.src_ip;
        f.packets++;
        f.bytes += len;
        if ((p.tos & 3) == 3) f.ce_packets++;
        if (seq < f.next_seq) f.out_of_order++;
        f.next_seq = std::max(f.next_seq, seq + 1);
        f.last_rx = now;
        const Time lat = now - ph.send_time;
        f.lat_min = std::min(f.lat_min, lat);
        f.lat_max = std::max(f.lat_max, lat);
        f.lat_sum += static_cast<double>(lat);
      }
    }
  }
  Consume(m);  // UDP to this host, a probe of ours or not
}

std::optional<FrameBalance> EmulatedHost::frame_balance() const {
  FrameBalance b;
  b.received = frames_received_;
  b.created = frames_created_;
  b.transmitted = tx_packets_ + ctrl_sent_;
  b.dropped = frames_dropped_;
  b.consumed = frames_consumed_;
  b.held = ctrl_.size() + rnic_->rx_pipeline_frames();
  for (const auto& q : txq_) b.held += q.size();
  for (const auto& [ip, q] : arp_pending_) b.held += q.size();
  return b;
}

nlohmann::json EmulatedHost::Stats() const {
  // PFC per lossless priority (the ones the NIC honours): frames that named it, XOFF among
  // them, and the time it was paused; paused_time_ps is their sum.
  Time paused = 0;
  nlohmann::json pfc = nlohmann::json::object();
  for (uint8_t prio = 0; prio < 8; ++prio) {
    if (!cfg_.qos.lossless(prio)) continue;
    const Time t = pause_.PausedTime(prio, last_now_);
    paused += t;
    if (pause_.rx_frames(prio) == 0) continue;
    pfc[std::to_string(prio)] = {{"rx_frames", pause_.rx_frames(prio)},
                                 {"rx_xoff_frames", pause_.rx_xoff_frames(prio)},
                                 {"paused_time_ps", t}};
  }
  return {{"tx_packets", tx_packets_},
          {"rx_packets", rx_packets_},
          {"not_for_me", not_for_me_},
          {"tx_queue_drops", tx_queue_drops_},
          {"arp_unresolved_drops", arp_unresolved_drops_},
          {"echo_replies_sent", echo_replies_sent_},
          {"no_mbuf", no_mbuf_},
          {"rx_other", rx_other_},
          {"pfc_rx_frames", pfc_frames_rx_},
          {"paused_time_ps", paused},
          {"pfc", pfc},
          {"rnic", rnic_->Stats(last_now_)}};
}

}  // namespace rocefab
