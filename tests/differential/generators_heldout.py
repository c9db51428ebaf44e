"""The held-out generator of the differential test (UCXTLSTEST_DIFF_GENERATOR=heldout): written
apart from generators.grid and shaped otherwise. It starts from a site's scenario, as builds are
found in the field, then applies one to three of the changes sites and users make to one:
  wheel    a Python wheel: libucp, libuct, libucs beside each other with RUNPATH $ORIGIN, its
           modules in lib/ucx, the module directory compiled in at a build path that is not here
           (RAPIDS' libucx, NIXL's .libs), ucx.conf with CPU vendor sections (RAPIDS ships them)
  envmod   an environment module: /apps/ucx/<v>/lib on LD_LIBRARY_PATH, a program without RUNPATH,
           an older UCX in the cache as well
  distro   a distribution package: the cache only, the module directory compiled in and present
  hwcaps   the same build optimized in glibc-hwcaps (or a legacy hwcap directory), a generic copy
  split    libucs and libuct in another directory than libucp, found through RPATH inheritance
Its changes: a module's library removed or put elsewhere, a module dropped in (not in the
compiled list), UCX_MODULES, UCX_MODULE_DIR (set, empty, in a file), UCX_PLUGIN_PATH, a
continuation line, a file that is not ELF ahead of a library, libucs reached through a link."""
import os

from layout import Layout

NAMES = ("ib", "cuda", "rocm", "ze", "cma", "knem")


def _build(rng, L, lib, ucs_lib=None, ucp_dir=None, ucp_path=None, modules=None, compiled=None):
    """A build: libucp in ucp_dir (default lib), libuct and libucs in ucs_lib (default lib), its
    modules (name -> needed libraries) in <ucs_lib>/ucx."""
    ucs_lib = ucs_lib or lib
    ucp_dir = ucp_dir or lib
    L.obj("ucp", ucp_dir + "/libucp.so.0", **({"runpath": ucp_path} if ucp_path else {}))
    listed = [n for n in NAMES[:5] if rng.random() < 0.7] or ["cuda"]
    L.obj("uct", ucs_lib + "/libuct.so.0", runpath="$ORIGIN", uct_modules=":".join(listed))
    L.obj("ucs", ucs_lib + "/libucs.so.0", module_dir=compiled or ucs_lib + "/ucx")
    for name, needs in (modules or {}).items():
        L.obj("mod:" + name, ucs_lib + "/ucx/libuct_%s.so.0" % name, add=needs, runpath="$ORIGIN/..")
    return ucs_lib


def _modules(rng):
    return {n: ([rng.choice(("libdepa.so.1", "libdepb.so.1"))] if rng.random() < 0.4 else [])
            for n in rng.sample(NAMES[:5], rng.randint(1, 3))}


def scenario(rng, L):
    """Lays out a scenario; returns (libucs's directory, the directories a module's libraries may go)."""
    kind = rng.choice(("wheel", "envmod", "distro", "hwcaps", "split"))
    L.tags.add("scenario-" + kind)
    mods = _modules(rng)
    if kind == "wheel":
        lib = "/venv/lib/python3.11/site-packages/libucx/lib"
        _build(rng, L, lib, ucp_path="$ORIGIN", modules=mods, compiled="/project/build-wheel/lib/ucx")
        L.obj("app", "/venv/bin/ucx_info", runpath="$ORIGIN/../lib/python3.11/site-packages/libucx/lib")
        if rng.random() < 0.5:
            vendor = rng.choice(("AMD", "Intel", "Nvidia"))
            L.texts.append((lib + "/../etc/ucx/ucx.conf", "[Grace Hopper]\nCPU vendor = Nvidia\nUCX_MODULES = ^ib\n"
                            "[%s]\nCPU vendor = %s\nUCX_MODULES = ^cma\n" % (vendor, vendor)))
            L.tags.add("conf-section-filter")
        return lib, [lib, lib + "/ucx"]
    if kind == "envmod":
        lib = "/apps/ucx/%s/lib" % L.version
        _build(rng, L, lib, modules=mods)
        _build(rng, L, "/opt/sysucx/lib", ucp_path="$ORIGIN")  # an older UCX in the cache
        L.objs[-3].version = L.version + "-system"  # the same release's rules: its libucs is of that style
        L.cache.append("/opt/sysucx/lib")
        L.obj("app", "/apps/tools/bin/ucx_info")
        L.env["LD_LIBRARY_PATH"] = rng.choice((lib, lib + ":/apps/cuda/lib64", "/apps/cuda/lib64;" + lib, ":" + lib))
        if L.env["LD_LIBRARY_PATH"].startswith(":"):
            L.tags.add("ldlp-empty-entry")
        return lib, ["/apps/cuda/lib64", lib, None]
    if kind == "distro":
        lib = "/opt/distro/lib/x86_64-linux-gnu"
        _build(rng, L, lib, modules=mods)
        L.cache.append(lib)
        L.obj("app", "/opt/distro/bin/ucx_info")
        if rng.random() < 0.4:
            L.texts.append(("/etc/ucx/ucx.conf", "UCX_MODULES = %s\n" % rng.choice(("^cuda", "ib,cma", "all"))))
        return lib, ["/opt/cudalibs", lib + "/ucx", None]
    if kind == "hwcaps":
        lib = "/opt/tuned/lib"
        sub = rng.choice(("glibc-hwcaps/x86-64-v2", "glibc-hwcaps/x86-64-v3", "glibc-hwcaps/x86-64-v4", "x86_64", "tls",
                          "haswell"))
        L.tags.add("hwcaps" if sub.startswith("glibc") else "legacy-hwcap")
        _build(rng, L, lib, ucp_dir=lib + "/" + sub, ucp_path=os.path.relpath(lib, lib + "/" + sub).join(("$ORIGIN/", "")),
               modules=mods)
        L.obj("ucp", lib + "/libucp.so.0", runpath="$ORIGIN", version=L.version + "-generic")
        how = rng.choice(("cache", "runpath", "ldlp"))
        if how == "cache":
            L.cache.append(lib)
        if how == "ldlp":
            L.env["LD_LIBRARY_PATH"] = lib
        L.obj("app", "/opt/tuned/bin/ucx_info", **({"runpath": lib} if how == "runpath" else {}))
        return lib, [lib, "/opt/tunedeps", None]
    lib, core = "/opt/split/lib", "/opt/split/core"
    _build(rng, L, lib, ucs_lib=core, modules=mods)
    L.obj("app", "/opt/split/bin/ucx_info", rpath="$ORIGIN/../lib:$ORIGIN/../core")  # inherited by libucp
    L.tags.add("ucs-split")
    return core, [core, lib, None]


