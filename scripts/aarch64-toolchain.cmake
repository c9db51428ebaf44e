# scripts/aarch64-toolchain.cmake: cross-build everything for aarch64 (Grace) on an x86_64 machine.
#
#   S=$(scripts/aarch64-sysroot.sh)
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=scripts/aarch64-toolchain.cmake -DUCXTLS_AARCH64_SYSROOT=$S
#
# clang with --target (one compiler for every target; Debian's g++-aarch64-linux-gnu conflicts with
# gcc-multilib, which the 32-bit tests need), lld (links for any target and does clang's LTO), the
# arm64 glibc and GCC runtime of scripts/aarch64-sysroot.sh, and qemu-aarch64 (Debian qemu-user) as
# CMAKE_CROSSCOMPILING_EMULATOR: CMake runs every program the build or CTest runs (the man page
# step, add_test commands) through it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(UCXTLS_AARCH64_SYSROOT "$ENV{UCXTLS_AARCH64_SYSROOT}" CACHE PATH "the arm64 sysroot (scripts/aarch64-sysroot.sh)")
if(NOT UCXTLS_AARCH64_SYSROOT OR NOT EXISTS "${UCXTLS_AARCH64_SYSROOT}/usr/include/aarch64-linux-gnu")
  message(FATAL_ERROR "UCXTLS_AARCH64_SYSROOT='${UCXTLS_AARCH64_SYSROOT}' is not an arm64 sysroot: "
                      "make one with scripts/aarch64-sysroot.sh and pass its directory")
endif()
# Try-compiles (the compiler checks, check_ipo_supported's whole project) read this file again:
# they find the sysroot in the environment.
set(ENV{UCXTLS_AARCH64_SYSROOT} "${UCXTLS_AARCH64_SYSROOT}")
set(CMAKE_SYSROOT "${UCXTLS_AARCH64_SYSROOT}")

set(triple aarch64-linux-gnu)
find_program(UCXTLS_CLANG NAMES clang clang-14 REQUIRED)
find_program(UCXTLS_CLANGXX NAMES clang++ clang++-14 REQUIRED)
set(CMAKE_C_COMPILER "${UCXTLS_CLANG}")
set(CMAKE_CXX_COMPILER "${UCXTLS_CLANGXX}")
set(CMAKE_C_COMPILER_TARGET ${triple})
set(CMAKE_CXX_COMPILER_TARGET ${triple})
set(CMAKE_ASM_COMPILER_TARGET ${triple})
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT "-fuse-ld=lld")
endforeach()
# clang's LTO objects are LLVM bitcode: archived by llvm-ar, indexed by llvm-ranlib.
find_program(CMAKE_AR NAMES llvm-ar llvm-ar-14)
find_program(CMAKE_RANLIB NAMES llvm-ranlib llvm-ranlib-14)
# `cmake --install --strip` and CPack's stripping: llvm-strip reads any target (binutils' strip
# here reads x86 files alone).
find_program(CMAKE_STRIP NAMES llvm-strip llvm-strip-14)

find_program(UCXTLS_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
# -L: the arm64 ld.so and libraries a program loads come from the sysroot.
set(CMAKE_CROSSCOMPILING_EMULATOR "${UCXTLS_QEMU_AARCH64};-L;${UCXTLS_AARCH64_SYSROOT}")

# Headers and libraries from the sysroot alone; programs (python3, readelf) from the host.
set(CMAKE_FIND_ROOT_PATH "${UCXTLS_AARCH64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
