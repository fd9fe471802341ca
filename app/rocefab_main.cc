// rocefab: command-line entry point (topo, sim, live, crosscheck, check, report). Exceptions stop
// at this boundary.
#include <signal.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <string>

#include "common/json_reader.h"
#include "common/units.h"
#include "fabric/check.h"
#include "fabric/plan.h"
#include "fabric/sonic.h"
#include "run/crosscheck.h"
#include "run/live_run.h"
#include "run/mpi_ranks.h"
#include "run/netns.h"
#include "run/run_state.h"
#include "run/sim_run.h"
#include "run/verbs_env.h"
#include "topo/clos.h"
#include "topo/scenario.h"
#include "version.h"  // generated from app/version.h.in (meson vcs_tag)

namespace po = boost::program_options;
using namespace rocefab;

namespace {

const char* kUsage =
    "usage: rocefab <command> [options]\n"
    "\n"
    "commands:\n"
    "  topo clos   generate a Clos fabric as a runnable scenario file\n"
    "  topo draw FILE  draw a scenario's fabric (switches, hosts, port numbers) as a PNG\n"
    "  topo import-sonic --base FILE [SWITCH=]CONFIG_DB.json... -o OUT\n"
    "              a scenario whose switches take SONiC config_db buffer/QoS/PFC/ECN settings\n"
    "  export-sonic FILE SWITCH  a scenario's switch as SONiC config_db.json tables\n"
    "  sim  FILE   run a scenario in virtual time (deterministic, no root needed)\n"
    "  live FILE   run a scenario in real time on DPDK with Linux namespace hosts (root)\n"
    "  crosscheck FILE  run a scenario in both runners and compare the figures (root)\n"
    "  check FILE  check a scenario's configuration (lossless maps, PFC, headroom, MTU, ECN vs "
    "PFC)\n"
    "  report DIR  tables and PNG plots of a results folder\n"
    "  diff A B    the figures that changed between two results folders\n"
    "  inspect [RUN]              the live runs, or one run's hosts, addresses and namespaces\n"
    "  exec RUN HOST -- CMD...    run a command in a live run's namespace host (root)\n"
    "  destroy RUN                stop a live run (held with --hold forever) and remove it\n"
    "\n"
    "`rocefab <command> --help` describes each command's options; `rocefab --version` the "
    "build.\n";

int Fail(const std::string& msg) {
  std::fprintf(stderr, "rocefab: %s\n", msg.c_str());
  return 2;
}

// Parses `argv` with `d`, the first positional argument going to option `positional`. False
// (after printing the error) on a bad command line.
bool ParseOptions(int argc, char** argv, const po::options_description& d, const char* positional,
                  po::variables_map* vm) {
  po::positional_options_description pos;
  pos.add(positional, 1);
  try {
    po::store(po::command_line_parser(argc, argv).options(d).positional(pos).run(), *vm);
    po::notify(*vm);
  } catch (const po::error& e) {
    Fail(e.what());
    return false;
  }
  return true;
}

const char* kSetHelp =
    "KEY=VALUE: override a scenario field by its JSON path before it is read (repeatable): "
    "--set topology.clos.link_rate=1Gbps, --set traffic.0.iterations=500, "
    "--set drop_lossless_on_incomplete_arp=true";

// `rocefab CMD --help` or -h as the first argument.
bool AsksHelp(int argc, char** argv) {
  return argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h");
}

// A command's usage: on stdout with exit 0 when asked for, else on stderr with exit 2.
int Usage(bool asked, const std::string& text) {
  std::fputs(text.c_str(), asked ? stdout : stderr);
  return asked ? 0 : 2;
}

std::vector<std::string> Sets(const po::variables_map& vm) {
  return vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
}

template <class T>
bool Parse(Result<T> r, const char* flag, T* out) {
  if (!r.ok()) {
    Fail(std::string("--") + flag + ": " + r.message());
    return false;
  }
  *out = r.value();
  return true;
}

// `rocefab topo draw SCENARIO [-o FILE.png]`: the fabric as a picture (scripts/topo_draw.py),
// with the switch port numbers the runners give each link end.
int TopoDrawCmd(int argc, char** argv) {
  std::string scenario, out;
  std::vector<std::string> sets;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: rocefab topo draw SCENARIO [-o FILE.png] [--set KEY=VALUE]...\n  draws the "
          "fabric: spines, leaves, ToRs and hosts by tier, each link with the switch port "
          "numbers at its ends (default FILE: <scenario name>-topology.png)\n");
      return 0;
    }
    if ((a == "-o" || a == "--output") && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--set" && i + 1 < argc) {
      sets.push_back(argv[++i]);
    } else if (a.starts_with("-")) {
      return Fail("topo draw: unknown option '" + a + "'");
    } else if (scenario.empty()) {
      scenario = a;
    } else {
      return Fail("topo draw: one scenario at a time");
    }
  }
  if (scenario.empty()) return Fail("usage: rocefab topo draw SCENARIO [-o FILE.png]");
  auto sc = Scenario::Load(scenario, sets);
  if (!sc.ok()) return Fail(sc.message());
  auto plan = PlanFabric(sc.value());
  if (!plan.ok()) return Fail(scenario + ": " + plan.message());
  const Topology& t = sc.value().topology;
  nlohmann::json j = {{"name", sc.value().name}};
  for (const auto& sw : t.switches) {
    j["switches"].push_back({{"name", sw.name}, {"role", SwitchRoleName(sw.role)}});
  }
  for (const auto& h : t.hosts) {
    j["hosts"].push_back({{"name", h.name},
                          {"tor", h.tor},
                          {"kind", HostKindName(h.kind)},
                          {"ip", FormatIpv4(h.ip)}});
  }
  const FabricPlan& p = plan.value();
  auto name = [&](const FabricPlan::Endpoint& e) {
    return e.is_host ? t.hosts[e.index].name : t.switches[e.index].name;
  };
  for (const auto& l : p.links) {
    j["links"].push_back({{"a", name(l.a)},
                          {"b", name(l.b)},
                          {"a_port", l.a.port},
                          {"b_port", l.b.port},
                          {"rate", FormatRate(l.rate)}});
  }
  if (out.empty()) {
    // The scenario's name, as a file name: its characters outside [A-Za-z0-9_.-] become '_'.
    std::string base = sc.value().name;
    for (char& c : base) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
    }
    if (base.empty() || base[0] == '.' || base[0] == '-') base = "scenario" + base;
    out = base + "-topology.png";
  }
  char tmpl[] = "/tmp/rocefab-topo-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return Fail("topo draw: cannot create a temporary file");
  close(fd);
  Status st = WriteJsonFile(tmpl, j);
  if (!st.ok()) return Fail(st.message());
  const std::string script = std::string(ROCEFAB_SOURCE_DIR) + "/scripts/topo_draw.py";
  // An argument vector, never a shell: the output path and the name are data.
  auto r = RunCommand({"/usr/bin/python3", script, tmpl, out});
  std::remove(tmpl);
  if (!r.ok()) {
    const bool no_matplotlib =
        r.message().find("No module named 'matplotlib'") != std::string::npos;
    return Fail("topo draw: " + r.message() +
                (no_matplotlib ? " (install python3-matplotlib: scripts/setup.sh does)" : ""));
  }
  std::fputs(r.value().c_str(), stdout);
  return 0;
}

