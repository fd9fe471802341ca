#include "fabric/sonic.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "common/units.h"
#include "fabric/plan.h"

namespace rocefab {

namespace {

class SonicError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The tables ImportSonic reads; any other table is listed in the notes as not modelled.
const std::set<std::string> kTables = {"DEVICE_METADATA", "PORT",
                                       "CABLE_LENGTH",    "BUFFER_POOL",
                                       "BUFFER_PROFILE",  "BUFFER_PG",
                                       "BUFFER_QUEUE",    "PORT_QOS_MAP",
                                       "DSCP_TO_TC_MAP",  "TC_TO_PRIORITY_GROUP_MAP",
                                       "TC_TO_QUEUE_MAP", "PFC_PRIORITY_TO_QUEUE_MAP",
                                       "WRED_PROFILE",    "QUEUE",
                                       "SCHEDULER",       "PFC_WD",
                                       "DOT1P_TO_TC_MAP"};

// "[BUFFER_PROFILE|name]" (SONiC before 202012) or "name".
std::string Ref(const std::string& v) {
  if (v.size() > 2 && v.front() == '[' && v.back() == ']') {
    const auto bar = v.find('|');
    if (bar != std::string::npos) return v.substr(bar + 1, v.size() - bar - 2);
  }
  return v;
}

// The numeric suffix of "Ethernet12" (-1 when there is none).
long PortNumber(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  if (i == name.size() || name.size() - i > 9) return -1;  // no number, or not a port's
  return std::stol(name.substr(i));
}

// "3-4", "0", "0-2,5-6" -> {3, 4}, ... (values 0..7).
std::vector<int> IndexList(const std::string& s, const std::string& where) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string part = s.substr(pos, comma - pos);
    const size_t dash = part.find('-');
    int lo = -1, hi = -1;
    auto num = [&](const std::string& t, int* v) {
      const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
      return ec == std::errc() && p == t.data() + t.size() && *v >= 0 && *v <= 7;
    };
    const bool ok = dash == std::string::npos
                        ? num(part, &lo) && (hi = lo, true)
                        : num(part.substr(0, dash), &lo) && num(part.substr(dash + 1), &hi);
    if (!ok || hi < lo) {
      throw SonicError(where + ": \"" + s + "\" is not a list of indices 0..7 like \"3-4\"");
    }
    for (int v = lo; v <= hi; ++v) out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

// One config_db file being read: its path, its tables, and where notes go.
class DbReader {
 public:
  DbReader(const SonicConfigDb& f, std::vector<std::string>* notes)
      : file_(f.path), db_(f.db), notes_(notes) {
    if (!db_.is_object()) throw SonicError(file_ + ": not a JSON object of tables");
  }
  const std::string& file() const { return file_; }

  // The table (an object of entries), or an empty object.
  const nlohmann::json& Table(const std::string& name) const {
    static const nlohmann::json kEmpty = nlohmann::json::object();
    if (!db_.contains(name)) return kEmpty;
    const auto& t = db_[name];
    if (!t.is_object()) throw SonicError(file_ + ": " + name + ": must be an object of entries");
    return t;
  }
  std::string Where(const std::string& table, const std::string& key,
                    const std::string& field = "") const {
    return file_ + ": " + table + "|" + key + (field.empty() ? "" : "." + field);
  }
  // A field of an entry, as SONiC stores it (a string; numbers are accepted too).
  std::optional<std::string> Field(const std::string& table, const std::string& key,
                                   const std::string& field) const {
    const auto& t = Table(table);
    if (!t.contains(key)) return std::nullopt;
    const auto& e = t[key];
    if (!e.is_object()) throw SonicError(Where(table, key) + ": must be an object of fields");
    if (!e.contains(field)) return std::nullopt;
    const auto& v = e[field];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    throw SonicError(Where(table, key, field) + ": must be a string");
  }
  int64_t Int(const std::string& table, const std::string& key, const std::string& field,
              int64_t def, int64_t lo, int64_t hi) const {
    const auto v = Field(table, key, field);
    if (!v) return def;
    int64_t out = 0;
    const auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
    if (ec != std::errc() || p != v->data() + v->size() || out < lo || out > hi) {
      throw SonicError(Where(table, key, field) + ": \"" + *v + "\" must be an integer in [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return out;
  }
  bool Bool(const std::string& table, const std::string& key, const std::string& field,
            bool def) const {
    const auto v = Field(table, key, field);
    if (!v) return def;
    if (*v != "true" && *v != "false") {
      throw SonicError(Where(table, key, field) + ": \"" + *v + "\" must be true or false");
    }
    return *v == "true";
  }
  void Note(const std::string& s) { notes_->push_back(s); }
  // Fields of an entry other than `known` are not modelled: one note per table and field, with
  // the entries that have it (FlushNotes).
  void NoteOtherFields(const std::string& table, const std::string& key,
                       const std::set<std::string>& known) {
    const auto& t = Table(table);
    const auto it = t.find(key);
    if (it == t.end() || !it->is_object()) return;
    const auto& e = *it;
    for (const auto& [f, v] : e.items()) {
      if (!known.contains(f)) other_[{table, f}].push_back(key);
    }
  }
  void FlushNotes() {
    for (const auto& [tf, keys] : other_) {
      std::string list = keys[0];
      if (keys.size() > 1) list += " and " + std::to_string(keys.size() - 1) + " more";
      Note(file_ + ": " + tf.first + "|*." + tf.second + " (" + list +
           "): not modelled by rocefab (ignored)");
    }
    other_.clear();
  }

 private:
  std::string file_;
  const nlohmann::json& db_;
  std::vector<std::string>* notes_;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> other_;
};

// SONiC port name -> rocefab port index (the i-th in numeric order).
std::map<std::string, int> PortIndex(const DbReader& r) {
  std::vector<std::string> names;
  for (const auto& [k, v] : r.Table("PORT").items()) names.push_back(k);
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    const long na = PortNumber(a), nb = PortNumber(b);
    return na != nb ? na < nb : a < b;
  });
  std::map<std::string, int> out;
  for (size_t i = 0; i < names.size(); ++i) out[names[i]] = static_cast<int>(i);
  return out;
}

// A map table entry ("DSCP_TO_TC_MAP|AZURE") as key -> value integers.
std::map<int, int> MapTable(const DbReader& r, const std::string& table, const std::string& name,
                            int key_max, int val_max, const std::string& used_at) {
  const auto& t = r.Table(table);
  if (!t.contains(name)) {
    throw SonicError(used_at + ": names " + table + "|" + name + ", which the file does not have");
  }
  std::map<int, int> out;
  if (!t[name].is_object()) {
    throw SonicError(r.Where(table, name) + ": must be an object of \"key\": \"value\" entries");
  }
  for (const auto& [k, v] : t[name].items()) {
    int key = -1;
    const auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), key);
    if (ec != std::errc() || p != k.data() + k.size() || key < 0 || key > key_max) {
      throw SonicError(r.Where(table, name, k) + ": key must be an integer 0.." +
                       std::to_string(key_max));
    }
    out[key] = static_cast<int>(r.Int(table, name, k, 0, 0, val_max));
  }
  return out;
}

std::string Ms(Time t) { return std::to_string(t / kMs) + "ms"; }

// What one file says about the settings rocefab holds once for the whole fabric; files must agree.
struct FabricWide {
  nlohmann::json qos, ecn, scheduler, watchdog, lossy;
};

