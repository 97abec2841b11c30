# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The plugin author's kit: find_package(gpuhal) includes this file.
#
#   gpuhal_add_plugin(<name> SOURCES <file>...)
#
# makes a MODULE library libgpuhal-<name>.so, the name the loader looks for
# with GPUHAL_BACKEND=<name>, that exports exactly gpuhal_plugin_negotiate:
# hidden visibility for C and C++, the plugin version script
# (GPUHAL_PLUGIN_MAP, installed with the package), no undefined symbols
# (except under sanitizers, whose runtimes only executables link), linked
# with gpuhal::plugin_abi (the C header, nothing else). The target is named
# gpuhal_plugin_<name>; add sources, links and install rules to it as usual.
# Check the result with `gpuhal-conform /path/to/libgpuhal-<name>.so`.
include_guard(GLOBAL)

if(NOT DEFINED GPUHAL_PLUGIN_MAP)
  set(GPUHAL_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/gpuhal-plugin.map")
endif()

function(gpuhal_add_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "gpuhal_add_plugin: '${name}' is not a plugin name (lower-case letters, digits, _)")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "gpuhal_add_plugin(${name}): no SOURCES")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "gpuhal_add_plugin(${name}): unexpected arguments ${ARG_UNPARSED_ARGUMENTS} (use SOURCES)")
  endif()
  set(target gpuhal_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE gpuhal::plugin_abi)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME gpuhal-${name} PREFIX lib SUFFIX .so
    CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS "${GPUHAL_PLUGIN_MAP}")
  target_link_options(${target} PRIVATE "-Wl,--version-script=${GPUHAL_PLUGIN_MAP}")
  if(NOT GPUHAL_SANITIZE AND NOT GPUHAL_FUZZ)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
endfunction()
