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
ucxtls_full(UCXTLS_BIN_DIR "${UCXTLS_BINDIR}")
ucxtls_full(UCXTLS_MAN_DIR "${UCXTLS_MANDIR}")

if(CMAKE_INSTALL_PREFIX MATCHES "/_CPack_Packages/" AND "$ENV{DESTDIR}" STREQUAL "")
  # An archive (cpack -G TGZ) has no final prefix: wherever it is unpacked, the modulefile finds
  # the prefix by cutting its own path below it, as `ucxtls run` finds the library from bin/.
  file(RELATIVE_PATH file_below "${CMAKE_INSTALL_PREFIX}" "${UCXTLS_MODULE_DIR}/${UCXTLS_VERSION}.lua")
  file(RELATIVE_PATH lib_below "${CMAKE_INSTALL_PREFIX}" "${UCXTLS_LIBRARY_PATH}")
  file(RELATIVE_PATH bin_below "${CMAKE_INSTALL_PREFIX}" "${UCXTLS_BIN_DIR}")
  file(RELATIVE_PATH man_below "${CMAKE_INSTALL_PREFIX}" "${UCXTLS_MAN_DIR}")
  string(LENGTH "/${file_below}" cut)
  set(prefix_expr "myFileName():sub(1, -${cut} - 1)")
  set(UCXTLS_MODULE_LIBRARY "pathJoin(${prefix_expr}, \"${lib_below}\")")
  set(UCXTLS_MODULE_BIN "pathJoin(${prefix_expr}, \"${bin_below}\")")
  set(UCXTLS_MODULE_MAN "pathJoin(${prefix_expr}, \"${man_below}\")")
else()
  if(UCXTLS_LIBRARY_PATH MATCHES "[ :\"\\]")
    # ld.so splits LD_PRELOAD at spaces and colons and knows no escape (ld.so(8)).
    message(WARNING "ucxtls: the library path '${UCXTLS_LIBRARY_PATH}' holds a space, colon, quote or "
                    "backslash: no LD_PRELOAD can name it. Install to a plainer prefix.")
  endif()
  set(UCXTLS_MODULE_LIBRARY "\"${UCXTLS_LIBRARY_PATH}\"")
  set(UCXTLS_MODULE_BIN "\"${UCXTLS_BIN_DIR}\"")
  set(UCXTLS_MODULE_MAN "\"${UCXTLS_MAN_DIR}\"")
endif()

# The command and its man page: PATH and MANPATH, except where they already are on the system's
# paths (a package's /usr/bin, /usr/share/man): prepending /usr/bin would move it in front of
# /usr/local/bin and ~/.local/bin for as long as the module is loaded.
set(UCXTLS_MODULE_PATHS "")
if(UCXTLS_BIN_DIR MATCHES "^(/usr)?/bin$")
  string(APPEND UCXTLS_MODULE_PATHS "-- ${UCXTLS_BIN_DIR} is on every PATH already: not prepended.\n")
else()
  string(APPEND UCXTLS_MODULE_PATHS "prepend_path(\"PATH\", ${UCXTLS_MODULE_BIN})\n")
endif()
if(UCXTLS_MAN_DIR MATCHES "^/usr(/share)?/man$")
  string(APPEND UCXTLS_MODULE_PATHS "-- ${UCXTLS_MAN_DIR} is man's own directory: not prepended.\n")
else()
  string(APPEND UCXTLS_MODULE_PATHS "prepend_path(\"MANPATH\", ${UCXTLS_MODULE_MAN})\n")
endif()
string(STRIP "${UCXTLS_MODULE_PATHS}" UCXTLS_MODULE_PATHS)

set(modulefile "${UCXTLS_MODULE_DIR}/${UCXTLS_VERSION}.lua")
message(STATUS "Installing: $ENV{DESTDIR}${modulefile}")
configure_file("${UCXTLS_MODULE_TEMPLATE}" "$ENV{DESTDIR}${modulefile}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "$ENV{DESTDIR}${modulefile}")