// The per-switch part of one file.
struct SwitchPart {
  std::vector<std::string> switches;  // the switches it configures
  int64_t size = -1, shared_headroom_pool = 0;
  nlohmann::json profiles = nlohmann::json::object();
  std::vector<std::pair<int, std::string>> port_profile;  // port index -> lossless profile
  std::vector<int> watched;                               // ports in PFC_WD (indices)
  std::vector<int> ports;                                 // mapped port indices
  bool all = false;                                       // all=FILE
};

class Importer {
 public:
  Importer(const Topology& topo, std::vector<std::string>* notes) : topo_(topo), notes_(notes) {}

  void Read(const SonicConfigDb& f) {
    DbReader r(f, notes_);
    for (const auto& [t, v] : f.db.items()) {
      if (!kTables.contains(t)) r.Note(f.path + ": " + t + ": not modelled by rocefab (ignored)");
    }
    SwitchPart part;
    part.switches = Targets(r, f.switch_name);
    part.all = f.switch_name == "all";
    ports_ = PortIndex(r);
    CheckPorts(r, part);
    FabricWide fw;
    ReadQos(r, &fw);
    ReadBuffer(r, &part, &fw);
    ReadQueues(r, &fw);
    ReadWatchdog(r, &part, &fw);
    r.NoteOtherFields("DEVICE_METADATA", "localhost", {"hostname", "type", "buffer_model"});
    for (const auto& [name, i] : ports_) {
      r.NoteOtherFields("PORT", name, {"speed", "admin_status"});
      if (r.Field("PORT", name, "admin_status").value_or("up") != "up") {
        r.Note(r.Where("PORT", name, "admin_status") +
               ": down; rocefab keeps every linked port up (use a link_down fault)");
      }
    }
    if (r.Field("DEVICE_METADATA", "localhost", "default_pfcwd_status").value_or("") == "enable" &&
        part.watched.empty()) {
      r.Note(r.file() +
             ": DEVICE_METADATA|localhost.default_pfcwd_status is enable but PFC_WD "
             "names no port: the watchdog stays off");
    }
    r.FlushNotes();
    Agree(r.file(), fw);
    parts_.push_back(std::move(part));
  }

  // What the base scenario's buffer says of switches no file configures stays: its profiles
  // (a name the files also use must mean the same numbers), its port entries and per-switch
  // sizes for those switches. Its mode gives way to SONiC's shared buffer, with a note.
  void KeepBaseBuffer(const nlohmann::json& old, nlohmann::json* buffer) const {
    std::set<std::string> configured;
    for (const auto& p : parts_) configured.insert(p.switches.begin(), p.switches.end());
    if (old.value("mode", "shared") != "shared") {
      notes_->push_back("buffer.mode: \"" + old["mode"].get<std::string>() +
                        "\" in the base; SONiC's buffer is shared, so every switch's now is");
    }
    auto sw_of = [](const std::string& port) { return port.substr(0, port.find('/')); };
    nlohmann::json& profiles = (*buffer)["profiles"];
    if (profiles.is_null()) profiles = nlohmann::json::object();
    if (old.contains("ports") && old["ports"].is_object()) {
      for (const auto& [port, prof] : old["ports"].items()) {
        if (configured.contains(sw_of(port))) continue;
        (*buffer)["ports"][port] = prof;
        const std::string name = prof.is_string() ? prof.get<std::string>() : "";
        if (!old.contains("profiles") || !old["profiles"].contains(name)) continue;
        if (profiles.contains(name) && profiles[name] != old["profiles"][name]) {
          throw SonicError("buffer.profiles." + name +
                           ": the base scenario's profile of that "
                           "name (used by " +
                           port + ") differs from the imported one; rename one");
        }
        profiles[name] = old["profiles"][name];
      }
    }
    if (profiles.empty()) buffer->erase("profiles");
    if (old.contains("switches") && old["switches"].is_object()) {
      for (const auto& [sw, v] : old["switches"].items()) {
        if (!configured.contains(sw)) (*buffer)["switches"][sw] = v;
      }
    }
  }

  nlohmann::json Apply(nlohmann::json base) const {
    const FabricWide& fw = *first_;
    auto merge = [&](const char* key, const nlohmann::json& v) {
      if (v.is_null()) return;
      if (!base.contains(key) || !base[key].is_object()) base[key] = nlohmann::json::object();
      for (const auto& [k, x] : v.items()) base[key][k] = x;
    };
    merge("qos", fw.qos);
    nlohmann::json pfc = {{"enabled", !fw.qos["lossless"].empty()}};
    merge("pfc", pfc);
    if (!fw.ecn.is_null()) {
      base["ecn"] = fw.ecn;
    } else if (base.contains("ecn")) {
      base.erase("ecn");
      notes_->push_back(
          "ecn: no file marks ECN (WRED_PROFILE on a queue), so the base scenario's ecn block is "
          "removed: rocefab's ECN settings are the fabric's, not one switch's");
    }
    merge("scheduler", fw.scheduler);
    // Buffer: a file for every switch (all=) sets the fabric's pool; a switch's file sets its own
    // (buffer.switches); switches no file names keep the base scenario's.
    nlohmann::json buffer = fw.lossy;
    buffer["mode"] = "shared";
    nlohmann::json profiles = nlohmann::json::object(), ports = nlohmann::json::object(),
                   switches = nlohmann::json::object();
    for (const auto& p : parts_) {
      for (const auto& [k, v] : p.profiles.items()) profiles[k] = v;
      const bool every = p.switches.size() == topo_.switches.size() && parts_.size() == 1;
      if (every) {
        buffer["size"] = std::to_string(p.size) + "B";
        buffer["shared_headroom_pool"] = std::to_string(p.shared_headroom_pool) + "B";
      }
      for (const auto& sw : p.switches) {
        if (!every) {
          switches[sw] = {{"size", std::to_string(p.size) + "B"},
                          {"shared_headroom_pool", std::to_string(p.shared_headroom_pool) + "B"}};
        }
        // One entry for the whole switch when every port shares the profile.
        std::vector<std::pair<int, std::string>> mine;  // ports the switch has (others noted)
        std::set<std::string> used;
        for (const auto& [i, prof] : p.port_profile) {
          if (i >= topo_.PortCount(sw)) continue;
          mine.emplace_back(i, prof);
          used.insert(prof);
        }
        const bool whole = used.size() == 1 && static_cast<int>(mine.size()) == topo_.PortCount(sw);
        if (whole) {
          ports[sw + "/*"] = *used.begin();
        } else {
          for (const auto& [i, prof] : mine) ports[sw + "/p" + std::to_string(i)] = prof;
        }
      }
    }
    if (!profiles.empty()) buffer["profiles"] = profiles;
    if (!ports.empty()) buffer["ports"] = ports;
    if (!switches.empty()) buffer["switches"] = switches;
    if (!base.contains("buffer") || !base["buffer"].is_object())
      base["buffer"] = nlohmann::json::object();
    KeepBaseBuffer(base["buffer"], &buffer);
    for (const auto& k : {"profiles", "ports", "switches"}) base["buffer"].erase(k);
    for (const auto& [k, v] : buffer.items()) base["buffer"][k] = v;
    // Watchdog: the ports every file watches.
    if (fw.watchdog.is_null()) {
      if (base.contains("pfc_watchdog")) {
        base.erase("pfc_watchdog");
        notes_->push_back(
            "pfc_watchdog: no file has a PFC_WD port entry, so the base scenario's watchdog is "
            "removed: rocefab's watchdog settings are the fabric's, not one switch's");
      }
    } else {
      nlohmann::json wd = fw.watchdog;
      nlohmann::json list = nlohmann::json::array();
      bool all = true;
      for (const auto& p : parts_) {
        for (const auto& sw : p.switches) {
          int n = 0;
          for (int w : p.watched) {
            if (w >= topo_.PortCount(sw)) continue;  // noted in CheckPorts
            list.push_back(sw + "/p" + std::to_string(w));
            ++n;
          }
          all &= n == topo_.PortCount(sw);
        }
      }
      all &= parts_.size() == 1 && parts_[0].switches.size() == topo_.switches.size();
      wd["ports"] = all ? nlohmann::json("all") : list;
      base["pfc_watchdog"] = wd;
    }
    return base;
  }

