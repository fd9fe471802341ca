#include "common/runtime/live_runner.h"

#include <pthread.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_ring.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>

#include "common/sanitizer.h"
#include "common/wire/roce_headers.h"

namespace rocefab {
namespace {

// A frame into another partition's ring (single producer): false if the ring is full.
bool CrossEnqueue(rte_ring* r, rte_mbuf* m) {
  TsanReleasing(r);
  return rte_ring_sp_enqueue(r, m) == 0;
}

// Up to 32 frames out of this partition's ring (single consumer) into `out`: how many.
unsigned CrossDequeue(rte_ring* r, void** out) {
  const unsigned got = rte_ring_sc_dequeue_burst(r, out, 32, nullptr);
  if (got > 0) TsanAcquired(r);
  return got;
}

}  // namespace

class LiveRunner::Env final : public NodeEnv {
 public:
  Env(LiveRunner* r, uint32_t node) : r_(r), node_(node) {}
  void WakeTx(uint16_t port) override {
    PortState& ps = r_->ports_[node_][port];
    if (ps.wake) return;  // a wire slot is pending already
    ps.wake = true;
    // The frame became ready at the node's (exact) time of the event it is handling. The
    // slot's key follows the sim's rule (SimRunner::WakeTx): while the last frame is still
    // leaving, the key reserved when it was pulled; otherwise right after this event.
    const Time now = r_->node_now_[node_];
    ps.ready_at = now;
    Part& part = r_->PartOf(node_);
    if (now > ps.next_free || (now == ps.next_free && part.cur_key >= ps.wire_key)) {
      ps.wire_key = part.cur_key;
      ps.wire_sub = ++part.wake_sub;
    } else {
      ps.wire_sub = 0;
    }
    Refresh(ps);
  }
  void ScheduleTimer(Time at, uint64_t cookie) override {
    // A time in the past fires at the node's current time, as in the sim. The heap is the
    // node's partition's (an observer's: the Loop thread's own).
    const Timer t{std::max(at, r_->node_now_[node_]), r_->LocalKey(node_), node_, cookie};
    if (r_->part_of_[node_] == kObserver) {
      r_->observer_timers_.push(t);
    } else {
      r_->parts_[r_->part_of_[node_]]->timers.push(t);
    }
  }
  rte_mempool* pool() override { return r_->pool_; }
  const WireModel& wire() const override { return *r_->wire_; }

 private:
  LiveRunner* r_;
  uint32_t node_;
};

LiveRunner::LiveRunner(rte_mempool* pool, LiveRunnerOptions opt) : pool_(pool), opt_(opt) {
  parts_.push_back(std::make_unique<Part>(opt_.tolerance));
}

LiveRunner::~LiveRunner() {
  // Frames still in the cross-partition rings; MbufFifo members free the rest.
  for (auto& node_ports : ports_) {
    for (PortState& ps : node_ports) {
      if (ps.cross_in == nullptr) continue;
      void* m[32];
      unsigned got;
      while ((got = CrossDequeue(ps.cross_in, m)) > 0) {
        for (unsigned i = 0; i < got; ++i) rte_pktmbuf_free(static_cast<rte_mbuf*>(m[i]));
      }
    }
  }
  for (void* mem : ring_mem_) std::free(mem);
}

uint32_t LiveRunner::AddNode(Node* node) {
  const auto idx = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(node);
  envs_.push_back(std::make_unique<Env>(this, idx));
  ports_.emplace_back(node->num_ports());
  part_of_.push_back(0);
  parts_[0]->nodes.push_back(idx);
  node_timer_late_.push_back(0);
  node_timer_max_.push_back(0);
  node_timer_max_at_.push_back(0);
  node_cycles_.push_back(0);
  node_seq_.push_back(0);
  node_now_.push_back(0);
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
  if (rate.bps() <= 0 || delay < 0)
    return Status::Error("live connect: rate must be > 0, delay >= 0");
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

Status LiveRunner::AttachEthdev(uint32_t n, uint16_t p, uint16_t ethdev, BitRate rate,
                                Time wire_delay) {
  if (n >= nodes_.size() || p >= ports_[n].size())
    return Status::Error("attach: unknown node/port");
  if (ports_[n][p].kind != PortState::Kind::kNone) return Status::Error("attach: port in use");
  if (rate.bps() <= 0) return Status::Error("attach: rate must be > 0");
  ports_[n][p].kind = PortState::Kind::kEthdev;
  ports_[n][p].ethdev = ethdev;
  ports_[n][p].rate = rate;
  ports_[n][p].emulate_wire = wire_delay >= 0;
  ports_[n][p].delay = std::max<Time>(wire_delay, 0);
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

Status LiveRunner::SetPartitions(const std::vector<uint32_t>& part_of_node) {
  if (partitioned_ || looped_) return Status::Error("partitions: set once, before Loop");
  if (part_of_node.size() != nodes_.size()) {
    return Status::Error("partitions: " + std::to_string(part_of_node.size()) + " entries for " +
                         std::to_string(nodes_.size()) + " nodes");
  }
  uint32_t parts = 0;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const uint32_t k = part_of_node[n];
    if (k == kObserver) {
      if (!ports_[n].empty()) {
        return Status::Error("partitions: observer " + nodes_[n]->name() + " has ports");
      }
      continue;
    }
    if (k >= 64) return Status::Error("partitions: partition " + std::to_string(k) + " > 63");
    parts = std::max(parts, k + 1);
  }
  if (parts == 0) return Status::Error("partitions: no node in any partition");
  std::vector<std::unique_ptr<Part>> fresh;
  for (uint32_t k = 0; k < parts; ++k) fresh.push_back(std::make_unique<Part>(opt_.tolerance));
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (part_of_node[n] != kObserver)
      fresh[part_of_node[n]]->nodes.push_back(static_cast<uint32_t>(n));
  }
  for (uint32_t k = 0; k < parts; ++k) {
    if (fresh[k]->nodes.empty())
      return Status::Error("partitions: partition " + std::to_string(k) + " is empty");
  }
  // A ring into every port whose link comes from another partition: one producer (the peer's
  // partition), one consumer (this one). Sized for a burst of minimum-size frames at 400 Gb/s
  // over 100 us of a descheduled consumer; a full ring holds frames back at the sender, in order.
  constexpr unsigned kRingSize = 8192;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (size_t p = 0; p < ports_[n].size(); ++p) {
      PortState& ps = ports_[n][p];
      if (ps.kind != PortState::Kind::kInternal || part_of_node[n] == part_of_node[ps.peer_node])
        continue;
      const ssize_t bytes = rte_ring_get_memsize(kRingSize);
      void* mem = std::aligned_alloc(RTE_CACHE_LINE_SIZE,
                                     (static_cast<size_t>(bytes) + RTE_CACHE_LINE_SIZE - 1) /
                                         RTE_CACHE_LINE_SIZE * RTE_CACHE_LINE_SIZE);
      if (mem == nullptr) return Status::Error("partitions: out of memory for a link ring");
      ring_mem_.push_back(mem);
      auto* r = static_cast<rte_ring*>(mem);
      const std::string name = "lr" + std::to_string(n) + "_" + std::to_string(p);
      if (rte_ring_init(r, name.c_str(), kRingSize, RING_F_SP_ENQ | RING_F_SC_DEQ) != 0) {
        return Status::Error("partitions: rte_ring_init failed for " + name);
      }
      ps.cross_in = r;
    }
  }
  // Timers the nodes asked for before (while the fabric was built: posts, first probes) move to
  // their node's partition, or to the observers' heap.
  auto& before = parts_[0]->timers;
  while (!before.empty()) {
    const Timer t = before.top();  // its key stays: the order is the sim's on any partitioning
    before.pop();
    if (part_of_node[t.node] == kObserver) {
      observer_timers_.push(t);
    } else {
      fresh[part_of_node[t.node]]->timers.push(t);
    }
  }
  parts_ = std::move(fresh);
  part_of_ = part_of_node;
  partitioned_ = true;
  return Status();
}

