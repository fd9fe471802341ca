#include "nic-emu/rdma_apps.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nic-emu/emulated_host.h"

namespace rocefab {

bool PerftestIsLatency(PerftestSpec::Test t) {
  return t == PerftestSpec::Test::kWriteLat || t == PerftestSpec::Test::kSendLat;
}

int PerftestQps(const PerftestSpec& s) {
  return PerftestIsLatency(s.test) ? 1 : std::max(1, s.qps);
}

const char* PerftestName(PerftestSpec::Test t) {
  switch (t) {
    case PerftestSpec::Test::kWriteBw:
      return "write_bw";
    case PerftestSpec::Test::kReadBw:
      return "read_bw";
    case PerftestSpec::Test::kSendBw:
      return "send_bw";
    case PerftestSpec::Test::kWriteLat:
      return "write_lat";
    case PerftestSpec::Test::kSendLat:
      return "send_lat";
  }
  return "?";
}

namespace {
WorkRequest::Op OpOf(PerftestSpec::Test t) {
  switch (t) {
    case PerftestSpec::Test::kReadBw:
      return WorkRequest::Op::kRead;
    case PerftestSpec::Test::kSendBw:
    case PerftestSpec::Test::kSendLat:
      return WorkRequest::Op::kSend;
    default:
      return WorkRequest::Op::kWrite;
  }
}
bool IsLat(PerftestSpec::Test t) { return PerftestIsLatency(t); }
Time Pct(std::vector<Time> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t r = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(r, 1, v.size()) - 1];
}
}  // namespace

ClosedLoopStalls AnalyzeClosedLoop(const std::vector<Time>& lat) {
  ClosedLoopStalls r;
  if (lat.empty()) return r;
  r.median = Pct(lat, 0.5);
  r.max = Pct(lat, 1.0);
  const Time step = std::max<Time>(r.median, 1);
  r.warning =
      static_cast<double>(r.max) > ClosedLoopStalls::kStallFactor * static_cast<double>(step);
  std::vector<Time> corrected = lat;
  for (Time l : lat) {
    if (static_cast<double>(l) <= ClosedLoopStalls::kStallFactor * static_cast<double>(step)) {
      continue;
    }
    ++r.stalls;
    const Time missed = l / step - 1;
    r.suppressed += static_cast<uint64_t>(missed);
    // The corrected figures are an estimate: beyond 4 M put-back samples (a stall of ~10 s at
    // a 2.5 us round trip) further ones are counted in `suppressed` but not materialised.
    for (Time k = 1; k <= missed && corrected.size() < (size_t{4} << 20); ++k) {
      corrected.push_back(l - k * step);
    }
  }
  r.corrected_p99 = Pct(corrected, 0.99);
  r.corrected_p999 = Pct(corrected, 0.999);
  double sum = 0;
  for (Time t : corrected) sum += static_cast<double>(t);
  r.corrected_avg = sum / static_cast<double>(corrected.size());
  return r;
}

