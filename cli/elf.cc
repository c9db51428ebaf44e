// One reader of ELF objects, with bounded reads through a ReadAt (see elf.h).
#include "elf.h"
#include <elf.h>
#include <string.h>

#include <algorithm>

namespace ucxtls {
namespace cli {
namespace {

const size_t kMaxTable = size_t(16) << 20;  // a dynamic symbol or string table larger than this is not read
// A symbol name is looked for only this far: a longer one is none that doctor asks for (UCX's are
// under 64 bytes), and measuring every name to its table's end, which a name without a NUL makes
// each one's length, would copy the table once per symbol (16 MiB x 700,000).
const size_t kMaxName = 1024;

bool read_exact(const ReadAt &read, void *buf, size_t n, uint64_t off) {
  return off < (uint64_t(1) << 62) && read(buf, n, off_t(off)) == ssize_t(n);
}

// Whether the file holds [off, off + n): its last byte is read before a table of a size the file
// claims is allocated, so a claim larger than the file costs nothing.
bool fits(const ReadAt &read, uint64_t off, uint64_t n) {
  char last;
  return n && off < (uint64_t(1) << 62) && n < (uint64_t(1) << 62) && read(&last, 1, off_t(off + n - 1)) == 1;
}

template <typename Ehdr, typename Phdr, typename Shdr, typename Dyn, typename Sym>
bool parse(const ReadAt &read, ElfObject *o, bool symbols, std::string *why) {
  Ehdr eh;
  if (!read_exact(read, &eh, sizeof eh, 0)) return *why = "too short for an ELF header", false;
  o->machine = eh.e_machine;
  if (eh.e_phentsize != sizeof(Phdr) || eh.e_phnum > 512) return *why = "odd program headers", false;
  std::vector<Phdr> ph(eh.e_phnum);
  if (eh.e_phnum && !read_exact(read, ph.data(), sizeof(Phdr) * ph.size(), eh.e_phoff))
    return *why = "program headers out of the file", false;
  const Phdr *dynamic = nullptr;
  for (const Phdr &p : ph) {
    if (p.p_type == PT_DYNAMIC) dynamic = &p;
    if (p.p_type == PT_LOAD) o->loads.push_back({p.p_vaddr, p.p_filesz, p.p_offset});
  }
  if (!dynamic) return true;  // static: needs nothing, defines nothing dynamic
  if (dynamic->p_filesz > (1 << 20)) return *why = "a dynamic section over 1 MiB", false;
  std::vector<Dyn> dyn(dynamic->p_filesz / sizeof(Dyn));
  if (!dyn.empty() && !read_exact(read, dyn.data(), dyn.size() * sizeof(Dyn), dynamic->p_offset))
    return *why = "dynamic section out of the file", false;
  uint64_t strtab = 0, strsz = 0;
  for (const Dyn &d : dyn) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
    if (d.d_tag == DT_RELA) o->rela = d.d_un.d_ptr;
    if (d.d_tag == DT_RELASZ) o->relasz = d.d_un.d_val;
    if (d.d_tag == DT_FLAGS_1) o->flags_1 = d.d_un.d_val;
  }
  const off_t stroff = o->offset_of(strtab, 1);
  for (const Dyn &d : dyn) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag != DT_NEEDED && d.d_tag != DT_RPATH && d.d_tag != DT_RUNPATH && d.d_tag != DT_SONAME) continue;
    if (stroff < 0 || d.d_un.d_val >= strsz) return *why = "a dynamic string out of its table", false;
    char text[4096] = {};
    ssize_t n = read(text, sizeof text - 1, stroff + off_t(d.d_un.d_val));
    if (n <= 0) return *why = "a dynamic string out of the file", false;
    text[n] = '\0';  // a name without its NUL in the file ends where the file does
    if (d.d_tag == DT_NEEDED) o->needed.emplace_back(text);
    else if (d.d_tag == DT_SONAME) o->soname = text;
    else if (d.d_tag == DT_RPATH) o->has_rpath = true, o->rpath = text;
    else o->has_runpath = true, o->runpath = text;
  }
  if (!symbols || !eh.e_shnum) return true;
  if (eh.e_shentsize != sizeof(Shdr) || eh.e_shnum > 4096) return true;  // no usable section headers: no symbols
  std::vector<Shdr> sh(eh.e_shnum);
  if (!read_exact(read, sh.data(), sizeof(Shdr) * sh.size(), eh.e_shoff)) return true;
  for (const Shdr &s : sh) {
    if (s.sh_type != SHT_DYNSYM || s.sh_link >= sh.size() || s.sh_size > kMaxTable) continue;
    const Shdr &st = sh[s.sh_link];
    if (st.sh_size > kMaxTable || !fits(read, s.sh_offset, s.sh_size) || !fits(read, st.sh_offset, st.sh_size)) continue;
    std::vector<Sym> syms(s.sh_size / sizeof(Sym));
    std::string strs(st.sh_size, '\0');
    if (syms.empty() || !read_exact(read, syms.data(), syms.size() * sizeof(Sym), s.sh_offset) ||
        !read_exact(read, &strs[0], strs.size(), st.sh_offset))
      continue;
    size_t copied = 0;  // all the names together: at most a table's bound
    for (const Sym &y : syms) {
      const unsigned char type = y.st_info & 0xf;
      if (y.st_shndx == SHN_UNDEF || (type != STT_OBJECT && type != STT_FUNC) || y.st_name >= strs.size()) continue;
      const size_t len = strnlen(strs.c_str() + y.st_name, std::min(strs.size() - y.st_name, kMaxName));
      if (len == kMaxName) continue;
      if ((copied += len) > kMaxTable) {
        o->symbols_cut = true;
        break;
      }
      ElfSymbol e;
      e.name.assign(strs.c_str() + y.st_name, len);
      e.value = y.st_value, e.size = y.st_size, e.type = type;
      o->defined.push_back(std::move(e));
    }
    break;
  }
  return true;
}

}  // namespace

