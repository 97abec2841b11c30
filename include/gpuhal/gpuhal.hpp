// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal: the whole C++ user API.
#pragma once

#include "gpuhal/config.hpp"
#include "gpuhal/context.hpp"
#include "gpuhal/device_array.hpp"
#include "gpuhal/dlpack.hpp"
#include "gpuhal/dtype.hpp"
#include "gpuhal/error.hpp"
#include "gpuhal/graph.hpp"
#include "gpuhal/host_array.hpp"
#include "gpuhal/host_memory.hpp"
#include "gpuhal/ipc.hpp"
#include "gpuhal/kernel.hpp"
#include "gpuhal/layout.hpp"
#include "gpuhal/log.hpp"
#include "gpuhal/managed_hints.hpp"
#include "gpuhal/memory.hpp"
#include "gpuhal/memory_manager.hpp"
#include "gpuhal/mirrored_array.hpp"
#include "gpuhal/runtime.hpp"
#include "gpuhal/stream.hpp"
#include "gpuhal/version.hpp"