 private:
  std::vector<std::string> Targets(DbReader& r, const std::string& given) {
    const auto model = r.Field("DEVICE_METADATA", "localhost", "buffer_model");
    if (model && *model != "traditional" && *model != "dynamic") {
      throw SonicError(r.Where("DEVICE_METADATA", "localhost", "buffer_model") + ": \"" + *model +
                       "\" must be traditional or dynamic");
    }
    dynamic_model_ = model && *model == "dynamic";
    // all= configures every switch: alone, since a switch has one configuration.
    if (given == "all" || (!parts_.empty() && parts_.back().all)) {
      if (!parts_.empty()) {
        throw SonicError(r.file() +
                         ": all=FILE configures every switch, so it must be the only file (a "
                         "switch has one configuration)");
      }
      std::vector<std::string> out;
      for (const auto& s : topo_.switches) out.push_back(s.name);
      return out;
    }
    std::string name = given;
    if (name.empty()) {
      const auto host = r.Field("DEVICE_METADATA", "localhost", "hostname");
      if (!host) {
        throw SonicError(r.file() +
                         ": DEVICE_METADATA|localhost.hostname is missing: name the switch the "
                         "file configures (SWITCH=FILE, or all=FILE)");
      }
      name = *host;
    }
    if (topo_.SwitchIndex(name) < 0) {
      throw SonicError(r.file() + ": \"" + name +
                       "\" is not a switch of the scenario (DEVICE_METADATA|localhost.hostname "
                       "or SWITCH=FILE; all=FILE configures every switch)");
    }
    for (const auto& p : parts_) {
      for (const auto& s : p.switches) {
        if (s == name) throw SonicError(r.file() + ": switch " + name + " has a file already");
      }
    }
    return {name};
  }

  // Ports beyond the switch's, and PORT speed / CABLE_LENGTH against the topology's links.
  void CheckPorts(DbReader& r, SwitchPart& part) {
    const auto& cables = r.Table("CABLE_LENGTH");
    std::vector<std::pair<int, std::string>> in_order;  // by port index, not by name
    for (const auto& [name, i] : ports_) in_order.emplace_back(i, name);
    std::sort(in_order.begin(), in_order.end());
    for (const auto& [i, name] : in_order) {
      for (const auto& sw : part.switches) {
        if (i >= topo_.PortCount(sw)) {
          r.Note(r.Where("PORT", name) + ": " + sw + " has " + std::to_string(topo_.PortCount(sw)) +
                 " ports in the topology; this one is not mapped");
          continue;
        }
        const TopoLink* link = LinkOf(sw, i);
        if (!link) continue;
        const int64_t mbps = r.Int("PORT", name, "speed", 0, 0, 1'600'000);
        if (mbps > 0 && BitRate::Bps(mbps * 1'000'000).bps() != link->rate.bps()) {
          r.Note(r.Where("PORT", name, "speed") + ": " +
                 FormatRate(BitRate::Bps(mbps * 1'000'000)) + ", but " + sw + "/p" +
                 std::to_string(i) + "'s link is " + FormatRate(link->rate) +
                 " in the topology, which decides");
        }
        for (const auto& [tab, entries] : cables.items()) {
          if (!entries.is_object() || !entries.contains(name)) continue;
          const auto len = ParseLength(r, tab, name);
          if (std::abs(len - link->cable_m) > 1e-9) {
            r.Note(r.Where("CABLE_LENGTH", tab, name) + ": " + FormatMeters(len) + ", but " + sw +
                   "/p" + std::to_string(i) + "'s link is " + FormatMeters(link->cable_m) +
                   " in the topology, which decides (it also sets the propagation delay)");
          }
        }
      }
      part.ports.push_back(i);
    }
  }
  static std::string FormatMeters(double m) {
    char b[32];
    std::snprintf(b, sizeof b, "%gm", m);
    return b;
  }
  double ParseLength(const DbReader& r, const std::string& tab, const std::string& port) const {
    const std::string v = r.Field("CABLE_LENGTH", tab, port).value_or("");
    std::string digits = v;
    if (digits.ends_with("m")) digits.pop_back();
    double out = 0;
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    if (ec != std::errc() || p != digits.data() + digits.size() || out < 0) {
      throw SonicError(r.Where("CABLE_LENGTH", tab, port) + ": \"" + v +
                       "\" must be a length like \"5m\"");
    }
    return out;
  }
  const TopoLink* LinkOf(const std::string& sw, int port) const {
    int k = 0;
    for (const auto& l : topo_.links) {
      for (const std::string* end : {&l.a, &l.b}) {
        if (*end == sw && k++ == port) return &l;
      }
    }
    return nullptr;
  }