off_t ElfObject::offset_of(uint64_t vaddr, uint64_t n) const {
  for (const Load &l : loads)
    if (vaddr >= l.vaddr && n <= l.filesz && vaddr - l.vaddr <= l.filesz - n) return off_t(l.offset + (vaddr - l.vaddr));
  return -1;
}

bool read_elf(const ReadAt &read, ElfObject *out, bool symbols, std::string *why) {
  unsigned char ident[EI_NIDENT] = {};
  const unsigned char data = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (read(ident, sizeof ident, 0) != ssize_t(sizeof ident) || memcmp(ident, ELFMAG, SELFMAG))
    return *why = "not an ELF object", false;
  if (ident[EI_DATA] != data) return *why = "an ELF object of the other byte order", false;
  if (ident[EI_CLASS] == ELFCLASS64)
    return out->is64 = true, parse<Elf64_Ehdr, Elf64_Phdr, Elf64_Shdr, Elf64_Dyn, Elf64_Sym>(read, out, symbols, why);
  if (ident[EI_CLASS] == ELFCLASS32)
    return parse<Elf32_Ehdr, Elf32_Phdr, Elf32_Shdr, Elf32_Dyn, Elf32_Sym>(read, out, symbols, why);
  return *why = "an ELF object of no known class", false;
}

std::string elf_bytes(const ReadAt &read, const ElfObject &o, uint64_t vaddr, size_t n) {
  const off_t off = o.offset_of(vaddr, n);
  std::string b(n, '\0');
  if (off < 0 || !n || read(&b[0], n, off) != ssize_t(n)) return "";
  return b;
}

