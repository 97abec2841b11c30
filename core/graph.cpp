// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stream capture, Graph and GraphExec (graph.hpp): the plugin records and
// replays; the core keeps what the recorded work names alive
// (graph_impl.hpp) and refuses, before the plugin sees them, the launches a
// replay could not repeat.
#include <exception>

#include "context_impl.hpp"
#include "graph_impl.hpp"
#include "handle_access.hpp"
#include "module_impl.hpp"
#include "stream_impl.hpp"

namespace gpuhal {
namespace detail {

std::mutex &capture_mutex() {
  static std::mutex mu;
  return mu;
}

namespace {

// A plugin object of a context released through its deferred deallocation
// queue, as streams are: never from a stale or inherited context.
template <class Impl, class Release>
void release_child(Impl &impl, Release release, const char *call) {
  if (!impl.handle || impl.generation != impl.ctx->current_generation() || impl.ctx->inherited()) return;
  try {
    impl.ctx->defer_release(impl.generation, 0, release, call);
  } catch (const std::exception &e) {
    impl.ctx->logger().write(LogLevel::Error, std::string("deferred ") + call + ": " + e.what());
  }
}

}  // namespace

ContextImpl *end_capture_locked(CaptureImpl &cap) {
  cap.ended = true;
  for (const auto &w : cap.streams)
    if (auto s = w.lock()) {
      s->capture.reset();
      s->capturing.store(nullptr, std::memory_order_release);
    }
  cap.streams.clear();
  ContextImpl *deferring = cap.deferring;
  cap.deferring = nullptr;
  return deferring;
}

void end_deferral(ContextImpl *ctx) {
  if (!ctx) return;
  try {
    ctx->deallocs->defer_end();
  } catch (const std::exception &e) {
    ctx->logger().write(LogLevel::Error, std::string("end of a capture: deferred releases: ") + e.what());
  }
}

GraphImpl::~GraphImpl() {
  ContextImpl *c = ctx.get();
  gpuhal_graph_t h = handle;
  release_child(*this, [c, h] { return c->backend().graph_destroy_status(c->handle, h); }, "graph_destroy");
}

GraphExecImpl::~GraphExecImpl() {
  ContextImpl *c = ctx.get();
  gpuhal_graph_exec_t h = handle;
  // The plugin frees an exec still in flight once its launches are done;
  // what they name stays reachable until then through the context's
  // memory accounting of submitted work (WorkClock).
  release_child(*this, [c, h] { return c->backend().graph_exec_destroy_status(c->handle, h); }, "graph_exec_destroy");
}

void keep_for_capture(const StreamImpl &s, std::shared_ptr<const void> what) {
  if (!capturing(s) || !what) return;
  std::lock_guard<std::mutex> lock(capture_mutex());
  if (s.capture) s.capture->kept.push_back(std::move(what));
}

void note_record(EventImpl &e, const StreamImpl &s) {
  if (!capturing(s) && !e.in_capture.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(capture_mutex());
  e.capture = s.capture;
  e.in_capture.store(e.capture != nullptr, std::memory_order_release);
}

void note_wait(const std::shared_ptr<StreamImpl> &s, const EventImpl &e) {
  if (!e.in_capture.load(std::memory_order_acquire) || capturing(*s)) return;
  std::lock_guard<std::mutex> lock(capture_mutex());
  const std::shared_ptr<CaptureImpl> cap = e.capture;
  if (!cap || cap->ended || s->capture) return;
  // The plugin accepted the wait: the stream was forked into the capture.
  s->capture = cap;
  s->capturing.store(cap.get(), std::memory_order_release);
  cap->streams.push_back(s);
}

}  // namespace detail

// ---- Stream's capture calls -----------------------------------------------------------------------------

void Stream::begin_capture() const {
  detail::require_handle(impl_, "Stream::begin_capture");
  auto h = impl_->live("Stream::begin_capture");
  detail::ContextImpl &c = *impl_->ctx;
  c.require_feature(c.backend().has_stream_begin_capture(), "Stream::begin_capture", detail::kGraphs);
  std::lock_guard<std::mutex> lock(detail::capture_mutex());
  c.check(c.backend().stream_begin_capture_status(c.handle, h), "stream_begin_capture");
  auto cap = std::make_shared<detail::CaptureImpl>();
  cap->origin = impl_;
  cap->streams.push_back(impl_);
  c.deallocs->defer_begin();
  cap->deferring = &c;
  impl_->capture = cap;
  impl_->capturing.store(cap.get(), std::memory_order_release);
}

Graph Stream::end_capture() const {
  detail::require_handle(impl_, "Stream::end_capture");
  auto h = impl_->live("Stream::end_capture");
  detail::ContextImpl &c = *impl_->ctx;
  c.require_feature(c.backend().has_stream_end_capture(), "Stream::end_capture", detail::kGraphs);
  std::shared_ptr<detail::CaptureImpl> cap;
  gpuhal_graph_t g = nullptr;
  gpuhal_status_t st;
  detail::ContextImpl *deferring = nullptr;
  {
    std::lock_guard<std::mutex> lock(detail::capture_mutex());
    st = c.backend().stream_end_capture_status(c.handle, h, &g);
    cap = impl_->capture;
    // The plugin ends the capture whenever it is asked on the origin stream,
    // also when it fails (an invalidated or unjoined capture).
    if (cap && cap->origin.lock() == impl_) deferring = detail::end_capture_locked(*cap);
  }
  detail::end_deferral(deferring);
  c.check(st, "stream_end_capture");
  auto out = detail::new_child<detail::GraphImpl>(impl_->ctx, "Stream::end_capture");
  out->handle = g;
  if (cap) {
    out->kept = std::make_shared<const detail::Kept>(std::move(cap->kept));
    out->kernels = std::move(cap->kernels);
  } else {
    out->kept = std::make_shared<const detail::Kept>();
  }
  gpuhal_graph_info_t info{};
  info.abi_version = GPUHAL_ABI_VERSION;
  info.struct_size = sizeof info;
  c.check(c.backend().graph_info_status(c.handle, g, &info), "graph_info");
  out->node_count = info.node_count;
  if (info.kernel_node_count != out->kernels.size())
    c.logger().write(LogLevel::Warn, "Stream::end_capture: the plugin counted " +
                                         std::to_string(info.kernel_node_count) + " kernel nodes, the core " +
                                         std::to_string(out->kernels.size()) +
                                         " (work put on the streams by other means?): update_kernel_args numbers "
                                         "the core's");
  return detail::Access::wrap<Graph>(std::move(out));
}

bool Stream::is_capturing() const {
  detail::require_handle(impl_, "Stream::is_capturing");
  auto h = impl_->live("Stream::is_capturing");
  detail::ContextImpl &c = *impl_->ctx;
  if (!c.backend().has_stream_is_capturing()) return false;
  int32_t out = 0;
  c.check(c.backend().stream_is_capturing_status(c.handle, h, &out), "stream_is_capturing");
  return out != 0;
}

// ---- Kernel launches on a capturing stream ---------------------------------------------------------------

void Kernel::launch_captured(const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes,
                             const KernelArg *args, size_t count, const Stream &stream) const {
  std::vector<uint64_t> values;
  detail::Kept kept;
  pack_args(args, count, "Kernel::launch (capturing)", &values, &kept);
  std::vector<void *> ptrs(values.size());
  for (size_t i = 0; i < values.size(); ++i) ptrs[i] = &values[i];
  const gpuhal_launch_config_t cfg = detail::launch_config(grid, block, shared_bytes);
  detail::StreamImpl &s = *detail::impl_of(stream);
  const gpuhal_stream_t sh = s.live("Kernel::launch");
  detail::ContextImpl &c = *module_->ctx;
  // Under the capture lock: the plugin numbers kernel nodes in the order
  // their launches reach it, and so does the core's list.
  std::lock_guard<std::mutex> lock(detail::capture_mutex());
  c.backend().launch(c.handle, entry_->handle, &cfg, ptrs.data(), uint32_t(ptrs.size()), sh);
  if (!s.capture) return;
  for (auto &k : kept) s.capture->kept.push_back(std::move(k));
  s.capture->kernels.push_back(*this);  // keeps the module loaded
}

// ---- Graph ------------------------------------------------------------------------------------------------

Context Graph::context() const {
  detail::require_handle(impl_, "Graph::context");
  return detail::Access::wrap<Context>(impl_->ctx);
}

size_t Graph::node_count() const {
  detail::require_handle(impl_, "Graph::node_count");
  return impl_->node_count;
}

size_t Graph::kernel_node_count() const {
  detail::require_handle(impl_, "Graph::kernel_node_count");
  return impl_->kernels.size();
}

GraphExec Graph::instantiate() const {
  detail::require_handle(impl_, "Graph::instantiate");
  auto g = impl_->live("Graph::instantiate");
  detail::ContextImpl &c = *impl_->ctx;
  auto out = detail::new_child<detail::GraphExecImpl>(impl_->ctx, "Graph::instantiate");
  c.check(c.backend().graph_instantiate_status(c.handle, g, &out->handle), "graph_instantiate");
  out->kept = impl_->kept;
  out->kernels = impl_->kernels;
  out->update_kept.resize(out->kernels.size());
  return detail::Access::wrap<GraphExec>(std::move(out));
}

// ---- GraphExec --------------------------------------------------------------------------------------------

Context GraphExec::context() const {
  detail::require_handle(impl_, "GraphExec::context");
  return detail::Access::wrap<Context>(impl_->ctx);
}

size_t GraphExec::kernel_node_count() const {
  detail::require_handle(impl_, "GraphExec::kernel_node_count");
  return impl_->kernels.size();
}

void GraphExec::launch(const Stream &stream) const {
  detail::require_handle(impl_, "GraphExec::launch");
  const auto &s = detail::impl_of(stream);
  if (!s) throw Error(Status::ERROR_INVALID_HANDLE, "GraphExec::launch: null stream");
  if (s->ctx != impl_->ctx)
    throw Error(Status::ERROR_INVALID_HANDLE, "GraphExec::launch: the stream belongs to another context");
  auto x = impl_->live("GraphExec::launch");
  auto sh = s->live("GraphExec::launch");
  if (detail::capturing(*s))
    throw Error(Status::ERROR_CAPTURE_UNSUPPORTED,
                "GraphExec::launch: the stream is capturing; a graph cannot be launched into a capture (launch it "
                "after end_capture)");
  detail::ContextImpl &c = *impl_->ctx;
  c.check(c.backend().graph_exec_launch_status(c.handle, x, sh), "graph_exec_launch");
}

void GraphExec::update_kernel_args(size_t kernel_node, const std::vector<KernelArg> &args) const {
  detail::require_handle(impl_, "GraphExec::update_kernel_args");
  auto x = impl_->live("GraphExec::update_kernel_args");
  if (kernel_node >= impl_->kernels.size())
    throw Error(Status::ERROR_INDEX_OUT_OF_RANGE, "GraphExec::update_kernel_args: kernel node " +
                                                      std::to_string(kernel_node) + " of a graph with " +
                                                      std::to_string(impl_->kernels.size()) + " kernel node(s)");
  std::vector<uint64_t> values;
  detail::Kept kept;
  impl_->kernels[kernel_node].pack_args(args.data(), args.size(), "GraphExec::update_kernel_args", &values, &kept);
  std::vector<void *> ptrs(values.size());
  for (size_t i = 0; i < values.size(); ++i) ptrs[i] = &values[i];
  detail::ContextImpl &c = *impl_->ctx;
  std::lock_guard<std::mutex> lock(impl_->mu);
  c.check(c.backend().graph_exec_set_kernel_args_status(c.handle, x, uint32_t(kernel_node), ptrs.data(),
                                                        uint32_t(ptrs.size())),
          "graph_exec_set_kernel_args");
  // What the node's arguments name now (the captured ones stay in `kept`).
  impl_->update_kept[kernel_node] = std::move(kept);
}

}  // namespace gpuhal