uint64_t LiveRunner::lost_frames() const {
  uint64_t n = 0;
  for (const auto& part : parts_) n += part->lost_frames;
  return n;
}

uint64_t LiveRunner::idle_sleeps() const {
  uint64_t n = 0;
  for (const auto& part : parts_) n += part->idle_sleeps;
  return n;
}

void LiveRunner::Tap(const ArriveTap& tap, Time now, uint32_t n, uint16_t p, const rte_mbuf* m) {
  if (parts_.size() == 1) return tap(now, n, p, m);
  while (tap_lock_.test_and_set(std::memory_order_acquire)) rte_pause();
  tap(now, n, p, m);
  tap_lock_.clear(std::memory_order_release);
}

namespace {

// a + b for times that may be kTimeNever (>= 0 each): kTimeNever instead of overflowing.
// Replay converts the TSC to runner time once per this many events (a 128-bit division).
constexpr uint32_t kClockEvery = 16;

Time SatAdd(Time a, Time b) { return a > kTimeNever - b ? kTimeNever : a + b; }

// EtherType 0x8808 (MAC control: 802.3x PAUSE and 802.1Qbb PFC) at offset 12.
bool IsPfcFrame(const rte_mbuf* m) {
  if (rte_pktmbuf_data_len(m) < 14) return false;
  const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
  return d[12] == 0x88 && d[13] == 0x08;
}

}  // namespace

Status LiveRunner::StopAt(Time end) {
  if (looped_) return Status::Error("StopAt: set before Loop");
  if (end < 0) return Status::Error("StopAt: the end must be >= 0 ps");
  for (const auto& node_ports : ports_) {
    for (const PortState& ps : node_ports) {
      if (ps.kind == PortState::Kind::kEthdev) {
        return Status::Error("StopAt: the fabric has an ethdev port (its run ends by the clock)");
      }
    }
  }
  end_ = end;
  return Status();
}

std::chrono::steady_clock::time_point LiveRunner::WaitEpoch() const {
  epoch_set_.wait(false, std::memory_order_acquire);
  return epoch_;
}

Time LiveRunner::TscTime(uint64_t tsc) const {
  const uint64_t d = tsc - tsc0_;
  // ps = d * ps_per_tick, in 32.32 fixed point: a multiply, no 128-bit division per reading.
  return static_cast<Time>((static_cast<unsigned __int128>(d) * ps_per_tick_q32_) >> 32);
}

void LiveRunner::SetTscHz(uint64_t hz) {
  tsc_hz_ = hz;
  ps_per_tick_q32_ = static_cast<uint64_t>((static_cast<unsigned __int128>(kSec) << 32) /
                                           std::max<uint64_t>(hz, 1));
}

Time LiveRunner::Now() const { return TscTime(rte_rdtsc()); }

void LiveRunner::ReleaseHeld(PortState& ps, Time now, Time* next_event) {
  while (!ps.tx_hold.empty() && Meta(ps.tx_hold.Front())->deliver_at <= now)
    ps.tx_backlog.Push(ps.tx_hold.Pop());
  if (!ps.tx_hold.empty())
    *next_event = std::min(*next_event, Meta(ps.tx_hold.Front())->deliver_at);
}

void LiveRunner::FlushEthdevTx(PortState& ps) {
  while (!ps.tx_backlog.empty()) {
    rte_mbuf* burst[32];
    uint16_t k = 0;
    while (k < 32 && !ps.tx_backlog.empty()) burst[k++] = ps.tx_backlog.Pop();
    const uint16_t sent = rte_eth_tx_burst(ps.ethdev, 0, burst, k);
    if (sent < k) {  // put back what the PMD refused, in order, ahead of anything newer
      MbufFifo rest;
      for (uint16_t i = sent; i < k; ++i) rest.Push(burst[i]);
      while (!ps.tx_backlog.empty()) rest.Push(ps.tx_backlog.Pop());
      ps.tx_backlog = std::move(rest);
      return;
    }
  }
}