// Reads a JSON file strictly; errors name the file.
Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Result<nlohmann::json>::Error("cannot open " + path);
  try {
    return ParseJsonStrict(in);
  } catch (const std::exception& e) {
    return Result<nlohmann::json>::Error(path + ": " + e.what());
  }
}

// A scenario written to `out` that came from `base`: paths in it relative to the base's folder
// (traffic items' "file" and "cdf" paths, "topology_file") are made relative to the output's, so it
// loads wherever it is written.
void RebaseRelativePaths(nlohmann::json* j, const std::string& base, const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path from = fs::absolute(base).parent_path(), to = fs::absolute(out).parent_path();
  if (from == to) return;
  auto rebase = [&](nlohmann::json& v) {
    if (!v.is_string() || v.get<std::string>().empty() ||
        fs::path(v.get<std::string>()).is_absolute())
      return;
    v = fs::path(from / v.get<std::string>()).lexically_normal().lexically_relative(to).string();
  };
  if (j->contains("topology_file")) rebase((*j)["topology_file"]);
  if (j->contains("traffic") && (*j)["traffic"].is_array()) {
    for (auto& t : (*j)["traffic"]) {
      if (!t.is_object()) continue;
      if (t.contains("file")) rebase(t["file"]);
      // A CDF given as a path (with a '/'); a bare name is looked up among the workloads.
      if (t.contains("cdf") && t["cdf"].is_string() &&
          t["cdf"].get<std::string>().find('/') != std::string::npos)
        rebase(t["cdf"]);
    }
  }
}

// `rocefab topo import-sonic --base SCENARIO [SWITCH=]CONFIG_DB.json... -o OUT.json`
// (fabric/sonic.h): the base scenario with its switches' lossless settings taken from SONiC
// config_db files; what is not carried over is printed as notes.
int TopoImportSonicCmd(int argc, char** argv) {
  const char* kHelp =
      "usage: rocefab topo import-sonic --base SCENARIO [SWITCH=]CONFIG_DB.json... -o OUT.json\n"
      "  sets the base scenario's buffer, QoS maps, PFC, ECN, scheduler and PFC watchdog from\n"
      "  SONiC config_db.json files (one per switch: its DEVICE_METADATA hostname or SWITCH= "
      "names\n"
      "  the switch; all=FILE configures every switch). Fields rocefab does not model are listed\n"
      "  as notes; the result is checked by the scenario reader before it is written, and\n"
      "  what `rocefab check` finds in it is printed (check: lines; the file is written anyway).\n";
  std::string base, out;
  std::vector<std::pair<std::string, std::string>> files;  // switch, path
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return Usage(true, kHelp);
    if (a == "--base" && i + 1 < argc) {
      base = argv[++i];
    } else if ((a == "-o" || a == "--output") && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "-o" || a == "--output" || a == "--base") {
      return Fail("topo import-sonic: " + a + " needs a value");
    } else if (a.starts_with("-")) {
      return Fail("topo import-sonic: unknown option '" + a + "'");
    } else {
      const auto eq = a.find('=');
      if (eq != std::string::npos && a.find('/') > eq) {
        files.emplace_back(a.substr(0, eq), a.substr(eq + 1));
      } else {
        files.emplace_back("", a);
      }
    }
  }
  if (base.empty() || out.empty() || files.empty()) return Usage(false, kHelp);
  auto bj = ReadJsonFile(base);
  if (!bj.ok()) return Fail("topo import-sonic: " + bj.message());
  auto bs = Scenario::Load(base);
  if (!bs.ok()) return Fail("topo import-sonic: " + bs.message());
  std::vector<SonicConfigDb> dbs;
  for (const auto& [sw, path] : files) {
    auto j = ReadJsonFile(path);
    if (!j.ok()) return Fail("topo import-sonic: " + j.message());
    dbs.push_back({path, j.value(), sw});
  }
  for (const auto& [sw, path] : files) {
    std::error_code ec;
    if (std::filesystem::equivalent(path, out, ec)) {
      return Fail("topo import-sonic: -o " + out + " is one of the config_db files it reads");
    }
  }
  auto imp = ImportSonic(bj.value(), bs.value().topology, dbs);
  if (!imp.ok()) return Fail("topo import-sonic: " + imp.message());
  RebaseRelativePaths(&imp.value().scenario, base, out);
  for (const auto& n : imp.value().notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  const std::string dir = std::filesystem::path(out).parent_path().string();
  auto check = Scenario::FromJson(imp.value().scenario, dir.empty() ? "." : dir);
  if (!check.ok()) {
    // The scenario field names the SONiC table it came from (docs/sonic.md, field by field).
    const std::string m = check.message();
    const char* from = m.starts_with("ecn")            ? "WRED_PROFILE"
                       : m.starts_with("pfc_watchdog") ? "PFC_WD"
                       : m.starts_with("buffer")       ? "BUFFER_POOL/BUFFER_PROFILE"
                       : m.starts_with("qos")          ? "PORT_QOS_MAP and its maps"
                       : m.starts_with("scheduler")    ? "SCHEDULER"
                                                       : "";
    std::string files_list;
    for (const auto& [sw, path] : files) files_list += (files_list.empty() ? "" : ", ") + path;
    return Fail("topo import-sonic: the imported scenario does not load: " + m +
                (*from ? std::string(" (set from ") + from + " of " + files_list + ")" : ""));
  }
  std::ofstream o(out);
  o << imp.value().scenario.dump(2) << "\n";
  if (!o) return Fail("topo import-sonic: cannot write " + out + ": " + std::strerror(errno));
  // What `rocefab check` will say of the result (a SONiC DSCP map under a base whose NICs send
  // on another DSCP, say), so the user hears it now; it does not stop the import.
  const auto findings = CheckScenario(check.value());
  for (const auto& f : findings) {
    std::fprintf(stderr, "check: [%s] %s (%s): %s\n", f.check.c_str(), f.where.c_str(),
                 f.field.c_str(), f.message.c_str());
  }
  std::printf("wrote %s (%zu config_db file%s, %zu note%s, %zu check finding%s)\n", out.c_str(),
              dbs.size(), dbs.size() == 1 ? "" : "s", imp.value().notes.size(),
              imp.value().notes.size() == 1 ? "" : "s", findings.size(),
              findings.size() == 1 ? "" : "s");
  return 0;
}

