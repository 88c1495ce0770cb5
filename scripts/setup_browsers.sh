#!/usr/bin/env bash
# Make the three engines available for the browser tests. Idempotent; quick when all are present.
#   Chromium and Firefox drive through Playwright; WebKit is WebKitGTK (Safari's engine) through its WebDriver
#   server under Xvfb, or Playwright's own WebKit build where `playwright install webkit` could fetch it.
#   1. Debian chromium, firefox-esr, webkit2gtk-driver and xvfb already installed -> nothing to do.
#   2. root with apt-get                  -> apt-get update && apt-get install the missing ones.
#   3. otherwise                          -> python -m playwright install for the missing engines.
#   4. still missing                      -> a clear message; exit 1 only with --strict.
# Usage: scripts/setup_browsers.sh [--strict]   (PYTHON selects the interpreter for step 3, default .venv/bin/python)
set -uo pipefail

STRICT=0
[[ "${1:-}" == "--strict" ]] && STRICT=1
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"

say() { echo "setup_browsers: $*" >&2; }

find_chromium() {
  local c
  for c in /usr/lib/chromium/chromium "$(command -v chromium || true)" "$(command -v chromium-browser || true)"; do
    [[ -n "$c" && -x "$c" ]] && { echo "$c"; return 0; }
  done
  return 1
}
find_firefox() {
  local c
  for c in "$(command -v firefox-esr || true)" "$(command -v firefox || true)"; do
    [[ -n "$c" && -x "$c" ]] && { echo "$c"; return 0; }
  done
  return 1
}
find_webkit() {
  local c
  for c in /usr/bin/WebKitWebDriver /usr/libexec/webkit2gtk-4.1/WebKitWebDriver; do
    [[ -x "$c" ]] && { echo "$c"; return 0; }
  done
  return 1
}
missing_debs() {
  local m=()
  find_chromium >/dev/null || m+=(chromium)
  find_firefox >/dev/null || m+=(firefox-esr)
  find_webkit >/dev/null || m+=(webkit2gtk-driver)
  [[ -n "${DISPLAY:-}" ]] || command -v Xvfb >/dev/null || m+=(xvfb)
  echo "${m[@]:-}"
}
found() {
  say "ok: chromium=$(find_chromium) firefox=$(find_firefox) webkit=$(find_webkit)"
}

MISSING="$(missing_debs)"
if [[ -z "$MISSING" ]]; then
  found
  exit 0
fi

if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
  say "installing Debian packages: $MISSING"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086  # word splitting of the package list is intended
  if apt-get update -qq && apt-get install -y -qq --no-install-recommends $MISSING; then
    MISSING="$(missing_debs)"
    if [[ -z "$MISSING" ]]; then
      found
      exit 0
    fi
  else
    say "apt-get could not install: $MISSING"
  fi
fi

if [[ -x "$PYTHON" ]] && "$PYTHON" -c "import playwright" 2>/dev/null; then
  ENGINES="$(echo "$MISSING" | sed -e 's/firefox-esr/firefox/' -e 's/webkit2gtk-driver/webkit/' -e 's/xvfb/webkit/' \
             | tr ' ' '\n' | sort -u | tr '\n' ' ')"
  say "trying Playwright's own browser builds: $PYTHON -m playwright install $ENGINES"
  # shellcheck disable=SC2086  # word splitting of the engine list is intended
  if "$PYTHON" -m playwright install $ENGINES; then
    say "ok: Playwright browsers installed (Debian packages still missing: $MISSING)"
    exit 0
  fi
  say "playwright install failed (it needs internet access to its browser downloads)"
fi

say "MISSING browsers: $MISSING"
say "  Install them as root with: apt-get update && apt-get install -y chromium firefox-esr webkit2gtk-driver xvfb"
say "  or, with internet access:  $PYTHON -m playwright install chromium firefox webkit"
say "  Browser tests cannot run until then; the dev server (make run) works without them."
exit "$STRICT"