bool LiveRunner::Intake(Part& part, PortState& ps, Time now, Time* next_event) {
  bool worked = false;
  // Whether the port's two due slots may have moved (a new head of the delay line, a wire
  // that the PMD blocked or unblocked): only then is the heap touched. Everything else that
  // moves them refreshes where it happens, so an idle port costs no heap work per iteration.
  bool changed = false;
  if (ps.cross_in != nullptr) {  // frames from another partition join the delay line
    void* in[32];
    unsigned got;
    while ((got = CrossDequeue(ps.cross_in, in)) > 0) {
      changed |= ps.inbound.empty();
      for (unsigned i = 0; i < got; ++i) ps.inbound.Push(static_cast<rte_mbuf*>(in[i]));
      part.received += got;
    }
  }
  if (!ps.cross_backlog.empty()) {  // frames for another partition that did not fit, in order
    PortState& peer = ports_[ps.peer_node][ps.peer_port];
    while (!ps.cross_backlog.empty() && CrossEnqueue(peer.cross_in, ps.cross_backlog.Front())) {
      ps.cross_backlog.Pop();
      worked = true;
    }
    if (!ps.cross_backlog.empty()) *next_event = std::min(*next_event, now + kUs);
  }
  if (ps.kind == PortState::Kind::kEthdev) {
    const bool was_blocked = ps.tx_blocked;
    ps.tx_blocked = false;
    if (!ps.tx_backlog.empty()) {
      const size_t before = ps.tx_backlog.size();
      FlushEthdevTx(ps);
      worked |= ps.tx_backlog.size() < before;
      // The PMD is full: no new wire slot on this port until it takes what it has.
      ps.tx_blocked = !ps.tx_backlog.empty();
      if (ps.tx_blocked) *next_event = std::min(*next_event, now + kUs);
    }
    changed |= ps.tx_blocked != was_blocked;
  }
  if (changed) Refresh(ps);
  return worked;
}

// One wire slot of node n, port p: the slot is exact, it starts when the previous frame ends
// (busy period) or, after an idle period, when the node made the frame ready (the exact time
// of the event it was handling); a late loop may start it up to opt_.catch_up in the past, so
// delivery times stay exact and the long-run rate is the link rate whatever the loop's jitter.
// Lateness beyond that shifts the schedule (and is recorded as a slip).
void LiveRunner::PullOne(Part& part, uint32_t n, uint16_t p, Time now) {
  PortState& ps = ports_[n][p];
  const Time due = WireDue(ps);
  const Time start = std::max(due, now - node_catch_up_[n]);
  const Time slip = start - due;  // > 0: beyond the catch-up window, the schedule moves
  const Time told = NodeTime(part, n, start);
  rte_mbuf* m = nodes_[n]->Dequeue(told, p);
  if (m == nullptr) {
    ps.wake = false;
    ps.idle = true;  // the wire went idle: the next frame's slot starts when it is ready
    ps.wire_key = ps.wire_sub = 0;  // nothing reserved (the sim's port is not busy either)
    Refresh(ps);
    return;
  }
  // The slot after this frame: the node's next own key, taken here as the sim takes it for
  // its transmitter-free event.
  ps.wire_key = LocalKey(n);
  ps.wire_sub = 0;
  RecordPort(part, part.wire, ps, now - due, Deviation(n, now, due, told));
  if (slip > 0) {
    ps.slipped += slip;
    ++part.slips;
  }
  ps.idle = false;
  if (IsPfcFrame(m)) part.pfc_reaction.Record(std::max(start, now) - Meta(m)->enqueue_time);
  ps.next_free = start + TxTime(wire_->FrameBytes(m), ps.rate);
  if (nodes_[n]->TxDrained(p)) {
    // Nothing left to send: no slot (it would find the port empty); a WakeTx before the
    // wire frees takes the key just reserved, as in the sim.
    ps.wake = false;
    ps.idle = true;
  }
  Refresh(ps);  // once for both changes (a heap update was ~18 % of a saturated loop)
  if (ps.loss && ps.loss->Lose(m)) {  // lost on the wire: it used the wire time
    ++part.lost_frames;
    rte_pktmbuf_free(m);
    return;
  }
  switch (ps.kind) {
    case PortState::Kind::kInternal: {
      Meta(m)->deliver_at = ps.next_free + ps.delay;
      PortState& peer = ports_[ps.peer_node][ps.peer_port];
      if (peer.cross_in == nullptr) {
        peer.inbound.Push(m);  // same partition
        if (peer.inbound.size() == 1) Refresh(peer);
      } else if (++part.sent, !ps.cross_backlog.empty() || !CrossEnqueue(peer.cross_in, m)) {
        ps.cross_backlog.Push(m);  // the ring is full: keep the order, retry next iteration
      }
      break;
    }
    case PortState::Kind::kEthdev:
      // The frame leaves the process: its bytes must be whole (an emulated NIC may have left
      // the ICRC to be computed, FabricOptions::defer_icrc).
      FinalizeIcrc(m);
      if (depart_tap_) Tap(depart_tap_, ps.next_free + ps.delay, n, p, m);
      if (ps.emulate_wire) {
        Meta(m)->deliver_at = ps.next_free + ps.delay;  // handed over at its last bit
        ps.tx_hold.Push(m);
      } else {
        ps.tx_backlog.Push(m);  // sent in bursts at the end of the iteration
      }
      break;
    case PortState::Kind::kNone:
      rte_pktmbuf_free(m);
      break;
  }
}

void LiveRunner::DeliverOne(Part& part, uint32_t n, uint16_t p, Time now) {
  PortState& ps = ports_[n][p];
  rte_mbuf* m = ps.inbound.Pop();
  Refresh(ps);
  const Time exact = Meta(m)->deliver_at;
  const Time at = NodeTime(part, n, exact);
  RecordPort(part, part.delivery, ps, now - exact, Deviation(n, now, exact, at));
  if (tap_) Tap(tap_, at, n, p, m);  // the frame's model time, as the sim's captures
  nodes_[n]->Receive(at, p, m);
}

void LiveRunner::RecordTimer(Part& part, uint32_t n, Time late, Time dev) {
  part.timer.Record(late);
  part.deviation.Record(dev);
  if (dev > opt_.tolerance) ++node_timer_late_[n];
  if (dev > node_timer_max_[n]) {
    node_timer_max_[n] = dev;
    node_timer_max_at_[n] = part.now;
  }
}

void LiveRunner::TimerOne(Part& part, Time now) {
  const Timer t = part.timers.top();
  part.timers.pop();
  const Time told = NodeTime(part, t.node, t.t);
  RecordTimer(part, t.node, now - t.t, Deviation(t.node, now, t.t, told));
  nodes_[t.node]->OnTimer(told, t.cookie);
}

