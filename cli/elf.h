// An ELF object read from its file, as readelf reads it (nothing of it is run): its dynamic section
// (what ld.so would load with it), its dynamic symbols, and bytes at an address through its
// program headers. Every offset, count and size is checked against the file and bounded: a
// truncated, huge, 32-bit or otherwise odd object gives "not an object" or less, never a crash.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

// Reads n bytes at offset into buf; the count read (short at the end), or -1.
using ReadAt = std::function<ssize_t(void *buf, size_t n, off_t offset)>;

struct ElfSymbol {
  std::string name;
  uint64_t value = 0, size = 0;
  unsigned char type = 0;  // STT_*
};

struct ElfObject {
  bool is64 = false;
  unsigned machine = 0;                // e_machine
  std::vector<std::string> needed;     // DT_NEEDED names, in order
  std::string soname;
  bool has_rpath = false, has_runpath = false;
  std::string rpath, runpath;          // as written ($ORIGIN kept); ld.so ignores DT_RPATH beside DT_RUNPATH
  std::vector<ElfSymbol> defined;      // defined dynamic symbols (functions and data), when wanted
  bool symbols_cut = false;            // their names passed the bound on bytes copied: the rest are not read
  struct Load {
    uint64_t vaddr, filesz, offset;
  };
  std::vector<Load> loads;
  uint64_t rela = 0, relasz = 0;       // DT_RELA, DT_RELASZ (addresses)
  uint64_t flags_1 = 0;                // DT_FLAGS_1 (DF_1_NODEFLIB: ld.so skips its default directories)
  // The file offset of [vaddr, vaddr + n) when one PT_LOAD holds it from the file; -1 otherwise.
  off_t offset_of(uint64_t vaddr, uint64_t n) const;
};

// False (with *why) for anything ld.so would not load as an ELF object of this machine's byte
// order: a script, a file too short, headers out of the file. symbols: read the defined dynamic
// symbols too (section headers' SHT_DYNSYM).
bool read_elf(const ReadAt &read, ElfObject *out, bool symbols, std::string *why);

// The bytes at vaddr (through the program headers), at most n; "" when not in the file.
std::string elf_bytes(const ReadAt &read, const ElfObject &o, uint64_t vaddr, size_t n);

// The NUL-terminated string at vaddr (at most max bytes): false when it has no end within max.
bool elf_string(const ReadAt &read, const ElfObject &o, uint64_t vaddr, size_t max, std::string *s);

// The address a function body at pc returns, when it is what compilers make of `return "literal";`
// on this machine (e_machine): x86-64 `lea disp32(%rip), %rax; ret` (an optional endbr64 or frame
// setup); AArch64 `adrp x0; add x0, x0, #lo12; ret` or `adr x0; ret` (optional BTI, PAC hints,
// frame record). 0 for anything else, another machine's code included (could not tell). Pure.
uint64_t returned_address(const unsigned char *code, size_t n, uint64_t pc, unsigned machine);
// The string a 64-bit object's function returns (returned_address); "" when it could not be told.
std::string returned_string(const ReadAt &read, const ElfObject &o, const ElfSymbol &fn);

// The target of the relative relocation (R_X86_64_RELATIVE, R_AARCH64_RELATIVE) at address `at`
// (a pointer in initialised data); 0 when there is none.
uint64_t relocated_pointer(const ReadAt &read, const ElfObject &o, uint64_t at);
// The address of the first pointer relocated to target (a relative relocation); 0 when none.
uint64_t relocation_to(const ReadAt &read, const ElfObject &o, uint64_t target);

// The addresses of every place in the loaded segments holding text followed by NUL (at most 16).
std::vector<uint64_t> find_text(const ReadAt &read, const ElfObject &o, const std::string &text);

}  // namespace cli
}  // namespace ucxtls
