// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "gpuhal/config.hpp"

#include <stdlib.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "gpuhal/error.hpp"

extern char **environ;

namespace gpuhal {
namespace {

// "package.module:Class": Python identifiers around one colon.
bool is_python_plugin_name(const std::string &v) {
  const size_t colon = v.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == v.size() || v.find(':', colon + 1) != std::string::npos)
    return false;
  auto identifier_char = [](char ch, bool first) {
    return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (!first && ch >= '0' && ch <= '9');
  };
  bool first = true;
  for (size_t i = 0; i < v.size(); ++i) {
    const char ch = v[i];
    if (ch == '.' || ch == ':') {
      if (first) return false;  // an empty name part
      first = true;
      continue;
    }
    if (!identifier_char(ch, first)) return false;
    first = false;
  }
  return !first && v.find('.', colon) == std::string::npos;  // the class is one name
}


const char *const kPathVariables[] = {"GPUHAL_PLUGIN_PATH", "GPUHAL_VENDORS_PATH", "GPUHAL_CUDA_DRIVER", "GPUHAL_HSA_RUNTIME",
                                      "GPUHAL_MEMORY_MANAGER", "GPUHAL_HOST_CXX", "GPUHAL_KERNEL_CACHE",
                                      "GPUHAL_NVRTC", "GPUHAL_AMD_COMGR", "GPUHAL_TRACE_FILE"};

[[noreturn]] void bad(const std::string &name, const std::string &value, const std::string &why) {
  throw Error(Status::ERROR_INVALID_CONFIG, name + "='" + value + "': " + why);
}

LogLevel parse_log_level(const std::string &v) {
  if (v == "error") return LogLevel::Error;
  if (v == "warn" || v == "warning") return LogLevel::Warn;
  if (v == "info") return LogLevel::Info;
  if (v == "debug") return LogLevel::Debug;
  bad("GPUHAL_LOG", v, "expected one of error, warn, info, debug");
}

// GPUHAL_LAYERS: names of the layers (core/layers), comma-separated, each
// once; the first is the one the core calls.
std::vector<std::string> parse_layers(const std::string &v) {
  static const char *const kNames[] = {"validation", "trace", "leak", "fault"};
  std::vector<std::string> layers;
  size_t start = 0;
  while (start <= v.size()) {
    size_t end = v.find(',', start);
    if (end == std::string::npos) end = v.size();
    const std::string name = v.substr(start, end - start);
    if (std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames))
      bad("GPUHAL_LAYERS", v, "'" + name + "' is not a layer (expected a comma-separated list of validation, trace, leak, fault)");
    if (std::find(layers.begin(), layers.end(), name) != layers.end())
      bad("GPUHAL_LAYERS", v, "'" + name + "' is named twice");
    layers.push_back(name);
    start = end + 1;
  }
  return layers;
}

uint64_t parse_count(const std::string &name, const std::string &v) {
  bool digits = !v.empty() && v.size() <= 18;
  for (char ch : v) digits = digits && ch >= '0' && ch <= '9';
  if (!digits) bad(name, v, "expected a non-negative integer");
  return std::stoull(v);
}

