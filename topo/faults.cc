#include "topo/faults.h"

#include <map>

#include "common/json_reader.h"

namespace rocefab {

namespace {

// The strict reader of one fault event per kind; names are checked against the topology.
class FaultReader {
 public:
  explicit FaultReader(const Topology& t) : t_(t) {}

  // Reads the event `r`: its kind's keys, then any key left is an error (JsonReader::Finish).
  Fault Read(JsonReader& r) {
    using ReadFn = void (FaultReader::*)(JsonReader&, Fault*);
    static const std::map<std::string, std::pair<Fault::Kind, ReadFn>> kKinds = {
        {"nic_stall", {Fault::Kind::kNicStall, &FaultReader::HostTimed}},
        {"dead_host", {Fault::Kind::kDeadHost, &FaultReader::HostTimed}},
        {"link_loss", {Fault::Kind::kLinkLoss, &FaultReader::LinkLoss}},
        {"link_down", {Fault::Kind::kLinkDown, &FaultReader::LinkDown}},
        {"mac_flush", {Fault::Kind::kMacFlush, &FaultReader::MacFlush}},
        {"mac_aging", {Fault::Kind::kMacAging, &FaultReader::MacAging}},
        {"pause_injection", {Fault::Kind::kPauseInjection, &FaultReader::PauseInjection}},
        {"frame_injection", {Fault::Kind::kFrameInjection, &FaultReader::FrameInjection}},
        {"cnp_injection", {Fault::Kind::kCnpInjection, &FaultReader::CnpInjection}},
        {"config", {Fault::Kind::kConfig, &FaultReader::Config}},
    };
    Fault f;
    const std::string kind = r.String("kind");
    f.at = r.Duration("at", 0);
    const auto it = kKinds.find(kind);
    if (it == kKinds.end()) {
      ThrowConfigError(r.PathOf("kind"),
                       "unknown fault \"" + kind +
                           "\" (nic_stall, dead_host, link_loss, "
                           "link_down, mac_flush, mac_aging, pause_injection, cnp_injection, "
                           "frame_injection, config)");
    }
    f.kind = it->second.first;
    (this->*it->second.second)(r, &f);
    r.Finish();
    return f;
  }

 private:
  std::string Host(JsonReader& r, const std::string& key) {
    const std::string h = r.String(key);
    if (t_.HostIndex(h) < 0) ThrowConfigError(r.PathOf(key), "no host named \"" + h + "\"");
    return h;
  }
  std::string NodeName(JsonReader& r, const std::string& key) {
    const std::string n = r.String(key);
    if (t_.HostIndex(n) < 0 && t_.SwitchIndex(n) < 0)
      ThrowConfigError(r.PathOf(key), "no switch or host named \"" + n + "\"");
    return n;
  }
  std::string Switch(JsonReader& r, const std::string& key, bool allow_all) {
    const std::string n = r.String(key);
    if (!(allow_all && n == "all") && t_.SwitchIndex(n) < 0) {
      ThrowConfigError(r.PathOf(key), "no switch named \"" + n + "\"");
    }
    return n;
  }
  void NeedLink(JsonReader& r, const std::string& key, const std::string& a, const std::string& b) {
    for (const auto& l : t_.links) {
      if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return;
    }
    ThrowConfigError(r.PathOf(key), "no link between \"" + a + "\" and \"" + b + "\"");
  }
  // "host", or "switch" and "port": where injected frames arrive (port -1: the host's NIC).
  void Target(JsonReader& r, Fault* f) {
    if (r.Has("host")) {
      if (r.Has("switch") || r.Has("port")) {
        ThrowConfigError(r.PathOf("host"), "takes \"host\" or \"switch\" and \"port\", not both");
      }
      f->host = Host(r, "host");
      f->port = -1;
      return;
    }
    f->sw = Switch(r, "switch", false);
    f->port = static_cast<int>(r.Int("port", 0, 1023));
    if (f->port >= t_.PortCount(f->sw)) {
      ThrowConfigError(r.PathOf("port"), "switch \"" + f->sw + "\" has ports 0.." +
                                             std::to_string(t_.PortCount(f->sw) - 1));
    }
  }
  // An injection's pace: frames per second, at most `count` (0: until the end), for `duration`.
  void Pace(JsonReader& r, Fault* f, double default_rate) {
    f->rate = r.Double("rate", default_rate, 1, 1e8);
    f->count = static_cast<uint64_t>(r.Int("count", 0, 0, 1LL << 40));
    f->duration = r.Duration("duration", 0, 0);
  }

