#include "common/runtime/sim_runner.h"

#include <rte_prefetch.h>

#include <string>
#include <tuple>

#include "common/packet.h"

namespace rocefab {

class SimRunner::Env final : public NodeEnv {
 public:
  Env(SimRunner* r, uint32_t node) : r_(r), node_(node) {}
  void WakeTx(uint16_t port) override { r_->WakeTx(node_, port); }
  void ScheduleTimer(Time at, uint64_t cookie) override {
    r_->Push(at < r_->now_ ? r_->now_ : at, node_, 0, Kind::kTimer, cookie);
  }
  rte_mempool* pool() override { return r_->pool_; }

 private:
  SimRunner* r_;
  uint32_t node_;
};

SimRunner::SimRunner(rte_mempool* pool) : pool_(pool) {}

SimRunner::~SimRunner() {
  for (auto& node_ports : ports_) {
    for (PortState& ps : node_ports) {
      ps.inbound.ForEach([](const auto& e) { rte_pktmbuf_free(e.second); });
    }
  }
}

uint32_t SimRunner::AddNode(Node* node) {
  const auto idx = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(node);
  envs_.push_back(std::make_unique<Env>(this, idx));
  ports_.emplace_back(node->num_ports());
  node->Attach(envs_.back().get());
  return idx;
}

Status SimRunner::Connect(uint32_t a, uint16_t pa, uint32_t b, uint16_t pb, BitRate rate,
                          Time delay) {
  if (a >= nodes_.size() || b >= nodes_.size()) return Status::Error("connect: unknown node");
  if (pa >= ports_[a].size() || pb >= ports_[b].size()) {
    return Status::Error("connect: " + nodes_[a]->name() + " or " + nodes_[b]->name() +
                         " has no such port");
  }
  if (ports_[a][pa].linked || ports_[b][pb].linked) {
    return Status::Error("connect: port already linked");
  }
  if (rate <= 0 || delay < 0) return Status::Error("connect: rate must be > 0 and delay >= 0");
  for (auto [n, p, pn, pp] : {std::tuple{a, pa, b, pb}, std::tuple{b, pb, a, pa}}) {
    PortState& ps = ports_[n][p];
    ps.linked = true;
    ps.peer_node = pn;
    ps.peer_port = pp;
    ps.rate = rate;
    ps.delay = delay;
  }
  return Status();
}

Status SimRunner::SetLoss(uint32_t node, uint16_t port, const LossModel& loss) {
  if (node >= nodes_.size() || port >= ports_[node].size() || !ports_[node][port].linked) {
    return Status::Error("loss: no link at that node/port");
  }
  if (loss.rate < 0 || loss.rate > 1) return Status::Error("loss: rate must be 0..1");
  PortState& ps = ports_[node][port];
  if (loss.any()) {
    ps.loss = std::make_unique<LossState>(loss);
  } else {
    ps.loss.reset();
  }
  return Status();
}

void SimRunner::Push(Time t, uint32_t node, uint16_t port, Kind kind, uint64_t payload) {
  PushWithSeq(t, seq_++, node, port, kind, payload);
}

void SimRunner::PushWithSeq(Time t, uint64_t seq, uint32_t node, uint16_t port, Kind kind,
                            uint64_t payload) {
  Event e;
  e.t = t;
  e.seq = seq;
  e.node = node;
  e.port = port;
  e.kind = kind;
  e.cookie = payload;
  const int64_t bucket = t >> kFarShift;
  if (bucket >= (now_ >> kFarShift) + 2) {
    if (bucket != far_cached_bucket_) {
      far_cached_bucket_ = bucket;
      far_cached_ = &far_[bucket];
    }
    far_cached_->push_back(e);
    return;
  }
  events_.push(e);
}

void SimRunner::WakeTx(uint32_t node, uint16_t port) {
  PortState& ps = ports_[node][port];
  if (ps.busy) return;
  ps.busy = true;
  if (now_ < ps.wire_free || (now_ == ps.wire_free && cur_seq_ < ps.wire_free_seq)) {
    // The port had nothing left when it sent its last frame, which is still leaving.
    // It takes the sequence number reserved when the port drained, i.e. the place the
    // transmitter-free event would have had: the order of events is the same as if it had been
    // scheduled then.
    PushWithSeq(ps.wire_free, ps.wire_free_seq, node, port, Kind::kTxFree, 0);
    return;
  }
  wakes_.emplace_back(node, port);
}

void SimRunner::RunPendingWakes() {
  // OnTxFree may wake further ports (a dequeue that sends XON); they join the same list.
  for (size_t i = 0; i < wakes_.size(); ++i) {
    ++tx_free_events_;
    OnTxFree(wakes_[i].first, wakes_[i].second);
  }
  wakes_.clear();
}

void SimRunner::OnTxFree(uint32_t node, uint16_t port) {
  PortState& ps = ports_[node][port];
  rte_mbuf* m = nodes_[node]->Dequeue(now_, port);
  if (m == nullptr) {
    ps.busy = false;
    return;
  }
  if (!ps.linked) {
    rte_pktmbuf_free(m);
    ++unconnected_tx_drops_;
    Push(now_, node, port, Kind::kTxFree, 0);
    return;
  }
  const Time ser = TxTime(WireBytes(rte_pktmbuf_pkt_len(m)), ps.rate);
  ++ps.tx_frames;
  if (ps.loss) {
    if (ps.loss->Lose()) {
      ++lost_frames_;
      rte_pktmbuf_free(m);
      Push(now_ + ser, node, port, Kind::kTxFree, 0);
      return;
    }
  }
  PortState& peer = ports_[ps.peer_node][ps.peer_port];
  peer.inbound.push_back({now_ + ser + ps.delay, m});
  if (peer.inbound.size() == 1) {
    Push(now_ + ser + ps.delay, ps.peer_node, ps.peer_port, Kind::kArrive,
         reinterpret_cast<uintptr_t>(m));
  }
  if (nodes_[node]->TxDrained(port)) {
    // Nothing left to send: skip the transmitter-free event (it would find the port empty);
    // a WakeTx before now + ser schedules it then.
    ps.busy = false;
    ps.wire_free = now_ + ser;
    ps.wire_free_seq = seq_++;
    return;
  }
  Push(now_ + ser, node, port, Kind::kTxFree, 0);
}

void SimRunner::Prefetch(const Event& next) const {
  // The event after the current one is known once the current one is popped. Most events are
  // memory-bound (a frame's mbuf has usually left the caches since it was queued or sent), so
  // loading the next event's frame now overlaps that latency with the current event's work.
  if (next.kind == Kind::kArrive) {
    const auto* m = reinterpret_cast<const rte_mbuf*>(next.cookie);
    rte_prefetch0(
        ports_[next.node][next.port].inbound.second_slot());  // the next frame on that link
    const char* priv = reinterpret_cast<const char*>(m) + sizeof(rte_mbuf);
    rte_prefetch0(m);
    rte_prefetch0(priv);  // PacketMeta
    // Ethernet..BTH at the default data offset (buf_addr follows the private area).
    rte_prefetch0(priv + kMbufPrivSize + RTE_PKTMBUF_HEADROOM);
    rte_prefetch0(priv + kMbufPrivSize + RTE_PKTMBUF_HEADROOM + 56);
  } else if (next.kind == Kind::kTxFree) {
    nodes_[next.node]->PrefetchTx(next.port);
  }
}

void SimRunner::Run(Time until) {
  if (!started_) {
    started_ = true;
    for (Node* n : nodes_) n->Start(now_);
  }
  RunPendingWakes();  // ports woken by Start or between calls to Run
  for (;;) {
    if (!far_.empty() &&
        (events_.empty() || far_.begin()->first <= (events_.top().t >> kFarShift))) {
      auto first = far_.begin();
      for (const Event& fe : first->second) events_.push(fe);
      if (first->first == far_cached_bucket_) far_cached_bucket_ = -1;
      far_.erase(first);
      continue;
    }
    if (events_.empty()) break;
    const Event e = events_.top();
    if (e.t > until) break;
    if (events_.size() > max_pending_) max_pending_ = events_.size();
    events_.pop();
    if (!events_.empty()) Prefetch(events_.top());
    now_ = e.t;
    cur_seq_ = e.seq;
    ++events_executed_;
    switch (e.kind) {
      case Kind::kArrive: {
        PortState& ps = ports_[e.node][e.port];
        rte_mbuf* m = ps.inbound.pop_front().second;
        if (!ps.inbound.empty()) {
          Push(ps.inbound.front().first, e.node, e.port, Kind::kArrive,
               reinterpret_cast<uintptr_t>(ps.inbound.front().second));
        }
        ++frames_delivered_;
        if (tap_) tap_(now_, e.node, e.port, m);
        nodes_[e.node]->Receive(now_, e.port, m);
        break;
      }
      case Kind::kTxFree:
        ++tx_free_events_;
        OnTxFree(e.node, e.port);
        break;
      case Kind::kTimer:
        ++timer_events_;
        nodes_[e.node]->OnTimer(now_, e.cookie);
        break;
    }
    if (!wakes_.empty()) RunPendingWakes();
  }
  if (until != kTimeNever && now_ < until) now_ = until;
}

}  // namespace rocefab
