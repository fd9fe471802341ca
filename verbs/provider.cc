// librocefab-verbs.so: a userspace verbs provider on rocefab's emulated RoCEv2 NIC.
//
// Loaded with LD_PRELOAD (rocefab exec does it), it defines the libibverbs entry points an
// application calls (ibv_get_device_list ... ibv_destroy_qp); libibverbs' own definitions are
// never reached for our objects. Contexts are legacy (not extended) ones, so the inline *_ex
// helpers of verbs.h fall back to the calls defined here; the inline fast paths (ibv_post_send,
// ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) go through the context's ops, which are ours.
//
// The NIC is an EmulatedHost + Rnic (nic-emu) run by a HostPort (verbs/host_port.h) on the
// namespace host's eth0: the fabric's RC transport, loss recovery, DCQCN and PFC reaction, with
// the application's registered memory behind its rkeys and work requests. The host's settings
// (address, gateway, link rate, QoS, NIC profile) come from the same scenario and the same plan
// the live fabric was built from (fabric/plan.h): ROCEFAB_VERBS is a JSON object
// {"scenario": PATH, "sets": [KEY=VALUE...], "host": NAME, "interface": "eth0"}.
//
// Supported: RC QPs (SEND, RDMA WRITE, RDMA READ, inline data, signalled and unsignalled work
// requests, scatter/gather), PDs, MRs with lkey/rkey and access flags, CQs with completion
// channels. Not supported (the call fails with the errno the man page gives for "not
// supported"): UD/UC QPs, SRQs, immediate data, atomics, memory windows, rdma_cm.

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fabric/plan.h"
#include "topo/scenario.h"
#include "verbs/host_port.h"

