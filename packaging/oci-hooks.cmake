# Runs at install time (`cmake --install`, cpack), from the install(SCRIPT) rule in helper/CMakeLists.txt:
# writes the OCI hook's example JSON files, which name the hook by the prefix the files are installed
# to (only the install step knows it). The variables UCXTLS_OCI_* and UCXTLS_HELPERDIR come from the
# install(CODE) rule before it.
foreach(v UCXTLS_OCI_DIR UCXTLS_HELPERDIR)
  if(NOT IS_ABSOLUTE "${${v}}")
    set(${v} "${CMAKE_INSTALL_PREFIX}/${${v}}")
  endif()
endforeach()
set(UCXTLS_OCI_HOOK "${UCXTLS_HELPERDIR}/ucxtls-oci-hook")
foreach(name ucxtls-hook.json ucxtls-cdi.json)
  message(STATUS "Installing: $ENV{DESTDIR}${UCXTLS_OCI_DIR}/${name}")
  configure_file("${UCXTLS_OCI_TEMPLATES}/${name}.in" "$ENV{DESTDIR}${UCXTLS_OCI_DIR}/${name}" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "$ENV{DESTDIR}${UCXTLS_OCI_DIR}/${name}")
endforeach()
