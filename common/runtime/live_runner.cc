#include "common/runtime/live_runner.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace rocefab {

class LiveRunner::Env final : public NodeEnv {
 public:
  Env(LiveRunner* r, uint32_t node) : r_(r), node_(node) {}
  void WakeTx(uint16_t port) override {
    PortState& ps = r_->ports_[node_][port];
    // The frame became ready at the node's (exact) time of the event it is handling.
    if (!ps.wake) ps.ready_at = r_->node_now_[node_];
    ps.wake = true;
  }
  void ScheduleTimer(Time at, uint64_t cookie) override {
    // A time in the past fires at once; its lateness (from the time asked for) is recorded.
    r_->timers_.push(Timer{at, r_->timer_seq_++, node_, cookie});
  }
  rte_mempool* pool() override { return r_->pool_; }

 private:
  LiveRunner* r_;
  uint32_t node_;
};

LiveRunner::LiveRunner(rte_mempool* pool, LiveRunnerOptions opt)
    : pool_(pool),
      opt_(opt),
      delivery_late_(opt.tolerance),
      timer_late_(opt.tolerance),
      wire_late_(opt.tolerance),
      pfc_reaction_(opt.tolerance) {}

LiveRunner::~LiveRunner() = default;  // MbufFifo members free what they still hold

uint32_t LiveRunner::AddNode(Node* node) {
  const auto idx = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(node);
  envs_.push_back(std::make_unique<Env>(this, idx));
  ports_.emplace_back(node->num_ports());
  node_timer_late_.push_back(0);
  node_timer_max_.push_back(0);
  node_timer_max_at_.push_back(0);
  node->Attach(envs_.back().get());
  return idx;
}

Status LiveRunner::Connect(uint32_t a, uint16_t pa, uint32_t b, uint16_t pb, BitRate rate,
                           Time delay) {
  if (a >= nodes_.size() || b >= nodes_.size() || pa >= ports_[a].size() ||
      pb >= ports_[b].size()) {
    return Status::Error("live connect: unknown node or port");
  }
  if (ports_[a][pa].kind != PortState::Kind::kNone ||
      ports_[b][pb].kind != PortState::Kind::kNone) {
    return Status::Error("live connect: port already attached");
  }
  if (rate <= 0 || delay < 0) return Status::Error("live connect: rate must be > 0, delay >= 0");
  auto set = [&](PortState& s, uint32_t pn, uint16_t pp) {
    s.kind = PortState::Kind::kInternal;
    s.peer_node = pn;
    s.peer_port = pp;
    s.rate = rate;
    s.delay = delay;
  };
  set(ports_[a][pa], b, pb);
  set(ports_[b][pb], a, pa);
  return Status();
}

Status LiveRunner::AttachEthdev(uint32_t n, uint16_t p, uint16_t ethdev, BitRate rate) {
  if (n >= nodes_.size() || p >= ports_[n].size())
    return Status::Error("attach: unknown node/port");
  if (ports_[n][p].kind != PortState::Kind::kNone) return Status::Error("attach: port in use");
  if (rate <= 0) return Status::Error("attach: rate must be > 0");
  ports_[n][p].kind = PortState::Kind::kEthdev;
  ports_[n][p].ethdev = ethdev;
  ports_[n][p].rate = rate;
  return Status();
}

Status LiveRunner::SetLoss(uint32_t n, uint16_t p, const LossModel& loss) {
  if (n >= nodes_.size() || p >= ports_[n].size()) return Status::Error("loss: unknown node/port");
  if (loss.any()) {
    ports_[n][p].loss = std::make_unique<LossState>(loss);
  } else {
    ports_[n][p].loss.reset();
  }
  return Status();
}

namespace {

// EtherType 0x8808 (MAC control: 802.3x PAUSE and 802.1Qbb PFC) at offset 12.
bool IsPfcFrame(const rte_mbuf* m) {
  if (rte_pktmbuf_data_len(m) < 14) return false;
  const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
  return d[12] == 0x88 && d[13] == 0x08;
}

}  // namespace

Time LiveRunner::Now() const {
  const uint64_t d = rte_rdtsc() - tsc0_;
  return static_cast<Time>(static_cast<__int128>(d) * kSec / tsc_hz_);
}

