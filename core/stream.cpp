// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "gpuhal/stream.hpp"

#include <exception>
#include <type_traits>

#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "graph_impl.hpp"
#include "handle_access.hpp"
#include "stream_impl.hpp"

// The user API's native stream is the plugin ABI's handle, unchanged.
static_assert(std::is_same<gpuhal::NativeStream, gpuhal_stream_t>::value, "NativeStream is gpuhal_stream_t");

namespace gpuhal {

namespace detail {

// Whether ctx's synchronise waits for all work on the wrapped stream
// (plugin.h, context_waits_for_stream): only then may memory released under
// work on it stay a busy block. A failure (a handle that is no stream) or 0
// means no; the handle's refusal is left to the call that uses it.
void StreamImpl::prove_external() {
  std::call_once(external_proof, [this] {
    int32_t covered = 0;
    const bool waits = ctx->backend().context_waits_for_stream_status(ctx->handle, handle, &covered) ==
                           GPUHAL_SUCCESS &&
                       covered == 1;
    if (!waits) ctx->foreign_work.store(true, std::memory_order_relaxed);
    external_unproven.store(false, std::memory_order_release);
  });
}

StreamImpl::~StreamImpl() {
  // The last handle of the stream a capture began on: the capture ends here,
  // in the plugin first (its graph, if any, dropped), so that the releases
  // the capture held back can synchronise the context again.
  if (capture) {
    ContextImpl *deferring = nullptr;
    {
      std::lock_guard<std::mutex> lock(capture_mutex());
      if (capture && capture->origin.expired()) {
        if (handle && generation == ctx->current_generation() && !ctx->inherited()) {
          gpuhal_graph_t g = nullptr;
          if (ctx->backend().stream_end_capture_status(ctx->handle, handle, &g) == GPUHAL_SUCCESS && g)
            ctx->backend().graph_destroy_status(ctx->handle, g);
        }
        deferring = end_capture_locked(*capture);
      }
    }
    end_deferral(deferring);
  }
  if (!owned || !handle || generation != ctx->current_generation() || ctx->inherited()) return;
  ContextImpl *c = ctx.get();
  gpuhal_stream_t h = handle;
  try {
    c->defer_release(
        generation, 0, [c, h] { return c->backend().stream_destroy_status(c->handle, h); }, "stream_destroy");
  } catch (const std::exception &e) {
    c->logger().write(LogLevel::Error, std::string("deferred stream destruction: ") + e.what());
  }
}

EventImpl::~EventImpl() {
  if (!handle || generation != ctx->current_generation() || ctx->inherited()) return;
  ContextImpl *c = ctx.get();
  gpuhal_event_t h = handle;
  try {
    c->defer_release(
        generation, 0, [c, h] { return c->backend().event_destroy_status(c->handle, h); }, "event_destroy");
  } catch (const std::exception &e) {
    c->logger().write(LogLevel::Error, std::string("deferred event destruction: ") + e.what());
  }
}

}  // namespace detail

namespace {

struct CallbackBox {
  std::function<void()> fn;
  detail::Logger logger;
};

// Runs the callback; nothing escapes (into the plugin's C code).
void call_box(CallbackBox &box) {
  try {
    box.fn();
  } catch (const std::exception &e) {
    box.logger.write(LogLevel::Error, std::string("exception escaped a stream callback: ") + e.what());
  } catch (...) {
    box.logger.write(LogLevel::Error, "unknown exception escaped a stream callback");
  }
}

// Runs on a backend thread, or on the thread that found the stream failed.
// A callback whose stream failed is not run: it is released (its captures
// destroyed), as CUDA's cuLaunchHostFunc never runs it. Releases made while
// it runs or is destroyed are queued, not flushed here. Nothing may escape
// into the plugin's C code.
void run_callback(void *user, gpuhal_status_t status) {
  detail::DeallocQueue::CallbackScope in_callback;
  std::unique_ptr<CallbackBox> box(static_cast<CallbackBox *>(user));
  if (status != GPUHAL_SUCCESS) {
    box->logger.write(LogLevel::Warn, "stream callback released without running: its stream failed (" +
                                          to_string(Status(status)) + ")");
    return;  // box goes here, with the captures
  }
  call_box(*box);
}

// A recorded callback (graph.hpp): run at each launch of its graph, owned
// by the graph.
void run_kept_callback(void *user, gpuhal_status_t status) {
  detail::DeallocQueue::CallbackScope in_callback;
  auto *box = static_cast<CallbackBox *>(user);
  if (status != GPUHAL_SUCCESS) {
    box->logger.write(LogLevel::Warn, "graph callback not run: its launch failed (" + to_string(Status(status)) + ")");
    return;
  }
  call_box(*box);
}

}  // namespace

Context Stream::context() const {
  detail::require_handle(impl_, "Stream::context");
  return detail::Access::wrap<Context>(impl_->ctx);
}
bool Stream::is_default() const {
  detail::require_handle(impl_, "Stream::is_default");
  return impl_->handle == nullptr || impl_->handle == GPUHAL_STREAM_LEGACY;
}
bool Stream::is_owned() const {
  detail::require_handle(impl_, "Stream::is_owned");
  return impl_->owned;
}

AutoSynchronize::~AutoSynchronize() {
  try {
    stream_.synchronize();
  } catch (const std::exception &e) {
    detail::impl_of(stream_)->ctx->logger().write(LogLevel::Error, std::string("AutoSynchronize: ") + e.what());
  }
}
int Stream::priority() const {
  detail::require_handle(impl_, "Stream::priority");
  auto h = impl_->live("Stream::priority");
  const detail::Backend &t = impl_->ctx->backend();
  impl_->ctx->require_feature(t.has_stream_priority(), "Stream::priority", detail::kStreamPriorities);
  int32_t p = 0;
  t.stream_priority(impl_->ctx->handle, h, &p);
  return p;
}

gpuhal_stream_t Stream::native_handle() const {
  detail::require_handle(impl_, "Stream::native_handle");
  impl_->ctx->mark_external();  // another library may put work on it now
  return impl_->handle;
}

void Stream::synchronize() const {
  detail::require_handle(impl_, "Stream::synchronize");
  auto h = impl_->live("Stream::synchronize");
  impl_->ctx->check(impl_->ctx->backend().stream_synchronize_status(impl_->ctx->handle, h), "stream_synchronize");
}

bool Stream::query() const {
  detail::require_handle(impl_, "Stream::query");
  auto h = impl_->live("Stream::query");
  return impl_->ctx->ready(impl_->ctx->backend().stream_query_status(impl_->ctx->handle, h), "stream_query");
}

static void check_same_context(const detail::StreamImpl &s, const detail::EventImpl &e, const char *what) {
  if (s.ctx != e.ctx)
    throw Error(Status::ERROR_INVALID_HANDLE, std::string(what) + ": the event belongs to another context");
}

void Stream::wait(const Event &event) const {
  detail::require_handle(impl_, "Stream::wait");
  if (!detail::impl_of(event)) throw Error(Status::ERROR_INVALID_HANDLE, "Stream::wait: null event");
  check_same_context(*impl_, *detail::impl_of(event), "Stream::wait");
  auto h = impl_->live("Stream::wait");
  auto e = detail::impl_of(event)->live("Stream::wait");
  impl_->ctx->check(impl_->ctx->backend().stream_wait_event_status(impl_->ctx->handle, h, e), "stream_wait_event");
  detail::note_wait(impl_, *detail::impl_of(event));
}

void Stream::wait(const std::vector<Event> &events) const {
  detail::require_handle(impl_, "Stream::wait");
  auto h = impl_->live("Stream::wait");
  std::vector<gpuhal_event_t> handles;
  for (const auto &ev : events) {
    if (!detail::impl_of(ev)) throw Error(Status::ERROR_INVALID_HANDLE, "Stream::wait: null event in the list");
    check_same_context(*impl_, *detail::impl_of(ev), "Stream::wait");
    handles.push_back(detail::impl_of(ev)->live("Stream::wait"));
  }
  const detail::Backend &t = impl_->ctx->backend();
  if (t.has_stream_barrier()) {
    t.stream_barrier(impl_->ctx->handle, h, handles.data(), uint32_t(handles.size()), 0);
  } else {
    for (auto e : handles) t.stream_wait_event(impl_->ctx->handle, h, e);
  }
  for (const auto &ev : events) detail::note_wait(impl_, *detail::impl_of(ev));
}

void Stream::wait_for_all_prior_work() const {
  detail::require_handle(impl_, "Stream::wait_for_all_prior_work");
  auto h = impl_->live("Stream::wait_for_all_prior_work");
  const detail::Backend &t = impl_->ctx->backend();
  if (!t.has_stream_barrier())
    throw Error(Status::ERROR_NOT_SUPPORTED, "Stream::wait_for_all_prior_work: backend '" + impl_->ctx->lib().name() +
                                                 "' has no stream_barrier entry");
  t.stream_barrier(impl_->ctx->handle, h, nullptr, 0, GPUHAL_BARRIER_ALL_PRIOR_WORK);
}

void Stream::add_callback(std::function<void()> fn) const {
  detail::require_handle(impl_, "Stream::add_callback");
  if (!fn) throw Error(Status::ERROR_INVALID_VALUE, "Stream::add_callback: empty function");
  auto h = impl_->live("Stream::add_callback");
  if (detail::capturing(*impl_)) {
    // Recorded: a graph runs it at every launch, so the box is the graph's
    // (kept with what the capture names), never freed by a run.
    auto kept = std::make_shared<CallbackBox>(CallbackBox{std::move(fn), impl_->ctx->logger()});
    impl_->ctx->check(
        impl_->ctx->backend().stream_add_callback_status(impl_->ctx->handle, h, run_kept_callback, kept.get()),
        "stream_add_callback");
    detail::keep_for_capture(*impl_, kept);
    return;
  }
  auto box = std::make_unique<CallbackBox>(CallbackBox{std::move(fn), impl_->ctx->logger()});
  impl_->ctx->check(impl_->ctx->backend().stream_add_callback_status(impl_->ctx->handle, h, run_callback, box.get()),
                    "stream_add_callback");
  box.release();  // owned by the plugin's queue until run_callback
}

Event Stream::record() const {
  detail::require_handle(impl_, "Stream::record");
  Event e = context().create_event(true);
  e.record(*this);
  return e;
}

Context Event::context() const {
  detail::require_handle(impl_, "Event::context");
  return detail::Access::wrap<Context>(impl_->ctx);
}

void Event::record(const Stream &stream) const {
  detail::require_handle(impl_, "Event::record");
  if (!detail::impl_of(stream)) throw Error(Status::ERROR_INVALID_HANDLE, "Event::record: null stream");
  check_same_context(*detail::impl_of(stream), *impl_, "Event::record");
  auto e = impl_->live("Event::record");
  auto s = detail::impl_of(stream)->live("Event::record");
  impl_->ctx->check(impl_->ctx->backend().event_record_status(impl_->ctx->handle, e, s), "event_record");
  detail::note_record(*impl_, *detail::impl_of(stream));
}

void Event::synchronize() const {
  detail::require_handle(impl_, "Event::synchronize");
  auto e = impl_->live("Event::synchronize");
  impl_->ctx->check(impl_->ctx->backend().event_synchronize_status(impl_->ctx->handle, e), "event_synchronize");
}

bool Event::query() const {
  detail::require_handle(impl_, "Event::query");
  auto e = impl_->live("Event::query");
  return impl_->ctx->ready(impl_->ctx->backend().event_query_status(impl_->ctx->handle, e), "event_query");
}

float Event::elapsed_ms(const Event &start, const Event &end) {
  if (!detail::impl_of(start) || !detail::impl_of(end))
    throw Error(Status::ERROR_INVALID_HANDLE, "Event::elapsed_ms: null event");
  if (detail::impl_of(start)->ctx != detail::impl_of(end)->ctx)
    throw Error(Status::ERROR_INVALID_HANDLE, "Event::elapsed_ms: events of different contexts");
  auto a = detail::impl_of(start)->live("Event::elapsed_ms");
  auto b = detail::impl_of(end)->live("Event::elapsed_ms");
  float ms = 0;
  detail::impl_of(start)->ctx->check(
      detail::impl_of(start)->ctx->backend().event_elapsed_ms_status(detail::impl_of(start)->ctx->handle, a, b, &ms),
      "event_elapsed_ms");
  return ms;
}

}  // namespace gpuhal
