// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin kit's handle registry (plugins/common/handle_registry.hpp):
// handles found while held, refused once taken or when foreign, across the
// growth of its lock-free lookup table, and found from other threads while
// objects come and go (run under ThreadSanitizer in CI).
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "catch_compat.hpp"
#include "handle_registry.hpp"

namespace {
struct Thing {
  int id = 0;
};
struct ThingHandle_;
using ThingHandle = ThingHandle_ *;
using Registry = gpuhal::plugin::HandleRegistry<Thing, ThingHandle>;
}  // namespace

TEST_CASE("handle registry: held handles are found, taken and foreign ones refused, across growth", "[plugin-kit]") {
  Registry r;
  std::vector<ThingHandle> handles;
  for (int i = 0; i < 500; ++i) {  // the first table holds 16: several growths
    auto t = std::make_unique<Thing>();
    t->id = i;
    handles.push_back(r.add(std::move(t)));
  }
  for (int i = 0; i < 500; ++i) {
    Thing *t = r.find(handles[size_t(i)]);
    REQUIRE(t != nullptr);
    CHECK(t->id == i);
  }
  CHECK(r.find(nullptr) == nullptr);
  CHECK(r.find(reinterpret_cast<ThingHandle>(uintptr_t(1))) == nullptr);  // the table's own marker
  Thing outsider;
  CHECK(r.find(reinterpret_cast<ThingHandle>(&outsider)) == nullptr);
  for (int i = 0; i < 500; i += 2) CHECK(r.take(handles[size_t(i)])->id == i);
  for (int i = 0; i < 500; ++i) CHECK((r.find(handles[size_t(i)]) != nullptr) == (i % 2 == 1));
  CHECK(r.take(handles[0]) == nullptr);  // taken twice: refused
  // Churn: slots of taken objects are reused, and a miss still ends.
  for (int round = 0; round < 2000; ++round) {
    ThingHandle h = r.add(std::make_unique<Thing>());
    CHECK(r.find(h) != nullptr);
    CHECK(r.take(h) != nullptr);
    CHECK(r.find(h) == nullptr);
  }
  CHECK(r.handles().size() == 250);
  CHECK(r.take_all().size() == 250);
  for (ThingHandle h : handles) CHECK(r.find(h) == nullptr);
}

TEST_CASE("handle registry: lookups from other threads while objects come and go", "[plugin-kit][threads]") {
  Registry r;
  std::vector<ThingHandle> stable;
  for (int i = 0; i < 8; ++i) stable.push_back(r.add(std::make_unique<Thing>()));
  std::atomic<bool> stop{false};
  std::atomic<long> misses{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      while (!stop.load())
        for (ThingHandle h : stable)
          if (!r.find(h)) misses.fetch_add(1);
    });
  std::vector<ThingHandle> churn;
  for (int i = 0; i < 3000; ++i) {
    churn.push_back(r.add(std::make_unique<Thing>()));  // grows the table now and then
    if (churn.size() > 100) {
      r.take(churn.front());
      churn.erase(churn.begin());
    }
  }
  stop.store(true);
  for (auto &t : readers) t.join();
  CHECK(misses.load() == 0);  // objects held throughout are always found
}

TEST_CASE("handle registry: with_all sees every object, and nothing is added or taken until it returns",
          "[plugin-kit][threads]") {
  Registry r;
  std::vector<ThingHandle> handles;
  for (int i = 0; i < 3; ++i) {
    auto t = std::make_unique<Thing>();
    t->id = i;
    handles.push_back(r.add(std::move(t)));
  }
  std::atomic<bool> added{false}, taken{false};
  std::thread adder, taker;
  r.with_all([&](const std::vector<Thing *> &all) {
    int sum = 0;
    for (Thing *t : all) sum += t->id;
    CHECK(all.size() == 3);
    CHECK(sum == 0 + 1 + 2);
    adder = std::thread([&] {
      r.add(std::make_unique<Thing>());
      added = true;
    });
    taker = std::thread([&] { taken = r.take(handles[0]) != nullptr; });  // Catch2 checks stay on this thread
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(added);  // both wait for the registry
    CHECK_FALSE(taken);
    CHECK(r.find(handles[1]) != nullptr);  // lookups do not wait
  });
  adder.join();
  taker.join();
  CHECK(added);
  CHECK(taken);
  r.with_all([&](const std::vector<Thing *> &all) { CHECK(all.size() == 3); });
}
