"""The strata-tiny training corpus: Python source files of the packages installed on this machine.

Files are found through each distribution's *.dist-info/RECORD, so every file is attributed to a package
whose license (METADATA) is recorded. The order is deterministic (sorted by a hash of "package/path", which
also mixes packages together) and the corpus stops at a byte cap. A file goes to the held-out split when the
hash of its path says so, so the split does not depend on the cap or on the order.
"""
import csv
import hashlib
import os
import re
import site
import sys
import sysconfig

# Licenses we do not train on: strong copyleft (GPL, AGPL). LGPL is allowed. A dual license that names GPL is
# excluded too (conservative).
GPL_TOKEN = re.compile(r"\bA?GPL")
GPL_WORDS = re.compile(r"(?<!Lesser )(?<!Library )General Public License", re.IGNORECASE)

MAX_FILE_BYTES = 1_000_000   # bigger .py files are generated tables, not code
MIN_FILE_BYTES = 64
MIN_HELDOUT_FILES = 3


def site_roots():
    """Every site-packages directory Python knows about, deduplicated, in a fixed order."""
    cands = []
    paths = sysconfig.get_paths()
    for key in ("purelib", "platlib"):
        if paths.get(key):
            cands.append(paths[key])
    try:
        cands.extend(site.getsitepackages())
    except AttributeError:
        pass
    try:
        cands.append(site.getusersitepackages())
    except AttributeError:
        pass
    # Packages installed outside the site directories (a PYTHONPATH entry, a --target folder) still count
    # when the folder holds their dist-info.
    for entry in sys.path:
        try:
            if entry and os.path.isdir(entry) and any(e.endswith(".dist-info") for e in os.listdir(entry)):
                cands.append(entry)
        except OSError:
            pass
    out, seen = [], set()
    for c in cands:
        if not c or not os.path.isdir(c):
            continue
        real = os.path.realpath(c)
        if real in seen:
            continue
        seen.add(real)
        out.append(real)
    return out


def read_metadata(dist_info):
    """(name, version, license string) from METADATA: License-Expression, else License, else classifiers."""
    name, version, expr, lic, classifiers = None, None, None, None, []
    path = os.path.join(dist_info, "METADATA")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.strip() == "":
                    break   # the headers end at the first blank line; the description follows
                if line.startswith("Name:"):
                    name = line[5:].strip()
                elif line.startswith("Version:"):
                    version = line[8:].strip()
                elif line.startswith("License-Expression:"):
                    expr = line[len("License-Expression:"):].strip()
                elif line.startswith("License:") and lic is None:
                    lic = line[8:].strip()
                elif line.startswith("Classifier: License ::"):
                    classifiers.append(line[len("Classifier: License ::"):].strip())
    except OSError:
        pass
    if name is None:
        base = os.path.basename(dist_info)[: -len(".dist-info")]
        name = base.split("-")[0]
        version = base.split("-")[1] if "-" in base else "?"
    license_text = expr or ""
    if not license_text and lic and lic.upper() not in ("UNKNOWN", "NONE"):
        license_text = lic if len(lic) <= 80 else lic[:77] + "..."   # some put the whole license text here
    if not license_text and classifiers:
        license_text = "; ".join(classifiers)
    return name, version or "?", license_text or "unknown"


def license_excluded(license_text):
    return bool(GPL_TOKEN.search(license_text) or GPL_WORDS.search(license_text))


def distributions():
    """[(root, dist_info_dir, name, version, license)] sorted by lowercase name, one per distribution name."""
    found = {}
    for root in site_roots():
        try:
            entries = sorted(os.listdir(root))
        except OSError:
            continue
        for e in entries:
            if not e.endswith(".dist-info"):
                continue
            d = os.path.join(root, e)
            if not os.path.isfile(os.path.join(d, "RECORD")):
                continue
            name, version, lic = read_metadata(d)
            key = name.lower().replace("_", "-")
            if key not in found:   # the first root wins, like the import system
                found[key] = (root, d, name, version, lic)
    return [found[k] for k in sorted(found)]


def record_py_files(root, dist_info):
    """Relative paths of the .py files a distribution installed (from RECORD), sorted."""
    out = []
    with open(os.path.join(dist_info, "RECORD"), encoding="utf-8", errors="replace", newline="") as f:
        for row in csv.reader(f):
            if not row:
                continue
            rel = row[0]
            if not rel.endswith(".py") or rel.startswith("..") or os.path.isabs(rel):
                continue
            out.append(rel)
    return sorted(set(out))


