// UCX's own rules for what it reads besides its libraries, as doctor applies them to a build's
// files: a setting's value (ucx_settings.cc: the environment first, then the ucx.conf files in
// UCX's order) and the pure parts of its module rules (ucx_read.cc).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "elf.h"
#include "ucx_build.h"

namespace ucxtls {
namespace cli {

// The value that ucx.conf text gives `name`: the last assignment, read by the library's own
// scanner (shim/ucx_conf.h: UCX's inih; a continuation line replaces the value of the line it
// continues). filters: UCX 1.17's section filters apply (this machine's CPU vendor; a CPU model or
// DMI product name pattern other than "*" cannot be told, and *unsure says so). False when the
// text does not assign it.
bool conf_value(const std::string &text, const char *name, std::string *value, bool filters = false, bool *unsure = nullptr);

// UCX's minor release from the version read ("1.22.0" -> 22, a 2.x -> 99, a 0.x -> 0); -1 when it could not
// be told: then each rule that differs between releases is read both ways, and where the two
// readings differ doctor says it could not tell.
int ucx_minor(const std::string &version);

// UCX's allow list as ucs_config_sscanf_allow_list (src/ucs/config/parser.c) parses it: false for
// a value it rejects ("all" with other names), which UCX's global options then replace with the
// default (ucs_config_apply_config_vars restores dfl_value).
bool allow_list_valid(const std::string &modules);

// use called with a reader of the regular file at path inside root (read_at: counted against its
// byte budget); false, with *err (open_regular's), when it cannot be opened.
bool read_with(Root &root, const std::string &path, const std::function<void(const ReadAt &)> &use, int *err = nullptr);

// The pure parts of UCX's module rules (src/ucs/sys/module.c of v1.22.0), each table-tested and fuzzed:
// The transports an object defines: its dynamic data symbols `uct_<name>_tl` whose first bytes
// in the file are "<name>\0" (UCX's UCT_TL_DEFINE, uct/base/uct_iface.h: the name is the first field).
std::vector<std::string> elf_transports(const ReadAt &read, const ElfObject &o);
// The module directory compiled into libucs: the default of its "MODULE_DIR" option, a pointer
// beside the name's in ucs_global_opts_table (src/ucs/config/global_opts.c:192, {name, default,
// ...}), both relocated (R_X86_64_RELATIVE, R_AARCH64_RELATIVE). "" when it cannot be read.
std::string compiled_module_dir(const ReadAt &read, const ElfObject &libucs);
// UCX's allow list (UCS_CONFIG_TYPE_ALLOW_LIST, src/ucs/config/parser.c; "all", "a,b", "^a,b"),
// matched with fnmatch (ucs_config_names_search, parser.c:2639).
bool module_enabled(const std::string &modules, const std::string &name);
// Module files are named by libucs's own name from its first '.' (module.c:86-91): ".so.0".
std::string module_extension(const std::string &libucs_name);
// A file of a framework's modules: lib<framework>_<name><ext>, no '_' in name (module.c:326-336).
bool module_name(const std::string &file, const std::string &framework, const std::string &ext, std::string *name);

// The value of UCX variable `name` for the build whose libucs is at libucs (inside place's root),
// and in *from where it came from ("environment" or the file); "" and *from "" when unset.
// minor: ucx_minor of the build (which files, whether sections filter); *unsure, when given, is
// set to why the value could not be told ("" when it could).
std::string ucx_setting(BuildPlace &place, const std::string &libucs, const char *name, std::string *from,
                        int minor = 22, std::string *unsure = nullptr);

}  // namespace cli
}  // namespace ucxtls