namespace rocefab {
namespace {

void Say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "rocefab-verbs: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
}

struct Pd;
struct Cq;

struct Mr {
  ibv_mr mr{};
  int access = 0;
  uint64_t iova = 0;
};

// A protection domain's regions, reached by rkey from the wire (the engine thread) and by lkey
// from posts (the application's threads); both hold the port lock.
class PdMemory final : public RnicMemory {
 public:
  uint8_t* Resolve(uint32_t rkey, uint64_t va, uint64_t len, Access a) override {
    auto it = by_key.find(rkey);
    if (it == by_key.end()) return nullptr;
    const Mr& m = *it->second;
    const int need = a == kRemoteWrite ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
    if ((m.access & need) == 0 || va < m.iova || len > m.mr.length ||
        va - m.iova > m.mr.length - len) {
      return nullptr;
    }
    return static_cast<uint8_t*>(m.mr.addr) + (va - m.iova);
  }
  // The local address of an SGE, or nullptr (bad lkey, outside the region, missing local write).
  uint8_t* Local(const ibv_sge& s, bool write) const {
    auto it = by_key.find(s.lkey);
    if (it == by_key.end()) return nullptr;
    const Mr& m = *it->second;
    const auto start = reinterpret_cast<uint64_t>(m.mr.addr);
    if (write && (m.access & IBV_ACCESS_LOCAL_WRITE) == 0) return nullptr;
    if (s.addr < start || s.length > m.mr.length || s.addr - start > m.mr.length - s.length) {
      return nullptr;
    }
    return reinterpret_cast<uint8_t*>(s.addr);
  }
  std::unordered_map<uint32_t, Mr*> by_key;
};

struct Pd {
  ibv_pd pd{};
  PdMemory mem;
  int qps = 0;
};

struct Channel {
  ibv_comp_channel ch{};
  int write_fd = -1;
};

struct Cq {
  ibv_cq cq{};
  std::mutex mu;
  std::deque<ibv_wc> wcs;
  bool armed = false;
  Channel* channel = nullptr;
  int qps = 0;
  uint64_t overruns = 0;
};

struct SendInfo {
  uint64_t wr_id;
  bool signaled;
  ibv_wc_opcode opcode;
  uint32_t length;
};

struct Qp {
  ibv_qp qp{};
  Pd* pd = nullptr;
  Cq *scq = nullptr, *rcq = nullptr;
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  ibv_qp_attr attr{};  // what modify_qp set, for query_qp
  int attr_mask = 0;
  uint64_t next_id = 1;
  std::unordered_map<uint64_t, SendInfo> sends;  // posted, not completed
  std::unordered_map<uint64_t, uint64_t> recvs;  // internal id -> the application's wr_id
};

struct Device {
  ibv_device dev{};
  std::string host, iface, scenario;
  std::vector<std::string> sets;
};

struct Context {
  ibv_context ctx{};
};

struct Provider {
  std::mutex mu;  // device list and port creation
  std::unique_ptr<Device> device;
  bool listed = false;
  std::unique_ptr<HostPort> port;
  std::string port_error;
  ibv_device* list[2] = {nullptr, nullptr};
};

Provider& P() {
  static Provider* p = new Provider();  // never destroyed: the engine may outlive main()
  return *p;
}

Device* ReadDevice() {
  const char* env = std::getenv("ROCEFAB_VERBS");
  if (env == nullptr || *env == '\0') {
    Say("ROCEFAB_VERBS is not set: run the program with rocefab exec RUN HOST -- COMMAND");
    return nullptr;
  }
  auto d = std::make_unique<Device>();
  try {
    const auto j = nlohmann::json::parse(env);
    d->scenario = j.at("scenario").get<std::string>();
    d->host = j.at("host").get<std::string>();
    d->iface = j.value("interface", std::string("eth0"));
    if (j.contains("sets")) d->sets = j.at("sets").get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    Say("ROCEFAB_VERBS: %s (want {\"scenario\": PATH, \"host\": NAME, ...})", e.what());
    return nullptr;
  }
  const std::string name = "rocefab_" + d->host;
  std::snprintf(d->dev.name, sizeof d->dev.name, "%s", name.c_str());
  std::snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs0");
  std::snprintf(d->dev.dev_path, sizeof d->dev.dev_path, "/dev/null");
  std::snprintf(d->dev.ibdev_path, sizeof d->dev.ibdev_path, "/nonexistent/%s", name.c_str());
  d->dev.node_type = IBV_NODE_CA;
  d->dev.transport_type = IBV_TRANSPORT_IB;
  return d.release();
}

bool IsOurs(const ibv_device* d) { return P().device && d == &P().device->dev; }

void WriteStats();
void StartStatsWriter();

// The host's NIC, built from the live run's scenario and plan, opened once per process.
HostPort* Port() {
  Provider& p = P();
  std::lock_guard<std::mutex> lk(p.mu);
  if (p.port) return p.port.get();
  if (!p.port_error.empty()) return nullptr;
  const Device& d = *p.device;
  auto fail = [&](const std::string& e) -> HostPort* {
    p.port_error = e;
    Say("%s", e.c_str());
    return nullptr;
  };
  auto sc = Scenario::Load(d.scenario, d.sets);
  if (!sc.ok()) return fail("scenario " + d.scenario + ": " + sc.message());
  auto plan = PlanFabric(sc.value());
  if (!plan.ok()) return fail("scenario " + d.scenario + ": " + plan.message());
  const EmulatedHostConfig* cfg = nullptr;
  for (const auto& h : plan.value().hosts) {
    if (h.name == d.host) cfg = &h;
  }
  if (cfg == nullptr) return fail("scenario " + d.scenario + " has no host " + d.host);
  auto port = HostPort::Open(*cfg, d.iface);
  if (!port.ok()) return fail(port.message());
  p.port = std::move(port).value();
  // QPNs of this process: 4,095 after a base taken from the pid, so that two verbs processes
  // on one host do not share QPNs (the NIC of each sees the other's frames and ignores them).
  // ROCEFAB_VERBS_QPN_BASE sets it: the live runner gives a perftest run the QPNs the sim's
  // built-in app has for the same test, so both put the same UDP source ports (ECMP paths) on
  // the wire.
  uint32_t base = static_cast<uint32_t>((getpid() % 4000) + 1) << 12;
  if (const char* b = std::getenv("ROCEFAB_VERBS_QPN_BASE"); b != nullptr && *b != '\0') {
    char* end = nullptr;
    const unsigned long v = std::strtoul(b, &end, 10);
    if (*end != '\0' || v > (1u << 24) - 4096) {
      return fail(std::string("ROCEFAB_VERBS_QPN_BASE=") + b + ": must be 0.." +
                  std::to_string((1u << 24) - 4096));
    }
    base = static_cast<uint32_t>(v);
  }
  p.port->host().rnic().SetQpnBase(base);
  p.port->Start();
  std::atexit(WriteStats);
  StartStatsWriter();
  return p.port.get();
}

// ROCEFAB_VERBS_STATS=PATH (or "-" for stderr): the NIC's counters as JSON when the program
// exits: the host's and its RNIC's statistics (EmulatedHost::Stats), the port's frame counts
// and lateness, and the host's frame balance. A file is also rewritten (atomically, by rename)
// every 500 ms while the program runs, so a program that never exits (a livelocked test killed
// by its runner) leaves its NIC's last figures.
std::string StatsText(bool final_write) {
  Provider& p = P();
  nlohmann::json j;
  {
    std::lock_guard<std::mutex> lk(p.port->mu());
    const HostPort::Counters c = p.port->counters();
    j = {{"host", p.device->host},
         {"final", final_write},
         {"at_ps", p.port->Now()},
         {"nic", p.port->host().Stats()},
         {"port",
          {{"rx_frames", c.rx_frames},
           {"tx_frames", c.tx_frames},
           {"rx_no_mbuf", c.rx_no_mbuf},
           {"rx_kernel_drops", c.rx_kernel_drops},
           {"tx_errors", c.tx_errors},
           {"slips", c.slips},
           {"max_late_ps", c.max_late},
           {"slipped_ps", c.slipped},
           {"engine_realtime", p.port->realtime()},
           {"rx_late_us",
            {{"frames", p.port->rx_late().count()},
             {"p50", p.port->rx_late().PercentileUs(0.5)},
             {"p99", p.port->rx_late().PercentileUs(0.99)},
             {"p999", p.port->rx_late().PercentileUs(0.999)},
             {"max", p.port->rx_late().MaxUs()}}},
           {"tx_late_us",
            {{"frames", p.port->tx_late().count()},
             {"p50", p.port->tx_late().PercentileUs(0.5)},
             {"p99", p.port->tx_late().PercentileUs(0.99)},
             {"p999", p.port->tx_late().PercentileUs(0.999)},
             {"max", p.port->tx_late().MaxUs()}}}}}};
    if (auto b = p.port->host().frame_balance()) j["frame_balance"] = *b;
  }
  return j.dump(2) + "\n";
}

std::mutex g_stats_mu;       // one writer of the stats file at a time
bool g_stats_final = false;  // the exit's write happened: no snapshot replaces it

void WriteStatsFile(const std::string& path, const std::string& text, const char* suffix,
                    bool final_write) {
  std::lock_guard<std::mutex> lk(g_stats_mu);
  if (g_stats_final) return;
  g_stats_final = final_write;
  const std::string tmp = path + suffix;
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

void WriteStats() {
  const char* path = std::getenv("ROCEFAB_VERBS_STATS");
  if (path == nullptr || *path == '\0' || !P().port) return;
  const std::string text = StatsText(true);
  if (std::string(path) == "-") {
    std::fputs(text.c_str(), stderr);
  } else {
    WriteStatsFile(path, text, ".final.tmp", true);
  }
}

void StartStatsWriter() {
  const char* path = std::getenv("ROCEFAB_VERBS_STATS");
  if (path == nullptr || *path == '\0' || std::string(path) == "-") return;
  std::thread([file = std::string(path)] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a periodic snapshot
      WriteStatsFile(file, StatsText(false), ".tmp", false);
    }
  }).detach();
}

