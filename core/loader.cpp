// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <dirent.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>

#include "capability_rules.hpp"

namespace gpuhal::detail {
namespace {

const char *const kDefaultOrder[] = {"cuda", "hsa", "host"};

bool valid_backend_name(const std::string &name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

bool file_exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// ---- manifests (the vendors directories) -------------------------------------------
//
// Like the OpenCL ICD loader's /etc/OpenCL/vendors: each <name>.plugin file in
// a vendors directory names one installed plugin by its absolute path (the
// first line that is neither empty nor a # comment). <name> is the backend
// name it answers to. The first directory that has a manifest for a name
// wins. A manifest that names no absolute path is recorded as a problem.
struct Manifest {
  std::string file;     // the manifest
  std::string path;     // the plugin it names
  std::string problem;  // why it cannot be used ("" if it can)
};

// Manifests by backend name. Read once per selection or probe and passed
// down (every candidate list consults them).
using Manifests = std::map<std::string, Manifest>;

Manifests read_manifests(const Config &config) {
  Manifests out;
  const std::string suffix = ".plugin";
  for (const auto &dir : config.vendor_dirs) {
    DIR *d = ::opendir(dir.c_str());
    if (!d) continue;
    std::vector<std::string> files;
    while (const dirent *e = ::readdir(d)) files.emplace_back(e->d_name);
    ::closedir(d);
    std::sort(files.begin(), files.end());
    for (const auto &f : files) {
      if (f.size() <= suffix.size() || f.compare(f.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
      const std::string name = f.substr(0, f.size() - suffix.size());
      if (!valid_backend_name(name) || out.count(name)) continue;
      Manifest m;
      m.file = dir + "/" + f;
      struct stat st;
      std::ifstream in(m.file);
      if (::stat(m.file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !in) {
        m.problem = "manifest " + m.file + " is not a readable regular file";
      } else {
        std::string line;
        while (std::getline(in, line)) {
          const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
          if (b == std::string::npos || line[b] == '#') continue;
          m.path = line.substr(b, e - b + 1);
          break;
        }
        if (m.path.empty() || m.path[0] != '/')
          m.problem = "manifest " + m.file + " must name the plugin by an absolute path" +
                      (m.path.empty() ? std::string(" (it names none)") : " (it names '" + m.path + "')");
      }
      out[name] = m;
    }
  }
  return out;
}

// The default order: the GPU backends, the plugins the vendors directories
// list, then the host backend (the CPU, the fallback of last resort).
std::vector<std::string> default_order(const Manifests &manifests) {
  std::vector<std::string> names(std::begin(kDefaultOrder), std::end(kDefaultOrder));
  names.pop_back();  // host, put back last
  for (const auto &m : manifests)
    if (std::find(std::begin(kDefaultOrder), std::end(kDefaultOrder), m.first) == std::end(kDefaultOrder))
      names.push_back(m.first);
  names.emplace_back("host");
  return names;
}

struct Candidate {
  std::string path;
  std::string problem;  // a manifest that cannot be used
};

std::vector<Candidate> candidate_paths(const std::string &name, const Config &config, const Manifests &manifests) {
  const std::string file = "libgpuhal-" + name + ".so";
  std::vector<std::string> paths;
  for (const auto &dir : config.plugin_path) paths.push_back(dir + "/" + file);
  // Beside libgpuhal (a build tree, a wheel), then in its gpuhal/ (an
  // install: plugins have no SONAME, so they are kept out of the system's
  // library directory).
  const std::string own = core_library_directory();
  if (!own.empty()) {
    paths.push_back(own + "/" + file);
    paths.push_back(own + "/gpuhal/" + file);
  }
  std::vector<Candidate> out;
  if (auto m = manifests.find(name); m != manifests.end()) {
    if (m->second.problem.empty())
      paths.push_back(m->second.path);
    else
      out.push_back({m->second.file, m->second.problem});
  }
  // One file reached through two directories is tried once: a plugin whose
  // init failed is not initialised a second time.
  std::vector<std::string> seen;
  for (const auto &path : paths) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved)) {
      if (std::find(seen.begin(), seen.end(), resolved) != seen.end()) continue;
      seen.emplace_back(resolved);
    }
    out.push_back({path, ""});
  }
  out.push_back({file, ""});  // bare name: the system loader path
  return out;
}

// Tries the candidates of one backend name in order; the first that loads
// wins. Candidates that do not exist are recorded as not found.
std::unique_ptr<PluginLibrary> try_backend(const std::string &name, const Config &config,
                                           const Manifests &manifests, const Logger &logger,
                                           std::vector<LoadAttempt> &attempts) {
  for (const auto &candidate : candidate_paths(name, config, manifests)) {
    const std::string &path = candidate.path;
    LoadAttempt a;
    a.backend = name;
    if (!candidate.problem.empty()) {
      a.path = path;
      a.status = Status::ERROR_INVALID_CONFIG;
      a.message = candidate.problem;
      logger.write(LogLevel::Warn, "backend '" + name + "': " + candidate.problem);
      attempts.push_back(a);
      continue;
    }
    if (path.find('/') != std::string::npos && !file_exists(path)) {
      a.path = path;
      a.status = Status::ERROR_PLUGIN_NOT_FOUND;
      a.message = "no such file";
      logger.write(LogLevel::Debug, "plugin " + path + ": no such file");
      attempts.push_back(a);
      continue;
    }
    auto lib = PluginLibrary::open(path, config, logger, &a);
    if (path.find('/') == std::string::npos && !lib && a.status == Status::ERROR_PLUGIN_NOT_FOUND)
      a.message = "not on the system loader path (" + a.message + ")";
    attempts.push_back(a);
    if (lib) return lib;
    // A plugin that exists but is broken says why at the default level; one
    // whose vendor driver is not installed only at info level.
    if (a.status == Status::ERROR_DRIVER_NOT_LOADABLE)
      logger.write(LogLevel::Info, "backend '" + name + "' at " + path + " has no driver: " + a.message);
    else if (a.status != Status::ERROR_PLUGIN_NOT_FOUND)
      logger.write(LogLevel::Warn, "backend '" + name + "' at " + path + " is unusable: " + a.message);
  }
  return nullptr;
}

std::string summarize(const std::vector<LoadAttempt> &attempts) {
  std::string s;
  for (const auto &a : attempts)
    s += "\n  " + a.path + ": " + (a.status == Status::SUCCESS ? "" : to_string(a.status) + ": ") + a.message;
  return s;
}

// The most telling failure: a plugin that exists but is broken beats "not found".
Status worst(const std::vector<LoadAttempt> &attempts, Status fallback) {
  for (const auto &a : attempts)
    if (a.status != Status::SUCCESS && a.status != Status::ERROR_PLUGIN_NOT_FOUND) return a.status;
  return fallback;
}

// True when the loaded plugin lacks a capability the program requires
// (Config::required); the attempt and the info-level log then say which.
bool lacks_required(const PluginLibrary &lib, const Config &config, const Logger &logger, LoadAttempt &attempt) {
  const std::vector<Capability> missing = missing_capabilities(lib, config.required);
  if (missing.empty()) return false;
  attempt.status = Status::ERROR_NOT_SUPPORTED;
  attempt.message += "; skipped: lacks " + capability_list(missing) + ", which GPUHAL_REQUIRE names";
  logger.write(LogLevel::Info, "backend '" + lib.name() + "' lacks " + capability_list(missing) +
                                   ", which this program requires (GPUHAL_REQUIRE); trying the next");
  return true;
}

}  // namespace

std::vector<LoadAttempt> probe_backends(const Config &config, const Logger &logger) {
  const Manifests manifests = read_manifests(config);
  std::vector<std::string> names = default_order(manifests);
  if (!config.backend.empty() && std::find(names.begin(), names.end(), config.backend) == names.end())
    names.push_back(config.backend);
  std::vector<LoadAttempt> summary;
  for (const auto &name : names) {
    std::vector<LoadAttempt> attempts;
    if (name[0] == '/') {
      LoadAttempt a;
      a.backend = name;
      auto lib = PluginLibrary::open(name, config, logger, &a);
      if (lib && lib->device_count() == 0) {
        a.status = Status::ERROR_NO_DEVICE;
        a.message += "; no devices";
      }
      attempts.push_back(a);
    } else if (valid_backend_name(name)) {
      auto lib = try_backend(name, config, manifests, logger, attempts);  // unloaded at scope exit
      if (lib && lib->device_count() == 0) {
        attempts.back().status = Status::ERROR_NO_DEVICE;
        attempts.back().message += "; no devices";
      } else if (lib && config.backend.empty()) {
        lacks_required(*lib, config, Logger(LogLevel::Error), attempts.back());
      }
    } else {
      continue;
    }
    LoadAttempt best = attempts.back();
    for (const auto &a : attempts)
      if (a.status == Status::SUCCESS ||
          (a.status != Status::ERROR_PLUGIN_NOT_FOUND && best.status == Status::ERROR_PLUGIN_NOT_FOUND))
        best = a;
    if (best.status == Status::ERROR_PLUGIN_NOT_FOUND) {
      best.path = "libgpuhal-" + name + ".so";
      best.message = "not found in";
      for (const auto &a : attempts)
        if (a.path.find('/') != std::string::npos) best.message += " " + a.path.substr(0, a.path.rfind('/'));
      best.message += " or on the system loader path";
    }
    best.backend = name;
    summary.push_back(best);
  }
  return summary;
}

std::string core_library_directory() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&core_library_directory), &info) || !info.dli_fname) return {};
  std::string p = info.dli_fname;
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return {};
  return p.substr(0, slash);
}

