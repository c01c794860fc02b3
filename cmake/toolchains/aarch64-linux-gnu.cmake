# Cross-compiling for Arm64 Linux on a Debian x86-64 host (make test-arm64):
# Debian's gcc-aarch64-linux-gnu, the arm64 multiarch -dev packages under
# /usr/lib/aarch64-linux-gnu (scripts/setup-arm64.sh installs both), and
# ctest runs every test program under qemu-user, on Debian's arm64 C library
# (scripts/setup-arm64.sh says why not the cross toolchain's).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Headers are architecture-independent in Debian (/usr/include); libraries
# come from the multiarch directory, never from the host's x86-64 one.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
