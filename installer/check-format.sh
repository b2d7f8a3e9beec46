#!/usr/bin/env bash
# Checks that every C++ and CUDA source under engine/ kernels/ app/ ui/ tests/
# is formatted as .clang-format says (Debian's clang-format 14, installed by
# install-deps.sh). Lists the files that differ and exits 1 if there are any;
# changes nothing. Formatting a file: clang-format -i FILE.
# Usage: installer/check-format.sh [--lines]   (--lines: also count the lines a
#   format would change)
# Environment: CLANG_FORMAT, the clang-format to use (default: clang-format-14,
#   else clang-format).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

count_lines=0
for arg in "$@"; do
  case "$arg" in
    --lines) count_lines=1 ;;
    -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-format: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

cf="${CLANG_FORMAT:-}"
if [[ -z "$cf" ]]; then
  if command -v clang-format-14 >/dev/null; then cf=clang-format-14; else cf=clang-format; fi
fi
if ! command -v "$cf" >/dev/null; then
  echo "check-format: $cf not found (installer/install-deps.sh installs clang-format)" >&2
  exit 2
fi

mapfile -d '' files < <(find engine kernels app ui tests -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' \) \
                          -not -path 'tests/fuzz/corpus*' -print0 | sort -z)

differ=()
lines=0
for f in "${files[@]}"; do
  if [[ $count_lines == 1 ]]; then
    n=$("$cf" --style=file "$f" | diff "$f" - | grep -c '^<' || true)
    if (( n > 0 )); then differ+=("$f"); lines=$((lines + n)); fi
  elif ! "$cf" --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
    differ+=("$f")
  fi
done

if (( ${#differ[@]} )); then
  printf '%s\n' "${differ[@]}"
  summary="${#differ[@]} of ${#files[@]} files are not formatted as .clang-format says"
  if [[ $count_lines == 1 ]]; then summary+=" ($lines lines would change)"; fi
  echo "check-format: $summary (clang-format -i FILE formats one)" >&2
  exit 1
fi
echo "check-format: all ${#files[@]} files formatted" >&2
