// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The one fault-injection syntax of gpuhal's fault layer (GPUHAL_FAULT,
// core/layers/fault_layer.cpp) and of the fake drivers (FAKE_CUDA_FAIL,
// FAKE_HSA_FAIL): a header of the neutral support folder, which the core,
// the plugins and the tests may all include.
//
//   <symbol>:<k>[:<code>][,<symbol>:<k>[:<code>]...]
//
// makes the k-th call (counted from 1) of <symbol> fail with <code> (decimal
// or 0x hex), or with the fake's default failure for that symbol when the
// code is left out. Every rule counts every call of its symbol, so
// "f:1,f:3" fails the first and the third. Thread-safe.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace gpuhal {
namespace support {

class FaultRules {
 public:
  // Parses and installs `spec` ("" clears). Returns false with `error` set
  // (and changes nothing) when it is malformed.
  bool set(const std::string &spec, std::string *error) {
    std::vector<Rule> parsed;
    size_t start = 0;
    while (start < spec.size()) {
      size_t end = spec.find(',', start);
      if (end == std::string::npos) end = spec.size();
      Rule r;
      if (!parse_rule(spec.substr(start, end - start), &r)) {
        *error = "fault spec '" + spec + "': expected <entry>:<k>[:<code>][,...] with k >= 1";
        return false;
      }
      parsed.push_back(r);
      start = end + 1;
    }
    std::lock_guard<std::mutex> lock(mu_);
    rules_ = std::move(parsed);
    any_.store(!rules_.empty(), std::memory_order_release);
    return true;
  }

  // Adds a rule at run time: the k-th call of `symbol` from now on fails
  // with `code`.
  void add(const std::string &symbol, long k, long code) {
    std::lock_guard<std::mutex> lock(mu_);
    rules_.push_back(Rule{symbol, k, code, true, 0});
    any_.store(true, std::memory_order_release);
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    rules_.clear();
    any_.store(false, std::memory_order_release);
  }

  // For this call of `symbol`: true when a rule fires, with *code set to
  // its code (or `default_code` when the rule gave none).
  bool fires(const char *symbol, long default_code, long *code) {
    if (!any_.load(std::memory_order_acquire)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    bool hit = false;
    for (auto &r : rules_)
      if (r.symbol == symbol && ++r.calls == r.k && !hit) {
        hit = true;
        *code = r.has_code ? r.code : default_code;
      }
    return hit;
  }

 private:
  struct Rule {
    std::string symbol;
    long k = 0;
    long code = 0;
    bool has_code = false;
    long calls = 0;
  };
  static bool number(const std::string &text, long *out) {
    if (text.empty()) return false;
    char *end = nullptr;
    *out = std::strtol(text.c_str(), &end, 0);
    return end && *end == '\0';
  }
  static bool parse_rule(const std::string &item, Rule *r) {
    const size_t a = item.find(':');
    if (a == std::string::npos || a == 0) return false;
    const size_t b = item.find(':', a + 1);
    r->symbol = item.substr(0, a);
    if (!number(item.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1), &r->k) || r->k < 1)
      return false;
    if (b != std::string::npos) {
      if (!number(item.substr(b + 1), &r->code)) return false;
      r->has_code = true;
    }
    return true;
  }
  std::atomic<bool> any_{false};
  std::mutex mu_;
  std::vector<Rule> rules_;
};

// The rules of environment variable `variable` (unset: none). A fake reads
// its settings once, as a driver does; a malformed spec is a broken test
// setup: said on stderr, then abort().
inline FaultRules &fault_rules_from_environment(const char *variable, const char *who) {
  auto *rules = new FaultRules;  // never destroyed: the fake's calls may come from static destructors
  std::string error;
  const char *spec = std::getenv(variable);
  if (!rules->set(spec ? spec : "", &error)) {
    std::fprintf(stderr, "%s: %s: %s\n", who, variable, error.c_str());
    std::abort();
  }
  return *rules;
}

}  // namespace support
}  // namespace gpuhal
