"""Which WebNN implementations a browser offers: the polyfill, and native WebNN per context variant, each
absent, present but unusable (with the browser's own error), or usable (a context ran a one-op graph).
The CPython core is the reference and is always there.  https://www.w3.org/TR/webnn/#api-ml-createcontext
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# Context variants: the current MLContextOptions (powerPreference, accelerated) and the legacy deviceType
# that Chrome and Edge still accept (cpu / gpu / npu pick a backend there).
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "cpu": {"deviceType": "cpu"},
    "gpu": {"deviceType": "gpu"},
    "npu": {"deviceType": "npu"},
    "high-performance": {"powerPreference": "high-performance"},
    "low-power": {"powerPreference": "low-power"},
    "accelerated": {"accelerated": True},
    "not-accelerated": {"accelerated": False},
}
IMPLEMENTATIONS = ("polyfill", "native")
USABLE, UNUSABLE, ABSENT = "usable", "unusable", "absent"

PROBE_JS = "async ([variants, timeoutMs]) => await webnnBench.probe(variants, {timeoutMs})"


@dataclass
class ImplState:
    """One implementation in one context variant, as the probe found it."""

    impl: str
    variant: str
    state: str
    error: dict[str, str] | None = None  # the browser's own {name, message}
    stage: str = ""  # where an unusable implementation failed: context, build or compute
    accelerated: bool | None = None  # MLContext.accelerated, where the browser has it
    ms: float | None = None

    @property
    def message(self) -> str:
        """The browser's own error as 'Name: message'."""
        if not self.error:
            return ""
        return f"{self.error.get('name', 'Error')}: {self.error.get('message', '')}"

    def describe(self) -> str:
        """The state in words: 'usable', 'absent (...)', 'unusable at build (...)'."""
        if self.state == USABLE:
            return "usable"
        where = f" at {self.stage}" if self.stage and self.stage != "context" else ""
        return f"{self.state}{where}" + (f" ({self.message})" if self.message else "")


@dataclass
class Probe:
    """What one browser target offers."""

    target: str
    browser: str
    browser_version: str
    environment: dict[str, Any] = field(default_factory=dict)
    states: list[ImplState] = field(default_factory=list)

    def state(self, impl: str, variant: str) -> ImplState:
        """The state of one implementation/variant (unusable when it was not probed)."""
        for s in self.states:
            if s.impl == impl and s.variant == variant:
                return s
        return ImplState(impl, variant, UNUSABLE, {"name": "NotProbed", "message": f"variant '{variant}' not probed"})

    def to_json(self) -> dict[str, Any]:
        """The probe as a results.jsonl line."""
        return {
            "target": self.target,
            "browser": self.browser,
            "browser_version": self.browser_version,
            "environment": self.environment,
            "states": [asdict(s) for s in self.states],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Probe:
        """A probe read back from a results.jsonl line."""
        return cls(
            d["target"],
            d["browser"],
            d.get("browser_version", ""),
            dict(d.get("environment", {})),
            [ImplState(**s) for s in d.get("states", [])],
        )

    def summary(self) -> str:
        """One line per implementation: the variants grouped by state."""
        lines = []
        for impl in IMPLEMENTATIONS:
            groups: dict[str, list[str]] = {}
            for s in self.states:
                if s.impl == impl:
                    groups.setdefault(s.describe(), []).append(s.variant)
            parts = [f"{', '.join(v)}: {d}" for d, v in groups.items()]
            lines.append(f"  {impl:<8} " + ("; ".join(parts) or "not probed"))
        return f"{self.target} ({self.browser} {self.browser_version})\n" + "\n".join(lines)


def probe_page(
    page: Any, target: str, browser: str, version: str, variants: Sequence[str], timeout_ms: int = 120_000
) -> Probe:
    """Run webnnBench.probe in a bench page for the given variant names."""
    wanted = [{"name": v, "options": VARIANTS[v]} for v in variants]
    raw = page.evaluate(PROBE_JS, [wanted, timeout_ms])
    states = [
        ImplState(
            r["impl"],
            r["variant"],
            r["state"],
            r.get("error"),
            r.get("stage", ""),
            r.get("accelerated"),
            r.get("ms"),
        )
        for r in raw["implementations"]
    ]
    return Probe(target, browser, version, raw.get("environment", {}), states)
