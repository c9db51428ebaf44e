// What UCX reads besides its libraries, read as UCX reads it: a ucx.conf's value for a name, and
// a UCX setting for a build at a place (ucx_build.h BuildPlace): its environment first, then the
// ucx.conf files in UCX's order.
#pragma once

#include <string>

#include "ucx_build.h"

namespace ucxtls {
namespace cli {

// The value that ucx.conf text gives `name` (the last assignment wins; UCX's inih: `name = value`
// trimmed, '#' and ';' comment lines, [sections] read through, " ;" starting an inline comment).
// False when the text does not assign it. Pure.
bool conf_value(const std::string &text, const char *name, std::string *value);

// The value of UCX variable `name` for the build whose libucs is at libucs (inside place's root),
// and in *from where it came from ("environment" or the file); "" and *from "" when unset.
std::string ucx_setting(BuildPlace &place, const std::string &libucs, const char *name, std::string *from);

}  // namespace cli
}  // namespace ucxtls
