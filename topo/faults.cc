#include "topo/faults.h"

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
      if (f.every == 0 && f.rate == 0)
        ThrowConfigError(r.path(), "link_loss needs \"every\" or \"rate\"");
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
    } else if (kind == "pause_injection") {
      f.kind = Fault::Kind::kPauseInjection;
      f.sw = need_switch(r, "switch", false);
      f.port = static_cast<int>(r.Int("port", 0, 1023));
      if (f.port >= t.PortCount(f.sw)) {
        ThrowConfigError(r.PathOf("port"), "switch \"" + f.sw + "\" has ports 0.." +
                                               std::to_string(t.PortCount(f.sw) - 1));
      }
      f.priority = static_cast<int>(r.Int("priority", 3, 0, 7));
      f.xoff = r.Bool("xoff", true);
      f.rate = r.Double("rate", 10000, 1, 1e8);
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
                           "link_down, mac_flush, mac_aging, pause_injection, config)");
    }
    r.Finish();
    out.push_back(f);
  }
  return out;
}

}  // namespace rocefab
