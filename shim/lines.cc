// The library's stderr lines: pure functions only (see lines.h).
#include "lines.h"

#include "environ_edit.h"

namespace ucxtls {
namespace {

// A line's text goes in front of its newline: false (and an empty out) when there is no room for
// a line at all (writing the newline would overflow: found by fuzz_decide).
bool start_line(char *out, size_t cap, Text *t) {
  if (cap < 2) {
    if (cap) out[0] = '\0';
    return false;
  }
  t->init(out, cap - 1);  // room for the newline
  t->add("ucxtls: ");
  return true;
}

}  // namespace

size_t format_line(const Inputs &in, const Decision &d, char *out, size_t cap, const char *failed_write,
                   const char *now) {
  Text t;
  if (!start_line(out, cap, &t)) return 0;
  if (d.error) {
    t.add(d.reasons[0]);
  } else {
    const char *v = effective_value(in, d);
    if (failed_write && (d.action == Action::set || d.action == Action::repair)) {  // the host does not see v
      t.add("failed to set UCX_TLS=").add(v).add(" (").add(failed_write).add("): UCX_TLS ");
      if (now) t.add("is ").add_quoted(now, 200);
      else t.add("stays unset");
    } else {
      t.add(action_name(d.action));
      if (d.action == Action::set || d.action == Action::repair) t.add(" UCX_TLS=").add(v);
      else if (d.action == Action::clear) t.add(" UCX_TLS and UCXTLS_DERIVED");
      else if (v) t.add(" UCX_TLS=").add_quoted(v, 200);
      else t.add(" (UCX_TLS stays unset)");
    }
    for (int i = 0; i < d.nreasons; i++) t.add(i ? "; " : ": ").add(d.reasons[i]);
  }
  // Evidence carries names read from the file system (directory entries, link targets): a control
  // byte there would break the one-line promise, so the whole line gets the add_quoted rule.
  return t.end_line();
}

size_t format_unknown_line(const Inputs &in, const Settings &s, char *out, size_t cap) {
  Text t;
  if (!in.unknown || in.secure || s.disabled || !start_line(out, cap, &t)) {
    if (cap) out[0] = '\0';
    return 0;
  }
  const size_t n = env_name_len(in.unknown);
  // An entry without '=' (only a program's own execve can make one) is no variable at all: getenv
  // never finds it, so it sets nothing; it is named as what it is, with no suggestion (its name
  // may be an option's own: "did you mean UCXTLS_DEBUG?" for UCXTLS_DEBUG would make no sense).
  const bool no_equals = !in.unknown[n];
  t.add(no_equals ? "environment entry " : "unknown variable ").add(in.unknown, n > 64 ? 64 : n);
  if (n > 64) t.add("...");
  Var v = no_equals ? kVarCount : closest_option(in.unknown, n);
  if (no_equals) t.add(" without '=' (it sets nothing)");
  else if (v != kVarCount) t.add(" (did you mean ").add(kOptions[v].name).add("?)");
  if (in.unknown_count > 1)
    t.add(", and ").add((long long)(in.unknown_count - 1)).add(" more unknown UCXTLS_ variable")
        .add(in.unknown_count > 2 ? "s" : "");
  t.add("; ignored");
  return t.end_line();  // an environment name can hold any byte but '=' and NUL
}

}  // namespace ucxtls
