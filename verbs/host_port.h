#pragma once
/// @file host_port.h
/// HostPort: runs one namespace host's emulated RoCEv2 NIC (an EmulatedHost and its Rnic, the
/// same classes the fabric builds for built-in hosts) inside a verbs application's process, on
/// the host's interface (eth0 of the namespace `rocefab live` made). It is the runner of that
/// one node: a packet socket bound to the interface with a kernel filter that passes only what
/// the NIC handles (RoCEv2 UDP 4791, MAC control for PFC, ARP replies), an engine thread that
/// delivers those frames, fires the node's timers and transmits its frames paced at the link
/// rate, and a mutex the application's verbs calls take to reach the node. The kernel keeps
/// everything else on the interface (ARP answers, TCP for perftest's out-of-band exchange).
///
/// Time: picoseconds of CLOCK_MONOTONIC since the port opened; a timer or wire slot that the
/// thread reaches late runs at the time it is reached (the node never sees time go back). The
/// port lets transmission run up to `kCatchUp` (250 us) behind the wire schedule before it
/// drops the backlog of slots and counts a slip, as the live runner does for a node with a real
/// port (there: max(50 us, 2 x the timing tolerance)).

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "common/node.h"
#include "common/result.h"
#include "nic-emu/emulated_host.h"

namespace rocefab {

class HostPort final : public NodeEnv {
 public:
  /// Opens `ifname` (in the calling thread's network namespace), starts EAL without hugepages
  /// (once per process) and builds the host. Errors name the interface and the system call.
  static Result<std::unique_ptr<HostPort>> Open(EmulatedHostConfig cfg, const std::string& ifname);
  ~HostPort() override;

  /// Starts the engine thread (once).
  void Start();
  /// The lock every call into host() holds (the engine thread holds it while it works).
  std::mutex& mu() { return mu_; }
  EmulatedHost& host() { return *host_; }
  /// Now, in the port's time base (ps).
  Time Now() const;
  /// Wakes the engine thread (after a call that gave the NIC work from another thread).
  void Poke();

  // NodeEnv (called with mu() held).
  void WakeTx(uint16_t port) override;
  void ScheduleTimer(Time at, uint64_t cookie) override;
  rte_mempool* pool() override { return pool_; }

  /// How late the port ran, frame by frame, in 1 us buckets up to 10 ms (the last bucket holds
  /// everything above): receive = from the kernel's timestamp of a frame on the packet socket
  /// (SO_TIMESTAMPNS) to the NIC processing it; transmit = from the end of a frame's wire slot
  /// to its handover to the interface. Both are delays a real NIC does not add.
  class LateHistogram {
   public:
    void Add(Time late);
    uint64_t count() const { return count_; }
    /// Nearest-rank percentile (p in (0, 1]) in microseconds; 0 when empty.
    double PercentileUs(double p) const;
    double MaxUs() const { return static_cast<double>(max_) / kUs; }

   private:
    std::vector<uint64_t> buckets_ = std::vector<uint64_t>(10001, 0);
    uint64_t count_ = 0;
    Time max_ = 0;
  };
  const LateHistogram& rx_late() const { return rx_late_; }
  const LateHistogram& tx_late() const { return tx_late_; }

  /// Frames the port moved and lost, for the provider's statistics.
  struct Counters {
    uint64_t rx_frames = 0, tx_frames = 0, rx_no_mbuf = 0, tx_errors = 0, slips = 0;
    /// Frames the kernel dropped before the engine read them: the packet socket's receive
    /// buffer was full while the engine did not run (PACKET_STATISTICS tp_drops, summed).
    uint64_t rx_kernel_drops = 0;
    Time max_late = 0;  ///< latest a timer or wire slot ran behind its time (ps)
    /// What the slips moved the wire schedule by, in all (ps): the time the engine, more than
    /// kCatchUp behind, gave up instead of sending back to back (the live runner's port slip).
    Time slipped = 0;
  };
  /// The counters now (with mu() held); reads and sums the socket's kernel drops.
  Counters counters();
  /// Whether the engine thread runs SCHED_FIFO (it does when the process may set it: root).
  bool realtime() const { return realtime_; }

  static constexpr Time kCatchUp = 250 * kUs;

 private:
  HostPort() = default;
  void Loop();
  void RunTimers(Time now);
  void RxBurst(Time now);
  void TxBurst(Time now);
  Time NextWake() const;

  std::mutex mu_;
  std::unique_ptr<EmulatedHost> host_;
  rte_mempool* pool_ = nullptr;
  int sock_ = -1, wake_fd_ = -1, udp_sink_ = -1;
  BitRate rate_;
  int64_t t0_ns_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};
  bool tx_wanted_ = false;
  bool realtime_ = false;
  Time wire_free_ = 0;
  rte_mbuf* on_wire_ = nullptr;  // dequeued, handed to the interface at on_wire_until_
  Time on_wire_until_ = 0;
  struct Timer {
    Time at;
    uint64_t seq, cookie;
    bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t timer_seq_ = 0;
  Counters counters_;
  LateHistogram rx_late_, tx_late_;
};

}  // namespace rocefab