double parse_ratio(const std::string &name, const std::string &v) {
  size_t used = 0;
  double r = -1;
  try {
    r = std::stod(v, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != v.size() || v.empty() || !(r >= 0.0 && r <= 1.0))
    bad(name, v, "expected a number from 0 to 1 (a fraction of device memory)");
  return r;
}

// Every GPUHAL_* variable gpuhal's core and in-tree plugins read (docs/
// user-guide.md lists them); a name outside it and outside the prefixes of
// the project's own scripts and tests gets a note (most often a typo).
const char *const kKnownVariables[] = {
    "GPUHAL_AMD_COMGR",          "GPUHAL_BACKEND",          "GPUHAL_CUDA_DRIVER",
    "GPUHAL_CUDA_POOL_RELEASE_THRESHOLD", "GPUHAL_HOST_CXX", "GPUHAL_HOST_DEVICES",
    "GPUHAL_HOST_FIBER_STACK",   "GPUHAL_HOST_HUGE_PAGES",  "GPUHAL_HOST_MAPPING_CACHE",
    "GPUHAL_HOST_MEMORY_LIMIT",  "GPUHAL_HOST_THREADS",     "GPUHAL_HOST_WORK_ITEM_LOOPS",
    "GPUHAL_HSA_RUNTIME",        "GPUHAL_KERNEL_CACHE",     "GPUHAL_KERNEL_CACHE_MAX",
    "GPUHAL_LOG",                "GPUHAL_MAX_PENDING_DEALLOCS_COUNT", "GPUHAL_MAX_PENDING_DEALLOCS_RATIO",
    "GPUHAL_MEMORY_MANAGER",     "GPUHAL_NVRTC",            "GPUHAL_PLUGIN_PATH",
    "GPUHAL_VENDORS_PATH",       "GPUHAL_FAULT",            "GPUHAL_LAYERS",
    "GPUHAL_TRACE_FILE",         "GPUHAL_LEAK_CHECK",       "GPUHAL_REQUIRE",
};
// Prefixes of variables the project's scripts, tests and benchmarks set
// (never read by the library): not noted.
const char *const kToolPrefixes[] = {"GPUHAL_TEST_", "GPUHAL_FUZZ", "GPUHAL_BENCH_", "GPUHAL_BUILD_",
                                     "GPUHAL_NUMBA_ADAPTER", "GPUHAL_SANITIZE", "GPUHAL_RECORDING_",
                                     "GPUHAL_NUMPY_PYTHON", "GPUHAL_CHECK_TIMEOUT", "GPUHAL_STEP_TIMEOUT",
                                     "GPUHAL_SOURCE_COMMIT", "GPUHAL_DEVELOPER", "GPUHAL_WERROR"};

size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The note for a GPUHAL_* variable gpuhal does not read, or "" for a known one.
std::string unknown_variable_note(const std::string &name) {
  if (std::find(std::begin(kKnownVariables), std::end(kKnownVariables), name) != std::end(kKnownVariables)) return "";
  for (const char *prefix : kToolPrefixes)
    if (name.rfind(prefix, 0) == 0) return "";
  std::string nearest;
  size_t best = 0;
  for (const char *known : kKnownVariables) {
    const size_t d = edit_distance(name, known);
    if (nearest.empty() || d < best) {
      nearest = known;
      best = d;
    }
  }
  std::string note = name + " is not a gpuhal setting and is ignored";
  if (best <= 3) note += " (did you mean " + nearest + "?)";
  return note;
}

// GPUHAL_BACKEND: a name, or an absolute plugin path ("" in an elevated
// process, which ignores paths).
std::string parse_backend(const std::string &v, bool elevated) {
  if (v.find('/') == std::string::npos) return v;
  if (v[0] != '/') bad("GPUHAL_BACKEND", v, "a plugin path must be absolute (plugins are never loaded from relative paths)");
  return elevated ? std::string() : v;
}

// GPUHAL_REQUIRE: capability names, comma-separated (spaces allowed), each
// once.
std::vector<Capability> parse_required(const std::string &v) {
  std::vector<Capability> out;
  std::string word;
  for (size_t i = 0; i <= v.size(); ++i) {
    const char ch = i < v.size() ? v[i] : ',';
    if (ch != ',') {
      if (ch != ' ') word += ch;
      continue;
    }
    if (word.empty()) continue;
    const auto cap = capability_named(word);
    if (!cap) bad("GPUHAL_REQUIRE", v, "'" + word + "' is not a capability (" + capability_names() + ")");
    if (std::find(out.begin(), out.end(), *cap) == out.end()) out.push_back(*cap);
    word.clear();
  }
  return out;
}

// GPUHAL_MEMORY_MANAGER: default, pool, an absolute path ("" in an elevated
// process, noted with the other path variables), or module:Class, a Numba
// EMM plugin the Python package installs on its contexts (the core's own
// manager is then the default: "").
std::string parse_memory_manager(const std::string &v, bool elevated) {
  if (v == "default" || v == "pool") return v;
  if (is_python_plugin_name(v)) return "";
  if (v[0] != '/')
    bad("GPUHAL_MEMORY_MANAGER", v,
        "expected default, pool, an absolute path to a memory-manager shared object, or module:Class (a Python "
        "EMM plugin)");
  return elevated ? std::string() : v;
}

}  // namespace

