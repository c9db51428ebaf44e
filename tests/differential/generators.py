"""Two independent generators of layouts (layout.py) for the differential test. Each takes a
random.Random and returns a Layout; the same seed and index give the same layout.
  grid:    every choice drawn on its own (where each object is, how each is found, each setting).
  heldout: a site's scenario first (a wheel, an environment module, a distribution package, an
           optimized copy under hwcaps, a build split over two directories), then a few of the
           changes users and sites make to one. Written apart from grid, to check that agreement
           on grid's layouts is not agreement with grid's own habits."""
import os

from layout import DEPS, Layout

# UCXTLSTEST_DIFF_FEATURE=NAME: grid's layouts have that feature and no other of FEATURES (the
# plain ways of finding a build stay drawn), to see one difference alone (docs/testing.md).
FEATURE = os.environ.get("UCXTLSTEST_DIFF_FEATURE") or None
FEATURES = ("ucs-split", "ucs-unversioned-name", "hwcaps", "legacy-hwcap", "ucs-link", "module-dir-set",
            "module-dir-empty", "plugin-path", "modules-set", "module-not-in-list", "module-ext-mismatch", "module-twice",
            "ib-framework", "dep-only-beside-libucs", "dep-in-program-rpath", "dep-in-cwd", "non-elf-first",
            "ldlp-empty-entry", "ldlp-semicolon", "ldlp-set-empty", "conf-continuation", "conf-section-filter",
            "conf-inline-comment", "conf-libdir-1.16-name")
CONF_FEATURES = ("conf-continuation", "conf-section-filter", "conf-inline-comment", "conf-libdir-1.16-name")


def chance(rng, L, name, p):
    """Whether this layout has feature name (probability p; with FEATURE set, that one only)."""
    r = rng.random()  # drawn either way, so that the other choices stay the same
    hit = name == FEATURE if FEATURE else r < p
    if hit:
        L.tags.add(name)
    return hit


def allowed(names):
    """The choices among names a layout may take: all, or with FEATURE set, the plain ones and it."""
    return [n for n in names if not FEATURE or n not in FEATURES or n == FEATURE]

POOL = ("ib", "cuda", "ze", "rocm", "cma")
VERSIONS = {13: ("1.13.1", "1.14.1", "1.15.0", "1.16.0"), 17: ("1.17.0", "1.18.1", "1.19.0", "1.20.0", "1.21.0"), 22: ("1.22.0",)}
MODULES_VALUES = ("all", "^cuda", "ib,cuda", "all,ib", "", "c*", "^", "ib,all", "^ib,ze", "cuda", "i?")
HWCAPS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")
LEGACY = ("x86_64", "tls", "tls/x86_64", "x86_64/x86_64", "haswell", "avx512_1")


def origin(path_dir, from_dir):
    return "$ORIGIN/" + os.path.relpath(path_dir, from_dir)


def ldlp(rng, L, dirs):
    """LD_LIBRARY_PATH of these directories, with the separators and empty entries users write."""
    sep = ";" if chance(rng, L, "ldlp-semicolon", 0.2) else ":"
    entries = list(dirs)
    if chance(rng, L, "ldlp-empty-entry", 0.3):
        entries.insert(rng.randrange(len(entries) + 1), "")  # the working directory (_dl_init_paths)
    if rng.random() < 0.3:
        entries.insert(rng.randrange(len(entries) + 1), "/nonexistent/lib")
    L.env["LD_LIBRARY_PATH"] = sep.join(entries)