// Pulls frames from node n, port p while its wire is free. Returns true if it moved a frame.
bool LiveRunner::PullPort(uint32_t n, uint16_t p, Time now, Time* next_event) {
  PortState& ps = ports_[n][p];
  bool worked = false;
  if (ps.kind == PortState::Kind::kEthdev && !ps.tx_backlog.empty()) {
    rte_mbuf* burst[32];
    uint16_t k = 0;
    while (k < 32 && !ps.tx_backlog.empty()) burst[k++] = ps.tx_backlog.Pop();
    const uint16_t sent = rte_eth_tx_burst(ps.ethdev, 0, burst, k);
    // Put back what the PMD refused, in order, ahead of anything newer.
    if (sent < k) {
      MbufFifo rest;
      for (uint16_t i = sent; i < k; ++i) rest.Push(burst[i]);
      while (!ps.tx_backlog.empty()) rest.Push(ps.tx_backlog.Pop());
      ps.tx_backlog = std::move(rest);
      return sent > 0;
    }
    worked = true;
  }
  if (!ps.wake) return worked;
  rte_mbuf* burst[32];
  uint16_t k = 0;
  // Pull while the wire is free (or frees within kPullAhead). Each frame's slot is exact: it
  // starts when the previous one ends (busy period) or, after an idle period, when the node
  // made it ready (the exact time of the event it was handling); a loop iteration that ran late
  // may start a frame up to opt_.catch_up in the past, so delivery times stay exact and the
  // long-run rate is the link rate whatever the loop's jitter. Lateness beyond that shifts the
  // schedule (and is recorded).
  constexpr Time kPullAhead = 1 * kUs;
  while (ps.next_free <= now + kPullAhead && k < 32) {
    const Time due = ps.idle ? std::max(ps.next_free, ps.ready_at) : ps.next_free;
    const Time start = std::max(due, now - opt_.catch_up);
    const Time slip = start - due;  // > 0: beyond the catch-up window, the schedule moves
    rte_mbuf* m = nodes_[n]->Dequeue(NodeTime(n, start), p);
    if (m == nullptr) {
      ps.wake = false;
      ps.idle = true;  // the wire went idle: the next frame's slot starts when it is ready
      break;
    }
    RecordPort(wire_late_, ps, now - due);
    if (slip > 0) {
      ps.slipped += slip;
      ++slips_;
    }
    ps.idle = false;
    if (IsPfcFrame(m)) pfc_reaction_.Record(std::max(start, now) - Meta(m)->enqueue_time);
    ps.next_free = start + TxTime(WireBytes(rte_pktmbuf_pkt_len(m)), ps.rate);
    worked = true;
    if (ps.loss && ps.loss->Lose(m)) {  // lost on the wire: it used the wire time
      ++lost_frames_;
      rte_pktmbuf_free(m);
      continue;
    }
    switch (ps.kind) {
      case PortState::Kind::kInternal: {
        Meta(m)->deliver_at = ps.next_free + ps.delay;
        PortState& peer = ports_[ps.peer_node][ps.peer_port];
        peer.inbound.Push(m);
        break;
      }
      case PortState::Kind::kEthdev:
        burst[k++] = m;
        break;
      case PortState::Kind::kNone:
        rte_pktmbuf_free(m);
        break;
    }
  }
  if (k > 0) {
    const uint16_t sent = rte_eth_tx_burst(ps.ethdev, 0, burst, k);
    for (uint16_t i = sent; i < k; ++i) ps.tx_backlog.Push(burst[i]);
  }
  if (ps.wake && ps.next_free > now) *next_event = std::min(*next_event, ps.next_free);
  return worked;
}

