#pragma once
// Test helper: a shell command's standard output (its standard error discarded).

#include <cstdio>
#include <string>

namespace rocefab::testing {

inline std::string ShellOutput(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  std::string out;
  if (p == nullptr) return out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

}  // namespace rocefab::testing
