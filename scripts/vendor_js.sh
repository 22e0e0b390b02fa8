#!/usr/bin/env bash
# Fetch the explorer's vendored JavaScript from the npm registry again and check it against
# the pinned hashes (graphrag_ray/explore/static/vendor/README.md). Needs npm and network.
set -euo pipefail
vendor="$(cd "$(dirname "$0")/.." && pwd)/graphrag_ray/explore/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent graphology@0.26.0 sigma@3.0.2 >/dev/null
tar xzf graphology-0.26.0.tgz && mv package graphology
tar xzf sigma-3.0.2.tgz && mv package sigma
cp graphology/dist/graphology.umd.min.js "$vendor/graphology-0.26.0.umd.min.js"
cp graphology/LICENSE.txt "$vendor/LICENSE-graphology.txt"
cp sigma/dist/sigma.min.js "$vendor/sigma-3.0.2.min.js"
cp sigma/LICENSE.txt "$vendor/LICENSE-sigma.txt"
cd "$vendor"
echo "dc337efa23903f61e064c8e7e7f93a429e6855dccfc2458802b4ed30c621c087  graphology-0.26.0.umd.min.js
be6f790da9c1856765b1c430de3b1aac50433223361870edb3097a9868218a88  sigma-3.0.2.min.js" | sha256sum -c