Perftest::Perftest(const PerftestSpec& spec, EmulatedHost* client, EmulatedHost* server,
                   std::string cname, std::string sname)
    : spec_(spec),
      client_(client),
      server_(server),
      cname_(std::move(cname)),
      sname_(std::move(sname)) {
  const int n = PerftestQps(spec_);
  for (int i = 0; i < n; ++i) {
    const uint32_t cq = client_->rnic().NextQpn(), sq = server_->rnic().NextQpn();
    const uint32_t cpsn = (0x1000 * (i + 1)) & 0xFFFFFF, spsn = (0x2000 * (i + 1)) & 0xFFFFFF;
    client_->rnic().CreateQp(server_->config().ip, sq, cpsn, spsn, spec_.qp);
    server_->rnic().CreateQp(client_->config().ip, cq, spsn, cpsn, spec_.qp);
    cqp_.push_back(cq);
    sqp_.push_back(sq);
    posted_.push_back(0);
    completed_.push_back(0);
    const size_t idx = static_cast<size_t>(i);
    if (IsLat(spec_.test)) {
      // Ping-pong: the server answers every message it receives; the client measures.
      server_->rnic().SetQpHandlers(sq, nullptr, [this](Time now, uint32_t, uint64_t) {
        server_->rnic().PostSend(now, sqp_[0],
                                 WorkRequest{OpOf(spec_.test), 0, spec_.size, 0x2000000, 2});
      });
      client_->rnic().SetQpHandlers(
          cq,
          [this](Time now, const WorkCompletion& wc) {
            if (wc.status != WorkCompletion::Status::kSuccess) {
              ++errors_;
              RecordFailure(now, wc);
              done_ = true;
              last_completion_ = now;
            }
          },
          [this](Time now, uint32_t, uint64_t) {
            if (now > spec_.end) return;  // stopped: a reply after the end is not a sample
            lat_.push_back((now - lat_sent_) / 2);
            last_completion_ = now;
            if (++lat_iter_ >= spec_.iterations) {
              done_ = true;
              return;
            }
            if (now >= spec_.end) return;  // no new iteration after the end
            lat_sent_ = now;
            client_->rnic().PostSend(now, cqp_[0],
                                     WorkRequest{OpOf(spec_.test), 0, spec_.size, 0x1000000, 1});
          });
      lat_sent_ = spec_.start;
      first_post_ = spec_.start;
      client_->rnic().PostAt(spec_.start, cq,
                             WorkRequest{OpOf(spec_.test), 0, spec_.size, 0x1000000, 1});
    } else {
      client_->rnic().SetQpHandlers(
          cq, [this, idx](Time now, const WorkCompletion& wc) { OnClientCompletion(now, idx, wc); },
          nullptr);
      const int first = std::min(spec_.tx_depth, spec_.iterations);
      for (int k = 0; k < first; ++k) {
        client_->rnic().PostAt(spec_.start, cq,
                               WorkRequest{OpOf(spec_.test), static_cast<uint64_t>(k), spec_.size,
                                           0x1000000 + k * spec_.size, 1});
      }
      posted_[idx] = first;
      first_post_ = spec_.start;
    }
  }
}

void Perftest::OnClientCompletion(Time now, size_t i, const WorkCompletion& wc) {
  if (now > spec_.end) return;  // the test was stopped: frames in flight drain, uncounted
  if (wc.status != WorkCompletion::Status::kSuccess) {
    ++errors_;
    RecordFailure(now, wc);
  } else {
    bytes_ += wc.bytes;
    done_log_.emplace_back(now, wc.bytes);
  }
  ++completed_[i];
  last_completion_ = now;
  if (posted_[i] < spec_.iterations && wc.status == WorkCompletion::Status::kSuccess &&
      now < spec_.end) {
    client_->rnic().PostSend(now, cqp_[i],
                             WorkRequest{OpOf(spec_.test), static_cast<uint64_t>(posted_[i]),
                                         spec_.size, 0x1000000 + posted_[i] * spec_.size, 1});
    ++posted_[i];
  }
  bool all = true;
  for (size_t k = 0; k < completed_.size(); ++k)
    all &= completed_[k] >= spec_.iterations || errors_ > 0;
  done_ = all;
}

void Perftest::RecordFailure(Time now, const WorkCompletion& wc) {
  if (failures_.size() >= kMaxFailures) return;
  failures_.push_back({{"t_us", static_cast<double>(now) / kUs},
                       {"posted_us", static_cast<double>(wc.posted) / kUs},
                       {"qpn", wc.qpn},
                       {"wr_id", wc.wr_id},
                       {"status", WcStatusName(wc.status)}});
}

