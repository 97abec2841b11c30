// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's byte moves (plugins/host/host_copy.hpp): the string
// move only where it fits, memmove's contract everywhere (overlap
// included), and the bytes right through the backend at the sizes and
// alignments on either side of each rule.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "host_copy.hpp"
#include "test_support.hpp"

using namespace gpuhal;
using gpuhal::host::kStringMoveMinBytes;
using gpuhal::host::move_bytes;
using gpuhal::host::string_move_fits;

namespace {

// Page-aligned bytes, freed at the end of the test.
struct PageBuffer {
  explicit PageBuffer(size_t n) : bytes((n + 4095) / 4096 * 4096), p(static_cast<uint8_t *>(std::aligned_alloc(4096, bytes))) {}
  ~PageBuffer() { std::free(p); }
  PageBuffer(const PageBuffer &) = delete;
  PageBuffer &operator=(const PageBuffer &) = delete;
  size_t bytes;
  uint8_t *p;
};

void fill(uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}

}  // namespace

TEST_CASE("host copy: the string move is chosen only where it fits", "[host][copy]") {
  const uintptr_t page = 0x100000;  // any page-aligned address: only the arithmetic is checked
  const size_t n = kStringMoveMinBytes;
  // Fits: large enough, apart, destination on a cache line, a distance of a
  // cache line or more either way within the page.
  CHECK(string_move_fits(page, page + 2 * n + 64, n, true));
  CHECK(string_move_fits(page + 2 * n + 4096, page + 528, n, true));
  // The CPU does not say its string moves are fast.
  CHECK_FALSE(string_move_fits(page, page + 2 * n + 64, n, false));
  // Too small.
  CHECK_FALSE(string_move_fits(page, page + 2 * n + 64, n - 1, true));
  // Overlapping, either way, by a single byte.
  CHECK_FALSE(string_move_fits(page, page + n - 64, n, true));
  CHECK_FALSE(string_move_fits(page + n - 64 + 64, page + 64, n, true));
  CHECK_FALSE(string_move_fits(page + 64, page + 64 + n - 1, n, true));
  CHECK(string_move_fits(page + 128, page + 128 + n + 64, n, true));  // adjacent plus a line: fits
  // A destination off a cache line.
  CHECK_FALSE(string_move_fits(page + 16, page + 2 * n + 528, n, true));
  CHECK_FALSE(string_move_fits(page + 1, page + 2 * n + 528, n, true));
  // A short distance modulo a page, either way (zero included).
  CHECK_FALSE(string_move_fits(page, page + 2 * n, n, true));
  CHECK_FALSE(string_move_fits(page, page + 2 * n + 63, n, true));
  CHECK_FALSE(string_move_fits(page + 2 * n + 4096, page + 4096 - 63, n, true));
  CHECK(string_move_fits(page + 2 * n + 4096, page + 4096 - 64, n, true));
}

TEST_CASE("host copy: move_bytes copies every byte at the sizes and offsets around each rule", "[host][copy]") {
  const size_t sizes[] = {1, 63, 4095, 4096, 4097, 8192 + 3, 65536 + 17};
  const size_t dst_offsets[] = {0, 15, 64, 4032};
  const size_t src_offsets[] = {0, 1, 63, 64, 528, 4080};
  for (size_t n : sizes)
    for (size_t d : dst_offsets)
      for (size_t s : src_offsets) {
        PageBuffer src(n + s), dst(n + d + 128);
        fill(src.p, src.bytes, uint32_t(n + s));
        std::memset(dst.p, 0xA5, dst.bytes);
        move_bytes(dst.p + d, src.p + s, n);
        INFO("bytes " << n << ", destination offset " << d << ", source offset " << s);
        CHECK(std::memcmp(dst.p + d, src.p + s, n) == 0);
        // Nothing written outside the destination.
        bool around = true;
        for (size_t i = 0; i < d; ++i) around = around && dst.p[i] == 0xA5;
        for (size_t i = d + n; i < dst.bytes; ++i) around = around && dst.p[i] == 0xA5;
        CHECK(around);
      }
}

TEST_CASE("host copy: move_bytes keeps memmove's contract for overlapping ranges", "[host][copy]") {
  const size_t n = 3 * kStringMoveMinBytes;
  for (size_t shift : {size_t(1), size_t(64), size_t(4096), n - 1}) {
    PageBuffer buf(2 * n + 4096);
    std::vector<uint8_t> expect(buf.bytes);
    // Forward: the destination starts inside the source.
    fill(buf.p, buf.bytes, 1);
    std::memcpy(expect.data(), buf.p, buf.bytes);
    std::memmove(expect.data() + shift, expect.data(), n);
    move_bytes(buf.p + shift, buf.p, n);
    INFO("shift " << shift);
    CHECK(std::memcmp(buf.p, expect.data(), buf.bytes) == 0);
    // Backward: the source starts inside the destination.
    fill(buf.p, buf.bytes, 2);
    std::memcpy(expect.data(), buf.p, buf.bytes);
    std::memmove(expect.data(), expect.data() + shift, n);
    move_bytes(buf.p, buf.p + shift, n);
    CHECK(std::memcmp(buf.p, expect.data(), buf.bytes) == 0);
  }
}

TEST_CASE("host copy: synchronous copies through the backend are exact on both sides of each rule",
          "[host][copy]") {
  Context ctx = test::host_context();
  for (int64_t n : {int64_t(4095), int64_t(4096), int64_t(4160), int64_t(65536)}) {
    for (size_t offset : {size_t(0), size_t(16), size_t(64), size_t(528), size_t(4080)}) {
      INFO("bytes " << n << ", host offset " << offset);
      PageBuffer in(size_t(n) + offset), out(size_t(n) + offset + 64);
      fill(in.p, in.bytes, uint32_t(offset));
      std::memset(out.p, 0x5A, out.bytes);
      DeviceArray d = device_array(ctx, {n}, dtypes::uint8);
      d.copy_from_host(HostView::of(static_cast<const uint8_t *>(in.p + offset), Shape{n}));
      d.copy_to_host(HostView::of(out.p + offset, Shape{n}));
      CHECK(std::memcmp(out.p + offset, in.p + offset, size_t(n)) == 0);
      bool around = true;
      for (size_t i = 0; i < offset; ++i) around = around && out.p[i] == 0x5A;
      for (size_t i = offset + size_t(n); i < out.bytes; ++i) around = around && out.p[i] == 0x5A;
      CHECK(around);
      // Device to device, into the middle of a larger array (a destination
      // on a cache line and one off it).
      DeviceArray big = device_array(ctx, {n + 128}, dtypes::uint8);
      big.memset(0x33);
      for (int64_t at : {int64_t(64), int64_t(7)}) {
        big.view({Slice(at, at + n)}).copy_from_device(d);
        std::vector<uint8_t> back(size_t(n) + 128);
        big.copy_to_host(HostView::of(back.data(), Shape{n + 128}));
        CHECK(std::memcmp(back.data() + at, in.p + offset, size_t(n)) == 0);
        big.memset(0x33);
      }
    }
  }
}