  // PORT_QOS_MAP and its maps; returns the lossless priorities (pfc_enable).
  std::vector<int> ReadQos(DbReader& r, FabricWide* fw) {
    const auto& pqm = r.Table("PORT_QOS_MAP");
    struct Maps {
      std::string dscp, pg, queue, pfcq, pfc_enable, dot1p;
      bool operator==(const Maps&) const = default;
    };
    std::optional<Maps> common;
    std::string first_port;
    for (const auto& [port, e] : pqm.items()) {
      if (port != "global" && !ports_.contains(port)) {
        r.Note(r.Where("PORT_QOS_MAP", port) + ": no such port in PORT (ignored)");
        continue;
      }
      r.NoteOtherFields("PORT_QOS_MAP", port,
                        {"dscp_to_tc_map", "tc_to_pg_map", "tc_to_queue_map", "pfc_to_queue_map",
                         "pfc_enable", "pfcwd_sw_enable", "dot1p_to_tc_map"});
      if (port == "global") continue;
      Maps m{Ref(r.Field("PORT_QOS_MAP", port, "dscp_to_tc_map").value_or("")),
             Ref(r.Field("PORT_QOS_MAP", port, "tc_to_pg_map").value_or("")),
             Ref(r.Field("PORT_QOS_MAP", port, "tc_to_queue_map").value_or("")),
             Ref(r.Field("PORT_QOS_MAP", port, "pfc_to_queue_map").value_or("")),
             r.Field("PORT_QOS_MAP", port, "pfc_enable").value_or(""),
             Ref(r.Field("PORT_QOS_MAP", port, "dot1p_to_tc_map").value_or(""))};
      if (m.dscp.empty())
        m.dscp = Ref(r.Field("PORT_QOS_MAP", "global", "dscp_to_tc_map").value_or(""));
      if (!common) {
        common = m;
        first_port = port;
      } else if (!(m == *common)) {
        throw SonicError(r.Where("PORT_QOS_MAP", port) + ": its maps or pfc_enable differ from " +
                         first_port + "'s; rocefab applies one QoS map to every port");
      }
    }
    if (!common) {
      throw SonicError(r.file() +
                       ": PORT_QOS_MAP has no port entry: without it SONiC applies no "
                       "DSCP map and no PFC; rocefab needs the port maps");
    }
    const std::string at = r.Where("PORT_QOS_MAP", first_port);
    std::vector<int> lossless;
    if (!common->pfc_enable.empty()) lossless = IndexList(common->pfc_enable, at + ".pfc_enable");
    nlohmann::json dscp = nlohmann::json::object();
    std::map<int, int> d;
    if (!common->dscp.empty()) d = MapTable(r, "DSCP_TO_TC_MAP", common->dscp, 63, 7, at);
    for (int i = 0; i < 64; ++i) dscp[std::to_string(i)] = d.contains(i) ? d[i] : 0;
    nlohmann::json pg = nlohmann::json::object(), queue = nlohmann::json::object();
    std::map<int, int> tp, tq;
    if (!common->pg.empty()) tp = MapTable(r, "TC_TO_PRIORITY_GROUP_MAP", common->pg, 7, 7, at);
    if (!common->queue.empty()) tq = MapTable(r, "TC_TO_QUEUE_MAP", common->queue, 7, 7, at);
    for (int i = 0; i < 8; ++i) {
      pg[std::to_string(i)] = tp.contains(i) ? tp[i] : 0;
      queue[std::to_string(i)] = tq.contains(i) ? tq[i] : i;
    }
    if (!common->pfcq.empty()) {
      const auto pq = MapTable(r, "PFC_PRIORITY_TO_QUEUE_MAP", common->pfcq, 7, 7, at);
      for (int p : lossless) {
        const int q = pq.contains(p) ? pq.at(p) : p;
        if (q != p) {
          throw SonicError(r.Where("PFC_PRIORITY_TO_QUEUE_MAP", common->pfcq, std::to_string(p)) +
                           ": priority " + std::to_string(p) + " pauses queue " +
                           std::to_string(q) + "; rocefab's PFC pauses queue " + std::to_string(p) +
                           " for priority " + std::to_string(p));
        }
      }
    }
    // A port with a DOT1P map and no DSCP map classifies by the tag's PCP (VLAN-based PFC);
    // with both, rocefab classifies IP frames by DSCP, as the ASICs do for routed traffic.
    const bool pcp_trust = common->dscp.empty() && !common->dot1p.empty();
    fw->qos = {{"trust", pcp_trust ? "pcp" : "dscp"},
               {"lossless", lossless},
               {"dscp_to_tc", dscp},
               {"tc_to_pg", pg},
               {"tc_to_queue", queue}};
    // Under PCP trust no DSCP map is bound: the DSCP map stays the scenario profile's (it only
    // matters to `rocefab check`'s reading of the NICs' DSCPs).
    if (pcp_trust) fw->qos.erase("dscp_to_tc");
    if (!common->dot1p.empty()) {
      const auto dp = MapTable(r, "DOT1P_TO_TC_MAP", common->dot1p, 7, 7, at);
      nlohmann::json pcp = nlohmann::json::object();
      for (int i = 0; i < 8; ++i) pcp[std::to_string(i)] = dp.contains(i) ? dp.at(i) : 0;
      fw->qos["pcp_to_tc"] = pcp;
      if (!pcp_trust) {
        r.Note(at +
               ".dot1p_to_tc_map: the port has a dscp_to_tc_map too; rocefab classifies by "
               "DSCP (qos.trust \"dscp\"; the DOT1P map is kept as qos.pcp_to_tc)");
      }
    }
    lossless_pgs_.clear();
    for (int tc : lossless) lossless_pgs_.insert(tp.contains(tc) ? tp[tc] : 0);
    lossless_queues_.clear();
    for (int tc : lossless) lossless_queues_.insert(tq.contains(tc) ? tq[tc] : tc);
    return lossless;
  }

  // BUFFER_POOL, BUFFER_PROFILE, BUFFER_PG and BUFFER_QUEUE.
  void ReadBuffer(DbReader& r, SwitchPart* part, FabricWide* fw) {
    const int64_t shp = ReadPool(r, part);
    ReadPgs(r, shp > 0, part, fw);
    ReadLossyQueues(r, fw);
  }

  // The ingress pool: the switch's buffer (size + the shared headroom pool, its xoff); returns
  // the shared headroom pool.
  int64_t ReadPool(DbReader& r, SwitchPart* part) {
    const auto& pools = r.Table("BUFFER_POOL");
    const int64_t kMax = int64_t{1} << 40;
    std::string ingress_pool;
    for (const auto& [name, e] : pools.items()) {
      const std::string type = r.Field("BUFFER_POOL", name, "type").value_or("");
      if (type == "ingress" && (ingress_pool.empty() || name == "ingress_lossless_pool")) {
        ingress_pool = name;
      }
    }
    if (ingress_pool.empty()) {
      throw SonicError(r.file() +
                       ": BUFFER_POOL has no pool of type \"ingress\" (the "
                       "ingress_lossless_pool sets the switch's buffer)");
    }
    for (const auto& [name, e] : pools.items()) {
      if (name == ingress_pool) {
        r.NoteOtherFields("BUFFER_POOL", name, {"size", "type", "mode", "xoff"});
        const auto mode = r.Field("BUFFER_POOL", name, "mode").value_or("dynamic");
        if (mode != "dynamic") {
          r.Note(r.Where("BUFFER_POOL", name, "mode") + ": \"" + mode +
                 "\": rocefab's pool is dynamic; static limits come from the profiles' static_th");
        }
      } else {
        r.Note(r.Where("BUFFER_POOL", name) + ": rocefab has one buffer per switch (its size is " +
               ingress_pool + "'s; egress limits are shares of it), so this pool is not modelled");
      }
    }
    const int64_t shp = r.Int("BUFFER_POOL", ingress_pool, "xoff", 0, 0, kMax);
    part->size = r.Int("BUFFER_POOL", ingress_pool, "size", -1, 2048, kMax);
    if (part->size < 0)
      throw SonicError(r.Where("BUFFER_POOL", ingress_pool, "size") + ": missing");
    part->size += shp;
    part->shared_headroom_pool = shp;
    return shp;
  }

  // BUFFER_PG: each port's lossless profile, and the lossy PGs' dynamic_th.
  void ReadPgs(DbReader& r, bool shared_headroom, SwitchPart* part, FabricWide* fw) {
    std::map<int, std::string> lossless_profile;  // port index -> profile
    std::optional<int> lossy_dyn;
    for (const auto& [key, e] : r.Table("BUFFER_PG").items()) {
      const auto bar = key.find('|');
      if (bar == std::string::npos) {
        throw SonicError(r.Where("BUFFER_PG", key) + ": key must be \"<port>|<PGs>\"");
      }
      const std::string port = key.substr(0, bar);
      const auto pgs = IndexList(key.substr(bar + 1), r.Where("BUFFER_PG", key));
      if (!ports_.contains(port)) {
        r.Note(r.Where("BUFFER_PG", key) + ": no such port in PORT (ignored)");
        continue;
      }
      const int index = ports_.at(port);
      const std::string prof = Ref(r.Field("BUFFER_PG", key, "profile").value_or("NULL"));
      const bool ll = lossless_pgs_.contains(pgs.front());
      for (int g : pgs) {
        if (lossless_pgs_.contains(g) != ll) {
          throw SonicError(r.Where("BUFFER_PG", key) +
                           ": mixes lossless and lossy PGs under one profile");
        }
      }
      if (prof == "NULL") {
        if (!dynamic_model_) {
          r.Note(r.Where("BUFFER_PG", key, "profile") +
                 ": NULL outside the dynamic buffer model; rocefab computes the headroom as the "
                 "dynamic model would");
        }
        continue;  // auto: the formula for the port's speed and cable
      }
      const std::string pwhere = r.Where("BUFFER_PG", key, "profile");
      if (!r.Table("BUFFER_PROFILE").contains(prof)) {
        throw SonicError(pwhere + ": names BUFFER_PROFILE|" + prof +
                         ", which the file does not have");
      }
      if (ll) {
        const auto [it, fresh] = lossless_profile.emplace(index, prof);
        if (!fresh && it->second != prof) {
          throw SonicError(pwhere + ": " + port + "'s lossless PGs have two profiles (" +
                           it->second + " and " + prof +
                           "); rocefab gives a port's lossless PGs one profile");
        }
        ReadLosslessProfile(r, prof, shared_headroom, part);
      } else if (r.Field("BUFFER_PROFILE", prof, "xoff")) {
        r.Note(pwhere + ": " + prof + " has an xoff (a lossless profile), but PG " +
               std::to_string(pgs.front()) +
               " is lossy here (PORT_QOS_MAP pfc_enable does not name its priority): no PFC, "
               "no headroom (ignored)");
      } else {
        const int th = static_cast<int>(r.Int("BUFFER_PROFILE", prof, "dynamic_th", 0, -8, 8));
        if (lossy_dyn && *lossy_dyn != th) {
          throw SonicError(pwhere + ": " + prof +
                           "'s dynamic_th differs from other lossy PGs'; "
                           "rocefab gives every lossy PG one profile");
        }
        lossy_dyn = th;
        NoteLossy(r, prof);
      }
    }
    for (const auto& [i, prof] : lossless_profile) part->port_profile.emplace_back(i, prof);
    if (lossy_dyn) fw->lossy["lossy_dynamic_th"] = *lossy_dyn;
  }

