"""Removes stale builds from a cargo deps folder: of each large artifact (test binaries, dylibs)
only the two newest hashes are kept. Cargo rebuilds whatever it still needs."""

import collections
import os
import re
import sys

deps = sys.argv[1]
groups = collections.defaultdict(list)
for name in os.listdir(deps):
    m = re.match(r"(.+)-[0-9a-f]{16}(\.[a-z]+)?$", name)
    path = os.path.join(deps, name)
    if not m or m.group(2) == ".d" or not os.path.isfile(path):
        continue
    st = os.stat(path)
    if st.st_size >= 20_000_000:
        groups[(m.group(1), m.group(2))].append((st.st_mtime, path, st.st_size))
freed = 0
for builds in groups.values():
    builds.sort(reverse=True)
    for _, path, size in builds[2:]:
        os.remove(path)
        freed += size
print(f"pruned {freed / 1e9:.1f} GB of stale builds")