// `rocefab export-sonic SCENARIO SWITCH [-o FILE] [--set KEY=VALUE]...`: one switch's
// config_db.json tables (fabric/sonic.h).
int ExportSonicCmd(int argc, char** argv) {
  const char* kHelp =
      "usage: rocefab export-sonic SCENARIO SWITCH [-o CONFIG_DB.json] [--set KEY=VALUE]...\n"
      "  writes the switch's buffer pools and profiles (headroom resolved per port), QoS maps,\n"
      "  PFC, WRED/ECN, scheduler and PFC watchdog as SONiC config_db.json tables (stdout by\n"
      "  default); settings config_db has no field for are printed as notes.\n";
  std::vector<std::string> pos, sets;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return Usage(true, kHelp);
    if ((a == "-o" || a == "--output") && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--set" && i + 1 < argc) {
      sets.push_back(argv[++i]);
    } else if (a == "-o" || a == "--output" || a == "--set") {
      return Fail("export-sonic: " + a + " needs a value");
    } else if (a.starts_with("-")) {
      return Fail("export-sonic: unknown option '" + a + "'");
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 2) return Usage(false, kHelp);
  auto sc = Scenario::Load(pos[0], sets);
  if (!sc.ok()) return Fail("export-sonic: " + sc.message());
  auto ex = ExportSonic(sc.value(), pos[1]);
  if (!ex.ok()) return Fail("export-sonic: " + ex.message());
  for (const auto& n : ex.value().notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  const std::string text = ex.value().db.dump(4) + "\n";
  if (out.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  std::ofstream o(out);
  o << text;
  if (!o) return Fail("export-sonic: cannot write " + out + ": " + std::strerror(errno));
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

int TopoCmd(int argc, char** argv) {
  if (argc >= 1 && std::string(argv[0]) == "draw") return TopoDrawCmd(argc, argv);
  if (argc >= 1 && std::string(argv[0]) == "import-sonic") return TopoImportSonicCmd(argc, argv);
  if (argc < 1 || std::string(argv[0]) != "clos") {
    const bool help =
        argc >= 1 && (std::string(argv[0]) == "--help" || std::string(argv[0]) == "-h");
    return Usage(help,
                 "usage: rocefab topo clos [options] -o FILE   generate a Clos scenario (see "
                 "rocefab topo clos --help)\n       rocefab topo draw SCENARIO [-o FILE.png]   "
                 "draw a scenario's fabric\n       rocefab topo import-sonic --base SCENARIO "
                 "[SWITCH=]CONFIG_DB.json... -o OUT   SONiC settings into a scenario\n");
  }
  po::options_description d(
      "usage: rocefab topo clos [options] -o FILE: generate a 2- or 3-tier Clos as a scenario "
      "file");
  d.add_options()("help,h", "this help")("tiers", po::value<int>()->default_value(2),
                                         "2 (ToR-spine) or 3 (ToR-leaf-spine with podsets)")(
      "spines", po::value<int>()->default_value(2), "spine switches")(
      "leaves", po::value<int>()->default_value(2), "2-tier: ToR (leaf) switches")(
      "tors-per-podset", po::value<int>()->default_value(2), "3-tier: ToRs per podset")(
      "leaves-per-podset", po::value<int>()->default_value(2), "3-tier: leaves per podset")(
      "podsets", po::value<int>()->default_value(2), "3-tier: podsets")(
      "hosts-per-leaf", po::value<int>()->default_value(2), "hosts under each ToR")(
      "link-rate", po::value<std::string>()->default_value("100Gbps"), "switch-switch link rate")(
      "host-rate", po::value<std::string>()->default_value(""),
      "host link rate (default: link rate)")("cable", po::value<std::string>()->default_value("5m"),
                                             "cable length of every link")(
      "host-cable", po::value<std::string>()->default_value(""),
      "host-ToR cable length (default: --cable)")(
      "tor-cable", po::value<std::string>()->default_value(""),
      "ToR uplink cable length, to spines or leaves (default: --cable)")(
      "leaf-cable", po::value<std::string>()->default_value(""),
      "3-tier: leaf-spine cable length (default: --cable)")(
      "host-kind", po::value<std::string>()->default_value("linux"), "linux | builtin")(
      "name", po::value<std::string>()->default_value("clos"), "scenario name")(
      "output,o", po::value<std::string>(), "output file (default: stdout)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, d), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return Fail(e.what());
  }
  if (vm.count("help")) {
    std::cout << d << "\n";
    return 0;
  }
  ClosSpec s;
  s.tiers = vm["tiers"].as<int>();
  s.spines = vm["spines"].as<int>();
  if (s.tiers == 2) {
    s.tors = vm["leaves"].as<int>();
  } else {
    s.tors = vm["tors-per-podset"].as<int>();
    s.leaves_per_podset = vm["leaves-per-podset"].as<int>();
    s.podsets = vm["podsets"].as<int>();
  }
  s.hosts_per_tor = vm["hosts-per-leaf"].as<int>();
  if (!Parse(ParseRate(vm["link-rate"].as<std::string>()), "link-rate", &s.link_rate)) return 2;
  if (!vm["host-rate"].as<std::string>().empty() &&
      !Parse(ParseRate(vm["host-rate"].as<std::string>()), "host-rate", &s.host_rate)) {
    return 2;
  }
  if (s.link_rate.bps() <= 0) return Fail("--link-rate: must be more than 0");
  if (!vm["host-rate"].as<std::string>().empty() && s.host_rate.bps() <= 0) {
    return Fail("--host-rate: must be more than 0");
  }
  if (!Parse(ParseLength(vm["cable"].as<std::string>()), "cable", &s.cable_m)) return 2;
  for (auto [opt, field] :
       {std::pair{"host-cable", &s.host_cable_m}, std::pair{"tor-cable", &s.tor_cable_m},
        std::pair{"leaf-cable", &s.leaf_cable_m}}) {
    const std::string v = vm[opt].as<std::string>();
    if (!v.empty() && !Parse(ParseLength(v), opt, field)) return 2;
    if (!v.empty() && *field < 0) return Fail(std::string("--") + opt + ": must be >= 0");
  }
  const std::string kind = vm["host-kind"].as<std::string>();
  if (kind != "linux" && kind != "builtin") return Fail("--host-kind: must be linux or builtin");
  s.host_kind = kind == "linux" ? HostKind::kLinux : HostKind::kBuiltin;
  auto t = BuildClos(s);
  if (!t.ok()) return Fail("topo clos: " + t.message());
  nlohmann::json sc = {{"name", vm["name"].as<std::string>()},
                       {"description", "generated by rocefab topo clos"},
                       {"seed", 1},
                       {"duration", "5ms"},
                       {"topology", t.value().ToJson()},
                       {"traffic", nlohmann::json::array({{{"kind", "ping"},
                                                           {"from", "all"},
                                                           {"to", "all"},
                                                           {"count", 5},
                                                           {"interval", "100us"}}})}};
  // The default 12 MiB buffer cannot hold the reserved + headroom bytes of very wide switches
  // (e.g. 256-port spines): double it until every switch's MMU fits, and say so.
  {
    auto fits = [&](const nlohmann::json& j) {
      auto parsed = Scenario::FromJson(j, ".");
      if (!parsed.ok()) return true;  // other problems are the scenario reader's to report
      for (const auto& f : CheckScenario(parsed.value())) {
        if (f.check == "buffer" && f.field == "buffer.size") return false;
      }
      return true;
    };
    int64_t mib = 12;
    while (!fits(sc) && mib < (int64_t{1} << 16)) {
      mib *= 2;
      sc["buffer"] = {{"size", std::to_string(mib) + "MiB"}};
    }
    if (sc.contains("buffer")) {
      std::fprintf(stderr,
                   "note: buffer.size set to %lld MiB so every switch holds its reserved and "
                   "headroom bytes\n",
                   static_cast<long long>(mib));
    }
  }
  if (vm.count("output")) {
    Status st = WriteJsonFile(vm["output"].as<std::string>(), sc);
    if (!st.ok()) return Fail(st.message());
    std::fprintf(stderr, "wrote %s: %zu switches, %zu hosts, %zu links\n",
                 vm["output"].as<std::string>().c_str(), t.value().switches.size(),
                 t.value().hosts.size(), t.value().links.size());
  } else {
    std::cout << sc.dump(2) << "\n";
  }
  return 0;
}

// "auto" (0) or 1..64; false (with the message printed) otherwise.
bool ParseLcores(const std::string& v, int* out) {
  if (v == "auto") {
    *out = 0;
    return true;
  }
  const bool digits = !v.empty() && v.size() <= 2 && std::all_of(v.begin(), v.end(), ::isdigit);
  const int n = digits ? std::stoi(v) : 0;
  if (n < 1 || n > 64) {
    Fail("--lcores: must be 1..64 or auto, got '" + v + "'");
    return false;
  }
  *out = n;
  return true;
}

int SimCmd(int argc, char** argv) {
  po::options_description d(
      "usage: rocefab sim SCENARIO [options]: run a scenario in virtual time");
  d.add_options()("help,h", "this help")("scenario", po::value<std::string>(),
                                         "scenario JSON file")(
      "out", po::value<std::string>()->default_value(""),
      "results folder (summary.json, flows.csv, pings.csv)")(
      "seed", po::value<int64_t>(), "override the scenario's seed (0 .. 2^63-1)")(
      "duration", po::value<std::string>()->default_value(""), "override the scenario's duration")(
      "threads", po::value<std::string>()->default_value("1"),
      "threads: 1..64 or auto (one per CPU, at most one per ToR); ToRs with their hosts split "
      "among them; same results for any number; with MPI: threads per rank")(
      "mpi",
      "run as one rank of an MPI run (mpirun -np N rocefab sim ...; also without this flag "
      "when mpirun starts more than one rank): the fabric split over the ranks, rank 0 writes "
      "the results, the same as one process")("set",
                                              po::value<std::vector<std::string>>()->composing(),
                                              kSetHelp)("quiet,q", "no progress or table");
  po::variables_map vm;
  if (!ParseOptions(argc, argv, d, "scenario", &vm)) return 2;
  if (vm.count("help") || !vm.count("scenario")) {
    std::cout << d << "\n";
    return vm.count("help") ? 0 : 2;
  }
  SimRunOptions opt;
  opt.mpi = vm.count("mpi") > 0 || MpiRanks::LaunchedWithRanks();
  if (opt.mpi && !MpiRanks::Available()) {
    return Fail(
        "--mpi: this rocefab was built without MPI (install libopenmpi-dev and openmpi-bin, "
        "then meson setup --reconfigure build)");
  }
  // --duration is `--set duration=...`: the reader then derives what depends on the duration
  // (perftest timing windows) from the new value.
  std::vector<std::string> sets = Sets(vm);
  if (!vm["duration"].as<std::string>().empty())
    sets.push_back("duration=" + vm["duration"].as<std::string>());
  auto sc = Scenario::Load(vm["scenario"].as<std::string>(), sets);
  if (!sc.ok()) return Fail(sc.message());
  opt.out_dir = vm["out"].as<std::string>();
  if (vm.count("seed")) {
    if (vm["seed"].as<int64_t>() < 0) return Fail("--seed: must be 0 or more");
    opt.seed_override = vm["seed"].as<int64_t>();
  }
  opt.quiet = vm.count("quiet") > 0;
  const std::string threads = vm["threads"].as<std::string>();
  if (threads == "auto") {
    opt.threads = 0;
  } else {
    const bool digits = !threads.empty() && threads.size() <= 2 &&
                        std::all_of(threads.begin(), threads.end(), ::isdigit);
    const int n = digits ? std::stoi(threads) : 0;
    if (n < 1 || n > 64) {
      return Fail("--threads: must be 1..64 or auto, got '" + threads + "'");
    }
    opt.threads = n;
  }
  if (opt.mpi) {
    // How this rank was started: the ranks compare it before they run (SetUpRanks).
    std::ifstream file(vm["scenario"].as<std::string>(), std::ios::binary);
    std::string id((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    for (const auto& x : sets) id += "\n--set " + x;
    id += "\n--threads " + threads;
    if (vm.count("seed")) id += "\n--seed " + std::to_string(vm["seed"].as<int64_t>());
    opt.args_fingerprint = std::hash<std::string>()(id);
  }
  auto r = RunSim(sc.value(), opt);
  if (!r.ok()) {
    const int rc = Fail(vm["scenario"].as<std::string>() + ": " + r.message());
    MpiRanks::AbortIfRunning(rc);  // the other ranks may wait for this one
    return rc;
  }
  return 0;
}

int CheckCmd(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::printf(
        "usage: rocefab check [--set KEY=VALUE]... SCENARIO...\n  reports configuration "
        "problems with the switch/port/host and field; exit 1 if any, 0 if none\n  --set %s\n",
        kSetHelp);
    return argc < 2 ? 2 : 0;
  }
  // Options first, wherever they are (every --set applies to every file); every other argument
  // is a scenario file. Exit 2 if one cannot be read, else 1 if any has problems.
  std::vector<std::string> sets, files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--set") {
      if (i + 1 >= argc) return Fail("check: --set needs KEY=VALUE");
      sets.push_back(argv[++i]);
    } else if (arg.starts_with("--set=")) {
      sets.push_back(arg.substr(6));
    } else if (arg.starts_with("-")) {
      return Fail("check: unknown option '" + arg + "'");
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) return Fail("check: no scenario file given");
  int rc = 0;
  for (const std::string& file : files) {
    auto sc = Scenario::Load(file, sets);
    if (!sc.ok()) {
      std::fprintf(stderr, "rocefab: %s\n", sc.message().c_str());
      rc = 2;
      continue;
    }
    const auto findings = CheckScenario(sc.value());
    for (const auto& f : findings) {
      std::printf("%s: [%s] %s (%s): %s\n", file.c_str(), f.check.c_str(), f.where.c_str(),
                  f.field.c_str(), f.message.c_str());
    }
    std::printf("%s: %zu problem(s)\n", file.c_str(), findings.size());
    if (!findings.empty() && rc == 0) rc = 1;
  }
  return rc;
}

int ReportCmd(int argc, char** argv) {
  const bool help = AsksHelp(argc, argv);
  if (argc < 2 || help) {
    return Usage(help,
                 "usage: rocefab report RESULTS_DIR [--html]\n  prints the tables of a results "
                 "folder (rocefab sim/live --out) and writes its PNG plots there; --html also "
                 "writes report.html (tables and plots in one file that opens offline)\n");
  }
  const std::string script = std::string(ROCEFAB_SOURCE_DIR) + "/scripts/report.py";
  // Debian's interpreter: python3-matplotlib and python3-numpy are installed for it.
  const char* py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  std::vector<char*> args = {const_cast<char*>(py), const_cast<char*>(script.c_str())};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execvp(py, args.data());
  return Fail("cannot run python3 " + script + " (scripts/setup.sh installs python3-matplotlib)");
}

// A results folder's summary.json (or that file itself), or an error naming it.
Result<nlohmann::json> ReadSummary(const std::string& where) {
  const std::string path =
      where.ends_with(".json") ? where : where + (where.ends_with("/") ? "" : "/") + "summary.json";
  std::ifstream in(path);
  if (!in)
    return Result<nlohmann::json>::Error(
        path + ": cannot open (a results folder of rocefab sim/live --out)");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    return Result<nlohmann::json>::Error(path + ": invalid JSON: " + e.what());
  }
}

int DiffCmd(int argc, char** argv) {
  const bool help = AsksHelp(argc, argv);
  if (argc != 3 || help) {
    return Usage(help,
                 "usage: rocefab diff A B\n  the figures of two results folders (or summary.json "
                 "files) that differ, largest relative change first: goodput, latency "
                 "percentiles, slowdown buckets, PFC XOFF, drops, spine shares\n  exit 0 if "
                 "none differ, 1 if some do, 2 on errors\n");
  }
  auto a = ReadSummary(argv[1]);
  if (!a.ok()) return Fail(a.message());
  auto b = ReadSummary(argv[2]);
  if (!b.ok()) return Fail(b.message());
  if (a.value().value("scenario", "") != b.value().value("scenario", "")) {
    std::printf("note: different scenarios (%s, %s)\n", a.value().value("scenario", "?").c_str(),
                b.value().value("scenario", "?").c_str());
  }
  size_t changed = 0;
  const auto rows = DiffSummaries(a.value(), b.value(), &changed);
  std::fputs(FormatDiff(rows, changed, argv[1], argv[2]).c_str(), stdout);
  return changed > 0 ? 1 : 0;
}

int InspectCmd(int argc, char** argv) {
  const bool help = AsksHelp(argc, argv);
  if (argc > 2 || help) {
    return Usage(help,
                 "usage: rocefab inspect [RUN]\n  without RUN: the live runs (" + RunStateDir() +
                     "); with it: its "
                     "hosts, their addresses, namespaces and ToRs, and the telemetry prefix\n");
  }
  if (argc == 1) {
    const auto runs = ListRunStates();
    if (runs.empty()) std::printf("no live runs (%s)\n", RunStateDir().c_str());
    for (const auto& r : runs) {
      std::printf("%-8s pid %-7d %-24s %zu hosts%s\n", r.value("run_id", "?").c_str(),
                  r.value("pid", 0), r.value("scenario", "?").c_str(), r["hosts"].size(),
                  RunAlive(r) ? "" : "  (stale: its process is gone; rocefab live --cleanup)");
    }
    return 0;
  }
  auto st = ReadRunState(argv[1]);
  if (!st.ok()) return Fail(st.message());
  const auto& r = st.value();
  std::printf("run %s: scenario %s, pid %d%s; telemetry: dpdk-telemetry.py -f %s\n",
              r.value("run_id", "?").c_str(), r.value("scenario", "?").c_str(), r.value("pid", 0),
              RunAlive(r) ? "" : " (gone)", r.value("telemetry_prefix", "?").c_str());
  std::printf("%-8s %-8s %-16s %-18s %-8s %s\n", "host", "kind", "ip", "mac", "tor", "netns");
  for (const auto& h : r["hosts"]) {
    std::printf("%-8s %-8s %-16s %-18s %-8s %s\n", h.value("name", "").c_str(),
                h.value("kind", "").c_str(), h.value("ip", "").c_str(), h.value("mac", "").c_str(),
                h.value("tor", "").c_str(), h.value("netns", "").c_str());
  }
  return 0;
}

// Real verbs programs (ibv_devinfo, perftest, the user's own) run on the host's emulated NIC
// (run/verbs_env.h); programs that use no verbs are not affected.
void SetUpVerbsProvider(const nlohmann::json& state, const std::string& host) {
  const std::string lib = VerbsProviderPath();
  const std::string scenario = state.value("scenario_path", std::string());
  if (lib.empty() || scenario.empty()) return;
  const char* old = std::getenv("LD_PRELOAD");
  for (const std::string& kv :
       VerbsEnv(lib, scenario, state.value("sets", std::vector<std::string>()), host,
                old != nullptr ? old : "")) {
    const size_t eq = kv.find('=');
    setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
}

int ExecCmd(int argc, char** argv) {
  const bool help = AsksHelp(argc, argv);
  int dashes = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      dashes = i;
      break;
    }
  }
  if (help || argc < 5 || dashes != 3 || dashes + 1 >= argc) {
    return Usage(help,
                 "usage: rocefab exec RUN HOST -- COMMAND [ARGS...]\n  runs COMMAND in the "
                 "network namespace of a Linux host of live run RUN (root); exits with its "
                 "status\n");
  }
  auto st = ReadRunState(argv[1]);
  if (!st.ok()) return Fail(st.message());
  if (!RunAlive(st.value())) return Fail(std::string("run ") + argv[1] + " is gone (stale state)");
  const std::string host = argv[2];
  std::string netns, kinds;
  for (const auto& h : st.value()["hosts"]) {
    kinds += " " + h.value("name", std::string()) + "(" + h.value("kind", std::string()) + ")";
    if (h.value("name", std::string()) == host) netns = h.value("netns", std::string());
  }
  if (netns.empty()) {
    return Fail("exec: run " + std::string(argv[1]) + " has no Linux host '" + host +
                "' (a namespace to run in); its hosts:" + kinds);
  }
  SetUpVerbsProvider(st.value(), host);
  std::vector<char*> args = {const_cast<char*>("ip"), const_cast<char*>("netns"),
                             const_cast<char*>("exec"), netns.data()};
  for (int i = dashes + 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execvp("ip", args.data());
  return Fail("exec: cannot run ip netns exec: " + std::string(std::strerror(errno)));
}

int DestroyCmd(int argc, char** argv) {
  const bool help = AsksHelp(argc, argv);
  if (argc != 2 || help) {
    return Usage(help,
                 "usage: rocefab destroy RUN\n  stops live run RUN (it writes its results and "
                 "removes its namespaces, veths and state) and waits until it has\n");
  }
  auto st = ReadRunState(argv[1]);
  if (!st.ok()) return Fail(st.message());
  const pid_t pid = st.value().value("pid", 0);
  if (RunAlive(st.value()) && pid > 0) {
    if (kill(pid, SIGTERM) != 0) return Fail("destroy: cannot signal pid " + std::to_string(pid));
    // The run removes its state file last but one (before EAL and the namespaces); wait for
    // the process itself, at most 60 s.
    for (int i = 0; i < 6000 && ProcessRunning(pid); ++i) usleep(10000);  // process-exit polling
    if (ProcessRunning(pid))
      return Fail("destroy: run " + std::string(argv[1]) + " did not stop in 60 s");
  }
  // Gone (or killed earlier with SIGKILL): whatever it left.
  RemoveRunState(argv[1]);
  int removed = 0;
  for (const auto& ns : ListNetns(std::string(argv[1]) + "-")) {
    if (RunCommand({"ip", "netns", "del", ns}).ok()) ++removed;
  }
  std::printf("destroyed %s%s\n", argv[1],
              removed > 0
                  ? (" (removed " + std::to_string(removed) + " namespace(s) it left)").c_str()
                  : "");
  return 0;
}

int LiveCmd(int argc, char** argv) {
  po::options_description d(
      "usage: rocefab live SCENARIO [options]: run a scenario in real time (root)");
  d.add_options()("help,h", "this help")("scenario", po::value<std::string>(),
                                         "scenario JSON file")(
      "out", po::value<std::string>()->default_value(""), "results folder (summary.json)")(
      "hold", po::value<std::string>()->default_value("0s"),
      "keep the fabric up this long after the traffic; forever: until rocefab destroy RUN")(
      "cleanup", "only remove namespaces left by killed runs, then exit")(
      "strict-timing", "exit 1 when the run was not faithful (its lateness beyond tolerance)")(
      "lcores", po::value<std::string>(),
      "poll threads: 1..64 or auto (one per ToR, at most CPUs - 1); overrides live.lcores")(
      "processes", "one DPDK process per switch, joined by net_memif links (docs/real-rnics.md)")(
      "node", po::value<std::string>(),
      "run only this switch and its hosts, linked to the other switches' processes by "
      "net_memif (start one per switch with the same --run-id)")(
      "run-id", po::value<std::string>(),
      "the run id (rf + 4 hex digits; default from the pid): what the processes of one fabric "
      "share")("parent-run", "(internal) a switch process of rocefab live --processes")(
      "metrics-port", po::value<int>(),
      "serve the switches' counters for Prometheus on http://127.0.0.1:PORT/metrics while the "
      "fabric is up (0: any free port, printed; with --processes the parent serves every switch "
      "process's counters as one)")("set", po::value<std::vector<std::string>>()->composing(),
                                    kSetHelp)("quiet,q", "less output");
  po::variables_map vm;
  if (!ParseOptions(argc, argv, d, "scenario", &vm)) return 2;
  if (vm.count("cleanup")) {
    const StaleLiveRemoved n = CleanupStaleLive();
    std::printf(
        "removed %d stale namespace(s), %d veth(s), %d EAL runtime folder(s), %d log folder(s)\n",
        n.namespaces, n.veths, n.eal_folders, n.log_folders);
    return 0;
  }
  if (vm.count("help") || !vm.count("scenario")) {
    std::cout << d << "\n";
    return vm.count("help") ? 0 : 2;
  }
  auto sc = Scenario::Load(vm["scenario"].as<std::string>(), Sets(vm));
  if (!sc.ok()) return Fail(sc.message());
  LiveRunOptions opt;
  opt.out_dir = vm["out"].as<std::string>();
  opt.quiet = vm.count("quiet") > 0;
  if (vm["hold"].as<std::string>() == "forever") {
    opt.hold = kTimeNever;
  } else if (!Parse(ParseDuration(vm["hold"].as<std::string>()), "hold", &opt.hold)) {
    return 2;
  }
  opt.strict_timing = vm.count("strict-timing") > 0;
  if (vm.count("lcores") && !ParseLcores(vm["lcores"].as<std::string>(), &opt.lcores)) return 2;
  opt.processes = vm.count("processes") > 0;
  if (vm.count("node")) opt.node = vm["node"].as<std::string>();
  if (vm.count("run-id")) {
    opt.run_id = vm["run-id"].as<std::string>();
    const bool ok = opt.run_id.size() == 6 && opt.run_id.rfind("rf", 0) == 0 &&
                    opt.run_id.find_first_not_of("0123456789abcdef", 2) == std::string::npos;
    if (!ok) return Fail("--run-id " + opt.run_id + ": rf and 4 lower-case hex digits (rf1a2b)");
  }
  opt.child_of_processes = vm.count("parent-run") > 0;
  if (vm.count("metrics-port")) {
    opt.metrics_port = vm["metrics-port"].as<int>();
    if (opt.metrics_port < 0 || opt.metrics_port > 65535)
      return Fail("--metrics-port: must be 0..65535, got " + std::to_string(opt.metrics_port));
  }
  if (opt.child_of_processes && (opt.node.empty() || opt.run_id.empty()))
    return Fail("--parent-run needs --node and --run-id");
  opt.scenario_path = vm["scenario"].as<std::string>();
  opt.sets = Sets(vm);
  auto r = RunLive(sc.value(), opt);
  if (!r.ok()) {
    Fail(r.message());
    return opt.strict_timing && r.message().rfind("--strict-timing", 0) == 0 ? 1 : 2;
  }
  return 0;
}

int CrosscheckCmd(int argc, char** argv) {
  po::options_description d(
      "usage: rocefab crosscheck SCENARIO [options]: run a scenario in both runners and compare "
      "the figures "
      "(root)");
  d.add_options()("help,h", "this help")("scenario", po::value<std::string>(),
                                         "scenario JSON file")(
      "out", po::value<std::string>()->default_value(""),
      "keep both results folders (DIR/sim, DIR/live) and the table (DIR/crosscheck.{txt,json})")(
      "lcores", po::value<std::string>(), "the live run's poll threads (rocefab live --lcores)")(
      "processes", "the live run as one DPDK process per switch (rocefab live --processes)")(
      "set", po::value<std::vector<std::string>>()->composing(), kSetHelp)(
      "quiet,q", "print nothing; the exit code tells (0 agree, 1 disagree or not faithful)");
  po::variables_map vm;
  if (!ParseOptions(argc, argv, d, "scenario", &vm)) return 2;
  if (vm.count("help") || !vm.count("scenario")) {
    std::cout << d << "\n"
              << "Exit: 0 every figure agrees within its tolerance and the live run was "
                 "faithful; 1 otherwise; 2 errors (no root, a runner failed).\n"
              << "Tolerances and their reasons: docs/crosscheck.md\n";
    return vm.count("help") ? 0 : 2;
  }
  CrosscheckOptions opt;
  opt.out_dir = vm["out"].as<std::string>();
  opt.sets = Sets(vm);
  opt.quiet = vm.count("quiet") > 0;
  opt.live_processes = vm.count("processes") > 0;
  if (vm.count("lcores")) {
    int lcores;
    if (!ParseLcores(vm["lcores"].as<std::string>(), &lcores)) return 2;
    opt.live_lcores = vm["lcores"].as<std::string>();
  }
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return Fail("cannot find the rocefab binary (/proc/self/exe)");
  self[n] = '\0';
  opt.self = self;
  auto r = RunCrosscheck(vm["scenario"].as<std::string>(), opt);
  if (!r.ok()) return Fail(r.message());
  return r.value();
}

}  // namespace

// glibc's malloc backs its heap with transparent 2 MiB pages only when the tunable
// glibc.malloc.hugetlb=1 is set (glibc >= 2.35), and tunables are read at process start. A sim
// keeps ~150 MiB of node state (queue pairs, flow records, tables) on that heap; with 4 KiB pages
// most accesses to it miss the TLB (the anchor trace runs ~8 % faster with the tunable). So
// `rocefab sim` re-executes itself once with the tunable added. ROCEFAB_NO_THP=1 turns this off.
void ReexecWithHugeMallocPages(char** argv) {
  const char* tun = std::getenv("GLIBC_TUNABLES");
  const std::string current = tun != nullptr ? tun : "";
  // Once only (ROCEFAB_REEXECED): glibc drops tunables for setuid/capability binaries
  // (AT_SECURE), and a re-exec that lost the tunable must not loop.
  if (std::getenv("ROCEFAB_NO_THP") != nullptr || std::getenv("ROCEFAB_REEXECED") != nullptr ||
      getauxval(AT_SECURE) != 0 || current.find("glibc.malloc.hugetlb") != std::string::npos) {
    return;
  }
  // Started through the dynamic loader (`ld.so ./rocefab sim ...`): /proc/self/exe is the
  // loader, which would not get its own arguments back; skip.
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  const std::string exe(self);
  const std::string base = exe.substr(exe.find_last_of('/') + 1);
  if (base.rfind("ld-linux", 0) == 0 || base.rfind("ld.so", 0) == 0) return;
  const std::string next =
      current.empty() ? "glibc.malloc.hugetlb=1" : current + ":glibc.malloc.hugetlb=1";
  if (setenv("GLIBC_TUNABLES", next.c_str(), 1) != 0) return;
  setenv("ROCEFAB_REEXECED", "1", 1);
  execv(exe.c_str(), argv);
  unsetenv("ROCEFAB_REEXECED");
  // execv returned: carry on without the tunable (and do not pass it to child processes).
  if (tun != nullptr) {
    setenv("GLIBC_TUNABLES", current.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "version") {
    std::printf("rocefab %s (%s)\n", ROCEFAB_VERSION, ROCEFAB_GIT_COMMIT);
    return 0;
  }
  if (cmd == "sim") ReexecWithHugeMallocPages(argv);
  try {
    if (cmd == "topo") return TopoCmd(argc - 2, argv + 2);
    if (cmd == "sim") return SimCmd(argc - 1, argv + 1);
    if (cmd == "live") return LiveCmd(argc - 1, argv + 1);
    if (cmd == "crosscheck") return CrosscheckCmd(argc - 1, argv + 1);
    if (cmd == "check") return CheckCmd(argc - 1, argv + 1);
    if (cmd == "export-sonic") return ExportSonicCmd(argc - 1, argv + 1);
    if (cmd == "report") return ReportCmd(argc - 1, argv + 1);
    if (cmd == "diff") return DiffCmd(argc - 1, argv + 1);
    if (cmd == "inspect") return InspectCmd(argc - 1, argv + 1);
    if (cmd == "exec") return ExecCmd(argc - 1, argv + 1);
    if (cmd == "destroy") return DestroyCmd(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  return Fail("unknown command '" + cmd + "'\n" + kUsage);
}
