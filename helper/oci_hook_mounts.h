// Where a container's mounts land, as runc makes them: in config.json's order, each destination
// resolved inside the root through what the image and the mounts before it put there.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "oci_hook_core.h"

namespace ucxtls {

class MountPlaces {
 public:
  // rootfd: the container's root; bundle: relative bind sources are taken from it.
  MountPlaces(int rootfd, const std::string &bundle) : rootfd_(rootfd), bundle_(bundle) {}
  // Resolves `m`'s destination with the mounts added so far in place, then adds it. False when
  // where it lands cannot be told from the files (*why says which mount's files); *at is then "".
  bool add(const ContainerMount &m, std::string *at, std::string *why);

 private:
  // How the lookup of one resolved container path went.
  enum class Found { kLink, kOther, kUnknown };
  Found look_up(const std::string &path, bool *inside_pseudo, std::string *target, std::string *why) const;

  // The mounts that cover path (landed on it or on a directory above it), the latest first.
  std::vector<int> covering(const std::string &path) const;

  int rootfd_;
  std::string bundle_;
  std::vector<ContainerMount> mounts_;
  std::vector<std::string> at_;  // where each of mounts_ landed
  // The same, by where they landed: a lookup asks only the path's own directories, so that the
  // work is linear in the number of mounts (config.json may hold thousands), not quadratic.
  std::unordered_map<std::string, std::vector<int>> landed_on_;
};

}  // namespace ucxtls