nlohmann::json Perftest::Result() const {
  nlohmann::json j = {{"test", PerftestName(spec_.test)},
                      {"from", cname_},
                      {"to", sname_},
                      {"size", spec_.size},
                      {"iterations", spec_.iterations},
                      {"completed", done_},
                      {"errors", errors_},
                      {"app", spec_.app == PerftestSpec::App::kPerftest
                                  ? "builtin (stands in for the perftest binary)"
                                  : "builtin"}};
  if (!failures_.empty()) j["failed_wrs"] = failures_;
  // When the client's first data packet left: the live runner reports the same for a real
  // program (its NIC's first_data_tx_ps), whose start depends on how fast it set up.
  if (client_->rnic().first_data_tx_at() >= 0) {
    j["first_tx_at_us"] = static_cast<double>(client_->rnic().first_data_tx_at()) / kUs;
  }
  // The RoCEv2 UDP source port of each QP, per end: with the addresses, what ECMP hashes.
  nlohmann::json cs = nlohmann::json::array(), ss = nlohmann::json::array();
  for (uint32_t q : cqp_) cs.push_back(client_->rnic().qp_sport(q));
  for (uint32_t q : sqp_) ss.push_back(server_->rnic().qp_sport(q));
  j["udp_sports"] = cs;
  j["server_udp_sports"] = ss;
  if (IsLat(spec_.test)) {
    j["samples"] = lat_.size();
    double sum = 0;
    for (Time t : lat_) sum += static_cast<double>(t);
    j["t_min_us"] = Pct(lat_, 1e-9) / 1e6;
    j["t_typical_us"] = Pct(lat_, 0.5) / 1e6;
    j["t_avg_us"] = lat_.empty() ? 0.0 : sum / lat_.size() / 1e6;
    j["t_p99_us"] = Pct(lat_, 0.99) / 1e6;
    j["t_p999_us"] = Pct(lat_, 0.999) / 1e6;
    j["t_max_us"] = Pct(lat_, 1.0) / 1e6;
    const ClosedLoopStalls co = AnalyzeClosedLoop(lat_);
    j["coordinated_omission"] = {{"warning", co.warning},
                                 {"stall_factor", ClosedLoopStalls::kStallFactor},
                                 {"stalls", co.stalls},
                                 {"suppressed_operations", co.suppressed},
                                 {"corrected_avg_us", co.corrected_avg / 1e6},
                                 {"corrected_p99_us", co.corrected_p99 / 1e6},
                                 {"corrected_p999_us", co.corrected_p999 / 1e6}};
    if (lat_.size() <= 10000) {  // samples for latency CDFs (rocefab report)
      nlohmann::json samples = nlohmann::json::array();
      for (Time t : lat_) samples.push_back(t / 1e6);
      j["latency_us"] = samples;
    }
  } else {
    j["qps"] = cqp_.size();
    // A finished test ends at its last completion; an unfinished one at the test's end, so the
    // time it spent stalled after its last completion counts.
    const Time until = done_ || spec_.end == kTimeNever ? last_completion_ : spec_.end;
    const double secs = until > first_post_ ? (until - first_post_) / 1e12 : 0;
    j["bw_time_s"] = secs;
    j["bytes"] = bytes_;
    j["bw_avg_gbps"] = secs > 0 ? bytes_ * 8.0 / secs / 1e9 : 0.0;
    j["msg_rate_mpps"] = secs > 0 ? bytes_ / static_cast<double>(spec_.size) / secs / 1e6 : 0.0;
    if (spec_.report_interval > 0) {
      nlohmann::json iv = nlohmann::json::array();
      const Time stop = spec_.end != kTimeNever ? spec_.end : last_completion_;
      for (Time a = spec_.start; a < stop; a += spec_.report_interval) {
        const Time b = std::min(a + spec_.report_interval, stop);
        iv.push_back({{"from_ms", a / 1e9}, {"to_ms", b / 1e9}, {"gbps", GbpsBetween(a, b)}});
      }
      j["intervals"] = iv;
    }
  }
  return j;
}

double Perftest::GbpsBetween(Time from, Time to) const {
  uint64_t b = 0;
  for (const auto& [t, n] : done_log_) {
    if (t >= from && t < to) b += n;
  }
  return to > from ? b * 8.0 / ((to - from) / 1e12) / 1e9 : 0.0;
}

std::string Perftest::Text() const { return PerftestText(Result()); }