def conf_text(rng, L, key, value):
    """A ucx.conf assignment of key=value in one of the forms UCX's inih reads."""
    forms = allowed(("plain", "plain", "colon", "conf-inline-comment", "conf-continuation", "conf-section-filter"))
    form = rng.choice([f for f in forms if f == FEATURE] or forms)
    if form.startswith("conf-"):
        L.tags.add(form)
    if form == "colon":
        return "%s: %s\n" % (key, value)
    if form == "conf-inline-comment":
        return "# set by the site\n%s = %s ; inline comment\n" % (key, value)
    if form == "conf-continuation":  # inih INI_ALLOW_MULTILINE: the indented line is the value
        return "%s = first\n    %s\n" % (key, value)
    if form == "conf-section-filter":  # 1.17's filters; this machine's vendor decides
        vendor = rng.choice(("AMD", "Intel", "*", "amd"))
        return "[Site %s]\nCPU vendor = %s\n%s = %s\n" % (vendor, vendor, key, value)
    return "%s = %s\n" % (key, value)


def conf_place(rng, L, ucs_dir):
    """One of the files ucs_config_parse_config_files reads (and 1.16's name, and 1.17's)."""
    etc = os.path.dirname(ucs_dir) + "/etc"
    places = ["/etc/ucx/ucx.conf", etc + "/ucx/ucx.conf", L.env["HOME"] + "/ucx.conf", "/opt/conf/ucx.conf", L.cwd + "/ucx.conf"]
    if FEATURE == "conf-libdir-1.16-name":
        places = [etc + "/ucx.conf"]
    elif not FEATURE:
        places.insert(1, etc + "/ucx.conf")
    p = rng.choice(places)
    if p.startswith("/opt/conf"):
        L.env["UCX_CONFIG_DIR"] = "/opt/conf"
    if p == etc + "/ucx.conf":
        L.tags.add("conf-libdir-1.16-name")
    if p == etc + "/ucx/ucx.conf":
        L.tags.add("conf-libdir-1.17-name")
    return p


def setting(rng, L, ucs_dir, key, value, in_env):
    if in_env:
        L.env[key] = value
    else:
        L.texts.append((conf_place(rng, L, ucs_dir), conf_text(rng, L, key, value)))


def place_modules(rng, L, names, dirs, ext, ucs_dir, dep_where):
    """Module files of these names in these directories, each needing 0-2 of DEPS."""
    other = ".so" if ext != ".so" else ".so.0"
    for name in names:
        d = rng.choice(dirs)
        e = ext
        if chance(rng, L, "module-ext-mismatch", 0.1):
            e = other
        k = rng.choice((0, 0, 1, 1, 2))
        needs = rng.sample(DEPS, max(k, 1) if FEATURE and FEATURE.startswith("dep-") else k)
        files = [("libuct_%s%s" % (name, e), name)]
        if name == "ib" and chance(rng, L, "ib-framework", 0.5):
            files.append(("libuct_ib_mlx5%s" % e, "mlx5"))
        for fname, content in files:
            kw = {}
            if any(dep_where[n] == "moddir" for n in needs) or rng.random() < 0.2:
                kw["rpath" if rng.random() < 0.3 else "runpath"] = "$ORIGIN"
            L.obj("mod:" + content, d + "/" + fname, add=needs, **kw)
        for n in needs:
            w = dep_where[n]
            if w == "moddir":
                L.obj("dep:" + n, d + "/" + n)
            elif w == "dep-only-beside-libucs":
                L.obj("dep:" + n, ucs_dir + "/" + n)
        if chance(rng, L, "module-twice", 0.08):  # the same module in a second directory too
            L.obj("mod:" + name, rng.choice(dirs) + "/libuct_%s%s" % (name, e))


def place_deps(rng, L, dep_where):
    """The dependencies that live elsewhere than the module or libucs: LD_LIBRARY_PATH, the cache,
    the program's RPATH, or nowhere; a file that is not ELF may come first."""
    extra_ldlp = []
    for n, w in dep_where.items():
        if w == "ldlp":
            L.obj("dep:" + n, "/opt/deps/" + n)
            extra_ldlp.append("/opt/deps")
        elif w == "cache":
            L.obj("dep:" + n, "/opt/cachedeps/" + n)
            if "/opt/cachedeps" not in L.cache:
                L.cache.append("/opt/cachedeps")
        elif w == "dep-in-cwd":
            L.obj("dep:" + n, L.cwd + "/" + n)
        if w in ("ldlp", "cache") and chance(rng, L, "non-elf-first", 0.15):
            L.texts.append(("/opt/decoy/" + n, "not an ELF object\n"))
            extra_ldlp.insert(0, "/opt/decoy")
    return sorted(set(extra_ldlp), key=extra_ldlp.index)