def change(rng, L, ucs_dir, dep_dirs):
    what = rng.choice(("deps", "deps", "dropin", "modules", "moddir", "plugin", "continuation", "decoy", "link"))
    L.tags.add("change-" + what)
    if what == "deps":
        for n in ("libdepa.so.1", "libdepb.so.1"):
            d = rng.choice(dep_dirs)
            if d:
                L.obj("dep:" + n, d + "/" + n)
                if d.startswith(("/opt/cudalibs", "/opt/tunedeps")):
                    L.cache.append(d)
    elif what == "dropin":  # a module the compiled list (<= 1.21) does not name
        L.obj("mod:knem", ucs_dir + "/ucx/libuct_knem.so.0")
    elif what == "modules":
        v = rng.choice(("^ib", "cuda,ib", "all,cuda", "", "r*", "all"))
        L.env["UCX_MODULES"] = v
        L.tags.add({"all,cuda": "modules-all-comma", "": "modules-empty"}.get(v, "modules-set"))
    elif what == "moddir":
        v = rng.choice(("", "/opt/site-mods", "/opt/site-mods"))
        L.obj("mod:rocm", "/opt/site-mods/libuct_rocm.so.0")
        if rng.random() < 0.5:
            L.env["UCX_MODULE_DIR"] = v
        else:
            L.texts.append((L.env["HOME"] + "/ucx.conf", "UCX_MODULE_DIR = %s\n" % v))
        L.tags.add("module-dir-empty" if not v else "module-dir-set")
    elif what == "plugin":
        L.obj("mod:ze", "/opt/plug/libuct_ze.so.0")
        L.env["UCX_PLUGIN_PATH"] = rng.choice(("/opt/plug", "/nonexistent::/opt/plug"))
        L.tags.add("plugin-path" if L.style >= 22 else "plugin-path-ignored")
    elif what == "continuation":
        L.texts.append((L.cwd + "/ucx.conf", "UCX_MODULES = all\n  ^%s\n" % rng.choice(NAMES)))
        L.tags.add("conf-continuation")
    elif what == "decoy":  # not ELF, ahead of the real one on LD_LIBRARY_PATH
        L.texts.append(("/opt/decoy/libdepa.so.1", "INPUT(libdepa.so.1)\n"))
        L.obj("dep:libdepa.so.1", "/opt/realdeps/libdepa.so.1")
        L.env["LD_LIBRARY_PATH"] = "/opt/decoy:/opt/realdeps" + (":" + L.env["LD_LIBRARY_PATH"] if "LD_LIBRARY_PATH" in L.env else "")
        L.tags.add("non-elf-first")
    elif what == "link":  # libucs reached through a link of another name (module.c takes the name)
        ucs = next((o for o in L.objs if o.src == "ucs" and o.path.startswith(ucs_dir + "/")), None)
        if ucs is None:  # linked already
            return
        real = os.path.dirname(ucs_dir) + "/real/libucs.so.0.%d.0" % rng.randint(0, 9)
        L.links.append((ucs.path, os.path.relpath(real, ucs_dir)))
        ucs.path = real
        L.tags.add("ucs-link")


def heldout(rng):
    style = rng.choice((13, 17, 22))
    L = Layout(style, {13: "1.15.0", 17: "1.19.1", 22: "1.22.0"}[style])
    ucs_dir, dep_dirs = scenario(rng, L)
    for _ in range(rng.randint(1, 3)):
        change(rng, L, ucs_dir, dep_dirs)
    return L
