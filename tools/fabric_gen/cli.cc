#include "tools/fabric_gen/cli.h"

#include <charconv>
#include <functional>
#include <map>
#include <set>

namespace ibsm::tools {

using fabric::makeError;
using fabric::Result;

namespace {

std::optional<uint64_t> number(std::string_view text, uint64_t max) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > max) return std::nullopt;
  return v;
}

// "4,3" -> {4, 3}
std::optional<std::vector<unsigned>> numberList(std::string_view text) {
  std::vector<unsigned> out;
  while (true) {
    size_t comma = text.find(',');
    auto v = number(text.substr(0, comma), 1u << 20);
    if (!v) return std::nullopt;
    out.push_back(static_cast<unsigned>(*v));
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

std::string usage() {
  return R"(Usage: ibsm-fabric SHAPE [OPTIONS] [-o FILE]
       ibsm-fabric --compare EXPECTED ACTUAL
       ibsm-fabric --ibsim-flags FILE

Generates an InfiniBand fabric and writes it in ibnetdiscover format (stdout, or FILE written atomically), which
ibsim loads as a net file: ibsim -s -n $(ibsm-fabric --ibsim-flags FILE) FILE. The same options always give the
same fabric, GUIDs included. A summary line goes to stderr.

Shapes (exactly one):
  --kary-ntree K,N        k-ary n-tree: K^N hosts, N levels of K^(N-1) switches with 2K ports
                          (4,3: 64 hosts, 48 switches; 12,3: 1728 hosts, 432 switches)
  --fat-tree LEVELS       2- or 3-level fat tree of --radix-port switches:
    --radix R             switch ports (36, 40, 64, ...; default 36)
    --hosts-per-leaf H    host ports per leaf (default R/2; more oversubscribes)
    --leaves N            leaves (2 levels; default R/P) or leaves per pod (3 levels; default R/2/P)
    --spines N            spines (2 levels) or spines per pod (3 levels); default leaf up ports / P
    --pods N              3 levels: pods (default R/P)
    --cores N             3 levels: cores, a multiple of the spines per pod (default: fill the spines' up ports)
    --hosts N             at most N hosts, filling leaves in order (partially populated leaves)
                          (2 levels, radix 36: 648 hosts; 3 levels, radix 36: 11664 hosts)
  --mesh SWITCHES         random connected mesh (a random spanning tree plus random links):
    --degree D            switch neighbours per switch (required)
  --torus X,Y[,Z]         2D or 3D torus with wrap-around links
  --dragonfly A,H         dragonfly: A*H+1 groups of A routers, all-to-all inside a group, H global links per
                          router, one global link between every two groups (4,2: 9 groups, 36 switches)
  --hypercube D           D-dimensional hypercube of 2^D switches (5: 32 switches)

Options:
  --hosts-per-switch H    mesh, torus, dragonfly, hypercube: hosts per switch (default 1)
  --parallel P            fat tree, mesh, torus: links between each linked switch pair (default 1)
  --hca-ports 1|2         2: each host's port 2 goes to the paired edge switch (edge switches pair up 0+1,
                          2+3, ... and share their host ports, so there are half as many hosts)
  --remove-switches N     remove N random switches that have no hosts, keeping the fabric connected
  --remove-links N        then remove N random switch-to-switch links, keeping the fabric connected
  --allow-disconnect      let the removals disconnect the fabric
  --seed S                seed for --mesh and the removals (default 1)
  --guid-base G           add G to every GUID (default 0: switches from 0x200000, CAs from 0x100000 as in ibsim)
  --link WxS              width and speed of every link (default 4xQDR; ibsim 0.10 knows SDR..HDR)
  -o, --output FILE       write to FILE instead of stdout
  -q, --quiet             no summary line
  --compare A B           compare two topology files (by GUID: nodes, ports, links, widths, LIDs);
                          exit 0 if equal, 1 with the differences if not
  --ibsim-flags FILE      print the ibsim -N/-S/-P options FILE needs beyond ibsim's defaults
  -h, --help              this text

Exit status: 0 success, 1 generation/comparison failure, 2 bad arguments or unreadable files.
)";
}

Result<CliRequest> parseCommandLine(const std::vector<std::string>& args) {
  CliRequest req;
  FabricSpec& s = req.spec;
  std::set<std::string> given;
  std::vector<std::string> shapes;
  using Setter = std::function<Result<void>(std::string_view)>;
  auto count = [](unsigned& field, uint64_t min, uint64_t max) -> Setter {
    return [&field, min, max](std::string_view v) -> Result<void> {
      auto n = number(v, max);
      if (!n || *n < min)
        return makeError("expects a number " + std::to_string(min) + ".." + std::to_string(max));
      field = static_cast<unsigned>(*n);
      return {};
    };
  };
  const std::map<std::string, Setter> withValue = {
      {"--kary-ntree",
       [&](std::string_view v) -> Result<void> {
         auto l = numberList(v);
         if (!l || l->size() != 2) return makeError("expects K,N");
         s.shape = Shape::kKaryNTree;
         s.k = (*l)[0];
         s.n = (*l)[1];
         return {};
       }},
      {"--fat-tree",
       [&](std::string_view v) -> Result<void> {
         s.shape = Shape::kFatTree;
         return count(s.levels, 2, 3)(v);
       }},
      {"--mesh",
       [&](std::string_view v) -> Result<void> {
         s.shape = Shape::kMesh;
         return count(s.switches, 1, 200000)(v);
       }},
      {"--torus",
       [&](std::string_view v) -> Result<void> {
         auto l = numberList(v);
         if (!l || (l->size() != 2 && l->size() != 3)) return makeError("expects X,Y or X,Y,Z");
         s.shape = Shape::kTorus;
         s.dims = *l;
         return {};
       }},
      {"--dragonfly",
       [&](std::string_view v) -> Result<void> {
         auto l = numberList(v);
         if (!l || l->size() != 2) return makeError("expects A,H");
         s.shape = Shape::kDragonfly;
         s.dragonflyA = (*l)[0];
         s.dragonflyH = (*l)[1];
         return {};
       }},
      {"--hypercube",
       [&](std::string_view v) -> Result<void> {
         s.shape = Shape::kHypercube;
         return count(s.hypercubeD, 1, 17)(v);
       }},
      {"--radix", count(s.radix, 4, 254)},
      {"--hosts-per-leaf", count(s.hostsPerLeaf, 1, 253)},
      {"--leaves", count(s.leaves, 1, 254)},
      {"--spines", count(s.spines, 1, 254)},
      {"--pods", count(s.pods, 1, 254)},
      {"--cores", count(s.cores, 1, 64516)},
      {"--hosts", count(s.hosts, 1, 200000)},
      {"--degree", count(s.degree, 1, 253)},
      {"--hosts-per-switch", count(s.hostsPerSwitch, 0, 253)},
      {"--parallel", count(s.parallel, 1, 254)},
      {"--hca-ports", count(s.hcaPorts, 1, 2)},
      {"--remove-switches", count(s.removeSwitches, 0, 200000)},
      {"--remove-links", count(s.removeLinks, 0, 10000000)},
      {"--seed",
       [&](std::string_view v) -> Result<void> {
         auto n = number(v, UINT64_MAX);
         if (!n) return makeError("expects a number");
         s.seed = *n;
         return {};
       }},
      {"--guid-base",
       [&](std::string_view v) -> Result<void> {
         auto n = number(v, UINT64_MAX);
         if (!n) return makeError("expects a number (0x... for hex)");
         s.guidBase = *n;
         return {};
       }},
      {"--link",
       [&](std::string_view v) -> Result<void> {
         s.link = std::string(v);
         return {};
       }},
      {"--output",
       [&](std::string_view v) -> Result<void> {
         if (v.empty()) return makeError("expects a file name");
         req.output = std::string(v);
         return {};
       }},
      {"--ibsim-flags",
       [&](std::string_view v) -> Result<void> {
         req.mode = CliRequest::Mode::kIbsimFlags;
         req.files = {std::string(v)};
         return {};
       }},
  };

  for (size_t i = 0; i < args.size(); ++i) {
    std::string opt = args[i];
    std::optional<std::string> value;
    if (opt == "-h" || opt == "--help") {
      req.mode = CliRequest::Mode::kHelp;
      return req;
    }
    if (opt == "-o") opt = "--output";
    if (opt == "-q") opt = "--quiet";
    if (size_t eq = opt.find('='); opt.starts_with("--") && eq != std::string::npos) {
      value = opt.substr(eq + 1);
      opt.resize(eq);
    }
    if (!given.insert(opt).second) return makeError(opt + " given twice");
    if (opt == "--quiet" || opt == "--allow-disconnect") {
      if (value) return makeError(opt + " takes no value");
      (opt == "--quiet" ? req.quiet : s.allowDisconnect) = true;
      continue;
    }
    if (opt == "--compare") {
      if (i + 2 >= args.size()) return makeError("--compare expects two files");
      req.mode = CliRequest::Mode::kCompare;
      req.files = {args[i + 1], args[i + 2]};
      i += 2;
      continue;
    }
    auto it = withValue.find(opt);
    if (it == withValue.end()) return makeError("unknown option " + opt + " (see --help)");
    if (!value) {
      if (i + 1 >= args.size()) return makeError(opt + " expects a value");
      value = args[++i];
    }
    if (auto r = it->second(*value); !r) return makeError(opt + " " + *value + ": " + r.error().message);
    if (opt == "--kary-ntree" || opt == "--fat-tree" || opt == "--mesh" || opt == "--torus" ||
        opt == "--dragonfly" || opt == "--hypercube")
      shapes.push_back(opt);
  }

  if (req.mode != CliRequest::Mode::kGenerate) {
    if (given.size() != 1) return makeError("--compare and --ibsim-flags take no other options");
    return req;
  }
  if (shapes.size() != 1)
    return makeError(shapes.empty() ? "no shape given (see --help)" : "give only one shape");
  // Options that mean nothing for the chosen shape are refused rather than silently ignored.
  static const std::map<std::string, std::set<std::string>> kOnlyFor = {
      {"--radix", {"--fat-tree"}},
      {"--hosts-per-leaf", {"--fat-tree"}},
      {"--leaves", {"--fat-tree"}},
      {"--spines", {"--fat-tree"}},
      {"--pods", {"--fat-tree"}},
      {"--cores", {"--fat-tree"}},
      {"--hosts", {"--fat-tree"}},
      {"--degree", {"--mesh"}},
      {"--hosts-per-switch", {"--mesh", "--torus", "--dragonfly", "--hypercube"}},
      {"--parallel", {"--fat-tree", "--mesh", "--torus"}},
  };
  for (const auto& [opt, shapesOk] : kOnlyFor)
    if (given.count(opt) && !shapesOk.count(shapes[0]))
      return makeError(opt + " does not apply to " + shapes[0]);
  if (s.shape == Shape::kFatTree && s.levels == 2 && (given.count("--pods") || given.count("--cores")))
    return makeError("--pods and --cores need --fat-tree 3");
  if (s.shape == Shape::kMesh && !given.count("--degree") && s.switches > 1)
    return makeError("--mesh needs --degree");
  if (auto r = validateSpec(s); !r) return r.error();
  return req;
}

}  // namespace ibsm::tools
