"""The damaged machines of test_hostile.py (tests/cli/test_one_decision.py builds them too): the
fixture machines' parts (tests/fixtures/machines.py) with random bytes or nothing in every file the
probe reads, directories where files belong, symlink loops, 50 MB files, 5000 directory entries,
FIFOs where files belong."""
import os
import shutil

from common import machines

MB = 1 << 20


def walk_files(root):
    for d, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                yield p


def base_machine(root):
    """A small node with every family present: 2 NVIDIA GPUs, 2 AMD KFD GPU nodes, an Intel GPU
    on i915, an HCA, and an /etc/ucx/ucx.conf without UCX_TLS."""
    t = machines.Tree(root)
    t.common()
    t.nvidia_driver()
    for i, bdf in enumerate(machines.DGX_BUSES[:2]):
        t.nvidia_gpu(bdf, i, machines.uuid(i), drm_index=i + 1)
    t.kfd()
    t.kfd_cpu_node(0)
    for i in range(2):
        t.kfd_gpu_node(1 + i, "0000:%02x:00.0" % (0xc1 + i), 140 + i, 1234567890123 + i)
    t.pci("0000:e0:00.0", 0x8086, 0x0BD5, 0x038000, "i915")
    t.drm("0000:e0:00.0", 20, 150)
    t.hca(0, machines.HCA_BUSES[0])
    t.file("/etc/ucx/ucx.conf", "[global]\nUCX_NET_DEVICES=mlx5_0:1\n")
    return t


def probe_files(root):
    """The files the kernel probe and the ucx.conf scan read, in a base_machine."""
    out = []
    for p in walk_files(root):
        rel = os.path.relpath(p, root)
        if (rel.endswith("/information") or rel.endswith("/properties") or rel.endswith("/vendor")
                or rel.endswith("/class") or rel == "etc/ucx/ucx.conf"):
            out.append(p)
    return out


def build_machines(top):
    made = {}

    def new(name):
        root = os.path.join(top, name)
        return root, base_machine(root)

    root, t = new("random-bytes")
    rnd = __import__("random").Random(6)
    for p in probe_files(root):
        with open(p, "wb") as f:
            f.write(bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 6000))))
    for name in os.listdir(os.path.join(root, "sys/class/drm")):
        t.link("/sys/class/drm/%s/device/driver" % name, bytes(rnd.getrandbits(8) | 1 for _ in range(40)).replace(b"/", b"_").decode("latin-1"))
    made["random-bytes"] = root

    root, t = new("empty-files")
    for p in walk_files(root):
        open(p, "wb").close()
    made["empty-files"] = root

    root, t = new("directories-for-files")
    for p in probe_files(root):
        os.unlink(p)
        os.makedirs(p)
    made["directories-for-files"] = root

    root, t = new("symlink-loops")
    for rel in ("sys/class/infiniband", "proc/driver/nvidia/gpus", "sys/class/drm",
                "sys/class/kfd/kfd/topology/nodes", "etc/ucx/ucx.conf"):
        p = os.path.join(root, rel)
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) and not os.path.islink(p) else None
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(os.path.basename(p), p)  # points at itself
    shutil.rmtree(os.path.join(root, "dev/infiniband"))
    t.link("/dev/infiniband", "../dev/infiniband2")
    t.link("/dev/infiniband2", "infiniband")  # a two-link cycle
    made["symlink-loops"] = root

    # Loops below the listed directories, so the listings succeed and each entry loops.
    root, t = new("symlink-loops-inside")
    g = os.path.join(root, "proc/driver/nvidia/gpus")
    for bus in os.listdir(g):
        shutil.rmtree(os.path.join(g, bus))
        os.symlink(bus, os.path.join(g, bus))
    for n in os.listdir(os.path.join(root, "sys/class/kfd/kfd/topology/nodes")):
        p = os.path.join(root, "sys/class/kfd/kfd/topology/nodes", n, "properties")
        os.unlink(p)
        os.symlink("properties", p)
    for name in os.listdir(os.path.join(root, "sys/class/drm")):
        t.link("/sys/class/drm/" + name, name)
    made["symlink-loops-inside"] = root

    root, t = new("huge-files")
    big = os.path.join(top, "big")
    with open(big, "wb") as f:
        line = b"# a comment line in a very large file, no transport list here at all\n"
        f.write(line * (50 * MB // len(line)))
    for p in probe_files(root):
        os.unlink(p)
        os.link(big, p)
    made["huge-files"] = root

    root, t = new("sparse-files")  # 50 MB of NUL bytes, as a corrupted or preallocated file reads
    for p in probe_files(root):
        with open(p, "wb") as f:
            f.truncate(50 * MB)
    made["sparse-files"] = root

    root = os.path.join(top, "many-entries")
    t = machines.Tree(root)
    t.common()
    t.hca(0, machines.HCA_BUSES[0])
    t.nvidia_driver()
    t.kfd()
    for i in range(5000):
        os.makedirs(os.path.join(root, "sys/class/infiniband/junk%05d" % i))
        # GPUs whose device node is missing: the probe reads every information file.
        t.file("/proc/driver/nvidia/gpus/0000:%04x:00.0/information" % i, "Device Minor: \t %d\n" % (1000 + i))
        t.file("/sys/class/kfd/kfd/topology/nodes/%d/properties" % (100 + i), "simd_count 0\ngfx_target_version 0\n")
        t.link("/sys/class/drm/renderD%d" % (1000 + i), "../../devices/none/renderD%d" % (1000 + i))
        t.dev("dri/renderD%d" % (1000 + i))
        t.dev("nvidia-junk%d" % i)
    made["many-entries"] = root

    root = os.path.join(top, "many-dev-entries")  # no /proc view: /dev listed for nvidia<N>
    t = machines.Tree(root)
    t.common()
    t.hca(0, machines.HCA_BUSES[0])
    t.dev("nvidiactl")
    for i in range(5000):
        t.dev("nvidia-x%d" % i)
        t.dev("zz%05d" % i)
    t.dev("nvidia4999")
    made["many-dev-entries"] = root

    root, t = new("fifos")
    for p in probe_files(root):
        os.unlink(p)
        os.mkfifo(p)
    os.unlink(os.path.join(root, "dev/nvidiactl"))
    os.mkfifo(os.path.join(root, "dev/nvidiactl"))
    made["fifos"] = root
    return made
