#!/usr/bin/env bash
# The man pages the packages install render without groff warnings, and each
# names every command its program's --help lists (so that a new command is not
# left out of its page).
# usage: check-man-pages.sh GROFF KVSTUDIO_CLI [KVSTUDIO_TRAIN]
set -uo pipefail
groff=$1 cli=$2 train=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
status=0
fail() { echo "FAIL: $*"; status=1; }

for page in "$here"/kvstudio.1 "$here"/kvstudio-cli.1 "$here"/kvstudio-train.1; do
  name=$(basename "$page" .1)
  warnings=$("$groff" -man -Tutf8 -ww -z "$page" 2>&1)
  [[ -z "$warnings" ]] || fail "$name.1: $warnings"
  grep -q "^\.TH ${name^^} 1 " "$page" || fail "$name.1: .TH does not name ${name^^}"
  for section in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
    grep -q "^\.SH $section\$" "$page" || fail "$name.1: no $section section"
  done
done

# The commands of a --help text: the first words of the lines under "commands:"
# (kvstudio-cli), or of the lines "  name  description" (kvstudio-train).
commands_missing() {  # page, commands...
  local page=$1
  shift
  local text
  text=$("$groff" -man -Tutf8 -P-cbou "$page" 2>/dev/null | tr -s ' \n' ' ')
  for c in "$@"; do
    grep -qw -- "$c" <<<"$text" || echo "$c"
  done
}
cli_commands=$("$cli" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF {print $1}')
[[ -n "$cli_commands" ]] || fail "no commands read from kvstudio-cli --help"
missing=$(commands_missing "$here/kvstudio-cli.1" $cli_commands)
[[ -z "$missing" ]] || fail "kvstudio-cli.1 does not name: $(echo $missing)"
if [[ -n "$train" ]]; then
  train_commands=$("$train" --help | awk '/^  [a-z][a-z-]* +[a-z]/ {print $1}' | sort -u)
  [[ -n "$train_commands" ]] || fail "no commands read from kvstudio-train --help"
  missing=$(commands_missing "$here/kvstudio-train.1" $train_commands)
  [[ -z "$missing" ]] || fail "kvstudio-train.1 does not name: $(echo $missing)"
fi
[[ $status -eq 0 ]] && echo "man pages: ok"
exit $status
