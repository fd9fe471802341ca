#include "topo/topology.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "common/json_reader.h"
#include "common/units.h"

namespace rocefab {

const char* SwitchRoleName(SwitchRole r) {
  switch (r) {
    case SwitchRole::kTor:
      return "tor";
    case SwitchRole::kLeaf:
      return "leaf";
    case SwitchRole::kSpine:
      return "spine";
  }
  return "?";
}

const char* HostKindName(HostKind k) {
  switch (k) {
    case HostKind::kLinux:
      return "linux";
    case HostKind::kBuiltin:
      return "builtin";
    case HostKind::kExternal:
      return "external";
  }
  return "?";
}

bool IsPciAddress(const std::string& d) {
  // [DDDD:]BB:DD.F, hexadecimal.
  auto hex = [](const std::string& x, size_t n) {
    return x.size() == n && x.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
  };
  const auto dot = d.rfind('.');
  if (dot == std::string::npos || !hex(d.substr(dot + 1), 1)) return false;
  const std::string head = d.substr(0, dot);
  const auto c2 = head.rfind(':');
  if (c2 == std::string::npos || !hex(head.substr(c2 + 1), 2)) return false;
  const std::string bus = head.substr(0, c2);
  const auto c1 = bus.rfind(':');
  if (c1 == std::string::npos) return hex(bus, 2);
  return hex(bus.substr(c1 + 1), 2) && hex(bus.substr(0, c1), 4);
}

std::string DeviceProblem(const std::string& d) {
  if (d.empty()) return "must name a DPDK device";
  if (IsPciAddress(d)) return "";
  static const char* kVdevs[] = {"net_tap", "net_memif", "net_af_xdp", "net_af_packet"};
  const std::string name = d.substr(0, d.find(','));
  for (const char* v : kVdevs) {
    const std::string pre = v;
    if (name.size() > pre.size() && name.rfind(pre, 0) == 0 &&
        name.find_first_not_of("0123456789", pre.size()) == std::string::npos) {
      return "";
    }
  }
  return "\"" + d +
         "\" is neither a PCI address ([DDDD:]BB:DD.F) nor a virtual device "
         "net_tap<N>, net_memif<N>, net_af_xdp<N> or net_af_packet<N> with its arguments";
}

int Topology::SwitchIndex(const std::string& name) const {
  for (size_t i = 0; i < switches.size(); ++i) {
    if (switches[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int Topology::PortCount(const std::string& name) const {
  int n = 0;
  for (const auto& l : links) n += (l.a == name) + (l.b == name);
  return n;
}

NodeIndex::NodeIndex(const Topology& t) {
  switches_.reserve(t.switches.size());
  hosts_.reserve(t.hosts.size());
  for (size_t i = 0; i < t.switches.size(); ++i) switches_.emplace(t.switches[i].name, i);
  for (size_t i = 0; i < t.hosts.size(); ++i) hosts_.emplace(t.hosts[i].name, i);
}

int Topology::HostIndex(const std::string& name) const {
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (hosts[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

// A switch or host name becomes part of namespace names (rfXXXX-<host>), file names (captures,
// `nodes/<switch>/` of a process-per-switch run) and tool arguments run as root: letters, digits,
// '_', '-' and '.', starting with a letter or digit, at most 32 characters (no '/', no shell
// metacharacters, no leading '-' an argument parser would take for an option).
void CheckNodeName(const JsonReader& r, const std::string& name, std::set<std::string>* names) {
  const bool ok_chars =
      !name.empty() && name.size() <= 32 && std::isalnum(static_cast<unsigned char>(name[0])) &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
  if (!ok_chars) {
    ThrowConfigError(r.PathOf("name"),
                     "must be 1-32 letters, digits, '_', '-' or '.', starting with a letter or "
                     "digit (it names namespaces and files), got \"" +
                         name + "\"");
  }
  if (name == "all" || name == "next_podset") {  // traffic items' words for sets of hosts
    ThrowConfigError(r.PathOf("name"), "\"" + name +
                                           "\" is reserved (traffic \"from\"/\"to\" use it for "
                                           "a set of hosts)");
  }
  if (!names->insert(name).second)
    ThrowConfigError(r.PathOf("name"), "must be unique, \"" + name + "\" is used twice");
}

// A node's own MAC must be a unicast address other than 00:00:00:00:00:00: a group address
// (the I/G bit, first octet bit 0: broadcast, multicast, the 802.1Qbb PFC address
// 01:80:c2:00:00:01) is never a frame's source (IEEE 802 "source address", 802.3 clause 3.2.3),
// so switches would drop or flood the node's frames and the run would report nonsense.
void CheckUnicastMac(const JsonReader& r, const Mac& m) {
  const bool zero = std::all_of(std::begin(m.addr_bytes), std::end(m.addr_bytes),
                                [](uint8_t b) { return b == 0; });
  if ((m.addr_bytes[0] & 1) != 0 || zero) {
    ThrowConfigError(r.PathOf("mac"),
                     "must be a unicast address (first octet even) and not "
                     "all zeros, got " +
                         FormatMac(m));
  }
}

Mac DerivedMac(uint8_t kind, uint32_t index) {
  // Locally administered unicast: 02:rf:<kind>:<index 24 bits>.
  Mac m{};
  m.addr_bytes[0] = 0x02;
  m.addr_bytes[1] = 0x52;
  m.addr_bytes[2] = kind;
  m.addr_bytes[3] = (index >> 16) & 0xFF;
  m.addr_bytes[4] = (index >> 8) & 0xFF;
  m.addr_bytes[5] = index & 0xFF;
  return m;
}

template <class T>
T Check(Result<T> r, const std::string& path) {
  if (!r.ok()) ThrowConfigError(path, r.message());
  return r.value();
}

}  // namespace

Result<Topology> Topology::FromJson(const nlohmann::json& j, const std::string& path) {
  try {
    Topology t;
    JsonReader top(j, path);
    const auto& sw = top.Require("switches");
    if (!sw.is_array() || sw.empty()) {
      ThrowConfigError(top.PathOf("switches"), "must be a non-empty array");
    }
    std::set<std::string> names;
    std::set<Ipv4> ips;
    std::set<uint64_t> macs;
    for (size_t i = 0; i < sw.size(); ++i) {
      const std::string p = ArrayPath(top.PathOf("switches"), i);
      JsonReader r(sw[i], p);
      TopoSwitch s;
      s.name = r.String("name");
      CheckNodeName(r, s.name, &names);
      const std::string role = r.String("role");
      if (role == "tor") {
        s.role = SwitchRole::kTor;
      } else if (role == "leaf") {
        s.role = SwitchRole::kLeaf;
      } else if (role == "spine") {
        s.role = SwitchRole::kSpine;
      } else {
        ThrowConfigError(r.PathOf("role"),
                         "must be \"tor\", \"leaf\" or \"spine\", got \"" + role + "\"");
      }
      s.podset = static_cast<int>(r.Int("podset", 0, 0, 1023));
      if (s.role == SwitchRole::kTor) {
        // 8..30: a /31 or /32 leaves no host address beside the gateway's.
        auto pfx = Check(ParseIpv4Prefix(r.String("subnet"), 8, 30), r.PathOf("subnet"));
        s.prefix_len = pfx.second;
        s.subnet = pfx.first & ~((1ull << (32 - pfx.second)) - 1);
        s.vlan = static_cast<uint16_t>(r.Int("vlan", 100, 1, 4094));
        for (const auto& o : t.switches) {  // server subnets must not overlap
          if (o.role != SwitchRole::kTor) continue;
          const int len = std::min(o.prefix_len, s.prefix_len);
          const Ipv4 mask = static_cast<Ipv4>(~((1ull << (32 - len)) - 1));
          if ((o.subnet & mask) == (s.subnet & mask)) {
            ThrowConfigError(r.PathOf("subnet"), "overlaps the subnet of " + o.name);
          }
        }
      } else if (r.Has("subnet") || r.Has("vlan")) {
        ThrowConfigError(r.PathOf(r.Has("subnet") ? "subnet" : "vlan"),
                         "only ToR switches have a server subnet/VLAN");
      }
      s.loopback = r.Has("loopback") ? Check(ParseIpv4(r.String("loopback")), r.PathOf("loopback"))
                                     : (10u << 24 | 255u << 16 | static_cast<uint32_t>(i + 1));
      s.mac = r.Has("mac") ? Check(ParseMac(r.String("mac")), r.PathOf("mac"))
                           : DerivedMac(0x53, static_cast<uint32_t>(i));
      if (!ips.insert(s.loopback).second)
        ThrowConfigError(r.PathOf("loopback"), "duplicate address");
      CheckUnicastMac(r, s.mac);
      if (!macs.insert(MacKey(s.mac)).second) ThrowConfigError(r.PathOf("mac"), "duplicate MAC");
      r.Finish();
      t.switches.push_back(s);
    }
    if (const auto* hs = top.Get("hosts")) {
      if (!hs->is_array()) ThrowConfigError(top.PathOf("hosts"), "must be an array");
      const NodeIndex switch_index(t);
      for (size_t i = 0; i < hs->size(); ++i) {
        const std::string p = ArrayPath(top.PathOf("hosts"), i);
        JsonReader r((*hs)[i], p);
        TopoHost h;
        h.name = r.String("name");
        CheckNodeName(r, h.name, &names);
        h.tor = r.String("tor");
        const int ti = switch_index.Switch(h.tor);
        if (ti < 0 || t.switches[ti].role != SwitchRole::kTor) {
          ThrowConfigError(r.PathOf("tor"), "no ToR switch named \"" + h.tor + "\"");
        }
        h.ip = Check(ParseIpv4(r.String("ip")), r.PathOf("ip"));
        const auto& tor = t.switches[ti];
        const Ipv4 mask = ~((1ull << (32 - tor.prefix_len)) - 1) & 0xFFFFFFFFu;
        const Ipv4 bcast = tor.subnet | ~mask;
        if ((h.ip & mask) != tor.subnet || h.ip == tor.subnet || h.ip == bcast ||
            h.ip == tor.gateway()) {
          ThrowConfigError(r.PathOf("ip"), FormatIpv4(h.ip) + " is not a host address of " +
                                               tor.name + "'s subnet " + FormatIpv4(tor.subnet) +
                                               "/" + std::to_string(tor.prefix_len) + " (gateway " +
                                               FormatIpv4(tor.gateway()) + ")");
        }
        if (!ips.insert(h.ip).second) ThrowConfigError(r.PathOf("ip"), "duplicate address");
        h.mac = r.Has("mac") ? Check(ParseMac(r.String("mac")), r.PathOf("mac"))
                             : DerivedMac(0x48, static_cast<uint32_t>(i));
        CheckUnicastMac(r, h.mac);
        if (!macs.insert(MacKey(h.mac)).second) ThrowConfigError(r.PathOf("mac"), "duplicate MAC");
        const std::string kind = r.String("kind", "linux");
        if (kind == "linux") {
          h.kind = HostKind::kLinux;
        } else if (kind == "builtin") {
          h.kind = HostKind::kBuiltin;
        } else if (kind == "external") {
          h.kind = HostKind::kExternal;
          h.device = r.String("device");
          const std::string problem = DeviceProblem(h.device);
          if (!problem.empty()) ThrowConfigError(r.PathOf("device"), problem);
        } else {
          ThrowConfigError(r.PathOf("kind"),
                           "must be \"linux\", \"builtin\" or \"external\", got \"" + kind + "\"");
        }
        if (h.kind != HostKind::kExternal && r.Has("device")) {
          ThrowConfigError(r.PathOf("device"), "only for \"kind\": \"external\"");
        }
        r.Finish();
        t.hosts.push_back(h);
      }
    }
    const auto& ls = top.Require("links");
    if (!ls.is_array()) ThrowConfigError(top.PathOf("links"), "must be an array");
    std::map<std::string, int> host_links;
    std::set<std::pair<std::string, std::string>> pairs;
    const NodeIndex index(t);
    for (size_t i = 0; i < ls.size(); ++i) {
      const std::string p = ArrayPath(top.PathOf("links"), i);
      JsonReader r(ls[i], p);
      TopoLink l;
      l.a = r.String("a");
      l.b = r.String("b");
      for (const auto* end : {&l.a, &l.b}) {
        const std::string key = end == &l.a ? "a" : "b";
        const int hi = index.Host(*end);
        if (index.Switch(*end) < 0 && hi < 0) {
          ThrowConfigError(r.PathOf(key), "no switch or host named \"" + *end + "\"");
        }
        if (hi >= 0) {
          const auto& h = t.hosts[static_cast<size_t>(hi)];
          const std::string& other = end == &l.a ? l.b : l.a;
          if (other != h.tor) {
            ThrowConfigError(r.PathOf(key), "host " + h.name + " must link to its ToR " + h.tor);
          }
          if (++host_links[h.name] > 1)
            ThrowConfigError(p, "host " + h.name + " has a second link");
        }
      }
      if (l.a == l.b) ThrowConfigError(p, "a link must join two different nodes");
      l.rate = r.Rate("rate");
      l.cable_m = r.Length("cable", 1.0);
      if (l.cable_m < 0 || l.cable_m > 100000)
        ThrowConfigError(r.PathOf("cable"), "must be 0..100km");
      r.Finish();
      t.links.push_back(l);
    }
    for (const auto& h : t.hosts) {
      if (!host_links.count(h.name)) {
        ThrowConfigError(top.PathOf("links"),
                         "host " + h.name + " has no link to its ToR " + h.tor);
      }
    }
    top.Finish();
    return t;
  } catch (const ConfigError& e) {
    return Result<Topology>::Error(e.what());
  }
}

nlohmann::json Topology::ToJson() const {
  nlohmann::json sw = nlohmann::json::array(), hs = nlohmann::json::array(),
                 ls = nlohmann::json::array();
  for (const auto& s : switches) {
    nlohmann::json o = {{"name", s.name}, {"role", SwitchRoleName(s.role)}, {"podset", s.podset}};
    if (s.role == SwitchRole::kTor) {
      o["subnet"] = FormatIpv4(s.subnet) + "/" + std::to_string(s.prefix_len);
      o["vlan"] = s.vlan;
    }
    o["loopback"] = FormatIpv4(s.loopback);
    o["mac"] = FormatMac(s.mac);
    sw.push_back(o);
  }
  for (const auto& h : hosts) {
    hs.push_back({{"name", h.name},
                  {"tor", h.tor},
                  {"ip", FormatIpv4(h.ip)},
                  {"mac", FormatMac(h.mac)},
                  {"kind", HostKindName(h.kind)}});
    if (h.kind == HostKind::kExternal) hs.back()["device"] = h.device;
  }
  for (const auto& l : links) {
    char cable[32];
    std::snprintf(cable, sizeof cable, "%gm", l.cable_m);
    ls.push_back({{"a", l.a}, {"b", l.b}, {"rate", FormatRate(l.rate)}, {"cable", cable}});
  }
  return {{"switches", sw}, {"hosts", hs}, {"links", ls}};
}

}  // namespace rocefab
