// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal-conform: runs gpuhal's conformance suite (tests/conformance/) over
// one plugin -- the same checks CI runs over every plugin of the build, so
// a plugin author or a machine with a GPU runs exactly what CI runs.
//
// Each check runs in a process of its own with a time limit: a check that
// crashes or hangs the plugin fails with its name, and the others still run.
// A check whose optional feature the plugin does not claim is reported
// unsupported; --skip leaves checks out on request (reported skipped).
//
// Exit status: 0 when nothing failed, 1 when a check failed or the plugin
// could not be loaded, 2 on bad usage.
#include <fnmatch.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "json_text.hpp"
#include "runner.hpp"
#include "tool_arguments.hpp"

namespace {

using namespace gpuhal;
using namespace gpuhal::conformance;

const char kUsage[] =
    "usage: gpuhal-conform [OPTIONS] [PLUGIN]\n"
    "Runs gpuhal's conformance checks over PLUGIN: a backend name (host, cuda, hsa) or the\n"
    "absolute path of a plugin; without it, the backend GPUHAL_BACKEND names (else host).\n"
    "Settings (GPUHAL_CUDA_DRIVER, GPUHAL_HOST_DEVICES, ...) come from the environment.\n"
    "\n"
    "  --list              print every check and the contract it checks, then exit\n"
    "  --only PATTERN      run only the checks PATTERN matches (repeatable)\n"
    "  --skip PATTERN      leave out the checks PATTERN matches (repeatable; reported skipped)\n"
    "  --json              one JSON object on stdout instead of text\n"
    "  --timeout SECONDS   time limit of each check (default 120; 0: none); a check over it fails\n"
    "  --no-fork           run the checks in this process (for a debugger): no time limit, and a\n"
    "                      crash ends the run\n"
    "  --junit FILE        also write the results as JUnit XML to FILE (for CI test reports)\n"
    "  --layers LIST       run every call through these layers (GPUHAL_LAYERS: validation, trace,\n"
    "                      leak, fault; docs/layers.md): --layers validation shows a plugin's\n"
    "                      author each misuse the suite's calls make of it, and what it answers wrong\n"
    "  --version           print the version of gpuhal and of its plugin ABI, then exit\n"
    "  --help              this text\n"
    "\n"
    "PATTERN is a shell pattern over check names (\"ipc.*\", \"*.zero_size\"); a name without a\n"
    "dot names every check of that object (\"kernels\").\n"
    "Exit status: 0 when no check failed, 1 when one failed or the plugin did not load, 2 on\n"
    "bad usage.\n";

bool matches(const std::string &pattern, const std::string &name) {
  if (pattern.find('.') == std::string::npos && pattern.find_first_of("*?[") == std::string::npos)
    return name.compare(0, pattern.size() + 1, pattern + ".") == 0;
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

bool any_match(const std::vector<std::string> &patterns, const std::string &name) {
  for (const auto &p : patterns)
    if (matches(p, name)) return true;
  return false;
}

using gpuhal::support::json_string;

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// XML's five escapes, and no control characters but tab and newline.
std::string xml_text(const std::string &s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') out += ' ';
        else out += ch;
    }
  }
  return out;
}

// The results as JUnit XML (one testsuite; a check's object is its
// classname): failures are <failure>, unsupported and skipped checks
// <skipped> with their reason. False when the file cannot be written.
bool write_junit(const std::string &path, const std::string &plugin, const std::vector<Result> &results,
                 const std::vector<const char *> &contracts) {
  int failed = 0, skipped = 0;
  double total = 0;
  for (const auto &r : results) {
    failed += r.outcome == Outcome::Fail;
    skipped += r.outcome == Outcome::Unsupported || r.outcome == Outcome::Skipped;
    total += r.seconds;
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  char head[256];
  std::snprintf(head, sizeof head, "<testsuite name=\"gpuhal-conform\" tests=\"%zu\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\">\n",
                results.size(), failed, skipped, total);
  x += head;
  x += "  <properties><property name=\"plugin\" value=\"" + xml_text(plugin) + "\"/></properties>\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result &r = results[i];
    const size_t dot = r.name.find('.');
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", r.seconds);
    x += "  <testcase classname=\"" + xml_text(dot == std::string::npos ? r.name : r.name.substr(0, dot)) +
         "\" name=\"" + xml_text(r.name) + "\" time=\"" + secs + "\">";
    if (r.outcome == Outcome::Fail)
      x += "<failure message=\"" + xml_text(r.detail) + "\">" + xml_text(contracts[i]) + "</failure>";
    else if (r.outcome == Outcome::Unsupported || r.outcome == Outcome::Skipped)
      x += "<skipped message=\"" + xml_text(std::string(r.outcome == Outcome::Unsupported ? "unsupported: " : "") +
                                             r.detail) + "\"/>";
    x += "</testcase>\n";
  }
  x += "</testsuite>\n";
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  const bool ok = std::fwrite(x.data(), 1, x.size(), f) == x.size();
  return std::fclose(f) == 0 && ok;
}

