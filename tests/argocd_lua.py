"""Run an Argo CD health check the way Argo CD v3.5.1 runs it, with real Lua 5.1 (lupa).

util/lua/lua.go @ v3.5.1: gopher-lua (Lua 5.1) with only the base, table and package libraries
and a safe os (time, date); the live object as the global `obj`; the chunk's returned table,
encoded as JSON, is the health. A nil return is an empty health; a status outside the six codes
becomes Unknown ("Lua returned an invalid health status"); a script error is an error.
"""

from __future__ import annotations

from typing import Any

from lupa import lua51

STATUSES = ("Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown")

# No string, math, io, debug or coroutine library, and no string methods ("x"):sub (their
# metatable comes with the string library, which Argo CD does not open).
_SANDBOX = """
getmetatable("").__index = nil
string, math, io, debug, coroutine = nil, nil, nil, nil, nil
os = {time = os.time, date = os.date}
"""


def _to_lua(runtime: Any, value: Any) -> Any:
    """JSON-shaped Python data as Lua tables (lists 1-based), as Argo CD's decodeValue builds them."""
    if isinstance(value, dict):
        return runtime.table_from({k: _to_lua(runtime, v) for k, v in value.items() if v is not None})
    if isinstance(value, list):
        return runtime.table_from([_to_lua(runtime, v) for v in value])
    return value


def run_check(lua: str, obj: dict[str, Any]) -> dict[str, str]:
    """The health ({status, message}) `lua` gives the live object `obj`."""
    runtime = lua51.LuaRuntime(register_eval=False, register_builtins=False)
    runtime.execute(_SANDBOX)
    runtime.globals().obj = _to_lua(runtime, obj)
    result = runtime.execute(lua)
    if result is None:
        return {"status": "", "message": ""}
    health = {"status": result["status"] or "", "message": result["message"] or ""}
    assert all(isinstance(v, str) for v in health.values()), f"status and message must be strings: {health}"
    if health["status"] not in STATUSES:
        return {"status": "Unknown", "message": "Lua returned an invalid health status"}
    return health