Context* Ctx(ibv_context* c) { return reinterpret_cast<Context*>(c); }
Qp* QpOf(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
Cq* CqOf(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
Pd* PdOf(ibv_pd* p) { return reinterpret_cast<Pd*>(p); }

ibv_wc_status StatusOf(WorkCompletion::Status s) {
  switch (s) {
    case WorkCompletion::Status::kSuccess:
      return IBV_WC_SUCCESS;
    case WorkCompletion::Status::kRetryExceeded:
      return IBV_WC_RETRY_EXC_ERR;
    case WorkCompletion::Status::kFlushed:
      return IBV_WC_WR_FLUSH_ERR;
    case WorkCompletion::Status::kRemoteAccessError:
      return IBV_WC_REM_ACCESS_ERR;
    case WorkCompletion::Status::kRemoteInvalidRequest:
      return IBV_WC_REM_INV_REQ_ERR;
    case WorkCompletion::Status::kRemoteOperationalError:
      return IBV_WC_REM_OP_ERR;
    case WorkCompletion::Status::kRnrRetryExceeded:
      return IBV_WC_RNR_RETRY_EXC_ERR;
    case WorkCompletion::Status::kLocalLengthError:
      return IBV_WC_LOC_LEN_ERR;
  }
  return IBV_WC_GENERAL_ERR;
}

// Queues a completion; a CQ armed with ibv_req_notify_cq signals its channel once.
void Push(Cq* cq, const ibv_wc& wc) {
  std::lock_guard<std::mutex> lk(cq->mu);
  if (static_cast<int>(cq->wcs.size()) >= cq->cq.cqe) ++cq->overruns;
  cq->wcs.push_back(wc);
  if (cq->armed && cq->channel != nullptr) {
    cq->armed = false;
    ibv_cq* p = &cq->cq;
    [[maybe_unused]] ssize_t r = write(cq->channel->write_fd, &p, sizeof p);
  }
}

// The engine's completion of one of this QP's requests (port lock held).
void OnCompletion(Qp* q, const WorkCompletion& c) {
  ibv_wc wc{};
  wc.status = StatusOf(c.status);
  wc.qp_num = q->qp.qp_num;
  if (c.op == WorkRequest::Op::kRecv) {
    auto it = q->recvs.find(c.wr_id);
    if (it == q->recvs.end()) return;
    wc.wr_id = it->second;
    q->recvs.erase(it);
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = static_cast<uint32_t>(c.bytes);
    wc.src_qp = c.src_qp;
    Push(q->rcq, wc);
    return;
  }
  auto it = q->sends.find(c.wr_id);
  if (it == q->sends.end()) return;
  const SendInfo info = it->second;
  q->sends.erase(it);
  if (c.status == WorkCompletion::Status::kSuccess && !info.signaled) return;
  wc.wr_id = info.wr_id;
  wc.opcode = info.opcode;
  wc.byte_len = info.length;
  Push(q->scq, wc);
}

// A completion the provider makes itself (flush of a post to a QP in error, a bad lkey).
void LocalCompletion(Cq* cq, uint32_t qpn, uint64_t wr_id, ibv_wc_status st, ibv_wc_opcode op) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = st;
  wc.opcode = op;
  wc.qp_num = qpn;
  Push(cq, wc);
}

// --- data path (context ops) ---

// Whether an empty ibv_poll_cq gives the CPU away (sched_yield). A busy-polling program (perftest,
// ibv_rc_pingpong without -e) on a machine with fewer cores than busy threads (its peer, the
// fabric's poll threads) otherwise holds the core for a whole scheduler slice (several ms) while
// the thread that would produce its completion waits to run. ROCEFAB_VERBS_POLL_YIELD=0/1;
// default: on where the machine has fewer than 8 CPUs. The NIC itself is never delayed by it.
bool PollYields() {
  static const bool yes = [] {
    const char* e = std::getenv("ROCEFAB_VERBS_POLL_YIELD");
    if (e != nullptr && *e != '\0') return std::string(e) != "0";
    return sysconf(_SC_NPROCESSORS_ONLN) < 8;
  }();
  return yes;
}

int PollCq(ibv_cq* c, int n, ibv_wc* out) {
  Cq* cq = CqOf(c);
  int k = 0;
  {
    std::lock_guard<std::mutex> lk(cq->mu);
    while (k < n && !cq->wcs.empty()) {
      out[k++] = cq->wcs.front();
      cq->wcs.pop_front();
    }
  }
  if (k == 0 && PollYields()) sched_yield();
  return k;
}

int ReqNotifyCq(ibv_cq* c, int /*solicited_only*/) {
  Cq* cq = CqOf(c);
  std::lock_guard<std::mutex> lk(cq->mu);
  cq->armed = true;
  return 0;
}

bool TranslateSges(Qp* q, const ibv_sge* sg, int n, bool write, std::vector<Sge>* out,
                   uint64_t* total) {
  *total = 0;
  for (int i = 0; i < n; ++i) {
    if (sg[i].length == 0) continue;
    uint8_t* a = q->pd->mem.Local(sg[i], write);
    if (a == nullptr) return false;
    out->push_back(Sge{a, sg[i].length});
    *total += sg[i].length;
  }
  return true;
}

int PostOneSend(Qp* q, HostPort* port, const ibv_send_wr* wr) {
  if (q->qp.state == IBV_QPS_ERR) {
    LocalCompletion(q->scq, q->qp.qp_num, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
    return 0;
  }
  if (q->qp.state != IBV_QPS_RTS) return EINVAL;
  if (wr->num_sge < 0 || wr->num_sge > static_cast<int>(q->cap.max_send_sge)) return EINVAL;
  if (q->sends.size() >= q->cap.max_send_wr) return ENOMEM;
  WorkRequest w;
  ibv_wc_opcode opcode;
  switch (wr->opcode) {
    case IBV_WR_SEND:
      w.op = WorkRequest::Op::kSend;
      opcode = IBV_WC_SEND;
      break;
    case IBV_WR_RDMA_WRITE:
      w.op = WorkRequest::Op::kWrite;
      opcode = IBV_WC_RDMA_WRITE;
      break;
    case IBV_WR_RDMA_READ:
      w.op = WorkRequest::Op::kRead;
      opcode = IBV_WC_RDMA_READ;
      break;
    default:
      return EINVAL;  // immediate data, atomics, memory windows: not supported
  }
  if (w.op != WorkRequest::Op::kSend) {
    w.remote_va = wr->wr.rdma.remote_addr;
    w.rkey = wr->wr.rdma.rkey;
  }
  uint64_t total = 0;
  if ((wr->send_flags & IBV_SEND_INLINE) && w.op != WorkRequest::Op::kRead) {
    auto data = std::make_shared<std::vector<uint8_t>>();
    for (int i = 0; i < wr->num_sge; ++i) {
      const auto* a = reinterpret_cast<const uint8_t*>(wr->sg_list[i].addr);
      data->insert(data->end(), a, a + wr->sg_list[i].length);
    }
    if (data->size() > q->cap.max_inline_data) return EINVAL;
    total = data->size();
    if (total > 0) w.local = {Sge{data->data(), static_cast<uint32_t>(total)}};
    w.owned = data;
  } else if (!TranslateSges(q, wr->sg_list, wr->num_sge, w.op == WorkRequest::Op::kRead, &w.local,
                            &total)) {
    // IBTA C10-? : a bad lkey or range completes in error (IBV_WC_LOC_PROT_ERR) and the QP
    // goes to the error state.
    LocalCompletion(q->scq, q->qp.qp_num, wr->wr_id, IBV_WC_LOC_PROT_ERR, opcode);
    q->qp.state = IBV_QPS_ERR;
    port->host().rnic().FlushQp(port->Now(), q->qp.qp_num);
    return 0;
  }
  w.length = total;
  const uint64_t id = q->next_id++;
  w.wr_id = id;
  const bool signaled = q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
  q->sends[id] = SendInfo{wr->wr_id, signaled, opcode, static_cast<uint32_t>(total)};
  if (!port->host().rnic().PostSend(port->Now(), q->qp.qp_num, w)) {
    q->sends.erase(id);
    return EINVAL;
  }
  return 0;
}

int PostSend(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* q = QpOf(ibqp);
  HostPort* port = P().port.get();
  int rc = 0;
  {
    std::lock_guard<std::mutex> lk(port->mu());
    for (; wr != nullptr; wr = wr->next) {
      rc = PostOneSend(q, port, wr);
      if (rc != 0) {
        if (bad) *bad = wr;
        break;
      }
    }
  }
  port->Poke();
  return rc;
}

int PostRecv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* q = QpOf(ibqp);
  HostPort* port = P().port.get();
  int rc = 0;
  {
    std::lock_guard<std::mutex> lk(port->mu());
    for (; wr != nullptr; wr = wr->next) {
      if (q->qp.state == IBV_QPS_ERR) {
        LocalCompletion(q->rcq, q->qp.qp_num, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
        continue;
      }
      if (q->qp.state == IBV_QPS_RESET || wr->num_sge < 0 ||
          wr->num_sge > static_cast<int>(q->cap.max_recv_sge)) {
        rc = EINVAL;
      } else if (q->recvs.size() >= q->cap.max_recv_wr) {
        rc = ENOMEM;
      }
      RecvRequest r;
      uint64_t total = 0;
      if (rc == 0 && !TranslateSges(q, wr->sg_list, wr->num_sge, true, &r.local, &total)) {
        rc = EINVAL;  // a receive with a bad lkey is refused at post time
      }
      if (rc != 0) {
        if (bad) *bad = wr;
        break;
      }
      r.wr_id = q->next_id++;
      q->recvs[r.wr_id] = wr->wr_id;
      port->host().rnic().PostRecv(port->Now(), q->qp.qp_num, std::move(r));
    }
  }
  port->Poke();
  return rc;
}

int PostSrqRecv(ibv_srq*, ibv_recv_wr*, ibv_recv_wr**) { return EOPNOTSUPP; }

uint32_t MtuBytes(ibv_mtu m) { return 128u << static_cast<int>(m); }

ibv_mtu MtuEnum(uint32_t bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

// Attributes each RC transition needs (IBTA vol. 1 table 91; the kernel's ib_modify_qp_is_ok).
int Required(ibv_qp_state from, ibv_qp_state to) {
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
    return IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
    return IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
    return IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return 0;
}

bool Allowed(ibv_qp_state from, ibv_qp_state to) {
  if (to == IBV_QPS_ERR) return true;
  if (to == IBV_QPS_RESET) return from == IBV_QPS_RESET || from == IBV_QPS_INIT;
  return (from == IBV_QPS_RESET && to == IBV_QPS_INIT) ||
         (from == IBV_QPS_INIT && (to == IBV_QPS_INIT || to == IBV_QPS_RTR)) ||
         (from == IBV_QPS_RTR && to == IBV_QPS_RTS) || (from == IBV_QPS_RTS && to == IBV_QPS_RTS);
}

int ModifyQpLocked(Qp* q, HostPort* port, ibv_qp_attr* a, int mask) {
  const ibv_qp_state from = q->qp.state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? a->qp_state : from;
  if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != from) return EINVAL;
  if (!Allowed(from, to)) return EINVAL;
  if ((mask & Required(from, to)) != Required(from, to)) return EINVAL;
  if ((mask & IBV_QP_PORT) && a->port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0) return EINVAL;
  if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
    return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31) return EINVAL;
  if ((mask & IBV_QP_AV) && !a->ah_attr.is_global) return EINVAL;  // RoCE needs a GRH
  Rnic& nic = port->host().rnic();
  const Time now = port->Now();
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    const uint8_t* g = a->ah_attr.grh.dgid.raw;
    const Ipv4 remote = static_cast<Ipv4>(g[12]) << 24 | g[13] << 16 | g[14] << 8 | g[15];
    QpOptions o;
    // Traffic class 0 is the NIC's default DSCP (the scenario's nic.data_dscp), as a port's
    // default RoCE TOS is on a NIC; any other value is the DSCP (upper six bits) it carries.
    if (a->ah_attr.grh.traffic_class != 0) o.dscp = a->ah_attr.grh.traffic_class >> 2;
    o.memory = &q->pd->mem;
    o.receive_queue = true;
    // The path MTU is capped by the port's active MTU (what ibv_query_port reports).
    o.mtu = std::min(MtuBytes(a->path_mtu), MtuBytes(MtuEnum(nic.config().mtu)));
    o.min_rnr_timer = a->min_rnr_timer;
    if (!nic.ConnectQp(q->qp.qp_num, remote, a->dest_qp_num, a->rq_psn, o)) return EINVAL;
  }
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    const int timeout = a->timeout == 0 ? 31 : a->timeout;  // 0: infinite; 31 is 2.4 hours
    if (!nic.StartSending(q->qp.qp_num, a->sq_psn, timeout, a->retry_cnt, a->rnr_retry))
      return EINVAL;
  }
  if (to == IBV_QPS_ERR && from != IBV_QPS_ERR) nic.FlushQp(now, q->qp.qp_num);
  // Keep what was set, for ibv_query_qp.
  ibv_qp_attr& k = q->attr;
  if (mask & IBV_QP_ACCESS_FLAGS) k.qp_access_flags = a->qp_access_flags;
  if (mask & IBV_QP_PKEY_INDEX) k.pkey_index = a->pkey_index;
  if (mask & IBV_QP_PORT) k.port_num = a->port_num;
  if (mask & IBV_QP_AV) k.ah_attr = a->ah_attr;
  if (mask & IBV_QP_PATH_MTU) k.path_mtu = a->path_mtu;
  if (mask & IBV_QP_DEST_QPN) k.dest_qp_num = a->dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) k.rq_psn = a->rq_psn;
  if (mask & IBV_QP_SQ_PSN) k.sq_psn = a->sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) k.max_dest_rd_atomic = a->max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) k.max_rd_atomic = a->max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) k.min_rnr_timer = a->min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) k.timeout = a->timeout;
  if (mask & IBV_QP_RETRY_CNT) k.retry_cnt = a->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) k.rnr_retry = a->rnr_retry;
  q->attr_mask |= mask;
  q->qp.state = to;
  k.qp_state = to;
  return 0;
}

}  // namespace
}  // namespace rocefab

