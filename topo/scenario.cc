#include "topo/scenario.h"

#include <fstream>
#include <sstream>

#include "common/json_reader.h"
#include "topo/clos.h"

namespace rocefab {

const char* TrafficKindName(TrafficItem::Kind k) {
  switch (k) {
    case TrafficItem::Kind::kPing: return "ping";
    case TrafficItem::Kind::kIperf3: return "iperf3";
    case TrafficItem::Kind::kUdp: return "udp";
  }
  return "?";
}

namespace {

Topology ReadTopology(const nlohmann::json& j, const std::string& path) {
  JsonReader r(j, path);
  if (r.Has("clos")) {
    JsonReader c(r.Require("clos"), r.PathOf("clos"));
    ClosSpec s;
    s.tiers = static_cast<int>(c.Int("tiers", 2, 2, 3));
    s.spines = static_cast<int>(c.Int("spines", 2, 1, 256));
    s.tors = static_cast<int>(c.Int("tors", 2, 1, 256));
    s.leaves_per_podset = static_cast<int>(c.Int("leaves_per_podset", 2, 1, 64));
    s.podsets = static_cast<int>(c.Int("podsets", 1, 1, 64));
    s.hosts_per_tor = static_cast<int>(c.Int("hosts_per_tor", 2, 0, 253));
    s.link_rate = c.Rate("link_rate", 100 * kGbps);
    s.host_rate = c.Rate("host_rate", 0);
    s.cable_m = c.Length("cable", 5);
    const std::string kind = c.String("host_kind", "linux");
    if (kind == "linux") {
      s.host_kind = HostKind::kLinux;
    } else if (kind == "builtin") {
      s.host_kind = HostKind::kBuiltin;
    } else {
      ThrowConfigError(c.PathOf("host_kind"), "must be \"linux\" or \"builtin\"");
    }
    c.Finish();
    r.Finish();
    auto t = BuildClos(s);
    if (!t.ok()) ThrowConfigError(r.PathOf("clos"), t.message());
    return t.value();
  }
  auto t = Topology::FromJson(j, path);
  if (!t.ok()) throw ConfigError(t.message());
  return t.value();
}

void CheckHost(const std::string& name, const Topology& topo, const std::string& path,
               bool allow_all) {
  if (allow_all && name == "all") return;
  if (topo.HostIndex(name) < 0) {
    ThrowConfigError(path, "no host named \"" + name + "\"" + (allow_all ? " (or \"all\")" : ""));
  }
}

}  // namespace

Result<Scenario> Scenario::FromJson(const nlohmann::json& j, const std::string& base_dir) {
  try {
    Scenario s;
    JsonReader r(j, "");
    s.name = r.String("name");
    s.description = r.String("description", "");
    s.seed = static_cast<uint64_t>(r.Int("seed", 1, 0, INT64_MAX));
    s.duration = r.Duration("duration", 10 * kMs, kNs);
    if (r.Has("topology") == r.Has("topology_file")) {
      ThrowConfigError("topology", "give exactly one of \"topology\" and \"topology_file\"");
    }
    if (r.Has("topology")) {
      s.topology = ReadTopology(r.Require("topology"), "topology");
    } else {
      const std::string f = r.String("topology_file");
      const std::string path = f.starts_with("/") ? f : base_dir + "/" + f;
      std::ifstream in(path);
      if (!in) ThrowConfigError("topology_file", "cannot open \"" + path + "\"");
      nlohmann::json tj;
      try {
        tj = nlohmann::json::parse(in);
      } catch (const nlohmann::json::parse_error& e) {
        ThrowConfigError("topology_file", std::string("invalid JSON: ") + e.what());
      }
      // A file written by `rocefab topo` is a whole scenario; take its topology.
      if (tj.is_object() && tj.contains("topology")) tj = tj["topology"];
      s.topology = ReadTopology(tj, "topology_file");
    }
    if (const auto* sw = r.Get("switch")) {
      JsonReader w(*sw, "switch");
      s.sw.mac_aging = w.Duration("mac_aging", s.sw.mac_aging, kNs);
      s.sw.arp_aging = w.Duration("arp_aging", s.sw.arp_aging, kNs);
      s.sw.egress_buffer = w.Bytes("egress_buffer", s.sw.egress_buffer, 2048);
      w.Finish();
    }
    if (const auto* lv = r.Get("live")) {
      JsonReader w(*lv, "live");
      s.live.port_driver = w.String("port_driver", s.live.port_driver);
      if (s.live.port_driver != "af_packet" && s.live.port_driver != "af_xdp") {
        ThrowConfigError(w.PathOf("port_driver"), "must be \"af_packet\" or \"af_xdp\"");
      }
      s.live.timeout = w.Duration("timeout", s.live.timeout, kSec);
      w.Finish();
    }
    if (const auto* tr = r.Get("traffic")) {
      if (!tr->is_array()) ThrowConfigError("traffic", "must be an array");
      for (size_t i = 0; i < tr->size(); ++i) {
        const std::string p = ArrayPath("traffic", i);
        JsonReader t((*tr)[i], p);
        TrafficItem it;
        const std::string kind = t.String("kind");
        it.from = t.String("from");
        it.to = t.String("to");
        it.start = t.Duration("start", 0, 0);
        if (kind == "ping") {
          it.kind = TrafficItem::Kind::kPing;
          it.count = static_cast<int>(t.Int("count", 10, 1, 1000000));
          it.interval = t.Duration("interval", kMs, kUs);
          it.size = static_cast<int>(t.Int("size", 56, 8, 1472));
          CheckHost(it.from, s.topology, t.PathOf("from"), true);
          CheckHost(it.to, s.topology, t.PathOf("to"), true);
        } else if (kind == "iperf3") {
          it.kind = TrafficItem::Kind::kIperf3;
          it.streams = static_cast<int>(t.Int("streams", 1, 1, 128));
          it.duration = t.Duration("duration", 3 * kSec, kMs);
          CheckHost(it.from, s.topology, t.PathOf("from"), false);
          CheckHost(it.to, s.topology, t.PathOf("to"), false);
          if (it.from == it.to) ThrowConfigError(p, "iperf3 needs two different hosts");
        } else if (kind == "udp") {
          it.kind = TrafficItem::Kind::kUdp;
          it.rate = t.Rate("rate");
          it.size = static_cast<int>(t.Int("size", 1000, 24, 1472));
          it.count = static_cast<int>(t.Int("count", -1, -1, INT32_MAX));
          it.duration = t.Duration("duration", 0, 0);
          it.dscp = static_cast<int>(t.Int("dscp", 0, 0, 63));
          if (it.count == -1 && it.duration == 0) {
            ThrowConfigError(p, "udp needs \"count\" or \"duration\"");
          }
          CheckHost(it.from, s.topology, t.PathOf("from"), true);
          CheckHost(it.to, s.topology, t.PathOf("to"), true);
        } else {
          ThrowConfigError(t.PathOf("kind"), "must be \"ping\", \"iperf3\" or \"udp\", got \"" +
                                                 kind + "\"");
        }
        t.Finish();
        s.traffic.push_back(it);
      }
    }
    r.Finish();
    return s;
  } catch (const ConfigError& e) {
    return Result<Scenario>::Error(e.what());
  }
}

Result<Scenario> Scenario::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Result<Scenario>::Error(path + ": cannot open file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    return Result<Scenario>::Error(path + ": invalid JSON: " + e.what());
  }
  const auto slash = path.find_last_of('/');
  auto s = FromJson(j, slash == std::string::npos ? "." : path.substr(0, slash));
  if (!s.ok()) return Result<Scenario>::Error(path + ": " + s.message());
  return s;
}

std::vector<std::pair<int, int>> ExpandPairs(const TrafficItem& t, const Topology& topo) {
  std::vector<int> from, to;
  const int n = static_cast<int>(topo.hosts.size());
  for (int i = 0; i < n; ++i) {
    if (t.from == "all" || topo.hosts[i].name == t.from) from.push_back(i);
    if (t.to == "all" || topo.hosts[i].name == t.to) to.push_back(i);
  }
  std::vector<std::pair<int, int>> pairs;
  for (int a : from) {
    for (int b : to) {
      if (a != b) pairs.emplace_back(a, b);
    }
  }
  return pairs;
}

}  // namespace rocefab
