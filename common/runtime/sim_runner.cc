#include "common/runtime/sim_runner.h"

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <tuple>

#include "common/eal.h"
#include "common/packet.h"

namespace rocefab {

class SimRunner::Env final : public NodeEnv {
 public:
  Env(SimRunner* r, uint32_t node) : r_(r), node_(node) {}
  void WakeTx(uint16_t port) override { r_->WakeTx(node_, port); }
  void ScheduleTimer(Time at, uint64_t cookie) override {
    Part& p = r_->PartOf(node_);
    r_->Push(p, at < p.now ? p.now : at, r_->LocalKey(node_), node_, 0, Kind::kTimer, cookie);
  }
  rte_mempool* pool() override { return r_->pool_; }
  const WireModel& wire() const override { return *r_->wire_; }

 private:
  SimRunner* r_;
  uint32_t node_;
};

// Where the partition threads meet, twice per window (tens of thousands of times per run).
// Waiters spin first: a futex wake-up costs microseconds, a spin on a cache line about 0.1 us
// when each thread has a core. After kSpins they sleep on the generation word (futex through
// std::atomic::wait), so a thread that lost its CPU to another process does not leave the others
// burning theirs (with more threads than free CPUs, spinning and yielding made runs 20-35x
// slower). notify_all costs no system call while nobody sleeps (libstdc++ counts waiters). The
// last thread to arrive runs `done` before releasing the others, so values it publishes are
// read by all before anyone can publish again.
class SimRunner::Barrier {
 public:
  explicit Barrier(uint32_t n) : n_(n) {}
  template <class F>
  void Wait(F done) {
    const uint32_t gen = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      done();
      count_.store(0, std::memory_order_relaxed);
      gen_.store(gen + 1, std::memory_order_release);
      gen_.notify_all();
      return;
    }
    for (uint32_t spins = 0; spins < kSpins; ++spins) {
      if (gen_.load(std::memory_order_acquire) != gen) return;
      rte_pause();
    }
    while (gen_.load(std::memory_order_acquire) == gen) gen_.wait(gen, std::memory_order_acquire);
  }
  // Between runs: the partition threads sleep until the next Run (or the destructor).
  std::atomic<uint64_t> run_gen{0};

 private:
  static constexpr uint32_t kSpins = 1u << 12;  // 4-200 us, by the CPU's pause latency
  alignas(64) std::atomic<uint32_t> count_{0};
  alignas(64) std::atomic<uint32_t> gen_{0};
  uint32_t n_;
};

SimRunner::SimRunner(rte_mempool* pool) : pool_(pool) {
  parts_.push_back(std::make_unique<Part>());
  parts_[0]->outbox.resize(1);
}

SimRunner::~SimRunner() {
  if (!threads_.empty()) {
    stop_ = true;
    barrier_->run_gen.fetch_add(1, std::memory_order_release);
    barrier_->run_gen.notify_all();
    for (auto& t : threads_) t.join();
  }
  for (auto& node_ports : ports_) {
    for (PortState& ps : node_ports) {
      ps.inbound.ForEach([](const auto& e) { rte_pktmbuf_free(e.second); });
    }
  }
  for (auto& p : parts_) {
    for (auto& box : p->outbox) {
      for (const CrossFrame& c : box) rte_pktmbuf_free(c.m);
    }
  }
}

