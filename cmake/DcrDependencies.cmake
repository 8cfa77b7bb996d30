# Finds every dependency once and exposes it as an imported target (dcr::name where the package
# ships none). Required: Open MPI, UCX, HDF5, zstd, xxHash, RE2, OpenSSL 3, Boost.Program_options, nlohmann_json, libcurl,
# GoogleTest (with tests). Optional: CUDA toolkit + NCCL (DCR_CUDA=AUTO|ON|OFF).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(Boost 1.71 REQUIRED COMPONENTS program_options)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)
find_package(CURL 7.75 REQUIRED)  # CURLOPT_AWS_SIGV4 (7.75) signs the S3 requests

find_package(zstd CONFIG QUIET)
if(TARGET zstd::libzstd_shared)
  add_library(dcr::zstd ALIAS zstd::libzstd_shared)
else()
  pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
  add_library(dcr::zstd ALIAS PkgConfig::ZSTD)
endif()

pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
add_library(dcr::xxhash ALIAS PkgConfig::XXHASH)
pkg_check_modules(UCX REQUIRED IMPORTED_TARGET ucx)
add_library(dcr::ucx ALIAS PkgConfig::UCX)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)  # model-family patterns, matched in linear time
add_library(dcr::re2 ALIAS PkgConfig::RE2)

add_library(dcr_hdf5 INTERFACE)
target_include_directories(dcr_hdf5 INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(dcr_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
add_library(dcr::hdf5 ALIAS dcr_hdf5)

set(DCR_HAVE_CUDA OFF)
if(NOT DCR_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # H100/H200; "native" fails on machines without a GPU
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(DCR_HAVE_CUDA ON)
  elseif(DCR_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DCR_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()

set(DCR_HAVE_NCCL OFF)
if(DCR_HAVE_CUDA)
  find_library(DCR_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib /usr/local/cuda/lib64)
  find_path(DCR_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  if(DCR_NCCL_LIBRARY AND DCR_NCCL_INCLUDE)
    add_library(dcr::nccl UNKNOWN IMPORTED)
    set_target_properties(dcr::nccl PROPERTIES IMPORTED_LOCATION ${DCR_NCCL_LIBRARY}
                                               INTERFACE_INCLUDE_DIRECTORIES ${DCR_NCCL_INCLUDE})
    target_link_libraries(dcr::nccl INTERFACE CUDA::cudart)
    set(DCR_HAVE_NCCL ON)
  endif()
endif()
message(STATUS "dcr: CUDA kernels ${DCR_HAVE_CUDA}, NCCL ${DCR_HAVE_NCCL}")
