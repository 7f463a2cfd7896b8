# Third-party dependencies, all from Debian 12 packages (scripts/install-deps.sh).
#
# VIDAX_MINIMAL=ON (bench/device/, docs/pjrt.md "The GPU host"): the engine without its optional
# dependencies, for a host with a compiler, cmake and ninja but no Debian -dev packages. It turns
# these off (each can also be switched alone): VIDAX_OPENBLAS (the fp32 GEMM falls back to the
# engine's own loop when oneDNN is absent too), VIDAX_LIBZIP (.pth files), VIDAX_LIBAV (video files:
# write the latents), VIDAX_SENTENCEPIECE (the UMT5 tokenizer: no text prompts), VIDAX_SERVE
# (`vidax serve`: cpp-httplib, SQLite). What stays: nlohmann_json and CLI11 (header-only; found as
# packages, else as headers under VIDAX_EXTRA_INCLUDE_DIR), Threads and OpenMP (the compiler's).
# `vidax parity` (safetensors goldens), `vidax bench` (random weights) and --device pjrt all work.
option(VIDAX_MINIMAL "Build without the optional dependencies (see cmake/VidaxDeps.cmake)" OFF)
if(VIDAX_MINIMAL)
  set(_vidax_optional_default OFF)
else()
  set(_vidax_optional_default ON)
endif()
option(VIDAX_OPENBLAS "Use OpenBLAS for the fp32 GEMM (off: oneDNN, else the engine's own loop)" ${_vidax_optional_default})
option(VIDAX_LIBZIP "Read .pth checkpoints (libzip)" ${_vidax_optional_default})
option(VIDAX_LIBAV "Write and read video files (FFmpeg's libav*)" ${_vidax_optional_default})
option(VIDAX_SENTENCEPIECE "The UMT5 tokenizer (sentencepiece)" ${_vidax_optional_default})
option(VIDAX_SERVE "Build `vidax serve` (cpp-httplib, SQLite)" ${_vidax_optional_default})
set(VIDAX_EXTRA_INCLUDE_DIR "" CACHE PATH "Where header-only dependencies (nlohmann/json.hpp, CLI/CLI.hpp) are looked for when no package provides them")

find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)

# Header-only packages: the Debian package's CMake config, else the header under VIDAX_EXTRA_INCLUDE_DIR.
function(vidax_header_only target header)
  if(TARGET ${target})
    return()
  endif()
  find_path(_vidax_hdr_${target} ${header} HINTS ${VIDAX_EXTRA_INCLUDE_DIR} NO_CACHE)
  if(NOT _vidax_hdr_${target})
    message(FATAL_ERROR "vidax: ${header} not found: install the package, or pass -DVIDAX_EXTRA_INCLUDE_DIR=<dir holding ${header}>")
  endif()
  add_library(${target} INTERFACE IMPORTED GLOBAL)
  target_include_directories(${target} INTERFACE ${_vidax_hdr_${target}})
  message(STATUS "vidax: ${header} from ${_vidax_hdr_${target}}")
endfunction()
if(VIDAX_MINIMAL)
  find_package(nlohmann_json 3.10 QUIET)
  find_package(CLI11 CONFIG QUIET)
else()
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(CLI11 CONFIG REQUIRED)
endif()
vidax_header_only(nlohmann_json::nlohmann_json nlohmann/json.hpp)
vidax_header_only(CLI11::CLI11 CLI/CLI.hpp)

if(VIDAX_OPENBLAS OR VIDAX_LIBZIP OR VIDAX_LIBAV OR VIDAX_SENTENCEPIECE OR VIDAX_SERVE)
  find_package(PkgConfig REQUIRED)
endif()
if(VIDAX_LIBZIP)
  pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
endif()
if(VIDAX_SENTENCEPIECE)
  pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
endif()
if(VIDAX_LIBAV)
  pkg_check_modules(LIBAV REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswscale libswresample)
