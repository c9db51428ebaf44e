"""The platform tag a wheel of ucxtls may carry, read from its ELF files the way auditwheel reads
them: every versioned symbol an ELF file needs (its .gnu.version_r section) must exist in the
oldest distribution the manylinux tag admits, and it may need only the libraries every manylinux
system has. Used by setup.py, which tags the wheel with the result; stdlib only, so that it runs in
an isolated build environment.

The tag is what the files need, not a wish: built on RHEL 7's toolchain (the manylinux2014 image)
the files need glibc 2.17 and the wheel is manylinux2014 (manylinux_2_17); built on Debian 12 the
command needs GLIBC_2.34 (__libc_start_main) and the wheel says manylinux_2_34.
"""
import struct

# What each tag's oldest distribution ships of the C++ runtime (PEP 599 and PEP 600 images:
# manylinux2014 = CentOS 7 with GCC 4.8.5, manylinux_2_28 = AlmaLinux 8 with GCC 8, manylinux_2_34 =
# AlmaLinux 9 with GCC 11): the newest GLIBCXX_, CXXABI_ and GCC_ (libgcc_s) version each provides.
# A glibc minor between two rows gets the older row's runtime (what is known to be there).
CXX_RUNTIME = [
    (17, {"GLIBCXX": (3, 4, 19), "CXXABI": (1, 3, 7), "GCC": (4, 8, 0)}),
    (28, {"GLIBCXX": (3, 4, 25), "CXXABI": (1, 3, 11), "GCC": (7, 0, 0)}),
    (34, {"GLIBCXX": (3, 4, 29), "CXXABI": (1, 3, 13), "GCC": (7, 0, 0)}),
]

# The libraries a manylinux wheel may need from the system (PEP 599's list, the part of it that a
# program of this project could link).
SYSTEM_LIBRARIES = {"libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0",
                    "libgcc_s.so.1", "libstdc++.so.6", "libutil.so.1", "libresolv.so.2",
                    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld64.so.2", "ld64.so.1"}

# ELF e_machine -> the architecture part of the tag.
MACHINES = {62: "x86_64", 183: "aarch64", 21: "ppc64le", 22: "s390x"}

SHT_DYNAMIC, SHT_GNU_VERNEED, DT_NEEDED = 6, 0x6FFFFFFE, 1


def read_elf(path):
    """(architecture, [NEEDED], {library: {version name}}) of a 64-bit little- or big-endian ELF
    file; None when the file is not ELF."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return None
    e = "<" if data[5] == 1 else ">"
    machine = struct.unpack_from(e + "H", data, 18)[0]
    shoff, = struct.unpack_from(e + "Q", data, 40)
    shentsize, shnum = struct.unpack_from(e + "HH", data, 58)
    sections = [struct.unpack_from(e + "IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]

    def string(section, offset):
        start = sections[section][4] + offset
        return data[start:data.index(b"\0", start)].decode()

    needed, versions = [], {}
    for _name, kind, _flags, _addr, off, size, link, info, _align, entsize in sections:
        if kind == SHT_DYNAMIC:
            for i in range(0, size, entsize):
                tag, val = struct.unpack_from(e + "qQ", data, off + i)
                if tag == DT_NEEDED:
                    needed.append(string(link, val))
        elif kind == SHT_GNU_VERNEED:
            pos = off
            for _ in range(info):  # info: the number of Verneed entries
                _ver, count, file_off, aux, nxt = struct.unpack_from(e + "HHIII", data, pos)
                names = versions.setdefault(string(link, file_off), set())
                apos = pos + aux
                for _ in range(count):
                    _hash, _flags, _other, name_off, anext = struct.unpack_from(e + "IHHII", data, apos)
                    names.add(string(link, name_off))
                    apos += anext
                pos += nxt
    return MACHINES.get(machine, "machine-%d" % machine), needed, versions


def version_of(name):
    """("GLIBC", (2, 34)) for "GLIBC_2.34"; None for a name that is not PREFIX_N.N..."""
    prefix, _, number = name.partition("_")
    parts = number.split(".")
    if not prefix or not all(p.isdigit() for p in parts):
        return None
    return prefix, tuple(int(p) for p in parts)


def needs(paths):
    """(architecture, glibc minor needed, {runtime prefix: newest version needed}, [problems])
    over the ELF files among paths."""
    arch, glibc, runtime, problems = None, 17, {}, []
    for path in paths:
        elf = read_elf(path)
        if elf is None:
            continue
        a, needed, versions = elf
        if arch not in (None, a):
            problems.append("%s is %s, another file %s" % (path, a, arch))
        arch = a
        for lib in needed:
            if lib not in SYSTEM_LIBRARIES:
                problems.append("%s needs %s, which a manylinux system need not have" % (path, lib))
        for names in versions.values():
            for name in names:
                v = version_of(name)
                if v is None:
                    continue
                prefix, number = v
                if prefix == "GLIBC":
                    glibc = max(glibc, number[1] if number[:1] == (2,) and len(number) > 1 else 17)
                elif prefix in ("GLIBCXX", "CXXABI", "GCC"):
                    runtime[prefix] = max(runtime.get(prefix, ()), number)
    return arch, glibc, runtime, problems


def runtime_minor(runtime):
    """The oldest glibc minor of CXX_RUNTIME whose C++ runtime has every version needed; None if
    no row does."""
    for minor, has in CXX_RUNTIME:
        if all(number <= has[prefix] for prefix, number in runtime.items()):
            return minor
    return None


def manylinux_tag(paths):
    """(tag, explanation) for the ELF files among paths; raises ValueError when none fits."""
    arch, glibc, runtime, problems = needs(paths)
    if arch is None:
        raise ValueError("no ELF file to tag")
    cxx = runtime_minor(runtime)
    if cxx is None:
        problems.append("the C++ runtime versions %s are newer than any tag's table row" % runtime)
    if problems:
        raise ValueError("; ".join(problems))
    minor = max(glibc, cxx)
    why = "the files need GLIBC_2.%d%s" % (glibc, "" if not runtime else ", and %s (manylinux_2_%d has them)" % (
        ", ".join("%s_%s" % (p, ".".join(map(str, n))) for p, n in sorted(runtime.items())), cxx))
    return "manylinux_2_%d_%s" % (minor, arch), why
