"""Launch settings for real browsers: the system Chromium / Firefox ESR offline, or Playwright's own builds.

Used by the browser tests, the comparison bench and the scripts, so every launch is configured alike.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM_PATHS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
FIREFOX_PATHS = ("/usr/bin/firefox-esr", "/usr/lib/firefox-esr/firefox-esr", "/usr/bin/firefox")

# Keep the browser on this machine: no name resolution except loopback, no background traffic.
CHROMIUM_OFFLINE_ARGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    "--disable-sync",
    "--disable-quic",
    "--no-pings",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
NATIVE_WEBNN_FEATURE = "WebMachineLearningNeuralNetwork"

# The npm Chromium whose native WebNN works (LiteRT/XNNPACK on the CPU), installed into the cache by
# scripts/setup_native_chromium.py; keep the version in step with that script.
NATIVE_CHROMIUM_VERSION = "153.0.0"
NATIVE_CHROMIUM_FILES = ("chromium", "libEGL.so", "libGLESv2.so", "libvk_swiftshader.so", "libvulkan.so.1",
                         "vk_swiftshader_icd.json")
NATIVE_CHROMIUM_SETUP = "make setup (or: python scripts/setup_native_chromium.py)"

FIREFOX_OFFLINE_PREFS: dict[str, Any] = {
    "services.settings.server": "data:,#dummy/v1",
    "network.trr.mode": 5,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.enabled": False,
    "app.update.enabled": False,
    "app.normandy.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
}


def _first(paths: tuple[str, ...], env: str) -> str | None:
    override = os.environ.get(env)
    if override:
        return override
    for p in paths:
        if Path(p).exists():
            return p
    return None


def system_browser(name: str) -> str | None:
    """Path of the system browser for a Playwright browser name, or None to use Playwright's own build.

    PYODIDE_WEBNN_BROWSERS=playwright forces the builds `playwright install` downloads."""
    if os.environ.get("PYODIDE_WEBNN_BROWSERS") == "playwright":
        return None
    if name == "chromium":
        return _first(CHROMIUM_PATHS, "PYODIDE_WEBNN_CHROMIUM")
    if name == "firefox":
        return _first(FIREFOX_PATHS, "PYODIDE_WEBNN_FIREFOX")
    return None


def playwright_has(browser_type: Any) -> bool:
    """Whether Playwright can launch this browser type here: a system browser stands in for it, or Playwright's
    own build of it is installed."""
    if system_browser(browser_type.name):
        return True
    try:
        return Path(browser_type.executable_path).is_file()
    except Exception:  # Playwright raises its own Error when it knows no executable for this platform
        return False


def webkit_over_webdriver(browser: str, playwright: Any) -> bool:
    """Whether this local browser is WebKitGTK through WebDriver: WebKit where Playwright's own WebKit is not
    installed (docs/webdriver.md)."""
    return browser == "webkit" and not playwright_has(playwright.webkit)


@dataclass(frozen=True)
class NativeChromium:
    """Where the native-WebNN Chromium is, or why it is not there (`path` None)."""

    path: str | None
    reason: str = ""
    version: str = ""


def native_chromium() -> NativeChromium:
    """The npm Chromium 153 with a working native WebNN: $PYODIDE_WEBNN_NATIVE_CHROMIUM (a binary) or the
    install in the cache; otherwise the reason, as scripts/setup_native_chromium.py recorded it."""
    override = os.environ.get("PYODIDE_WEBNN_NATIVE_CHROMIUM")
    if override:
        if Path(override).is_file() and os.access(override, os.X_OK):
            return NativeChromium(override, version="$PYODIDE_WEBNN_NATIVE_CHROMIUM")
        return NativeChromium(None, f"PYODIDE_WEBNN_NATIVE_CHROMIUM={override} is not an executable file")
    from web.settings import Settings

    root = Settings.from_env().cache_dir
    target = root / f"chromium-{NATIVE_CHROMIUM_VERSION}"
    missing = [f for f in NATIVE_CHROMIUM_FILES if not (target / f).is_file()]
    if not missing:
        try:
            version = str(json.loads((target / "manifest.json").read_text()).get("version", ""))
        except (OSError, ValueError):
            version = ""
        return NativeChromium(str(target / "chromium"), version=version)
    try:
        status = json.loads((root / f"chromium-{NATIVE_CHROMIUM_VERSION}.status.json").read_text())
        reason = f"the setup could not install it: {status['reason']}"
    except (OSError, ValueError, KeyError, TypeError):
        reason = f"not installed in {target} (missing {', '.join(missing)}): run {NATIVE_CHROMIUM_SETUP}"
    return NativeChromium(None, f"npm Chromium {NATIVE_CHROMIUM_VERSION} with native WebNN: {reason}")


def native_chromium_launch_args(base: dict[str, Any] | None = None) -> dict[str, Any]:
    """`BrowserType.launch()` arguments for the native-WebNN Chromium (raises RuntimeError with the reason
    when it is not installed): offline, headless, WebNN enabled, no sandbox (the npm build has no setuid
    sandbox helper).  The SwiftShader libraries beside the binary are found by Chromium itself."""
    found = native_chromium()
    if found.path is None:
        raise RuntimeError(found.reason)
    kw = launch_args("chromium", native_webnn=True, base=base)
    kw["executable_path"] = found.path
    kw["chromium_sandbox"] = False
    kw["headless"] = True
    kw.pop("channel", None)
    return kw


def launch_args(name: str, *, native_webnn: bool = False, extra_features: list[str] | None = None,
                base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Keyword arguments for `BrowserType.launch()`; `base` (e.g. pytest-playwright's) is kept and extended."""
    kw: dict[str, Any] = dict(base or {})
    exe = system_browser(name)
    if name == "chromium":
        args = list(kw.get("args", [])) + CHROMIUM_OFFLINE_ARGS
        features = list(extra_features or [])
        if native_webnn:
            features.append(NATIVE_WEBNN_FEATURE)
        if features:
            # Chromium keeps only the last --enable-features switch: pass one combined list
            args = [a for a in args if not a.startswith("--enable-features=")]
            args.append("--enable-features=" + ",".join(features))
        if os.geteuid() == 0:
            kw["chromium_sandbox"] = False
        kw["args"] = args
        if exe:
            kw["executable_path"] = exe
    elif name == "firefox":
        if exe:
            # stock Firefox speaks WebDriver BiDi, not Playwright's juggler protocol
            kw["executable_path"] = exe
            kw["channel"] = "moz-firefox"
        prefs = dict(FIREFOX_OFFLINE_PREFS)
        prefs.update(kw.get("firefox_user_prefs", {}))
        kw["firefox_user_prefs"] = prefs
        env = dict(os.environ)
        env.update(kw.get("env") or {})
        env["MOZ_DISABLE_NONLOCAL_CONNECTIONS"] = "1"
        kw["env"] = env
    return kw