endif()
# `vidax serve` (src/serve): the HTTP server and the job database. Debian builds cpp-httplib as a
# library; its .pc carries the feature defines the header must be compiled with.
if(VIDAX_SERVE)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
  pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
endif()
if(NOT VIDAX_MINIMAL)
  find_package(dnnl CONFIG QUIET)
endif()
# OpenBLAS is the fp32 GEMM only where oneDNN is absent. With oneDNN it would be linked unused, and
# its thread pool, started when the library loads, is harmful: under a memory cap (ulimit -v) a
# worker spins for ever in blas_memory_alloc, and exit() then waits for it (docs/bugs.md row 90).
if(dnnl_FOUND AND VIDAX_OPENBLAS)
  message(STATUS "vidax: oneDNN found: OpenBLAS is not linked (VIDAX_OPENBLAS off)")
  set(VIDAX_OPENBLAS OFF)
endif()
if(VIDAX_OPENBLAS)
  pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
endif()
if(dnnl_FOUND)
  message(STATUS "vidax: oneDNN ${dnnl_VERSION} found")
elseif(VIDAX_OPENBLAS)
  message(STATUS "vidax: oneDNN not found, GEMM uses OpenBLAS only")
else()
  message(STATUS "vidax: no oneDNN, no OpenBLAS: the fp32 GEMM is the engine's own loop (slow; the minimal build)")
endif()
if(NOT VIDAX_MINIMAL)
  find_package(MPI COMPONENTS CXX)
endif()

# CUDA: optional at configure time.
set(VIDAX_HAVE_CUDA OFF)
if(NOT VIDAX_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper (H100/H200); override with -DCMAKE_CUDA_ARCHITECTURES=
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc 13's C++20 flag: CUDA sources are C++17.
    set(CMAKE_CUDA_STANDARD 17)
    string(APPEND CMAKE_CUDA_FLAGS " --expt-relaxed-constexpr")
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(VIDAX_HAVE_CUDA ON)
      message(STATUS "vidax: CUDA ${CUDAToolkit_VERSION} found, building the CUDA backend (sm_${CMAKE_CUDA_ARCHITECTURES})")
    endif()
  endif()
  if(NOT VIDAX_HAVE_CUDA)
    if(VIDAX_CUDA STREQUAL "ON")
      message(FATAL_ERROR "vidax: VIDAX_CUDA=ON but no CUDA compiler/toolkit was found")
    endif()
    message(STATUS "vidax: no CUDA compiler found, skipping the CUDA backend")
  endif()
endif()

# PJRT (docs/pjrt.md): the C API header from the pinned xla-cpu-pjrt wheel, which
# scripts/fetch-pjrt-plugin.sh unpacks into .deps/pjrt/ (or give VIDAX_PJRT_INCLUDE_DIR). No library
# is linked: plugins are loaded at run time with dlopen. AUTO builds it when the header is found.
set(VIDAX_PJRT "AUTO" CACHE STRING "Build the PJRT backend: AUTO (when the header is found), ON or OFF")
set(VIDAX_HAVE_PJRT OFF)
if(NOT VIDAX_PJRT STREQUAL "OFF")
  find_path(PJRT_C_API_INCLUDE_DIR xla/pjrt/c/pjrt_c_api.h
            HINTS ${VIDAX_PJRT_INCLUDE_DIR} ${CMAKE_SOURCE_DIR}/.deps/pjrt/include NO_DEFAULT_PATH)
  if(PJRT_C_API_INCLUDE_DIR)
    set(VIDAX_HAVE_PJRT ON)
    message(STATUS "vidax: PJRT C API header found in ${PJRT_C_API_INCLUDE_DIR}")
  elseif(VIDAX_PJRT STREQUAL "ON")
    message(FATAL_ERROR "vidax: VIDAX_PJRT=ON but xla/pjrt/c/pjrt_c_api.h was not found: run scripts/fetch-pjrt-plugin.sh")
  else()
    message(STATUS "vidax: no PJRT C API header (scripts/fetch-pjrt-plugin.sh), building without PJRT")
  endif()
endif()