using namespace rocefab;  // NOLINT: the C ABI below

extern "C" {

ibv_device** ibv_get_device_list(int* num) {
  Provider& p = P();
  {
    std::lock_guard<std::mutex> lk(p.mu);
    if (!p.listed) {
      p.listed = true;
      p.device.reset(ReadDevice());
      if (p.device) p.list[0] = &p.device->dev;
    }
  }
  if (num != nullptr) *num = p.device ? 1 : 0;
  return p.list;
}

void ibv_free_device_list(ibv_device** /*list*/) {}

const char* ibv_get_device_name(ibv_device* d) { return d->name; }

__be64 ibv_get_device_guid(ibv_device* d) {
  if (!IsOurs(d)) return 0;
  // EUI-64 from the host's MAC (ff:fe in the middle, universal/local bit flipped), as rdma_rxe.
  HostPort* port = Port();
  if (port == nullptr) return 0;
  const Mac& m = port->host().config().mac;
  const uint8_t* b = m.addr_bytes;
  uint8_t g[8] = {static_cast<uint8_t>(b[0] ^ 2), b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]};
  __be64 out;
  std::memcpy(&out, g, 8);
  return out;
}

int ibv_get_device_index(ibv_device* d) { return IsOurs(d) ? 0 : -1; }

int ibv_fork_init(void) { return 0; }

