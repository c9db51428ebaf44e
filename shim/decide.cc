// The decision (see decide.h); steps numbered as in docs/how-it-decides.md.
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
    default: return "undecided";
  }
}

FactState need_state(const Facts &f, Need n) {
  switch (n) {
    case Need::rdma: return fact_state(f.rdma);
    case Need::ucx_conf: return fact_state(f.ucx_conf);
    case Need::driver: return fact_state(f.driver);
    case Need::cuda: return fact_state(f.family[int(Family::cuda)]);
    case Need::rocm: return fact_state(f.family[int(Family::rocm)]);
    case Need::ze: return fact_state(f.family[int(Family::ze)]);
    default: return FactState::known;
  }
}

Rdma rdma_kind(const Facts &f) {
  return f.rdma.value != Tri::yes ? Rdma::none : f.rdma_mlx5 ? Rdma::mlx5 : Rdma::rc;
}

const DriverAnswer *driver_asked(const Settings &s, const Facts &f, Family fam) {
  if (s.tier != ProbeTier::driver || fam == Family::rocm || fam == Family::none) return nullptr;  // ROCm: the kernel's alone
  return fam == Family::cuda ? &f.driver.cuda : &f.driver.ze;
}

const DriverAnswer *driver_answer(const Settings &s, const Facts &f, Family fam) {
  const DriverAnswer *drv = driver_asked(s, f, fam);
  return drv && drv->answered == Tri::yes ? drv : nullptr;
}

namespace {

Need family_need(Family f) { return f == Family::cuda ? Need::cuda : f == Family::rocm ? Need::rocm : Need::ze; }

// A fact the decision needs could not be probed: do nothing (removing an inherited value would be
// a guess as well).
void cannot_tell(Decision *d, Need fact) {
  d->action = Action::skip;
  d->unknown_fact = true;
  d->note(Reason::cannot_tell, uint8_t(fact));
}

Tri family_visible(const Settings &s, const Facts &f, Family fam) {
  if (const DriverAnswer *drv = driver_answer(s, f, fam)) return drv->count > 0 ? Tri::yes : Tri::no;
  return f.family[int(fam)].value;
}

const Family kFamilyOrder[] = {Family::cuda, Family::rocm, Family::ze};

// Step 5's reasons; false when a probe the answer needs could not finish.
bool note_family(const Settings &s, const FamilyAnswer &a, Decision *d) {
  if (s.accel_forced) return d->note(Reason::accel_forced), true;
  if (s.tier == ProbeTier::driver) d->note(Reason::driver_tier);
  if (a.cannot_tell) return cannot_tell(d, family_need(a.failed)), false;
  for (Family fam : kFamilyOrder) {
    d->note(Reason::family_seen, uint8_t(fam));
    if (fam == a.family) break;
  }
  return true;
}

void error(Decision *d, Reason r) {
  d->error = true;
  d->nsteps = 0;
  d->note(r);
}

// Step 3, a kept value without this node's copy transport: with UCXTLS_REPAIR an allow list gets it.
void lacks_copy(const Settings &s, Family fam, Copy copy, const char *tls, Decision *d) {
  d->family = fam;
  d->lacks_copy = true;
  if (copy == Copy::denied || !s.repair) return d->note(copy == Copy::denied ? Reason::copy_denied : Reason::lacks_copy);
  if (!append_copy(tls, fam, d->value, sizeof d->value)) return d->note(Reason::append_too_long);
  d->action = Action::repair;
  d->family_known = true;
  d->note(Reason::copy_appended);
}

// Step 3: the user's UCX_TLS stands. Its family is probed only when someone reads the reasons or
// UCXTLS_REPAIR asks.
void keep_users_value(const Settings &s, const Facts &f, const char *tls, bool reasons_read, Decision *d) {
  d->action = Action::keep;
  d->note(Reason::kept);
  // An invalid setting (UCXTLS_REPAIR=enable) still gets step 4's line; nothing is repaired.
  if (s.invalid) {
    d->invalid_var = s.invalid_var;
    d->invalid_why = s.invalid_why;
    return error(d, Reason::invalid);
  }
  if (!reasons_read && !s.repair) return;
  const FamilyAnswer a = which_family(s, f);
  if (a.need != Need::nothing) {
    d->action = Action::undecided;
    d->need = a.need;
    return;
  }
  if (a.cannot_tell) return;
  if (!gpu_mismatch(tls, a.family)) {
    const Copy copy = copy_verdict(tls, a.family);
    return copy == Copy::carries ? void() : lacks_copy(s, a.family, copy, tls, d);
  }
  d->family = a.family;
  d->mismatch = true;
  if (!s.repair) return d->note(Reason::mismatch);
  switch (repair_value(tls, a.family, d->value, sizeof d->value)) {
    case Repair::repaired: break;
    case Repair::too_long: return d->note(Reason::repair_too_long);
    default: return d->note(Reason::nothing_remains);  // no_mismatch cannot be: gpu_mismatch said so
  }
  d->action = Action::repair;
  d->family_known = true;  // the value is now composed for it
  d->note(Reason::repaired);
}

void decide_all(Decision *d, Reason why) {
  memcpy(d->value, kAllTransports, sizeof kAllTransports);
  d->action = Action::set;
  d->note(why);
}

// No device runs rc: all, or ^ib where all would fail too: a RoCE port UCX lists but cannot open,
// or, for NVIDIA GPUs, a ConnectX RoCE port without a usable GID that UCX 1.21+'s rc_gda opens
// without UCX's port check (gdaki.c uct_gdaki_query_tl_devices).
void write_without_rc(const Facts &f, Decision *d) {
  const bool gda = f.rdma_gda_fails && d->family == Family::cuda;  // rc_gda lists CUDA GPUs alone
  if (!f.rdma_unopenable && !gda) return decide_all(d, Reason::all_without_rc);
  memcpy(d->value, kDenyIb, sizeof kDenyIb);
  d->action = Action::set;
  d->note(f.rdma_unopenable ? Reason::deny_ib : Reason::deny_ib_gda);
}

}  // namespace

