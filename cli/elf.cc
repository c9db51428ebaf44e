// One reader of an ELF object's dynamic section, with pread into bounded buffers (see elf.h).
#include "elf.h"
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ucxtls {
namespace cli {
namespace {

template <typename Ehdr, typename Phdr, typename Dyn>
bool dynamic_of(int fd, ElfDynamic *out) {
  Ehdr eh;
  if (pread(fd, &eh, sizeof eh, 0) != ssize_t(sizeof eh) || eh.e_phentsize != sizeof(Phdr) || eh.e_phnum > 512) return false;
  std::vector<Phdr> ph(eh.e_phnum);
  const ssize_t phsize = ssize_t(sizeof(Phdr) * eh.e_phnum);
  if (pread(fd, ph.data(), size_t(phsize), off_t(eh.e_phoff)) != phsize) return false;
  const Phdr *dynamic = nullptr;
  for (const Phdr &p : ph)
    if (p.p_type == PT_DYNAMIC) dynamic = &p;
  if (!dynamic) return true;  // static: needs nothing
  if (dynamic->p_filesz > (1 << 20)) return false;
  std::vector<Dyn> dyn(dynamic->p_filesz / sizeof(Dyn));
  const ssize_t dynsize = ssize_t(dyn.size() * sizeof(Dyn));
  if (pread(fd, dyn.data(), size_t(dynsize), off_t(dynamic->p_offset)) != dynsize) return false;
  unsigned long long strtab = 0, strsz = 0;
  for (const Dyn &d : dyn) {
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
  }
  off_t stroff = -1;  // the string table's address, as a file offset (the segment that holds it)
  for (const Phdr &p : ph)
    if (p.p_type == PT_LOAD && strtab >= p.p_vaddr && strtab < p.p_vaddr + p.p_filesz) stroff = off_t(p.p_offset + (strtab - p.p_vaddr));
  if (stroff < 0) return false;
  for (const Dyn &d : dyn) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag != DT_NEEDED && d.d_tag != DT_RPATH && d.d_tag != DT_RUNPATH) continue;
    if (d.d_un.d_val >= strsz) return false;
    char text[4096] = {};
    if (pread(fd, text, sizeof text - 1, stroff + off_t(d.d_un.d_val)) <= 0) return false;
    (d.d_tag == DT_NEEDED ? out->needed : out->search).emplace_back(text);
  }
  return true;
}

}  // namespace

bool read_elf_dynamic(const std::string &path, ElfDynamic *out) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st;
  unsigned char ident[EI_NIDENT] = {};
  const unsigned char data = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, ident, sizeof ident, 0) == ssize_t(sizeof ident) &&
            !memcmp(ident, ELFMAG, SELFMAG) && ident[EI_DATA] == data;
  if (ok && ident[EI_CLASS] == ELFCLASS64) ok = dynamic_of<Elf64_Ehdr, Elf64_Phdr, Elf64_Dyn>(fd, out);
  else if (ok && ident[EI_CLASS] == ELFCLASS32) ok = dynamic_of<Elf32_Ehdr, Elf32_Phdr, Elf32_Dyn>(fd, out);
  else ok = false;
  close(fd);
  return ok;
}

}  // namespace cli
}  // namespace ucxtls