bool LiveRunner::Replay(Part& part, Time now, Time horizon, Time* next_event, Time* pending) {
  enum class Kind : uint8_t { kNone, kTimer, kDelivery, kWire };
  bool worked = false;
  uint32_t ran = 0;
  // One TSC read per event: its cycles go to the node that handled it (node_cycles_), and
  // every kClockEvery events `now` moves on, so that lateness, the catch-up window and
  // boundary nodes' told times see how late each event of a long replay really runs (the
  // horizon stays: it bounds what is due).
  uint64_t tsc = rte_rdtsc();
  for (;;) {
    // The earliest pending event of the partition. At equal times: a timer first, then by
    // port (in `ports` order), a port's delivery before its wire slot.
    Time best = kTimeNever;
    uint64_t key = 0;
    Kind kind = Kind::kNone;
    size_t at = 0;
    if (!part.timers.empty()) {
      best = part.timers.top().t;
      key = part.timers.top().key;
      kind = Kind::kTimer;
    }
    // part.due: slot i is port i's earlier event (its tag: head delivery or wire slot). A
    // timer's key is its own (sub 0), so equal keys cannot occur between the two heaps.
    const Time due_t = part.due.top_time();
    if (due_t < best || (due_t == best && due_t != kTimeNever && part.due.top_key() < key)) {
      best = due_t;
      key = part.due.top_key();
      kind = part.due.top_tag() == kDueDelivery ? Kind::kDelivery : Kind::kWire;
      at = part.due.top_slot();
    }
    if (kind == Kind::kNone || best > horizon) {
      *next_event = std::min(*next_event, best);
      if (pending != nullptr) *pending = best;
      return worked;
    }
    worked = true;
    part.cur_key = key;
    uint32_t node = 0;
    switch (kind) {
      case Kind::kTimer:
        node = part.timers.top().node;
        TimerOne(part, now);
        break;
      case Kind::kDelivery:
        node = part.ports[at].node;
        DeliverOne(part, node, part.ports[at].port, now);
        break;
      case Kind::kWire:
        node = part.ports[at].node;
        PullOne(part, node, part.ports[at].port, now);
        break;
      case Kind::kNone:
        break;
    }
    const uint64_t after = rte_rdtsc();
    node_cycles_[node] += after - tsc;
    tsc = after;
    if (++ran % kClockEvery == 0) part.now = now = std::max(now, TscTime(after));
  }
}

namespace {

// Gives a poll thread an lcore id if it has none (a std::thread), and with it a mempool cache
// of its own: without one every frame allocated or freed goes through the pool's shared ring,
// FIFO over the whole pool, so each frame an emulated NIC built was the one freed longest ago,
// its mbuf long out of the CPU caches (~70 % of BuildRoce's samples in a saturated loop, perf
// 2026-12-07). True if it registered (call rte_thread_unregister at the end); false for a
// thread that had an id already (the EAL main lcore in tests) or when EAL refuses (then the
// ring, as before).
bool RegisterPollThread() {
  if (rte_lcore_id() != LCORE_ID_ANY) return false;
  return rte_thread_register() == 0;
}

// The poll threads' scheduling: its CPU (if any), 1 us timer slack, and the configured nice
// value for this thread only (Linux: a TID names one thread; fails without CAP_SYS_NICE,
// harmlessly).
void TunePollThread(int nice, int cpu, size_t part) {
  // "rf-poll-K" in top -H, perf and /proc/PID/task/*/comm.
  pthread_setname_np(pthread_self(), ("rf-poll-" + std::to_string(part)).c_str());
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  if (nice >= -20 && nice <= 19) {
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice);
  }
}

}  // namespace

// The partitions' port lists, due trees and link bounds, the nodes' catch-up windows and the
// shortest lookahead between partitions (what Loop needs before any node starts).
void LiveRunner::PreparePartitions() {
  for (auto& part : parts_) {
    part->now = 0;
    part->ports.clear();
    part->ethdev_ports.clear();
    part->intake_ports.clear();
    for (uint32_t n : part->nodes) {
      for (uint16_t p = 0; p < ports_[n].size(); ++p) {
        PortState* ps = &ports_[n][p];
        part->ports.push_back({ps, n, p});
        if (ps->kind == PortState::Kind::kEthdev) part->ethdev_ports.push_back({ps, n, p});
        // Intake has work only on links to another partition (a ring each way) and on ethdev
        // ports (the PMD's TX backlog).
        if (ps->kind == PortState::Kind::kEthdev || ps->cross_in != nullptr)
          part->intake_ports.push_back({ps, n, p});
      }
    }
    part->progress.store(0);
    for (const PortRef& r : part->ports) {
      // The earliest a frame sent at t can arrive: t + the shortest frame's wire time + the delay.
      PortState& ps = *r.state;
      if (ps.kind == PortState::Kind::kInternal)
        ps.lookahead = TxTime(wire_->MinFrameBytes(), ps.rate) + ps.delay;
    }
    part->due.Reset(static_cast<uint32_t>(part->ports.size()));
    part->out_bounds = std::make_unique<std::atomic<Time>[]>(part->ports.size());
    for (size_t i = 0; i < part->ports.size(); ++i) {
      part->out_bounds[i].store(0);
      part->ports[i].state->out_bound = &part->out_bounds[i];
    }
    for (size_t i = 0; i < part->ports.size(); ++i) {
      part->ports[i].state->due = &part->due;
      part->ports[i].state->slot = static_cast<uint32_t>(i);
      part->ports[i].state->arrive_key = ArriveKey(part->ports[i].node, part->ports[i].port);
      Refresh(*part->ports[i].state);
    }
  }
  node_now_.assign(nodes_.size(), 0);  // (what build-time calls set is gone: time 0 again)
  node_boundary_.assign(nodes_.size(), false);
  node_catch_up_.assign(nodes_.size(), opt_.internal_catch_up);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (const PortState& ps : ports_[n]) {
      if (ps.kind == PortState::Kind::kEthdev) node_boundary_[n] = true;
    }
    if (node_boundary_[n]) node_catch_up_[n] = opt_.catch_up;
  }
  min_lookahead_ = kTimeNever;
  for (auto& part : parts_) {
    part->cross_in_ports.clear();
    for (const PortRef& r : part->ports) {
      if (r.state->cross_in == nullptr) continue;
      r.state->peer_bound = ports_[r.state->peer_node][r.state->peer_port].out_bound;
      part->cross_in_ports.push_back(r);
      min_lookahead_ = std::min(min_lookahead_, r.state->lookahead);
    }
  }
}