  void HostTimed(JsonReader& r, Fault* f) {
    f->host = Host(r, "host");
    f->duration = r.Duration("duration", 0, 0);
  }
  void LinkLoss(JsonReader& r, Fault* f) {
    f->from = NodeName(r, "from");
    f->to = NodeName(r, "to");
    f->every = static_cast<uint64_t>(r.Int("every", 0, 0, 1LL << 40));
    f->rate = r.Double("rate", 0, 0, 1);
    if (const auto* fr = r.Get("frames")) {
      if (!fr->is_array() || fr->empty()) {
        ThrowConfigError(r.PathOf("frames"), "must be a non-empty array of frame numbers (1 = first)");
      }
      for (size_t k = 0; k < fr->size(); ++k) {
        const auto& x = (*fr)[k];
        if (!x.is_number_integer() || x.get<int64_t>() < 1) {
          ThrowConfigError(ArrayPath(r.PathOf("frames"), k), "must be a frame number >= 1");
        }
        f->frames.push_back(x.get<uint64_t>());
      }
    }
    if (r.Has("frame_type")) {
      auto c = FrameClassFromName(r.String("frame_type"));
      if (!c.ok()) ThrowConfigError(r.PathOf("frame_type"), c.message());
      f->filter.cls = c.value();
    }
    f->filter.ip_id = static_cast<int>(r.Int("ip_id", -1, 0, 65535));
    if (f->every == 0 && f->rate == 0 && f->frames.empty())
      ThrowConfigError(r.path(), "link_loss needs \"every\", \"rate\" or \"frames\"");
    if (f->every != 0 && f->rate != 0)
      ThrowConfigError(r.path(), "link_loss takes \"every\" or \"rate\", not both");
    NeedLink(r, "to", f->from, f->to);
    f->duration = r.Duration("duration", 0, 0);
  }
  void LinkDown(JsonReader& r, Fault* f) {
    f->from = NodeName(r, "a");
    f->to = NodeName(r, "b");
    NeedLink(r, "b", f->from, f->to);
    f->duration = r.Duration("duration", 0, 0);
    if (r.Has("reroute_after")) {
      if (t_.SwitchIndex(f->from) < 0 || t_.SwitchIndex(f->to) < 0) {
        ThrowConfigError(r.PathOf("reroute_after"),
                         "only a link between two switches can be routed around");
      }
      f->reroute_after = r.Duration("reroute_after", 0, 0);
    }
  }
  void MacFlush(JsonReader& r, Fault* f) {
    f->sw = Switch(r, "switch", false);
    f->host = Host(r, "host");
  }
  void MacAging(JsonReader& r, Fault* f) {
    f->sw = Switch(r, "switch", true);
    f->aging = r.Duration("aging", kNs);
  }
  void PauseInjection(JsonReader& r, Fault* f) {
    Target(r, f);
    if (r.Has("priorities")) {
      if (r.Has("priority")) {
        ThrowConfigError(r.PathOf("priorities"), "takes \"priority\" or \"priorities\", not both");
      }
      const auto& pl = r.Require("priorities");
      if (!pl.is_array() || pl.empty()) {
        ThrowConfigError(r.PathOf("priorities"), "must be a non-empty array of priorities 0..7");
      }
      f->priorities = 0;
      for (size_t k = 0; k < pl.size(); ++k) {
        if (!pl[k].is_number_integer() || pl[k].get<int>() < 0 || pl[k].get<int>() > 7) {
          ThrowConfigError(ArrayPath(r.PathOf("priorities"), k), "must be a priority 0..7");
        }
        f->priorities |= static_cast<uint8_t>(1 << pl[k].get<int>());
      }
      f->priority = __builtin_ctz(f->priorities);
    } else {
      f->priority = static_cast<int>(r.Int("priority", 3, 0, 7));
    }
    f->xoff = r.Bool("xoff", true);
    f->quanta = static_cast<int>(r.Int("quanta", -1, 0, 0xFFFF));
    Pace(r, f, 10000);
  }
  void FrameInjection(JsonReader& r, Fault* f) {
    Target(r, f);
    static const std::map<std::string, Fault::Garbage> kFrames = {
        {"truncated", Fault::Garbage::kTruncated}, {"bad_ip_checksum", Fault::Garbage::kBadIpChecksum},
        {"bad_icrc", Fault::Garbage::kBadIcrc},   {"bad_opcode", Fault::Garbage::kBadOpcode},
        {"runt", Fault::Garbage::kRunt},           {"random", Fault::Garbage::kRandom}};
    const std::string g = r.String("frame");
    if (!kFrames.count(g)) {
      ThrowConfigError(r.PathOf("frame"), "must be truncated, bad_ip_checksum, bad_icrc, "
                                          "bad_opcode, runt or random, got \"" + g + "\"");
    }
    f->garbage = kFrames.at(g);
    Pace(r, f, 1000);
  }
  void CnpInjection(JsonReader& r, Fault* f) {
    f->host = Host(r, "host");
    f->port = -1;  // at the host's NIC
    f->qpn = static_cast<uint32_t>(r.Int("qpn", 1, 1, 0xFFFFFF));
    Pace(r, f, 100000);
  }
  void Config(JsonReader& r, Fault* f) {
    f->sw = Switch(r, "switch", true);
    if (r.Has("pfc_watchdog")) f->pfc_watchdog = r.Bool("pfc_watchdog", false) ? 1 : 0;
    if (r.Has("drop_lossless_on_incomplete_arp")) {
      f->drop_incomplete_arp = r.Bool("drop_lossless_on_incomplete_arp", false) ? 1 : 0;
    }
  }

  const Topology& t_;
};

}  // namespace

std::vector<Fault> ReadFaults(const nlohmann::json& j, const std::string& path, const Topology& t) {
  if (!j.is_array()) ThrowConfigError(path, "must be an array of fault events");
  FaultReader reader(t);
  std::vector<Fault> out;
  for (size_t i = 0; i < j.size(); ++i) {
    JsonReader r(j[i], ArrayPath(path, i));
    out.push_back(reader.Read(r));
  }
  return out;
}

}  // namespace rocefab
