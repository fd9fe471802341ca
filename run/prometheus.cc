#include "run/prometheus.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

#include "switch/drop_reason.h"
#include "switch/switch_node.h"

namespace rocefab {
namespace {

// Builds one exposition: each family's HELP and TYPE, then all of its samples together (the
// format requires a family's lines in one group).
class Exposition {
 public:
  void Family(const char* name, const char* type, const char* help) {
    name_ = name;
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // A sample of the current family; `labels` is `k="v",...` (already escaped) or empty.
  void Sample(const std::string& labels, uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%" PRIu64, v);
    Line(labels, buf);
  }
  void SampleSigned(const std::string& labels, int64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%" PRId64, v);
    Line(labels, buf);
  }
  void SampleDouble(const std::string& labels, double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.12g", v);
    Line(labels, buf);
  }
  std::string Take() { return std::move(out_); }

 private:
  void Line(const std::string& labels, const char* value) {
    out_ += name_;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  std::string out_;
  const char* name_ = "";
};

// A label value escaped as the format requires (backslash, double quote, line feed).
std::string Escape(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

std::string SwitchLabel(const SwitchNode& s) { return "switch=\"" + Escape(s.name()) + "\""; }
std::string PortLabels(const SwitchNode& s, uint16_t p) {
  return SwitchLabel(s) + ",port=\"" + Escape(s.config().ports[p].name) + "\"";
}
std::string With(const std::string& labels, const char* key, unsigned v) {
  return labels + "," + key + "=\"" + std::to_string(v) + "\"";
}

using Switches = std::vector<SwitchNode*>;

// Calls f(switch, port) for every port of every switch.
template <class F>
void EachPort(const Switches& sws, F f) {
  for (const SwitchNode* s : sws) {
    for (uint16_t p = 0; p < s->num_ports(); ++p) f(*s, p);
  }
}

void PortFamilies(const Switches& sws, Exposition* e) {
  e->Family("rocefab_port_received_packets_total", "counter",
            "Frames received on a switch port (PFC frames included).");
  EachPort(sws,
           [&](const SwitchNode& s, uint16_t p) { e->Sample(PortLabels(s, p), s.rx_packets(p)); });
  e->Family("rocefab_port_received_bytes_total", "counter", "Bytes received on a switch port.");
  EachPort(sws,
           [&](const SwitchNode& s, uint16_t p) { e->Sample(PortLabels(s, p), s.rx_bytes(p)); });
  e->Family("rocefab_port_transmitted_packets_total", "counter",
            "Frames sent out of a switch port (PFC frames included).");
  EachPort(sws,
           [&](const SwitchNode& s, uint16_t p) { e->Sample(PortLabels(s, p), s.tx_packets(p)); });
  e->Family("rocefab_port_transmitted_bytes_total", "counter", "Bytes sent out of a switch port.");
  EachPort(sws,
           [&](const SwitchNode& s, uint16_t p) { e->Sample(PortLabels(s, p), s.tx_bytes(p)); });
  e->Family("rocefab_port_reorder_held_frames", "gauge",
            "Frames held in ConWeave reorder queues of an egress port (0 without ConWeave).");
  EachPort(sws, [&](const SwitchNode& s, uint16_t p) {
    e->Sample(PortLabels(s, p), s.reorder_held_frames(p));
  });
}

void QueueFamilies(const Switches& sws, Exposition* e) {
  auto each_queue = [&](auto f) {
    EachPort(sws, [&](const SwitchNode& s, uint16_t p) {
      for (uint8_t q = 0; q < 8; ++q) f(s, p, q, With(PortLabels(s, p), "queue", q));
    });
  };
  e->Family("rocefab_queue_transmitted_packets_total", "counter",
            "Frames sent from an egress queue.");
  each_queue([&](const SwitchNode& s, uint16_t p, uint8_t q, const std::string& l) {
    e->Sample(l, s.tx_queue_packets(p, q));
  });
  e->Family("rocefab_queue_ecn_marked_packets_total", "counter",
            "Frames of an egress queue marked CE by ECN/WRED.");
  each_queue([&](const SwitchNode& s, uint16_t p, uint8_t q, const std::string& l) {
    e->Sample(l, s.ecn_marked(p, q));
  });
  e->Family("rocefab_queue_bytes", "gauge",
            "Bytes an egress queue holds now (shared buffer mode: as the MMU counts them).");
  each_queue([&](const SwitchNode& s, uint16_t p, uint8_t q, const std::string& l) {
    e->SampleSigned(l, s.queue_bytes(p, q));
  });
  e->Family("rocefab_queue_watermark_bytes", "gauge",
            "Most bytes an egress queue has held since the run started (shared buffer mode).");
  each_queue([&](const SwitchNode& s, uint16_t p, uint8_t q, const std::string& l) {
    e->SampleSigned(l, s.mmu() ? s.mmu()->queue_watermark(p, q) : 0);
  });
}

// PFC per (port, lossless priority): frames sent and received, pause state, the watchdog.
void PfcFamilies(const Switches& sws, Time now, Exposition* e) {
  auto each_prio = [&](auto f) {
    EachPort(sws, [&](const SwitchNode& s, uint16_t p) {
      for (uint8_t prio = 0; prio < 8; ++prio) {
        if (s.config().qos.lossless(prio)) f(s, p, prio, With(PortLabels(s, p), "priority", prio));
      }
    });
  };
  e->Family("rocefab_pfc_xoff_sent_frames_total", "counter",
            "PFC frames pausing a priority sent out of a port (the switch pauses its peer).");
  each_prio([&](const SwitchNode& s, uint16_t p, uint8_t prio, const std::string& l) {
    e->Sample(l, s.pfc_tx_xoff(p, prio));
  });
  e->Family("rocefab_pfc_xon_sent_frames_total", "counter",
            "PFC frames resuming a priority (pause time 0) sent out of a port.");
  each_prio([&](const SwitchNode& s, uint16_t p, uint8_t prio, const std::string& l) {
    e->Sample(l, s.pfc_tx_xon(p, prio));
  });
  e->Family("rocefab_pfc_received_frames_total", "counter",
            "PFC frames received on a port with this priority's class-enable bit set.");
  each_prio([&](const SwitchNode& s, uint16_t p, uint8_t prio, const std::string& l) {
    e->Sample(l, s.rx_pause(p).rx_frames(prio));
  });
  e->Family("rocefab_pfc_paused", "gauge",
            "1 while received PFC pauses this priority of the port's egress, else 0.");
  each_prio([&](const SwitchNode& s, uint16_t p, uint8_t prio, const std::string& l) {
    e->Sample(l, (s.paused_mask(p, now) >> prio) & 1u);
  });
  e->Family("rocefab_pfc_watchdog_storm", "gauge",
            "1 while the PFC watchdog holds this priority of the port in a declared storm.");
  each_prio([&](const SwitchNode& s, uint16_t p, uint8_t prio, const std::string& l) {
    e->Sample(l, (s.storm_mask(p) >> prio) & 1u);
  });
}

// Ingress priority groups of lossless priorities: XOFF state and the MMU's buckets.
void PgFamilies(const Switches& sws, Exposition* e) {
  auto each_pg = [&](auto f) {
    EachPort(sws, [&](const SwitchNode& s, uint16_t p) {
      uint8_t pgs = 0;
      for (uint8_t prio = 0; prio < 8; ++prio) {
        if (s.config().qos.lossless(prio))
          pgs |= static_cast<uint8_t>(1u << s.config().qos.tc_to_pg[prio]);
      }
      for (uint8_t g = 0; g < 8; ++g) {
        if ((pgs >> g) & 1) f(s, p, g, With(PortLabels(s, p), "pg", g));
      }
    });
  };
  e->Family("rocefab_pg_xoff", "gauge",
            "1 while a lossless ingress priority group is in XOFF (pausing the peer), else 0.");
  each_pg([&](const SwitchNode& s, uint16_t p, uint8_t g, const std::string& l) {
    e->Sample(l, (s.xoff_mask(p) >> g) & 1u);
  });
  struct Bucket {
    const char* name;
    const char* help;
    int64_t (SharedBufferMmu::*get)(uint16_t, uint8_t) const;
  };
  static constexpr Bucket kBuckets[] = {
      {"rocefab_pg_shared_bytes", "Shared-pool bytes charged to a lossless ingress PG now.",
       &SharedBufferMmu::pg_shared_bytes},
      {"rocefab_pg_headroom_bytes", "Headroom bytes a lossless ingress PG uses now.",
       &SharedBufferMmu::pg_headroom_bytes},
      {"rocefab_pg_watermark_bytes",
       "Most bytes charged to a lossless ingress PG since the run started.",
       &SharedBufferMmu::pg_watermark},
  };
  for (const Bucket& b : kBuckets) {
    e->Family(b.name, "gauge", b.help);
    each_pg([&](const SwitchNode& s, uint16_t p, uint8_t g, const std::string& l) {
      e->SampleSigned(l, s.mmu() ? (s.mmu()->*b.get)(p, g) : 0);
    });
  }
}

void SwitchFamilies(const Switches& sws, Exposition* e) {
  e->Family("rocefab_switch_dropped_packets_total", "counter",
            "Frames a switch discarded, by reason (switch/drop_reason.h).");
  for (const SwitchNode* s : sws) {
    for (size_t r = 0; r < static_cast<size_t>(DropReason::kCount); ++r) {
      e->Sample(SwitchLabel(*s) + ",reason=\"" + DropReasonName(static_cast<DropReason>(r)) + "\"",
                s->drops(static_cast<DropReason>(r)));
    }
  }
  e->Family("rocefab_switch_buffer_used_bytes", "gauge",
            "Bytes of the switch's shared buffer in use now (reserved, shared and headroom).");
  for (const SwitchNode* s : sws)
    e->SampleSigned(SwitchLabel(*s), s->mmu() ? s->mmu()->total_used() : 0);
  e->Family("rocefab_switch_shared_pool_used_bytes", "gauge",
            "Bytes of the shared pool in use now.");
  for (const SwitchNode* s : sws)
    e->SampleSigned(SwitchLabel(*s), s->mmu() ? s->mmu()->shared_used() : 0);
  e->Family("rocefab_switch_shared_pool_bytes", "gauge", "Size of the shared pool.");
  for (const SwitchNode* s : sws)
    e->SampleSigned(SwitchLabel(*s), s->mmu() ? s->mmu()->shared_pool_bytes() : 0);
  e->Family("rocefab_pfc_watchdog_storms_total", "counter",
            "PFC storms the switch's watchdog declared.");
  for (const SwitchNode* s : sws) e->Sample(SwitchLabel(*s), s->watchdog_storms());
  e->Family("rocefab_pfc_watchdog_restores_total", "counter",
            "Queues the switch's watchdog restored after a storm.");
  for (const SwitchNode* s : sws) e->Sample(SwitchLabel(*s), s->watchdog_restores());
}

}  // namespace

std::string PrometheusText(const std::vector<SwitchNode*>& switches, const FabricGauges& g) {
  Exposition e;
  const std::string node = g.node.empty() ? "" : "node=\"" + Escape(g.node) + "\"";
  e.Family("rocefab_run_time_seconds", "gauge", "The live run's time since its time 0.");
  e.SampleDouble(node, static_cast<double>(g.now) / static_cast<double>(kSec));
  e.Family("rocefab_mbufs_in_use", "gauge",
           "Frames out of the pool: queued in switches, held by NICs, in rings and ports.");
  e.Sample(node, g.mbufs_in_use);
  e.Family("rocefab_mbufs_size", "gauge", "The frame pool's size.");
  e.Sample(node, g.mbufs_size);
  PortFamilies(switches, &e);
  QueueFamilies(switches, &e);
  PfcFamilies(switches, g.now, &e);
  PgFamilies(switches, &e);
  SwitchFamilies(switches, &e);
  return e.Take();
}

namespace {

// The family a text-format line belongs to: the name after "# HELP " / "# TYPE ", or a
// sample's metric name; "" for other lines.
std::string FamilyOf(const std::string& line, bool* meta) {
  *meta = false;
  if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
    *meta = true;
    const size_t end = line.find(' ', 7);
    return line.substr(7, end == std::string::npos ? std::string::npos : end - 7);
  }
  if (line.empty() || line[0] == '#') return "";
  return line.substr(0, line.find_first_of("{ "));
}

}  // namespace

std::string MergeExpositions(const std::vector<NodeExposition>& nodes) {
  struct Family {
    std::string meta;  // HELP and TYPE lines
    std::string samples;
    bool meta_done = false;
  };
  std::vector<std::string> order;
  std::map<std::string, Family> families;
  for (const NodeExposition& n : nodes) {
    if (!n.up) continue;
    std::set<std::string> meta_seen;  // families whose HELP/TYPE this node has given
    size_t pos = 0;
    while (pos < n.text.size()) {
      size_t end = n.text.find('\n', pos);
      if (end == std::string::npos) end = n.text.size();
      const std::string line = n.text.substr(pos, end - pos);
      pos = end + 1;
      bool meta = false;
      const std::string name = FamilyOf(line, &meta);
      if (name.empty()) continue;
      auto [it, fresh] = families.try_emplace(name);
      if (fresh) order.push_back(name);
      Family& f = it->second;
      if (meta) {
        if (!f.meta_done) {
          f.meta += line + "\n";
          meta_seen.insert(name);
        }
      } else {
        f.samples += line + "\n";
      }
    }
    for (const auto& name : meta_seen) families[name].meta_done = true;
  }
  std::string out;
  for (const auto& name : order) out += families[name].meta + families[name].samples;
  Exposition e;
  e.Family("rocefab_node_up", "gauge",
           "1 if the switch process answered this scrape, 0 if not (its samples are missing).");
  for (const NodeExposition& n : nodes) e.Sample("node=\"" + Escape(n.node) + "\"", n.up ? 1 : 0);
  return out + e.Take();
}

Result<std::string> ScrapeMetrics(uint16_t port, Time timeout) {
  httplib::Client cli("127.0.0.1", port);
  const auto us = std::chrono::microseconds(std::max<Time>(timeout / kUs, 1));
  cli.set_connection_timeout(us);
  cli.set_read_timeout(us);
  auto res = cli.Get("/metrics");
  const std::string where = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  if (!res) return Result<std::string>::Error(where + ": " + httplib::to_string(res.error()));
  if (res->status != 200) {
    return Result<std::string>::Error(where + ": HTTP status " + std::to_string(res->status));
  }
  return res->body;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(uint16_t port,
                                                            std::function<std::string()> body) {
  std::unique_ptr<MetricsServer> m(new MetricsServer());
  m->server_ = std::make_unique<httplib::Server>();
  m->body_ = std::move(body);
  MetricsServer* self = m.get();
  m->server_->Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    ++self->scrapes_;
    res.set_content(self->body_(), "text/plain; version=0.0.4; charset=utf-8");
  });
  m->server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("rocefab live: metrics at /metrics\n", "text/plain; charset=utf-8");
  });
  const int bound = port == 0 ? m->server_->bind_to_any_port("127.0.0.1")
                              : (m->server_->bind_to_port("127.0.0.1", port) ? port : -1);
  if (bound <= 0) {
    return Result<std::unique_ptr<MetricsServer>>::Error(
        "--metrics-port: cannot listen on 127.0.0.1:" + std::to_string(port) +
        " (in use, or a port below 1024 without the privilege)");
  }
  m->port_ = static_cast<uint16_t>(bound);
  m->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  return m;
}

MetricsServer::~MetricsServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace rocefab