int ibv_read_sysfs_file(const char*, const char*, char*, size_t) { return -1; }

ibv_context* ibv_open_device(ibv_device* d) {
  if (!IsOurs(d)) {
    errno = ENODEV;
    return nullptr;
  }
  if (Port() == nullptr) {
    errno = ENODEV;
    return nullptr;
  }
  auto* c = new Context();
  ibv_context& x = c->ctx;
  x.device = d;
  x.ops.poll_cq = PollCq;
  x.ops.req_notify_cq = ReqNotifyCq;
  x.ops.post_send = PostSend;
  x.ops.post_recv = PostRecv;
  x.ops.post_srq_recv = PostSrqRecv;
  x.cmd_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  x.async_fd = eventfd(0, EFD_CLOEXEC);  // no asynchronous events are ever raised
  x.num_comp_vectors = 1;
  pthread_mutex_init(&x.mutex, nullptr);
  x.abi_compat = nullptr;  // a legacy context: verbs.h's *_ex helpers take their fallbacks
  return &x;
}

int ibv_close_device(ibv_context* c) {
  close(c->cmd_fd);
  close(c->async_fd);
  delete Ctx(c);
  return 0;
}

int ibv_get_async_event(ibv_context* c, ibv_async_event* /*event*/) {
  uint64_t x;
  [[maybe_unused]] ssize_t r = read(c->async_fd, &x, sizeof x);  // blocks: none ever comes
  errno = EAGAIN;
  return -1;
}

