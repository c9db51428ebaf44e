// Where a container's mounts land, as runc makes them: in config.json's order, each destination
// resolved inside the root through what the image and the mounts before it put there.
#pragma once

#include <sys/types.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "oci_hook_core.h"

namespace ucxtls {

// The directory the last walk below a base reached (O_PATH), and the components it took:
// MountPlaces::add asks each prefix of a destination in turn, so the next walk goes on from there,
// one directory more, never the whole path again (a path through links can be thousands deep).
struct LastWalk {
  dev_t dev = 0;
  ino_t ino = 0;
  bool one_fs = false;
  std::vector<std::string> parts;
  int fd = -1;
  ~LastWalk();
};

class MountPlaces {
 public:
  // rootfd: the container's root; bundle: relative bind sources are taken from it; deadline_ms
  // (CLOCK_MONOTONIC, 0: none): past it, where a mount lands is not told.
  MountPlaces(int rootfd, const std::string &bundle, long long deadline_ms = 0)
      : rootfd_(rootfd), bundle_(bundle), deadline_ms_(deadline_ms) {}
  // Resolves `m`'s destination with the mounts added so far in place, then adds it. False when
  // where it lands cannot be told from the files, or not before the deadline (*why says which);
  // *at is then "".
  bool add(const ContainerMount &m, std::string *at, std::string *why);

 private:
  // How the lookup of one resolved container path went.
  enum class Found { kLink, kOther, kUnknown };
  Found look_up(const std::string &path, bool *inside_pseudo, std::string *target, std::string *why) const;

  // The mounts that cover path (landed on it or on a directory above it), the latest first.
  std::vector<int> covering(const std::string &path) const;

  int rootfd_;
  std::string bundle_;
  long long deadline_ms_;
  std::vector<ContainerMount> mounts_;
  std::vector<std::string> at_;  // where each of mounts_ landed
  // The same as a tree of path components (node 0: "/"): a lookup walks only the path's own
  // directories, so the work is linear in the mounts (config.json may hold thousands).
  struct Landed {
    std::unordered_map<std::string, size_t> below;
    std::vector<int> mounts;
  };
  std::vector<Landed> landed_ = std::vector<Landed>(1);
  mutable LastWalk walk_;
};

}  // namespace ucxtls
