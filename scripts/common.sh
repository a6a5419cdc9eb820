# SPDX-License-Identifier: BSL-1.0
# Shared by scripts/main.sh and scripts/test.sh: installs what is missing and
# configures + builds one build directory.
set -euo pipefail
DML_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DML_JOBS="${DML_JOBS:-$(nproc)}"

dml_setup() {
  bash "$DML_ROOT/scripts/setup-debian.sh"
}

# dml_build <build-dir> [cmake args...] [-- targets...]
dml_build() {
  local dir="$1"; shift
  local args=() targets=()
  while (($#)); do
    if [[ $1 == -- ]]; then shift; targets=("$@"); break; fi
    args+=("$1"); shift
  done
  cmake -S "$DML_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE="${DML_BUILD_TYPE:-Release}" "${args[@]}" >/dev/null
  if ((${#targets[@]})); then
    cmake --build "$dir" -j "$DML_JOBS" --target "${targets[@]}"
  else
    cmake --build "$dir" -j "$DML_JOBS"
  fi
}
