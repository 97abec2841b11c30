// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Reads typed values from a fuzzer's byte string (zeros past the end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace fuzz {

class Input {
 public:
  Input(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  template <class T>
  T take() {
    T v{};
    const size_t n = pos_ < size_ ? std::min(sizeof(T), size_ - pos_) : 0;
    if (n) std::memcpy(&v, data_ + pos_, n);
    pos_ += sizeof(T);
    return v;
  }
  // A small signed value in [lo, hi].
  int64_t small(int64_t lo, int64_t hi) {
    const uint8_t b = take<uint8_t>();
    return lo + int64_t(b) % (hi - lo + 1);
  }
  // Mostly small, sometimes any 64-bit value (overflow paths).
  int64_t dim() {
    const uint8_t kind = take<uint8_t>();
    if (kind < 200) return small(-2, 12);
    return take<int64_t>();
  }
  std::string text(size_t max) {
    const size_t n = size_t(small(0, int64_t(max)));
    std::string s;
    for (size_t i = 0; i < n; ++i) s += char(take<uint8_t>());
    return s;
  }
  bool empty() const { return pos_ >= size_; }

 private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace fuzz
