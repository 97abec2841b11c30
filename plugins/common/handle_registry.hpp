// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Objects a plugin owns and hands out as opaque handles (its contexts): the
// handle is the object's address, valid only while the registry holds the
// object, so a stale or foreign handle is refused instead of dereferenced.
//
// Thread safety: every member may be called from any thread; the registry
// locks its own mutex, a leaf lock (nothing else is locked under it except
// what a for_each callback locks).
// Ownership: the registry owns what it holds; take() and take_all() hand
// ownership back (destroy outside the lock).
#pragma once

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
  // Takes ownership; returns the object's handle.
  Handle add(std::unique_ptr<T> object) {
    T *raw = object.get();
    std::lock_guard<std::mutex> lock(mu_);
    objects_.emplace(raw, std::move(object));
    return reinterpret_cast<Handle>(raw);
  }
  // The object of a handle, or nullptr when the handle is not one of ours.
  T *find(Handle h) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(reinterpret_cast<T *>(h));
    return it == objects_.end() ? nullptr : it->second.get();
  }
  // Removes and returns the object (nullptr when the handle is not ours).
  std::unique_ptr<T> take(Handle h) {
    std::lock_guard<std::mutex> lock(mu_);
    return take_owned(objects_, reinterpret_cast<T *>(h));
  }
  std::vector<std::unique_ptr<T>> take_all() {
    std::vector<std::unique_ptr<T>> out;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &kv : objects_) out.push_back(std::move(kv.second));
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

 private:
  mutable std::mutex mu_;
  std::unordered_map<T *, std::unique_ptr<T>> objects_;
};

}  // namespace gpuhal::plugin
