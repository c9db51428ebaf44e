// The decision: pure functions only (see decide.h). The steps are numbered as the ladder in
// docs/design.md ("The ladder") and docs/how-it-decides.md.
#include "decide.h"

#include <string.h>

#include "repair.h"

namespace ucxtls {

const char *action_name(Action a) {
  switch (a) {
    case Action::set: return "set";
    case Action::keep: return "keep";
    case Action::skip: return "skip";
    case Action::clear: return "clear";
    case Action::repair: return "repair";
    default: return "need";
  }
}

const char *need_name(Need n) {
  switch (n) {
    case Need::rdma: return "rdma";
    case Need::ucx_conf: return "ucx_conf";
    case Need::driver: return "driver";
    case Need::cuda: return "cuda";
    case Need::rocm: return "rocm";
    case Need::ze: return "ze";
    default: return "nothing";
  }
}

Rdma rdma_kind(const Facts &f) { return f.rdma != Tri::yes ? Rdma::none : f.rdma_mlx5 ? Rdma::mlx5 : Rdma::rc; }

Text Decision::reason(bool always) {
  Text t;
  if (quiet && !always) {
    t.init(nullptr, 0);  // every add() returns at once
  } else if (nreasons < kReasonsMax) {
    t.init(reasons[nreasons++], kReasonMax);
  } else {
    t.init(reasons[kReasonsMax - 1], kReasonMax);  // the last line absorbs the rest
    t.len = strlen(t.data);
    t.add("; ");
  }
  return t;
}

namespace {

Need family_need(Family f) { return f == Family::cuda ? Need::cuda : f == Family::rocm ? Need::rocm : Need::ze; }

// A fact the decision needs could not be probed: do nothing (an inherited value stays, since
// removing it would be a guess as well), and say which fact and why.
void cannot_tell(Decision *d, const char *fact, const char *evidence) {
  d->action = Action::skip;
  d->unknown_fact = true;
  d->reason().add(fact).add(": cannot tell (").add(evidence).add("): nothing is written on a guess");
}

// Is family fam visible, by the driver tier when it answered for fam, else by the kernel tier?
// With a decision, adds the evidence as a reason. Returns unknown when a probe is still needed.
Tri family_visible(const Settings &s, const Facts &f, Family fam, Decision *explain) {
  const DriverAnswer *drv = nullptr;
  if (s.tier == ProbeTier::driver && fam != Family::rocm)
    drv = fam == Family::cuda ? &f.driver.cuda : &f.driver.ze;
  if (drv && drv->answered == Tri::yes) {
    if (explain) {
      Text r = explain->reason();
      r.add(family_name(fam)).add(": driver API: ").add((long long)drv->present).add(" device(s)");
      if (drv->count != drv->present) r.add(", ").add((long long)drv->count).add(" visible");
      if (drv->name[0]) r.add(" (").add(drv->name).add(")");
    }
    return drv->count > 0 ? Tri::yes : Tri::no;
  }
  const FamilyFact &k = f.family[int(fam)];
  if (k.visible == Tri::unknown) return Tri::unknown;
  if (explain) {
    Text r = explain->reason();
    r.add(family_name(fam)).add(": ");
    if (drv) {
      r.add("driver API gave no answer");
      if (drv->name[0]) r.add(" (").add(drv->name).add(")");
      r.add(", kernel: ");
    }
    r.add(k.evidence);
  }
  return k.visible;
}

const Family kFamilyOrder[] = {Family::cuda, Family::rocm, Family::ze};


// Step 6's evidence: the family forced, or each family looked at; false (decided: cannot tell)
// when a probe that the answer needs could not finish.
bool explain_family(const Settings &s, const Facts &f, const FamilyAnswer &a, Decision *d) {
  if (s.accel_forced) {
    d->reason().add("UCXTLS_ACCEL=").add(family_name(s.accel));
    return true;
  }
  if (s.tier == ProbeTier::driver) d->reason().add("driver tier: ").add(f.driver.evidence);
  if (a.cannot_tell) {
    cannot_tell(d, family_name(a.failed), f.family[int(a.failed)].evidence);
    return false;
  }
  for (Family fam : kFamilyOrder) {
    family_visible(s, f, fam, d);
    if (fam == a.family) break;
  }
  return true;
}

// Step 3: the user's UCX_TLS stands. A value naming another GPU family's transports and none of
// this node's is looked at only when someone will read about it (the debug line, `explain`) or
// asked to repair it: the family probe costs nothing otherwise.
void keep_users_value(const Settings &s, const Facts &f, const char *tls, Decision *d) {
  d->action = Action::keep;
  Text r = d->reason();
  r.add("UCX_TLS is already set (").add_quoted(tls).add(")");
  if (!tls[0]) r.add("; empty: UCX will fail with \"The TLs list is empty\"");
  if (s.invalid || !gpu_families_named(tls) || (d->quiet && !s.repair)) return;
  const FamilyAnswer a = which_family(s, f);
  if (a.need != Need::nothing) {
    d->action = Action::need;
    d->need = a.need;
    return;
  }
  if (a.cannot_tell || !gpu_mismatch(tls, a.family)) return;
  d->family = a.family;
  d->mismatch = true;
  Text m = d->reason();
  m.add("it names ");
  describe_foreign_entries(tls, a.family, m);
  m.add(" but this node's GPUs are ").add(family_name(a.family));
  if (!s.repair) return void(m.add(": UCXTLS_REPAIR=1 rewrites them, or unset UCX_TLS"));
  if (!repair_value(tls, a.family, d->value, sizeof d->value))
    return void(m.add("; UCXTLS_REPAIR=1: nothing would remain of the value, so it is kept"));
  d->action = Action::repair;
  d->family_known = true;  // the value is now composed for it
  m.add("; UCXTLS_REPAIR=1: rewritten to this node's family");
}
}  // namespace

FamilyAnswer which_family(const Settings &s, const Facts &f) {
  FamilyAnswer a;
  if (s.accel_forced) {
    a.family = s.accel;
    return a;
  }
  if (s.tier == ProbeTier::driver && f.driver.ran == Tri::unknown) {
    a.need = Need::driver;
    return a;
  }
  for (Family fam : kFamilyOrder) {
    Tri v = family_visible(s, f, fam, nullptr);
    if (v == Tri::unknown) {
      if (f.family[int(fam)].error) a.cannot_tell = true, a.failed = fam;
      else a.need = family_need(fam);
      return a;
    }
    if (v == Tri::yes) {
      a.family = fam;
      return a;
    }
  }
  return a;
}

void decide(const Inputs &in, const Settings &s, const Facts &f, Decision *d) {
  d->action = Action::need;
  d->need = Need::nothing;
  d->family = Family::none;
  d->family_known = false;
  d->rederived = false;
  d->error = false;
  d->unknown_fact = false;
  d->value[0] = '\0';
  d->nreasons = 0;

  // 1. Secure execution: nothing is read.
  if (in.secure) {
    d->action = Action::skip;
    d->reason().add("secure execution (AT_SECURE): the library does nothing");
    return;
  }
  // 2. Turned off.
  if (s.disabled) {
    d->action = Action::skip;
    d->reason().add("UCXTLS_DISABLE is set");
    return;
  }
  // 3. UCX_TLS present, even empty: the user's, unless it is our own inherited value.
  const char *tls = in.get(kUcxTls);
  if (tls) {
    const char *derived = in.get(kDerived);
    // The library never writes an empty value: an empty marker marks nothing.
    if (!derived || !derived[0] || strcmp(tls, derived) != 0) return keep_users_value(s, f, tls, d);
    d->rederived = true;
    d->reason().add("UCX_TLS equals UCXTLS_DERIVED: derived by ucxtls in a parent process or on another node; deriving again");
  }
  // 4. An invalid setting: one error line, nothing else; but an inherited value of ours, maybe
  // derived for another node's GPUs, is removed rather than kept on a guess (UCX's default works).
  if (s.invalid) {
    d->action = d->rederived ? Action::clear : Action::skip;
    d->error = true;
    d->nreasons = 0;
    const char *v = in.get(s.invalid_var);
    d->reason(true)
        .add(kOptions[s.invalid_var].name)
        .add("=")
        .add_quoted(v ? v : "")
        .add(" ")
        .add(s.invalid_why)
        .add(d->rederived ? "; the inherited UCX_TLS derived by ucxtls is removed" : "; UCX_TLS left unchanged");
    return;
  }
  if (s.sysroot) d->reason().add("UCXTLS_SYSROOT=").add_quoted(s.sysroot).add(" (a replayed machine)");
  const Action leave_unset = d->rederived ? Action::clear : Action::skip;
  const bool default_template = !s.template_from_user;

  // 5. A ucx.conf that UCX reads assigns UCX_TLS: an environment value, all included, would
  // override the administrator's file.
  if (f.ucx_conf == Tri::unknown) {
    if (f.ucx_conf_error) return cannot_tell(d, "ucx.conf", f.ucx_conf_evidence);
    return void(d->need = Need::ucx_conf);
  }
  if (f.ucx_conf == Tri::yes) {
    d->action = d->rederived ? Action::clear : Action::keep;
    d->reason().add("a ucx.conf assigns UCX_TLS (").add(f.ucx_conf_evidence).add("): UCX reads it from there");
    return;
  }
  if (!default_template) d->reason().add("UCXTLS_TEMPLATE=").add_quoted(s.tmpl).add(" (a user template is applied as written)");

  // 6. Family: needed by the default template (no GPU: nothing to fix) and by {copy} or {ipc};
  // forced, or probed in priority order CUDA, ROCm, ze.
  if (default_template || template_uses_copy(s.tmpl)) {
    const FamilyAnswer a = which_family(s, f);
    if (a.need != Need::nothing) return void(d->need = a.need);
    if (!explain_family(s, f, a, d)) return;
    d->family = a.family;
    if (default_template && a.family == Family::none && !s.accel_forced) {
      d->family_known = true;
      d->action = leave_unset;
      d->reason().add("no GPU family found: nothing to fix here, UCX's default stands");
      return;
    }
  } else {
    d->reason().add("the template has no {copy} or {ipc}: no GPU probe");
  }
  d->family_known = true;

  // 7. Network: the default template's {rdma} needs a device UCX's rc transport runs on; without
  // one, a GPU family gets all (UCX's own default), so a hard-coded rc list cannot break the node.
  // A user's template is applied as written; its {rdma} needs the same fact.
  if (default_template || template_uses_rdma(s.tmpl)) {
    if (f.rdma == Tri::unknown) {
      if (f.rdma_error) return cannot_tell(d, "rdma", f.rdma_evidence);
      return void(d->need = Need::rdma);
    }
    d->reason().add("rdma: ").add(f.rdma_evidence);
    if (default_template && f.rdma == Tri::no && d->family != Family::none) {
      memcpy(d->value, kAllTransports, sizeof kAllTransports);
      d->action = Action::set;
      d->reason().add("no RDMA device UCX's rc transport runs on: all (UCX's own default), so a hard-coded rc list cannot break this node");
      return;
    }
  }

  // 8. Compose. An empty result is never written.
  if (!compose(s.tmpl, d->family, rdma_kind(f), d->value, sizeof d->value)) {
    static constexpr auto kTooLong =
        lit("UCXTLS_TEMPLATE gives a value longer than ") + decimal<kValueMax - 1>() + lit(" bytes; UCX_TLS left unchanged");
    d->action = Action::skip;
    d->error = true;
    d->nreasons = 0;
    d->value[0] = '\0';
    d->reason(true).add(kTooLong.s);
    return;
  }
  if (!d->value[0] || !strcmp(d->value, "^")) {
    d->action = leave_unset;
    d->value[0] = '\0';
    d->reason().add("the template gives an empty value for family ").add(family_name(d->family)).add(": nothing to write");
    return;
  }
  // 9. Write.
  d->action = Action::set;
}

const char *effective_value(const Inputs &in, const Decision &d) {
  switch (d.action) {
    case Action::set:
    case Action::repair: return d.value;
    case Action::clear: return nullptr;
    default: return in.get(kUcxTls);
  }
}

bool env_needs_write(const Inputs &in, const Decision &d) {
  if (d.action == Action::clear) return true;
  if (d.action == Action::repair) return strcmp(in.get(kUcxTls), d.value) != 0;
  if (d.action != Action::set) return false;
  const char *tls = in.get(kUcxTls), *derived = in.get(kDerived);
  return !(tls && derived && !strcmp(tls, d.value) && !strcmp(derived, d.value));
}

}  // namespace ucxtls
