// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's huge pages for large device allocations
// (plugins/host/host_device_mappings.hpp): which allocations start on a
// huge page boundary and carry the kernel's huge page advice, the option
// that turns it off, and its bad values. The advice is read back from the
// mapping's VmFlags in /proc/self/smaps ("hg": MADV_HUGEPAGE); whether the
// kernel then backs it with huge pages is the system's THP setting.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "test_support.hpp"

using gpuhal::Context;
using gpuhal::DeviceMemory;
using gpuhal::Status;

namespace {

constexpr uint64_t kHuge = uint64_t(2) << 20;  // the x86-64 PMD size

uint64_t huge_page_size() {
  uint64_t s = 0;
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  return (f >> s) ? s : kHuge;
}

// The VmFlags of the mapping holding `address`, or "" when none does.
std::string vm_flags(uint64_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if ((head >> std::hex >> lo >> dash >> hi) && dash == '-') {
      inside = address >= lo && address < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8) + " ";
  }
  return "";
}

// Without transparent huge pages in the kernel, madvise refuses the advice
// and the mappings carry no flag: the advice tests say so and stop.
bool kernel_has_thp() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  return bool(f);
}

bool advised_huge(uint64_t address) {
  const std::string flags = vm_flags(address);
  REQUIRE_FALSE(flags.empty());
  return flags.find(" hg ") != std::string::npos;
}

}  // namespace

TEST_CASE("host huge pages: an allocation of a huge page or more starts on one and is advised huge", "[host][memory]") {
  if (!kernel_has_thp()) {
    WARN("skipped: this kernel has no transparent huge pages");
    return;
  }
  Context ctx = test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "0"}});
  const uint64_t huge = huge_page_size();
  for (const uint64_t bytes : {huge, huge + 4096, 3 * huge + 123}) {
    INFO(bytes << " bytes");
    gpuhal::DeviceArray d = gpuhal::device_array(ctx, {int64_t(bytes)}, gpuhal::dtypes::uint8);
    const uint64_t at = d.memory().device_pointer();
    CHECK(at % huge == 0);
    CHECK(advised_huge(at));
    CHECK(advised_huge(at + bytes - 1));
    // Every byte usable.
    std::vector<uint8_t> in(static_cast<size_t>(bytes), 0x5a), out(in.size());
    d.copy_from_host(gpuhal::HostView::of(in));
    d.copy_to_host(gpuhal::HostView::of(out));
    CHECK(out == in);
  }
  // Smaller ones stay small-page mappings, placed anywhere.
  DeviceMemory small = ctx.allocate(huge - 4096);
  CHECK_FALSE(advised_huge(small.device_pointer()));
}

TEST_CASE("host huge pages: a huge allocation's mapping is unmapped whole on release, the ends cut off at once",
          "[host][memory]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "0"}});
  const uint64_t huge = huge_page_size();
  uint64_t where = 0;
  {
    DeviceMemory m = ctx.allocate(huge);
    where = m.device_pointer();
    // What was mapped to align it is gone: the neighbours are not ours.
    CHECK(vm_flags(where - 1).find(" hg ") == std::string::npos);
    CHECK(vm_flags(where + huge).find(" hg ") == std::string::npos);
  }
  ctx.flush_deallocations();
  CHECK(vm_flags(where).empty());
  CHECK(vm_flags(where + huge - 1).empty());
}

TEST_CASE("host huge pages: an exported huge allocation keeps its contents", "[host][memory][ipc]") {
  Context ctx = test::host_context();
  const uint64_t bytes = 2 * huge_page_size();
  gpuhal::DeviceArray d = gpuhal::device_array(ctx, {int64_t(bytes)}, gpuhal::dtypes::uint8);
  std::vector<uint8_t> in(static_cast<size_t>(bytes)), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 7 + 3);
  d.copy_from_host(gpuhal::HostView::of(in));
  if (kernel_has_thp()) REQUIRE(advised_huge(d.memory().device_pointer()));
  gpuhal::IpcHandle h = gpuhal::get_ipc_handle(d.memory(), 0, bytes);
  (void)h;
  d.copy_to_host(gpuhal::HostView::of(out));
  CHECK(out == in);
}

TEST_CASE("host huge pages: GPUHAL_HOST_HUGE_PAGES=0 maps every allocation with small pages", "[host][memory]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_HUGE_PAGES", "0"}, {"GPUHAL_HOST_MAPPING_CACHE", "0"}});
  DeviceMemory m = ctx.allocate(4 * huge_page_size());
  CHECK_FALSE(advised_huge(m.device_pointer()));
}

// The plugin's init refuses it (ERROR_INVALID_CONFIG), which the loader
// reports as the backend failing to initialise, naming the option.
TEST_CASE("host huge pages: a bad GPUHAL_HOST_HUGE_PAGES is refused by name", "[host][memory][errors]") {
  for (const char *bad : {"2", "-1", "yes", ""}) {
    INFO("'" << bad << "'");
    REQUIRE_GPUHAL_ERROR(test::host_context({{"GPUHAL_HOST_HUGE_PAGES", bad}}), Status::ERROR_INITIALIZATION_FAILED,
                         "ERROR_INVALID_CONFIG): GPUHAL_HOST_HUGE_PAGES='" + std::string(bad) + "'");
  }
}
