// The environment as it was at exec (see environment.h).
#include "environment.h"

#include <string.h>
#include <unistd.h>

#include "util.h"

namespace ucxtls {
namespace cli {

void Environment::load() {
  if (read_file("/proc/self/environ", &raw)) {
    for (size_t i = 0; i < raw.size(); i += strlen(&raw[i]) + 1)
      if (raw[i]) vars.push_back(&raw[i]);
  } else {
    for (char **e = environ; *e; e++) vars.push_back(*e);
  }
  vars.push_back(nullptr);
}

void Environment::assign(const std::vector<std::string> &entries) {
  raw.clear();
  vars.clear();
  for (const std::string &e : entries) raw.append(e).push_back('\0');
  for (size_t i = 0; i < raw.size(); i += strlen(&raw[i]) + 1) vars.push_back(&raw[i]);
  vars.push_back(nullptr);
}

}  // namespace cli
}  // namespace ucxtls
