#pragma once
/// @file ranks.h
/// The processes of one distributed sim run (MPI ranks, run/mpi_ranks.h) as the sim runner and
/// the fabric see them: who this process is, and the collective operations they need. Every
/// rank calls each operation in the same order (they are collective: a rank that skips one
/// leaves the others waiting). The interface keeps MPI itself out of the runner, so the build
/// works without it (Open MPI is an optional dependency) and tests may supply their own.

#include <cstdint>
#include <string>
#include <vector>

namespace rocefab {

class Ranks {
 public:
  virtual ~Ranks() = default;
  /// This process's rank, 0..size()-1, and the number of ranks (>= 1).
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The smallest of every rank's `v`.
  virtual int64_t Min(int64_t v) = 0;
  /// Element-wise over every rank's vector (all the same length), in place.
  virtual void Or(std::vector<uint8_t>* v) = 0;
  virtual void Sum(std::vector<uint64_t>* v) = 0;
  virtual void Max(std::vector<int64_t>* v) = 0;
  /// Sends out[r] to rank r (out has size() entries; out[rank()] is handed back as is) and
  /// returns what each rank sent to this one, by sender.
  virtual std::vector<std::string> AllToAll(std::vector<std::string> out) = 0;
  /// AllToAll, and *v becomes the smallest of every rank's *v: one round where the transport
  /// can (MpiRanks sends the value with the message sizes), two here.
  virtual std::vector<std::string> AllToAllMin(std::vector<std::string> out, int64_t* v) {
    *v = Min(*v);
    return AllToAll(std::move(out));
  }

  /// The largest of every rank's `v`.
  int64_t Max(int64_t v) { return -Min(-v); }
  /// Every rank's `s`, by rank, at rank 0 (empty strings elsewhere).
  std::vector<std::string> GatherToRoot(const std::string& s) {
    std::vector<std::string> out(static_cast<size_t>(size()));
    out[0] = s;
    return AllToAll(std::move(out));
  }
};

}  // namespace rocefab