bool is_path_variable(const std::string &name) {
  return std::find(std::begin(kPathVariables), std::end(kPathVariables), name) != std::end(kPathVariables);
}

std::optional<std::string> Config::option(const std::string &name) const {
  for (const auto &kv : plugin_options)
    if (kv.first == name) return kv.second;
  return std::nullopt;
}

namespace {

// Sets (or replaces) `name` among the options handed to the plugin.
void store_option(Config &c, const std::string &name, const std::string &value) {
  for (auto &kv : c.plugin_options)
    if (kv.first == name) {
      kv.second = value;
      return;
    }
  c.plugin_options.emplace_back(name, value);
}

// The variables Config::parse reads into a field of its own, each with the
// copy of that field from a parse of the variable alone.
struct CoreVariable {
  const char *name;
  void (*take)(Config &to, Config &&from);
};
const CoreVariable kCoreVariables[] = {
    {"GPUHAL_BACKEND", [](Config &to, Config &&from) { to.backend = std::move(from.backend); }},
    {"GPUHAL_REQUIRE", [](Config &to, Config &&from) { to.required = std::move(from.required); }},
    {"GPUHAL_PLUGIN_PATH", [](Config &to, Config &&from) { to.plugin_path = std::move(from.plugin_path); }},
    {"GPUHAL_VENDORS_PATH", [](Config &to, Config &&from) { to.vendor_dirs = std::move(from.vendor_dirs); }},
    {"GPUHAL_LOG", [](Config &to, Config &&from) { to.log_level = from.log_level; }},
    {"GPUHAL_MAX_PENDING_DEALLOCS_COUNT",
     [](Config &to, Config &&from) { to.max_pending_deallocs_count = from.max_pending_deallocs_count; }},
    {"GPUHAL_MAX_PENDING_DEALLOCS_RATIO",
     [](Config &to, Config &&from) { to.max_pending_deallocs_ratio = from.max_pending_deallocs_ratio; }},
    {"GPUHAL_MEMORY_MANAGER", [](Config &to, Config &&from) { to.memory_manager = std::move(from.memory_manager); }},
    {"GPUHAL_LAYERS", [](Config &to, Config &&from) { to.layers = std::move(from.layers); }},
    {"GPUHAL_TRACE_FILE", [](Config &to, Config &&from) { to.trace_file = std::move(from.trace_file); }},
    {"GPUHAL_LEAK_CHECK", [](Config &to, Config &&from) { to.leak_check_fail = from.leak_check_fail; }},
};

}  // namespace

Config &Config::set_option(const std::string &name, const std::string &value) {
  for (const CoreVariable &v : kCoreVariables) {
    if (name != v.name) continue;
    // Parsed as parse() reads the environment, as a program's own choice
    // (not elevated); throws ERROR_INVALID_CONFIG before anything changes.
    Config parsed = parse({}, [&](const std::string &n) -> std::optional<std::string> {
      if (n == name) return value;
      return std::nullopt;
    }, false);
    notes.insert(notes.end(), parsed.notes.begin(), parsed.notes.end());
    v.take(*this, std::move(parsed));
    break;
  }
  store_option(*this, name, value);
  return *this;
}

