#pragma once
/// @file files.h
/// Where rocefab writes results files (summary.json, CSVs, fct.txt, pcaps, time series): never
/// through a symbolic link. A link planted in a results folder (a shared `--out`, a folder another
/// user can write) would otherwise make a run as root write wherever it points.

#include <sys/stat.h>

#include <string>

#include "common/result.h"

namespace rocefab {

/// Error naming `path` when it exists and is a symbolic link; ok when it is absent or a file.
inline Status RefuseSymlink(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return Status::Error(path +
                         ": is a symbolic link; rocefab does not write results through links");
  }
  return Status();
}

}  // namespace rocefab
