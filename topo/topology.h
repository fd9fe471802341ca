#pragma once
/// @file topology.h
/// A fabric as data: switches, hosts and links, read and written as JSON by a strict reader.
///
/// JSON shape (all keys shown; anything else is rejected with its path):
/// {
///   "switches": [{"name": "tor0", "role": "tor"|"leaf"|"spine", "podset": 0,
///                 "subnet": "10.1.0.0/24" (ToRs only; gateway = first address),
///                 "vlan": 100 (ToRs only), "loopback": "10.255.0.1", "mac": "02:..."}],
///   "hosts":    [{"name": "h0", "tor": "tor0", "ip": "10.1.0.2", "mac": "02:...",
///                 "kind": "linux"|"builtin"|"external", "device": "net_tap0,iface=x"}],
///   (external: whatever is plugged into a DPDK device, named by its devargs: a PCI address
///    such as "0000:3b:00.0" (ConnectX through mlx5, Intel through vfio-pci) or a virtual
///    device "net_tap<N>,...", "net_memif<N>,...", "net_af_xdp<N>,...", "net_af_packet<N>,...";
///    live only: the sim puts a built-in host there)
///   "links":    [{"a": "tor0", "b": "spine0", "rate": "100Gbps", "cable": "5m"}]
/// }
/// Ports are numbered per switch in the order its links appear. A host has exactly one link,
/// to its ToR. MACs and loopbacks may be omitted: they are derived from the switch/host index.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "common/wire/headers.h"

namespace rocefab {

enum class SwitchRole : uint8_t { kTor, kLeaf, kSpine };
const char* SwitchRoleName(SwitchRole r);

enum class HostKind : uint8_t {
  kLinux,    ///< a Linux network namespace (live runner); a EmulatedHost stand-in in the sim runner
  kBuiltin,  ///< rocefab's built-in traffic host (EmulatedHost) in both runners
  kExternal,  ///< whatever is plugged into a DPDK device (live); a EmulatedHost stand-in in the sim
};
const char* HostKindName(HostKind k);
/// True for a PCI address "[DDDD:]BB:DD.F" (hexadecimal).
bool IsPciAddress(const std::string& devargs);
/// Why `devargs` is not a device an external host can be plugged into ("" if it is).
std::string DeviceProblem(const std::string& devargs);

struct TopoSwitch {
  std::string
      name;  ///< 1-32 of [A-Za-z0-9_.-], starting alphanumeric; unique among switches and hosts
  SwitchRole role = SwitchRole::kTor;
  int podset = 0;
  Ipv4 subnet = 0;     ///< ToR server subnet (network address)
  int prefix_len = 0;  ///< ToR server subnet length
  uint16_t vlan = 0;   ///< ToR server VLAN
  Ipv4 loopback = 0;
  Mac mac{};
  Ipv4 gateway() const { return subnet + 1; }
};

struct TopoHost {
  /// As a switch name: 1-32 of [A-Za-z0-9_.-], starting alphanumeric; unique; not "all" or
  /// "next_podset" (traffic items' words for sets of hosts; reserved for switches too).
  std::string name;
  std::string tor;
  Ipv4 ip = 0;
  Mac mac{};
  HostKind kind = HostKind::kLinux;
  std::string device;  ///< kExternal: DPDK devargs of the port the host is plugged into
};

struct TopoLink {
  std::string a, b;
  BitRate rate;
  double cable_m = 0;
  Time delay() const { return CableDelay(cable_m); }
};

struct Topology {
  std::vector<TopoSwitch> switches;
  std::vector<TopoHost> hosts;
  std::vector<TopoLink> links;

  /// Strict read; `path` prefixes error paths (e.g. "topology"). Validates names, references,
  /// addressing (host IP inside its ToR subnet, no duplicates) and link rates.
  static Result<Topology> FromJson(const nlohmann::json& j, const std::string& path);
  nlohmann::json ToJson() const;

  /// Index of the switch or host `name`, -1 if none: a linear search (code that resolves a name
  /// per link or per host uses NodeIndex).
  int SwitchIndex(const std::string& name) const;
  int HostIndex(const std::string& name) const;
  /// Ports of node `name`: one per link it is on, numbered p0.. in link order (PlanFabric).
  int PortCount(const std::string& name) const;
};

/// Name -> index of a topology's switches and hosts, taken when constructed (a later change to
/// the topology is not seen): O(1) lookups where a fabric of 16k hosts would otherwise search the
/// names once per link or host (O(n^2), a minute of set-up at 16k hosts).
class NodeIndex {
 public:
  explicit NodeIndex(const Topology& t);
  int Switch(const std::string& name) const { return Find(switches_, name); }  ///< -1 if none
  int Host(const std::string& name) const { return Find(hosts_, name); }       ///< -1 if none

 private:
  static int Find(const std::unordered_map<std::string, int>& m, const std::string& name) {
    auto it = m.find(name);
    return it == m.end() ? -1 : it->second;
  }
  std::unordered_map<std::string, int> switches_, hosts_;
};

}  // namespace rocefab
