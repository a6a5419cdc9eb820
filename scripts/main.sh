#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# The main job: installs what is needed, builds and runs dml's topology tool
# on its default input (a Halton graph over 25 members) and prints the
# spectral-gap table of every generator.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
dml_setup
dir="$DML_ROOT/build-main"
echo "== building dml-topology in $dir"
dml_build "$dir" -DDML_BUILD_TESTS=OFF -DDML_BUILD_BENCH=OFF -- dml-topology
"$dir/examples/topology/dml-topology" "$@"