namespace {
std::string PerftestLine(const nlohmann::json& r) {
  const std::string test = r["test"].get<std::string>();
  const std::string from = r["from"].get<std::string>(), to = r["to"].get<std::string>();
  const auto size = static_cast<unsigned long long>(r["size"].get<uint64_t>());
  const bool done = r.value("completed", false);
  if (r.contains("error")) {  // a real perftest run that printed no result
    return " " + test + " " + from + "->" + to + " " + r.value("program", std::string()) + ": " +
           r["error"].get<std::string>();
  }
  char buf[320];
  if (r.contains("samples")) {  // a latency test
    const auto samples = r["samples"].get<uint64_t>();
    char unfinished[64] = "";
    if (!done)
      std::snprintf(unfinished, sizeof unfinished, " (not finished: %llu samples)",
                    static_cast<unsigned long long>(samples));
    std::snprintf(buf, sizeof buf,
                  " %-9s %-4s->%-4s #bytes %-8llu #iterations %-6d t_min[us] %.2f t_typical[us] "
                  "%.2f t_avg[us] %.2f 99%%[us] %.2f 99.9%%[us] %.2f t_max[us] %.2f%s",
                  test.c_str(), from.c_str(), to.c_str(), size, r["iterations"].get<int>(),
                  r["t_min_us"].get<double>(), r["t_typical_us"].get<double>(),
                  r["t_avg_us"].get<double>(), r["t_p99_us"].get<double>(),
                  r["t_p999_us"].get<double>(), r["t_max_us"].get<double>(), unfinished);
    const nlohmann::json co = r.value("coordinated_omission", nlohmann::json::object());
    if (co.value("warning", false)) {
      char warn[512];
      std::snprintf(warn, sizeof warn,
                    "\n WARNING: t_max is %.0fx the median: the responder stalled and this "
                    "closed-loop test posted nothing meanwhile, so %llu operations were suppressed "
                    "(coordinated omission; %llu stall(s)). Open-loop estimate: t_avg[us] %.2f "
                    "99%%[us] %.2f 99.9%%[us] %.2f",
                    r["t_max_us"].get<double>() / std::max(1e-12, r["t_typical_us"].get<double>()),
                    static_cast<unsigned long long>(co["suppressed_operations"].get<uint64_t>()),
                    static_cast<unsigned long long>(co["stalls"].get<uint64_t>()),
                    co["corrected_avg_us"].get<double>(), co["corrected_p99_us"].get<double>(),
                    co["corrected_p999_us"].get<double>());
      return std::string(buf) + warn;
    }
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                " %-9s %-4s->%-4s #bytes %-8llu #iterations %-6d #qps %d BW average[Gb/sec] %.2f "
                "MsgRate[Mpps] %.4f%s",
                test.c_str(), from.c_str(), to.c_str(), size, r["iterations"].get<int>(),
                r.value("qps", 1), r["bw_avg_gbps"].get<double>(), r["msg_rate_mpps"].get<double>(),
                done ? "" : " (not finished)");
  std::string out;
  for (const auto& iv : r.value("intervals", nlohmann::json::array())) {
    char line[160];
    std::snprintf(line, sizeof line, " %-9s %-4s->%-4s [%8.3f-%8.3f ms] BW[Gb/sec] %.2f\n",
                  test.c_str(), from.c_str(), to.c_str(), iv["from_ms"].get<double>(),
                  iv["to_ms"].get<double>(), iv["gbps"].get<double>());
    out += line;
  }
  return out + buf;
}
}  // namespace

std::string PerftestText(const nlohmann::json& r) {
  std::string t = PerftestLine(r);
  // A real perftest run (rdma "app": "perftest"): the figures are the program's own.
  if (r.value("app", std::string()) == "perftest" && !r.contains("error")) {
    std::string tag = "  [" + r.value("program", std::string());
    // How late the two NICs (in the programs' processes) ran: a delay a real RNIC does not add.
    double rx = -1, tx = -1;
    for (const char* end : {"nic", "server_nic"}) {
      if (!r.contains(end) || !r[end].is_object() || !r[end].contains("port")) continue;
      const auto& port = r[end]["port"];
      if (port.contains("rx_late_us")) rx = std::max(rx, port["rx_late_us"].value("p99", 0.0));
      if (port.contains("tx_late_us")) tx = std::max(tx, port["tx_late_us"].value("p99", 0.0));
    }
    if (rx >= 0 && tx >= 0) {
      char b[96];
      std::snprintf(b, sizeof b, "; its NICs ran late p99 %.0f us receiving, %.0f us sending", rx,
                    tx);
      tag += b;
    }
    tag += "]";
    const size_t nl = t.find('\n');
    t.insert(nl == std::string::npos ? t.size() : nl, tag);
  }
  return t;
}

