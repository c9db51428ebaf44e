"""test_doctor_fidelity.py's UCX rules. Debian's UCX 1.13.1, copied into a directory of its own (so
that its modules and ucx.conf are the layout's), is the truth for 1.13 to 1.16; the oracle loads it."""
import os
import shutil
import subprocess

import harness
from harness import case, env_for
from fidelity_common import WORK, doctor, module, modules, ucp

ORACLE = os.environ.get("UCXTLSTEST_ORACLE", os.path.join(harness.BUILD_DIR, "tests", "cli", "ucx_oracle"))
DEBIAN = "/usr/lib/x86_64-linux-gnu"


def debian_copy(name):
    """WORK/name/lib: Debian's libucp, libucs, libuct and libucm (RUNPATH $ORIGIN), its cma module
    in lib/ucx; the lib directory. None when Debian's UCX or patchelf is not here."""
    if not os.path.exists(os.path.join(DEBIAN, "libucp.so.0")) or not shutil.which("patchelf"):
        return None
    d = os.path.join(WORK, name, "lib")
    os.makedirs(os.path.join(d, "ucx"))
    for lib in ("libucp.so.0", "libucs.so.0", "libuct.so.0", "libucm.so.0"):
        shutil.copy(os.path.realpath(os.path.join(DEBIAN, lib)), os.path.join(d, lib))
        subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", os.path.join(d, lib)], check=True)
    shutil.copy(os.path.realpath(os.path.join(DEBIAN, "ucx", "libuct_cma.so.0")), os.path.join(d, "ucx", "libuct_cma.so.0"))
    return d


def oracle(libucp, **extra):
    """(transports, {module: "loaded" or "not-loaded"}) as Debian's UCX loads them itself."""
    p = subprocess.run([ORACLE, libucp], env=env_for(None, preload=False, **extra), stdout=subprocess.PIPE, timeout=60)
    tls, mods = set(), {}
    for line in p.stdout.decode().splitlines():
        w = line.split(" ")
        if w[0] == "transport":
            tls.add(w[1])
        elif w[0] == "module":
            mods[w[1]] = "loaded" if w[2] == "loaded" else "not-loaded"
    return tls, mods


def debian_or_skip(t, name, what):
    d = debian_copy(name)
    if not d or not os.path.exists(ORACLE):
        t.skip(what, "no Debian UCX (libucx0), patchelf or ucx_oracle here")
    return d


def ucx_agrees(t, name, d, extra, cwd=None, who="UCX 1.13"):
    """Debian's UCX (or who) and doctor --ucx on d/libucp.so.0: the modules in ucx/ and the transports alike."""
    lib = os.path.join(d, "libucp.so.0")
    tls, real = oracle(lib, **extra)
    rc, j = doctor(["--ucx", lib, "--value", "tcp"], env=env_for(None, preload=False, **extra), cwd=cwd)
    doc = {p: ("loaded" if w == "loaded" else "not-loaded") for p, w in modules(j).items() if p in real}
    doc_tls = set(j["ucx"][0]["transports"]) if j.get("ucx") else set()
    t.check(name + ": %s loads %s, registers %d transports; doctor agrees" % (who,
            sorted(p.split("/")[-1] for p in real if real[p] == "loaded"), len(tls)),
            tls and doc == real and doc_tls == tls, "UCX: %r %r\ndoctor: %r %r" % (real, sorted(tls), modules(j), sorted(doc_tls)))
    return tls, doc_tls


@case("rule 2: UCX 1.13 to 1.21 load their compiled module list, not a module file dropped in; 1.22 scans")
def module_list(t):
    d = debian_or_skip(t, "r2", "Debian's UCX 1.13 with a dropped-in module")
    if d:
        module(os.path.join(d, "ucx", "libuct_stale.so.0"), "stale")
        tls, doc = ucx_agrees(t, "a module file not in its list (libuct_stale.so.0)", d, {})
        t.check("... and its transport is not claimed", "stale" not in tls and "stale" not in doc, repr((tls, doc)))
    # The releases after 1.16 from their source: module.c ucs_load_modules (1.21: the list; 1.22: every file).
    for version, stale_loads in (("1.21.0", False), ("1.22.0", True)):
        lib = ucp(os.path.join(WORK, "r2-" + version), version=version, modules=":listed")
        for name in ("listed", "stale"):
            module(os.path.join(WORK, "r2-" + version, "ucx", "libuct_%s.so.0" % name), name)
        got = modules(doctor(["--ucx", lib, "--value", "tcp"])[1])
        states = {p.split("_")[-1].split(".")[0]: w == "loaded" for p, w in got.items()}
        t.equal("UCX %s: the listed module loads, the other file %s" % (version, "too" if stale_loads else "not"),
                states, {"listed": True, "stale": stale_loads})
    # A version doctor cannot read: both readings, a module counted only where both load it, exit 2.
    lib = ucp(os.path.join(WORK, "r2-unknown"), version="custom build", modules=":listed")
    for name in ("listed", "stale"):
        module(os.path.join(WORK, "r2-unknown", "ucx", "libuct_%s.so.0" % name), name)
    rc, j = doctor(["--ucx", lib, "--value", "tcp"])
    got = modules(j)
    t.check("an unknown version: the listed module counts, the other could not be told",
            any(p.endswith("libuct_listed.so.0") and w == "loaded" for p, w in got.items())
            and any(p.endswith("libuct_stale.so.0") and "could not tell" in w for p, w in got.items()), repr(got))
    t.equal("... and the verdict is could not check (exit 2), never ok", rc, 2, repr(j.get("messages")))


