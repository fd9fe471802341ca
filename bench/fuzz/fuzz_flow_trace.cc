// Fuzz target: the reference simulator's flow-file reader (ReadFlowTrace: "N" then
// "src dst pg size start_s" lines) on arbitrary text, through a memory file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "nic-emu/rdma_apps.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("flows.txt", 0);
  if (fd < 0) __builtin_trap();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto flows = rocefab::ReadFlowTrace(path, 16, 2 * rocefab::kSec);
  if (flows.ok()) {
    for (const auto& f : flows.value()) {
      if (f.src < 0 || f.src >= 16 || f.dst < 0 || f.dst >= 16) __builtin_trap();
    }
  } else if (flows.message().empty()) {
    __builtin_trap();
  }
  return 0;
}
