"""A minimal PEP 517 build backend for the ddrun client (standard library only).

It builds a pure-Python wheel of the package ``ddrun`` (and an sdist), so
that ``pip install ./python`` needs no network: pyproject.toml names this
module with ``backend-path = ["."]`` and ``requires = []``.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "ddrun"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
TAG = "py3-none-any"

METADATA = """Metadata-Version: 2.1
Name: {name}
Version: {version}
Summary: Client for ddrun's job service (coordinator serve)
Requires-Python: >=3.8
Provides-Extra: numpy
Requires-Dist: numpy; extra == "numpy"
""".format(name=NAME, version=VERSION)


def _package_files():
    root = os.path.join(HERE, NAME)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith(".py") or f == "py.typed":
                full = os.path.join(dirpath, f)
                yield full, os.path.relpath(full, HERE).replace(os.sep, "/")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "{},sha256={},{}".format(arcname, digest, len(data))


def _dist_info():
    return "{}-{}.dist-info".format(NAME, VERSION)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(METADATA)
    return _dist_info()


def _wheel(wheel_directory, files):
    name = "{}-{}-{}.whl".format(NAME, VERSION, TAG)
    info = _dist_info()
    wheel_meta = "Wheel-Version: 1.0\nGenerator: ddrun_build\nRoot-Is-Purelib: true\nTag: {}\n".format(TAG)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files + [(info + "/METADATA", METADATA.encode()), (info + "/WHEEL", wheel_meta.encode())]:
            z.writestr(arcname, data)
            records.append(_record_line(arcname, data))
        records.append(info + "/RECORD,,")
        z.writestr(info + "/RECORD", "\n".join(records) + "\n")
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for full, arcname in _package_files():
        with open(full, "rb") as f:
            files.append((arcname, f.read()))
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file that puts this directory on sys.path.
    return _wheel(wheel_directory, [(NAME + ".pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "{}-{}".format(NAME, VERSION)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "ddrun_build.py", "README.md"]:
            p = os.path.join(HERE, rel)
            if os.path.exists(p):
                t.add(p, arcname=base + "/" + rel)
        for full, arcname in _package_files():
            t.add(full, arcname=base + "/" + arcname)
        pkg_info = METADATA.encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        t.addfile(ti, io.BytesIO(pkg_info))
    return name
