#include "run/netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

extern char** environ;

namespace rocefab {
namespace {

std::string Join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// Starts `argv` (PATH lookup) with its stdin, stdout and stderr on the given descriptors, in a
// process group of its own when `own_group`. posix_spawn, not fork: glibc's posix_spawn shares
// the parent's memory until the exec (CLONE_VM | CLONE_VFORK), so a live run's poll thread does
// not take copy-on-write faults on its mbufs and queues each time a tool starts (fork made
// delay-line deliveries milliseconds late). Errors name the program and errno.
Result<pid_t> Spawn(const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd,
                    bool own_group) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  if (own_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);  // Ctrl-C goes to rocefab, which stops its children
  }
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Result<pid_t>::Error("cannot run `" + Join(argv) + "`: " + strerror(rc));
  return pid;
}

}  // namespace

Result<std::string> RunCommand(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return Result<std::string>::Error("pipe: " + std::string(strerror(errno)));
  }
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto spawned = Spawn(argv, devnull < 0 ? 0 : devnull, out[1], err[1], /*own_group=*/false);
  if (devnull >= 0) close(devnull);
  close(out[1]);
  close(err[1]);
  if (!spawned.ok()) {
    close(out[0]);
    close(err[0]);
    return Result<std::string>::Error(spawned.message());
  }
  const pid_t pid = spawned.value();
  // Read stderr in a helper thread so neither pipe can fill and block the child.
  std::string err_text;
  std::thread t([&] { err_text = ReadAll(err[0]); });
  std::string out_text = ReadAll(out[0]);
  t.join();
  close(out[0]);
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!err_text.empty() && err_text.back() == '\n') err_text.pop_back();
    return Result<std::string>::Error("`" + Join(argv) + "` failed (" +
                                      (WIFEXITED(status)
                                           ? "exit " + std::to_string(WEXITSTATUS(status))
                                           : std::string("killed")) +
                                      "): " + err_text);
  }
  return out_text;
}

Result<pid_t> SpawnCommand(const std::vector<std::string>& argv, const std::string& log_path) {
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Result<pid_t>::Error(log_path + ": " + strerror(errno));
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto pid = Spawn(argv, devnull < 0 ? 0 : devnull, fd, fd, /*own_group=*/true);
  if (devnull >= 0) close(devnull);
  close(fd);
  return pid;
}

bool ChildExited(pid_t pid, int* status) {
  const pid_t r = waitpid(pid, status, WNOHANG);
  return r == pid;
}

void StopChild(pid_t pid, int grace_ms) {
  int status;
  if (ChildExited(pid, &status)) return;
  kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ChildExited(pid, &status)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
}