bool elf_string(const ReadAt &read, const ElfObject &o, uint64_t vaddr, size_t max, std::string *s) {
  // At most what the segment holds from vaddr on: a string may end at the segment's last byte.
  for (const ElfObject::Load &l : o.loads) {
    if (vaddr < l.vaddr || vaddr - l.vaddr >= l.filesz) continue;
    const std::string b = elf_bytes(read, o, vaddr, size_t(std::min<uint64_t>(max, l.filesz - (vaddr - l.vaddr))));
    const size_t end = b.find('\0');
    if (end == std::string::npos) return false;
    return s->assign(b, 0, end), true;
  }
  return false;
}

namespace {

uint64_t x86_64_returned(const unsigned char *c, size_t n, uint64_t pc) {
  size_t p = 0;
  if (n < 20) return 0;
  if (!memcmp(c, "\xf3\x0f\x1e\xfa", 4)) p = 4;                       // endbr64
  const bool frame = !memcmp(c + p, "\x55\x48\x89\xe5", 4);             // push %rbp; mov %rsp,%rbp (-O0)
  if (frame) p += 4;
  if (memcmp(c + p, "\x48\x8d\x05", 3)) return 0;                      // lea disp32(%rip),%rax
  int32_t disp;
  memcpy(&disp, c + p + 3, 4);
  p += 7;
  const uint64_t target = pc + p + int64_t(disp);  // %rip is the next instruction's address
  if (frame && c[p] == 0x5d) p++;                  // pop %rbp
  return c[p] == 0xc3 ? target : 0;                // ret
}

// The 21-bit signed immediate of adr/adrp (immhi:immlo, Arm ARM C6.2.10/C6.2.11).
int64_t adr_immediate(uint32_t w) {
  const int64_t imm = int64_t(((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3));
  return imm & (1 << 20) ? imm - (1 << 21) : imm;
}

// AArch64 (instructions are little-endian whatever the data order): x0 built by `adrp x0, page;
// add x0, x0, #lo12` (GCC, Clang) or `adr x0` (a linker's relaxation: lld's `nop; adr`), then
// `ret`. Passed over: nop, BTI landing pads, pointer-authentication hints (pac-ret), the -O0
// frame record (stp x29, x30 / mov x29, sp / ldp x29, x30). Anything else (a branch, a load, a
// call) ends the reading: 0.
uint64_t aarch64_returned(const unsigned char *c, size_t n, uint64_t pc) {
  bool known = false;
  uint64_t x0 = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) {
    const uint32_t w = uint32_t(c[i]) | uint32_t(c[i + 1]) << 8 | uint32_t(c[i + 2]) << 16 | uint32_t(c[i + 3]) << 24;
    if (w == 0xd503201f || (w & 0xffffff3f) == 0xd503241f) continue;            // nop; bti, bti c/j/jc
    if (w == 0xd503233f || w == 0xd503237f || w == 0xd50323bf || w == 0xd50323ff) continue;  // paci[ab]sp, auti[ab]sp
    if ((w & 0xffc07fff) == 0xa9807bfd || w == 0x910003fd || (w & 0xffc07fff) == 0xa8c07bfd) continue;  // frame record
    if ((w & 0x9f00001f) == 0x90000000) {  // adrp x0, page: the 4 KiB page of pc plus imm pages
      x0 = (pc + i) / 4096 * 4096 + uint64_t(adr_immediate(w) * 4096), known = true;
      continue;
    }
    if ((w & 0x9f00001f) == 0x10000000) {  // adr x0, label
      x0 = pc + i + uint64_t(adr_immediate(w)), known = true;
      continue;
    }
    if ((w & 0xff8003ff) == 0x91000000 && known) {  // add x0, x0, #imm12 {, lsl #12}
      x0 += uint64_t((w >> 10) & 0xfff) << (w & (1u << 22) ? 12 : 0);
      continue;
    }
    const bool ret = w == 0xd65f03c0 || w == 0xd65f0bff || w == 0xd65f0fff;  // ret, retaa, retab
    return ret && known ? x0 : 0;
  }
  return 0;
}

}  // namespace