void ibv_ack_async_event(ibv_async_event*) {}

int ibv_query_device(ibv_context* c, ibv_device_attr* a) {
  std::memset(a, 0, sizeof *a);
  std::snprintf(a->fw_ver, sizeof a->fw_ver, "rocefab-nic-emu");
  a->node_guid = ibv_get_device_guid(c->device);
  a->sys_image_guid = a->node_guid;
  a->max_mr_size = ~0ull;
  a->page_size_cap = 4096;
  a->vendor_id = 0;
  a->vendor_part_id = 0;
  a->hw_ver = 1;
  a->max_qp = 4095;
  a->max_qp_wr = 16384;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
  a->max_sge = 16;
  a->max_sge_rd = 16;
  a->max_cq = 16384;
  a->max_cqe = 1 << 20;
  a->max_mr = 1 << 16;
  a->max_pd = 1 << 12;
  a->max_qp_rd_atom = 16;
  a->max_qp_init_rd_atom = 16;
  a->max_res_rd_atom = 16 * 4095;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 15;
  a->phys_port_cnt = 1;
  return 0;
}

int(ibv_query_port)(ibv_context* /*c*/, uint8_t port_num, struct _compat_ibv_port_attr* out) {
  if (port_num != 1) return EINVAL;
  HostPort* port = P().port.get();
  ibv_port_attr a{};
  a.state = IBV_PORT_ACTIVE;
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = MtuEnum(port->host().config().rnic.mtu);
  a.gid_tbl_len = 1;
  a.port_cap_flags = 0;
  a.max_msg_sz = 1u << 31;
  a.pkey_tbl_len = 1;
  a.lid = 0;
  a.active_width = 1;  // 1x
  a.max_vl_num = 1;    // VL0
  // IB speed codes: 1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10, 16 FDR 14, 32 EDR 25 Gb/s per lane.
  const double g = port->host().config().rate.bps() / 1e9;
  a.active_speed = g >= 25 ? 32 : g >= 14 ? 16 : g >= 10 ? 4 : g >= 5 ? 2 : 1;
  a.phys_state = 5;  // LinkUp
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  std::memcpy(out, &a, sizeof a);
  return 0;
}

