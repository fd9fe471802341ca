#include "verbs/host_port.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "common/eal.h"
#include "common/packet.h"

namespace rocefab {
namespace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Classic BPF: MAC control (0x8808: PFC, PAUSE), ARP replies, and unfragmented IPv4 UDP to port
// 4791 (RoCEv2, IANA); everything else stays with the kernel only.
Status AttachFilter(int sock) {
  static sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),                   // 0: ether type
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8808, 9, 0),        // 1: MAC control -> accept
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0806, 0, 2),        // 2: ARP? else -> 5
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 20),                   // 3: ARP opcode
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 6, 7),             // 4: reply -> accept, else drop
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0800, 0, 6),        // 5: IPv4? else drop
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 23),                   // 6: protocol
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 17, 0, 4),            // 7: UDP? else drop
      BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 14),                  // 8: X = IPv4 header length
      BPF_STMT(BPF_LD | BPF_H | BPF_IND, 16),                   // 9: UDP destination port
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kRoceUdpPort, 0, 1),  // 10: 4791? else drop
      BPF_STMT(BPF_RET | BPF_K, 0x40000),                       // 11: accept
      BPF_STMT(BPF_RET | BPF_K, 0),                             // 12: drop
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  if (setsockopt(sock, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) {
    return Status::Error(Errno("setsockopt SO_ATTACH_FILTER"));
  }
  return Status();
}

}  // namespace

void HostPort::LateHistogram::Add(Time late) {
  late = std::max<Time>(late, 0);
  const size_t i = std::min<size_t>(static_cast<size_t>(late / kUs), buckets_.size() - 1);
  ++buckets_[i];
  ++count_;
  max_ = std::max(max_, late);
}

double HostPort::LateHistogram::PercentileUs(double p) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_)));
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= std::max<uint64_t>(rank, 1)) return static_cast<double>(i + 1);  // bucket's top
  }
  return MaxUs();
}

