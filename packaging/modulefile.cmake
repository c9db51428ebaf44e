# Runs at install time (`cmake --install`, cpack), from the install(SCRIPT) rule in CMakeLists.txt:
# writes the Lmod modulefile <prefix>/<UCXTLS_MODULEFILE_DIR>/ucxtls/<version>.lua naming the library
# by the prefix the files are installed to, which only the install step knows (`--prefix`, the
# packages' /usr). The variables UCXTLS_* are set by the install(CODE) rule before it.
function(ucxtls_full out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
ucxtls_full(UCXTLS_MODULE_DIR "${UCXTLS_MODULEFILE_DIR}/ucxtls")
ucxtls_full(UCXTLS_LIBRARY_DIR "${UCXTLS_LIBDIR}")
set(UCXTLS_LIBRARY_PATH "${UCXTLS_LIBRARY_DIR}/libucxtls.so")

if(CMAKE_INSTALL_PREFIX MATCHES "/_CPack_Packages/" AND "$ENV{DESTDIR}" STREQUAL "")
  # An archive (cpack -G TGZ) has no final prefix: wherever it is unpacked, the modulefile finds
  # the prefix by cutting its own path below it, as `ucxtls run` finds the library from bin/.
  file(RELATIVE_PATH file_below "${CMAKE_INSTALL_PREFIX}" "${UCXTLS_MODULE_DIR}/${UCXTLS_VERSION}.lua")
  file(RELATIVE_PATH lib_below "${CMAKE_INSTALL_PREFIX}" "${UCXTLS_LIBRARY_PATH}")
  string(LENGTH "/${file_below}" cut)
  set(UCXTLS_MODULE_LIBRARY "pathJoin(myFileName():sub(1, -${cut} - 1), \"${lib_below}\")")
else()
  if(UCXTLS_LIBRARY_PATH MATCHES "[ :\"\\]")
    # ld.so splits LD_PRELOAD at spaces and colons and knows no escape (ld.so(8)).
    message(WARNING "ucxtls: the library path '${UCXTLS_LIBRARY_PATH}' holds a space, colon, quote or "
                    "backslash: no LD_PRELOAD can name it. Install to a plainer prefix.")
  endif()
  set(UCXTLS_MODULE_LIBRARY "\"${UCXTLS_LIBRARY_PATH}\"")
endif()

set(modulefile "${UCXTLS_MODULE_DIR}/${UCXTLS_VERSION}.lua")
message(STATUS "Installing: $ENV{DESTDIR}${modulefile}")
configure_file("${UCXTLS_MODULE_TEMPLATE}" "$ENV{DESTDIR}${modulefile}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "$ENV{DESTDIR}${modulefile}")