Pingmesh::Pingmesh(const PingmeshSpec& spec, const std::vector<EmulatedHost*>& hosts,
                   std::vector<std::string> names, std::vector<std::string> tors,
                   std::vector<int> podsets, const std::vector<bool>& is_src,
                   const std::vector<bool>& is_dst)
    : spec_(spec), names_(std::move(names)), tors_(std::move(tors)), podsets_(std::move(podsets)) {
  const int n = static_cast<int>(hosts.size());
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b && hosts[a] && hosts[b] && is_src[a] && is_dst[b])
        pairs_.push_back(Pair{a, b, 0, {}, {}, {}, {}});
    }
  }
  const Time stagger = pairs_.empty() ? 0 : spec_.interval / static_cast<Time>(pairs_.size());
  for (size_t i = 0; i < pairs_.size(); ++i) {
    Pair& p = pairs_[i];
    EmulatedHost* a = hosts[p.src];
    EmulatedHost* b = hosts[p.dst];
    const uint32_t qa = a->rnic().NextQpn(), qb = b->rnic().NextQpn();
    a->rnic().CreateQp(b->config().ip, qb, 0, 0);
    b->rnic().CreateQp(a->config().ip, qa, 0, 0);
    p.qpn = qa;
    a->rnic().SetQpHandlers(
        qa,
        [this, i](Time now, const WorkCompletion& wc) {
          Pair& pr = pairs_[i];
          if (wc.wr_id >= pr.done.size() || pr.done[wc.wr_id]) return;
          pr.done[wc.wr_id] = true;
          if (wc.status == WorkCompletion::Status::kSuccess) {
            pr.rtt.push_back(now - pr.posted[wc.wr_id]);
          } else {
            pr.failures[WcStatusName(wc.status)]++;
          }
        },
        nullptr);
    const Time offset =
        spec_.start + stagger * static_cast<Time>(i);  // spread probes over the interval
    for (int k = 0; k < spec_.count; ++k) {
      const Time at = offset + k * spec_.interval;
      if (at >= spec_.stop) break;  // bounded by the run, whatever `count` says
      p.posted.push_back(at);
      p.done.push_back(false);
      a->rnic().PostAt(
          at, qa, WorkRequest{WorkRequest::Op::kSend, static_cast<uint64_t>(k), spec_.size, 0, 0});
    }
  }
}

std::vector<Time> Pingmesh::Rtts() const {
  std::vector<Time> all;
  for (const auto& p : pairs_) all.insert(all.end(), p.rtt.begin(), p.rtt.end());
  return all;
}

nlohmann::json Pingmesh::Result(Time now) const {
  auto stats = [](std::vector<Time> v, const std::map<std::string, int>& fail, int probes) {
    std::sort(v.begin(), v.end());
    auto pct = [&](double p) {
      if (v.empty()) return 0.0;
      size_t r = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
      return v[std::clamp<size_t>(r, 1, v.size()) - 1] / 1e6;
    };
    int failed = 0;
    for (const auto& [k, n] : fail) failed += n;
    return nlohmann::json{{"probes", probes},
                          {"ok", v.size()},
                          {"failures", fail},
                          {"failure_rate", probes ? static_cast<double>(failed) / probes : 0.0},
                          {"rtt_p50_us", pct(0.5)},
                          {"rtt_p95_us", pct(0.95)},
                          {"rtt_p99_us", pct(0.99)},
                          {"rtt_p999_us", pct(0.999)},
                          {"rtt_max_us", v.empty() ? 0.0 : v.back() / 1e6}};
  };
  nlohmann::json pairs = nlohmann::json::array();
  std::map<std::string, std::pair<std::vector<Time>, std::map<std::string, int>>> by_tor, by_pod;
  std::map<std::string, int> tor_probes, pod_probes;
  std::vector<Time> all;
  std::map<std::string, int> all_fail;
  int all_probes = 0;
  for (const auto& p : pairs_) {
    std::map<std::string, int> fail = p.failures;
    int probes = 0;
    for (size_t k = 0; k < p.posted.size(); ++k) {
      if (p.posted[k] > now) continue;
      ++probes;
      if (!p.done[k] && now - p.posted[k] >= spec_.timeout) fail["timeout"]++;
    }
    pairs.push_back(stats(p.rtt, fail, probes));
    pairs.back()["from"] = names_[p.src];
    pairs.back()["to"] = names_[p.dst];
    const std::string tk = tors_[p.src] + "->" + tors_[p.dst];
    auto& t = by_tor[tk];
    t.first.insert(t.first.end(), p.rtt.begin(), p.rtt.end());
    for (const auto& [k, n] : fail) t.second[k] += n, all_fail[k] += n;
    tor_probes[tk] += probes;
    const std::string pk =
        "podset" + std::to_string(podsets_[p.src]) + "->podset" + std::to_string(podsets_[p.dst]);
    auto& pd = by_pod[pk];
    pd.first.insert(pd.first.end(), p.rtt.begin(), p.rtt.end());
    for (const auto& [k, n] : fail) pd.second[k] += n;
    pod_probes[pk] += probes;
    all.insert(all.end(), p.rtt.begin(), p.rtt.end());
    all_probes += probes;
  }
  nlohmann::json tors = nlohmann::json::object();
  for (const auto& [k, v] : by_tor) tors[k] = stats(v.first, v.second, tor_probes[k]);
  nlohmann::json pods = nlohmann::json::object();
  for (const auto& [k, v] : by_pod) pods[k] = stats(v.first, v.second, pod_probes[k]);
  return {{"pairs", pairs},
          {"tor_pairs", tors},
          {"podset_pairs", pods},
          {"fabric", stats(all, all_fail, all_probes)}};
}

