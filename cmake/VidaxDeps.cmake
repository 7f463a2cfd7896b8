# Third-party dependencies, all from Debian 12 packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 CONFIG REQUIRED)

pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
pkg_check_modules(LIBAV REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswscale)
# `vidax serve` (src/serve): the HTTP server and the job database. Debian builds cpp-httplib as a
# library; its .pc carries the feature defines the header must be compiled with.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
find_package(dnnl CONFIG QUIET)
if(dnnl_FOUND)
  message(STATUS "vidax: oneDNN ${dnnl_VERSION} found")
else()
  message(STATUS "vidax: oneDNN not found, GEMM uses OpenBLAS only")
endif()
find_package(MPI COMPONENTS CXX)

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
