# Read by cpack once for each generator (CPACK_PROJECT_CONFIG_FILE), with CPACK_GENERATOR set to it.
if(CPACK_GENERATOR STREQUAL "DEB")
  # Depends is what dpkg-shlibdeps reads from the files' symbol versions (CPACK_DEBIAN_PACKAGE_SHLIBDEPS);
  # without it CPack would write a package without them, which installs where the command cannot start.
  if(POLICY CMP0109)
    cmake_policy(SET CMP0109 NEW)  # a program is a file one may execute
  endif()
  # A cross build (scripts/aarch64-toolchain.cmake): dpkg-shlibdeps reads the target's libraries
  # and the packages they come from in the sysroot's dpkg database (scripts/aarch64-sysroot.sh).
  if(CPACK_UCXTLS_DPKG_SYSROOT)
    set(ENV{DEB_HOST_ARCH} "${CPACK_DEBIAN_PACKAGE_ARCHITECTURE}")
    set(ENV{DPKG_ADMINDIR} "${CPACK_UCXTLS_DPKG_SYSROOT}/var/lib/dpkg")
    set(ENV{LD_LIBRARY_PATH} "${CPACK_UCXTLS_DPKG_SYSROOT}/usr/lib/${CPACK_UCXTLS_MULTIARCH}")
  endif()
  find_program(SHLIBDEPS_EXECUTABLE dpkg-shlibdeps)
  if(NOT SHLIBDEPS_EXECUTABLE)
    message(FATAL_ERROR
      "ucxtls: cpack -G DEB needs dpkg-shlibdeps to write the package's Depends from the files' symbol "
      "versions: install dpkg-dev (apt install dpkg-dev), then run cpack -G DEB again")
  endif()
endif()
if(CPACK_GENERATOR STREQUAL "RPM")
  # The command and the modulefile carry the libdir chosen at configure time (the command finds the
  # library through bindir -> libdir), so an RPM needs a build configured with RPM's %{_libdir}.
  # GNUInstallDirs picks it on RHEL-family hosts; on Debian it picks lib/<multiarch> or lib.
  if(NOT CPACK_UCXTLS_LIBDIR STREQUAL CPACK_UCXTLS_RPM_LIBDIR)
    message(FATAL_ERROR
      "ucxtls: this build installs the library to '${CPACK_UCXTLS_LIBDIR}', but an RPM's %{_libdir} "
      "is /usr/${CPACK_UCXTLS_RPM_LIBDIR}. Build the RPM from its own build directory:\n"
      "  cmake -S ${CPACK_UCXTLS_SOURCE_DIR} -B build-rpm -DCMAKE_BUILD_TYPE=Release -DUCXTLS_TESTS=OFF "
      "-DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_LIBDIR=${CPACK_UCXTLS_RPM_LIBDIR}\n"
      "  cmake --build build-rpm -j8 && (cd build-rpm && cpack -G RPM)")
  endif()
  # The licence, marked as such (rpm -qL lists it), at the path the package installs it to
  # (the RPM generator sets its default prefix, /usr, only after this file is read).
  set(prefix "${CPACK_PACKAGING_INSTALL_PREFIX}")
  if(prefix STREQUAL "")
    set(prefix /usr)
  endif()
  set(CPACK_RPM_USER_FILELIST "%license ${prefix}/${CPACK_UCXTLS_DOCDIR}/LICENSE")
endif()
