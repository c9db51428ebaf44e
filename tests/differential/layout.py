"""A layout of fake UCX builds in a private root (test_differential.py): what the generators
(generators.py) describe, and how it is laid out. The fake parts are built once per run
(fake_parts.c, fake_libucs.c) and every layout copies them, relinked with patchelf (NEEDED, SONAME,
RPATH or RUNPATH) and with their placeholders overwritten (version, module directory, module list).
The root gets its own /etc/ld.so.cache, made by the real ldconfig with -r."""
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
# Module contents: the transport each one registers. "mlx5" is uct_ib's own module (libuct_ib_mlx5).
MODULE_TLS = {"ib": "rc_mlx5", "cuda": "cuda_copy", "ze": "ze_copy", "rocm": "rocm_copy", "cma": "cma", "knem": "knem",
              "mlx5": "dc_mlx5"}
DEPS = ("libdepa.so.1", "libdepb.so.1", "libdepc.so.1")
STYLES = (13, 17, 22)


class Obj:
    """One ELF object of a layout: src is ucp, uct, ucs, app, mod:<content> or dep:<soname>."""

    def __init__(self, src, path, rpath=None, runpath=None, soname=None, replace=(), add=(), module_dir=None, uct_modules=None,
                 version=None):
        self.version = version
        self.src, self.path, self.rpath, self.runpath, self.soname = src, path, rpath, runpath, soname
        self.replace, self.add, self.module_dir, self.uct_modules = list(replace), list(add), module_dir, uct_modules

    def describe(self):
        w = [self.src, self.path]
        for k in ("rpath", "runpath", "soname", "module_dir", "uct_modules", "version"):
            if getattr(self, k) is not None:
                w.append("%s=%r" % (k, getattr(self, k)))
        if self.replace:
            w.append("needed:%s" % ",".join("%s->%s" % r for r in self.replace))
        if self.add:
            w.append("needs+=%s" % ",".join(self.add))
        return " ".join(w)


class Layout:
    def __init__(self, style, version):
        self.style, self.version = style, version
        self.objs, self.links, self.texts, self.cache = [], [], [], []
        self.env = {"HOME": "/home/u"}
        self.cwd = "/work"
        self.tags = set()  # what the layout exercises, for the summary by category

    def obj(self, *a, **k):
        self.objs.append(Obj(*a, **k))
        return self.objs[-1]

    def describe(self):
        lines = ["style %d (UCX %s); tags: %s" % (self.style, self.version, " ".join(sorted(self.tags)) or "-")]
        lines += ["  obj %s" % o.describe() for o in self.objs]
        lines += ["  link %s -> %s" % l for l in self.links]
        lines += ["  file %s: %r" % t for t in self.texts]
        lines += ["  ld.so.conf %s" % " ".join(self.cache)] if self.cache else []
        lines += ["  env %s" % " ".join("%s=%r" % kv for kv in sorted(self.env.items())), "  cwd %s" % self.cwd]
        return "\n".join(lines)