def path_hash(key):
    return hashlib.sha1(key.encode("utf-8")).hexdigest()


def build_corpus(max_bytes, heldout_per_mille=15, include_stdlib=True, log=print):
    """Returns (train_texts, heldout_texts, info). info has per-package file/byte counts and licenses."""
    dists = distributions()
    log(f"corpus: {len(dists)} distributions under {site_roots()}")
    candidates = []   # (hash, dist index, absolute path, key)
    packages = []
    excluded = []
    for i, (root, d, name, version, lic) in enumerate(dists):
        if license_excluded(lic):
            excluded.append({"name": name, "version": version, "license": lic})
            continue
        packages.append({"name": name, "version": version, "license": lic, "files": 0, "bytes": 0,
                         "heldout_files": 0})
        try:
            rels = record_py_files(root, d)
        except OSError:
            rels = []
        for rel in rels:
            key = name + "/" + rel
            candidates.append((path_hash(key), len(packages) - 1, os.path.join(root, rel), key))
    stdlib = sysconfig.get_paths().get("stdlib")
    if include_stdlib and stdlib and os.path.isdir(stdlib):
        # The standard library has no dist-info: it is one pseudo-package under the PSF license.
        packages.append({"name": "CPython standard library", "version": sysconfig.get_python_version(),
                         "license": "PSF-2.0", "files": 0, "bytes": 0, "heldout_files": 0})
        skip_dirs = {"site-packages", "dist-packages", "__pycache__"}
        for dirpath, dirnames, filenames in os.walk(stdlib):
            dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs)
            for fn in sorted(filenames):
                if fn.endswith(".py"):
                    full = os.path.join(dirpath, fn)
                    key = "stdlib/" + os.path.relpath(full, stdlib)
                    candidates.append((path_hash(key), len(packages) - 1, full, key))
    candidates.sort()
    train, heldout = [], []
    seen_content = set()
    total = 0
    skipped = {"too_big_or_small": 0, "not_utf8": 0, "duplicate": 0, "unreadable": 0}
    for h, pi, path, key in candidates:
        is_heldout = int(h[:8], 16) % 1000 < heldout_per_mille
        if total >= max_bytes:
            # A small cap (smoke runs) may have met no held-out file yet: keep looking for held-out ones only.
            if len(heldout) >= MIN_HELDOUT_FILES:
                break
            if not is_heldout:
                continue
        try:
            size = os.path.getsize(path)
        except OSError:
            skipped["unreadable"] += 1
            continue
        if size > MAX_FILE_BYTES or size < MIN_FILE_BYTES:
            skipped["too_big_or_small"] += 1
            continue
        try:
            with open(path, "rb") as f:
                raw = f.read()
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            skipped["not_utf8"] += 1
            continue
        except OSError:
            skipped["unreadable"] += 1
            continue
        digest = hashlib.sha1(raw).digest()
        if digest in seen_content:   # vendored copies
            skipped["duplicate"] += 1
            continue
        seen_content.add(digest)
        text = text.replace("\r\n", "\n")
        (heldout if is_heldout else train).append(text)
        p = packages[pi]
        p["files"] += 1
        p["bytes"] += len(raw)
        if is_heldout:
            p["heldout_files"] += 1
        total += len(raw)
    used = [p for p in packages if p["files"] > 0]
    info = {
        "site_roots": site_roots(),
        "packages": sorted(used, key=lambda p: -p["bytes"]),
        "excluded_packages": excluded,
        "train_files": len(train), "heldout_files": len(heldout),
        "train_bytes": sum(len(t.encode("utf-8")) for t in train),
        "heldout_bytes": sum(len(t.encode("utf-8")) for t in heldout),
        "candidate_files": len(candidates), "skipped": skipped, "max_bytes": max_bytes,
        "heldout_per_mille": heldout_per_mille,
    }
    log(f"corpus: {info['train_files']} train files ({info['train_bytes'] / 1e6:.1f} MB), "
        f"{info['heldout_files']} held-out ({info['heldout_bytes'] / 1e6:.2f} MB) from {len(used)} packages; "
        f"{len(excluded)} packages excluded by license; skipped {skipped}")
    if not train or not heldout:
        raise RuntimeError("corpus: empty train or held-out split (found %d candidate files)" % len(candidates))
    return train, heldout, info