int ibv_query_gid(ibv_context* /*c*/, uint8_t port_num, int index, ibv_gid* gid) {
  if (port_num != 1 || index != 0) return -1;
  const Ipv4 ip = P().port->host().config().ip;
  std::memset(gid, 0, sizeof *gid);
  gid->raw[10] = gid->raw[11] = 0xff;  // IPv4-mapped: the RoCEv2 GID of an IPv4 address
  gid->raw[12] = static_cast<uint8_t>(ip >> 24);
  gid->raw[13] = static_cast<uint8_t>(ip >> 16);
  gid->raw[14] = static_cast<uint8_t>(ip >> 8);
  gid->raw[15] = static_cast<uint8_t>(ip);
  return 0;
}

int _ibv_query_gid_ex(ibv_context* c, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry,
                      uint32_t /*flags*/, size_t /*entry_size*/) {
  if (port_num != 1) return EINVAL;
  if (gid_index != 0) return ENODATA;
  std::memset(entry, 0, sizeof *entry);
  ibv_query_gid(c, 1, 0, &entry->gid);
  entry->gid_index = 0;
  entry->port_num = 1;
  entry->gid_type = IBV_GID_TYPE_ROCE_V2;
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* c, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  if (max_entries < 1) return -EINVAL;
  const int r = _ibv_query_gid_ex(c, 1, 0, entries, flags, entry_size);
  return r == 0 ? 1 : -r;
}

int ibv_query_gid_type(ibv_context*, uint8_t port_num, unsigned int index, int* type) {
  if (port_num != 1 || index != 0) return -1;
  *type = 1;  // IBV_GID_TYPE_SYSFS_ROCE_V2
  return 0;
}

int ibv_query_pkey(ibv_context*, uint8_t port_num, int index, __be16* pkey) {
  if (port_num != 1 || index != 0) return -1;
  *pkey = 0xFFFF;
  return 0;
}

int ibv_get_pkey_index(ibv_context*, uint8_t port_num, __be16 pkey) {
  return port_num == 1 && pkey == 0xFFFF ? 0 : -1;
}

ibv_pd* ibv_alloc_pd(ibv_context* c) {
  auto* p = new Pd();
  p->pd.context = c;
  static std::atomic<uint32_t> handle{0};
  p->pd.handle = ++handle;
  return &p->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  Pd* p = PdOf(pd);
  if (!p->mem.by_key.empty() || p->qps > 0) return EBUSY;
  delete p;
  return 0;
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  // IBV_ACCESS_REMOTE_WRITE needs LOCAL_WRITE (ibv_reg_mr(3)).
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
      !(access & IBV_ACCESS_LOCAL_WRITE)) {
    errno = EINVAL;
    return nullptr;
  }
  if (addr == nullptr && length > 0) {
    errno = EINVAL;
    return nullptr;
  }
  Pd* p = PdOf(pd);
  HostPort* port = P().port.get();
  auto* m = new Mr();
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->access = static_cast<int>(access);
  m->iova = iova;
  static uint32_t next_key = 0x100;
  std::lock_guard<std::mutex> lk(port->mu());
  uint32_t key;
  do {
    const uint32_t k = next_key++;
    key = (k << 8) | ((k * 0x9E3779B1u) >> 24);  // the low byte varies, as mlx5's keys do
  } while (p->mem.by_key.count(key));
  m->mr.lkey = m->mr.rkey = key;
  m->mr.handle = key;
  p->mem.by_key[key] = m;
  return &m->mr;
}

ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uint64_t>(addr),
                          static_cast<unsigned int>(access));
}

ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned int>(access));
}

int ibv_dereg_mr(ibv_mr* mr) {
  Mr* m = reinterpret_cast<Mr*>(mr);
  HostPort* port = P().port.get();
  {
    std::lock_guard<std::mutex> lk(port->mu());
    PdOf(mr->pd)->mem.by_key.erase(mr->lkey);
  }
  delete m;
  return 0;
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* c) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  auto* ch = new Channel();
  ch->ch.context = c;
  ch->ch.fd = fds[0];
  ch->write_fd = fds[1];
  ch->ch.refcnt = 0;
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* c) {
  Channel* ch = reinterpret_cast<Channel*>(c);
  if (c->refcnt > 0) return EBUSY;
  close(c->fd);
  close(ch->write_fd);
  delete ch;
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  if (cqe < 1 || cqe > (1 << 20) || comp_vector < 0 || comp_vector >= c->num_comp_vectors) {
    errno = EINVAL;
    return nullptr;
  }
  auto* q = new Cq();
  q->cq.context = c;
  q->cq.channel = channel;
  q->cq.cq_context = cq_context;
  q->cq.cqe = cqe;
  pthread_mutex_init(&q->cq.mutex, nullptr);
  pthread_cond_init(&q->cq.cond, nullptr);
  if (channel != nullptr) {
    q->channel = reinterpret_cast<Channel*>(channel);
    ++channel->refcnt;
  }
  return &q->cq;
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (cqe < 1 || cqe > (1 << 20)) return EINVAL;
  cq->cqe = cqe;
  return 0;
}