  // BUFFER_QUEUE: the lossy queues' dynamic_th (lossless queues are never dropped at egress).
  void ReadLossyQueues(DbReader& r, FabricWide* fw) {
    std::optional<int> egress_lossy_dyn;
    for (const auto& [key, e] : r.Table("BUFFER_QUEUE").items()) {
      const auto bar = key.find('|');
      if (bar == std::string::npos) {
        throw SonicError(r.Where("BUFFER_QUEUE", key) + ": key must be \"<port>|<queues>\"");
      }
      const auto qs = IndexList(key.substr(bar + 1), r.Where("BUFFER_QUEUE", key));
      const std::string prof = Ref(r.Field("BUFFER_QUEUE", key, "profile").value_or("NULL"));
      if (prof == "NULL" || lossless_queues_.contains(qs.front())) continue;  // never dropped
      if (!r.Table("BUFFER_PROFILE").contains(prof)) {
        throw SonicError(r.Where("BUFFER_QUEUE", key, "profile") + ": names BUFFER_PROFILE|" +
                         prof + ", which the file does not have");
      }
      const int th = static_cast<int>(r.Int("BUFFER_PROFILE", prof, "dynamic_th", 0, -8, 8));
      if (egress_lossy_dyn && *egress_lossy_dyn != th) {
        throw SonicError(r.Where("BUFFER_QUEUE", key, "profile") +
                         ": dynamic_th differs from other lossy queues'; rocefab gives every "
                         "lossy queue one profile");
      }
      egress_lossy_dyn = th;
      NoteLossy(r, prof);
    }
    if (egress_lossy_dyn) fw->lossy["egress_lossy_dynamic_th"] = *egress_lossy_dyn;
  }

  void NoteLossy(DbReader& r, const std::string& prof) {
    if (!noted_.insert(r.file() + prof).second) return;
    if (r.Int("BUFFER_PROFILE", prof, "size", 0, 0, int64_t{1} << 40) > 0 ||
        r.Field("BUFFER_PROFILE", prof, "static_th")) {
      r.Note(r.Where("BUFFER_PROFILE", prof) +
             ": size/static_th of lossy PGs and queues are not modelled (dynamic_th is)");
    }
  }

  void ReadLosslessProfile(DbReader& r, const std::string& prof, bool shared_headroom,
                           SwitchPart* part) {
    const std::string T = "BUFFER_PROFILE";
    const int64_t kMax = int64_t{1} << 40;
    r.NoteOtherFields(T, prof,
                      {"pool", "xon", "xoff", "xon_offset", "size", "dynamic_th", "static_th"});
    const auto xoff = r.Field(T, prof, "xoff");
    if (!xoff) throw SonicError(r.Where(T, prof, "xoff") + ": a lossless PG's profile needs xoff");
    nlohmann::json p = nlohmann::json::object();
    const int64_t x = r.Int(T, prof, "xoff", 0, 0, kMax);
    p["headroom"] = std::to_string(x) + "B";
    if (r.Field(T, prof, "xon")) p["xon"] = std::to_string(r.Int(T, prof, "xon", 0, 0, kMax)) + "B";
    p["xon_offset"] = std::to_string(r.Int(T, prof, "xon_offset", 0, 0, kMax)) + "B";
    const int64_t size = r.Int(T, prof, "size", 0, 0, kMax);
    if (!shared_headroom && size < x && noted_.insert(r.file() + prof + ".size").second) {
      // Without a shared headroom pool SONiC's size is the PG's reserved bytes plus its xoff.
      r.Note(r.Where(T, prof, "size") + ": " + std::to_string(size) + " is smaller than xoff " +
             std::to_string(x) +
             " (size includes xoff without a shared headroom pool): reserved 0");
    }
    p["reserved"] = std::to_string(shared_headroom ? size : std::max<int64_t>(0, size - x)) + "B";
    const bool has_static = r.Field(T, prof, "static_th").has_value();
    if (has_static && r.Field(T, prof, "dynamic_th")) {
      throw SonicError(r.Where(T, prof) + ": give dynamic_th or static_th, not both");
    }
    if (has_static) {
      p["static_th"] = std::to_string(r.Int(T, prof, "static_th", 0, 1, kMax)) + "B";
    } else {
      p["dynamic_th"] = r.Int(T, prof, "dynamic_th", 0, -8, 8);
    }
    if (profiles_.contains(prof) && profiles_[prof] != p) {
      throw SonicError(r.Where(T, prof) + ": differs from the profile of the same name in " +
                       profile_file_[prof] + "; rename one");
    }
    profiles_[prof] = p;
    profile_file_[prof] = r.file();
    part->profiles[prof] = p;
  }