namespace {
struct TscPair {
  uint64_t tsc;
  std::chrono::steady_clock::time_point steady;
};
// A TSC reading and the steady clock at the same instant (the TSC between two clock reads).
TscPair ReadTscPair() {
  TscPair best{};
  auto best_gap = std::chrono::steady_clock::duration::max();
  for (int i = 0; i < 8; ++i) {  // the tightest of a few: a preemption between reads is rare
    const auto a = std::chrono::steady_clock::now();
    const uint64_t tsc = rte_rdtsc();
    const auto b = std::chrono::steady_clock::now();
    if (b - a < best_gap) {
      best_gap = b - a;
      best = {tsc, a + (b - a) / 2};
    }
    if (best_gap < std::chrono::microseconds(1)) break;
  }
  return best;
}
}  // namespace

void LiveRunner::Loop(const std::atomic<bool>& stop) {
  looped_ = true;
  // Partition k on cpus[(k + 1) % n]: the first CPU (the EAL main lcore's, where the control
  // thread, DPDK's service threads and most interrupts run) is the last one a poll thread takes.
  auto cpu_of = [this](size_t k) {
    return opt_.cpus.empty() ? -1 : opt_.cpus[(k + 1) % opt_.cpus.size()];
  };
  TunePollThread(opt_.nice, cpu_of(0), 0);
  const bool registered = RegisterPollThread();
  SetTscHz(rte_get_tsc_hz());
  PreparePartitions();
  const TscPair before = ReadTscPair();
  for (Node* node : nodes_) node->Start(0);
  // Time 0 is when every node has started: Start may take milliseconds (memory regions touched
  // for the first time), which would otherwise make the first timers late.
  next_observer_.store(observer_timers_.empty() ? kTimeNever : observer_timers_.top().t);
  tsc0_ = rte_rdtsc();
  epoch_ = std::chrono::steady_clock::now();
  if (start_at_.time_since_epoch().count() != 0) {
    // A shared time 0: sleep to 200 us before it, spin the rest.
    const auto margin = std::chrono::microseconds(200);
    if (std::chrono::steady_clock::now() < start_at_ - margin)
      std::this_thread::sleep_until(start_at_ - margin);
    while (std::chrono::steady_clock::now() < start_at_) {
    }
    // Processes that share a time 0 compare their times, so they must also agree on the TSC's
    // rate: EAL's estimate of it differs by up to 0.1 % from one process to the next (a few
    // hundred microseconds over a run). Measured against the steady clock over the wait
    // instead (each end to within a microsecond: tens of ppm over 100 ms).
    const TscPair at = ReadTscPair();
    const double dt = std::chrono::duration<double>(at.steady - before.steady).count();
    if (dt >= 0.02 && at.tsc > before.tsc)
      SetTscHz(static_cast<uint64_t>(static_cast<double>(at.tsc - before.tsc) / dt));
    // Time 0 is the shared instant, however late this thread got there: what it then runs
    // late shows as lateness (and catches up as any late event) instead of shifting its clock.
    // The TSC of that instant from one consistent (TSC, clock) pair.
    start_late_ =
        std::chrono::duration_cast<std::chrono::nanoseconds>(at.steady - start_at_).count() * kNs;
    tsc0_ = at.tsc - static_cast<uint64_t>(static_cast<double>(start_late_) / kSec *
                                           static_cast<double>(tsc_hz_));
    epoch_ = start_at_;
  }
  epoch_set_.store(true, std::memory_order_release);
  epoch_set_.notify_all();
  std::vector<std::thread> workers;
  for (size_t k = 1; k < parts_.size(); ++k) {
    workers.emplace_back([this, k, &stop, cpu = cpu_of(k)] {
      TunePollThread(opt_.nice, cpu, k);
      const bool worker_registered = RegisterPollThread();
      RunPart(k, stop);
      if (worker_registered) rte_thread_unregister();
    });
  }
  RunPart(0, stop);
  for (auto& w : workers) w.join();
  if (registered) rte_thread_unregister();
  bool all = end_ != kTimeNever;
  for (const auto& part : parts_) all = all && part->at_end;
  reached_end_.store(all, std::memory_order_release);
}

bool LiveRunner::RunObservers(Time now) {
  Part& main = *parts_[0];
  // Every partition has run its events up to and including the observer's time (their
  // progress passed it), or the observer waits: it acts on their nodes at its exact time after
  // every node event of that instant (observers' keys are above the nodes'), as in the sim.
  auto ready = [&](Time t) {
    bool all = true;
    for (size_t k = 1; k < parts_.size() && all; ++k) {
      all = parts_[k]->progress.load(std::memory_order_acquire) > t;
    }
    if (all || parts_.size() == 1) return true;
    // Or a consistent snapshot with no frame between partitions: nothing the others still
    // have is at or before t, and what partition 0 has left up to t reaches them after t.
    const Time own = PendingOf(main, now);
    PublishRecord(main, own);
    Time others = kTimeNever;
    if (!QuietSnapshot(0, &others)) return false;
    return others > t && SatAdd(own, min_lookahead_) > t;
  };
  bool parked = false, ran = false;
  Time unused = kTimeNever;
  while (!observer_timers_.empty() && observer_timers_.top().t <= std::min(now, end_) &&
         ready(observer_timers_.top().t)) {
    const Timer t = observer_timers_.top();
    if (parts_.size() > 1 && !parked) {
      // Stop the world: every other partition parks (at the top of its iteration, or it is
      // in its idle sleep) before an observer touches its nodes. Sequentially consistent on
      // both sides: a partition that stops sleeping either sees the request or was seen
      // running.
      pause_req_.store(true);
      for (size_t k = 1; k < parts_.size(); ++k) {
        while (!parts_[k]->parked.load()) rte_pause();
      }
      parked = true;
    }
    // Partition 0's own events up to its time run first.
    for (PortRef& r : main.ports) Intake(main, *r.state, now, &unused);
    Replay(main, now, t.t, &unused, nullptr);
    observer_timers_.pop();
    const Time told = NodeTime(main, t.node, t.t);
    RecordTimer(main, t.node, now - t.t, Deviation(t.node, now, t.t, told));
    // The nodes it acts on are at its time, and what it makes them do (a wake, a timer at
    // its time) comes right after it, as the sim's partitions' now and current key.
    for (auto& part : parts_) part->cur_key = t.key;
    for (Time& nt : node_now_) nt = std::max(nt, t.t);
    nodes_[t.node]->OnTimer(told, t.cookie);
    ran = true;
    // Node events it made due at its time run before the next observer of that instant: the
    // others publish again (after they ran them) before it may run.
    for (size_t k = 1; k < parts_.size(); ++k) HoldBack(*parts_[k], t.t);
  }
  next_observer_.store(observer_timers_.empty() ? kTimeNever : observer_timers_.top().t,
                       std::memory_order_release);
  if (parked) pause_req_.store(false);
  return ran;
}

