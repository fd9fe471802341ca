#pragma once
/// @file units.h
/// The one parser for quantities with units in config strings and CLI flags.
///
/// Accepted forms (a decimal number, optional spaces, then a unit; case-sensitive units):
///   duration: ps ns us ms s min h        e.g. "2us", "1.5ms", "5min", "4h"   -> Time (ps)
///   rate:     bps Kbps Mbps Gbps Tbps (also Gb/s style)  e.g. "100Gbps"     -> bits/s
///   bytes:    B KB MB GB (10^3) KiB MiB GiB (2^10)       e.g. "12MiB"       -> bytes
///   length:   m km                                       e.g. "5m"          -> meters
/// Errors name the rule, e.g. "expected a duration like \"2us\" (units ps, ns, us, ms, s, min, h)".
/// Negative values are rejected; zero is allowed (callers check their own ranges).

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/time.h"

namespace rocefab {

Result<Time> ParseDuration(std::string_view s);
Result<BitRate> ParseRate(std::string_view s);
Result<int64_t> ParseBytes(std::string_view s);
Result<double> ParseLength(std::string_view s);

/// "2.5us", "100Gbps", "12MiB": short human-readable forms used in reports.
std::string FormatDuration(Time t);
/// Gbps from 1 Gb/s, Mbps from 1 Mb/s, else bps; at least 4 significant digits, more where
/// needed so that ParseRate reads back exactly the same rate, never an exponent ("10000Gbps",
/// "1.234567891Gbps"): generated topologies are written with it and read again.
std::string FormatRate(BitRate r);
std::string FormatBytes(int64_t b);

}  // namespace rocefab
