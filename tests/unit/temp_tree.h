// A directory tree of a test's own under /tmp (a replayed node's sysroot, a process's root): its
// files, directories and links, all removed when it goes.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

struct TempTree {
  std::string root;
  std::vector<std::string> made;  // removed in reverse order
  TempTree() {
    char t[] = "/tmp/ucxtls-unit-XXXXXX";
    REQUIRE(mkdtemp(t) != nullptr);
    root = t;
  }
  ~TempTree() {
    for (auto it = made.rbegin(); it != made.rend(); ++it)
      if (unlink(it->c_str()) != 0) rmdir(it->c_str());
    rmdir(root.c_str());
  }
  TempTree(const TempTree &) = delete;
  TempTree &operator=(const TempTree &) = delete;
  // The directories above path (inside the tree).
  void dirs(const std::string &path) {
    for (size_t k = path.find('/', 1); k != std::string::npos; k = path.find('/', k + 1))
      if (mkdir((root + path.substr(0, k)).c_str(), 0755) == 0) made.push_back(root + path.substr(0, k));
  }
  void file(const std::string &path, const std::string &text) {
    dirs(path);
    const int fd = open((root + path).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, text.data(), text.size()) == ssize_t(text.size()));
    close(fd);
    made.push_back(root + path);
  }
  void link(const std::string &path, const std::string &target) {
    dirs(path);
    REQUIRE(symlink(target.c_str(), (root + path).c_str()) == 0);
    made.push_back(root + path);
  }
};