Status CreateVethHost(const VethHost& h) {
  const std::string tmp_if = h.switch_if + "x";  // host end before it is renamed eth0
  const std::vector<std::vector<std::string>> steps = {
      {"ip", "netns", "add", h.netns},
      {"ip", "link", "add", h.switch_if, "numtxqueues", "1", "numrxqueues", "1", "type", "veth",
       "peer", "name", tmp_if, "numtxqueues", "1", "numrxqueues", "1"},
      {"ip", "link", "set", tmp_if, "netns", h.netns},
      {"ip", "-n", h.netns, "link", "set", tmp_if, "name", "eth0"},
      {"ip", "-n", h.netns, "link", "set", "eth0", "address", h.mac},
      {"ip", "netns", "exec", h.netns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
      {"ip", "netns", "exec", h.netns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"},
      {"ip", "-n", h.netns, "addr", "add", h.ip_cidr, "dev", "eth0"},
      {"ip", "-n", h.netns, "link", "set", "lo", "up"},
      {"ip", "-n", h.netns, "link", "set", "eth0", "up"},
      {"ip", "-n", h.netns, "route", "add", "default", "via", h.gateway},
      // af_packet forwards CHECKSUM_PARTIAL frames unfinished: make the kernel fill checksums.
      {"ip", "netns", "exec", h.netns, "ethtool", "-K", "eth0", "tx", "off"},
      {"sysctl", "-qw", "net.ipv6.conf." + h.switch_if + ".disable_ipv6=1"},
      {"ip", "link", "set", h.switch_if, "up"},
      {"ethtool", "-K", h.switch_if, "tx", "off", "gro", "off"},
  };
  for (const auto& s : steps) {
    auto r = RunCommand(s);
    if (!r.ok()) return r.status();
  }
  return Status();
}

Status DeleteVethHost(const VethHost& h) {
  Status first;
  auto r = RunCommand({"ip", "netns", "del", h.netns});
  if (!r.ok()) first = r.status();
  // The pair normally disappears with the namespace; remove the root end if it survived.
  if (RunCommand({"ip", "link", "show", h.switch_if}).ok()) {
    auto d = RunCommand({"ip", "link", "del", h.switch_if});
    // The kernel may remove the pair with the namespace between the show and the del: gone is
    // what was asked.
    if (!d.ok() && first.ok() && RunCommand({"ip", "link", "show", h.switch_if}).ok())
      first = d.status();
  }
  return first;
}

namespace {

// One NETLINK_SOCK_DIAG dump of the TCP sockets of `family` in state LISTEN in the namespace of
// netlink socket `nl` (what ss asks; the kernel walks only the listening hash). True when one
// has local port `port`; error on a netlink failure.
Result<bool> ListeningOn(int nl, uint8_t family, int port) {
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof msg;
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.req.sdiag_family = family;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = 1u << TCP_LISTEN;
  if (send(nl, &msg, sizeof msg, 0) < 0) {
    return Result<bool>::Error(std::string("sock_diag request: ") + std::strerror(errno));
  }
  bool found = false;
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    const ssize_t n = recv(nl, buf, sizeof buf, 0);
    if (n < 0) return Result<bool>::Error(std::string("sock_diag reply: ") + std::strerror(errno));
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return found;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        return Result<bool>::Error(std::string("sock_diag: ") + std::strerror(-e->error));
      }
      const auto* d = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      if (ntohs(d->id.idiag_sport) == port) found = true;
    }
  }
}

}  // namespace

Status WaitTcpListening(const std::string& netns, int port, int timeout_ms,
                        const std::atomic<bool>* stop) {
  Status result;
  // A thread of its own joins the namespace (setns changes only the calling thread's); the
  // netlink socket it then opens answers for that namespace.
  std::thread t([&] {
    const std::string path = "/run/netns/" + netns;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      result = Status::Error("join network namespace " + netns + " (" + path +
                             "): " + std::strerror(errno));
      if (fd >= 0) close(fd);
      return;
    }
    close(fd);
    const int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0) {
      result = Status::Error(std::string("netlink sock_diag socket: ") + std::strerror(errno));
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (stop == nullptr || !stop->load()) {
      for (uint8_t family : {AF_INET, AF_INET6}) {
        auto r = ListeningOn(nl, family, port);
        if (!r.ok() || r.value()) {
          if (!r.ok()) result = Status::Error(netns + ": " + r.message());
          close(nl);
          return;
        }
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // sockets have no notification
    }
    close(nl);
    result = Status::Error(stop != nullptr && stop->load()
                               ? std::string("interrupted")
                               : "nothing listened on TCP port " + std::to_string(port) + " in " +
                                     netns + " within " + std::to_string(timeout_ms) + " ms");
  });
  t.join();
  return result;
}

std::vector<std::string> ListNetns(const std::string& prefix) {
  std::vector<std::string> out;
  auto r = RunCommand({"ip", "netns", "list"});
  if (!r.ok()) return out;
  size_t pos = 0;
  const std::string& s = r.value();
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    std::string line = s.substr(pos, nl - pos);
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) line = line.substr(0, sp);
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
    pos = nl + 1;
  }
  return out;
}

}  // namespace rocefab
