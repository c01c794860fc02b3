# The torch ops (python/csrc, docs/PYTHON.md "The torch binding"): libattnops_torch.so, C++ against
# the libtorch of the torch installed beside the interpreter that builds the wheel
# (pip install --no-build-isolation, as flash-attn builds).  Without torch there the wheel has
# no torch ops, and attnops.golden and the numpy API still work.
#
# The paths come from torch itself, as torch.utils.cpp_extension finds them, not from torch's
# CMake package: PyPI's torch is a CUDA build, and its CMake package asks for the CUDA toolkit
# even for a CPU-only extension.  Only libtorch_cpu and libc10 are linked; both are loaded
# by `import torch` before the binding is (python/attnops/_torch.py), so no run path to them.
execute_process(
  COMMAND ${Python_EXECUTABLE} -c
    "import os, torch; print(torch.__version__); print(os.path.dirname(torch.__file__)); print(int(torch.compiled_with_cxx11_abi()))"
  OUTPUT_VARIABLE _torch_info OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _torch_rc ERROR_QUIET)
if(NOT _torch_rc EQUAL 0)
  message(STATUS "attnops: ${Python_EXECUTABLE} cannot import torch: the package is built without its torch ops")
  set(ATTNOPS_TORCH_VERSION "")
else()
  string(REPLACE "\n" ";" _torch_info "${_torch_info}")
  list(GET _torch_info 0 ATTNOPS_TORCH_VERSION)
  list(GET _torch_info 1 _torch_dir)
  list(GET _torch_info 2 _torch_cxx11_abi)
  message(STATUS "attnops: torch ops built against torch ${ATTNOPS_TORCH_VERSION} (${_torch_dir})")
  enable_language(CXX)
  find_library(ATTNOPS_TORCH_CPU torch_cpu PATHS ${_torch_dir}/lib NO_DEFAULT_PATH REQUIRED)
  find_library(ATTNOPS_C10 c10 PATHS ${_torch_dir}/lib NO_DEFAULT_PATH REQUIRED)
  file(GLOB ATTNOPS_TORCH_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/csrc/*.cpp)
  add_library(attnops_torch SHARED ${ATTNOPS_TORCH_SOURCES})
  # C++20: torch 2.15's headers require it (older ones compile under it too).
  target_compile_features(attnops_torch PRIVATE cxx_std_20)
  target_compile_definitions(attnops_torch PRIVATE _GLIBCXX_USE_CXX11_ABI=${_torch_cxx11_abi})
  # torch's headers as system headers: their warnings are not ours.
  target_include_directories(attnops_torch SYSTEM PRIVATE
      ${_torch_dir}/include ${_torch_dir}/include/torch/csrc/api/include)
  target_include_directories(attnops_torch PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(attnops_torch PRIVATE attnops ${ATTNOPS_TORCH_CPU} ${ATTNOPS_C10})
  set_target_properties(attnops_torch PROPERTIES INSTALL_RPATH "$ORIGIN" CXX_VISIBILITY_PRESET hidden)
  install(TARGETS attnops_torch LIBRARY DESTINATION attnops/_lib)
endif()
# The torch the ops were built against, which python/attnops/_torch.py requires at import.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/_build_info.py
     "# Written by the build (cmake/TorchBinding.cmake).\nTORCH_VERSION = \"${ATTNOPS_TORCH_VERSION}\"\n")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/_build_info.py DESTINATION attnops)
