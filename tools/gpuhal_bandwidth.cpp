// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal-bandwidth: copy bandwidth of any backend, the user-facing
// counterpart of CUDA's bandwidthTest and nvbandwidth: host-to-device,
// device-to-host (pageable and pinned host memory) and device-to-device, over
// a sweep of sizes, each figure the median of several timed copies with
// their spread. docs/tools.md is the reference.
//
// Each timed copy is one asynchronous copy on a stream of its own and that
// stream's synchronize, timed by the host's steady clock: what an
// application waits for, on every backend alike (no backend's event timer
// is assumed). One untimed copy of each kind and size comes first.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"
#include "json_text.hpp"
#include "tool_arguments.hpp"

namespace {

using gpuhal::support::json_string;

enum class Format { Text, Csv, Json };

struct Options {
  std::optional<std::string> backend;
  int device = 0;
  std::vector<uint64_t> sizes;
  int reps = 10;
  Format format = Format::Text;
  bool h2d = true, d2h = true, d2d = true;
  bool pageable = true, pinned = true;
};

struct Row {
  std::string direction, memory;
  uint64_t bytes = 0;
  double median = 0, min = 0, max = 0;  // GB/s (10^9 bytes per second)
};

const char kUsage[] =
    "usage: gpuhal-bandwidth [--backend NAME|PATH] [--device N] [--sizes LIST] [--reps N]\n"
    "                        [--direction h2d,d2h,d2d] [--memory pageable,pinned] [--csv | --json]\n"
    "       gpuhal-bandwidth --version | --help\n"
    "Measures copy bandwidth on a gpuhal backend (GPUHAL_BACKEND, else the default order).\n"
    "  --sizes LIST    sizes in bytes with K/M/G suffixes: '4K..64M' (doubling) or '1M,16M,256M'\n"
    "                  (default 4K..256M)\n"
    "  --reps N        timed copies per figure (default 10; the median and its min / max)\n"
    "  --direction     which copies (default all three); --memory: which host memory for\n"
    "                  h2d / d2h (default both)\n"
    "  --csv, --json   machine-readable output instead of a table\n";

// "4K" -> 4096; 0 when it is not a size.
uint64_t parse_size(const std::string &s) {
  if (s.empty()) return 0;
  char *end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str() || v == 0) return 0;
  uint64_t scale = 1;
  const std::string suffix = end;
  if (suffix == "K" || suffix == "k") scale = uint64_t(1) << 10;
  else if (suffix == "M" || suffix == "m") scale = uint64_t(1) << 20;
  else if (suffix == "G" || suffix == "g") scale = uint64_t(1) << 30;
  else if (!suffix.empty()) return 0;
  if (v > (uint64_t(1) << 40) / scale) return 0;  // 1 TiB at most
  return uint64_t(v) * scale;
}

// The sizes of LIST ("4K..256M": powers of two from the first to the
// last; "4K,1M,3M": those), or "" and *why set when it is not one.
bool parse_sizes(const std::string &text, std::vector<uint64_t> *out, std::string *why) {
  out->clear();
  const char *kSize = "a size is a positive number with an optional K, M or G suffix, at most 1T";
  const size_t dots = text.find("..");
  if (dots != std::string::npos) {
    const std::string first = text.substr(0, dots), last = text.substr(dots + 2);
    const uint64_t lo = parse_size(first), hi = parse_size(last);
    if (!lo || !hi) {
      *why = "'" + (lo ? last : first) + "' is not a size (" + kSize + ")";
      return false;
    }
    if (lo > hi) {
      *why = "the range runs from " + first + " down to " + last + ": give the smaller size first (" + last + ".." +
             first + ")";
      return false;
    }
    for (uint64_t s = lo; s <= hi; s *= 2) out->push_back(s);
    return true;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const uint64_t s = parse_size(item);
    if (!s) {
      *why = "'" + item + "' is not a size (" + kSize + ")";
      return false;
    }
    out->push_back(s);
    start = comma + 1;
  }
  return !out->empty();
}

// Sets the flags named in a comma list; false on an unknown name.
bool parse_choice(const std::string &text, const std::vector<std::pair<const char *, bool *>> &names) {
  for (auto &n : names) *n.second = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string word = text.substr(start, comma - start);
    bool known = false;
    for (auto &n : names)
      if (word == n.first) known = *n.second = true;
    if (!known) return false;
    start = comma + 1;
  }
  return true;
}