Result<FlowSizeCdf> FlowSizeCdf::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Result<FlowSizeCdf>::Error(path + ": cannot open");
  FlowSizeCdf c;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    double bytes, pct;
    std::string extra;
    if (!(ls >> bytes >> pct) || (ls >> extra) || !(bytes >= 0) || !(pct >= 0) || pct > 100) {
      return Result<FlowSizeCdf>::Error(
          path + ":" + std::to_string(n) +
          ": expected \"<bytes> <percent>\" (two numbers, bytes >= 0, percent 0..100), got \"" +
          line + "\"");
    }
    if (bytes > kMaxBytes) {
      char b[64];
      std::snprintf(b, sizeof b, "%g", bytes);
      return Result<FlowSizeCdf>::Error(path + ":" + std::to_string(n) + ": flow size " + b +
                                        " bytes is over the limit of 1e15 bytes (1 PB)");
    }
    if (!c.points_.empty() &&
        (pct < c.points_.back().second * 100 || bytes < c.points_.back().first)) {
      return Result<FlowSizeCdf>::Error(path + ":" + std::to_string(n) +
                                        ": CDF must be non-decreasing");
    }
    c.points_.emplace_back(bytes, pct / 100.0);
  }
  if (c.points_.size() < 2 || c.points_.back().second < 0.999) {
    return Result<FlowSizeCdf>::Error(path +
                                      ": a CDF needs at least two points and must reach 100");
  }
  if (!(c.Mean() >= 1.0)) {
    return Result<FlowSizeCdf>::Error(
        path + ": the mean flow size is " + std::to_string(c.Mean()) +
        " bytes: it must be at least 1 byte (flows of 0 bytes would start without end)");
  }
  return c;
}

uint64_t FlowSizeCdf::Sample(Rng& rng) const {
  const double u = rng.Uniform();
  for (size_t i = 1; i < points_.size(); ++i) {
    if (u <= points_[i].second) {
      const auto [x0, y0] = points_[i - 1];
      const auto [x1, y1] = points_[i];
      const double x = y1 > y0 ? x0 + (u - y0) / (y1 - y0) * (x1 - x0) : x1;
      return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(x)));
    }
  }
  return static_cast<uint64_t>(points_.back().first);
}

double FlowSizeCdf::Mean() const {
  double m = 0;
  for (size_t i = 1; i < points_.size(); ++i) {
    m +=
        (points_[i].second - points_[i - 1].second) * (points_[i].first + points_[i - 1].first) / 2;
  }
  return m;
}

std::vector<Flow> PoissonFlows(const FlowSizeCdf& cdf, int hosts, BitRate host_rate, double load,
                               Time start, Time span, uint64_t seed) {
  std::vector<Flow> flows;
  if (hosts < 2 || load <= 0) return flows;
  Rng rng(seed);
  const double mean_gap_s = cdf.Mean() * 8.0 / (static_cast<double>(host_rate.bps()) * load);
  for (int h = 0; h < hosts; ++h) {
    double t = 0;
    for (;;) {
      t += -std::log(1.0 - rng.Uniform()) * mean_gap_s;
      const Time at = start + static_cast<Time>(t * 1e12);
      if (at >= start + span) break;
      Flow f;
      f.src = h;
      f.dst = static_cast<int>(rng.Below(static_cast<uint64_t>(hosts - 1)));
      if (f.dst >= h) ++f.dst;
      f.size = cdf.Sample(rng);
      f.start = at;
      flows.push_back(f);
    }
  }
  std::stable_sort(flows.begin(), flows.end(),
                   [](const Flow& a, const Flow& b) { return a.start < b.start; });
  return flows;
}

