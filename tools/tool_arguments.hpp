// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The command line of gpuhal's tools (gpuhal-info, gpuhal-bandwidth,
// gpuhal-conform), parsed one way for all three:
//   --name VALUE and --name=VALUE; a short alias for some (-l, -h);
//   --help (usage on stdout, exit 0) and --version ("<tool> (gpuhal) X.Y.Z,
//   plugin ABI A.B", exit 0) in every tool;
//   a usage error -- an unknown option, a missing value, a value its option
//   refuses (the option says why), two options that exclude each other, too
//   many positional arguments -- prints "<tool>: <what>" and the usage on
//   stderr and exits with status 2.
// Options act in the order given (a later value of the same option wins).
// Not thread-safe; one per main().
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuhal::tools {

class Arguments {
 public:
  // A setter takes the option's value and returns "" or why it is refused.
  using Setter = std::function<std::string(const std::string &)>;

  Arguments(std::string tool, std::string usage);

  // An option without a value (and its short alias, e.g. "-l").
  Arguments &flag(const std::string &name, std::function<void()> on, const std::string &alias = "");
  // An option with a value.
  Arguments &option(const std::string &name, Setter set);
  // At most one of these options may be given.
  Arguments &exclusive(const std::vector<std::string> &names);
  // Up to `max` positional arguments (`what` names one in errors).
  Arguments &positional(const std::string &what, size_t max, Setter set);

  // Parses argv; std::nullopt when the tool goes on, else the exit status
  // it returns now (0 after --help or --version, 2 after a usage error).
  std::optional<int> parse(int argc, char **argv) const;

  // "<tool>: <message>" and the usage on stderr; returns 2.
  int usage_error(const std::string &message) const;

 private:
  struct Option {
    std::string name, alias;
    bool takes_value = false;
    std::function<void()> on;
    Setter set;
  };
  std::string tool_, usage_;
  std::vector<Option> options_;
  std::vector<std::vector<std::string>> exclusive_;
  std::string positional_what_;
  size_t positional_max_ = 0;
  Setter positional_set_;

  const Option *find(const std::string &name) const;
};

// A decimal integer in [min, max]: "" or why not (for Setters).
std::string parse_integer(const std::string &text, long min, long max, long *out);

}  // namespace gpuhal::tools
