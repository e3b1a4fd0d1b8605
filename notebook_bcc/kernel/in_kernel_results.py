"""Result fetching, the third part of the in-kernel helper (``helper_source`` sends
``in_kernel.py``, ``in_kernel_figures.py`` and then this file, ``exec``-ed into one module):
the values of named variables as JSON, for the summary and the verification.

A variable named in ``whole`` (name -> a part's limit in characters of JSON: the results
contract's ``final_answers``, ``final_metrics``, ``final_summary``) is never dropped whole: a
part too large to report in full, or that is not JSON, stands as a marker, ``{"__shortened__": true, "type", "size", "head", "why"}``, and the
rest stands as it is. Any other variable is fetched only when all of it is small and JSON.
Standard library only at module level, like ``in_kernel.py``.
"""

import json as _json

_SHORTENED = "__shortened__"
_HEAD_CHARS = 200  # of a shortened value: its first characters (a string's own, else JSON's)
_MAX_ENTRIES = 500  # a dict's entries fitted one by one; a larger dict stands as one marker


def _results_ns():
    from IPython import get_ipython

    return get_ipython().user_ns


def _plain(value):
    # numpy scalars (np.float64, np.int64, np.bool_) and timestamps become plain JSON values
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(type(value).__name__)


def _json_text(value):
    try:
        return _json.dumps(value, default=_plain)  # NaN too: answers may hold it
    except (TypeError, ValueError, RecursionError):
        return None


def _shortened(value, text, why):
    try:
        size = len(value)
    except Exception:  # noqa: BLE001 - any object: its size is then unknown
        size = None
    if isinstance(value, str):
        head = value[:_HEAD_CHARS]
    elif text is not None:
        head = text[:_HEAD_CHARS]
    else:
        try:
            head = repr(value)[:_HEAD_CHARS]
        except Exception:  # noqa: BLE001 - a repr that fails says nothing
            head = ""
    return {_SHORTENED: True, "type": type(value).__name__, "size": size, "head": head, "why": why}


def _fit(value, limit):
    # the value when its JSON fits ``limit``; a dict entry by entry; else a marker
    text = _json_text(value)
    if text is not None and len(text) <= limit:
        return _json.loads(text)
    if isinstance(value, dict) and 0 < len(value) <= _MAX_ENTRIES:
        return {str(k): _fit(v, limit) for k, v in value.items()}
    why = "not JSON-serialisable" if text is None else f"over {limit:,} characters of JSON"
    return _shortened(value, text, why)


def fetch_ns(request):
    # values of the named variables: those in ``whole`` always (shortened where too large),
    # the others only when small and JSON-serialisable
    req = _json.loads(request)
    ns = _results_ns()
    whole = req.get("whole") or {}
    found = {}
    for name in req["names"]:
        if name not in ns:
            continue
        value = ns[name]
        if name in whole:
            found[name] = _fit(value, int(whole[name]))
            continue
        if not isinstance(value, (dict, list, tuple, str, int, float, bool)) or value is None:
            continue
        text = _json_text(value)
        if text is not None and len(text) <= req["max_chars"]:
            found[name] = _json.loads(text)
    return _json.dumps(found)