Selection select_backend(const Config &config, const Logger &logger) {
  Selection sel;
  const Manifests manifests = read_manifests(config);
  for (const auto &note : config.notes) logger.write(LogLevel::Warn, note);
  const std::string &b = config.backend;
  if (!b.empty() && b[0] == '/') {
    LoadAttempt a;
    a.backend = b;
    if (!file_exists(b)) {
      a.path = b;
      a.status = Status::ERROR_PLUGIN_NOT_FOUND;
      a.message = "no such file";
      sel.attempts.push_back(a);
      throw Error(Status::ERROR_PLUGIN_NOT_FOUND, "GPUHAL_BACKEND=" + b + ": no such file");
    }
    sel.library = PluginLibrary::open(b, config, logger, &a);
    sel.attempts.push_back(a);
    if (!sel.library) throw Error(a.status, "GPUHAL_BACKEND=" + b + ": " + a.message);
  } else if (!b.empty()) {
    if (!valid_backend_name(b))
      throw Error(Status::ERROR_INVALID_CONFIG,
                  "GPUHAL_BACKEND='" + b + "' is neither a backend name ([a-z0-9_-]) nor an absolute path");
    sel.library = try_backend(b, config, manifests, logger, sel.attempts);
    if (!sel.library)
      throw Error(
          worst(sel.attempts, Status::ERROR_PLUGIN_NOT_FOUND),
          "backend '" + b + "' could not be loaded; looked for libgpuhal-" + b + ".so in:" + summarize(sel.attempts));
  } else {
    for (const auto &name : default_order(manifests)) {
      auto lib = try_backend(name, config, manifests, logger, sel.attempts);
      if (!lib) continue;
      if (lib->device_count() == 0) {
        // Loaded, but not usable: the attempt says so as the probe does
        // (gpuhal-info's "attempts" and "backends" agree).
        sel.attempts.back().status = Status::ERROR_NO_DEVICE;
        sel.attempts.back().message += "; skipped: no devices";
        logger.write(LogLevel::Debug, "backend '" + name + "' has no devices; trying the next");
        continue;
      }
      if (lacks_required(*lib, config, logger, sel.attempts.back())) continue;  // the attempt says what
      sel.library = std::move(lib);
      break;
    }
    if (!sel.library)
      throw Error(worst(sel.attempts, Status::ERROR_NO_DEVICE),
                  std::string("no backend with a device") +
                      (config.required.empty() ? "" : " and " + capability_list(config.required) + " (GPUHAL_REQUIRE)") +
                      " was found (tried the GPU backends, the vendors directories' plugins, and host):" +
                      summarize(sel.attempts));
  }
  if (!b.empty()) {
    // An explicit backend wins: what it lacks of the program's needs is said
    // now, and the calls that need it fail with ERROR_NOT_SUPPORTED.
    const std::vector<Capability> missing = missing_capabilities(*sel.library, config.required);
    if (!missing.empty())
      logger.write(LogLevel::Warn, "backend '" + sel.library->name() + "' (GPUHAL_BACKEND) lacks " +
                                       capability_list(missing) + ", which GPUHAL_REQUIRE names");
  }
  if (sel.library->device_count() == 0)
    throw Error(Status::ERROR_NO_DEVICE,
                "backend '" + sel.library->name() + "' (" + sel.library->path() + ") reports no devices" +
                    (sel.library->no_device_reason().empty() ? "" : ": " + sel.library->no_device_reason()));
  sel.attempts.back().selected = true;
  return sel;
}

}  // namespace gpuhal::detail