void LiveRunner::ParkIfAsked(Part& part) {
  while (pause_req_.load()) {
    part.parked.store(true);
    while (pause_req_.load()) rte_pause();
    part.parked.store(false);
  }
}

bool LiveRunner::ReceiveEthdev(Part& part, uint32_t n, uint16_t p, Time now) {
  PortState& ps = ports_[n][p];
  rte_mbuf* rx[32];
  const uint16_t got = rte_eth_rx_burst(ps.ethdev, 0, rx, 32);
  if (got == 0) return false;
  // The clock now, not the iteration's start: a late iteration replays events for a while
  // before it polls, and a frame polled then arrived then (it carries no timestamp).
  now = std::max(now, Now());
  part.now = std::max(part.now, now);
  for (uint16_t i = 0; i < got; ++i) {
    Meta(rx[i])->flags = 0;  // metadata of the mbuf's previous use, not of this frame
    if (tap_) Tap(tap_, now, n, p, rx[i]);
    part.cur_key = ps.arrive_key;
    nodes_[n]->Receive(NodeTime(part, n, now), p, rx[i]);  // no arrival timestamp
  }
  return got > 0;
}

Time LiveRunner::PendingOf(const Part& part, Time now) const {
  Time t = std::min(part.timers.empty() ? kTimeNever : part.timers.top().t, part.due.top_time());
  // An ethdev frame may arrive at any time: it runs at the clock.
  if (!part.ethdev_ports.empty()) t = std::min(t, now);
  return t;
}

void LiveRunner::HoldBack(Part& part, Time t) {
  if (part.progress.load(std::memory_order_relaxed) > t) {
    part.progress.store(t, std::memory_order_release);
  }
  Part::Record& r = part.record;
  if (r.pending.load(std::memory_order_relaxed) <= t) return;
  const uint64_t seq = r.seq.load(std::memory_order_relaxed);
  r.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  r.pending.store(t, std::memory_order_relaxed);
  r.seq.store(seq + 2, std::memory_order_release);
}

void LiveRunner::PublishRecord(Part& part, Time pending) {
  Part::Record& r = part.record;
  if (r.pending.load(std::memory_order_relaxed) == pending &&
      r.sent.load(std::memory_order_relaxed) == part.sent &&
      r.received.load(std::memory_order_relaxed) == part.received) {
    return;  // unchanged: readers' snapshots stay valid
  }
  const uint64_t seq = r.seq.load(std::memory_order_relaxed);
  r.seq.store(seq + 1, std::memory_order_relaxed);  // odd: being written
  std::atomic_thread_fence(std::memory_order_release);
  r.pending.store(pending, std::memory_order_relaxed);
  r.sent.store(part.sent, std::memory_order_relaxed);
  r.received.store(part.received, std::memory_order_relaxed);
  r.seq.store(seq + 2, std::memory_order_release);
}

bool LiveRunner::QuietSnapshot(size_t reader, Time* others) const {
  // Double collect: every record read consistently (seqlock) and unchanged at a second look, so
  // all held their values at one instant between the two; then no frame was between partitions
  // if as many were received as sent.
  uint64_t seq[64];
  uint64_t sent = 0, received = 0;
  Time min_others = kTimeNever;
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Part::Record& r = parts_[i]->record;
    seq[i] = r.seq.load(std::memory_order_acquire);
    if (seq[i] & 1) return false;
    const Time pending = r.pending.load(std::memory_order_relaxed);
    sent += r.sent.load(std::memory_order_relaxed);
    received += r.received.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r.seq.load(std::memory_order_relaxed) != seq[i]) return false;
    if (i != reader) min_others = std::min(min_others, pending);
  }
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (parts_[i]->record.seq.load(std::memory_order_acquire) != seq[i]) return false;
  }
  if (sent != received) return false;
  *others = min_others;
  return true;
}

Time LiveRunner::UpstreamBound(const Part& part) const {
  Time safe = kTimeNever;
  for (const PortRef& r : part.cross_in_ports) {
    safe = std::min(safe, r.state->peer_bound->load(std::memory_order_acquire));
  }
  return safe;
}

Time LiveRunner::QuietBound(size_t k, Time now) {
  // When no frame is between partitions, the earliest event anywhere bounds them all: another
  // partition's earliest event reaches this one a lookahead later at the soonest, and one of
  // this partition's own frames comes back two lookaheads later at the soonest. So idle
  // partitions do not hold a busy one back, nor crawl one lookahead at a time.
  Part& part = *parts_[k];
  const Time own = PendingOf(part, now);
  PublishRecord(part, own);
  Time others = kTimeNever;
  if (!QuietSnapshot(k, &others)) return std::numeric_limits<Time>::min();  // no bound
  return std::min(SatAdd(others, min_lookahead_),
                  SatAdd(own, SatAdd(min_lookahead_, min_lookahead_)));
}

void LiveRunner::PublishProgress(Part& part, Time now, Time bound, Time progress) {
  // An ethdev frame may arrive at any time: it runs at the clock.
  if (!part.ethdev_ports.empty()) bound = std::min(bound, now);
  // Per link to another partition: its next frame starts at the bound or when the wire frees,
  // whichever is later, and arrives a lookahead after that at the soonest; frames held for a
  // full ring are sent already in the model.
  for (const PortRef& r : part.ports) {
    const PortState& ps = *r.state;
    if (ps.kind != PortState::Kind::kInternal || part_of_[ps.peer_node] == part_of_[r.node])
      continue;
    Time out = SatAdd(std::max(bound, ps.next_free), ps.lookahead);
    if (!ps.cross_backlog.empty()) out = std::min(out, Meta(ps.cross_backlog.Front())->deliver_at);
    ps.out_bound->store(out, std::memory_order_release);
  }
  if (!part.ethdev_ports.empty()) progress = std::min(progress, now);
  part.progress.store(progress, std::memory_order_release);  // for the observers (RunObservers)
}

