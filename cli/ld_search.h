// Where ld.so would find a library for a process, worked out from files alone (as lddtree does):
// the rules of glibc's elf/dl-load.c (_dl_map_object: DT_RPATH of the loading chain when the object
// has no DT_RUNPATH, LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, the default directories), with
// $ORIGIN, $LIB and $PLATFORM expanded (elf/dl-load.c _dl_dst_substitute) and the glibc-hwcaps
// and legacy hardware-capability subdirectories searched first (elf/dl-hwcaps.c). Nothing is
// loaded: a candidate counts when it is a regular ELF file of the process's class and machine.
#pragma once

#include <string>
#include <vector>

#include "elf.h"
#include "root_fs.h"

namespace ucxtls {
namespace cli {

// One object of a process's (or a build's) load, with the object that loaded it.
struct LoadedObject {
  std::string name;  // the name it was asked by (DT_NEEDED, or a path)
  std::string path;  // inside the root, as ld.so found it
  ElfObject elf;
  int parent = -1;   // index of the object whose DT_NEEDED (or dlopen) brought it; -1: the start
  bool dlopened = false;  // opened by dlopen: it has no loader (elf/dl-open.c passes __RTLD_CALLMAP)
};

struct LdSearch {
  Root *root = nullptr;
  std::vector<std::string> library_path;  // library_path_of (below)
  bool is64 = true;
  unsigned machine = 62;  // EM_X86_64
  std::string exe;        // the main program (inside path), "" when none: its RPATH ends every chain
  ElfObject exe_elf;
  // Objects already in the process (--pid), by the names ld.so matches (file name, soname): a
  // DT_NEEDED naming one is that object (elf/dl-load.c _dl_map_object: _dl_name_match_p).
  std::vector<std::pair<std::string, std::string>> mapped;  // (name, path inside the root)
  void init(Root *r, const std::vector<std::string> &env, bool secure, const std::string &exe_path);
  // The library `name` that objects[from] needs: true with *path inside the root, false when it is
  // nowhere ld.so would look (*error: ld.so's words when the search ended at a file it cannot load).
  // An object already mapped is named by the path the search gives when that is the same file
  // (ld.so's l_name, which UCX's dladdr reads), else by its mapped path.
  bool find(const std::string &name, const std::vector<LoadedObject> &objects, int from, std::string *path,
            std::string *error = nullptr);
  // The dependency closure of objects[start] (breadth first, as ld.so loads), appended to objects;
  // "" when every library was found, else ld.so's words for the first that was not.
  std::string load_closure(std::vector<LoadedObject> *objects, int start, bool symbols);

 private:
  std::string cache_, lib_ = "lib/x86_64-linux-gnu", platform_ = "x86_64";
  bool cache_read_ = false, secure_ = false;
  std::vector<std::string> defaults_, subdirs_, levels_, names_;
  // 1: ld.so loads it; 0: passed over (none there, another class or machine); -1: the search ends
  // there with *error (elf/dl-load.c open_verify: "invalid ELF header", "file too short").
  int candidate(const std::string &path, std::string *error);
  bool search(const std::string &name, const std::vector<LoadedObject> &objects, int from, std::string *path,
              std::string *error);
  // A DT_RPATH/DT_RUNPATH or LD_LIBRARY_PATH list, each entry expanded (_dl_dst_substitute).
  // executable: the list is the program's (secure execution checks its $ORIGIN entries).
  std::vector<std::string> expand(const std::string &list, const std::string &origin, bool executable = false);
};

// The legacy hardware-capability subdirectories glibc 2.36's ld.so searches in each directory
// (elf/dl-hwcaps.c _dl_important_hwcaps, the power set): every subset of names (the CPU's
// important hwcap names in bit order, the platform, "tls"), the fullest first, each written from
// the last name to the first ("tls/x86_64/x86_64/"), a repeat dropped, "" (the directory) last. Pure.
std::vector<std::string> legacy_hwcap_subdirs(const std::vector<std::string> &names);
// What glibc's ld.so on this CPU has for an object of this class and machine: the glibc-hwcaps
// subdirectories it supports, most preferred first ("x86-64-v3"), and the names for the above.
void hwcaps_of_cpu(bool is64, unsigned machine, std::vector<std::string> *levels, std::vector<std::string> *names);

// LD_LIBRARY_PATH's directories as glibc's _dl_init_paths reads them: the environment's last value,
// split at ':' and ';', "" meaning the working directory; none when empty or under secure execution.
std::vector<std::string> library_path_of(const std::vector<std::string> &env, bool secure);

// The path /etc/ld.so.cache (glibc-ld.so.cache1.1, after the old format's table when both are there)
// gives for name, for this class and machine on a CPU with these levels and names (hwcaps_of_cpu):
// an entry of another hwcap or platform (haswell/ on an AMD CPU) is passed over; "" when none. Pure.
std::string ld_cache_lookup(const std::string &cache, const std::string &name, bool is64, unsigned machine,
                            const std::vector<std::string> &levels = {}, const std::vector<std::string> &names = {});

}  // namespace cli
}  // namespace ucxtls