Result<std::unique_ptr<HostPort>> HostPort::Open(EmulatedHostConfig cfg,
                                                 const std::string& ifname) {
  using R = Result<std::unique_ptr<HostPort>>;
  Status st = InitEal(NoHugeEalArgs(160), EalAffinity::kKeep);
  if (!st.ok()) return R::Error(st.message());
  std::unique_ptr<HostPort> p(new HostPort());
  static std::atomic<int> n{0};
  auto pool = CreateHostOnlyPktPool("rf_verbs" + std::to_string(n++), 8191,
                                    4096 + RTE_PKTMBUF_HEADROOM + 384);
  if (!pool.ok()) return R::Error(pool.message());
  p->pool_ = pool.value();
  const unsigned ifindex = if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    return R::Error("interface " + ifname + ": " + std::strerror(errno) +
                    " (run the program in a namespace host of a live run: rocefab exec RUN "
                    "HOST -- COMMAND)");
  }
  p->sock_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (p->sock_ < 0) {
    return R::Error(Errno("packet socket on " + ifname) +
                    " (the NIC needs CAP_NET_RAW: run as root, e.g. rocefab exec)");
  }
  st = AttachFilter(p->sock_);
  if (!st.ok()) return R::Error(st.message());
  const int one = 1;
  setsockopt(p->sock_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
  setsockopt(p->sock_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);  // kernel receive time
  // 4 MiB holds about 1,800 full frames (over 100 ms at 100 Mb/s) for an engine the scheduler
  // did not run; SO_RCVBUFFORCE passes net.core.rmem_max (212,992 on a stock kernel) as root.
  // What overflows it still is counted (rx_kernel_drops).
  const int buf = 4 << 20;
  if (setsockopt(p->sock_, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0) {
    setsockopt(p->sock_, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  }
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(ifindex);
  if (bind(p->sock_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    return R::Error(Errno("bind packet socket to " + ifname));
  }
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  if (ioctl(p->sock_, SIOCGIFHWADDR, &ifr) != 0) return R::Error(Errno("SIOCGIFHWADDR " + ifname));
  std::memcpy(cfg.mac.addr_bytes, ifr.ifr_hwaddr.sa_data, 6);
  // The kernel sees the RoCEv2 datagrams too: a bound UDP socket that is never read makes it
  // drop them quietly instead of answering ICMP port unreachable (rdma_rxe owns the port).
  p->udp_sink_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (p->udp_sink_ >= 0) {
    setsockopt(p->udp_sink_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(p->udp_sink_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    const int small = 1;
    setsockopt(p->udp_sink_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(kRoceUdpPort);
    bind(p->udp_sink_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  p->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (p->wake_fd_ < 0) return R::Error(Errno("eventfd"));
  p->rate_ = cfg.rate;
  p->host_ = std::make_unique<EmulatedHost>(std::move(cfg));
  p->host_->Attach(p.get());
  p->t0_ns_ = MonotonicNs();
  return R(std::move(p));
}

HostPort::~HostPort() {
  stop_ = true;
  Poke();
  if (thread_.joinable()) thread_.join();
  if (on_wire_ != nullptr) rte_pktmbuf_free(on_wire_);
  host_.reset();
  if (sock_ >= 0) close(sock_);
  if (udp_sink_ >= 0) close(udp_sink_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (pool_ != nullptr) rte_mempool_free(pool_);
}

HostPort::Counters HostPort::counters() {
  tpacket_stats st{};
  socklen_t len = sizeof st;
  if (getsockopt(sock_, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) {
    counters_.rx_kernel_drops += st.tp_drops;  // the call resets the kernel's counts
  }
  return counters_;
}

Time HostPort::Now() const { return (MonotonicNs() - t0_ns_) * kNs; }

void HostPort::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    host_->Start(Now());
  }
  thread_ = std::thread([this] { Loop(); });
  // The engine is the NIC's hardware: it must run as soon as a frame arrives even where the
  // application busy-polls every CPU (perftest does). SCHED_FIFO (root) lets a woken engine
  // preempt them; it sleeps in ppoll between events, and the kernel's RT throttling bounds it.
  // Without the privilege it stays a normal thread (reactions wait for a time slice).
  sched_param sp{};
  sp.sched_priority = 1;
  realtime_ = pthread_setschedparam(thread_.native_handle(), SCHED_FIFO, &sp) == 0;
}

void HostPort::Poke() {
  if (sleeping_.load()) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t r = write(wake_fd_, &one, sizeof one);
  }
}

void HostPort::WakeTx(uint16_t /*port*/) {
  if (tx_wanted_) return;
  tx_wanted_ = true;
  // An idle wire is free now: only a backlog that waited for the wire can fall behind.
  wire_free_ = std::max(wire_free_, Now());
}

void HostPort::ScheduleTimer(Time at, uint64_t cookie) {
  timers_.push(Timer{at, timer_seq_++, cookie});
}

Time HostPort::NextWake() const {
  Time t = timers_.empty() ? kTimeNever : timers_.top().at;
  if (on_wire_ != nullptr) {
    t = std::min(t, on_wire_until_);
  } else if (tx_wanted_) {
    t = std::min(t, wire_free_);
  }
  return t;
}

void HostPort::RunTimers(Time now) {
  while (!timers_.empty() && timers_.top().at <= now) {
    const Timer t = timers_.top();
    timers_.pop();
    counters_.max_late = std::max(counters_.max_late, now - t.at);
    host_->OnTimer(now, t.cookie);
  }
}

void HostPort::RxBurst(Time now) {
  for (int i = 0; i < 64; ++i) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (m == nullptr) {
      uint8_t scratch[64];
      if (recv(sock_, scratch, sizeof scratch, MSG_DONTWAIT | MSG_TRUNC) < 0) return;
      ++counters_.rx_no_mbuf;  // a frame lost at the port, as a NIC without buffers loses it
      continue;
    }
    iovec iov{rte_pktmbuf_mtod(m, void*), rte_pktmbuf_tailroom(m)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(sock_, &msg, MSG_DONTWAIT | MSG_TRUNC);
    if (n <= 0 || n > static_cast<ssize_t>(rte_pktmbuf_tailroom(m))) {
      rte_pktmbuf_free(m);
      if (n <= 0) return;
      ++counters_.rx_no_mbuf;  // longer than the largest RoCE frame: not ours to carry
      continue;
    }
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    Meta(m)->flags = 0;
    ++counters_.rx_frames;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        rx_late_.Add(((static_cast<int64_t>(wall.tv_sec) - ts.tv_sec) * 1'000'000'000 +
                      (wall.tv_nsec - ts.tv_nsec)) *
                     kNs);
      }
    }
    host_->Receive(now, 0, m);
  }
}

void HostPort::TxBurst(Time now) {
  for (;;) {
    if (on_wire_ != nullptr) {
      // A frame reaches the ToR when its last bit would have: it is handed to the interface
      // at the end of its wire slot.
      if (now < on_wire_until_) return;
      tx_late_.Add(now - on_wire_until_);
      const uint32_t len = rte_pktmbuf_pkt_len(on_wire_);
      if (send(sock_, rte_pktmbuf_mtod(on_wire_, const void*), len, MSG_DONTWAIT) < 0) {
        ++counters_.tx_errors;
      } else {
        ++counters_.tx_frames;
      }
      rte_pktmbuf_free(on_wire_);
      on_wire_ = nullptr;
      wire_free_ = on_wire_until_;
    }
    if (!tx_wanted_) return;
    // The slot starts when the wire became free, at most kCatchUp ago; the node is told that
    // time (as the live runner tells it), so its pacing (DCQCN) follows the wire schedule and
    // does not add the thread's wake-up lateness to every frame.
    const Time start = std::max(wire_free_, now - kCatchUp);
    rte_mbuf* m = host_->Dequeue(start, 0);
    if (m == nullptr) {
      tx_wanted_ = false;
      return;
    }
    if (start > wire_free_) {
      ++counters_.slips;  // the thread ran too late to keep the wire busy without a gap
      counters_.slipped += start - wire_free_;
      counters_.max_late = std::max(counters_.max_late, now - wire_free_);
    }
    on_wire_ = m;
    on_wire_until_ = start + TxTime(WireBytes(rte_pktmbuf_pkt_len(m)), rate_);
  }
}

void HostPort::Loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_.load()) {
    RunTimers(Now());
    RxBurst(Now());
    TxBurst(Now());
    RunTimers(Now());
    const Time next = NextWake();
    const Time now = Now();
    if (next <= now) continue;
    sleeping_ = true;
    lk.unlock();
    pollfd fds[2] = {{sock_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    const Time d = next == kTimeNever ? 100 * kMs : std::min<Time>(next - now, 100 * kMs);
    const timespec ts{static_cast<time_t>(d / kSec), static_cast<long>((d % kSec) / kNs)};
    ppoll(fds, 2, &ts, nullptr);
    sleeping_ = false;
    if (fds[1].revents & POLLIN) {
      uint64_t x;
      [[maybe_unused]] ssize_t r = read(wake_fd_, &x, sizeof x);
    }
    lk.lock();
  }
}

}  // namespace rocefab
