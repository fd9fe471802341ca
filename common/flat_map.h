#pragma once
/// @file flat_map.h
/// The hash map of per-packet state (MAC/ARP tables, per-flow load-balancing state): Abseil's
/// SwissTable `absl::flat_hash_map` (Debian libabsl-dev), open addressing with the entries in
/// one array, so a lookup touches a control-byte group and one slot instead of a bucket array
/// and a separately allocated node (std::unordered_map).
///
/// Two rules follow from it:
///  - references and pointers to entries are invalidated by any insertion (rehash): take them
///    after the last insertion of an operation, never hold them across one;
///  - iteration order changes from run to run (Abseil seeds its hash per process): nothing that
///    decides a result (events, counters in order, output rows) may depend on it. Sums, counts
///    and erasing by a predicate are fine.

#include <absl/container/flat_hash_map.h>

#include <cstddef>

namespace rocefab {

template <class K, class V>
using FlatMap = absl::flat_hash_map<K, V>;

/// Erases every entry for which pred(entry) is true; returns how many. (std::erase_if for
/// FlatMap: Abseil 20220623 has none.)
template <class K, class V, class Pred>
size_t EraseIf(FlatMap<K, V>& m, Pred pred) {
  size_t n = 0;
  for (auto it = m.begin(); it != m.end();) {
    if (pred(*it)) {
      m.erase(it++);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

}  // namespace rocefab
