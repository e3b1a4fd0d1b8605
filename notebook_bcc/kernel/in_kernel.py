"""The helper that runs inside the kernel (``helper_source.call_expression`` sends this file's
text, which is ``exec``-ed into a module of its own there): namespace inspection, figure text,
acceptance checks and deletion (result fetching is ``in_kernel_results.py``). It imports nothing from ``notebook_bcc`` (a
kernel on a gateway has no such package) and only the standard library at module level; it
reads pandas and numpy from ``sys.modules`` when the user's code imported them. Every entry
point takes a JSON string and returns a JSON string, and catches user errors itself so
IPython never records a traceback. Unit tests import it as an ordinary module.
"""

import collections as _collections
import contextlib as _contextlib
import functools as _functools
import inspect as _inspect
import json as _json
import operator as _operator
import re as _re
import reprlib as _reprlib
import sys as _sys
import types as _types

_SKIP = {"In", "Out", "exit", "quit", "get_ipython"}
_MAX_VARS = 500
_MAX_COLS = 300  # a DataFrame's column names, listed whole up to this many (then counted)
_MAX_KEYS = 100  # a dict's keys, listed whole up to this many (then counted)
_DICT_CHARS = 1500  # what a dict's values share, each shortened to its part, on one line
_REPR_CHARS = 400
_ADDRESS = _re.compile(r" at 0x[0-9a-fA-F]+")
_SMALL_SERIES = 20  # a Series this short shows its values
_INDEX_LABELS = 12  # a table's index shows its labels up to this many (then counts them)


class _OrderedRepr(_reprlib.Repr):
    # reprlib sorts dict keys; a ledger must show them in the order the code made them
    def repr_dict(self, x, level):
        n = len(x)
        if n == 0:
            return "{}"
        if level <= 0:
            return "{...}"
        items = []
        for key in list(x)[: self.maxdict]:
            items.append(f"{self.repr1(key, level - 1)}: {self.repr1(x[key], level - 1)}")
        if n > self.maxdict:
            items.append("...")
        return "{" + ", ".join(items) + "}"

    def repr_instance(self, x, level):
        if _is_estimator(x):
            return self._trim(_estimator_text(x))
        return super().repr_instance(x, level)

    # the shortest text that reads back as the same number: a listing never shows a value
    # the code did not compute (2081990.36 is not 2081990.0)
    def repr_float(self, x, level):
        return repr(float(x))

    def repr_float32(self, x, level):
        return str(x)  # numpy's shortest float32 digits, not float64's noise

    repr_float64 = repr_float

    def _trim(self, text):
        limit = self.maxother
        return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_estimator(x):
    return hasattr(x, "get_params") and type(x).__module__.startswith("sklearn")


def _estimator_text(x):
    # sklearn's own repr of a composite estimator (a Pipeline) costs ~10 ms, on every
    # inspection; this names its parts, each leaf by its own (fast) repr
    parts = getattr(x, "steps", None) or getattr(x, "transformers", None)
    if isinstance(parts, list):
        inner = ", ".join(
            f"{p[0]}={_estimator_text(p[1])}" for p in parts if isinstance(p, tuple) and len(p) >= 2
        )
        return f"{type(x).__name__}({inner})"
    return repr(x)


_short = _OrderedRepr()
_short.maxlevel = 2
_short.maxstring = _short.maxother = _short.maxlong = 160
_short.maxdict = 20
_short.maxlist = _short.maxtuple = 12
_short.maxset = _short.maxfrozenset = _short.maxdeque = _short.maxarray = 12

# a dict's values, nested keys included (results of several models, each with its numbers)
_nested = _OrderedRepr()
_nested.maxlevel = 4
_nested.maxstring = _nested.maxother = _nested.maxlong = 160
_nested.maxdict = _nested.maxlist = _nested.maxtuple = 20
_nested.maxset = _nested.maxfrozenset = _nested.maxdeque = _nested.maxarray = 20

# the results every agent must be able to read whole (docs/results.md, "Results")
_RESULTS = ("final_answers", "final_metrics")
_RESULT_CHARS = 4000
_long = _OrderedRepr()
_long.maxlevel = 3
_long.maxstring = _long.maxother = _long.maxlong = 400
_long.maxdict = _long.maxlist = _long.maxtuple = 50


def _shell():
    from IPython import get_ipython

    return get_ipython()


def _visible(shell, items):
    # the user's own names: no "_" temporaries, IPython's In/Out, nor its hidden names
    hidden = shell.user_ns_hidden
    missing = object()
    for name, value in items:
        if not (name.startswith("_") or name in _SKIP or hidden.get(name, missing) is value):
            yield name, value