  // QUEUE: WRED profile and scheduler per (port, queue); all ports must agree.
  void ReadQueues(DbReader& r, FabricWide* fw) {
    std::map<int, std::string> wred, sched;  // queue -> name
    std::string first;
    for (const auto& [key, e] : r.Table("QUEUE").items()) {
      const auto bar = key.find('|');
      if (bar == std::string::npos) {
        throw SonicError(r.Where("QUEUE", key) + ": key must be \"<port>|<queues>\"");
      }
      const std::string port = key.substr(0, bar);
      if (!ports_.contains(port)) {
        r.Note(r.Where("QUEUE", key) + ": no such port in PORT (ignored)");
        continue;
      }
      r.NoteOtherFields("QUEUE", key, {"wred_profile", "scheduler"});
      for (int q : IndexList(key.substr(bar + 1), r.Where("QUEUE", key))) {
        for (auto [field, out] :
             {std::pair{"wred_profile", &wred}, std::pair{"scheduler", &sched}}) {
          const auto v = r.Field("QUEUE", key, field);
          if (!v) continue;
          const std::string name = Ref(*v);
          const std::string table =
              std::string(field) == "wred_profile" ? "WRED_PROFILE" : "SCHEDULER";
          if (!r.Table(table).contains(name)) {
            throw SonicError(r.Where("QUEUE", key, field) + ": names " + table + "|" + name +
                             ", which the file does not have");
          }
          auto [it, fresh] = out->emplace(q, name);
          if (!fresh && it->second != name) {
            throw SonicError(r.Where("QUEUE", key, field) + ": \"" + name + "\" for queue " +
                             std::to_string(q) + ", other ports use \"" + it->second +
                             "\"; rocefab applies one per queue to every port");
          }
        }
      }
    }
    // ECN: one WRED profile for the queues that have one.
    std::string wp;
    std::vector<int> queues;
    for (const auto& [q, name] : wred) {
      if (wp.empty()) wp = name;
      if (name != wp) {
        throw SonicError(r.file() + ": QUEUE: queues use WRED profiles " + wp + " and " + name +
                         "; rocefab's ecn block gives one profile to its queues");
      }
      queues.push_back(q);
    }
    if (!wp.empty()) {
      const std::string T = "WRED_PROFILE";
      if (!r.Table(T).contains(wp)) {
        throw SonicError(r.file() + ": QUEUE names WRED_PROFILE|" + wp +
                         ", which the file does not have");
      }
      r.NoteOtherFields(T, wp,
                        {"wred_green_enable", "ecn", "green_min_threshold", "green_max_threshold",
                         "green_drop_probability", "wred_yellow_enable", "wred_red_enable",
                         "yellow_min_threshold", "yellow_max_threshold", "red_min_threshold",
                         "red_max_threshold", "yellow_drop_probability", "red_drop_probability"});
      for (const auto& f : {"wred_yellow_enable", "wred_red_enable"}) {
        if (r.Bool(T, wp, f, false)) {
          r.Note(r.Where(T, wp, f) +
                 ": rocefab colours every frame green; only the green "
                 "thresholds apply");
        }
      }
      const std::string ecn = r.Field(T, wp, "ecn").value_or("ecn_none");
      if (ecn != "ecn_all" && ecn != "ecn_green" && ecn != "ecn_green_yellow" &&
          ecn != "ecn_green_red") {
        throw SonicError(r.Where(T, wp, "ecn") + ": \"" + ecn +
                         "\": rocefab models ECN marking (ecn_all/ecn_green), not WRED drop only");
      }
      const int64_t kmin = r.Int(T, wp, "green_min_threshold", 100'000, 0, int64_t{1} << 40);
      const int64_t kmax = r.Int(T, wp, "green_max_threshold", 400'000, 1, int64_t{1} << 40);
      const int64_t pct = r.Int(T, wp, "green_drop_probability", 100, 0, 100);
      fw->ecn = {{"enabled", true},
                 {"queues", queues},
                 {"kmin", std::to_string(kmin) + "B"},
                 {"kmax", std::to_string(kmax) + "B"},
                 {"pmax", static_cast<double>(pct) / 100.0},
                 {"drop_non_ect", r.Bool(T, wp, "wred_green_enable", false)}};
    }
    // Scheduler: STRICT queues and DWRR/WRR weights.
    std::vector<int> strict;
    std::vector<int> weights(8, 1);
    for (const auto& [q, name] : sched) {
      const std::string T = "SCHEDULER";
      if (!r.Table(T).contains(name)) {
        throw SonicError(r.file() + ": QUEUE names SCHEDULER|" + name +
                         ", which the file does not have");
      }
      r.NoteOtherFields(T, name, {"type", "weight"});
      const std::string type = r.Field(T, name, "type").value_or("DWRR");
      if (type == "STRICT") {
        strict.push_back(q);
      } else if (type == "DWRR" || type == "WRR") {
        weights[q] = static_cast<int>(r.Int(T, name, "weight", 1, 1, 255));
      } else {
        throw SonicError(r.Where(T, name, "type") + ": \"" + type +
                         "\" must be STRICT, DWRR or WRR");
      }
    }
    if (!sched.empty()) fw->scheduler = {{"strict", strict}, {"weights", weights}};
  }

  void ReadWatchdog(DbReader& r, SwitchPart* part, FabricWide* fw) {
    const auto& t = r.Table("PFC_WD");
    if (t.empty()) return;
    std::optional<nlohmann::json> common;
    std::string first;
    const int64_t poll = r.Int("PFC_WD", "GLOBAL", "POLL_INTERVAL", 200, 1, 3'600'000);
    for (const auto& [port, e] : t.items()) {
      if (port == "GLOBAL") {
        r.NoteOtherFields("PFC_WD", port, {"POLL_INTERVAL", "BIG_RED_SWITCH"});
        continue;
      }
      if (!ports_.contains(port)) {
        r.Note(r.Where("PFC_WD", port) + ": no such port in PORT (ignored)");
        continue;
      }
      r.NoteOtherFields("PFC_WD", port, {"action", "detection_time", "restoration_time"});
      const std::string action = r.Field("PFC_WD", port, "action").value_or("drop");
      if (action != "drop" && action != "forward" && action != "alert") {
        throw SonicError(r.Where("PFC_WD", port, "action") + ": \"" + action +
                         "\" must be drop, forward or alert");
      }
      nlohmann::json w = {
          {"enabled", true},
          {"action", action},
          {"detection_time", Ms(r.Int("PFC_WD", port, "detection_time", 200, 1, 3'600'000) * kMs)},
          {"restoration_time",
           Ms(r.Int("PFC_WD", port, "restoration_time", 200, 1, 3'600'000) * kMs)},
          {"poll_interval", Ms(poll * kMs)}};
      if (!common) {
        common = w;
        first = port;
      } else if (w != *common) {
        throw SonicError(r.Where("PFC_WD", port) + ": action or times differ from " + first +
                         "'s; rocefab's watchdog has one setting for every port it watches");
      }
      part->watched.push_back(ports_.at(port));
    }
    std::sort(part->watched.begin(), part->watched.end());
    if (common) fw->watchdog = *common;
  }

  // Settings held once for the fabric must agree between files.
  void Agree(const std::string& file, const FabricWide& fw) {
    if (!first_) {
      first_ = fw;
      first_file_ = file;
      return;
    }
    const std::pair<const char*, std::pair<const nlohmann::json*, const nlohmann::json*>> parts[] =
        {{"the QoS maps (PORT_QOS_MAP and its maps)", {&first_->qos, &fw.qos}},
         {"ECN (WRED_PROFILE and QUEUE.wred_profile)", {&first_->ecn, &fw.ecn}},
         {"the scheduler (SCHEDULER and QUEUE.scheduler)", {&first_->scheduler, &fw.scheduler}},
         {"the PFC watchdog (PFC_WD)", {&first_->watchdog, &fw.watchdog}},
         {"the lossy PG and queue profiles' dynamic_th", {&first_->lossy, &fw.lossy}}};
    // A switch without PFC_WD entries watches none of its ports; only files that configure the
    // watchdog have to agree on it.
    if (first_->watchdog.is_null()) first_->watchdog = fw.watchdog;
    for (const auto& [what, pr] : parts) {
      if (pr.second->is_null() && pr.first == &first_->watchdog) continue;
      if (*pr.first != *pr.second) {
        throw SonicError(file + " and " + first_file_ + " disagree on " + what +
                         "; rocefab applies one to every switch");
      }
    }
  }

  const Topology& topo_;
  std::vector<std::string>* notes_;
  std::map<std::string, int> ports_;
  std::set<int> lossless_pgs_, lossless_queues_;
  bool dynamic_model_ = false;
  std::vector<SwitchPart> parts_;
  std::optional<FabricWide> first_;
  std::string first_file_;
  std::map<std::string, nlohmann::json> profiles_;
  std::map<std::string, std::string> profile_file_;
  std::set<std::string> noted_;
};

// ---- export ----

std::string Range(const std::vector<int>& v) {  // {3, 4} -> "3-4"; {0, 1, 2, 5} -> "0-2,5"
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(v[i]) + (j > i ? "-" + std::to_string(v[j]) : "");
    i = j + 1;
  }
  return out;
}

std::string Num(int64_t v) { return std::to_string(v); }

std::string SonicPort(size_t i) { return "Ethernet" + std::to_string(4 * i); }

// Which PGs and queues are lossless: those the lossless traffic classes map to.
struct ClassSplit {
  std::vector<int> lossless;                 // lossless priorities (PFC enabled)
  std::vector<int> lossless_pgs, lossy_pgs;  // ingress PGs
  std::vector<int> lossless_q, lossy_q;      // egress queues
};

ClassSplit SplitClasses(const QosProfile& q, std::vector<std::string>* notes) {
  ClassSplit c;
  for (int tc = 0; tc < 8; ++tc) {
    if (q.lossless(static_cast<uint8_t>(tc))) c.lossless.push_back(tc);
  }
  auto used_by = [&](const std::array<uint8_t, 8>& map, int index, bool lossless) {
    for (int tc = 0; tc < 8; ++tc) {
      if (q.lossless(static_cast<uint8_t>(tc)) == lossless && map[tc] == index) return true;
    }
    return false;
  };
  // The lossy PGs: those lossy TCs map to, PG 0 at least, unless a lossless TC has it.
  for (int g = 0; g < 8; ++g) {
    if (used_by(q.tc_to_pg, g, true)) {
      c.lossless_pgs.push_back(g);
    } else if (g == 0 || used_by(q.tc_to_pg, g, false)) {
      c.lossy_pgs.push_back(g);
    }
  }
  if (c.lossy_pgs.empty() || c.lossy_pgs.front() != 0) {
    notes->push_back(
        "qos.tc_to_pg: lossy traffic classes share a lossless PG; written with "
        "the PG's lossless profile");
  }
  for (int qq = 0; qq < 8; ++qq) {
    (used_by(q.tc_to_queue, qq, true) ? c.lossless_q : c.lossy_q).push_back(qq);
  }
  return c;
}

// Each port's peer (a host or switch name), for PORT descriptions.
std::vector<std::string> PeersOf(const FabricPlan& plan, const Topology& t, int si, size_t ports) {
  std::vector<std::string> peer(ports);
  for (const auto& l : plan.links) {
    const FabricPlan::Endpoint* ends[2] = {&l.a, &l.b};
    for (int e = 0; e < 2; ++e) {
      if (!ends[e]->is_host && ends[e]->index == si) {
        const auto& o = *ends[1 - e];
        peer[ends[e]->port] = o.is_host ? t.hosts[static_cast<size_t>(o.index)].name
                                        : t.switches[static_cast<size_t>(o.index)].name;
      }
    }
  }
  return peer;
}

// BUFFER_POOL and the lossy / egress lossless BUFFER_PROFILEs.
void ExportPools(const BufferConfig& b, SonicExport* out) {
  nlohmann::json& db = out->db;
  if (!b.shared)
    out->notes.push_back("buffer.mode \"plain\" has no SONiC equivalent; written as shared");
  out->notes.push_back(
      "PORT: no lanes written (they are the platform's: merge these tables into the switch's "
      "config_db, whose PORT entries have them, or take them from its port_config.ini)");
  nlohmann::json pool = {
      {"type", "ingress"}, {"mode", "dynamic"}, {"size", Num(b.size - b.shared_headroom_pool)}};
  if (b.shared_headroom_pool > 0) pool["xoff"] = Num(b.shared_headroom_pool);
  db["BUFFER_POOL"]["ingress_lossless_pool"] = pool;
  db["BUFFER_POOL"]["egress_lossy_pool"] = {
      {"type", "egress"}, {"mode", "dynamic"}, {"size", Num(b.size)}};
  db["BUFFER_POOL"]["egress_lossless_pool"] = {
      {"type", "egress"}, {"mode", "static"}, {"size", Num(b.size)}};
  db["BUFFER_PROFILE"]["ingress_lossy_profile"] = {
      {"pool", "ingress_lossless_pool"}, {"size", "0"}, {"dynamic_th", Num(b.lossy_pg.dynamic_th)}};
  db["BUFFER_PROFILE"]["egress_lossy_profile"] = {
      {"pool", "egress_lossy_pool"}, {"size", "0"}, {"dynamic_th", Num(b.lossy_queue.dynamic_th)}};
  db["BUFFER_PROFILE"]["egress_lossless_profile"] = {
      {"pool", "egress_lossless_pool"}, {"size", "0"}, {"static_th", Num(b.size)}};
}

// A lossless PG's BUFFER_PROFILE entry (size = reserved + xoff without a shared headroom pool).
nlohmann::json PgProfileJson(const PgProfile& pg, const BufferConfig& b) {
  nlohmann::json p = {{"pool", "ingress_lossless_pool"},
                      {"xoff", Num(pg.xoff)},
                      {"xon", Num(pg.xon)},
                      {"xon_offset", Num(pg.xon_offset)},
                      {"size", Num(pg.reserved + (b.shared_headroom_pool > 0 ? 0 : pg.xoff))}};
  if (pg.static_th > 0) {
    p["static_th"] = Num(pg.static_th);
  } else {
    p["dynamic_th"] = Num(pg.dynamic_th);
  }
  return p;
}

// Port i's entries: PORT, CABLE_LENGTH, its lossless profile, BUFFER_PG/QUEUE, PORT_QOS_MAP,
// QUEUE and PFC_WD.
void ExportPort(const Scenario& s, const SwitchConfig& c, const ClassSplit& split, size_t i,
                const std::string& peer, nlohmann::json* dbp) {
  nlohmann::json& db = *dbp;
  const SwitchPortConfig& port = c.ports[i];
  const std::string e = SonicPort(i);
  char cable[32];
  std::snprintf(cable, sizeof cable, "%gm", port.cable_m);
  db["PORT"][e] = {{"alias", "etp" + std::to_string(i + 1)},
                   {"index", std::to_string(i + 1)},
                   {"speed", Num(port.rate.bps() / 1'000'000)},
                   {"mtu", "9100"},
                   {"admin_status", "up"},
                   {"description", port.name + " to " + peer}};
  db["CABLE_LENGTH"]["AZURE"][e] = cable;
  // SONiC's naming of generated lossless profiles: pg_lossless_<speed>_<cable>_profile.
  std::string prof = port.buffer_profile;
  if (prof.empty()) {
    prof = "pg_lossless_" + Num(port.rate.bps() / 1'000'000) + "_" + cable + "_profile";
    // A scenario profile of that name (imported from a switch) holds other numbers.
    if (s.sw.buffer_profiles.contains(prof)) prof += "_formula";
  }
  const nlohmann::json pj = PgProfileJson(ResolveLosslessPg(c.buffer, port), c.buffer);
  if (db["BUFFER_PROFILE"].contains(prof) && db["BUFFER_PROFILE"][prof] != pj) {
    prof += "_p" + std::to_string(i);  // same name, other numbers: keep both
  }
  db["BUFFER_PROFILE"][prof] = pj;
  const std::pair<const std::vector<int>*, std::string> entries[] = {
      {&split.lossless_pgs, prof}, {&split.lossy_pgs, "ingress_lossy_profile"}};
  for (const auto& [pgs, name] : entries) {
    if (!pgs->empty()) db["BUFFER_PG"][e + "|" + Range(*pgs)] = {{"profile", name}};
  }
  const std::pair<const std::vector<int>*, const char*> queues[] = {
      {&split.lossless_q, "egress_lossless_profile"}, {&split.lossy_q, "egress_lossy_profile"}};
  for (const auto& [qs, name] : queues) {
    if (!qs->empty()) db["BUFFER_QUEUE"][e + "|" + Range(*qs)] = {{"profile", name}};
  }
  nlohmann::json qm = {
      {c.qos.trust == QosTrust::kPcp ? "dot1p_to_tc_map" : "dscp_to_tc_map", "ROCEFAB"},
      {"tc_to_pg_map", "ROCEFAB"},
      {"tc_to_queue_map", "ROCEFAB"},
      {"pfc_to_queue_map", "ROCEFAB"}};
  if (!split.lossless.empty()) {  // SONiC writes the priorities comma-separated: "3,4"
    std::string list;
    for (int p : split.lossless) {
      if (!list.empty()) list += ',';
      list += std::to_string(p);
    }
    qm["pfc_enable"] = list;
  }
  db["PORT_QOS_MAP"][e] = qm;
  for (int qq = 0; qq < 8; ++qq) {
    nlohmann::json qe = {{"scheduler", (c.scheduler.strict_mask >> qq) & 1
                                           ? "scheduler.strict"
                                           : "scheduler.w" + Num(c.scheduler.weights[qq])}};
    if (c.wred[qq].enabled) qe["wred_profile"] = "ROCEFAB_ECN";
    db["QUEUE"][e + "|" + std::to_string(qq)] = qe;
  }
  const PfcWatchdogConfig& wd = c.watchdog;
  if (wd.enabled && port.pfc_watchdog &&
      (!wd.server_ports_only || (port.vlan != 0 && !port.trunk))) {
    db["PFC_WD"][e] = {{"action", wd.action == WatchdogAction::kDrop      ? "drop"
                                  : wd.action == WatchdogAction::kForward ? "forward"
                                                                          : "alert"},
                       {"detection_time", Num(wd.detection_time / kMs)},
                       {"restoration_time", Num(wd.restoration_time / kMs)}};
  }
}

// The ROCEFAB maps the ports name: DSCP (or DOT1P, for PCP trust), TC->PG, TC->queue, PFC.
void ExportMaps(const QosProfile& q, nlohmann::json* dbp) {
  nlohmann::json& db = *dbp;
  if (q.trust == QosTrust::kPcp) {  // VLAN-based PFC: the ports classify by the tag's PCP
    for (int p = 0; p < 8; ++p)
      db["DOT1P_TO_TC_MAP"]["ROCEFAB"][std::to_string(p)] = Num(q.pcp_to_tc[p]);
  } else {
    for (int d = 0; d < 64; ++d)
      db["DSCP_TO_TC_MAP"]["ROCEFAB"][std::to_string(d)] = Num(q.dscp_to_tc[d]);
  }
  for (int tc = 0; tc < 8; ++tc) {
    db["TC_TO_PRIORITY_GROUP_MAP"]["ROCEFAB"][std::to_string(tc)] = Num(q.tc_to_pg[tc]);
    db["TC_TO_QUEUE_MAP"]["ROCEFAB"][std::to_string(tc)] = Num(q.tc_to_queue[tc]);
    db["PFC_PRIORITY_TO_QUEUE_MAP"]["ROCEFAB"][std::to_string(tc)] = Num(tc);
  }
}

// SCHEDULER entries the QUEUEs name, and the one WRED_PROFILE of the ECN queues.
void ExportSchedulerAndWred(const SwitchConfig& c, SonicExport* out) {
  nlohmann::json& db = out->db;
  db["SCHEDULER"]["scheduler.strict"] = {{"type", "STRICT"}};
  for (int qq = 0; qq < 8; ++qq) {
    if (!((c.scheduler.strict_mask >> qq) & 1)) {
      db["SCHEDULER"]["scheduler.w" + Num(c.scheduler.weights[qq])] = {
          {"type", "DWRR"}, {"weight", Num(c.scheduler.weights[qq])}};
    }
  }
  for (int qq = 0; qq < 8; ++qq) {
    const WredProfile& w = c.wred[qq];
    if (!w.enabled) continue;
    // The ecn block gives one profile to its queues; the first enabled queue's stands for all.
    const auto pct = static_cast<int64_t>(std::lround(w.pmax * 100));
    if (std::abs(w.pmax * 100 - static_cast<double>(pct)) > 1e-9) {
      out->notes.push_back("ecn.pmax " + std::to_string(w.pmax) +
                           " rounded to a whole percent for green_drop_probability");
    }
    if (w.mark_on_dequeue) {
      out->notes.push_back(
          "ecn.mark_on \"dequeue\" has no config_db field (SONiC marks as the "
          "ASIC does)");
    }
    db["WRED_PROFILE"]["ROCEFAB_ECN"] = {{"wred_green_enable", w.drop_non_ect ? "true" : "false"},
                                         {"ecn", "ecn_all"},
                                         {"green_min_threshold", Num(w.kmin)},
                                         {"green_max_threshold", Num(w.kmax)},
                                         {"green_drop_probability", Num(pct)}};
    break;
  }
}

// PFC_WD|GLOBAL once a port is watched, and what config_db cannot say of the watchdog.
void ExportWatchdogGlobal(const PfcWatchdogConfig& wd, SonicExport* out) {
  if (!out->db.contains("PFC_WD")) return;
  out->db["PFC_WD"]["GLOBAL"] = {{"POLL_INTERVAL", Num(wd.poll_interval / kMs)}};
  if (wd.restore_after) {
    out->notes.push_back(
        "pfc_watchdog.mode \"paper\" has no config_db field (SONiC restores "
        "when the storm stops)");
  }
  if (wd.detection_time % kMs || wd.restoration_time % kMs || wd.poll_interval % kMs) {
    out->notes.push_back("PFC watchdog times rounded down to whole milliseconds (SONiC's unit)");
  }
}

}  // namespace