void LiveRunner::Loop(const std::atomic<bool>& stop) {
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  if (opt_.nice >= -20 && opt_.nice <= 19) {
    // This thread only (Linux: a TID names one thread). Fails without CAP_SYS_NICE: harmless.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), opt_.nice);
  }
  tsc_hz_ = rte_get_tsc_hz();
  now_ = 0;
  node_now_.assign(nodes_.size(), 0);
  for (Node* node : nodes_) node->Start(0);
  // Time 0 is when every node has started: Start may take milliseconds (memory regions touched
  // for the first time), which would otherwise make the first timers late.
  tsc0_ = rte_rdtsc();
  Time last_work = 0;
  Time sleep = kUs;
  rte_mbuf* rx[32];
  while (!stop.load(std::memory_order_relaxed)) {
    const Time now = Now();
    now_ = now;
    ++iterations_;
    bool worked = false;
    Time next_event = kTimeNever;
    while (!timers_.empty() && timers_.top().t <= now) {
      const Timer t = timers_.top();
      timers_.pop();
      const Time late = now - t.t;
      timer_late_.Record(late);
      if (late > opt_.tolerance) ++node_timer_late_[t.node];
      if (late > node_timer_max_[t.node]) {
        node_timer_max_[t.node] = late;
        node_timer_max_at_[t.node] = now;
      }
      nodes_[t.node]->OnTimer(NodeTime(t.node, t.t), t.cookie);
      worked = true;
    }
    if (!timers_.empty()) next_event = timers_.top().t;
    for (uint32_t n = 0; n < nodes_.size(); ++n) {
      for (uint16_t p = 0; p < ports_[n].size(); ++p) {
        PortState& ps = ports_[n][p];
        if (ps.kind == PortState::Kind::kEthdev) {
          const uint16_t got = rte_eth_rx_burst(ps.ethdev, 0, rx, 32);
          for (uint16_t i = 0; i < got; ++i) {
            Meta(rx[i])->flags = 0;  // metadata of the mbuf's previous use, not of this frame
            if (tap_) tap_(now, n, p, rx[i]);
            nodes_[n]->Receive(NodeTime(n, now), p, rx[i]);  // no arrival timestamp
          }
          worked |= got > 0;
        }
        while (!ps.inbound.empty()) {
          rte_mbuf* m = ps.inbound.Front();
          if (Meta(m)->deliver_at > now) {
            next_event = std::min(next_event, Meta(m)->deliver_at);
            break;
          }
          ps.inbound.Pop();
          RecordPort(delivery_late_, ps, now - Meta(m)->deliver_at);
          const Time at = NodeTime(n, Meta(m)->deliver_at);
          if (tap_) tap_(at, n, p, m);  // the frame's model time, as the sim's captures
          nodes_[n]->Receive(at, p, m);
          worked = true;
        }
      }
    }
    for (uint32_t n = 0; n < nodes_.size(); ++n) {
      for (uint16_t p = 0; p < ports_[n].size(); ++p) worked |= PullPort(n, p, now, &next_event);
    }
    if (worked) {
      last_work = now;
      sleep = kUs;
      continue;
    }
    if (now - last_work < opt_.busy_poll) continue;
    const Time nap = IdleNap(now, next_event, sleep, opt_);
    if (nap > 0) {
      timespec ts{0, static_cast<long>(nap / kNs)};
      nanosleep(&ts, nullptr);
      ++idle_sleeps_;
      sleep = std::min(sleep * 2, opt_.max_sleep);
    }
  }
}

Time LiveRunner::IdleNap(Time now, Time next_event, Time backoff, const LiveRunnerOptions& opt) {
  Time nap = std::min(backoff, opt.max_sleep);
  if (next_event != kTimeNever) nap = std::min(nap, next_event - now - opt.sleep_margin);
  return nap >= kUs ? nap : 0;
}

LiveRunner::Timing LiveRunner::timing() const {
  Timing t;
  t.delivery = delivery_late_;
  t.timer = timer_late_;
  t.wire = wire_late_;
  t.pfc_reaction = pfc_reaction_;
  t.all = LatenessHistogram(opt_.tolerance);
  t.all.Merge(delivery_late_);
  t.all.Merge(timer_late_);
  t.all.Merge(wire_late_);
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    auto consider = [&](int port, uint64_t late, Time max, Time at) {
      if (late > t.worst_late_events || (late == t.worst_late_events && max > t.worst_max)) {
        t.worst_node = nodes_[n]->name();
        t.worst_port = port;
        t.worst_late_events = late;
        t.worst_max = max;
        t.worst_at = at;
      }
    };
    consider(-1, node_timer_late_[n], node_timer_max_[n], node_timer_max_at_[n]);
    for (size_t p = 0; p < ports_[n].size(); ++p) {
      const PortState& ps = ports_[n][p];
      consider(static_cast<int>(p), ps.late_events, ps.max_late, ps.max_late_at);
    }
  }
  for (const auto& node_ports : ports_) {
    for (const PortState& ps : node_ports) t.max_port_slip = std::max(t.max_port_slip, ps.slipped);
  }
  t.slips = slips_;
  t.faithful = t.all.fraction_beyond_tolerance() <= opt_.max_late_fraction &&
               t.max_port_slip <= opt_.tolerance;
  return t;
}

