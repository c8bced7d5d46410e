#!/usr/bin/env python3
"""Install a draft model that tools/train/device_retrain_draft.sh brought back.

  python3 tools/train/apply_draft.py DIR     # DIR holds draft.tgz (or its parts) and spec_section.md

Unpacks DIR/draft.tgz (or DIR/draft.tgz.part-* joined in order) over models/strata-tiny-draft and replaces
the "## Speculative decoding with strata-tiny-draft" section of models/strata-tiny/README.md with
DIR/spec_section.md.
"""
import glob
import io
import os
import re
import shutil
import sys
import tarfile

root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
src = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
models = os.path.join(root, "models")
shutil.rmtree(os.path.join(models, "strata-tiny-draft"), ignore_errors=True)
whole = os.path.join(src, "draft.tgz")
parts = sorted(glob.glob(os.path.join(src, "draft.tgz.part-*")))
if os.path.exists(whole):
    archive = open(whole, "rb").read()
elif parts:
    archive = b"".join(open(p, "rb").read() for p in parts)
else:
    sys.exit("apply_draft.py: no draft.tgz or draft.tgz.part-* in " + src)
with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as t:
    try:
        t.extractall(models, filter="data")  # Python 3.12 (and late 3.11): plain files under models/ only
    except TypeError:
        t.extractall(models)  # our own archive from device_retrain_draft.sh
card = os.path.join(models, "strata-tiny", "README.md")
text = open(card, encoding="utf-8").read()
section = open(os.path.join(src, "spec_section.md"), encoding="utf-8").read()
new, n = re.subn(r"## Speculative decoding with strata-tiny-draft\n.*?(?=\n## )", section.rstrip("\n") + "\n", text,
                 flags=re.S)
if n != 1:
    sys.exit("apply_draft.py: the card has no speculative-decoding section to replace")
open(card, "w", encoding="utf-8").write(new)
print("apply_draft.py: models/strata-tiny-draft replaced, strata-tiny's card updated")
