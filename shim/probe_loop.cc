// The probe loop: ask the decision which fact it needs, probe it, ask again (see probe.h).
#include "probe.h"
#include "sys.h"

#include <unistd.h>  // F_OK

namespace ucxtls {

namespace {

// Its own frame (a Path), entered once per process at most: not on every path's stack.
__attribute__((noinline)) bool is_directory(const char *path) {
  return path_access(Path(nullptr, path).add("/."), F_OK) == 0;  // "/." fails on a file
}

// Bounded: each pass fills one fact. The sysroot is checked to be a directory once the facts are
// in, and only when no call under it succeeded; the paths that probe nothing make no call. A bad
// sysroot marks the settings invalid and ask() is asked again: its facts are never used.
template <typename Ask>
void probe_until(Ask ask, const Inputs &in, Settings *s, const ProbeOptions &o, Facts *f) {
  bool sysroot_checked = !s->sysroot, probed = false;
  for (int pass = 0; pass < 16; pass++) {
    const Need need = ask(*s);
    if (need != Need::nothing) {
      probe(need, in, *s, o, f);
      probed = true;
      continue;
    }
    if (sysroot_checked || !probed) return;
    sysroot_checked = true;
    if (sysroot_answered()) return;
    const char *why = sysroot_problem(s->sysroot, true, is_directory(s->sysroot));
    if (!why) return;
    mark_invalid(s, kSysroot, why);
  }
}

}  // namespace

void run_ladder(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f, Decision *d) {
  Settings checked = s;
  probe_until(
      [&](const Settings &cs) {
        decide(in, cs, *f, d, o.evidence);
        return d->action == Action::undecided ? d->need : Need::nothing;
      },
      in, &checked, o, f);
}

Family probe_family(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f) {
  Settings checked = s;
  checked.invalid = false;  // asked whatever else the settings say, but on a usable sysroot
  FamilyAnswer a;
  probe_until(
      [&](const Settings &cs) {
        if (cs.invalid) return Need::nothing;
        a = which_family(cs, *f);
        return a.cannot_tell ? Need::nothing : a.need;
      },
      in, &checked, o, f);
  return checked.invalid || a.cannot_tell || a.need != Need::nothing ? Family::none : a.family;
}

}  // namespace ucxtls