void LiveRunner::RunPart(size_t k, const std::atomic<bool>& stop) {
  Part& part = *parts_[k];
  // The thread's CPU time and preemptions before the loop (set-up on the main lcore), so the
  // part's figures are the loop's own.
  rusage ru0{};
  getrusage(RUSAGE_THREAD, &ru0);
  timespec cpu0{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
  const bool main = k == 0;
  const bool cross = parts_.size() > 1;
  Time last_work = 0;
  Time sleep = kUs;
  while (!stop.load(std::memory_order_relaxed)) {
    if (!main) ParkIfAsked(part);
    const Time now = Now();
    part.now = now;
    ++part.iterations;
    bool worked = false;
    Time next_event = kTimeNever;
    if (main && !observer_timers_.empty() && observer_timers_.top().t <= now) {
      worked |= RunObservers(now);
    }
    // Events due by now, in their exact time order (timers, delay-line deliveries, wire
    // slots): a loop that ran late replays the missed window as the sim runner would have run
    // it, so its lateness moves no frame. With several partitions a partition runs no event at
    // or after `safe` (a frame from another one may still arrive then) nor past the next
    // observer. Frames from ethdev ports (no timestamp) come after.
    // The other partitions' bounds are read before their rings are drained: a frame they sent
    // before publishing a bound is then in the delay line before anything up to it runs.
    Time safe = cross ? UpstreamBound(part) : kTimeNever;
    for (PortRef& r : part.intake_ports) worked |= Intake(part, *r.state, now, &next_event);
    if (cross) safe = std::max(safe, QuietBound(k, now));
    Time horizon = std::min({now + kAhead, safe - 1, end_});
    const Time observer = main ? (observer_timers_.empty() ? kTimeNever : observer_timers_.top().t)
                               : next_observer_.load(std::memory_order_acquire);
    horizon = std::min(horizon, observer);  // events at its time run before it (lower keys)
    Time pending = kTimeNever;
    worked |= Replay(part, now, horizon, &next_event, &pending);
    if (now > end_ && pending > end_ && safe > end_ && observer > end_) {
      part.at_end = true;  // every event up to the end ran; none before it can still come
      break;
    }
    for (PortRef& r : part.ethdev_ports) {
      if (ReceiveEthdev(part, r.node, r.port, now)) {
        worked = true;
        worked |= Replay(part, now, horizon, &next_event, &pending);  // what they made ready
      }
      ReleaseHeld(*r.state, now, &next_event);
      FlushEthdevTx(*r.state);
    }
    if (main && !observer_timers_.empty())
      next_event = std::min(next_event, observer_timers_.top().t);
    // Frames: none before the bound (an observer may act at its time); progress: every event
    // up to an observer's time has run once it passed it.
    if (cross) {
      PublishProgress(part, now, std::min({pending, safe, observer}),
                      std::min({pending, safe, SatAdd(observer, 1)}));
    }
    if (worked) {
      last_work = now;
      sleep = kUs;
      continue;
    }
    if (now - last_work < opt_.busy_poll) continue;
    // A frame from another partition may come at any time, unannounced: with several
    // partitions a nap lasts at most half the tolerance (the first frame after an idle spell
    // may still be late by the sleep's overshoot, and is counted).
    Time nap = IdleNap(now, next_event, sleep, opt_);
    if (cross) nap = std::min(nap, opt_.tolerance / 2);
    if (nap > 0) {
      timespec ts{0, static_cast<long>(nap / kNs)};
      if (!main) part.parked.store(true);  // asleep: an observer may run meanwhile
      nanosleep(&ts, nullptr);
      if (!main) {
        part.parked.store(false);
        ParkIfAsked(part);
      }
      ++part.idle_sleeps;
      sleep = std::min(sleep * 2, opt_.max_sleep);
    }
  }
  // Events still due when the run stopped never ran: how far behind the clock the loop was
  // then (a run stopped while its fabric lagged beyond the window is not faithful). The clock
  // is read now: part.now is from the start of the last iteration, whose replay may have run
  // for milliseconds.
  const Time stopped_at = Now();
  const Time pending = PendingOf(part, stopped_at);
  part.end_lag = pending == kTimeNever || part.at_end ? 0 : std::max<Time>(0, stopped_at - pending);
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  timespec cpu1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);  // ns, where rusage counts in ticks
  part.cpu_s = static_cast<double>(cpu1.tv_sec - cpu0.tv_sec) +
               static_cast<double>(cpu1.tv_nsec - cpu0.tv_nsec) / 1e9;
  part.preempted = static_cast<uint64_t>(ru.ru_nivcsw - ru0.ru_nivcsw);
  PublishProgress(part, kTimeNever, kTimeNever, kTimeNever);  // stopped: holds nobody back
  PublishRecord(part, kTimeNever);
  part.parked.store(true);  // stopped for good: an observer still due on partition 0 may run
}

Time LiveRunner::IdleNap(Time now, Time next_event, Time backoff, const LiveRunnerOptions& opt) {
  Time nap = std::min(backoff, opt.max_sleep);
  if (next_event != kTimeNever) nap = std::min(nap, next_event - now - opt.sleep_margin);
  return nap >= kUs ? nap : 0;
}

std::string LiveRunner::BusiestOf(const Part& part) const {
  uint64_t most = 0;
  std::string name;
  for (uint32_t n : part.nodes) {
    if (node_cycles_[n] > most) most = node_cycles_[n], name = nodes_[n]->name();
  }
  return name;
}