uint64_t returned_address(const unsigned char *code, size_t n, uint64_t pc, unsigned machine) {
  if (machine == EM_X86_64) return x86_64_returned(code, n, pc);
  if (machine == EM_AARCH64) return aarch64_returned(code, n, pc);
  return 0;  // another machine: its code is not decoded (could not tell)
}

std::string returned_string(const ReadAt &read, const ElfObject &o, const ElfSymbol &fn) {
  if (!o.is64 || fn.type != STT_FUNC) return "";
  std::string code;
  for (size_t n = 32; n >= 12 && code.empty(); n -= 4) code = elf_bytes(read, o, fn.value, n);  // near a segment's end, fewer
  const uint64_t target = code.empty() ? 0 : returned_address(reinterpret_cast<const unsigned char *>(code.data()),
                                                              code.size(), fn.value, o.machine);
  std::string s;
  return target && elf_string(read, o, target, 128, &s) ? s : "";
}

namespace {
// Each relative relocation (offset, addend: B + A, elf/dl-machine.h of each machine) until visit
// returns true; that one's offset. x86-64 R_X86_64_RELATIVE, AArch64 R_AARCH64_RELATIVE: a
// compiler's pointer to a string in a shared object (UCX's option tables) is one of these.
template <typename Visit>
uint64_t each_relative(const ReadAt &read, const ElfObject &o, Visit visit) {
  const unsigned relative = o.machine == EM_X86_64 ? R_X86_64_RELATIVE : o.machine == EM_AARCH64 ? R_AARCH64_RELATIVE : 0;
  if (!o.is64 || !relative || !o.rela || o.relasz > kMaxTable) return 0;
  const off_t off = o.offset_of(o.rela, o.relasz);
  if (off < 0) return 0;
  Elf64_Rela r[512];
  for (uint64_t done = 0; done + sizeof(Elf64_Rela) <= o.relasz;) {
    const size_t n = size_t(std::min<uint64_t>(sizeof r, (o.relasz - done) / sizeof(Elf64_Rela) * sizeof(Elf64_Rela)));
    if (read(r, n, off + off_t(done)) != ssize_t(n)) return 0;
    for (size_t i = 0; i < n / sizeof(Elf64_Rela); i++)
      if (ELF64_R_TYPE(r[i].r_info) == relative && visit(r[i].r_offset, uint64_t(r[i].r_addend)))
        return r[i].r_offset;
    done += n;
  }
  return 0;
}
}  // namespace

uint64_t relocated_pointer(const ReadAt &read, const ElfObject &o, uint64_t at) {
  uint64_t target = 0;
  each_relative(read, o, [&](uint64_t where, uint64_t addend) { return where == at && (target = addend, true); });
  return target;
}

uint64_t relocation_to(const ReadAt &read, const ElfObject &o, uint64_t target) {
  return each_relative(read, o, [&](uint64_t, uint64_t addend) { return addend == target; });
}

std::vector<uint64_t> find_text(const ReadAt &read, const ElfObject &o, const std::string &text) {
  std::vector<uint64_t> at;
  const std::string needle = text + '\0';
  std::string buf;
  for (const ElfObject::Load &l : o.loads) {
    // 64 KiB at a time, no more than the segment claims (a claim is not a size: reads stop short).
    buf.assign(size_t(std::min<uint64_t>(l.filesz, 1 << 16)) + needle.size(), '\0');
    for (uint64_t done = 0; done < l.filesz && at.size() < 16; done += buf.size() - needle.size()) {
      const size_t n = size_t(std::min<uint64_t>(buf.size(), l.filesz - done));
      const ssize_t got = read(&buf[0], n, off_t(l.offset + done));
      if (got <= 0) break;
      const std::string chunk(buf, 0, size_t(got));
      for (size_t k = chunk.find(needle); k != std::string::npos && at.size() < 16; k = chunk.find(needle, k + 1))
        at.push_back(l.vaddr + done + k);
      if (size_t(got) < n || n <= needle.size()) break;
    }
  }
  return at;
}

}  // namespace cli
}  // namespace ucxtls
