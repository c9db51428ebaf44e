// The words of the reasons and the library's stderr lines: pure functions only (see lines.h).
#include "lines.h"

#include "environ_edit.h"
#include "repair.h"

namespace ucxtls {
namespace {

// False (and an empty out) when there is no room for a line and its newline (found by fuzz_decide).
bool start_line(char *out, size_t cap, Text *t) {
  if (cap < 2) {
    if (cap) out[0] = '\0';
    return false;
  }
  t->init(out, cap - 1);  // room for the newline
  t->add("ucxtls: ");
  return true;
}


// The words of a family's evidence: the driver tier's answer for it, else the kernel probe's.
void family_words(const Decided &x, Family fam, Text &r) {
  r.add(family_name(fam)).add(": ");
  const DriverAnswer *asked = driver_asked(x.s, x.f, fam);
  if (const DriverAnswer *drv = driver_answer(x.s, x.f, fam)) {
    r.add("driver API: ").add((long long)drv->present).add(" device(s)");
    if (drv->count != drv->present) r.add(", ").add((long long)drv->count).add(" visible");
    if (drv->name[0]) r.add(" (").add(drv->name).add(")");
    return;
  }
  if (asked) {
    r.add("driver API gave no answer");
    if (asked->name[0]) r.add(" (").add(asked->name).add(")");
    r.add(", kernel: ");
  }
  r.add(x.f.family[int(fam)].evidence);
}

// The fact a decision could not probe, by name and evidence.
void cannot_tell_words(const Decided &x, Need fact, Text &r) {
  const Family fam = fact == Need::cuda ? Family::cuda : fact == Need::rocm ? Family::rocm : Family::ze;
  const char *name = fact == Need::rdma ? "rdma" : fact == Need::ucx_conf ? "ucx.conf" : family_name(fam);
  const char *evidence = fact == Need::rdma       ? x.f.rdma.evidence
                         : fact == Need::ucx_conf ? x.f.ucx_conf.evidence
                                                  : x.f.family[int(fam)].evidence;
  r.add(name).add(": cannot tell (").add(evidence).add("): nothing is written on a guess");
}

}  // namespace

void render_reason(const Decided &x, int i, char *out, size_t cap) {
  Text r(out, cap < kReasonMax ? cap : kReasonMax);
  if (!cap || i < 0 || i >= x.d.nsteps) return;
  const Step st = x.d.steps[i];
  const char *tls = x.in.get(kUcxTls);
  switch (st.reason) {
    case Reason::secure: r.add("secure execution (AT_SECURE): the library does nothing"); break;
    case Reason::disabled: r.add("UCXTLS_DISABLE is set"); break;
    case Reason::kept:
      r.add("UCX_TLS is already set (").add_quoted(tls ? tls : "").add(")");
      if (tls && !tls[0]) r.add("; empty: UCX will fail with \"The TLs list is empty\"");
      break;
    case Reason::rederived:
      r.add("UCX_TLS equals UCXTLS_DERIVED: derived by ucxtls in a parent process or on another node; deriving again");
      break;
    case Reason::mismatch:
    case Reason::repaired:
    case Reason::nothing_remains:
    case Reason::repair_too_long: {
      r.add("it names ");
      describe_foreign_entries(tls ? tls : "", x.d.family, r);
      r.add(" but this node's GPUs are ").add(family_name(x.d.family));
      if (st.reason == Reason::mismatch) r.add(": UCXTLS_REPAIR=1 rewrites them, or unset UCX_TLS");
      else if (st.reason == Reason::repaired) r.add("; UCXTLS_REPAIR=1: rewritten to this node's family");
      else if (st.reason == Reason::nothing_remains) r.add("; UCXTLS_REPAIR=1: nothing would remain of the value, so it is kept");
      else r.add("; UCXTLS_REPAIR=1: the rewritten value would be longer than ").add((long long)(kValueMax - 1)).add(" bytes, so it is kept");
      if (st.reason == Reason::repaired && repair_drops_marker(x.in, x.d))
        r.add("; UCXTLS_DERIVED (a stale marker) removed, so the repaired value is never taken for ours");
      break;
    }
    case Reason::lacks_copy:
    case Reason::copy_denied:
    case Reason::copy_appended:
    case Reason::append_too_long:
    {
      const Copy v = st.reason == Reason::copy_denied ? Copy::denied : Copy::lacks;
      r.add("it ");
      describe_copy_problem(v, x.d.family, r);
      r.add("; ");
      if (st.reason == Reason::copy_appended) r.add("UCXTLS_REPAIR=1: ").add(copy_transport(x.d.family)).add(" appended");
      else if (st.reason == Reason::append_too_long) r.add("UCXTLS_REPAIR=1: too long with it, kept");
      else describe_copy_fix(v, x.d.family, r);
      if (st.reason == Reason::copy_appended && repair_drops_marker(x.in, x.d)) r.add("; stale UCXTLS_DERIVED removed");
      break;
    }
    case Reason::invalid: {
      if (x.d.invalid_var >= kVarCount) break;
      const char *v = x.in.get(x.d.invalid_var);
      r.add(kOptions[x.d.invalid_var].name).add("=").add_quoted(v ? v : "").add(" ").add(x.d.invalid_why);
      r.add(x.d.rederived ? "; the inherited UCX_TLS derived by ucxtls is removed" : "; UCX_TLS left unchanged");
      break;
    }
    case Reason::sysroot: r.add("UCXTLS_SYSROOT=").add_quoted(x.s.sysroot ? x.s.sysroot : "").add(" (a replayed machine)"); break;
    case Reason::ucx_conf:
      r.add("a ucx.conf assigns UCX_TLS (").add(x.f.ucx_conf.evidence).add("): UCX reads it from there");
      break;
    case Reason::user_template: r.add("UCXTLS_TEMPLATE=").add_quoted(x.s.tmpl).add(" (a user template is applied as written)"); break;
    case Reason::no_gpu_placeholder: r.add("the template has no {copy} or {ipc}: no GPU probe"); break;
    case Reason::accel_forced: r.add("UCXTLS_ACCEL=").add(family_name(x.s.accel)); break;
    case Reason::driver_tier: r.add("driver tier: ").add(x.f.driver.evidence); break;
    case Reason::family_seen: family_words(x, Family(st.arg), r); break;
    case Reason::no_gpu: r.add("no GPU family found: nothing to fix here, UCX's default stands"); break;
    case Reason::rdma: r.add("rdma: ").add(x.f.rdma.evidence); break;
    case Reason::all_without_rc:
      r.add("no RDMA device UCX's rc transport runs on: all (UCX's own default), so a hard-coded rc list cannot break this node");
      break;
    case Reason::deny_ib:
      r.add("^ib: UCX lists a RoCE port it cannot open here (so all would fail \"Address not valid\") and no "
            "other device runs rc: UCX's default without its verbs transports");
      break;
    case Reason::deny_ib_gda:
      r.add("^ib: ConnectX RoCE port ").add(x.f.rdma_gda_port).add(" has no usable GID, and UCX 1.21+'s rc_gda (in all) "
            "opens it and fails the worker; no device runs rc: UCX's default without its verbs transports");
      break;
    case Reason::all_other_family:
      r.add("all (UCX's own default, with ").add(family_name(x.d.family))
          .add("'s copy transport), so a hard-coded rc_x,rc,dc_x,dc,cuda_copy cannot displace it on these GPUs");
      break;
    case Reason::cuda_list_fits:
      r.add("NVIDIA GPUs and an rc device: UCX's own default stands (all), and a hard-coded rc_x,rc,dc_x,dc,cuda_copy "
            "fits this node; UCXTLS_WRITE=always writes the template here");
      break;
    case Reason::write_always: r.add("UCXTLS_WRITE=always (the default template on every GPU node)"); break;
    case Reason::too_long:
      r.add("UCXTLS_TEMPLATE gives a value longer than ").add((long long)(kValueMax - 1)).add(" bytes; UCX_TLS left unchanged");
      break;
    case Reason::empty_value:
      r.add("the template gives an empty value for family ").add(family_name(x.d.family)).add(": nothing to write");
      break;
    case Reason::cannot_tell: cannot_tell_words(x, Need(st.arg), r); break;
  }
}

size_t format_line(const Decided &x, char *out, size_t cap, const char *failed_write, const char *now) {
  const Inputs &in = x.in;
  const Decision &d = x.d;
  Text t;
  if (!start_line(out, cap, &t)) return 0;
  char reason[kReasonMax];
  if (d.error) {
    render_reason(x, 0, reason, sizeof reason);
    t.add(reason);
  } else {
    const char *v = effective_value(in, d);
    if (failed_write) {  // a write (set, repair, clear) the host does not see
      if (d.action == Action::clear) t.add("failed to clear UCX_TLS and UCXTLS_DERIVED (").add(failed_write).add("): UCX_TLS ");
      else t.add("failed to set UCX_TLS=").add(v).add(" (").add(failed_write).add("): UCX_TLS ");
      if (now) t.add("is ").add_quoted(now, 200);
      else t.add("stays unset");
    } else {
      t.add(action_name(d.action));
      if (d.action == Action::set || d.action == Action::repair) t.add(" UCX_TLS=").add(v);
      else if (d.action == Action::clear) t.add(" UCX_TLS and UCXTLS_DERIVED");
      else if (v) t.add(" UCX_TLS=").add_quoted(v, 200);
      else t.add(" (UCX_TLS stays unset)");
    }
    for (int i = 0; i < d.nsteps; i++) {
      render_reason(x, i, reason, sizeof reason);
      t.add(i ? "; " : ": ").add(reason);
    }
  }
  // Evidence carries names read from the file system: control bytes would break the one line.
  return t.end_line();
}

void said_mark(const char *a, size_t na, const char *b, size_t nb, char out[kSaidMax]) {
  unsigned long long h = 14695981039346656037ULL;  // FNV-1a 64: offset basis, then the prime
  for (size_t i = 0; i < na; i++) h = (h ^ (unsigned char)a[i]) * 1099511628211ULL;
  for (size_t i = 0; i < nb; i++) h = (h ^ (unsigned char)b[i]) * 1099511628211ULL;
  for (int i = 15; i >= 0; i--, h >>= 4) out[i] = "0123456789abcdef"[h & 15];
  out[16] = '\0';
}

size_t format_ignored_lines(const Inputs &in, const Settings &s, char *out, size_t cap) {
  if (cap) out[0] = '\0';
  if (in.secure || s.disabled) return 0;
  const struct {
    Var v;
    const char *why, *effect;
  } ignored[] = {
      {kProbeTimeoutMs, s.timeout_why, "; ignored here (only `ucxtls probe` reads it)"},
      {kCacheDir, s.cache_dir_why,
       s.tier == ProbeTier::driver ? "; no saved driver answer is read: the kernel probe answers" : "; ignored"},
  };
  size_t n = 0;
  for (const auto &i : ignored) {
    if (!i.why) continue;
    Text t;
    if (!start_line(out + n, cap - n, &t)) break;
    const char *v = in.get(i.v);
    t.add(kOptions[i.v].name).add("=").add_quoted(v ? v : "").add(" ").add(i.why).add(i.effect);
    n += t.end_line();
  }
  return n;
}

size_t format_unknown_line(const Inputs &in, const Settings &s, char *out, size_t cap) {
  Text t;
  if (!in.unknown || in.secure || s.disabled || !start_line(out, cap, &t)) {
    if (cap) out[0] = '\0';
    return 0;
  }
  const size_t n = env_name_len(in.unknown);
  // An entry without '=' (a program's own execve) sets nothing: named so, with no suggestion.
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