def _user_items(shell):
    for name, value in _visible(shell, list(shell.user_ns.items())):
        if not _is_code(value):
            yield name, value


def _is_code(value):
    # Modules, classes and routines; callable *instances* (fitted models) are data.
    if isinstance(value, (_types.ModuleType, type, _functools.partial)):
        return True
    return _inspect.isroutine(value) or type(value).__name__ == "ufunc"


def _dims(shape):
    try:
        return "x".join(str(_operator.index(d)) for d in shape)
    except Exception:
        return None


def _blank(name, value, text=""):
    # a variable's record before anything is measured (or when measuring it failed)
    info = {"name": name, "kind": type(value).__name__, "shape": None, "length": None}
    info.update(columns=[], bytes=0, repr=text, index="")
    return info


def _index_text(pd, index):
    # a table's index unless it is the default 0..n-1: what it is named, its dtype, its labels
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return ""
    names = ", ".join("(unnamed)" if n is None else str(n) for n in index.names)
    dtype = "" if isinstance(index, pd.MultiIndex) else f":{index.dtype}"
    if len(index) <= _INDEX_LABELS:
        labels = ", ".join(_one_line(repr(x), 40) for x in index)
        return f"{names}{dtype} [{labels}]"
    about = "unique" if index.is_unique else "with repeats"
    if index.is_monotonic_increasing:  # dates, ordered keys: where they run from and to
        about += f", {_one_line(str(index[0]), 40)} to {_one_line(str(index[-1]), 40)}"
    return f"{names}{dtype} ({len(index)} labels, {about})"


def _summary(name, value):
    pd = _sys.modules.get("pandas")
    np = _sys.modules.get("numpy")
    info = _blank(name, value)
    if pd is not None and isinstance(value, pd.DataFrame):
        rows, cols = value.shape
        dtypes = value.dtypes.iloc[:_MAX_COLS]
        info.update(
            shape=f"{rows}x{cols}",
            length=rows,
            repr=f"DataFrame {rows}x{cols}",
            columns=[[str(c), str(t)] for c, t in dtypes.items()],
            bytes=int(value.memory_usage(index=True, deep=False).sum()),
            index=_index_text(pd, value.index),
        )
    elif pd is not None and isinstance(value, pd.Series):
        n = len(value)
        text = f"Series {n} {value.dtype} name={_short.repr(value.name)}"
        if n <= _SMALL_SERIES:  # coefficients, importances, counts: the values are the point
            text += " " + _short.repr(dict(value.items()))
        info.update(
            shape=str(n), length=n, bytes=int(value.memory_usage(index=True, deep=False)), repr=text
        )
    elif np is not None and isinstance(value, np.ndarray):
        shape = _dims(value.shape)
        text = _short.repr(value) if value.size <= 20 else f"ndarray {shape} {value.dtype}"
        info.update(
            shape=shape,
            length=value.shape[0] if value.ndim else None,
            bytes=int(value.nbytes),
            repr=text,
        )
    elif isinstance(value, dict) and name not in _RESULTS:
        info.update(length=len(value), bytes=int(_sys.getsizeof(value, 0)), repr=_dict_text(value))
        return info  # every key whole: the text is not cut
    else:
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple):
            info["shape"] = _dims(shape)
        # a scikit-learn ensemble's len() is its number of estimators, not a size
        if hasattr(type(value), "__len__") and not _is_estimator(value):
            with _contextlib.suppress(Exception):
                info["length"] = int(len(value))
        info["bytes"] = int(_sys.getsizeof(value, 0))
        info["repr"] = (_long if name in _RESULTS else _short).repr(value)
    text = _ADDRESS.sub("", info["repr"])  # <function f at 0x7f3d...>: the address says nothing
    limit = _RESULT_CHARS if name in _RESULTS else _REPR_CHARS
    if len(text) > limit:  # cut between items, never inside a number or a name
        cut = text.rfind(", ", 0, limit)
        text = text[: cut if cut > 0 else limit] + ", ..."
    info["repr"] = text
    return info


def _one_line(text, width):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: max(1, width - 3)] + "..."


