// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "tool_arguments.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "gpuhal/version.hpp"

namespace gpuhal::tools {

Arguments::Arguments(std::string tool, std::string usage) : tool_(std::move(tool)), usage_(std::move(usage)) {}

Arguments &Arguments::flag(const std::string &name, std::function<void()> on, const std::string &alias) {
  options_.push_back({name, alias, false, std::move(on), nullptr});
  return *this;
}

Arguments &Arguments::option(const std::string &name, Setter set) {
  options_.push_back({name, "", true, nullptr, std::move(set)});
  return *this;
}

Arguments &Arguments::exclusive(const std::vector<std::string> &names) {
  exclusive_.push_back(names);
  return *this;
}

Arguments &Arguments::positional(const std::string &what, size_t max, Setter set) {
  positional_what_ = what;
  positional_max_ = max;
  positional_set_ = std::move(set);
  return *this;
}

const Arguments::Option *Arguments::find(const std::string &name) const {
  for (const Option &o : options_)
    if (o.name == name || (!o.alias.empty() && o.alias == name)) return &o;
  return nullptr;
}

int Arguments::usage_error(const std::string &message) const {
  std::fprintf(stderr, "%s: %s\n%s", tool_.c_str(), message.c_str(), usage_.c_str());
  return 2;
}

std::optional<int> Arguments::parse(int argc, char **argv) const {
  std::set<std::string> given;
  size_t positionals = 0;
  bool options_end = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!options_end && arg == "--") {
      options_end = true;
      continue;
    }
    if (options_end || arg.empty() || arg[0] != '-' || arg == "-") {
      if (positionals == positional_max_)
        return usage_error(positional_max_ == 0 ? "unexpected argument '" + arg + "'"
                                                : "more than one " + positional_what_ + " given ('" + arg + "')");
      ++positionals;
      if (const std::string why = positional_set_(arg); !why.empty()) return usage_error(why);
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage_.c_str(), stdout);
      return 0;
    }
    if (arg == "--version") {
      const Version v = version();
      std::printf("%s (gpuhal) %s, plugin ABI %u.%u\n", tool_.c_str(), v.string, v.plugin_abi_major,
                  v.plugin_abi_minor);
      return 0;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const Option *o = find(name);
    if (!o) return usage_error("unknown option '" + name + "'");
    given.insert(o->name);
    if (!o->takes_value) {
      if (eq != std::string::npos) return usage_error(o->name + " takes no value");
      o->on();
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return usage_error(o->name + " needs a value");
    }
    if (const std::string why = o->set(value); !why.empty())
      return usage_error("bad " + o->name + " '" + value + "': " + why);
  }
  for (const auto &group : exclusive_) {
    std::vector<std::string> both;
    for (const auto &n : group)
      if (given.count(n)) both.push_back(n);
    if (both.size() > 1) return usage_error(both[0] + " and " + both[1] + " exclude each other: give one");
  }
  return std::nullopt;
}

std::string parse_integer(const std::string &text, long min, long max, long *out) {
  if (text.empty()) return "a number is needed";
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (*end || errno == ERANGE) return "not a whole number";
  if (v < min || v > max) return "must be from " + std::to_string(min) + " to " + std::to_string(max);
  *out = v;
  return "";
}

}  // namespace gpuhal::tools
