#pragma once
/// @file prometheus.h
/// A running live fabric's counters for Prometheus: the text exposition format 0.0.4
/// (prometheus.io/docs/instrumenting/exposition_formats) served over HTTP on localhost
/// (`rocefab live --metrics-port N`: http://127.0.0.1:N/metrics), so a Prometheus server scrapes
/// a live run and Grafana shows it (docs/grafana-dashboard.json). Metric names follow
/// Prometheus' conventions: prefix `rocefab_`, base units (bytes, seconds), `_total` for
/// counters; labels `switch`, `port` (the port's name, e.g. "tor0/p3"), `queue` (egress queue
/// 0..7), `priority` (802.1Qbb priority 0..7), `pg` (ingress priority group 0..7), `reason`
/// (drop reason, switch/drop_reason.h). docs/results.md lists every metric.
///
/// Values are read from the HTTP server's thread while the poll threads update them, as DPDK
/// telemetry does (run/live_telemetry.h): each is one aligned 64-bit load, so one scrape may mix
/// values a few microseconds apart; counters never go backwards between scrapes.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/time.h"

namespace httplib {
class Server;
}

namespace rocefab {

class SwitchNode;

/// What a scrape shows besides the switches.
struct FabricGauges {
  Time now = 0;               ///< the run's time (ps since time 0)
  uint64_t mbufs_in_use = 0;  ///< frames out of the pool
  uint64_t mbufs_size = 0;    ///< the pool's size
  /// "" in one process; a switch process of `--processes` or `--node` names itself here, and
  /// the three gauges above carry the label node="<name>" so that the processes' expositions
  /// merge without two samples of one series (MergeExpositions).
  std::string node;
};

/// The exposition of `switches` at `g.now` (pause state is evaluated at that time).
std::string PrometheusText(const std::vector<SwitchNode*>& switches, const FabricGauges& g);

/// One switch process's exposition, or its absence.
struct NodeExposition {
  std::string node;  ///< the switch process (its switch's name)
  bool up = false;   ///< false: the scrape failed (process gone, timeout); `text` is ignored
  std::string text;  ///< its /metrics body (format 0.0.4)
};

/// One exposition of the switch processes of `rocefab live --processes` (pure; tests): each
/// family's HELP and TYPE once (from the first node that has it), then every node's samples of
/// it, families in the order first seen; plus `rocefab_node_up{node}` (1 or 0), Prometheus'
/// convention for a target that did not answer. Comment lines other than HELP/TYPE and blank
/// lines are dropped.
std::string MergeExpositions(const std::vector<NodeExposition>& nodes);

/// GET http://127.0.0.1:`port`/metrics with `timeout` (ps) to connect and to read. Errors:
/// no answer, or a status other than 200, naming the port.
Result<std::string> ScrapeMetrics(uint16_t port, Time timeout);

/// An HTTP server on 127.0.0.1:`port` (0: any free port) answering GET /metrics with `body()`
/// (text/plain; version=0.0.4) and GET / with a pointer to it, on a thread of its own.
class MetricsServer {
 public:
  /// Errors: the port cannot be bound (in use, < 1024 without privileges), naming it.
  static Result<std::unique_ptr<MetricsServer>> Start(uint16_t port,
                                                      std::function<std::string()> body);
  ~MetricsServer();  ///< stops the server and joins its thread
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  uint16_t port() const { return port_; }
  uint64_t scrapes() const { return scrapes_; }

 private:
  MetricsServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> scrapes_{0};
  std::function<std::string()> body_;
};

}  // namespace rocefab
