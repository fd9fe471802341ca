#pragma once
/// @file netns.h
/// Control-path helpers for the live runner: run programs without a shell (fork/execvp), and
/// create/remove Linux network namespaces and veth pairs with iproute2 and ethtool.

#include <sys/types.h>

#include <atomic>
#include <string>
#include <vector>

#include "common/result.h"

namespace rocefab {

/// Runs `argv` to completion; returns its stdout (stderr is appended on failure). Error when it
/// cannot start or exits non-zero (message has the command line and its stderr).
Result<std::string> RunCommand(const std::vector<std::string>& argv);

/// Starts `argv` in the background with stdout+stderr redirected to `log_path`. Returns the pid.
Result<pid_t> SpawnCommand(const std::vector<std::string>& argv, const std::string& log_path);

/// Non-blocking check: true and *status set once the child has exited.
bool ChildExited(pid_t pid, int* status);

/// Sends SIGTERM, waits up to `grace_ms`, then SIGKILL; always reaps.
void StopChild(pid_t pid, int grace_ms = 500);

/// A namespace host joined to the fabric by a veth pair. The host side is renamed eth0 inside
/// the namespace and gets the MAC, address, default route, TX checksum offload off and IPv6 off;
/// the switch side stays in the root namespace, up, with offloads off.
struct VethHost {
  std::string netns;      ///< namespace name
  std::string switch_if;  ///< root-namespace veth end (a DPDK port attaches here)
  std::string mac, ip_cidr, gateway;
};
Status CreateVethHost(const VethHost& h);
/// Deletes the namespace (which removes its veth end and so the pair) and the switch-side end
/// if it still exists. Best effort; returns the first error.
Status DeleteVethHost(const VethHost& h);

/// Waits until a TCP socket listens on `port` (IPv4 or IPv6) in network namespace `netns`
/// (/run/netns/NAME), or `timeout_ms` passes, or `*stop` turns true. A thread joins the
/// namespace (setns, CLONE_NEWNET) and asks the kernel every 2 ms over NETLINK_SOCK_DIAG for
/// its listening sockets, as ss does, but starts no process: one `ip netns exec ... ss` per
/// probe cost about 11 ms of CPU, taken from a live run's poll thread on a small machine (and
/// reading /proc/net/tcp walks every socket table bucket: 0.4 ms of kernel time a read). Errors:
/// the namespace cannot be joined (names it and errno), a netlink failure, or nothing listened
/// in time (names the port and the timeout), or "interrupted".
Status WaitTcpListening(const std::string& netns, int port, int timeout_ms,
                        const std::atomic<bool>* stop);

/// Names of existing network namespaces that start with `prefix`.
std::vector<std::string> ListNetns(const std::string& prefix);

}  // namespace rocefab