namespace {

// `xz -dc PATH` without a shell (a path may hold any character): its stdout, or null.
FILE* OpenXz(const std::string& path, pid_t* child) {
  int fds[2];
  if (pipe(fds) != 0) return nullptr;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return nullptr;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execlp("xz", "xz", "-dc", "--", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  *child = pid;
  return fdopen(fds[0], "r");
}

// One "src dst pg [dport] size start_s" line into *f, or the rule it breaks.
std::string ParseFlowLine(const std::vector<double>& v, int hosts, Time time_base, Flow* f) {
  if (v.size() != 5 && v.size() != 6) return "expected \"src dst pg [dport] size start_s\"";
  for (double x : v) {
    if (!std::isfinite(x)) return "not a finite number";
  }
  // Range checks on the doubles before any conversion (a cast out of range is undefined).
  const double src = v[0], dst = v[1], size = v[v.size() - 2], start_s = v.back();
  if (src < 0 || src >= hosts || dst < 0 || dst >= hosts || src != std::floor(src) ||
      dst != std::floor(dst) || src == dst) {
    return "host index out of range 0.." + std::to_string(hosts - 1) + " (or src = dst)";
  }
  if (size < 1 || size > 1e15 || size != std::floor(size)) return "size must be 1..1e15 bytes";
  if (start_s < 0 || start_s > 1e6) return "start must be 0..1e6 s";
  f->src = static_cast<int>(src);
  f->dst = static_cast<int>(dst);
  f->size = static_cast<uint64_t>(size);
  f->start = static_cast<Time>(std::llround(start_s * 1e12)) - time_base;
  if (f->start < 0) return "start before time_base";
  return "";
}

}  // namespace

Result<std::vector<Flow>> ReadFlowTrace(const std::string& path, int hosts, Time time_base,
                                        Time until) {
  using R = Result<std::vector<Flow>>;
  const bool xz = path.size() > 3 && path.compare(path.size() - 3, 3, ".xz") == 0;
  pid_t child = -1;
  FILE* in = xz ? OpenXz(path, &child) : std::fopen(path.c_str(), "r");
  if (in == nullptr) return R::Error(path + ": cannot open");
  std::vector<Flow> flows;
  char line[512];
  long n = 0;
  long expected = -1;
  std::string err;
  while (std::fgets(line, sizeof line, in)) {
    ++n;
    std::istringstream ls(line);
    if (expected < 0) {
      if (!(ls >> expected) || expected < 0) {
        err = path + ":1: expected the flow count";
        break;
      }
      // The count is a promise, not a size to trust: reserve at most a million.
      flows.reserve(static_cast<size_t>(std::min<long>(expected, 1L << 20)));
      continue;
    }
    std::vector<double> v;
    double x;
    while (ls >> x) v.push_back(x);
    if (v.empty()) continue;
    Flow f;
    const std::string why = ParseFlowLine(v, hosts, time_base, &f);
    if (!why.empty()) {
      err = path + ":" + std::to_string(n) + ": " + why;
      break;
    }
    if (until <= 0 || f.start < until) flows.push_back(f);
  }
  std::fclose(in);
  if (xz) {
    int status = 0;
    waitpid(child, &status, 0);
    if (err.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      err = path + ": xz -dc failed (is xz installed, is the file xz?)";
    }
  }
  if (!err.empty()) return R::Error(err);
  if (until <= 0 && expected >= 0 && static_cast<long>(flows.size()) != expected) {
    return R::Error(path + ": header says " + std::to_string(expected) + " flows, file has " +
                    std::to_string(flows.size()));
  }
  return flows;
}

FlowWorkload::FlowWorkload(std::vector<Flow> flows, std::vector<EmulatedHost*> hosts,
                           const std::function<Time(const Flow&)>& ideal, bool reference_ports) {
  records_.reserve(flows.size());
  // The reference's per-host port counters (uint16_t there: they wrap alike).
  std::vector<uint16_t> next_sport(reference_ports ? hosts.size() : 0, 10000);
  std::vector<uint16_t> next_dport(reference_ports ? hosts.size() : 0, 100);
  for (size_t i = 0; i < flows.size(); ++i) {
    const Flow& f = flows[i];
    EmulatedHost* a = hosts[f.src];
    EmulatedHost* b = hosts[f.dst];
    QpOptions oa, ob;
    uint16_t dport = 100;
    if (reference_ports) {
      const uint16_t sport = next_sport[f.src]++;
      dport = next_dport[f.dst]++;
      oa.udp_sport = sport;
      oa.ip_id = dport;
      ob.udp_sport = dport;
      ob.ip_id = sport;
    }
    const uint32_t qa = a->rnic().NextQpn(), qb = b->rnic().NextQpn();
    a->rnic().CreateQp(b->config().ip, qb, 0, 0, oa);
    b->rnic().CreateQp(a->config().ip, qa, 0, 0, ob);
    Record r;
    r.flow = f;
    r.qpn = qa;
    r.sport = a->rnic().qp_sport(qa);
    r.dport = dport;
    r.ideal = ideal(f);
    records_.push_back(r);
    a->rnic().SetQpHandlers(
        qa,
        [this, i](Time now, const WorkCompletion& wc) {
          if (wc.status == WorkCompletion::Status::kSuccess && records_[i].fct < 0) {
            records_[i].fct = now - records_[i].flow.start;
            finished_.fetch_add(1, std::memory_order_relaxed);
          }
        },
        nullptr);
    a->rnic().PostAt(f.start, qa, WorkRequest{WorkRequest::Op::kWrite, i, f.size, 0x10000000, 1});
  }
}

void FlowWorkload::ShareFct(Ranks& ranks) {
  std::vector<int64_t> fct(records_.size());
  for (size_t i = 0; i < records_.size(); ++i) fct[i] = records_[i].fct;
  ranks.Max(&fct);
  size_t finished = 0;
  for (size_t i = 0; i < records_.size(); ++i) {
    records_[i].fct = fct[i];
    finished += fct[i] >= 0;
  }
  finished_.store(finished, std::memory_order_relaxed);
}

size_t SizeBucketIndex(uint64_t size) {
  for (size_t i = 0; i < std::size(kSizeBuckets); ++i) {
    if (size > kSizeBuckets[i].lo && size <= kSizeBuckets[i].hi) return i;
  }
  return 0;  // size 0
}

nlohmann::json SlowdownSummary(const std::vector<FlowWorkload::Record>& records, Time from) {
  // Buckets as in the ConWeave analysis: all flows, < and >= 1 BDP, and the five size classes.
  constexpr size_t kAll = 0, kLtBdp = 1, kGeBdp = 2, kFirstSize = 3;
  std::vector<std::pair<const char*, std::vector<double>>> b = {
      {"all", {}}, {"lt_bdp", {}}, {"ge_bdp", {}}};
  for (const auto& k : kSizeBuckets) b.push_back({k.name, {}});
  for (const auto& r : records) {
    if (r.fct < 0 || r.flow.start < from) continue;
    const double sd = std::max(1.0, static_cast<double>(r.fct) / static_cast<double>(r.ideal));
    b[kAll].second.push_back(sd);
    b[r.flow.size < kBdpBytes ? kLtBdp : kGeBdp].second.push_back(sd);
    b[kFirstSize + SizeBucketIndex(r.flow.size)].second.push_back(sd);
  }
  auto stats = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    auto pct = [&](double p) {
      if (v.empty()) return 0.0;
      size_t r = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
      return v[std::clamp<size_t>(r, 1, v.size()) - 1];
    };
    double sum = 0;
    for (double x : v) sum += x;
    return nlohmann::json{{"count", v.size()},
                          {"avg", v.empty() ? 0.0 : sum / v.size()},
                          {"p50", pct(0.5)},
                          {"p99", pct(0.99)},
                          {"p999", pct(0.999)}};
  };
  nlohmann::json buckets = nlohmann::json::object();
  for (auto& [name, v] : b) buckets[name] = stats(v);
  const auto& all = buckets["all"];
  const size_t finished = static_cast<size_t>(
      std::count_if(records.begin(), records.end(), [](const auto& r) { return r.fct >= 0; }));
  return {{"flows", records.size()},    {"finished", finished},
          {"counted", all["count"]},    {"measured_from_us", from / 1e6},
          {"slowdown_avg", all["avg"]}, {"slowdown_p50", all["p50"]},
          {"slowdown_p99", all["p99"]}, {"slowdown_p999", all["p999"]},
          {"buckets", buckets}};
}

nlohmann::json FlowWorkload::Summary(Time from) const { return SlowdownSummary(records_, from); }

}  // namespace rocefab