FamilyAnswer which_family(const Settings &s, const Facts &f) {
  FamilyAnswer a;
  if (s.accel_forced) {
    a.family = s.accel;
    return a;
  }
  if (s.tier == ProbeTier::driver && f.driver.value == Tri::unknown) {
    a.need = Need::driver;
    return a;
  }
  for (Family fam : kFamilyOrder) {
    Tri v = family_visible(s, f, fam);
    if (v == Tri::unknown) {
      if (need_state(f, family_need(fam)) == FactState::cannot_tell) a.cannot_tell = true, a.failed = fam;
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

void decide(const Inputs &in, const Settings &s, const Facts &f, Decision *d, bool reasons_read) {
  d->action = Action::undecided;
  d->need = Need::nothing;
  d->family = Family::none;
  d->family_known = false;
  d->rederived = false;
  d->error = false;
  d->unknown_fact = false;
  d->mismatch = false;
  d->lacks_copy = false;
  d->value[0] = '\0';
  d->nsteps = 0;

  // 1. Secure execution: nothing is read.
  if (in.secure) {
    d->action = Action::skip;
    return d->note(Reason::secure);
  }
  // 2. Turned off.
  if (s.disabled) {
    d->action = Action::skip;
    return d->note(Reason::disabled);
  }
  // 3. UCX_TLS present, even empty: the user's, unless it is our own inherited value.
  const char *tls = in.get(kUcxTls);
  if (tls) {
    const char *derived = in.get(kDerived);
    // The library never writes an empty value: an empty marker marks nothing.
    if (!derived || !derived[0] || strcmp(tls, derived) != 0) return keep_users_value(s, f, tls, reasons_read, d);
    d->rederived = true;
    d->note(Reason::rederived);
  }
  // 4. An invalid setting: one error line; an inherited value of ours is removed, not kept on a guess.
  if (s.invalid) {
    d->action = d->rederived ? Action::clear : Action::skip;
    d->invalid_var = s.invalid_var;
    d->invalid_why = s.invalid_why;
    return error(d, Reason::invalid);
  }
  if (s.sysroot) d->note(Reason::sysroot);
  const Action leave_unset = d->rederived ? Action::clear : Action::skip;
  const bool default_template = !s.template_from_user;

  if (!default_template) d->note(Reason::user_template);

  // 5. Family, for the default template and {copy} or {ipc}. Asked before ucx.conf: a node without
  // a GPU then never touches $HOME or $UCX_CONFIG_DIR, which may be a hard-mounted NFS that hangs.
  if (default_template || template_uses_copy(s.tmpl)) {
    const FamilyAnswer a = which_family(s, f);
    if (a.need != Need::nothing) return void(d->need = a.need);
    if (!note_family(s, a, d)) return;
    d->family = a.family;
    d->family_known = true;
    // UCXTLS_ACCEL=none is a node without GPUs; only UCXTLS_WRITE=always composes for it.
    if (default_template && a.family == Family::none && !(s.accel_forced && s.write_always)) {
      d->action = leave_unset;
      return d->note(Reason::no_gpu);
    }
  } else {
    // No family asked: doctor judges a build by the node's family (family_known stays false).
    d->note(Reason::no_gpu_placeholder);
  }

  // 6. A ucx.conf assigns UCX_TLS: an environment value, all included, would override it.
  switch (fact_state(f.ucx_conf)) {
    case FactState::cannot_tell: return cannot_tell(d, Need::ucx_conf);
    case FactState::to_probe: return void(d->need = Need::ucx_conf);
    case FactState::known: break;
  }
  if (f.ucx_conf.value == Tri::yes) {
    d->action = d->rederived ? Action::clear : Action::keep;
    return d->note(Reason::ucx_conf);
  }

  // 7. The default writes only where a hard-coded CUDA rc list would be wrong for the node: all for
  // another family's GPUs, all for NVIDIA without an rc device, nothing where the list fits.
  const bool guarded = default_template && !s.write_always && d->family != Family::none;
  if (default_template && s.write_always) d->note(Reason::write_always);
  if (guarded && d->family != Family::cuda) return decide_all(d, Reason::all_other_family);
  if (default_template || template_uses_rdma(s.tmpl)) {
    switch (fact_state(f.rdma)) {
      case FactState::cannot_tell: return cannot_tell(d, Need::rdma);
      case FactState::to_probe: return void(d->need = Need::rdma);
      case FactState::known: break;
    }
    d->note(Reason::rdma);
    if (default_template && f.rdma.value == Tri::no && d->family != Family::none) return write_without_rc(f, d);
    if (guarded) {
      d->action = leave_unset;
      return d->note(Reason::cuda_list_fits);
    }
  }

  // 8. Compose. An empty result is never written.
  if (!compose(s.tmpl, d->family, rdma_kind(f), d->value, sizeof d->value)) {
    d->action = Action::skip;
    d->value[0] = '\0';
    return error(d, Reason::too_long);
  }
  if (!d->value[0] || !strcmp(d->value, "^")) {
    d->action = leave_unset;
    d->value[0] = '\0';
    return d->note(Reason::empty_value);
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

bool repair_drops_marker(const Inputs &in, const Decision &d) {
  return d.action == Action::repair && in.get(kDerived) != nullptr;
}

}  // namespace ucxtls