def _dict_text(value):
    # every key whole (up to _MAX_KEYS), on one line; only the values are shortened
    keys = list(value)[:_MAX_KEYS]
    width = max(24, _DICT_CHARS // max(1, len(keys)))
    parts = []
    for key in keys:
        try:
            shown = _nested.repr(value[key])
        except Exception as exc:
            shown = f"<unavailable: {type(exc).__name__}>"
        parts.append(f"{_one_line(repr(key), 400)}: {_one_line(shown, width)}")
    more = len(value) - len(keys)
    return "{" + ", ".join(parts) + (f", ... (+{more} more keys)" if more > 0 else "") + "}"


def inspect_ns(request):
    items = sorted(_user_items(_shell()), key=lambda item: item[0])
    out = []
    for name, value in items[:_MAX_VARS]:
        try:
            out.append(_summary(name, value))
        except Exception as exc:
            out.append(_blank(name, value, f"<unavailable: {type(exc).__name__}>"))
    return _json.dumps({"vars": out, "total": len(items), "code": _code_names(_shell())})


def _code_names(shell):
    # modules ("pd" -> "pandas") and functions or classes the user can call, by name
    modules, callables = [], []
    for name, value in _visible(shell, sorted(shell.user_ns.items())):
        if isinstance(value, _types.ModuleType):
            modules.append([name, value.__name__])
        elif _is_code(value):
            where = getattr(value, "__module__", None) or ""
            if where == "__main__":  # the notebook's own: show how to call it
                try:
                    where = "signature " + str(_inspect.signature(value))[:160]
                except (TypeError, ValueError):
                    where = ""
            callables.append([name, str(where)])
    return {"modules": modules[:_MAX_VARS], "callables": callables[:_MAX_VARS]}


def _read_only_eval(expr, ns, filename):
    # a criterion's scope is the namespace (dir() and locals() list it), and what it assigns
    # (a walrus) stays in the ChainMap's own first dict, out of the namespace
    return eval(compile(expr, filename, "eval"), ns, _collections.ChainMap({}, ns))


def check_ns(request):
    args = _json.loads(request)
    ns = _shell().user_ns
    artifacts = [[name, name in ns] for name in args["artifacts"]]
    criteria = []
    for expr in args["criteria"]:
        try:
            verdict = "passed" if bool(_read_only_eval(expr, ns, "<criterion>")) else "failed"
            criteria.append([expr, verdict, ""])
        except Exception as exc:
            criteria.append([expr, "error", f"{type(exc).__name__}: {exc}"[:500]])
    return _json.dumps({"artifacts": artifacts, "criteria": criteria})


def score_ns(request):
    # a fork's choice expression, evaluated like a criterion: [a finite float, ""] or [None, why]
    expr = _json.loads(request)
    try:
        number = float(_read_only_eval(expr, _shell().user_ns, "<choose>"))
    except Exception as exc:
        return _json.dumps([None, f"{type(exc).__name__}: {exc}"[:300]])
    if number != number or abs(number) == float("inf"):
        return _json.dumps([None, f"not a finite number: {number!r}"])
    return _json.dumps([number, ""])


def delete_ns(request):
    # Delete each name. Its object's hidden references (Out history, _N, the displayhook) go
    # too, so the memory is freed, unless another user name still holds the same object:
    # IPython's del_var(name) would delete every name bound to it (a loop variable deprecated
    # after its last iteration would take the list element's own name with it).
    import gc

    shell = _shell()
    spaces = list(shell.all_ns_refs)  # user_ns, the user module's globals, hidden names
    obj = None
    for name in _json.loads(request):
        if name.startswith("_") or name in _SKIP or name not in shell.user_ns:
            continue
        obj = shell.user_ns[name]
        for space in spaces:
            if space.get(name, None) is obj:
                del space[name]
        if any(
            o is obj
            for space in spaces
            for n, o in space.items()
            if not n.startswith("_") and n not in _SKIP
        ):
            continue
        for space in [*spaces, shell.history_manager.output_hist]:
            for key in [k for k, o in space.items() if o is obj]:
                del space[key]
        if getattr(shell.last_execution_result, "result", None) is obj:
            shell.last_execution_result = None
        for attr in ("_", "__", "___"):
            if getattr(shell.displayhook, attr, None) is obj:
                setattr(shell.displayhook, attr, None)
    del obj
    gc.collect()
    return _json.dumps({"ok": True})


def environment_ns(request):
    # Python's version and each distribution's version (None: not installed), read from
    # package metadata; for the modules the problem names, whether they can be imported (found
    # by importlib, not imported). Nothing is imported into the kernel.
    import platform
    from importlib import machinery, metadata, util

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    def findable(name):
        # a dotted name is looked for in its package's folders: its parent is not imported
        top, *rest = name.split(".")
        try:
            spec = util.find_spec(top)
            for part in rest:
                where = spec.submodule_search_locations if spec is not None else None
                spec = machinery.PathFinder.find_spec(part, where) if where else None
        except (ImportError, ValueError):
            return False
        return spec is not None

    req = _json.loads(request)
    named = {}
    for name in req["modules"]:
        named[name] = version(name) or ("installed" if findable(name) else None)
    return _json.dumps(
        {
            "python": platform.python_version(),
            "packages": {name: version(name) for name in req["packages"]},
            "named": named,
        }
    )
