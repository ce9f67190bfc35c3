"""What the bridge tells an editor it can do.

An editor sends ``initialize`` before it names a worker, so the bridge answers with the
capabilities of the debugpy it holds, adjusted for what the bridge itself allows.
"""

from __future__ import annotations

from typing import Any

from raydap.adapter.captures.points import BREAKPOINT_MODES

#: debugpy 1.8's answer to ``initialize``, used until the bridge holds a worker to ask.
DEBUGPY_CAPABILITIES: dict[str, Any] = {
    "supportsCompletionsRequest": True,
    "supportsConditionalBreakpoints": True,
    "supportsConfigurationDoneRequest": True,
    "supportsDebuggerProperties": True,
    "supportsDelayedStackTraceLoading": True,
    "supportsEvaluateForHovers": True,
    "supportsExceptionInfoRequest": True,
    "supportsExceptionOptions": True,
    "supportsFunctionBreakpoints": True,
    "supportsHitConditionalBreakpoints": True,
    "supportsLogPoints": True,
    "supportsModulesRequest": True,
    "supportsSetExpression": True,
    "supportsSetVariable": True,
    "supportsValueFormattingOptions": True,
    "supportsGotoTargetsRequest": True,
    "supportsClipboardContext": True,
    "supportsStepInTargetsRequest": True,
    "exceptionBreakpointFilters": [
        {"filter": "raised", "label": "Raised Exceptions", "default": False},
        {"filter": "uncaught", "label": "Uncaught Exceptions", "default": True},
        {"filter": "userUnhandled", "label": "User Uncaught Exceptions", "default": False},
    ],
}


def bridge_capabilities(upstream: dict[str, Any] | None) -> dict[str, Any]:
    """The worker's capabilities minus killing it (a Ray worker belongs to Ray, not to the
    editor, so ``terminate`` is never offered), plus the bridge's capture points."""
    capabilities = dict(upstream or DEBUGPY_CAPABILITIES)
    capabilities["supportsTerminateRequest"] = False
    capabilities["supportsTerminateDebuggee"] = False
    capabilities["breakpointModes"] = BREAKPOINT_MODES
    return capabilities