Result<SonicImport> ImportSonic(const nlohmann::json& base, const Topology& topo,
                                const std::vector<SonicConfigDb>& dbs) {
  if (dbs.empty()) return Result<SonicImport>::Error("import-sonic: no config_db file given");
  SonicImport out;
  try {
    Importer imp(topo, &out.notes);
    for (const auto& f : dbs) imp.Read(f);
    out.scenario = imp.Apply(base);
  } catch (const SonicError& e) {
    return Result<SonicImport>::Error(e.what());
  }
  return out;
}

Result<SonicExport> ExportSonic(const Scenario& s, const std::string& name) {
  using R = Result<SonicExport>;
  const int si = s.topology.SwitchIndex(name);
  if (si < 0) return R::Error("no switch \"" + name + "\" in the scenario");
  auto plan = PlanFabric(s);
  if (!plan.ok()) return plan.status();
  const SwitchConfig& c = plan.value().switches[static_cast<size_t>(si)];
  const TopoSwitch& ts = s.topology.switches[static_cast<size_t>(si)];
  SonicExport out;
  nlohmann::json& db = out.db;
  const char* type = ts.role == SwitchRole::kTor    ? "ToRRouter"
                     : ts.role == SwitchRole::kLeaf ? "LeafRouter"
                                                    : "SpineRouter";
  db["DEVICE_METADATA"]["localhost"] = {
      {"hostname", name}, {"type", type}, {"hwsku", "rocefab"}, {"buffer_model", "traditional"}};
  const ClassSplit split = SplitClasses(c.qos, &out.notes);
  ExportPools(c.buffer, &out);
  const std::vector<std::string> peer = PeersOf(plan.value(), s.topology, si, c.ports.size());
  for (size_t i = 0; i < c.ports.size(); ++i) {
    ExportPort(s, c, split, i, peer[i], &db);
  }
  ExportMaps(c.qos, &db);
  ExportSchedulerAndWred(c, &out);
  ExportWatchdogGlobal(c.watchdog, &out);
  return out;
}

}  // namespace rocefab