@case("rule 3: UCX 1.22 searches UCX_PLUGIN_PATH's directories first; 1.13 has no such setting")
def plugin_path(t):
    plug = os.path.join(WORK, "r3-plugins")
    module(os.path.join(plug, "libuct_plugged.so.0"), "plugged")
    lib = ucp(os.path.join(WORK, "r3"), version="1.22.0")
    rc, j = doctor(["--ucx", lib, "--value", "plugged"], env=env_for(None, preload=False, UCX_PLUGIN_PATH="/nonexistent:" + plug))
    t.check("UCX 1.22 (global_opts.c PLUGIN_PATH, module.c ucs_load_modules): the plugin loads, its transport is served",
            modules(j).get(os.path.join(plug, "libuct_plugged.so.0")) == "loaded" and rc == 0, repr((rc, j.get("ucx"))))
    d = debian_or_skip(t, "r3-debian", "Debian's UCX 1.13 with UCX_PLUGIN_PATH")
    if d:
        tls, doc = ucx_agrees(t, "UCX_PLUGIN_PATH set", d, {"UCX_PLUGIN_PATH": plug})
        t.check("UCX 1.13 loads nothing from UCX_PLUGIN_PATH, doctor claims nothing", "plugged" not in tls | doc, repr((tls, doc)))


@case("rule 5: UCX_MODULES=all,ib is a parse error that leaves UCX's default (all)")
def modules_parse_error(t):
    d = debian_or_skip(t, "r5", "Debian's UCX 1.13 with UCX_MODULES=all,ib")
    if d:
        ucx_agrees(t, "UCX_MODULES=all,ib", d, {"UCX_MODULES": "all,ib"})
        ucx_agrees(t, "control: UCX_MODULES=ib", d, {"UCX_MODULES": "ib"})


@case("rule 6: a ucx.conf continuation line replaces the value of the line it continues")
def continuation(t):
    d = debian_or_skip(t, "r6", "Debian's UCX 1.13 reading a continuation line")
    if d:
        conf = os.path.join(WORK, "r6-conf")
        os.makedirs(conf)
        with open(os.path.join(conf, "ucx.conf"), "w") as f:
            f.write("UCX_MODULES = ib\n    cma\n")
        ucx_agrees(t, "UCX_CONFIG_DIR's ucx.conf: UCX_MODULES = ib, continued by cma", d, {"UCX_CONFIG_DIR": conf})


@case("rule 7: UCX_MODULE_DIR set but empty replaces the compiled directory")
def empty_module_dir(t):
    d = debian_or_skip(t, "r7", "Debian's UCX 1.13 with UCX_MODULE_DIR=''")
    if d:
        os.unlink(os.path.join(d, "ucx", "libuct_cma.so.0"))  # only the compiled directory has modules now
        tls, doc = ucx_agrees(t, "UCX_MODULE_DIR=''", d, {"UCX_MODULE_DIR": ""})
        t.check("UCX loads none of the compiled directory's modules (no cma), doctor claims none",
                "cma" not in tls and "cma" not in doc, repr((sorted(tls), sorted(doc))))
        tls, doc = ucx_agrees(t, "control: UCX_MODULE_DIR unset", d, {})
        t.check("control: the compiled directory's cma is loaded, and doctor says so", "cma" in tls and "cma" in doc,
                repr((sorted(tls), sorted(doc))))