namespace {

nlohmann::json HistogramJson(const LatenessHistogram& h) {
  return {{"events", h.count()},
          {"late_events", h.late_beyond_tolerance()},
          {"late_fraction", h.fraction_beyond_tolerance()},
          {"p50_us", h.Percentile(0.5) / 1e6},
          {"p99_us", h.Percentile(0.99) / 1e6},
          {"p999_us", h.Percentile(0.999) / 1e6},
          {"max_us", h.max() / 1e6}};
}

}  // namespace

nlohmann::json LiveRunner::TimingJson() const {
  const Timing t = timing();
  nlohmann::json j = HistogramJson(t.all);
  j["tolerance_us"] = opt_.tolerance / 1e6;
  j["max_late_fraction"] = opt_.max_late_fraction;
  j["delivery"] = HistogramJson(t.delivery);
  j["timer"] = HistogramJson(t.timer);
  j["wire"] = HistogramJson(t.wire);
  nlohmann::json pfc = HistogramJson(t.pfc_reaction);
  pfc.erase("late_events");
  pfc.erase("late_fraction");
  pfc["frames"] = pfc["events"];
  pfc.erase("events");
  j["pfc_reaction"] = pfc;
  j["worst"] = t.worst_late_events == 0 ? nlohmann::json(nullptr)
                                        : nlohmann::json{{"node", t.worst_node},
                                                         {"port", t.worst_port},
                                                         {"late_events", t.worst_late_events},
                                                         {"max_us", t.worst_max / 1e6},
                                                         {"max_at_us", t.worst_at / 1e6}};
  j["catch_up_us"] = opt_.catch_up / 1e6;
  j["schedule_slips"] = t.slips;
  j["max_port_slip_us"] = t.max_port_slip / 1e6;
  j["faithful"] = t.faithful;
  char line[320];
  if (t.faithful) {
    std::snprintf(line, sizeof line,
                  "faithful within %.2f us: %llu timed events, p99.9 lateness %.2f us, max %.2f us",
                  opt_.tolerance / 1e6, static_cast<unsigned long long>(t.all.count()),
                  t.all.Percentile(0.999) / 1e6, t.all.max() / 1e6);
  } else if (t.all.fraction_beyond_tolerance() <= opt_.max_late_fraction) {
    std::snprintf(
        line, sizeof line,
        "NOT FAITHFUL: the loop fell more than the %.0f us catch-up window behind "
        "%llu time(s) and moved a wire's schedule by up to %.2f us in all (allowed %.2f us); "
        "p99.9 lateness %.2f us, max %.2f us",
        opt_.catch_up / 1e6, static_cast<unsigned long long>(t.slips), t.max_port_slip / 1e6,
        opt_.tolerance / 1e6, t.all.Percentile(0.999) / 1e6, t.all.max() / 1e6);
  } else {
    std::snprintf(line, sizeof line,
                  "NOT FAITHFUL: %.2f %% of %llu timed events were more than %.2f us late "
                  "(allowed %.2f %%); p99 %.2f us, p99.9 %.2f us, max %.2f us; worst %s%s%s",
                  100.0 * t.all.fraction_beyond_tolerance(),
                  static_cast<unsigned long long>(t.all.count()), opt_.tolerance / 1e6,
                  100.0 * opt_.max_late_fraction, t.all.Percentile(0.99) / 1e6,
                  t.all.Percentile(0.999) / 1e6, t.all.max() / 1e6, t.worst_node.c_str(),
                  t.worst_port >= 0 ? "/p" : " (timers)",
                  t.worst_port >= 0 ? std::to_string(t.worst_port).c_str() : "");
  }
  j["verdict"] = line;
  return j;
}

}  // namespace rocefab
