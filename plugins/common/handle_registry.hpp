// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Objects a plugin owns and hands out as opaque handles (its contexts): the
// handle is the object's address, valid only while the registry holds the
// object, so a stale or foreign handle is refused instead of dereferenced.
//
// Thread safety: every member may be called from any thread. find() takes
// no lock (every plugin entry resolves its context through it): it probes
// an open-addressing table of atomic pointers that the writers (add, take,
// take_all, under the registry's mutex, a leaf lock: nothing else is locked
// under it except what a for_each callback locks) keep in step with the
// owning map. A table outgrown is replaced and kept until the registry goes
// (a reader may still be probing it), so the tables retired add up to less
// than the live one.
// Ownership: the registry owns what it holds; take() and take_all() hand
// ownership back (destroy outside the lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuhal::plugin {

// Removes `key` from a map of owned objects and hands the object back
// (nullptr when the key is not there), so the caller destroys it after
// unlocking. The caller holds whatever lock guards the map.
template <class Map, class Key>
typename Map::mapped_type take_owned(Map &owned, const Key &key) {
  auto it = owned.find(key);
  if (it == owned.end()) return nullptr;
  typename Map::mapped_type out = std::move(it->second);
  owned.erase(it);
  return out;
}

// Gives `object` to a map of owned objects (keyed by its address) and
// writes its handle to *out. The map's slot is made first: if the map
// cannot grow (std::bad_alloc goes on), `object` is still the caller's,
// whole, so the caller can release what it holds (a queue, an executable)
// before destroying it; nothing is handed out. The caller holds whatever
// lock guards the map.
template <class Map, class T, class Handle>
void hand_out_owned(Map &owned, std::unique_ptr<T> &object, Handle *out) {
  auto slot = owned.emplace(object.get(), nullptr).first;
  *out = reinterpret_cast<Handle>(object.get());
  slot->second = std::move(object);
}

template <class T, class Handle>
class HandleRegistry {
 public:
  HandleRegistry() {
    tables_.push_back(std::make_unique<Table>(kFirstCapacity));
    live_.store(tables_.back().get());
  }
  HandleRegistry(const HandleRegistry &) = delete;
  HandleRegistry &operator=(const HandleRegistry &) = delete;

  // Takes ownership; returns the object's handle.
  Handle add(std::unique_ptr<T> object) {
    T *raw = object.get();
    std::lock_guard<std::mutex> lock(mu_);
    auto slot = objects_.emplace(raw, nullptr).first;  // may throw: nothing changed yet
    if ((objects_.size()) * 4 > live_.load()->capacity) {
      try {
        grow();
      } catch (...) {
        objects_.erase(slot);
        throw;
      }
    }
    live_.load()->insert(raw);
    slot->second = std::move(object);
    return reinterpret_cast<Handle>(raw);
  }
  // The object of a handle, or nullptr when the handle is not one of ours.
  // Lock-free; the object stays valid only as long as nobody takes it (a
  // plugin's contract: a context is not destroyed during a call on it).
  T *find(Handle h) const {
    T *key = reinterpret_cast<T *>(h);
    if (!key || key == tombstone()) return nullptr;
    return live_.load(std::memory_order_acquire)->find(key);
  }
  // Removes and returns the object (nullptr when the handle is not ours).
  std::unique_ptr<T> take(Handle h) {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<T> out = take_owned(objects_, reinterpret_cast<T *>(h));
    if (out) live_.load()->erase(out.get());
    return out;
  }
  std::vector<std::unique_ptr<T>> take_all() {
    std::vector<std::unique_ptr<T>> out;
    std::lock_guard<std::mutex> lock(mu_);
    out.reserve(objects_.size());
    for (auto &kv : objects_) {
      live_.load()->erase(kv.first);
      out.push_back(std::move(kv.second));
    }
    objects_.clear();
    return out;
  }
  // The handles held now (they may be taken by another thread afterwards).
  std::vector<Handle> handles() const {
    std::vector<Handle> out;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &kv : objects_) out.push_back(reinterpret_cast<Handle>(kv.first));
    return out;
  }
  // Calls f(T&) for each object with the registry locked, so none is
  // destroyed meanwhile.
  template <class F>
  void for_each(F f) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &kv : objects_) f(*kv.second);
  }
  // Calls f(std::vector<T *>) with every object, the registry locked until
  // f returns: none is added or destroyed meanwhile (what f locks in the
  // objects stays theirs until it returns).
  template <class F>
  void with_all(F f) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<T *> all;
    all.reserve(objects_.size());
    for (auto &kv : objects_) all.push_back(kv.second.get());
    f(all);
  }

 private:
  static constexpr size_t kFirstCapacity = 64;  // a power of two
  static T *tombstone() { return reinterpret_cast<T *>(uintptr_t(1)); }

  // Linear probing over atomic slots: nullptr ends a probe, a tombstone
  // (a taken object's slot) does not and is reused by the next insert.
  struct Table {
    explicit Table(size_t n) : capacity(n), slots(new std::atomic<T *>[n]) {
      for (size_t i = 0; i < n; ++i) slots[i].store(nullptr, std::memory_order_relaxed);
    }
    size_t start(const T *key) const {
      return size_t((uintptr_t(key) >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (capacity - 1);
    }
    T *find(T *key) const {
      for (size_t i = start(key), n = 0; n < capacity; i = (i + 1) & (capacity - 1), ++n) {
        T *v = slots[i].load(std::memory_order_acquire);
        if (v == key) return v;
        if (!v) return nullptr;
      }
      return nullptr;
    }
    // Writers only (the registry's mutex held); room is guaranteed by add().
    void insert(T *key) {
      for (size_t i = start(key);; i = (i + 1) & (capacity - 1)) {
        T *v = slots[i].load(std::memory_order_relaxed);
        if (!v || v == tombstone()) {
          slots[i].store(key, std::memory_order_release);
          return;
        }
      }
    }
    void erase(T *key) {
      for (size_t i = start(key), n = 0; n < capacity; i = (i + 1) & (capacity - 1), ++n) {
        T *v = slots[i].load(std::memory_order_relaxed);
        if (v == key) {
          slots[i].store(tombstone(), std::memory_order_release);
          return;
        }
        if (!v) return;
      }
    }
    const size_t capacity;
    std::unique_ptr<std::atomic<T *>[]> slots;
  };

  // A table twice the size with every live object, published at once; the
  // old one stays (a reader may be probing it).
  void grow() {
    auto bigger = std::make_unique<Table>(live_.load()->capacity * 2);
    for (auto &kv : objects_)
      if (kv.second) bigger->insert(kv.first);
    tables_.reserve(tables_.size() + 1);
    live_.store(bigger.get(), std::memory_order_release);
    tables_.push_back(std::move(bigger));
  }

  mutable std::mutex mu_;
  std::unordered_map<T *, std::unique_ptr<T>> objects_;  // guarded by mu_
  std::vector<std::unique_ptr<Table>> tables_;           // the live one last; guarded by mu_
  std::atomic<Table *> live_{nullptr};
};

}  // namespace gpuhal::plugin