// The load check, then every check --only and --skip leave (a skipped
// one as SKIPPED), each with its contract; a line per result as it ends
// unless the output is JSON.
void run_all(const RunOptions &options, const std::vector<std::string> &only, const std::vector<std::string> &skip,
             bool json, std::vector<Result> *results_out, std::vector<const char *> *contracts_out) {
  std::vector<Result> &results = *results_out;
  std::vector<const char *> &contracts = *contracts_out;
  results.push_back(run_load(options));
  contracts.push_back("the plugin loads, negotiates the ABI and reports a device");
  if (results.back().outcome == Outcome::Pass) {
    for (const auto &c : all_checks()) {
      if (!only.empty() && !any_match(only, c.name)) continue;
      contracts.push_back(c.contract);
      if (any_match(skip, c.name)) {
        Result r;
        r.name = c.name;
        r.outcome = Outcome::Skipped;
        r.detail = "skipped by --skip";
        results.push_back(r);
        continue;
      }
      results.push_back(run_check(c, options));
      if (!json) {
        const Result &r = results.back();
        std::printf("%-12s %-48s %s\n",
                    r.outcome == Outcome::Pass          ? "PASS"
                    : r.outcome == Outcome::Fail        ? "FAIL"
                    : r.outcome == Outcome::Unsupported ? "UNSUPPORTED"
                                                        : "SKIPPED",
                    r.name.c_str(), r.detail.c_str());
        std::fflush(stdout);
      }
    }
  } else if (!json) {
    std::printf("%-12s %-48s %s\n", "FAIL", "load", results[0].detail.c_str());
  }
}

// The summary line (or the JSON document) for `results`.
void report(const std::string &backend, const std::vector<Result> &results, const std::vector<const char *> &contracts,
            const int counts[4], bool json) {
  if (json) {
    std::string s = "{\"schema_version\":1,\"plugin\":" + json_string(backend) + ",\"results\":[";
    for (size_t i = 0; i < results.size(); ++i) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.3f", results[i].seconds);
      s += std::string(i ? "," : "") + "{\"check\":" + json_string(results[i].name) + ",\"outcome\":\"" +
           to_string(results[i].outcome) + "\",\"contract\":" + json_string(contracts[i]) +
           ",\"detail\":" + json_string(results[i].detail) +
           (results[i].needs.empty() ? "" : ",\"needs\":" + json_string(results[i].needs)) + ",\"seconds\":" + secs +
           "}";
    }
    std::printf("%s],\"passed\":%d,\"failed\":%d,\"unsupported\":%d,\"skipped\":%d}\n", s.c_str(), counts[0],
                counts[1], counts[2], counts[3]);
  } else {
    std::printf("%s: %d passed, %d failed, %d unsupported", backend.c_str(), counts[0], counts[1], counts[2]);
    if (counts[3]) std::printf(", %d skipped", counts[3]);
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 5 && !std::strcmp(argv[1], "--ipc-peer")) return ipc_peer_main(argv[2], argv[3], argv[4]);
  bool json = false, list = false;
  std::string plugin, junit;
  std::vector<std::string> only, skip;
  RunOptions options;
  auto keep = [](std::string *to) {
    return [to](const std::string &v) {
      *to = v;
      return std::string();
    };
  };
  auto add = [](std::vector<std::string> *to) {
    return [to](const std::string &v) {
      to->push_back(v);
      return std::string();
    };
  };
  gpuhal::tools::Arguments args("gpuhal-conform", kUsage);
  args.flag("--json", [&] { json = true; })
      .flag("--list", [&] { list = true; })
      .flag("--no-fork", [&] { options.isolate = false; })
      .option("--only", add(&only))
      .option("--skip", add(&skip))
      .option("--junit", keep(&junit))
      // As GPUHAL_LAYERS (which it replaces): the checks' own processes
      // inherit it.
      .option("--layers",
              [](const std::string &v) {
                ::setenv("GPUHAL_LAYERS", v.c_str(), 1);
                return std::string();
              })
      .option("--timeout",
              [&](const std::string &v) {
                char *end = nullptr;
                options.timeout_s = std::strtod(v.c_str(), &end);
                return end && !*end && !v.empty() && options.timeout_s >= 0 ? std::string()
                                                                          : std::string("seconds (>= 0) are wanted");
              })
      .positional("plugin", 1, keep(&plugin));
  if (const auto status = args.parse(argc, argv)) return *status;
  // A pattern that matches nothing is a typo, for --skip as for --only:
  // a skip that skips nothing would let a check run that was meant not to.
  for (const auto *patterns : {&only, &skip})
    for (const auto &p : *patterns) {
      bool any = false;
      for (const auto &c : all_checks()) any |= matches(p, c.name);
      if (!any)
        return args.usage_error(std::string(patterns == &only ? "--only" : "--skip") + " '" + p +
                                "' matches no check (see --list)");
    }
  if (list) {
    for (const auto &c : all_checks()) std::printf("%-48s %s\n", c.name, c.contract);
    return 0;
  }

  try {
    options.config = Config::from_environment();
  } catch (const gpuhal::Error &e) {
    return args.usage_error(e.what());
  }
  if (!plugin.empty()) options.config.backend = plugin;
  if (options.config.backend.empty()) options.config.backend = "host";
  options.self_exe = self_exe();

  std::vector<Result> results;
  std::vector<const char *> contracts;
  run_all(options, only, skip, json, &results, &contracts);
  int counts[4] = {0, 0, 0, 0};
  for (const auto &r : results) ++counts[int(r.outcome)];
  report(options.config.backend, results, contracts, counts, json);
  if (!junit.empty() && !write_junit(junit, options.config.backend, results, contracts)) {
    std::fprintf(stderr, "gpuhal-conform: cannot write --junit '%s'\n", junit.c_str());
    return 2;
  }
  std::fflush(stdout);  // before any exit-time sanitizer report
  return counts[1] == 0 ? 0 : 1;
}