def build_parts(out):
    """Builds the fake parts once into out: {src: path}."""
    os.makedirs(out, exist_ok=True)
    parts, ucs = os.path.join(HERE, "fake_parts.c"), os.path.join(HERE, "fake_libucs.c")
    cc = ["cc", "-shared", "-fPIC", "-O2", "-fvisibility=hidden"]
    built = {}

    def run(name, cmd):
        subprocess.run(cmd, check=True)
        built[name] = cmd[cmd.index("-o") + 1]

    for s in STYLES:
        os.makedirs(os.path.join(out, "ucs%d" % s), exist_ok=True)
        run("ucs%d" % s, cc + ["-DSTYLE=%d" % s, "-Wl,-soname,libucs.so.0", "-o", os.path.join(out, "ucs%d" % s, "libucs.so.0"), ucs, "-ldl"])
    lib13 = os.path.join(out, "ucs13")
    run("uct", cc + ["-DROLE_UCT", "-DTLS=TL(self) TL(tcp) TL(sysv) TL(posix)", "-DFRAMEWORK=\"uct\"",
                     '-DFRAMEWORK_MODULES="@@FAKEUCX_UCT_MODULES@@"', "-Wl,-soname,libuct.so.0", "-o",
                     os.path.join(lib13, "libuct.so.0"), parts, "-Wl,--no-as-needed", "-L" + lib13, "-l:libucs.so.0"])
    run("ucp", cc + ["-DROLE_UCP", "-Wl,-soname,libucp.so.0", "-o", os.path.join(lib13, "libucp.so.0"), parts,
                     "-Wl,--no-as-needed", "-L" + lib13, "-l:libuct.so.0", "-l:libucs.so.0"])
    run("opener", ["cc", "-O2", "-DROLE_OPENER", "-o", os.path.join(out, "opener"), parts, "-ldl"])
    run("app", ["cc", "-O2", "-DROLE_APP", "-o", os.path.join(out, "ucx_info"), parts, "-Wl,--no-as-needed", "-L" + lib13,
                "-l:libucp.so.0"])
    for name, tl in MODULE_TLS.items():  # the ib module loads its own framework, uct_ib
        sub = ['-DFRAMEWORK="uct_ib"', '-DFRAMEWORK_MODULES=":mlx5"'] if name == "ib" else []
        run("mod:" + name, cc + ["-DROLE_MODULE", "-DTLS=TL(%s)" % tl, "-o", os.path.join(out, "mod-%s.so" % name), parts] + sub)
    for d in DEPS:
        run("dep:" + d, cc + ["-DROLE_DEP", "-Wl,-soname," + d, "-o", os.path.join(out, d), parts])
    return built


def patch_placeholder(path, placeholder, value):
    """Overwrites a placeholder string (and the bytes after it, to its array's end) in a copy."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    at = data.find(placeholder.encode())
    v = value.encode() + b"\0"
    assert at >= 0 and len(v) <= 200, (path, placeholder, value)
    data[at:at + max(len(v), len(placeholder))] = v.ljust(max(len(v), len(placeholder)), b"\0")
    with open(path, "wb") as f:
        f.write(data)


def materialize(layout, parts, root):
    """Lays the layout out under root (a new directory) and makes root/etc/ld.so.cache."""
    for o in layout.objs:
        src = parts["ucs%d" % layout.style] if o.src == "ucs" else parts[o.src]
        dest = root + o.path
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(src, dest)
        os.chmod(dest, 0o755)
        if o.src == "ucp":
            patch_placeholder(dest, "@@FAKEUCX_VERSION@@", o.version or layout.version)
        if o.src == "ucs":
            patch_placeholder(dest, "@@FAKEUCX_MODULE_DIR@@", o.module_dir or "")
        if o.src == "uct":
            patch_placeholder(dest, "@@FAKEUCX_UCT_MODULES@@", "".join(":" + m for m in (o.uct_modules or "").split(":") if m))
        # One patchelf call per change: patchelf 0.14 (Debian 12) given several at once can write
        # one's string into another's entry (a RUNPATH of "libucs.so").
        cmds = [["--set-soname", o.soname]] if o.soname else []
        cmds += [["--replace-needed", old, new] for old, new in o.replace if old != new]
        cmds += [["--add-needed", n] for n in o.add]
        if o.rpath is not None or o.runpath is not None:
            cmds.append(["--set-rpath", o.rpath if o.rpath is not None else o.runpath] + (["--force-rpath"] if o.rpath is not None else []))
        for cmd in cmds:
            subprocess.run(["patchelf"] + cmd + [dest], check=True)
    for path, target in layout.links:
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        os.symlink(target, root + path)
    for path, text in layout.texts:
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        with open(root + path, "w") as f:
            f.write(text)
    for d in (layout.cwd, layout.env["HOME"], "/etc", "/lib64", "/usr/lib/x86_64-linux-gnu"):
        os.makedirs(root + d, exist_ok=True)
    os.symlink("usr/lib", root + "/lib")
    with open(root + "/etc/ld.so.conf", "w") as f:
        f.write("".join(d + "\n" for d in layout.cache))
    # -X: no links made (the layout is as written); the cache is root/etc/ld.so.cache.
    subprocess.run(["ldconfig", "-X", "-r", root], check=True, stderr=subprocess.DEVNULL)