@case("rule 9: UCX 1.13 to 1.16 read <libdir>/../etc/ucx.conf, not 1.17's <libdir>/../etc/ucx/ucx.conf")
def library_conf(t):
    for where, cma_loads in (("etc/ucx.conf", False), ("etc/ucx/ucx.conf", True)):
        d = debian_or_skip(t, "r9-" + where.replace("/", "-"), "Debian's UCX 1.13 with a ucx.conf beside it")
        if not d:
            return
        conf = os.path.join(os.path.dirname(d), where)
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        with open(conf, "w") as f:
            f.write("UCX_MODULES=^cma\n")
        ucx_agrees(t, "UCX_MODULES=^cma in <prefix>/%s (%s)" % (where, "read" if not cma_loads else "not read"), d, {})


@case("rule 8: UCX 1.17's section filters: a section for another CPU vendor is skipped; a model cannot be told")
def section_filters(t):
    lib = ucp(os.path.join(WORK, "r8"), version="1.22.0")
    module(os.path.join(WORK, "r8", "ucx", "libuct_filtered.so.0"), "filtered")
    vendor = cpu_vendor()
    if not vendor:
        t.skip("the vendor filter", "not an Intel or AMD CPU (doctor tells the vendor from CPUID on x86 only)")
        return
    other = "AMD" if vendor == "Intel" else "Intel"
    conf = os.path.join(WORK, "r8-conf")
    os.makedirs(conf)
    # parser.c ucs_config_parse_check_filter: fnmatch(pattern, ucs_cpu_vendor_name(), FNM_CASEFOLD).
    for text, loads, status in (("[x]\nCPU vendor = %s\nUCX_MODULES = ^filtered\n" % other, True, 0),
                                ("[x]\nCPU vendor = %s\nUCX_MODULES = ^filtered\n" % vendor.lower(), False, 0),
                                ("UCX_MODULES = ^filtered\n[x]\nCPU vendor = %s\nUCX_MODULES = all\n" % other, False, 0),
                                ("[Grace Hopper]\nCPU model = Grace\nUCX_MODULES = ^filtered\n", None, 2)):
        with open(os.path.join(conf, "ucx.conf"), "w") as f:
            f.write(text)
        rc, j = doctor(["--ucx", lib, "--value", "tcp"], env=env_for(None, preload=False, UCX_CONFIG_DIR=conf))
        got = modules(j).get(os.path.join(WORK, "r8", "ucx", "libuct_filtered.so.0"))
        if loads is None:  # UCX's model names (ucs_cpu_model_name) are beyond doctor: could not check, never ok
            t.check("%r: could not tell UCX_MODULES, exit 2" % text,
                    rc == 2 and "could not tell UCX_MODULES" in " ".join(j.get("messages", [])), repr((rc, got, j.get("messages"))))
            continue
        t.check("%r on a %s CPU: the module %s, exit %d" % (text, vendor, "loads" if loads else "is left out", status),
                (got == "loaded") == loads and rc == status, repr((rc, got, j.get("messages"))))


def cpu_vendor():
    """UCX's name for this CPU's vendor (ucs_cpu_vendor_name), from /proc/cpuinfo; "" when not x86."""
    with open("/proc/cpuinfo") as f:
        ids = [ln.split(":")[1].strip() for ln in f if ln.startswith("vendor_id")]
    return {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(ids[0] if ids else "", "")


@case("rules 3 and 8 against RAPIDS' UCX 1.22 itself: UCX_PLUGIN_PATH, and CPU vendor sections", tags=("wheels",))
def wheel_rules(t):
    venv, why = harness.wheels()
    if not venv or not os.path.exists(ORACLE):
        t.skip("RAPIDS' UCX 1.22", why or "no ucx_oracle")
        return
    d = os.path.join(harness.site_packages(venv), "libucx", "lib")
    plug = os.path.join(WORK, "wheel-plugins")
    module(os.path.join(plug, "libuct_plugged.so.0"), "plugged")
    tls, doc = ucx_agrees(t, "UCX_PLUGIN_PATH", d, {"UCX_PLUGIN_PATH": plug}, who="UCX 1.22")
    t.check("UCX 1.22 loads the plugin's transport, and doctor claims it", "plugged" in tls and "plugged" in doc, repr((tls, doc)))
    vendor = cpu_vendor()
    if not vendor:
        t.skip("the vendor sections", "not an Intel or AMD CPU")
        return
    conf = os.path.join(WORK, "wheel-conf")
    os.makedirs(conf)
    for v in (vendor, "AMD" if vendor == "Intel" else "Intel"):
        with open(os.path.join(conf, "ucx.conf"), "w") as f:
            f.write("[section]\nCPU vendor = %s\nUCX_MODULES = ^cma\n" % v)
        ucx_agrees(t, "a section for CPU vendor %s leaving cma out, on a %s CPU" % (v, vendor), d, {"UCX_CONFIG_DIR": conf},
                   who="UCX 1.22")