def grid(rng):
    style = rng.choice((13, 17, 22))
    L = Layout(style, rng.choice(VERSIONS[style]))
    prefix = rng.choice(("/opt/ucx", "/sw/ucx/" + L.version, "/home/u/.local/ucx"))
    libdir = prefix + "/lib"
    ucs_dir = prefix + "/lib/core" if chance(rng, L, "ucs-split", 0.2) else libdir
    ucs_so = "libucs.so" if chance(rng, L, "ucs-unversioned-name", 0.12) else "libucs.so.0"
    ucp_dir = libdir
    if chance(rng, L, "hwcaps", 0.12):
        ucp_dir = libdir + "/glibc-hwcaps/" + rng.choice(HWCAPS)
    elif chance(rng, L, "legacy-hwcap", 0.11):
        ucp_dir = libdir + "/" + rng.choice(LEGACY)
    if ucp_dir != libdir:  # the plain copy ld.so takes where the subdirectory is not searched
        L.obj("ucp", libdir + "/libucp.so.0", runpath=origin(ucs_dir, libdir), replace=[("libucs.so.0", ucs_so)],
              version=L.version + "-generic")
    app_dir = rng.choice(("/opt/app/bin", prefix + "/bin"))
    mech = rng.choice(("runpath", "rpath", "origin-runpath", "origin-rpath", "ldlp", "cache"))
    L.tags.add("app-" + mech)
    app = {"runpath": {"runpath": libdir}, "rpath": {"rpath": libdir}, "origin-runpath": {"runpath": origin(libdir, app_dir)},
           "origin-rpath": {"rpath": origin(libdir, app_dir)}}.get(mech, {})
    ldlp_dirs = [libdir] if mech == "ldlp" else []
    if mech == "cache":
        L.cache.append(libdir)
    # libucp's own path to libucs and libuct, or none (then the program's RPATH, LD_LIBRARY_PATH, the cache).
    own = rng.choice((None, "runpath-origin", "rpath-origin", "runpath-abs"))
    kw = {}
    if own:
        L.tags.add("ucp-" + own)
        path = origin(ucs_dir, ucp_dir) if own.endswith("origin") else ucs_dir
        kw = {"rpath": path} if own.startswith("rpath") else {"runpath": path}
    elif ucs_dir != libdir or mech not in ("rpath", "origin-rpath", "ldlp", "cache"):
        if rng.random() < 0.5:
            ldlp_dirs.append(ucs_dir)
        else:
            L.cache.append(ucs_dir)
    L.obj("ucp", ucp_dir + "/libucp.so.0", replace=[("libucs.so.0", ucs_so)], **kw)
    uct = L.obj("uct", ucs_dir + "/libuct.so.0", replace=[("libucs.so.0", ucs_so)], **kw)
    # libucs, maybe under another name that a link gives it (module.c takes the name ld.so opened).
    compiled = rng.choice((ucs_dir + "/ucx", "/build/ucx/install/lib/ucx", prefix + "/lib/ucx-extra"))
    listed = rng.sample(POOL, rng.randint(1, len(POOL)))
    ucs_kw = {"soname": ucs_so, "module_dir": compiled}
    if chance(rng, L, "ucs-link", 0.12):
        L.obj("ucs", prefix + "/lib64/libucs.so.0.0.0", **ucs_kw)
        L.links.append((ucs_dir + "/" + ucs_so, os.path.relpath(prefix + "/lib64/libucs.so.0.0.0", ucs_dir)))
    else:
        L.obj("ucs", ucs_dir + "/" + ucs_so, **ucs_kw)
    ext = ucs_so[ucs_so.index("."):]
    mod_dirs = [ucs_dir + "/ucx"]
    if not compiled.startswith("/build"):
        mod_dirs.append(compiled)
    conf_only = FEATURE in CONF_FEATURES  # then UCX_MODULES is set in a file, in that form
    if chance(rng, L, "module-dir-set", 0.2):
        setting(rng, L, ucs_dir, "UCX_MODULE_DIR", "/opt/mods", rng.random() < 0.6)
        mod_dirs.append("/opt/mods")
    elif chance(rng, L, "module-dir-empty", 0.08):
        setting(rng, L, ucs_dir, "UCX_MODULE_DIR", "", rng.random() < 0.7)
    if chance(rng, L, "plugin-path", 0.25):
        value = rng.choice(("/opt/plugins", "/opt/plugins::/nonexistent"))
        setting(rng, L, ucs_dir, "UCX_PLUGIN_PATH", value, rng.random() < 0.7)
        mod_dirs.append("/opt/plugins")
        L.tags.add("plugin-path-1.22" if style >= 22 else "plugin-path-ignored")
    if chance(rng, L, "modules-set", 0.45) or conf_only:
        value = rng.choice(MODULES_VALUES)
        setting(rng, L, ucs_dir, "UCX_MODULES", value, rng.random() < 0.6 and not conf_only)
        L.tags.add({"all,ib": "modules-all-comma", "": "modules-empty"}.get(value, "modules-other"))
    present = rng.sample(POOL + ("knem",), rng.randint(1, 4))
    if chance(rng, L, "module-not-in-list", 0.5):
        listed = [n for n in listed if n not in present[:1]]
    elif FEATURE:
        listed = list(POOL) + ["knem"]
    uct.uct_modules = ":".join(listed)
    if style < 22 and any(n not in listed for n in present):
        L.tags.add("module-not-in-list")
    where = allowed(("moddir", "dep-only-beside-libucs", "ldlp", "cache", "none", "dep-in-program-rpath", "dep-in-cwd"))
    dep_where = {n: rng.choice(where) for n in DEPS}
    if FEATURE and FEATURE.startswith("dep-"):  # every library a module needs is placed that way
        dep_where = dict.fromkeys(DEPS, FEATURE)
    for w in set(dep_where.values()):
        if w.startswith("dep-"):
            L.tags.add(w)
    if "dep-in-program-rpath" in dep_where.values():
        for n, w in dep_where.items():
            if w == "dep-in-program-rpath":
                L.obj("dep:" + n, "/opt/apprpath/" + n)
        app["rpath"] = (app.get("rpath", "") + ":/opt/apprpath").lstrip(":")
        if "runpath" in app:  # DT_RUNPATH wins over DT_RPATH: keep one
            app["rpath"] = app.pop("runpath") + ":/opt/apprpath"
    if "dep-in-cwd" in dep_where.values():
        ldlp_dirs.append("")
    place_modules(rng, L, present, mod_dirs, ext, ucs_dir, dep_where)
    ldlp_dirs = place_deps(rng, L, dep_where) + ldlp_dirs
    if ldlp_dirs == [""]:  # an empty entry is the working directory only in a value with another
        ldlp_dirs.insert(0, "/nonexistent/lib")
    L.obj("app", app_dir + "/ucx_info", **app)
    if ldlp_dirs:
        ldlp(rng, L, ldlp_dirs)
    elif chance(rng, L, "ldlp-set-empty", 0.1):
        L.env["LD_LIBRARY_PATH"] = ""  # set and empty: no directory (_dl_init_paths)
        L.obj("dep:" + DEPS[0], L.cwd + "/" + DEPS[0])
    return L