uint32_t SimRunner::AddNode(Node* node) {
  const auto idx = static_cast<uint32_t>(nodes_.size());
  if (idx >= kMaxNodes) {
    std::fprintf(stderr, "rocefab: a sim runner holds at most %u nodes\n", kMaxNodes);
    std::abort();
  }
  nodes_.push_back(node);
  envs_.push_back(std::make_unique<Env>(this, idx));
  ports_.emplace_back(node->num_ports());
  node_seq_.emplace_back();
  part_of_.push_back(parts_[0].get());
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
  if (rate.bps() <= 0 || delay < 0)
    return Status::Error("connect: rate must be > 0 and delay >= 0");
  if (started_ || parts_.size() > 1) {
    return Status::Error("connect: links are fixed once the runner is partitioned or running");
  }
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

Status SimRunner::SetPartitions(const std::vector<uint32_t>& part_of_node) {
  if (started_) return Status::Error("partitions: set them before the first Run");
  if (part_of_node.size() != nodes_.size()) {
    return Status::Error("partitions: " + std::to_string(part_of_node.size()) + " entries for " +
                         std::to_string(nodes_.size()) + " nodes");
  }
  if (parts_.size() > 1 || observers_) return Status::Error("partitions: already set");
  uint32_t n = 0;
  bool seen_observer = false;
  for (uint32_t i = 0; i < part_of_node.size(); ++i) {
    const uint32_t p = part_of_node[i];
    if (p == kObserver) {
      // No ports: an observer sends nothing (its wakes would have no thread to run them).
      if (nodes_[i]->num_ports() > 0) {
        return Status::Error("partitions: observer " + nodes_[i]->name() + " has ports");
      }
      seen_observer = true;
      continue;
    }
    if (seen_observer) {
      // On one partition an observer's event at time t runs after the events at t of nodes
      // with lower indices and before those of higher ones; between windows it runs after all.
      return Status::Error("partitions: node " + nodes_[i]->name() +
                           " comes after an observer; observers must be the last nodes added");
    }
    if (p >= 64) return Status::Error("partitions: at most 64, got " + std::to_string(p + 1));
    n = std::max(n, p + 1);
  }
  if (n == 0) n = 1;
  std::vector<int> members(n, 0);
  for (uint32_t p : part_of_node) {
    if (p != kObserver) ++members[p];
  }
  for (uint32_t p = 0; p < n; ++p) {
    if (members[p] == 0 && !nodes_.empty()) {
      return Status::Error("partitions: partition " + std::to_string(p) + " has no node");
    }
  }
  Time lookahead = kTimeNever;
  for (uint32_t a = 0; a < nodes_.size(); ++a) {
    for (uint16_t pa = 0; pa < ports_[a].size(); ++pa) {
      const PortState& ps = ports_[a][pa];
      if (!ps.linked || part_of_node[a] == part_of_node[ps.peer_node]) continue;
      if (ps.delay <= 0) {
        return Status::Error("partitions: the link " + nodes_[a]->name() + " port " +
                             std::to_string(pa) + " - " + nodes_[ps.peer_node]->name() +
                             " joins two partitions with zero propagation delay (no lookahead)");
      }
      lookahead = std::min(lookahead, ps.delay);
    }
  }
  // Events scheduled before the run (timers set up by nodes) move to their node's partition;
  // their keys do not depend on the partition.
  std::unique_ptr<Part> old = std::move(parts_[0]);
  parts_.clear();
  for (uint32_t p = 0; p < n; ++p) {
    parts_.push_back(std::make_unique<Part>());
    parts_.back()->id = p;
    parts_.back()->outbox.resize(n);
  }
  observers_.reset();
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    if (part_of_node[i] == kObserver) {
      if (!observers_) observers_ = std::make_unique<Part>();
      part_of_[i] = observers_.get();
    } else {
      part_of_[i] = parts_[part_of_node[i]].get();
    }
  }
  for (; !old->events.empty(); old->events.pop()) {
    const Event& e = old->events.top();
    Push(PartOf(e.node), e.t, e.key, e.node, e.port, e.kind, e.cookie);
  }
  for (const auto& [bucket, events] : old->far) {
    for (const Event& e : events)
      Push(PartOf(e.node), e.t, e.key, e.node, e.port, e.kind, e.cookie);
  }
  for (auto [node, port] : old->wakes) PartOf(node).wakes.emplace_back(node, port);
  lookahead_ = n > 1 ? lookahead : 0;
  if (n == 1 && observers_) {  // one partition: observers are ordinary nodes of it
    for (uint32_t i = 0; i < nodes_.size(); ++i) part_of_[i] = parts_[0].get();
    while (!observers_->events.empty()) {
      const Event e = observers_->events.top();
      observers_->events.pop();
      Push(*parts_[0], e.t, e.key, e.node, e.port, e.kind, e.cookie);
    }
    for (const auto& [bucket, events] : observers_->far) {
      for (const Event& e : events) Push(*parts_[0], e.t, e.key, e.node, e.port, e.kind, e.cookie);
    }
    observers_.reset();
  }
  return Status();
}

