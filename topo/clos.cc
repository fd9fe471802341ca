#include "topo/clos.h"

namespace rocefab {

Result<Topology> BuildClos(const ClosSpec& s) {
  using R = Result<Topology>;
  if (s.tiers != 2 && s.tiers != 3) return R::Error("tiers: must be 2 or 3");
  if (s.spines < 1 || s.spines > 256) return R::Error("spines: must be 1..256");
  if (s.tors < 1 || s.tors > 256) return R::Error("tors: must be 1..256");
  if (s.hosts_per_tor < 0 || s.hosts_per_tor > 253)
    return R::Error("hosts_per_tor: must be 0..253");
  if (s.link_rate.bps() <= 0) return R::Error("link_rate: must be > 0");
  if (s.host_rate.bps() < 0) return R::Error("host_rate: must be >= 0");
  if (s.cable_m < 0) return R::Error("cable: must be >= 0");
  if (s.tiers != 3 && s.leaf_cable_m >= 0) return R::Error("leaf_cable: 3-tier only");
  // Each tier's cable (real fabrics: a few metres to the hosts, longer runs up the tiers).
  const double host_cable = s.host_cable_m >= 0 ? s.host_cable_m : s.cable_m;
  const double tor_cable = s.tor_cable_m >= 0 ? s.tor_cable_m : s.cable_m;
  const double leaf_cable = s.leaf_cable_m >= 0 ? s.leaf_cable_m : s.cable_m;
  if (s.tiers == 3) {
    if (s.podsets < 1 || s.podsets > 64) return R::Error("podsets: must be 1..64");
    if (s.leaves_per_podset < 1 || s.leaves_per_podset > 64) {
      return R::Error("leaves_per_podset: must be 1..64");
    }
    if (s.spines % s.leaves_per_podset != 0) {
      return R::Error(
          "spines: 3-tier needs spines divisible by leaves_per_podset (one plane per leaf)");
    }
  }
  const int podsets = s.tiers == 3 ? s.podsets : 1;
  const BitRate host_rate = s.host_rate.bps() > 0 ? s.host_rate : s.link_rate;
  Topology t;
  int tor_index = 0;
  std::vector<std::vector<std::string>> tors(podsets), leaves(podsets);
  for (int p = 0; p < podsets; ++p) {
    for (int i = 0; i < s.tors; ++i, ++tor_index) {
      TopoSwitch sw;
      sw.name = s.tiers == 3 ? "p" + std::to_string(p) + "-tor" + std::to_string(i)
                             : "tor" + std::to_string(i);
      sw.role = SwitchRole::kTor;
      sw.podset = p;
      sw.subnet = 10u << 24 | static_cast<uint32_t>(1 + tor_index / 256) << 16 |
                  static_cast<uint32_t>(tor_index % 256) << 8;
      sw.prefix_len = 24;
      sw.vlan = 100;
      tors[p].push_back(sw.name);
      t.switches.push_back(sw);
    }
    if (s.tiers == 3) {
      for (int l = 0; l < s.leaves_per_podset; ++l) {
        TopoSwitch sw;
        sw.name = "p" + std::to_string(p) + "-leaf" + std::to_string(l);
        sw.role = SwitchRole::kLeaf;
        sw.podset = p;
        leaves[p].push_back(sw.name);
        t.switches.push_back(sw);
      }
    }
  }
  for (int i = 0; i < s.spines; ++i) {
    TopoSwitch sw;
    sw.name = "spine" + std::to_string(i);
    sw.role = SwitchRole::kSpine;
    t.switches.push_back(sw);
  }
  for (size_t i = 0; i < t.switches.size(); ++i) {
    auto& sw = t.switches[i];
    sw.loopback = 10u << 24 | 255u << 16 | static_cast<uint32_t>(i + 1);
    sw.mac = Mac{
        {0x02, 0x52, 0x53, 0, static_cast<uint8_t>((i >> 8) & 255), static_cast<uint8_t>(i & 255)}};
  }
  int host_index = 0;
  for (const auto& sw : t.switches) {
    if (sw.role != SwitchRole::kTor) continue;
    for (int h = 0; h < s.hosts_per_tor; ++h, ++host_index) {
      TopoHost host;
      host.name = "h" + std::to_string(host_index);
      host.tor = sw.name;
      host.ip = sw.subnet + 2 + static_cast<uint32_t>(h);
      host.mac = Mac{{0x02, 0x52, 0x48, 0, static_cast<uint8_t>((host_index >> 8) & 255),
                      static_cast<uint8_t>(host_index & 255)}};
      host.kind = s.host_kind;
      t.hosts.push_back(host);
      t.links.push_back(TopoLink{sw.name, host.name, host_rate, host_cable});
    }
  }
  const int spines_per_plane = s.tiers == 3 ? s.spines / s.leaves_per_podset : s.spines;
  for (int p = 0; p < podsets; ++p) {
    if (s.tiers == 2) {
      for (const auto& tor : tors[p]) {
        for (int i = 0; i < s.spines; ++i) {
          t.links.push_back(TopoLink{tor, "spine" + std::to_string(i), s.link_rate, tor_cable});
        }
      }
    } else {
      for (const auto& tor : tors[p]) {
        for (const auto& leaf : leaves[p])
          t.links.push_back(TopoLink{tor, leaf, s.link_rate, tor_cable});
      }
      for (int l = 0; l < s.leaves_per_podset; ++l) {
        for (int k = 0; k < spines_per_plane; ++k) {
          t.links.push_back(TopoLink{leaves[p][l],
                                     "spine" + std::to_string(l * spines_per_plane + k),
                                     s.link_rate, leaf_cable});
        }
      }
    }
  }
  // Round-trip through the strict reader so generated fabrics obey the same rules as files.
  return Topology::FromJson(t.ToJson(), "topology");
}

}  // namespace rocefab