std::string size_text(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t(1) << 30) && b % (uint64_t(1) << 30) == 0)
    std::snprintf(buf, sizeof buf, "%lluG", static_cast<unsigned long long>(b >> 30));
  else if (b >= (uint64_t(1) << 20) && b % (uint64_t(1) << 20) == 0)
    std::snprintf(buf, sizeof buf, "%lluM", static_cast<unsigned long long>(b >> 20));
  else if (b >= 1024 && b % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%lluK", static_cast<unsigned long long>(b >> 10));
  else
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(b));
  return buf;
}

// Times `copy` (which queues one copy on `s`) `reps` times after one warm-up.
template <class Copy>
Row measure(const char *direction, const char *memory, uint64_t bytes, int reps, const gpuhal::Stream &s,
            Copy copy) {
  copy();
  s.synchronize();
  std::vector<double> gbps;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    s.synchronize();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbps.push_back(double(bytes) / std::max(secs, 1e-9) / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  Row row;
  row.direction = direction;
  row.memory = memory;
  row.bytes = bytes;
  const size_t n = gbps.size();
  row.median = n % 2 ? gbps[n / 2] : (gbps[n / 2 - 1] + gbps[n / 2]) / 2;
  row.min = gbps.front();
  row.max = gbps.back();
  return row;
}

std::vector<Row> run(const gpuhal::Context &ctx, const Options &o) {
  std::vector<Row> rows;
  gpuhal::Stream s = ctx.create_stream(gpuhal::StreamKind::NonBlocking);
  const bool has_pinned = ctx.device().runtime().supports(gpuhal::Capability::HostMemory);
  for (uint64_t bytes : o.sizes) {
    const int64_t n = int64_t(bytes);
    gpuhal::DeviceArray a = gpuhal::device_array(ctx, {n}, gpuhal::dtypes::uint8);
    a.memset(1, s);
    std::vector<uint8_t> pageable;
    if (o.pageable && (o.h2d || o.d2h)) pageable.assign(size_t(bytes), 2);
    gpuhal::HostArray pinned;
    if (o.pinned && has_pinned && (o.h2d || o.d2h)) {
      pinned = gpuhal::pinned_array(ctx, {n}, gpuhal::dtypes::uint8);
      std::memset(pinned.data(), 3, size_t(bytes));
    }
    if (o.h2d && o.pageable)
      rows.push_back(measure("h2d", "pageable", bytes, o.reps, s,
                             [&] { a.copy_from_host(gpuhal::HostView::of(pageable), s); }));
    if (o.h2d && o.pinned && has_pinned)
      rows.push_back(measure("h2d", "pinned", bytes, o.reps, s, [&] { a.copy_from_host(pinned.view(), s); }));
    if (o.d2h && o.pageable)
      rows.push_back(measure("d2h", "pageable", bytes, o.reps, s,
                             [&] { a.copy_to_host(gpuhal::HostView::of(pageable), s); }));
    if (o.d2h && o.pinned && has_pinned)
      rows.push_back(measure("d2h", "pinned", bytes, o.reps, s, [&] { a.copy_to_host(pinned.view(), s); }));
    if (o.d2d) {
      gpuhal::DeviceArray b = gpuhal::device_array(ctx, {n}, gpuhal::dtypes::uint8);
      rows.push_back(measure("d2d", "device", bytes, o.reps, s, [&] { b.copy_from_device(a, s); }));
    }
  }
  return rows;
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  std::string why;
  parse_sizes("4K..256M", &o.sizes, &why);
  gpuhal::tools::Arguments args("gpuhal-bandwidth", kUsage);
  args.option("--backend", [&](const std::string &v) {
        o.backend = v;
        return std::string();
      })
      .option("--device",
              [&](const std::string &v) {
                long d = 0;
                const std::string bad = gpuhal::tools::parse_integer(v, 0, 1 << 20, &d);
                o.device = int(d);
                return bad;
              })
      .option("--sizes",
              [&](const std::string &v) {
                std::string bad;
                return parse_sizes(v, &o.sizes, &bad) ? std::string() : bad;
              })
      .option("--reps",
              [&](const std::string &v) {
                long r = 0;
                const std::string bad = gpuhal::tools::parse_integer(v, 1, 100000, &r);
                o.reps = int(r);
                return bad;
              })
      .option("--direction",
              [&](const std::string &v) {
                return parse_choice(v, {{"h2d", &o.h2d}, {"d2h", &o.d2h}, {"d2d", &o.d2d}})
                           ? std::string()
                           : std::string("a comma-separated list of h2d, d2h, d2d");
              })
      .option("--memory",
              [&](const std::string &v) {
                return parse_choice(v, {{"pageable", &o.pageable}, {"pinned", &o.pinned}})
                           ? std::string()
                           : std::string("a comma-separated list of pageable, pinned");
              })
      .flag("--csv", [&] { o.format = Format::Csv; })
      .flag("--json", [&] { o.format = Format::Json; })
      .exclusive({"--csv", "--json"});
  if (const auto status = args.parse(argc, argv)) return *status;
  try {
    gpuhal::Config config = gpuhal::Config::from_environment();
    if (o.backend) config.backend = *o.backend;
    gpuhal::Runtime rt = gpuhal::Runtime::load(config);
    if (o.device >= rt.device_count()) {
      std::fprintf(stderr, "gpuhal-bandwidth: backend %s has no device %d (it has %d)\n", rt.backend_name().c_str(),
                   o.device, rt.device_count());
      return 1;
    }
    gpuhal::Context ctx = rt.device(o.device).primary_context();
    const std::vector<Row> rows = run(ctx, o);
    const std::string device_name = rt.device(o.device).properties().name;
    if (o.format == Format::Csv) {
      std::printf("backend,device,direction,memory,bytes,median_gbps,min_gbps,max_gbps,reps\n");
      for (const auto &r : rows)
        std::printf("%s,%d,%s,%s,%llu,%.3f,%.3f,%.3f,%d\n", rt.backend_name().c_str(), o.device, r.direction.c_str(),
                    r.memory.c_str(), static_cast<unsigned long long>(r.bytes), r.median, r.min, r.max, o.reps);
    } else if (o.format == Format::Json) {
      std::string s = "{\"schema_version\":1,\"library_version\":" + json_string(gpuhal::version().string) +
                      ",\"backend\":" + json_string(rt.backend_name()) + ",\"device\":{\"ordinal\":" +
                      std::to_string(o.device) + ",\"name\":" + json_string(device_name) +
                      "},\"reps\":" + std::to_string(o.reps) + ",\"unit\":\"GB/s\",\"results\":[";
      for (size_t i = 0; i < rows.size(); ++i) {
        char nums[160];
        std::snprintf(nums, sizeof nums, "\"bytes\":%llu,\"median\":%.3f,\"min\":%.3f,\"max\":%.3f",
                      static_cast<unsigned long long>(rows[i].bytes), rows[i].median, rows[i].min, rows[i].max);
        s += std::string(i ? "," : "") + "{\"direction\":" + json_string(rows[i].direction) +
             ",\"memory\":" + json_string(rows[i].memory) + "," + nums + "}";
      }
      std::printf("%s]}\n", s.c_str());
    } else {
      std::printf("gpuhal-bandwidth: backend %s, device %d (%s), %d timed copies per figure, GB/s = 1e9 bytes/s\n",
                  rt.backend_name().c_str(), o.device, device_name.c_str(), o.reps);
      std::printf("%-9s %-9s %10s %12s %12s %12s\n", "direction", "memory", "size", "median GB/s", "min", "max");
      for (const auto &r : rows)
        std::printf("%-9s %-9s %10s %12.3f %12.3f %12.3f\n", r.direction.c_str(), r.memory.c_str(),
                    size_text(r.bytes).c_str(), r.median, r.min, r.max);
    }
    if (!rt.supports(gpuhal::Capability::HostMemory) && o.pinned && (o.h2d || o.d2h))
      std::fprintf(stderr, "gpuhal-bandwidth: backend %s has no pinned host memory: pinned rows left out\n",
                   rt.backend_name().c_str());
    return 0;
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "gpuhal-bandwidth: %s: %s\n", gpuhal::to_string(e.status()).c_str(), e.what());
    return 1;
  }
}