Config Config::parse(const std::vector<std::string> &names, const Lookup &lookup, bool elevated) {
  Config c;
  if (auto v = lookup("GPUHAL_LOG"); v && !v->empty()) c.log_level = parse_log_level(*v);

  if (auto v = lookup("GPUHAL_MAX_PENDING_DEALLOCS_COUNT"); v)
    c.max_pending_deallocs_count = parse_count("GPUHAL_MAX_PENDING_DEALLOCS_COUNT", *v);
  if (auto v = lookup("GPUHAL_MAX_PENDING_DEALLOCS_RATIO"); v)
    c.max_pending_deallocs_ratio = parse_ratio("GPUHAL_MAX_PENDING_DEALLOCS_RATIO", *v);

  if (auto v = lookup("GPUHAL_LAYERS"); v && !v->empty()) c.layers = parse_layers(*v);
  if (auto v = lookup("GPUHAL_LEAK_CHECK"); v && !v->empty()) {
    if (*v != "report" && *v != "fail") bad("GPUHAL_LEAK_CHECK", *v, "expected report or fail");
    c.leak_check_fail = *v == "fail";
  }
  // A path: in an elevated process ignored (noted with the other path
  // variables below), and the trace goes to the log.
  if (auto v = lookup("GPUHAL_TRACE_FILE"); v && !v->empty() && !elevated) c.trace_file = *v;

  if (auto v = lookup("GPUHAL_BACKEND"); v && !v->empty()) {
    c.backend = parse_backend(*v, elevated);
    if (c.backend.empty()) c.notes.push_back("GPUHAL_BACKEND is a path and is ignored in a setuid/elevated process");
  }

  if (auto v = lookup("GPUHAL_REQUIRE"); v && !v->empty()) c.required = parse_required(*v);

  if (auto v = lookup("GPUHAL_MEMORY_MANAGER"); v && !v->empty()) c.memory_manager = parse_memory_manager(*v, elevated);

  // Colon-separated lists of absolute directories; relative entries are
  // ignored (noted), and the whole variable in an elevated process.
  auto directories = [&](const char *name, std::vector<std::string> *out) {
    auto v = lookup(name);
    if (!v || v->empty()) return false;
    if (elevated) {
      c.notes.push_back(std::string(name) + " is ignored in a setuid/elevated process");
      return false;
    }
    size_t start = 0;
    while (start <= v->size()) {
      size_t end = v->find(':', start);
      if (end == std::string::npos) end = v->size();
      std::string dir = v->substr(start, end - start);
      if (!dir.empty()) {
        if (dir[0] == '/')
          out->push_back(dir);
        else
          c.notes.push_back(std::string(name) + " entry '" + dir + "' is not absolute and is ignored");
      }
      start = end + 1;
    }
    return true;
  };
  directories("GPUHAL_PLUGIN_PATH", &c.plugin_path);
  std::vector<std::string> vendors;
  if (directories("GPUHAL_VENDORS_PATH", &vendors)) c.vendor_dirs = vendors;

  for (const auto &name : names) {
    if (name.rfind("GPUHAL_", 0) != 0) continue;
    auto v = lookup(name);
    if (!v) continue;
    if (const std::string note = unknown_variable_note(name); !note.empty()) c.notes.push_back(note);
    if (elevated && is_path_variable(name)) {
      if (name != "GPUHAL_PLUGIN_PATH" && name != "GPUHAL_VENDORS_PATH")
        c.notes.push_back(name + " is ignored in a setuid/elevated process");
      continue;
    }
    if (name == "GPUHAL_BACKEND" && elevated && c.backend.empty()) continue;
    store_option(c, name, *v);  // read into the fields above already
  }
  return c;
}

Config Config::from_environment() {
  std::vector<std::string> names;
  for (char **e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos && entry.rfind("GPUHAL_", 0) == 0) names.push_back(entry.substr(0, eq));
  }
  // secure_getenv returns NULL in AT_SECURE processes; together with the
  // explicit `elevated` flag this drops path-bearing variables there.
  const bool elevated = getauxval(AT_SECURE) != 0;
  Config c = parse(
      names,
      [](const std::string &name) -> std::optional<std::string> {
        const char *v = secure_getenv(name.c_str());
        if (!v) return std::nullopt;
        return std::string(v);
      },
      elevated);
  if (elevated) {
    // secure_getenv hides these values; say that they were there and ignored.
    for (const auto &name : names)
      if (is_path_variable(name) || name == "GPUHAL_BACKEND") {
        const char *raw = std::getenv(name.c_str());
        if (name == "GPUHAL_BACKEND" && raw && !std::strchr(raw, '/')) continue;  // a name, not a path
        c.notes.push_back(name + " is ignored in a setuid/elevated process");
      }
  }
  return c;
}

}  // namespace gpuhal