int ibv_destroy_cq(ibv_cq* cq) {
  Cq* q = CqOf(cq);
  if (q->qps > 0) return EBUSY;
  if (cq->channel != nullptr) --cq->channel->refcnt;
  delete q;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  ibv_cq* p = nullptr;
  if (read(channel->fd, &p, sizeof p) != static_cast<ssize_t>(sizeof p)) return -1;
  *cq = p;
  *cq_context = p->cq_context;
  return 0;
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (init->qp_type != IBV_QPT_RC) {
    errno = EOPNOTSUPP;  // UD and UC QPs are not modelled
    return nullptr;
  }
  if (init->srq != nullptr || init->send_cq == nullptr || init->recv_cq == nullptr) {
    errno = init->srq != nullptr ? EOPNOTSUPP : EINVAL;
    return nullptr;
  }
  ibv_qp_cap& c = init->cap;
  if (c.max_send_wr > 16384 || c.max_recv_wr > 16384 || c.max_send_sge > 16 ||
      c.max_recv_sge > 16 || c.max_inline_data > 1024) {
    errno = EINVAL;
    return nullptr;
  }
  HostPort* port = P().port.get();
  auto* q = new Qp();
  q->pd = PdOf(pd);
  q->scq = CqOf(init->send_cq);
  q->rcq = CqOf(init->recv_cq);
  c.max_send_wr = std::max<uint32_t>(c.max_send_wr, 1);
  c.max_recv_wr = std::max<uint32_t>(c.max_recv_wr, 1);
  c.max_send_sge = std::max<uint32_t>(c.max_send_sge, 1);
  c.max_recv_sge = std::max<uint32_t>(c.max_recv_sge, 1);
  c.max_inline_data = std::max<uint32_t>(c.max_inline_data, 256);
  q->cap = c;
  q->sq_sig_all = init->sq_sig_all != 0;
  ibv_qp& x = q->qp;
  x.context = pd->context;
  x.qp_context = init->qp_context;
  x.pd = pd;
  x.send_cq = init->send_cq;
  x.recv_cq = init->recv_cq;
  x.qp_type = IBV_QPT_RC;
  x.state = IBV_QPS_RESET;
  pthread_mutex_init(&x.mutex, nullptr);
  pthread_cond_init(&x.cond, nullptr);
  {
    std::lock_guard<std::mutex> lk(port->mu());
    Rnic& nic = port->host().rnic();
    x.qp_num = nic.AllocateQp();
    x.handle = x.qp_num;
    nic.SetQpHandlers(
        x.qp_num, [q](Time, const WorkCompletion& wc) { OnCompletion(q, wc); }, nullptr);
  }
  ++q->pd->qps;
  ++q->scq->qps;
  ++q->rcq->qps;
  return &x;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  HostPort* port = P().port.get();
  int rc;
  {
    std::lock_guard<std::mutex> lk(port->mu());
    rc = ModifyQpLocked(QpOf(qp), port, attr, mask);
  }
  port->Poke();
  return rc;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int /*mask*/, ibv_qp_init_attr* init) {
  Qp* q = QpOf(qp);
  *attr = q->attr;
  attr->qp_state = attr->cur_qp_state = qp->state;
  attr->cap = q->cap;
  std::memset(init, 0, sizeof *init);
  init->qp_context = qp->qp_context;
  init->send_cq = qp->send_cq;
  init->recv_cq = qp->recv_cq;
  init->cap = q->cap;
  init->qp_type = IBV_QPT_RC;
  init->sq_sig_all = q->sq_sig_all;
  return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
  Qp* q = QpOf(qp);
  HostPort* port = P().port.get();
  {
    std::lock_guard<std::mutex> lk(port->mu());
    port->host().rnic().CloseQp(qp->qp_num);
  }
  --q->pd->qps;
  --q->scq->qps;
  --q->rcq->qps;
  delete q;
  return 0;
}

struct RfAh {
  ibv_ah ah;
  ibv_ah_attr attr;
};

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!attr->is_global) {
    errno = EINVAL;  // RoCE address handles carry a GRH
    return nullptr;
  }
  auto* a = new RfAh();
  a->ah.context = pd->context;
  a->ah.pd = pd;
  a->attr = *attr;
  return &a->ah;
}

int ibv_destroy_ah(ibv_ah* ah) {
  delete reinterpret_cast<RfAh*>(ah);
  return 0;
}

ibv_srq* ibv_create_srq(ibv_pd*, ibv_srq_init_attr*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

int ibv_destroy_srq(ibv_srq*) { return EOPNOTSUPP; }

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) { return nullptr; }

int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }

}  // extern "C"
