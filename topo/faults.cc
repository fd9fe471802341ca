#include "topo/faults.h"

#include <map>

#include "common/json_reader.h"

namespace rocefab {

std::vector<Fault> ReadFaults(const nlohmann::json& j, const std::string& path, const Topology& t) {
  if (!j.is_array()) ThrowConfigError(path, "must be an array of fault events");
  std::vector<Fault> out;
  auto need_host = [&](JsonReader& r, const std::string& key) {
    const std::string h = r.String(key);
    if (t.HostIndex(h) < 0) ThrowConfigError(r.PathOf(key), "no host named \"" + h + "\"");
    return h;
  };
  auto need_node = [&](JsonReader& r, const std::string& key) {
    const std::string n = r.String(key);
    if (t.HostIndex(n) < 0 && t.SwitchIndex(n) < 0)
      ThrowConfigError(r.PathOf(key), "no switch or host named \"" + n + "\"");
    return n;
  };
  auto need_switch = [&](JsonReader& r, const std::string& key, bool allow_all) {
    const std::string n = r.String(key);
    if (!(allow_all && n == "all") && t.SwitchIndex(n) < 0) {
      ThrowConfigError(r.PathOf(key), "no switch named \"" + n + "\"");
    }
    return n;
  };
  auto need_link = [&](JsonReader& r, const std::string& ka, const std::string& a,
                       const std::string& b) {
    for (const auto& l : t.links) {
      if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return;
    }
    ThrowConfigError(r.PathOf(ka), "no link between \"" + a + "\" and \"" + b + "\"");
  };
  for (size_t i = 0; i < j.size(); ++i) {
    JsonReader r(j[i], ArrayPath(path, i));
    Fault f;
    const std::string kind = r.String("kind");
    f.at = r.Duration("at", 0);
    if (kind == "nic_stall" || kind == "dead_host") {
      f.kind = kind == "nic_stall" ? Fault::Kind::kNicStall : Fault::Kind::kDeadHost;
      f.host = need_host(r, "host");
      f.duration = r.Duration("duration", 0, 0);
    } else if (kind == "link_loss") {
      f.kind = Fault::Kind::kLinkLoss;
      f.from = need_node(r, "from");
      f.to = need_node(r, "to");
      f.every = static_cast<uint64_t>(r.Int("every", 0, 0, 1LL << 40));
      f.rate = r.Double("rate", 0, 0, 1);
      if (const auto* fr = r.Get("frames")) {
        if (!fr->is_array() || fr->empty()) {
          ThrowConfigError(r.PathOf("frames"), "must be a non-empty array of frame numbers (1 = first)");
        }
        for (size_t k = 0; k < fr->size(); ++k) {
          const auto& x = (*fr)[k];
          if (!x.is_number_integer() || x.get<int64_t>() < 1) {
            ThrowConfigError(ArrayPath(r.PathOf("frames"), k), "must be a frame number >= 1");
          }
          f.frames.push_back(x.get<uint64_t>());
        }
      }
      if (r.Has("frame_type")) {
        auto c = FrameClassFromName(r.String("frame_type"));
        if (!c.ok()) ThrowConfigError(r.PathOf("frame_type"), c.message());
        f.filter.cls = c.value();
      }
      f.filter.ip_id = static_cast<int>(r.Int("ip_id", -1, 0, 65535));
      if (f.every == 0 && f.rate == 0 && f.frames.empty())
        ThrowConfigError(r.path(), "link_loss needs \"every\", \"rate\" or \"frames\"");
      if (f.every != 0 && f.rate != 0)
        ThrowConfigError(r.path(), "link_loss takes \"every\" or \"rate\", not both");
      need_link(r, "to", f.from, f.to);
      f.duration = r.Duration("duration", 0, 0);
    } else if (kind == "link_down") {
      f.kind = Fault::Kind::kLinkDown;
      f.from = need_node(r, "a");
      f.to = need_node(r, "b");
      need_link(r, "b", f.from, f.to);
      f.duration = r.Duration("duration", 0, 0);
      if (r.Has("reroute_after")) {
        if (t.SwitchIndex(f.from) < 0 || t.SwitchIndex(f.to) < 0) {
          ThrowConfigError(r.PathOf("reroute_after"),
                           "only a link between two switches can be routed around");
        }
        f.reroute_after = r.Duration("reroute_after", 0, 0);
      }
    } else if (kind == "mac_flush") {
      f.kind = Fault::Kind::kMacFlush;
      f.sw = need_switch(r, "switch", false);
      f.host = need_host(r, "host");
    } else if (kind == "mac_aging") {
      f.kind = Fault::Kind::kMacAging;
      f.sw = need_switch(r, "switch", true);
      f.aging = r.Duration("aging", kNs);
    } else if (kind == "pause_injection" || kind == "frame_injection") {
      f.kind = kind == "pause_injection" ? Fault::Kind::kPauseInjection : Fault::Kind::kFrameInjection;
      if (r.Has("host")) {
        if (r.Has("switch") || r.Has("port")) {
          ThrowConfigError(r.PathOf("host"), "takes \"host\" or \"switch\" and \"port\", not both");
        }
        f.host = need_host(r, "host");
        f.port = -1;
      } else {
        f.sw = need_switch(r, "switch", false);
        f.port = static_cast<int>(r.Int("port", 0, 1023));
        if (f.port >= t.PortCount(f.sw)) {
          ThrowConfigError(r.PathOf("port"), "switch \"" + f.sw + "\" has ports 0.." +
                                                 std::to_string(t.PortCount(f.sw) - 1));
        }
      }
      if (f.kind == Fault::Kind::kPauseInjection) {
        if (r.Has("priorities")) {
          if (r.Has("priority")) ThrowConfigError(r.PathOf("priorities"), "takes \"priority\" or \"priorities\", not both");
          const auto& pl = r.Require("priorities");
          if (!pl.is_array() || pl.empty()) ThrowConfigError(r.PathOf("priorities"), "must be a non-empty array of priorities 0..7");
          f.priorities = 0;
          for (size_t k = 0; k < pl.size(); ++k) {
            if (!pl[k].is_number_integer() || pl[k].get<int>() < 0 || pl[k].get<int>() > 7) {
              ThrowConfigError(ArrayPath(r.PathOf("priorities"), k), "must be a priority 0..7");
            }
            f.priorities |= static_cast<uint8_t>(1 << pl[k].get<int>());
          }
          f.priority = __builtin_ctz(f.priorities);
        } else {
          f.priority = static_cast<int>(r.Int("priority", 3, 0, 7));
        }
        f.xoff = r.Bool("xoff", true);
        f.quanta = static_cast<int>(r.Int("quanta", -1, 0, 0xFFFF));
        f.rate = r.Double("rate", 10000, 1, 1e8);
      } else {
        static const std::map<std::string, Fault::Garbage> kinds = {
            {"truncated", Fault::Garbage::kTruncated}, {"bad_ip_checksum", Fault::Garbage::kBadIpChecksum},
            {"bad_icrc", Fault::Garbage::kBadIcrc},   {"bad_opcode", Fault::Garbage::kBadOpcode},
            {"runt", Fault::Garbage::kRunt},           {"random", Fault::Garbage::kRandom}};
        const std::string g = r.String("frame");
        if (!kinds.count(g)) {
          ThrowConfigError(r.PathOf("frame"), "must be truncated, bad_ip_checksum, bad_icrc, "
                                              "bad_opcode, runt or random, got \"" + g + "\"");
        }
        f.garbage = kinds.at(g);
        f.rate = r.Double("rate", 1000, 1, 1e8);
      }
      f.count = static_cast<uint64_t>(r.Int("count", 0, 0, 1LL << 40));
      f.duration = r.Duration("duration", 0, 0);
    } else if (kind == "cnp_injection") {
      f.kind = Fault::Kind::kCnpInjection;
      f.host = need_host(r, "host");
      f.port = -1;  // at the host's NIC
      f.qpn = static_cast<uint32_t>(r.Int("qpn", 1, 1, 0xFFFFFF));
      f.rate = r.Double("rate", 100000, 1, 1e8);
      f.count = static_cast<uint64_t>(r.Int("count", 0, 0, 1LL << 40));
      f.duration = r.Duration("duration", 0, 0);
    } else if (kind == "config") {
      f.kind = Fault::Kind::kConfig;
      f.sw = need_switch(r, "switch", true);
      if (r.Has("pfc_watchdog")) f.pfc_watchdog = r.Bool("pfc_watchdog", false) ? 1 : 0;
      if (r.Has("drop_lossless_on_incomplete_arp")) {
        f.drop_incomplete_arp = r.Bool("drop_lossless_on_incomplete_arp", false) ? 1 : 0;
      }
    } else {
      ThrowConfigError(r.PathOf("kind"),
                       "unknown fault \"" + kind +
                           "\" (nic_stall, dead_host, link_loss, "
                           "link_down, mac_flush, mac_aging, pause_injection, cnp_injection, "
                           "frame_injection, config)");
    }
    r.Finish();
    out.push_back(f);
  }
  return out;
}

}  // namespace rocefab