Status SimRunner::SetRanks(Ranks* ranks, std::vector<uint32_t> rank_of_part) {
  if (ranks_ != nullptr) return Status::Error("ranks: already set");
  if (started_) return Status::Error("ranks: set them before the first Run");
  if (ranks == nullptr || parts_.size() < 2) {
    return Status::Error("ranks: set at least two partitions first");
  }
  if (rank_of_part.size() != parts_.size()) {
    return Status::Error("ranks: " + std::to_string(rank_of_part.size()) + " entries for " +
                         std::to_string(parts_.size()) + " partitions");
  }
  const auto n = static_cast<uint32_t>(ranks->size());
  std::vector<int> parts_of_rank(n, 0);
  for (uint32_t r : rank_of_part) {
    if (r >= n) {
      return Status::Error("ranks: rank " + std::to_string(r) + " out of range 0.." +
                           std::to_string(n - 1));
    }
    ++parts_of_rank[r];
  }
  for (uint32_t r = 0; r < n; ++r) {
    if (parts_of_rank[r] == 0) {
      return Status::Error("ranks: rank " + std::to_string(r) + " has no partition");
    }
  }
  ranks_ = ranks;
  rank_of_part_ = std::move(rank_of_part);
  const auto me = static_cast<uint32_t>(ranks->rank());
  owned_part_.assign(parts_.size(), 0);
  for (size_t p = 0; p < parts_.size(); ++p) owned_part_[p] = rank_of_part_[p] == me;
  owned_node_.assign(nodes_.size(), 1);  // observers run everywhere
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    if (part_of_[i] != observers_.get()) owned_node_[i] = owned_part_[part_of_[i]->id];
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

uint64_t SimRunner::LocalKey(uint32_t node) {
  const uint64_t seq = node_seq_[node].v++;
  if (seq >= kOwnBit) {
    std::fprintf(stderr, "rocefab: node %s scheduled more than 2^39 events\n",
                 nodes_[node]->name().c_str());
    std::abort();
  }
  return (uint64_t{node} << kNodeShift) | kOwnBit | seq;
}

void SimRunner::Push(Part& p, Time t, uint64_t key, uint32_t node, uint16_t port, Kind kind,
                     uint64_t payload) {
  Event e;
  e.t = t;
  e.key = key;
  e.node = node;
  e.port = port;
  e.kind = kind;
  e.cookie = payload;
  const int64_t bucket = t >> kFarShift;
  if (bucket >= (p.now >> kFarShift) + 2) {
    if (bucket != p.far_cached_bucket) {
      p.far_cached_bucket = bucket;
      p.far_cached = &p.far[bucket];
    }
    p.far_cached->push_back(e);
    return;
  }
  p.events.push(e);
}

void SimRunner::WakeTx(uint32_t node, uint16_t port) {
  PortState& ps = ports_[node][port];
  if (ps.busy) return;
  ps.busy = true;
  Part& p = PartOf(node);
  if (p.now < ps.wire_free || (p.now == ps.wire_free && p.cur_key < ps.wire_free_key)) {
    // The port had nothing left when it sent its last frame, which is still leaving.
    // It takes the key reserved when the port drained, i.e. the place the transmitter-free
    // event would have had: the order of events is the same as if it had been scheduled then.
    Push(p, ps.wire_free, ps.wire_free_key, node, port, Kind::kTxFree, 0);
    return;
  }
  p.wakes.emplace_back(node, port);
}

void SimRunner::RunPendingWakes(Part& p) {
  if (!OwnedPart(p)) {  // another rank's: its node does not run here (an observer's wake)
    p.wakes.clear();
    return;
  }
  // OnTxFree may wake further ports (a dequeue that sends XON); they join the same list.
  for (size_t i = 0; i < p.wakes.size(); ++i) {
    ++p.tx_free_events;
    OnTxFree(p, p.wakes[i].first, p.wakes[i].second);
  }
  p.wakes.clear();
}

void SimRunner::OnTxFree(Part& p, uint32_t node, uint16_t port) {
  PortState& ps = ports_[node][port];
  rte_mbuf* m = nodes_[node]->Dequeue(p.now, port);
  if (m == nullptr) {
    ps.busy = false;
    return;
  }
  const Time now = p.now;
  if (!ps.linked) {
    rte_pktmbuf_free(m);
    ++p.unconnected_tx_drops;
    Push(p, now, LocalKey(node), node, port, Kind::kTxFree, 0);
    return;
  }
  const Time ser = TxTime(wire_->FrameBytes(m), ps.rate);
  ++ps.tx_frames;
  if (ps.loss) {
    if (ps.loss->Lose(m)) {
      ++p.lost_frames;
      rte_pktmbuf_free(m);
      Push(p, now + ser, LocalKey(node), node, port, Kind::kTxFree, 0);
      return;
    }
  }
  const Time arrive = now + ser + ps.delay;
  Part& q = PartOf(ps.peer_node);
  if (&q == &p) {
    PortState& peer = ports_[ps.peer_node][ps.peer_port];
    peer.inbound.push_back({arrive, m});
    if (peer.inbound.size() == 1) {
      Push(p, arrive, ArriveKey(ps.peer_node, ps.peer_port), ps.peer_node, ps.peer_port,
           Kind::kArrive, reinterpret_cast<uintptr_t>(m));
    }
  } else {
    // arrive >= now + lookahead: after the end of this window, when the peer's partition
    // takes it over (MergeInbox).
    p.outbox[q.id].push_back(CrossFrame{arrive, ps.peer_node, ps.peer_port, m});
    ++p.cross_frames;
  }
  if (nodes_[node]->TxDrained(port)) {
    // Nothing left to send: skip the transmitter-free event (it would find the port empty);
    // a WakeTx before now + ser schedules it then.
    ps.busy = false;
    ps.wire_free = now + ser;
    ps.wire_free_key = LocalKey(node);
    return;
  }
  Push(p, now + ser, LocalKey(node), node, port, Kind::kTxFree, 0);
}

void SimRunner::MergeInbox(Part& q) {
  for (auto& from : parts_) {
    if (from.get() == &q) continue;
    auto& box = from->outbox[q.id];
    for (const CrossFrame& c : box) {
      if (c.t < q.now) {  // the window was longer than the lookahead: a runner bug
        std::fprintf(stderr,
                     "rocefab: sim runner: frame for %s due at %lld ps reached its "
                     "partition at %lld ps\n",
                     nodes_[c.node]->name().c_str(), static_cast<long long>(c.t),
                     static_cast<long long>(q.now));
        std::abort();
      }
      PortState& ps = ports_[c.node][c.port];
      ps.inbound.push_back({c.t, c.m});
      if (ps.inbound.size() == 1) {
        Push(q, c.t, ArriveKey(c.node, c.port), c.node, c.port, Kind::kArrive,
             reinterpret_cast<uintptr_t>(c.m));
      }
    }
    box.clear();
  }
}

namespace {

// One frame crossing ranks: its header, then PacketMeta, then the frame's bytes.
struct WireFrameHeader {
  Time t;
  uint32_t node;
  uint16_t port;
  uint8_t from_part, to_part;
  uint32_t len;
};

template <class T>
void Append(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

void SimRunner::ExchangeAcrossRanks() {
  std::vector<std::string> out(static_cast<size_t>(ranks_->size()));
  std::vector<uint8_t> copy;
  // This rank's next event once every frame sent in the window has reached its partition: the
  // ranks' smallest is where the next window starts, unless an observer acts before it.
  Time next = kTimeNever;
  for (auto& p : parts_) {
    if (!OwnedPart(*p)) continue;
    next = std::min(next, NextTime(*p));
    for (const auto& box : p->outbox) {
      for (const CrossFrame& c : box) next = std::min(next, c.t);
    }
  }
  for (auto& from : parts_) {
    if (!OwnedPart(*from)) continue;
    for (uint32_t to = 0; to < parts_.size(); ++to) {
      if (owned_part_[to]) continue;
      auto& box = from->outbox[to];
      std::string& msg = out[rank_of_part_[to]];
      for (const CrossFrame& c : box) {
        const uint32_t len = rte_pktmbuf_pkt_len(c.m);
        copy.resize(len);
        const void* data = rte_pktmbuf_read(c.m, 0, len, copy.data());
        Append(&msg, WireFrameHeader{c.t, c.node, c.port, static_cast<uint8_t>(from->id),
                                     static_cast<uint8_t>(to), len});
        msg.append(reinterpret_cast<const char*>(Meta(c.m)), sizeof(PacketMeta));
        msg.append(static_cast<const char*>(data), len);
        ++cross_rank_frames_;
        cross_rank_bytes_ += len;
        rte_pktmbuf_free(c.m);
      }
      box.clear();
    }
  }
  const std::vector<std::string> in = ranks_->AllToAllMin(std::move(out), &next);
  next_known_ = true;
  known_next_ = next;
  for (size_t r = 0; r < in.size(); ++r) {
    if (static_cast<int>(r) == ranks_->rank()) continue;
    const std::string& msg = in[r];
    for (size_t off = 0; off < msg.size();) {
      WireFrameHeader h;
      if (msg.size() - off < sizeof h + sizeof(PacketMeta)) break;
      std::memcpy(&h, msg.data() + off, sizeof h);
      off += sizeof h;
      if (h.from_part >= parts_.size() || h.to_part >= parts_.size() || !owned_part_[h.to_part] ||
          h.node >= nodes_.size() || msg.size() - off < sizeof(PacketMeta) + h.len) {
        std::fprintf(stderr, "rocefab: sim runner: rank %zu sent a malformed frame record\n", r);
        std::abort();
      }
      rte_mbuf* m = AllocMbuf(pool_);
      char* dst = m == nullptr ? nullptr : rte_pktmbuf_append(m, static_cast<uint16_t>(h.len));
      if (dst == nullptr || h.len > UINT16_MAX) {
        std::fprintf(
            stderr,
            "rocefab: sim runner: no frame buffer for a %u-byte frame from rank %zu: the "
            "pool is exhausted (a larger one: --set sim.mbufs=N) or its frames too small\n",
            h.len, r);
        std::abort();
      }
      std::memcpy(Meta(m), msg.data() + off, sizeof(PacketMeta));
      off += sizeof(PacketMeta);
      std::memcpy(dst, msg.data() + off, h.len);
      off += h.len;
      parts_[h.from_part]->outbox[h.to_part].push_back(CrossFrame{h.t, h.node, h.port, m});
    }
  }
}

bool SimRunner::AnyDue(Time t) { return ranks_->Min(t) != kTimeNever; }

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

inline bool SimRunner::MoveDueFarBucket(Part& p) {
  if (p.far.empty() ||
      (!p.events.empty() && p.far.begin()->first > (p.events.top().t >> kFarShift))) {
    return false;
  }
  auto first = p.far.begin();
  for (const Event& fe : first->second) p.events.push(fe);
  if (first->first == p.far_cached_bucket) p.far_cached_bucket = -1;
  p.far.erase(first);
  return true;
}

Time SimRunner::NextTime(Part& p) {
  while (MoveDueFarBucket(p)) {
  }
  return p.events.empty() ? kTimeNever : p.events.top().t;
}

void SimRunner::RunEvents(Part& p, Time last) {
  for (;;) {
    if (MoveDueFarBucket(p)) continue;
    if (p.events.empty()) break;
    const Event e = p.events.top();
    if (e.t > last) break;
    if (p.events.size() > p.max_pending) p.max_pending = p.events.size();
    p.events.pop();
    if (!p.events.empty()) Prefetch(p.events.top());
    p.now = e.t;
    p.cur_key = e.key;
    ++p.events_executed;
    switch (e.kind) {
      case Kind::kArrive: {
        PortState& ps = ports_[e.node][e.port];
        rte_mbuf* m = ps.inbound.pop_front().second;
        if (!ps.inbound.empty()) {
          Push(p, ps.inbound.front().first, e.key, e.node, e.port, Kind::kArrive,
               reinterpret_cast<uintptr_t>(ps.inbound.front().second));
        }
        ++p.frames_delivered;
        if (tap_) tap_(e.t, e.node, e.port, m);
        nodes_[e.node]->Receive(e.t, e.port, m);
        break;
      }
      case Kind::kTxFree:
        ++p.tx_free_events;
        OnTxFree(p, e.node, e.port);
        break;
      case Kind::kTimer:
        ++p.timer_events;
        nodes_[e.node]->OnTimer(e.t, e.cookie);
        break;
    }
    if (!p.wakes.empty()) RunPendingWakes(p);
  }
}

void SimRunner::PartLoop(Part& p, Time until) noexcept {
  for (;;) {
    p.next.store(NextTime(p), std::memory_order_relaxed);
    const uint64_t w0 = rte_rdtsc();
    barrier_->Wait([this, until] {
      Time t = kTimeNever;
      for (const auto& q : parts_) {
        if (OwnedPart(*q)) t = std::min(t, q->next.load(std::memory_order_relaxed));
      }
      if (ranks_ != nullptr) {
        // The exchange at the last window's end gave every rank the next start, unless an
        // observer ran since (it may have made events due earlier): then one more round.
        t = next_known_ ? known_next_ : ranks_->Min(t);
        next_known_ = false;
      }
      const Time o = observers_ ? NextTime(*observers_) : kTimeNever;
      if (std::min(t, o) == kTimeNever || std::min(t, o) > until) {
        window_last_ = -1;
        return;
      }
      // Every frame sent at or after t arrives at t + lookahead or later. The window ends at
      // the next observer event (which runs after it) at the latest.
      Time last = t == kTimeNever || until - t < lookahead_ ? until : t + lookahead_ - 1;
      window_last_ = std::min(last, o);
      ++windows_;
    });
    const uint64_t w1 = rte_rdtsc();
    const Time last = window_last_;
    if (last < 0) break;  // (the final wait is not counted: Run's caller may be reading)
    p.wait_cycles += w1 - w0;
    RunEvents(p, last);
    const uint64_t w2 = rte_rdtsc();
    p.busy_cycles += w2 - w1;
    barrier_->Wait([this, last] {
      if (ranks_ != nullptr) ExchangeAcrossRanks();
      if (window_end_) window_end_();
      if (observers_) RunObserverEvents(last);
    });
    p.wait_cycles += rte_rdtsc() - w2;
    MergeInbox(p);
  }
}

void SimRunner::RunObserverEvents(Time last) {
  Part& o = *observers_;
  while (NextTime(o) <= last) {
    const Event e = o.events.top();
    o.events.pop();
    for (auto& p : parts_) {  // every partition has run its events up to e.t (window end)
      p->now = e.t;
      p->cur_key = e.key;
    }
    o.now = e.t;
    o.cur_key = e.key;
    ++o.events_executed;
    ++o.timer_events;  // observers have no ports: timers only
    next_known_ = false;
    nodes_[e.node]->OnTimer(e.t, e.cookie);
    bool due = false;
    for (auto& p : parts_) {
      if (!p->wakes.empty()) RunPendingWakes(*p);
      due = due || (OwnedPart(*p) && NextTime(*p) <= e.t);
    }
    if (ranks_ != nullptr) due = AnyDue(due ? e.t : kTimeNever);
    // The observer made a node event due at its own time (a timer clamped to now): on one
    // partition that event runs before any later observer event at this time (node keys are
    // below observer keys), so the partitions get a window [e.t, e.t] first.
    if (due) return;
  }
}

void SimRunner::Worker(uint32_t part) {
  // An lcore id gives this thread its own mempool cache (frames allocated and freed without
  // touching the pool's shared ring); without one it still works, through the ring.
  const bool registered = rte_thread_register() == 0;
  uint64_t seen = 0;
  for (;;) {
    barrier_->run_gen.wait(seen, std::memory_order_acquire);
    seen = barrier_->run_gen.load(std::memory_order_acquire);
    if (stop_) break;
    PartLoop(*parts_[part], until_);
  }
  if (registered) rte_thread_unregister();
}

void SimRunner::RunParallel(Time until) {
  std::vector<uint32_t> mine;  // this rank's partitions: the first runs on this thread
  for (uint32_t i = 0; i < parts_.size(); ++i) {
    if (OwnedPart(*parts_[i])) mine.push_back(i);
  }
  if (!barrier_) {
    barrier_ = std::make_unique<Barrier>(static_cast<uint32_t>(mine.size()));
    try {
      for (size_t k = 1; k < mine.size(); ++k) {
        threads_.emplace_back(&SimRunner::Worker, this, mine[k]);
      }
    } catch (const std::system_error& e) {
      // The barrier counts every partition: running with fewer threads would hang.
      std::fprintf(stderr, "rocefab: sim runner: cannot start partition threads: %s\n", e.what());
      std::abort();
    }
  }
  until_ = until;
  barrier_->run_gen.fetch_add(1, std::memory_order_release);
  barrier_->run_gen.notify_all();
  PartLoop(*parts_[mine[0]], until);
}

void SimRunner::Run(Time until) {
  if (!started_) {
    started_ = true;
    for (uint32_t i = 0; i < nodes_.size(); ++i) {
      if (owned(i)) nodes_[i]->Start(now_);
    }
  }
  for (auto& p : parts_) RunPendingWakes(*p);  // ports woken by Start or between calls to Run
  next_known_ = false;
  if (parts_.size() == 1) {
    RunEvents(*parts_[0], until);
  } else {
    for (auto& p : parts_) {
      if (OwnedPart(*p)) MergeInbox(*p);
    }
    RunParallel(until);
  }
  Time last = now_;
  for (const auto& p : parts_) {
    if (OwnedPart(*p)) last = std::max(last, p->now);
  }
  if (observers_) last = std::max(last, observers_->now);
  if (ranks_ != nullptr) last = ranks_->Max(last);
  now_ = until != kTimeNever && last < until ? until : last;
  for (auto& p : parts_) {
    p->now = now_;
    p->cur_key = UINT64_MAX;  // every event at now_ has run
  }
  if (observers_) {
    observers_->now = now_;
    observers_->cur_key = UINT64_MAX;
  }
}

bool SimRunner::idle() const {
  for (const auto& p : parts_) {
    if (OwnedPart(*p) && (!p->events.empty() || !p->far.empty())) return false;
  }
  return !observers_ || (observers_->events.empty() && observers_->far.empty());
}

uint64_t SimRunner::Sum(uint64_t Part::*field) const {
  uint64_t s = observers_ && (ranks_ == nullptr || ranks_->rank() == 0) ? (*observers_).*field : 0;
  for (const auto& p : parts_) s += (*p).*field;  // other ranks' partitions count 0 here
  return s;
}

uint64_t SimRunner::events_executed() const { return Sum(&Part::events_executed); }
uint64_t SimRunner::tx_free_events() const { return Sum(&Part::tx_free_events); }
uint64_t SimRunner::timer_events() const { return Sum(&Part::timer_events); }
uint64_t SimRunner::frames_delivered() const { return Sum(&Part::frames_delivered); }
uint64_t SimRunner::unconnected_tx_drops() const { return Sum(&Part::unconnected_tx_drops); }
uint64_t SimRunner::lost_frames() const { return Sum(&Part::lost_frames); }
uint64_t SimRunner::cross_partition_frames() const { return Sum(&Part::cross_frames); }

std::vector<SimRunner::PartitionLoad> SimRunner::partition_load() const {
  std::vector<PartitionLoad> v;
  if (parts_.size() < 2) return v;
  const double hz = static_cast<double>(rte_get_tsc_hz());
  for (const auto& p : parts_) {
    if (!OwnedPart(*p)) continue;  // another rank's
    v.push_back({p->events_executed, static_cast<double>(p->busy_cycles) / hz,
                 static_cast<double>(p->wait_cycles) / hz});
  }
  return v;
}

size_t SimRunner::max_pending_events() const {
  size_t m = 0;
  for (const auto& p : parts_) m = std::max(m, p->max_pending);
  return m;
}

}  // namespace rocefab
