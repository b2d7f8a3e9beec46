# Shared by the CLI test scripts (sourced): pass/fail counters and
# expect_error. The sourcing script sets `cli` (the kvstudio-cli binary) first.
failures=0
passes=0

pass() { passes=$((passes + 1)); echo "ok   $1"; }
fail() { failures=$((failures + 1)); echo "FAIL $1"; }

# expect_error NAME REGEX -- ARGS...: exit 1 or 2, stderr matches REGEX, one line.
expect_error() {
  local name="$1" regex="$2"
  shift 3
  local err rc lines
  err=$("$cli" "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [[ $rc -ne 1 && $rc -ne 2 ]]; then fail "$name: exit code $rc (expected 1 or 2): $err"; return; fi
  if ! grep -Eq -- "$regex" <<<"$err"; then fail "$name: message '$err' does not match /$regex/"; return; fi
  if [[ $lines -ne 1 ]]; then fail "$name: $lines lines of error output (expected 1): $err"; return; fi
  pass "$name"
}
