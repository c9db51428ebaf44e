// The dynamic section of an ELF object, read from its file (nothing of it is run): what `run` and
// doctor's root-only check need to know of what ld.so would load with it.
#pragma once
#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

struct ElfDynamic {
  std::vector<std::string> needed;      // DT_NEEDED names, in order
  std::vector<std::string> search;      // DT_RPATH and DT_RUNPATH strings, as written ($ORIGIN kept)
};

// False for anything ld.so would not load as an ELF object of this machine's byte order (32 or 64
// bits): a script, a file that cannot be read, a FIFO or a device (opened without blocking, read
// only when regular). A static object is true with nothing in it.
bool read_elf_dynamic(const std::string &path, ElfDynamic *out);

}  // namespace cli
}  // namespace ucxtls
