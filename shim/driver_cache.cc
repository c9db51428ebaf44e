// The driver tier in the library: reads the answer `ucxtls probe --save` stored for this node, with
// a handful of system calls, no allocation, no process, no dlopen. Every failure is "no answer"
// with the reason and the remedy in the evidence: the kernel probe's answer stands.
#include "driver_cache.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "driver_report.h"
#include "probe.h"
#include "sys.h"

namespace ucxtls {
namespace {

const char kRemedy[] = "; run ucxtls probe --save";
// A new answer cannot fix its directory: where to keep one instead.
const char kDirRemedy[] = "; use a directory only root or you can write";

// Static: the constructor keeps the host's stack under 8 KiB (tests/perf/test_stack.py).
UCXTLS_FILE_BACKED char g_report[kDriverReportMax];

enum class Found : uint8_t { missing, decided };

void add_file(Text &ev, const Path &dir) { ev.add(dir.buf).add("/").add(kCacheFileName); }

// The saved answer is not used: the evidence names the file, why, and how to save a new one.
Text &ignored(Text &ev, const Path &dir) { return add_file(ev, dir), ev.add(" ignored: "); }
Found reject(Text &ev, const Path &dir, const char *what, const char *why = "", const char *remedy = kRemedy) {
  ignored(ev, dir).add(what).add(why).add(remedy);
  return Found::decided;
}

// The report, accepted when it is this boot's and no driver loaded since it was saved.
Found accept_if_current(const Inputs &in, const Settings &s, const Path &dir, char *text, size_t len, long long mtime_ns,
          DriverFact *out, Text &ev) {
  DriverReport r;
  const char *why = nullptr;
  if (!parse_driver_report(text, len, &r, &why)) return reject(ev, dir, "malformed: ", why);
  if (!r.boot) return reject(ev, dir, "malformed: no boot line");
  char boot[kBootIdMax + 8];
  ssize_t n = read_boot_id(s, boot, sizeof boot);
  if (n <= 0) return reject(ev, dir, "this boot's id (/proc/sys/kernel/random/boot_id) cannot be read");
  if (!same_boot(r.boot, boot, size_t(n))) return reject(ev, dir, "saved in another boot");
  char node[256];
  if (driver_loaded_after(s, mtime_ns, node, sizeof node)) {
    ignored(ev, dir).add("stale, ").add(node).add(" is newer (a driver loaded since)").add(kRemedy);
    return Found::decided;
  }
  answer_from_report(r, in, out);
  out->value = Tri::yes;
  ev.add("answer saved by ucxtls probe at ");
  add_file(ev, dir);
  return Found::decided;
}

// One cache directory: missing (try the next place), or decided (used, or ignored with why).
Found read_cache(const Inputs &in, const Settings &s, const Path &dir, DriverFact *out, Text &ev) {
  const int dfd = open_dir(dir);
  if (dfd < 0) {
    if (dfd == -ENOENT) return Found::missing;
    ignored(ev, dir).add("its directory cannot be opened (").add(errno_name(dfd)).add(")").add(kRemedy);
    return Found::decided;
  }
  FileFacts facts;
  char why_buf[96];
  Text why(why_buf, sizeof why_buf);
  // Whose files are trusted besides root's: asked only for a file that is not root's.
  unsigned euid = ~0u;
  auto reader = [&euid](const FileFacts &f) {
    if (f.uid != 0 && euid == ~0u) euid = effective_uid();
    return f.uid != 0 ? euid : 0u;
  };
  if (stat_fd(dfd, &facts) != 0 || !cache_trusted(facts, reader(facts), true, why)) {
    close_fd(dfd);
    return reject(ev, dir, "its directory ", why.len ? why_buf : "cannot be checked (fstat failed)", kDirRemedy);
  }
  // Checked before the open (a FIFO gets no reader, a device no open), and what was opened again:
  // a file swapped in between, in a trusted directory, is another `ucxtls probe --save`'s.
  int fd = stat_in(dfd, kCacheFileName, &facts);
  if (fd == -ENOENT) return close_fd(dfd), Found::missing;
  const char *what = nullptr, *detail = "";
  if (fd == 0) {
    if ((facts.mode & S_IFMT) == S_IFLNK) what = "it is a symbolic link";
    else if (!cache_trusted(facts, reader(facts), false, why)) what = "it ", detail = why_buf;
    else if (facts.size > (long long)sizeof g_report) what = "larger than any answer ucxtls probe writes";
    else fd = open_file_in(dfd, kCacheFileName);
  }
  close_fd(dfd);
  if (what) return reject(ev, dir, what, detail);
  if (fd < 0) {
    if (fd == -ENOENT) return Found::missing;  // removed meanwhile
    ignored(ev, dir).add("it cannot be opened (").add(errno_name(fd)).add(")").add(kRemedy);
    return Found::decided;
  }
  if (stat_fd(fd, &facts) != 0 || !cache_trusted(facts, reader(facts), false, why) ||
      facts.size > (long long)sizeof g_report) {
    close_fd(fd);
    return reject(ev, dir, "it changed while it was read");
  }
  char *const text = g_report;
  ssize_t len = 0;  // the size fstat gave, read whole (a file replaced meanwhile is another inode)
  while (len < facts.size) {
    ssize_t got = read_some(fd, text + len, size_t(facts.size - len));
    if (got <= 0) break;
    len += got;
  }
  close_fd(fd);
  return accept_if_current(in, s, dir, text, size_t(len), facts.mtime_ns, out, ev);
}

}  // namespace

ssize_t read_boot_id(const Settings &s, char *buf, size_t cap) {
  ssize_t n = read_small(Path(s.sysroot, "/proc/sys/kernel/random/boot_id"), buf, cap - 1);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return n;
}

bool driver_loaded_after(const Settings &s, long long cache_mtime_ns, char *node, size_t cap) {
  const char *const nodes[] = {"/dev/nvidiactl", "/dev/dri"};
  for (const char *name : nodes) {
    FileFacts f;
    if (stat_path(Path(s.sysroot, name), &f) == 0 && f.mtime_ns > cache_mtime_ns) {
      Text(node, cap).add(name);  // the sysroot is in the debug line already
      return true;
    }
  }
  return false;
}

void probe_driver_at(const Inputs &in, const Settings &s, const CacheDir *dirs, int n, DriverFact *out) {
  *out = DriverFact();
  out->value = Tri::no;
  out->cuda.answered = out->ze.answered = Tri::no;
  Text ev(out->evidence, sizeof out->evidence);
  for (int i = 0; i < n; i++) {
    Path dir(nullptr, dirs[i].base);
    dir.add(dirs[i].sub);
    if (read_cache(in, s, dir, out, ev) == Found::decided) return;
  }
  ev.add("no saved answer at ");
  for (int i = 0; i < n; i++) ev.add(i ? " or " : "").add(dirs[i].base).add(dirs[i].sub).add("/").add(kCacheFileName);
  ev.add(kRemedy);
}

void probe_driver(const Inputs &in, const Settings &s, DriverFact *out) {
  if (s.cache_dir_why) {  // no place to read: as a missing answer, the kernel probe answers
    probe_driver_at(in, s, nullptr, 0, out);
    Text ev(out->evidence, sizeof out->evidence);
    const char *v = in.get(kCacheDir);
    ev.add(kOptions[kCacheDir].name).add("=").add_quoted(v ? v : "").add(" ").add(s.cache_dir_why)
        .add(": no saved answer read").add(kRemedy);
    return;
  }
  CacheDir dirs[2];
  probe_driver_at(in, s, dirs, cache_dirs(in, dirs), out);
}

}  // namespace ucxtls
