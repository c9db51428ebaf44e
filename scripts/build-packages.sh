# scripts/build-packages.sh: what building the library and the command needs, sourced by
# scripts/run.sh and scripts/test.sh (one list for both). Debian/Ubuntu names, then RHEL/Fedora's.
BUILD_PACKAGES=(cmake g++ make)
BUILD_PACKAGES_RPM=(cmake gcc-c++ make)

# The command that installs them here (apt-get or dnf/yum), or nothing where neither is found.
build_install_command() {
  if command -v apt-get >/dev/null; then echo "apt-get install ${BUILD_PACKAGES[*]}"
  elif command -v dnf >/dev/null; then echo "dnf install ${BUILD_PACKAGES_RPM[*]}"
  elif command -v yum >/dev/null; then echo "yum install ${BUILD_PACKAGES_RPM[*]}"
  fi
}
