#include "common/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <mutex>

#include "common/packet.h"

namespace rocefab {

Status InitEal(const std::vector<std::string>& args) {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [&] {
    std::vector<std::string> all = {"rocefab"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    int r = rte_eal_init(static_cast<int>(argv.size()), argv.data());
    if (r < 0) {
      status = Status::Error(std::string("EAL init failed: ") + rte_strerror(rte_errno));
    }
  });
  return status;
}

std::vector<std::string> NoHugeEalArgs(int mem_mb) {
  return {"--no-huge", "--no-shconf", "-m",         std::to_string(mem_mb),
          "--no-pci",  "-l",          "0",          "--log-level=lib.eal:error",
          "--no-telemetry"};
}

Result<rte_mempool*> CreatePktPool(const std::string& name, unsigned n, uint16_t data_room) {
  rte_mempool* mp =
      rte_pktmbuf_pool_create(name.c_str(), n, n >= 1024 ? 256 : 0, kMbufPrivSize, data_room,
                              SOCKET_ID_ANY);
  if (mp == nullptr) {
    return Result<rte_mempool*>::Error("cannot create mbuf pool " + name + ": " +
                                       rte_strerror(rte_errno));
  }
  return mp;
}

}  // namespace rocefab
