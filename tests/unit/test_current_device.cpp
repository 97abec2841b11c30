// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Devices per thread (Numba's select_device, get_current_device, close,
// gpus): the process runtime with three host devices. ctest runs each case
// in its own process, so the environment set here is the one
// Runtime::get() reads.
#include <stdlib.h>

#include <thread>

#include "context_impl.hpp"   // white-box: the context object itself
#include "handle_access.hpp"  // (detail::impl_of)
#include "test_support.hpp"

using namespace gpuhal;

namespace {

// Runtime::get() from an environment with three host devices; false when
// another case of this process loaded it first with fewer.
bool three_devices() {
  setenv("GPUHAL_BACKEND", "host", 1);
  setenv("GPUHAL_PLUGIN_PATH", GPUHAL_TEST_LIB_DIR, 1);
  setenv("GPUHAL_HOST_DEVICES", "3", 1);
  if (Runtime::get().device_count() >= 3) return true;
  WARN("skipped: the process runtime was loaded before with fewer devices (run this case alone)");
  return false;
}

}  // namespace

TEST_CASE("each thread selects its own device and Context::current follows it", "[devices]") {
  if (!three_devices()) return;
  close_device();
  CHECK(get_current_device().ordinal() == 0);  // nothing selected: device 0
  CHECK(Context::current() == Runtime::get().device(0).primary_context());
  CHECK(list_devices().size() == 3);
  CHECK(list_devices()[2].ordinal() == 2);

  CHECK(select_device(2).ordinal() == 2);
  CHECK(get_current_device().ordinal() == 2);
  CHECK(Context::current().device().ordinal() == 2);
  DeviceArray a = device_array(Context::current(), {4});
  CHECK(a.context().device().ordinal() == 2);

  // Another thread has its own selection.
  int other = -1, other_after = -1;
  std::thread t([&] {
    other = get_current_device().ordinal();
    select_device(1);
    other_after = Context::current().device().ordinal();
  });
  t.join();
  CHECK(other == 0);
  CHECK(other_after == 1);
  CHECK(get_current_device().ordinal() == 2);  // this thread's is unchanged

  // A scope selects for its lifetime and restores the previous selection.
  {
    DeviceScope scope(1);
    CHECK(scope.device().ordinal() == 1);
    CHECK(get_current_device().ordinal() == 1);
    {
      DeviceScope inner(list_devices()[0]);
      CHECK(Context::current().device().ordinal() == 0);
    }
    CHECK(get_current_device().ordinal() == 1);
  }
  CHECK(get_current_device().ordinal() == 2);
  close_device();
  CHECK(get_current_device().ordinal() == 0);
}

TEST_CASE("selecting a device that does not exist is refused and changes nothing", "[devices][errors]") {
  if (!three_devices()) return;
  select_device(1);
  REQUIRE_GPUHAL_ERROR(select_device(3), Status::ERROR_INVALID_VALUE, "3");
  REQUIRE_GPUHAL_ERROR(select_device(-1), Status::ERROR_INVALID_VALUE, "-1");
  REQUIRE_GPUHAL_ERROR(DeviceScope{7}, Status::ERROR_INVALID_VALUE, "7");
  CHECK(get_current_device().ordinal() == 1);
  close_device();
  close_device();  // twice is fine
  CHECK(get_current_device().ordinal() == 0);
}

TEST_CASE("a selected device's context lives while selected and goes after close_device", "[devices]") {
  if (!three_devices()) return;
  std::weak_ptr<detail::ContextImpl> weak;
  select_device(2);
  weak = detail::impl_of(Context::current());
  CHECK_FALSE(weak.expired());  // held by the selection alone
  close_device();
  CHECK(weak.expired());  // nothing else held it
}
