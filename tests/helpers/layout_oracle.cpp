// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The gpuhal side of the NumPy differential test (tests/numpy/
// differential_layouts.py): reads one case a line from stdin, answers one
// line on stdout with what gpuhal's Layout makes of it. The driver builds
// the same case in NumPy and compares.
//
// A case:   <op> <order> <base> <args...>
//   base:   <itemsize> <ndim> <dims...> <nstrides> <strides...>
//           (no strides: dense in `order` when the op is `make`, in 'C'
//           otherwise)
//   ops:    make                       the base itself
//           index <n> <index...>       an index: i<int> or s<start>:<stop>:<step>
//                                      (start/stop `_` when missing)
//           reshape <n> <dims...>      reshape(dims, order)
//           ravel                      ravel(order)
//           like                       strides_like(base, order)
//           transpose <n> <axes...>    transpose(axes)
// An answer: `ok <base offset> <ndim> <dims...> <strides...> <offset> <c> <f>
//            <span_begin> <span_end>` or `err <base offset> <status>
//            <message>` (base offset `-` when the base itself failed).
#include <gpuhal/error.hpp>
#include <gpuhal/layout.hpp>

#include <iostream>
#include <sstream>
#include <string>

namespace {

using gpuhal::Layout;

std::optional<int64_t> bound(const std::string &text) {
  if (text == "_") return std::nullopt;
  return std::stoll(text);
}

gpuhal::Index parse_index(const std::string &token) {
  if (token.size() > 1 && token[0] == 'i') return gpuhal::Index(int64_t(std::stoll(token.substr(1))));
  if (token.size() > 1 && token[0] == 's') {
    const std::string body = token.substr(1);
    const size_t a = body.find(':'), b = body.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) throw std::invalid_argument("bad slice " + token);
    return gpuhal::Index(
        gpuhal::Slice(bound(body.substr(0, a)), bound(body.substr(a + 1, b - a - 1)), std::stoll(body.substr(b + 1))));
  }
  throw std::invalid_argument("bad index " + token);
}

std::vector<int64_t> read_list(std::istream &in) {
  size_t n = 0;
  in >> n;
  std::vector<int64_t> v(n);
  for (auto &x : v) in >> x;
  return v;
}

void print_list(std::ostream &out, const std::vector<int64_t> &v) {
  for (int64_t x : v) out << ' ' << x;
}

std::string answer(const std::string &line) {
  std::istringstream in(line);
  std::string op, order_text;
  int64_t itemsize = 0;
  in >> op >> order_text >> itemsize;
  const gpuhal::Shape shape = read_list(in);
  const gpuhal::Strides strides = read_list(in);
  if (!in || order_text.size() != 1) throw std::invalid_argument("bad case: " + line);
  const char order = order_text[0];
  std::ostringstream out;
  std::string base_offset = "-";
  try {
    const Layout base = Layout::make(shape, itemsize, strides, op == "make" ? order : 'C');
    base_offset = std::to_string(base.offset());
    Layout result = base;
    if (op == "index") {
      size_t n = 0;
      in >> n;
      std::vector<gpuhal::Index> idx;
      for (size_t i = 0; i < n; ++i) {
        std::string token;
        in >> token;
        idx.push_back(parse_index(token));
      }
      result = base.index(idx);
    } else if (op == "reshape") {
      result = base.reshape(read_list(in), order);
    } else if (op == "ravel") {
      result = base.ravel(order);
    } else if (op == "like") {
      result = Layout::make(base.shape(), itemsize, gpuhal::strides_like(base, order));
    } else if (op == "transpose") {
      const std::vector<int64_t> axes = read_list(in);
      result = base.transpose(std::vector<int>(axes.begin(), axes.end()));
    } else if (op != "make") {
      throw std::invalid_argument("unknown op " + op);
    }
    out << "ok " << base.offset() << ' ' << result.ndim();
    print_list(out, result.shape());
    print_list(out, result.strides());
    out << ' ' << result.offset() << ' ' << result.is_c_contiguous() << ' ' << result.is_f_contiguous() << ' '
        << result.span_begin() << ' ' << result.span_end();
  } catch (const gpuhal::Error &e) {
    out << "err " << base_offset << ' ' << gpuhal::to_string(e.status()) << ' ' << e.what();
  }
  return out.str();
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    try {
      std::cout << answer(line) << '\n';
    } catch (const std::exception &e) {
      std::cerr << "layout_oracle: " << e.what() << '\n';
      return 2;
    }
    std::cout.flush();
  }
  return 0;
}