LiveRunner::Timing LiveRunner::timing() const {
  Timing t;
  t.delivery = t.timer = t.wire = t.pfc_reaction = t.all = t.deviation =
      LatenessHistogram(opt_.tolerance);
  for (const auto& part : parts_) {
    t.deviation.Merge(part->deviation);
    t.delivery.Merge(part->delivery);
    t.timer.Merge(part->timer);
    t.wire.Merge(part->wire);
    t.pfc_reaction.Merge(part->pfc_reaction);
    t.slips += part->slips;
  }
  t.all.Merge(t.delivery);
  t.all.Merge(t.timer);
  t.all.Merge(t.wire);
  for (const auto& part : parts_) {
    uint64_t total = 0, most = 0;
    uint32_t busiest = 0;
    for (uint32_t n : part->nodes) {
      total += node_cycles_[n];
      if (node_cycles_[n] > most) most = node_cycles_[n], busiest = n;
    }
    const double share = total == 0 ? 0.0 : static_cast<double>(most) / static_cast<double>(total);
    if (total > 0 && (t.busiest_node.empty() || share > t.busiest_share)) {
      t.busiest_node = nodes_[busiest]->name();
      t.busiest_share = share;
    }
  }
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
  for (const auto& part : parts_) t.end_lag = std::max(t.end_lag, part->end_lag);
  t.faithful = t.deviation.fraction_beyond_tolerance() <= opt_.max_late_fraction &&
               t.max_port_slip <= opt_.tolerance && t.end_lag <= opt_.internal_catch_up;
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
  j["deviation"] = HistogramJson(t.deviation);
  j["busiest"] = t.busiest_node.empty()
                     ? nlohmann::json(nullptr)
                     : nlohmann::json{{"node", t.busiest_node}, {"share", t.busiest_share}};
  j["boundary_nodes"] = std::count(node_boundary_.begin(), node_boundary_.end(), true);
  j["catch_up_us"] = opt_.catch_up / 1e6;
  j["internal_catch_up_us"] = opt_.internal_catch_up / 1e6;
  j["end_lag_us"] = t.end_lag / 1e6;
  if (start_late_ >= 0) j["start_late_us"] = start_late_ / 1e6;
  j["schedule_slips"] = t.slips;
  j["max_port_slip_us"] = t.max_port_slip / 1e6;
  j["faithful"] = t.faithful;
  nlohmann::json lcores = nlohmann::json::array();
  LoopTime loop;  // all poll threads together, for the verdict
  for (const auto& part : parts_) {
    LatenessHistogram all(opt_.tolerance);
    all.Merge(part->delivery);
    all.Merge(part->timer);
    all.Merge(part->wire);
    uint64_t event_cycles = 0;  // the events' own time: what the loop spent on the fabric
    for (uint32_t n : part->nodes) event_cycles += node_cycles_[n];
    const double event_s =
        tsc_hz_ > 0 ? static_cast<double>(event_cycles) / static_cast<double>(tsc_hz_) : 0.0;
    loop.event_s += event_s;
    loop.cpu_s += part->cpu_s;
    loop.preempted += part->preempted;
    lcores.push_back({{"nodes", part->nodes.size()},
                      {"event_s", event_s},
                      {"iterations", part->iterations},
                      {"idle_sleeps", part->idle_sleeps},
                      {"late_fraction", all.fraction_beyond_tolerance()},
                      {"p999_us", all.Percentile(0.999) / 1e6},
                      {"deviation_fraction", part->deviation.fraction_beyond_tolerance()},
                      {"cpu_s", part->cpu_s},
                      {"busiest_node", BusiestOf(*part)},
                      {"preempted", part->preempted}});
  }
  j["lcores"] = lcores;
  j["verdict"] = Verdict(t, loop);
  return j;
}

std::string LiveRunner::Verdict(const Timing& t, const LoopTime& loop) const {
  char line[400];
  const LatenessHistogram& d = t.deviation;
  if (t.faithful) {
    std::snprintf(line, sizeof line,
                  "faithful within %.2f us: %llu timed events, p99.9 deviation %.2f us, max %.2f "
                  "us (the loop ran them up to %.2f us late, p99.9 %.2f us)",
                  opt_.tolerance / 1e6, static_cast<unsigned long long>(d.count()),
                  d.Percentile(0.999) / 1e6, d.max() / 1e6, t.all.max() / 1e6,
                  t.all.Percentile(0.999) / 1e6);
  } else if (d.fraction_beyond_tolerance() <= opt_.max_late_fraction &&
             t.max_port_slip <= opt_.tolerance) {
    std::snprintf(line, sizeof line,
                  "NOT FAITHFUL: the run stopped while the loop was %.2f us behind the clock "
                  "(allowed %.0f us): the fabric's last events never ran",
                  t.end_lag / 1e6, opt_.internal_catch_up / 1e6);
  } else if (d.fraction_beyond_tolerance() <= opt_.max_late_fraction) {
    std::snprintf(
        line, sizeof line,
        "NOT FAITHFUL: the loop fell more than its catch-up window behind "
        "%llu time(s) and moved a wire's schedule by up to %.2f us in all (allowed %.2f us); "
        "p99.9 deviation %.2f us, max %.2f us",
        static_cast<unsigned long long>(t.slips), t.max_port_slip / 1e6, opt_.tolerance / 1e6,
        d.Percentile(0.999) / 1e6, d.max() / 1e6);
  } else {
    std::snprintf(line, sizeof line,
                  "NOT FAITHFUL: %.2f %% of %llu timed events ran more than %.2f us off their "
                  "schedule (allowed %.2f %%); p99 %.2f us, p99.9 %.2f us, max %.2f us; worst "
                  "%s%s%s",
                  100.0 * d.fraction_beyond_tolerance(), static_cast<unsigned long long>(d.count()),
                  opt_.tolerance / 1e6, 100.0 * opt_.max_late_fraction, d.Percentile(0.99) / 1e6,
                  d.Percentile(0.999) / 1e6, d.max() / 1e6, t.worst_node.c_str(),
                  t.worst_port >= 0 ? "/p" : " (timers)",
                  t.worst_port >= 0 ? std::to_string(t.worst_port).c_str() : "");
  }
  std::string verdict = line;
  // Where the poll threads' time went: a loop that fell behind while the fabric's events took a
  // small part of its CPU was held back by something other than that work (its own polling, the
  // OS preempting it, the hypervisor); the busiest node alone would point at the wrong cause.
  if (!t.faithful && loop.cpu_s > 0) {
    const bool many = parts_.size() > 1;
    std::snprintf(line, sizeof line,
                  "; the poll thread%s spent %.1f %% of %.3f s of CPU in the fabric's events and "
                  "%s preempted %llu time(s)",
                  many ? "s" : "", 100.0 * std::min(1.0, loop.event_s / loop.cpu_s), loop.cpu_s,
                  many ? "were" : "was", static_cast<unsigned long long>(loop.preempted));
    verdict += line;
  }
  if (!t.faithful && !t.busiest_node.empty()) {
    std::snprintf(line, sizeof line,
                  "; the busiest node, %s, took %.0f %% of its poll thread's event time",
                  t.busiest_node.c_str(), 100.0 * t.busiest_share);
    verdict += line;
  }
  return verdict;
}

}  // namespace rocefab
