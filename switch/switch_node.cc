#include "switch/switch_node.h"

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_icmp.h>
#include <rte_ip.h>

#include <atomic>
#include <cstring>
#include <set>

#include "common/eal.h"
#include "common/wire/pfc_frame.h"
#include "common/wire/roce_headers.h"

namespace rocefab {
namespace {

std::atomic<uint32_t> g_fib_counter{0};

bool IsBroadcastOrMulticast(const Mac& m) { return (m.addr_bytes[0] & 1) != 0; }

Ipv4 SubnetOf(Ipv4 ip, int len) { return len == 0 ? 0 : ip & ~((1ull << (32 - len)) - 1); }

}  // namespace

Result<std::unique_ptr<SwitchNode>> SwitchNode::Create(SwitchConfig cfg) {
  using R = Result<std::unique_ptr<SwitchNode>>;
  const std::string& n = cfg.name;
  if (cfg.ports.empty()) return R::Error(n + ": a switch needs at least one port");
  for (size_t i = 0; i < cfg.ports.size(); ++i) {
    const auto& p = cfg.ports[i];
    const std::string path = n + ".ports[" + std::to_string(i) + "]";
    if (p.rate.bps() <= 0) return R::Error(path + ".rate: must be > 0");
    if (p.vlan > 4094) return R::Error(path + ".vlan: must be 0 (routed) or 1..4094");
  }
  for (size_t i = 0; i < cfg.svis.size(); ++i) {
    const auto& s = cfg.svis[i];
    const std::string path = n + ".svis[" + std::to_string(i) + "]";
    if (s.vlan == 0 || s.vlan > 4094) return R::Error(path + ".vlan: must be 1..4094");
    if (s.prefix_len < 8 || s.prefix_len > 30) return R::Error(path + ".prefix_len: must be 8..30");
  }
  if (cfg.mac_aging <= 0) return R::Error(n + ".mac_aging: must be > 0");
  if (cfg.arp_aging <= 0) return R::Error(n + ".arp_aging: must be > 0");
  for (uint8_t tc = 0; tc < 8; ++tc) {
    if (cfg.qos.tc_to_queue[tc] != tc)
      return R::Error(n + ".qos: TC -> queue must be the identity");
  }
  if (cfg.buffer.size < 2048) return R::Error(n + ".buffer.size: must be >= 2048 bytes");
  for (int q = 0; q < 8; ++q) {
    const WredProfile& w = cfg.wred[q];
    if (w.enabled && (w.kmin < 0 || w.kmax <= w.kmin || w.pmax < 0 || w.pmax > 1)) {
      return R::Error(n + ".ecn: need 0 <= kmin < kmax and 0 <= pmax <= 1");
    }
  }
  std::optional<SharedBufferMmu> mmu;
  if (cfg.buffer.shared) {
    MmuConfig mc;
    mc.buffer_bytes = cfg.buffer.size;
    mc.num_ports = static_cast<uint16_t>(cfg.ports.size());
    for (uint8_t tc = 0; tc < 8; ++tc) {
      if (cfg.qos.lossless(tc)) {
        mc.lossless_pg_mask |= static_cast<uint8_t>(1 << cfg.qos.tc_to_pg[tc]);
        mc.lossless_queue_mask |= static_cast<uint8_t>(1 << cfg.qos.tc_to_queue[tc]);
      }
    }
    mc.lossy_pg = cfg.buffer.lossy_pg;
    mc.lossy_queue = cfg.buffer.lossy_queue;
    mc.lossless_shared_beyond_limit = cfg.buffer.lossless_shared_beyond_limit;
    mc.shared_headroom_pool = cfg.buffer.shared_headroom_pool;
    for (const auto& port : cfg.ports)
      mc.lossless_pg.push_back(ResolveLosslessPg(cfg.buffer, port));
    auto m = SharedBufferMmu::Create(mc);
    if (!m.ok()) return R::Error(n + ": " + m.message());
    mmu.emplace(std::move(m).value());
  }
  std::unique_ptr<SwitchNode> sw(new SwitchNode(std::move(cfg)));
  sw->mmu_ = std::move(mmu);
  auto rt = RouteTable::Create(
      "fib" + std::to_string(g_fib_counter++),
      static_cast<uint32_t>(sw->cfg_.routes.size() + 2 * sw->cfg_.svis.size() + 2), sw->cfg_.fib);
  if (!rt.ok()) return rt.status();
  sw->routes_.reset(rt.value());
  for (size_t i = 0; i < sw->cfg_.svis.size(); ++i) {
    const auto& s = sw->cfg_.svis[i];
    RouteGroup connected;
    connected.kind = RouteGroup::Kind::kConnected;
    connected.svi = static_cast<uint16_t>(i);
    Status st = sw->routes_->Add(SubnetOf(s.ip, s.prefix_len), s.prefix_len, connected);
    if (!st.ok()) return st;
    RouteGroup local;
    local.kind = RouteGroup::Kind::kLocal;
    st = sw->routes_->Add(s.ip, 32, local);
    if (!st.ok()) return st;
  }
  if (sw->cfg_.loopback != 0) {
    RouteGroup local;
    local.kind = RouteGroup::Kind::kLocal;
    Status st = sw->routes_->Add(sw->cfg_.loopback, 32, local);
    if (!st.ok()) return st;
  }
  for (size_t i = 0; i < sw->cfg_.routes.size(); ++i) {
    Status st = sw->InstallRoute(sw->cfg_.routes[i]);
    if (!st.ok()) return R::Error(n + ".routes[" + std::to_string(i) + "]: " + st.message());
    sw->remote_routes_.emplace_back(sw->cfg_.routes[i].prefix, sw->cfg_.routes[i].len);
  }
  // The table holds them now, each group once; a second copy per switch was most of the memory of
  // a 1,024-switch fabric (docs/experiments.md, "Memory and set-up at scale").
  std::vector<RouteConfig>().swap(sw->cfg_.routes);
  return sw;
}

Status SwitchNode::InstallRoute(const RouteConfig& r) {
  for (const auto& nh : r.group.members) {
    if (nh.port >= ports_.size()) return Status::Error("next hop port out of range");
  }
  RouteGroup g = r.group;
  const auto& leaves = cfg_.load_balancing.leaf_subnets;
  for (size_t l = 0; l < leaves.size(); ++l) {
    if (leaves[l].second == r.len && SubnetOf(r.prefix, r.len) == leaves[l].first) {
      g.conga_leaf = static_cast<int16_t>(l);
    }
  }
  if (g.second_hops <= 1) {
    for (const auto& nh : g.members) g.conweave_paths.push_back(ConweavePathId(nh.mac));
  } else {
    const uint32_t paths = static_cast<uint32_t>(g.members.size()) * g.second_hops;
    if (paths > kConweaveMaxRoutedPaths) {
      return Status::Error("second_hops: " + std::to_string(paths) +
                           " source-routed paths, at most " +
                           std::to_string(kConweaveMaxRoutedPaths));
    }
    for (uint32_t p = 0; p < paths; ++p) g.conweave_paths.push_back(p + 1);
  }
  return routes_->Add(r.prefix, r.len, std::move(g));
}

Status SwitchNode::ReplaceRoutes(const std::vector<RouteConfig>& routes) {
  for (size_t i = 0; i < routes.size(); ++i) {  // check everything before changing anything
    for (const auto& nh : routes[i].group.members) {
      if (nh.port >= ports_.size()) {
        return Status::Error(name() + ".routes[" + std::to_string(i) +
                             "]: next hop port out of range");
      }
    }
  }
  auto same = [this](const RouteConfig& r, const std::pair<Ipv4, int>& installed) {
    const RouteGroup* g = routes_->Find(r.prefix, r.len);
    if (installed != std::pair<Ipv4, int>(r.prefix, r.len) || g == nullptr ||
        g->kind != r.group.kind || g->members.size() != r.group.members.size()) {
      return false;
    }
    for (size_t k = 0; k < g->members.size(); ++k) {
      if (g->members[k].port != r.group.members[k].port ||
          !rte_is_same_ether_addr(&g->members[k].mac, &r.group.members[k].mac)) {
        return false;
      }
    }
    return true;
  };
  if (routes.size() == remote_routes_.size() &&
      std::equal(routes.begin(), routes.end(), remote_routes_.begin(), same)) {
    return Status();  // nothing changed for this switch
  }
  std::set<std::pair<Ipv4, int>> keep;
  for (const auto& r : routes) keep.emplace(r.prefix, r.len);
  for (const auto& old : remote_routes_) {
    if (!keep.count(old)) routes_->Remove(old.first, old.second);
  }
  remote_routes_.clear();  // the new prefixes (Remove of one an error left out is harmless)
  for (const auto& r : routes) remote_routes_.emplace_back(r.prefix, r.len);
  for (size_t i = 0; i < routes.size(); ++i) {
    Status st = InstallRoute(routes[i]);
    if (!st.ok()) {
      return Status::Error(name() + ".routes[" + std::to_string(i) + "]: " + st.message());
    }
  }
  ++route_updates_;
  return Status();
}

SwitchNode::SwitchNode(SwitchConfig cfg)
    : Node(cfg.name),
      cfg_(std::move(cfg)),
      rng_(cfg_.rng_seed),
      mac_table_(cfg_.mac_aging),
      arp_table_(cfg_.arp_aging) {
  ecmp_ = MakeEcmpFunction(cfg_.ecmp);
  paths_ = MakePathSelection(*this, cfg_, [this](uint16_t port) {
    int64_t b = 0;
    for (uint8_t q = 0; q < 8; ++q) b += static_cast<int64_t>(ports_[port].sched.queued_bytes(q));
    return b;
  });
  paths_tag_ = paths_->Tags();
  paths_observe_ = paths_->ObservesFrames();
  ports_.reserve(cfg_.ports.size());
  for (size_t i = 0; i < cfg_.ports.size(); ++i) {
    ports_.emplace_back(cfg_.scheduler);
    if (cfg_.ports[i].vlan != 0) {
      (cfg_.ports[i].trunk ? trunk_ports_ : vlan_ports_)[cfg_.ports[i].vlan].push_back(
          static_cast<uint16_t>(i));
    }
  }
}

SwitchNode::~SwitchNode() {
  for (auto& [ip, pending] : pending_arp_) pending.frames.Clear();
  for (auto& p : ports_) p.sched.Clear();
}

uint64_t SwitchNode::total_drops() const {
  uint64_t t = 0;
  for (uint64_t d : drops_) t += d;
  return t;
}

rte_mbuf* SwitchNode::NoteCreated(rte_mbuf* m) {
  ++frames_created_;
  if (m == nullptr) ++drops_[static_cast<size_t>(DropReason::kNoBuffer)];
  return m;
}

void SwitchNode::Consume(rte_mbuf* m) {
  ++frames_consumed_;
  rte_pktmbuf_free(m);
}

std::optional<FrameBalance> SwitchNode::frame_balance() const {
  FrameBalance b;
  for (uint16_t port = 0; port < ports_.size(); ++port) {
    const PortState& ps = ports_[port];
    b.received += ps.rx_packets;
    b.transmitted += ps.tx_packets;
    b.held += ps.sched.frames() + paths_->reorder_held_frames(port);
  }
  for (const auto& [ip, pending] : pending_arp_) b.held += pending.frames.size();
  b.created = frames_created_;
  b.dropped = total_drops();
  b.consumed = frames_consumed_;
  return b;
}

void SwitchNode::Drop(rte_mbuf* m, DropReason r) {
  ++drops_[static_cast<size_t>(r)];
  ++drops_by_tc_[Meta(m)->tc & 7][static_cast<size_t>(r)];
  rte_pktmbuf_free(m);
}

bool SwitchNode::IsOwnIp(Ipv4 ip) const {
  if (ip == cfg_.loopback && ip != 0) return true;
  for (const auto& s : cfg_.svis) {
    if (s.ip == ip) return true;
  }
  return false;
}

void SwitchNode::Start(Time now) { SetWatchdog(now, cfg_.watchdog); }

void SwitchNode::SetWatchdog(Time now, const PfcWatchdogConfig& wd) {
  cfg_.watchdog = wd;
  if (wd.enabled && !wd_timer_) ScheduleWatchdogPoll(now);
  if (!wd.enabled) {
    for (auto& p : ports_) p.storm_mask = 0;
  }
}

uint64_t SwitchNode::watchdog_storms() const {
  uint64_t n = 0;
  for (const auto& p : ports_) {
    for (const auto& w : p.wd) n += w.storms();
  }
  return n;
}

uint64_t SwitchNode::watchdog_restores() const {
  uint64_t n = 0;
  for (const auto& p : ports_) {
    for (const auto& w : p.wd) n += w.restores();
  }
  return n;
}

void SwitchNode::PollWatchdog(Time now) {
  for (uint16_t port = 0; port < ports_.size(); ++port) {
    PortState& ps = ports_[port];
    if (cfg_.watchdog.server_ports_only && cfg_.ports[port].vlan == 0) continue;
    if (!cfg_.ports[port].pfc_watchdog) continue;
    for (uint8_t prio = 0; prio < 8; ++prio) {
      if (!cfg_.qos.lossless(prio)) continue;
      PfcWatchdog::Sample s;
      s.rx_frames = ps.rx_pause.rx_frames(prio);
      s.rx_xoff_frames = ps.rx_pause.rx_xoff_frames(prio);
      s.on2off = ps.rx_pause.on2off(prio);
      s.paused = ps.rx_pause.Paused(prio, now);
      switch (ps.wd[prio].Poll(cfg_.watchdog, now, s)) {
        case PfcWatchdog::Event::kNone:
          break;
        case PfcWatchdog::Event::kStorm:
          ps.storm_mask |= static_cast<uint8_t>(1 << prio);
          if (first_storm_at_ < 0) first_storm_at_ = now;
          RecordWatchdogEvent(&ps, now, prio, true);
          if (cfg_.watchdog.action == WatchdogAction::kDrop) {
            // Discard what the stormed queue holds, releasing its buffer.
            while (rte_mbuf* m = ps.sched.PopQueue(prio)) {
              const PacketMeta* meta = Meta(m);
              const int64_t len = meta->buffer_len;
              if (mmu_) {
                if (mmu_->Release(meta->in_port, meta->pg, static_cast<MmuBucket>(meta->mmu_bucket),
                                  port, prio, len)) {
                  SendPfc(now, meta->in_port, meta->pg, false);
                }
              } else {
                ps.plain_bytes -= len;
              }
              ps.wd_dropped++;
              Drop(m, DropReason::kPfcWatchdog);
            }
            // Our own XOFF towards the peer on this PG ends with the storm.
            if (mmu_ && mmu_->xoff(port, cfg_.qos.tc_to_pg[prio])) {
              const uint8_t saved = ps.storm_mask;
              ps.storm_mask = 0;
              SendPfc(now, port, cfg_.qos.tc_to_pg[prio], false);
              ps.storm_mask = saved;
            }
          }
          env_->WakeTx(port);
          break;
        case PfcWatchdog::Event::kRestore:
          ps.storm_mask &= static_cast<uint8_t>(~(1 << prio));
          RecordWatchdogEvent(&ps, now, prio, false);
          // The MMU's XOFF decision for the PG outlived the storm (it was only overridden):
          // pause the peer again while the PG stays over its threshold; SendPfc arms the refresh.
          if (mmu_ && mmu_->xoff(port, cfg_.qos.tc_to_pg[prio])) {
            SendPfc(now, port, cfg_.qos.tc_to_pg[prio], true);
          }
          env_->WakeTx(port);
          break;
      }
    }
  }
  if (cfg_.watchdog.enabled && !wd_timer_) ScheduleWatchdogPoll(now);
}

void SwitchNode::ScheduleWatchdogPoll(Time now) {
  wd_timer_ = true;
  const Time j = cfg_.watchdog.poll_jitter;
  const Time late = j > 0 ? static_cast<Time>(rng_.Below(static_cast<uint64_t>(j) + 1)) : 0;
  Schedule(now + cfg_.watchdog.poll_interval + late, TimerKind::kWatchdog);
}

void SwitchNode::RecordWatchdogEvent(PortState* ps, Time now, uint8_t prio, bool storm) {
  if (ps->wd_events.size() < kMaxWatchdogEvents) ps->wd_events.push_back({now, prio, storm});
}

int64_t SwitchNode::queue_bytes(uint16_t port, uint8_t q) const {
  return mmu_ ? mmu_->queue_bytes(port, q)
              : static_cast<int64_t>(ports_[port].sched.queued_bytes(q));
}

uint8_t SwitchNode::xoff_mask(uint16_t port) const {
  uint8_t m = 0;
  if (!mmu_) return 0;
  for (uint8_t g = 0; g < 8; ++g) m |= static_cast<uint8_t>(mmu_->xoff(port, g) << g);
  return m;
}

void SwitchNode::MarkCe(rte_mbuf* m) {
  // Frames leave the switch untagged, so IPv4 starts right after the Ethernet header.
  if (rte_pktmbuf_data_len(m) < 34 ||
      rte_pktmbuf_mtod(m, const rte_ether_hdr*)->ether_type != rte_cpu_to_be_16(kEtherTypeIpv4)) {
    return;
  }
  SetEcnCe(m, sizeof(rte_ether_hdr));
}

void SwitchNode::Output(Time now, uint16_t port, rte_mbuf* m) {
  if (Admit(now, port, m)) Enqueue(port, m);
}

void SwitchNode::Enqueue(uint16_t port, rte_mbuf* m) {
  ports_[port].sched.Enqueue(Meta(m)->queue & 7, m);
  env_->WakeTx(port);
}

bool SwitchNode::Admit(Time now, uint16_t port, rte_mbuf* m) {
  PacketMeta* meta = Meta(m);
  const uint8_t q = meta->queue & 7;
  if (WdDrops(port, q)) {
    ports_[port].wd_dropped++;
    Drop(m, DropReason::kPfcWatchdog);
    return false;
  }
  // What the buffer holds of it (WireModel::BufferBytes): the frame, or under the reference's
  // model its packet size; released by the same count.
  const int64_t len = env_->wire().BufferBytes(m);
  meta->buffer_len = static_cast<uint16_t>(std::min<int64_t>(len, UINT16_MAX));
  PortState& ps = ports_[port];
  const WredProfile& w = cfg_.wred[q];
  if (w.enabled && !w.mark_on_dequeue) {
    switch (EcnMarker::Decide(w, EcnDepth(port, q), (meta->flags & kMetaEct) != 0, rng_)) {
      case EcnAction::kNone:
        break;
      case EcnAction::kMark:
        MarkCe(m);
        ++ps.ecn_marked[q];
        break;
      case EcnAction::kDrop:
        Drop(m, DropReason::kWredDrop);
        return false;
    }
  }
  meta->enqueue_time = now;
  if (mmu_) {
    const AdmitResult r = mmu_->Admit(meta->in_port, meta->pg, port, q, len);
    if (r.xoff) {
      ports_[meta->in_port].xoff_transitions[meta->pg]++;
      SendPfc(now, meta->in_port, meta->pg, true);
    } else if (cfg_.pfc.xoff_every_frame && r.verdict == AdmitResult::Verdict::kAccept &&
               meta->in_port != SharedBufferMmu::kNoPort && mmu_->xoff(meta->in_port, meta->pg)) {
      SendPfc(now, meta->in_port, meta->pg, true);
    }
    switch (r.verdict) {
      case AdmitResult::Verdict::kAccept:
        break;
      case AdmitResult::Verdict::kDropLosslessHeadroom:
        Drop(m, DropReason::kLosslessHeadroom);
        return false;
      case AdmitResult::Verdict::kDropIngressLimit:
        Drop(m, DropReason::kIngressLimit);
        return false;
      case AdmitResult::Verdict::kDropEgressLimit:
        Drop(m, DropReason::kEgressLimit);
        return false;
    }
    meta->mmu_bucket = static_cast<uint8_t>(r.bucket);
  } else {
    if (ps.plain_bytes + len > cfg_.buffer.size) {
      Drop(m, DropReason::kEgressBufferFull);
      return false;
    }
    ps.plain_bytes += len;
    ps.plain_watermark = std::max(ps.plain_watermark, ps.plain_bytes);
  }
  return true;
}

rte_mbuf* SwitchNode::Dequeue(Time now, uint16_t port) {
  last_now_ = now;
  PortState& ps = ports_[port];
  const uint8_t paused = paused_mask(port, now);
  uint8_t q = 0;
  rte_mbuf* m = ps.sched.Dequeue(paused, &q);
  if (m == nullptr) {
    // Frames wait behind a received pause: wake up when the earliest pause timer runs out.
    if (paused != 0 && ps.sched.HasPausedBacklog(paused)) {
      const Time at = ps.rx_pause.NextExpiry(now, paused);
      if (at != kTimeNever && ps.expiry_timer_at != at) {
        ps.expiry_timer_at = at;
        Schedule(at, TimerKind::kPauseExpiry, 0, port);
      }
    }
    return nullptr;
  }
  const int64_t len = rte_pktmbuf_pkt_len(m);
  ps.tx_packets++;
  ps.tx_bytes += len;
  if (paths_observe_) paths_->OnDequeue(now, port, m);
  if (q < 8) {
    ps.tx_queue_packets[q]++;
    const PacketMeta* meta = Meta(m);
    if (mmu_) {
      if (mmu_->Release(meta->in_port, meta->pg, static_cast<MmuBucket>(meta->mmu_bucket), port, q,
                        meta->buffer_len)) {
        SendPfc(now, meta->in_port, meta->pg, false);
      }
    } else {
      ps.plain_bytes -= meta->buffer_len;
    }
    const WredProfile& w = cfg_.wred[q];
    if (w.enabled && w.mark_on_dequeue &&
        EcnMarker::Decide(w, EcnDepth(port, q), (meta->flags & kMetaEct) != 0, rng_) ==
            EcnAction::kMark) {
      MarkCe(m);
      ++ps.ecn_marked[q];
    }
  }
  return m;
}

uint16_t SwitchNode::PauseQuanta(uint16_t port) const {
  if (cfg_.pfc.pause_time <= 0) return cfg_.pfc.pause_quanta;
  const Time quantum = PauseQuantaTime(1, cfg_.ports[port].rate);
  const Time q = (cfg_.pfc.pause_time + quantum - 1) / quantum;
  return static_cast<uint16_t>(std::clamp<Time>(q, 1, 0xFFFF));
}

void SwitchNode::SendPfc(Time now, uint16_t port, uint8_t pg, bool xoff) {
  if (port == SharedBufferMmu::kNoPort || port >= ports_.size() || !cfg_.pfc.enabled) return;
  uint8_t enable = 0;
  for (uint8_t tc = 0; tc < 8; ++tc) {
    if (cfg_.qos.lossless(tc) && cfg_.qos.tc_to_pg[tc] == pg)
      enable |= static_cast<uint8_t>(1 << tc);
  }
  enable &= static_cast<uint8_t>(
      ~(cfg_.watchdog.action == WatchdogAction::kDrop ? ports_[port].storm_mask : 0));
  if (enable == 0) return;
  PortState& ps = ports_[port];
  std::array<uint16_t, 8> quanta{};
  quanta.fill(xoff ? PauseQuanta(port) : 0);
  rte_mbuf* f = NoteCreated(BuildPfc(env_->pool(), cfg_.router_mac, enable, quanta));
  if (f != nullptr) {
    Meta(f)->enqueue_time = now;  // the decision time (the live runner's PFC reaction time)
    ps.sched.EnqueueControl(f);
    env_->WakeTx(port);
    for (uint8_t tc = 0; tc < 8; ++tc) {
      if ((enable >> tc) & 1) (xoff ? ps.pfc_tx_xoff : ps.pfc_tx_xon)[tc]++;
    }
  }
  if (xoff && !ps.refresh_pending[pg] && !cfg_.pfc.xoff_every_frame) {
    if (!mmu_ || !mmu_->xoff(port, pg)) return;
    ps.refresh_pending[pg] = true;
    // Never more often than one PFC frame's wire time (64 B + preamble + gap): a shorter
    // period (pfc.refresh 1 ps, or a few quanta at 100 Gb/s) would queue XOFFs faster than the
    // port sends them, without bound (a hostile-input session's 1 ps ran out of memory).
    const Time period = std::max(
        cfg_.pfc.refresh > 0 ? cfg_.pfc.refresh
                             : PauseQuantaTime(PauseQuanta(port), cfg_.ports[port].rate) / 2,
        TxTime(WireBytes(60), cfg_.ports[port].rate));
    Schedule(now + period, TimerKind::kPfcRefresh, pg, port);
  }
}

void SwitchNode::HandleMacControl(Time now, uint16_t port, rte_mbuf* m) {
  PfcFrame f;
  if (!ParsePfc(m, &f)) return Drop(m, DropReason::kMacControl);
  const bool was_idle = ports_[port].rx_pause.PausedMask(now) == 0;
  ports_[port].rx_pause.Apply(now, f, cfg_.ports[port].rate, cfg_.qos.lossless_mask);
  if (pause_listener_ && was_idle && ports_[port].rx_pause.PausedMask(now) != 0)
    pause_listener_(now);
  if (first_paused_at_ < 0) {
    for (uint8_t p = 0; p < 8; ++p) {
      if (((f.class_enable & cfg_.qos.lossless_mask) >> p & 1) && f.quanta[p] != 0)
        first_paused_at_ = now;
    }
  }
  Consume(m);          // by the MAC control sublayer
  env_->WakeTx(port);  // an XON may have released queued frames
}

void SwitchNode::Flood(Time now, uint16_t vlan, uint16_t except, rte_mbuf* m,
                       bool unknown_unicast) {
  for (const auto* group : {&vlan_ports_, &trunk_ports_}) {
    if (group == &trunk_ports_ && !unknown_unicast) break;
    auto it = group->find(vlan);
    if (it == group->end()) continue;
    for (uint16_t p : it->second) {
      if (p == except) continue;
      rte_mbuf* c = NoteCreated(CopyMbuf(m, env_->pool()));
      if (c == nullptr) continue;
      *Meta(c) = *Meta(m);
      Output(now, p, c);
    }
  }
  Consume(m);  // the copies went out
}

void SwitchNode::Receive(Time now, uint16_t port, rte_mbuf* m) {
  last_now_ = now;
  PortState& ps = ports_[port];
  ps.rx_packets++;
  ps.rx_bytes += rte_pktmbuf_pkt_len(m);
  PacketMeta* meta = Meta(m);
  meta->in_port = port;
  meta->tc = 0;
  meta->pg = 0;
  meta->queue = 0;
  meta->mmu_bucket = static_cast<uint8_t>(MmuBucket::kNone);

  ParsedFrame p;
  const ParseError err = ParseFrame(m, &p);
  switch (err) {
    case ParseError::kOk:
      break;
    case ParseError::kTruncatedL2:
      return Drop(m, DropReason::kTruncatedL2);
    case ParseError::kTruncatedL3:
      return Drop(m, DropReason::kTruncatedL3);
    case ParseError::kTruncatedL4:
      return Drop(m, DropReason::kTruncatedL4);
    case ParseError::kBadIpVersion:
      return Drop(m, DropReason::kBadIpHeader);
    case ParseError::kBadIpChecksum:
      return Drop(m, DropReason::kBadIpChecksum);
  }
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  const uint16_t port_vlan = cfg_.ports[port].vlan;
  if (p.ether_type == kEtherTypeMacControl) return HandleMacControl(now, port, m);
  meta->tc = cfg_.qos.Classify(p.ether_type == kEtherTypeIpv4 ? p.tos >> 2 : 0, p.has_vlan, p.pcp);
  meta->flags =
      static_cast<uint8_t>((meta->flags & kMetaIcrcDeferred) |
                           (p.ether_type == kEtherTypeIpv4 && (p.tos & 3) != 0 ? kMetaEct : 0));
  meta->pg = cfg_.qos.tc_to_pg[meta->tc];
  meta->queue = cfg_.qos.tc_to_queue[meta->tc];
  if (WdDrops(port, meta->tc)) {  // the stormed PG's ingress is dropped too (SONiC drop action)
    ps.wd_dropped++;
    return Drop(m, DropReason::kPfcWatchdog);
  }
  if (p.has_vlan) {
    // Only priority-tagged frames (VID 0) or the port's own VLAN are accepted; the tag is removed
    // so frames are forwarded untagged (access ports, routed fabric).
    if (p.vlan_id != 0 && p.vlan_id != port_vlan) return Drop(m, DropReason::kVlanMismatch);
    std::memmove(rte_pktmbuf_mtod_offset(m, uint8_t*, 4), rte_pktmbuf_mtod(m, uint8_t*), 12);
    rte_pktmbuf_adj(m, 4);
    eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
    p.l3_offset -= 4;
    if (p.l4_offset) p.l4_offset -= 4;
  }
  if (p.ether_type != kEtherTypeIpv4 && p.ether_type != kEtherTypeArp) {
    return Drop(m, DropReason::kUnknownEtherType);
  }
  const Mac src = eth->src_addr;
  const Mac dst = eth->dst_addr;
  if (IsBroadcastOrMulticast(src) || rte_is_zero_ether_addr(&src)) {
    return Drop(m, DropReason::kBadSourceMac);
  }
  if (port_vlan != 0) {
    if (mac_table_.Learn(now, port_vlan, src, port)) ++mac_learned_;
  }
  if (MacEq(dst, cfg_.router_mac)) {
    if (p.ether_type == kEtherTypeArp) return HandleArp(now, port, m, p);
    return RouteIpv4(now, m, p);
  }
  if (IsBroadcastOrMulticast(dst)) {
    if (p.ether_type == kEtherTypeArp) return HandleArp(now, port, m, p);
    if (port_vlan == 0) return Drop(m, DropReason::kNotForUs);
    ++broadcast_floods_;
    return Flood(now, port_vlan, port, m);
  }
  // Unicast to another station: bridge within the VLAN.
  if (port_vlan == 0) return Drop(m, DropReason::kNotForUs);
  auto out = mac_table_.Lookup(now, port_vlan, dst);
  if (!out) {
    ++unknown_unicast_floods_;
    return Flood(now, port_vlan, port, m, /*unknown_unicast=*/true);
  }
  if (*out == port) return Drop(m, DropReason::kSameSegment);
  ++bridged_;
  Output(now, *out, m);
}

void SwitchNode::HandleArp(Time now, uint16_t port, rte_mbuf* m, const ParsedFrame& p) {
  const auto* arp = rte_pktmbuf_mtod_offset(m, const rte_arp_hdr*, p.l3_offset);
  const uint16_t op = rte_be_to_cpu_16(arp->arp_opcode);
  const Ipv4 sip = rte_be_to_cpu_32(arp->arp_data.arp_sip);
  const Ipv4 tip = rte_be_to_cpu_32(arp->arp_data.arp_tip);
  const Mac sha = arp->arp_data.arp_sha;
  const uint16_t vlan = cfg_.ports[port].vlan;
  const bool broadcast = IsBroadcastOrMulticast(rte_pktmbuf_mtod(m, rte_ether_hdr*)->dst_addr);
  // Which of our SVIs is this ARP on?
  int svi = -1;
  for (size_t i = 0; i < cfg_.svis.size(); ++i) {
    if (cfg_.svis[i].vlan == vlan && vlan != 0) svi = static_cast<int>(i);
  }
  if (svi >= 0 &&
      SubnetOf(sip, cfg_.svis[svi].prefix_len) ==
          SubnetOf(cfg_.svis[svi].ip, cfg_.svis[svi].prefix_len) &&
      sip != 0) {
    // Learn the sender (RFC 826 merge): always for replies and requests aimed at us; refresh an
    // existing entry for any other ARP seen.
    const bool for_us = tip == cfg_.svis[svi].ip;
    if (op == RTE_ARP_OP_REPLY || for_us || arp_table_.Lookup(now, sip)) {
      arp_table_.Update(now, sip, sha);
      auto it = pending_arp_.find(sip);
      if (it != pending_arp_.end()) {
        while (!it->second.frames.empty()) {
          rte_mbuf* f = it->second.frames.Pop();
          auto* e = rte_pktmbuf_mtod(f, rte_ether_hdr*);
          e->dst_addr = sha;
          SendToHost(now, vlan, sha, f);
        }
        pending_arp_.erase(it);
      }
    }
    if (op == RTE_ARP_OP_REQUEST && for_us) {
      rte_mbuf* r = NoteCreated(BuildArp(env_->pool(), true, cfg_.router_mac, tip, sha, sip));
      if (r != nullptr) {
        ++arp_replies_sent_;
        SetOriginated(r);
        Output(now, port, r);
      }
    }
  }
  if (broadcast && vlan != 0) {
    ++broadcast_floods_;
    return Flood(now, vlan, port, m);
  }
  if (!broadcast && vlan != 0 &&
      !MacEq(rte_pktmbuf_mtod(m, rte_ether_hdr*)->dst_addr, cfg_.router_mac)) {
    return SendToHost(now, vlan, rte_pktmbuf_mtod(m, rte_ether_hdr*)->dst_addr, m);
  }
  Consume(m);  // by the switch's ARP process (not a drop)
}

void SwitchNode::RouteIpv4(Time now, rte_mbuf* m, const ParsedFrame& p) {
  if (p.ether_type != kEtherTypeIpv4) return Drop(m, DropReason::kUnknownEtherType);
  const RouteGroup* g = routes_->Lookup(p.dst_ip);
  if (g == nullptr) return Drop(m, DropReason::kNoRoute);
  if (g->kind == RouteGroup::Kind::kLocal) {
    if (p.proto == kIpProtoIcmp) {
      const auto* icmp = rte_pktmbuf_mtod_offset(m, const rte_icmp_hdr*, p.l4_offset);
      if (icmp->icmp_type == RTE_IP_ICMP_ECHO_REQUEST) return ReplyEcho(now, m, p);
    }
    return Drop(m, DropReason::kUnhandledForUs);
  }
  if (p.ttl <= 1) return Drop(m, DropReason::kTtlExpired);
  if (g->kind == RouteGroup::Kind::kConnected && paths_->ConsumeControl(now, m, p)) return;
  DecrementTtl(m, p.l3_offset);
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  const Mac prev_hop = eth->src_addr;
  eth->src_addr = cfg_.router_mac;
  ++routed_;
  if (g->kind == RouteGroup::Kind::kConnected) {
    if (paths_->AtDestination(now, m, p, g->svi, prev_hop)) return;
    return DeliverConnected(now, g->svi, p.dst_ip, m);
  }
  const uint32_t h = EcmpHash(p.src_ip, p.dst_ip, p.proto, p.sport, p.dport, cfg_.ecmp_seed);
  Meta(m)->flow_hash = h;
  const uint32_t n = static_cast<uint32_t>(g->members.size());
  if (paths_tag_ && p.proto == kIpProtoUdp && p.dport == kRoceUdpPort && FromAccessPort(m) &&
      rte_pktmbuf_data_len(m) >= p.l4_offset + 8u + 12u) {
    // A frame from a server entering the fabric never carries what looks like a tag: the source
    // stage writes a real one, or the valid bit stays clear (ACK/NAK/CNP, single uplink).
    // BTH byte 4 is ICRC-masked, so the ICRC stays valid.
    uint8_t* b4 = rte_pktmbuf_mtod_offset(m, uint8_t*, p.l4_offset + 8u + 4u);
    if (*b4 & 0x80) {
      *b4 &= 0x7F;
      ++host_tag_bits_cleared_;
    }
  }
  // ACK/NAK/CNP and ICMP take the ECMP path whatever the scheme (IsControlPacket).
  const uint32_t pick = (n > 1 || g->second_hops > 1) && !IsControlPacket(m, p)
                            ? paths_->Pick(now, m, p, *g, h)
                            : ecmp_->Member(m, p, h, n);
  if (paths_observe_) paths_->OnRouted(m, p);
  const NextHop& nh = g->members[pick];
  eth->dst_addr = nh.mac;
  Output(now, nh.port, m);
}

bool SwitchNode::IsControlPacket(const rte_mbuf* m, const ParsedFrame& p) {
  // RoCEv2 ACK/NAK (BTH opcode 0x11 RC Acknowledge, 0x12 Atomic Acknowledge) and CNP (0x81) take
  // the ECMP path whatever the scheme, as in the ConWeave artifact; so do ICMP and non-IP.
  if (p.proto == kIpProtoIcmp) return true;
  if (p.proto != kIpProtoUdp || p.dport != kRoceUdpPort) return false;
  const uint32_t bth = p.l4_offset + 8u;
  if (rte_pktmbuf_data_len(m) < bth + 1) return true;
  const auto op = static_cast<RoceOp>(*rte_pktmbuf_mtod_offset(m, const uint8_t*, bth));
  return op == RoceOp::kAck || op == RoceOp::kAtomicAck || op == RoceOp::kCnp;
}

void SwitchNode::DeliverConnected(Time now, uint16_t svi, Ipv4 dst, rte_mbuf* m) {
  const uint16_t vlan = cfg_.svis[svi].vlan;
  if (auto mac = arp_table_.Lookup(now, dst)) {
    rte_pktmbuf_mtod(m, rte_ether_hdr*)->dst_addr = *mac;
    return SendToHost(now, vlan, *mac, m);
  }
  auto [it, inserted] = pending_arp_.try_emplace(dst);
  PendingArp& pa = it->second;
  pa.svi = svi;
  if (static_cast<int>(pa.frames.size()) >= cfg_.arp_queue_len) {
    return Drop(m, DropReason::kArpUnresolved);
  }
  pa.frames.Push(m);
  if (inserted) RequestArp(now, svi, dst);
}

void SwitchNode::SendToHost(Time now, uint16_t vlan, const Mac& mac, rte_mbuf* m) {
  auto port = mac_table_.Lookup(now, vlan, mac);
  if (!port && cfg_.drop_lossless_on_incomplete_arp && cfg_.qos.lossless(Meta(m)->tc)) {
    return Drop(m, DropReason::kIncompleteArp);
  }
  if (!port) {
    // ARP entry without a MAC-table entry: flood within the VLAN, trunk uplinks included (the
    // paper's incomplete-ARP state; drop_lossless_on_incomplete_arp is the cure).
    ++unknown_unicast_floods_;
    return Flood(now, vlan, UINT16_MAX, m, /*unknown_unicast=*/true);
  }
  Output(now, *port, m);
}

void SwitchNode::RequestArp(Time now, uint16_t svi, Ipv4 ip) {
  auto it = pending_arp_.find(ip);
  if (it == pending_arp_.end()) return;
  it->second.requests_sent++;
  const auto& s = cfg_.svis[svi];
  Mac zero{};
  rte_mbuf* req = NoteCreated(BuildArp(env_->pool(), false, cfg_.router_mac, s.ip, zero, ip));
  if (req != nullptr) {
    SetOriginated(req);
    ++arp_requests_sent_;
    Flood(now, s.vlan, UINT16_MAX, req);
  }
  Schedule(now + cfg_.arp_retry, TimerKind::kArp, ip);
}

void SwitchNode::OnTimer(Time now, uint64_t cookie) {
  last_now_ = now;
  const TimerKey key = TimerKey::Unpack(cookie);
  switch (key.kind_as<TimerKind>()) {
    case TimerKind::kConweave:
      return paths_->OnTimer(now);
    case TimerKind::kPfcRefresh: {
      const uint16_t port = key.port;
      const auto pg = static_cast<uint8_t>(key.arg & 7);
      ports_[port].refresh_pending[pg] = false;
      if (mmu_ && mmu_->xoff(port, pg)) SendPfc(now, port, pg, true);  // still congested
      return;
    }
    case TimerKind::kWatchdog:
      wd_timer_ = false;
      if (cfg_.watchdog.enabled) PollWatchdog(now);
      return;
    case TimerKind::kPauseExpiry:
      ports_[key.port].expiry_timer_at = -1;
      env_->WakeTx(key.port);
      return;
    case TimerKind::kArp:
      return OnArpTimer(now, static_cast<Ipv4>(key.arg));
  }
}

void SwitchNode::OnArpTimer(Time now, Ipv4 ip) {
  auto it = pending_arp_.find(ip);
  if (it == pending_arp_.end()) return;  // resolved meanwhile
  if (it->second.requests_sent >= cfg_.arp_retries) {
    drops_[static_cast<size_t>(DropReason::kArpUnresolved)] += it->second.frames.Clear();
    pending_arp_.erase(it);
    return;
  }
  RequestArp(now, it->second.svi, ip);
}

void SwitchNode::ReplyEcho(Time now, rte_mbuf* m, const ParsedFrame& p) {
  // Turn the request into the reply in place: swap addresses, type 0, fix checksums.
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  auto* ip = rte_pktmbuf_mtod_offset(m, rte_ipv4_hdr*, p.l3_offset);
  auto* icmp = rte_pktmbuf_mtod_offset(m, rte_icmp_hdr*, p.l4_offset);
  const uint16_t l4_len =
      static_cast<uint16_t>(rte_be_to_cpu_16(ip->total_length) - (p.l4_offset - p.l3_offset));
  const rte_be32_t old_src = ip->src_addr;
  ip->src_addr = ip->dst_addr;
  ip->dst_addr = old_src;
  ip->time_to_live = 64;
  ip->hdr_checksum = 0;
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
  icmp->icmp_cksum = 0;
  icmp->icmp_cksum = static_cast<uint16_t>(~rte_raw_cksum(icmp, l4_len));
  eth->dst_addr = eth->src_addr;
  eth->src_addr = cfg_.router_mac;
  ++icmp_echo_replies_;
  ParsedFrame rp;
  if (ParseFrame(m, &rp) != ParseError::kOk) return Drop(m, DropReason::kBadIpHeader);
  const RouteGroup* g = routes_->Lookup(rp.dst_ip);
  if (g == nullptr) return Drop(m, DropReason::kNoRoute);
  if (g->kind == RouteGroup::Kind::kConnected) return DeliverConnected(now, g->svi, rp.dst_ip, m);
  if (g->kind == RouteGroup::Kind::kLocal) return Drop(m, DropReason::kUnhandledForUs);
  const uint32_t h = EcmpHash(rp.src_ip, rp.dst_ip, rp.proto, 0, 0, cfg_.ecmp_seed);
  const NextHop& nh = g->members[EcmpPick(h, static_cast<uint32_t>(g->members.size()))];
  eth->dst_addr = nh.mac;
  Output(now, nh.port, m);
}

void SwitchNode::AddStaticNeighbor(Time now, Ipv4 ip, const Mac& mac, uint16_t port) {
  if (port >= cfg_.ports.size()) return;
  arp_table_.Update(now, ip, mac);
  mac_table_.Learn(now, cfg_.ports[port].vlan, mac, port);
}

nlohmann::json SwitchNode::Stats() const {
  nlohmann::json j;
  j["routed"] = routed_;
  j["route_updates"] = route_updates_;
  paths_->AddStats(j);
  if (paths_->Tags()) j["host_tag_bits_cleared"] = host_tag_bits_cleared_;
  if (cfg_.load_balancing.scheme != LoadBalancingConfig::Scheme::kEcmp) {
    j["load_balancing"] = {{"scheme", LoadBalancingSchemeName(cfg_.load_balancing.scheme)},
                           {"decisions", paths_->decisions()},
                           {"path_changes", paths_->path_changes()}};
  }
  j["bridged"] = bridged_;
  j["unknown_unicast_floods"] = unknown_unicast_floods_;
  j["broadcast_floods"] = broadcast_floods_;
  j["mac_learned"] = mac_learned_;
  j["mac_aged_out"] = mac_table_.aged_out();
  j["mac_entries"] = mac_table_.size();
  j["arp_entries"] = arp_table_.size();
  j["arp_requests_sent"] = arp_requests_sent_;
  j["arp_replies_sent"] = arp_replies_sent_;
  j["icmp_echo_replies"] = icmp_echo_replies_;
  nlohmann::json drops = nlohmann::json::object();
  for (size_t i = 0; i < drops_.size(); ++i) {
    if (drops_[i] != 0) drops[kDropReasonNames[i]] = drops_[i];
  }
  j["drops"] = drops;
  j["drops_total"] = total_drops();
  nlohmann::json by_tc = nlohmann::json::object();
  for (size_t tc = 0; tc < 8; ++tc) {
    nlohmann::json d = nlohmann::json::object();
    for (size_t i = 0; i < drops_by_tc_[tc].size(); ++i) {
      if (drops_by_tc_[tc][i] != 0) d[kDropReasonNames[i]] = drops_by_tc_[tc][i];
    }
    if (!d.empty()) by_tc[std::to_string(tc)] = d;
  }
  j["drops_by_tc"] = by_tc;
  nlohmann::json ecn = nlohmann::json::object();
  for (size_t q = 0; q < 8; ++q) {
    const WredProfile& w = cfg_.wred[q];
    if (!w.enabled) continue;
    ecn[std::to_string(q)] = {{"kmin_bytes", w.kmin},
                              {"kmax_bytes", w.kmax},
                              {"pmax", w.pmax},
                              {"mark_on", w.mark_on_dequeue ? "dequeue" : "enqueue"}};
  }
  j["ecn"] = ecn;  // the marking point and thresholds of each ECN-enabled egress queue
  if (mmu_) {
    j["buffer"] = {{"size", mmu_->config().buffer_bytes},
                   {"shared_pool", mmu_->shared_pool_bytes()},
                   {"lossless_headroom_per_pg",
                    mmu_->config().lossless_pg.empty() ? 0 : mmu_->config().lossless_pg[0].xoff}};
    if (mmu_->config().shared_headroom_pool > 0) {
      j["buffer"]["shared_headroom_pool"] = mmu_->config().shared_headroom_pool;
    }
  }
  nlohmann::json ports = nlohmann::json::array();
  for (size_t i = 0; i < ports_.size(); ++i) {
    const auto& p = ports_[i];
    nlohmann::json o = {{"name", cfg_.ports[i].name},
                        {"rx_packets", p.rx_packets},
                        {"rx_bytes", p.rx_bytes},
                        {"tx_packets", p.tx_packets},
                        {"tx_bytes", p.tx_bytes}};
    if (!cfg_.ports[i].buffer_profile.empty() && mmu_) {
      o["buffer_profile"] = cfg_.ports[i].buffer_profile;  // a port-specific lossless PG profile
      o["lossless_headroom"] = mmu_->config().lossless_pg[i].xoff;
    }
    nlohmann::json pfc = nlohmann::json::object();
    for (uint8_t prio = 0; prio < 8; ++prio) {
      const uint64_t rx = p.rx_pause.rx_frames(prio);
      if (p.pfc_tx_xoff[prio] == 0 && p.pfc_tx_xon[prio] == 0 && rx == 0) continue;
      pfc[std::to_string(prio)] = {{"tx_xoff", p.pfc_tx_xoff[prio]},
                                   {"tx_xon", p.pfc_tx_xon[prio]},
                                   {"rx_frames", rx},
                                   {"rx_on2off", p.rx_pause.on2off(prio)},
                                   {"paused_time_ps", p.rx_pause.PausedTime(prio, last_now_)}};
    }
    o["pfc"] = pfc;
    uint64_t storms = 0, restores = 0;
    for (const auto& w : p.wd) storms += w.storms(), restores += w.restores();
    if (storms || p.wd_dropped) {
      nlohmann::json per_prio = nlohmann::json::object(), events = nlohmann::json::array();
      for (uint8_t prio = 0; prio < 8; ++prio) {
        if (p.wd[prio].storms() == 0) continue;
        per_prio[std::to_string(prio)] = {{"storms_detected", p.wd[prio].storms()},
                                          {"storms_restored", p.wd[prio].restores()}};
      }
      for (const auto& e : p.wd_events) {
        events.push_back({{"t_us", static_cast<double>(e.at) / kUs},
                          {"priority", e.prio},
                          {"event", e.storm ? "storm" : "restore"}});
      }
      o["pfc_watchdog"] = {{"storms_detected", storms}, {"storms_restored", restores},
                           {"dropped", p.wd_dropped},   {"in_storm_mask", p.storm_mask},
                           {"per_priority", per_prio},  {"events", events}};
    }
    nlohmann::json qs = nlohmann::json::object();
    for (uint8_t q = 0; q < 8; ++q) {
      const int64_t wm = mmu_ ? mmu_->queue_watermark(static_cast<uint16_t>(i), q) : 0;
      if (p.tx_queue_packets[q] == 0 && wm == 0 && p.ecn_marked[q] == 0) continue;
      qs[std::to_string(q)] = {{"tx_packets", p.tx_queue_packets[q]},
                               {"watermark_bytes", wm},
                               {"ecn_marked", p.ecn_marked[q]}};
    }
    o["queues"] = qs;
    if (mmu_) {
      nlohmann::json pgs = nlohmann::json::object();
      for (uint8_t g = 0; g < 8; ++g) {
        const int64_t wm = mmu_->pg_watermark(static_cast<uint16_t>(i), g);
        if (wm == 0) continue;
        pgs[std::to_string(g)] = {{"watermark_bytes", wm},
                                  {"xoff_transitions", p.xoff_transitions[g]}};
      }
      o["pgs"] = pgs;
    } else {
      o["queue_watermark_bytes"] = p.plain_watermark;
    }
    ports.push_back(o);
  }
  j["ports"] = ports;
  return j;
}

}  // namespace rocefab
