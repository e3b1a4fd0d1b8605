"""Data-stage code recipes: integrity checks and cleaning, plus shared code snippets.

Builders return ``(markdown, code template)`` pairs; :mod:`recipes` fills the ``__TARGET__``,
``__TASK__`` and ``__SEED__`` placeholders and wraps them into cells. Pure text: nothing here
touches the data.
"""

from __future__ import annotations

from notebook_bcc.agents.offline.context import RecipeContext

Pairs = list[tuple[str, str]]

# Resolves TARGET against a frame's columns, tolerating case/space/punctuation differences.
TARGET_SNIPPET = r"""
TARGET = __TARGET__
TASK = __TASK__
SEED = __SEED__
if TARGET is not None and TARGET not in FRAME.columns:
    _key = re.sub(r"[^0-9a-z]", "", str(TARGET).lower())
    TARGET = next((c for c in FRAME.columns if re.sub(r"[^0-9a-z]", "", str(c).lower()) == _key), TARGET)
"""


# Helpers for the closing line of every recipe's last cell: one plain-language sentence that
# starts with "Result: " and states the step's key numbers (the behavior reflector quotes it).
RESULT_HELPERS = r"""

# --- one-line result for the reader
def _bcc_names(names, limit=5):
    names = [str(n) if len(str(n)) <= 40 else str(n)[:39] + "..." for n in names]
    if not names:
        return "none"
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _bcc_count(n, word, plural=None):
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _bcc_fmt(value, spec=".3f"):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if value != value else format(value, spec)


def _bcc_result(text):
    text = " ".join(str(text).split())
    print("Result: " + (text if len(text) <= 400 else text[:396].rstrip() + " ..."))

"""


# Column-type helpers shared by the later cells, defined once in the setup cell.
HELPERS = r"""
def _bcc_text_columns(frame):
    return [c for c in frame.columns if frame[c].dtype == object or isinstance(frame[c].dtype, pd.StringDtype)]


def _bcc_column_groups(frame):
    # numeric (not boolean), datetime, and all other (categorical or text) columns
    numeric = [
        c for c in frame.columns
        if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
    ]
    dates = [c for c in frame.columns if pd.api.types.is_datetime64_any_dtype(frame[c])]
    return numeric, dates, [c for c in frame.columns if c not in numeric and c not in dates]


def _bcc_to_number(series):
    text = series.astype("string").str.strip().str.replace(r"[\s\u00a0$€£¥%]", "", regex=True)
    # "1,234.5" (thousands comma) versus "1.234,5" / "12,5" (decimal comma)
    us_style = text.str.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?|-?\d*\.\d+").sum()
    eu_style = text.str.fullmatch(r"-?\d{1,3}(\.\d{3})+(,\d+)?|-?\d*,\d{1,2}").sum()
    if eu_style > us_style:
        text = text.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
    else:
        text = text.str.replace(",", "", regex=False)
    return pd.to_numeric(text, errors="coerce").astype("float64")


def _bcc_parse_dates(series):
    text = series.astype("string").str.strip()
    wanted = int(text.notna().sum())
    best = None
    for options in ({}, {"dayfirst": True}, {"format": "mixed"}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                parsed = pd.to_datetime(text, errors="coerce", **options)
            except (ValueError, TypeError, OverflowError):
                continue
        if best is None or parsed.notna().sum() > best.notna().sum():
            best = parsed
        if best.notna().sum() == wanted:
            break
    if best is None or best.notna().sum() < 0.9 * wanted:
        pattern = r"(\d{4}-[A-Za-z0-9]{1,3}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?)"
        extracted = text.str.extract(pattern, expand=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                parsed = pd.to_datetime(extracted, errors="coerce", format="mixed")
                if best is None or parsed.notna().sum() > best.notna().sum():
                    best = parsed
            except (ValueError, TypeError, OverflowError):
                pass
    return best
"""


# Closing result line of the integrity cell (both variants): built from ``integrity_report``.
INTEGRITY_RESULT = r"""
try:
    _bcc_missing = integrity_report["missing"]
    if _bcc_missing:
        _bcc_worst = max(_bcc_missing, key=_bcc_missing.get)
        _bcc_text = (
            f"{_bcc_count(sum(_bcc_missing.values()), 'missing value')} in {_bcc_count(len(_bcc_missing), 'column')} "
            f"(most in {_bcc_worst}: {_bcc_missing[_bcc_worst]})"
        )
    else:
        _bcc_text = "no missing values"
    _bcc_text += f", {_bcc_count(integrity_report['duplicate_rows'], 'duplicate row')}"
    _bcc_empty = integrity_report["empty_columns"]
    _bcc_text += f"; constant: {_bcc_names(integrity_report['constant_columns'])}"
    if _bcc_empty:
        _bcc_text += f" ({len(_bcc_empty)} of them entirely empty)"
    _bcc_text += (
        f"; ID-like: {_bcc_names(integrity_report['id_like_columns'])}"
        f"; numbers stored as text: {_bcc_names(integrity_report['numeric_text_columns'])}"
        f"; dates: {_bcc_names(integrity_report['date_like_columns'])}"
    )
    if "target" in integrity_report:
        _bcc_tm = integrity_report["target_missing"]
        _bcc_text += f"; the target {integrity_report['target']} has " + (
            _bcc_count(_bcc_tm, "missing value") if _bcc_tm else "no missing values"
        )
except Exception as exc:
    _bcc_text = f"integrity checked for {raw_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""


# ---------------------------------------------------------------------- integrity_checks

INTEGRITY_V0 = (
    "# Analysis parameters, set once for the notebook; the target name is matched to the columns."
    + TARGET_SNIPPET.replace("FRAME", "raw_dataset")
    + r"""
_df = raw_dataset
_n = len(_df)
_text_cols = _bcc_text_columns(_df)
_id_hint = re.compile(r"(^|[^a-z])(id|ids|key|uuid|guid|index|idx|no|num|number|name|code)([^a-z]|$)")



def _bcc_text_kind(values):
    # "number" / "date" when at least 90% of a text column's values parse as such
    if _bcc_to_number(values).notna().mean() >= 0.9:
        return "number"
    sample = values.astype(str).drop_duplicates().head(300)
    if sample.str.contains(r"\d").mean() >= 0.9:
        parsed = _bcc_parse_dates(sample)
        if parsed is not None and parsed.notna().mean() >= 0.9:
            return "date"
    return None


def _bcc_is_id_like(name, values, is_text):
    # unique keys carry no signal: an ID-ish name, unique text, or a consecutive integer run
    is_integral = (pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
                   and bool((values % 1 == 0).all()))
    if not (is_text or is_integral):
        return False
    unique_ratio = values.nunique() / len(values)
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", str(name)).lower()
    consecutive = (is_integral and unique_ratio == 1 and len(values) >= 20
                   and float(values.max() - values.min()) == len(values) - 1)
    return bool((_id_hint.search(spaced) and unique_ratio >= 0.9)
                or (is_text and unique_ratio == 1 and len(values) >= 20) or consecutive)


_kinds = {_c: _bcc_text_kind(_df[_c].dropna()) for _c in _text_cols if _df[_c].notna().any()}
numeric_text_columns = [_c for _c, _k in _kinds.items() if _k == "number"]
date_like_columns = [_c for _c, _k in _kinds.items() if _k == "date"]
date_like_columns += [
    _c for _c in _df.columns if pd.api.types.is_datetime64_any_dtype(_df[_c]) and _c not in date_like_columns
]
id_like_columns = [
    _c for _c in _df.columns
    if _c != TARGET and _c not in date_like_columns and _c not in numeric_text_columns
    and _df[_c].notna().sum() >= 2 and _bcc_is_id_like(_c, _df[_c].dropna(), _c in _text_cols)
]

_missing = _df.isna().sum()
_unique = _df.nunique(dropna=False)
integrity_report = {
    "n_rows": int(_n),
    "n_cols": int(_df.shape[1]),
    "missing": {str(c): int(v) for c, v in _missing.items() if v > 0},
    "duplicate_rows": int(_df.duplicated().sum()),
    "empty_columns": [str(c) for c in _df.columns if _missing[c] == _n],
    "constant_columns": [str(c) for c in _df.columns if _unique[c] <= 1],
    "id_like_columns": [str(c) for c in id_like_columns],
    "numeric_text_columns": [str(c) for c in numeric_text_columns],
    "date_like_columns": [str(c) for c in date_like_columns],
}
if TARGET is not None:
    if TARGET not in _df.columns:
        raise KeyError(f"Target column {TARGET!r} not found; columns are {list(_df.columns)}")
    integrity_report["target"] = str(TARGET)
    integrity_report["target_missing"] = int(_df[TARGET].isna().sum())

_flags = {
    "id": id_like_columns, "numeric-text": numeric_text_columns, "date": date_like_columns,
    "constant": integrity_report["constant_columns"], "target": [TARGET],
}
_table = pd.DataFrame({
    "dtype": _df.dtypes.astype(str),
    "missing": _missing,
    "missing_%": (100 * _missing / max(_n, 1)).round(1),
    "unique": _df.nunique(),
    "flags": [", ".join(k for k, v in _flags.items() if c in v) for c in _df.columns],
})
print(f"{_n} rows x {_df.shape[1]} columns; duplicate rows: {integrity_report['duplicate_rows']}")
display(_table.head(60))
if _df.shape[1] > 60:
    print(f"... {_df.shape[1] - 60} more columns")
for _key in ("id_like_columns", "numeric_text_columns", "date_like_columns", "constant_columns", "empty_columns"):
    if integrity_report[_key]:
        print(f"{_key}: {integrity_report[_key]}")
if TARGET is not None:
    print(f"target {TARGET!r}: {integrity_report['target_missing']} missing values")
"""
    + INTEGRITY_RESULT
)

INTEGRITY_V1 = (
    r"""
import re
"""
    + TARGET_SNIPPET.replace("FRAME", "raw_dataset")
    + r"""
_df = raw_dataset
numeric_text_columns, date_like_columns, id_like_columns = [], [], []
for _c in _df.columns:
    _s = _df[_c].dropna()
    if len(_s) == 0 or pd.api.types.is_numeric_dtype(_s):
        continue
    try:
        _as_text = _s.astype(str)
        _cleaned = _as_text.str.replace(r"[^0-9eE+\-.]", "", regex=True)
        if pd.to_numeric(_cleaned, errors="coerce").notna().mean() >= 0.95 and _as_text.str.contains(r"\d").all():
            numeric_text_columns.append(_c)
        elif re.search(r"date|time|day", str(_c), re.I) and pd.to_datetime(_as_text.head(200), errors="coerce", format="mixed").notna().mean() >= 0.9:
            date_like_columns.append(_c)
        elif _s.nunique() == len(_s) and len(_s) >= 20 and _c != TARGET:
            id_like_columns.append(_c)
    except Exception as exc:
        print(f"skipped checks for {_c!r}: {exc}")
for _c in _df.columns:
    if _c != TARGET and _c not in id_like_columns and re.search(r"(^|[^a-z])id([^a-z]|$)", str(_c).lower()):
        if _df[_c].nunique() >= 0.9 * max(_df[_c].notna().sum(), 1):
            id_like_columns.append(_c)
integrity_report = {
    "n_rows": int(len(_df)),
    "n_cols": int(_df.shape[1]),
    "missing": {str(c): int(v) for c, v in _df.isna().sum().items() if v > 0},
    "duplicate_rows": int(_df.astype(str).duplicated().sum()),
    "empty_columns": [str(c) for c in _df.columns if _df[c].isna().all()],
    "constant_columns": [str(c) for c in _df.columns if _df[c].astype(str).nunique() <= 1],
    "id_like_columns": [str(c) for c in id_like_columns],
    "numeric_text_columns": [str(c) for c in numeric_text_columns],
    "date_like_columns": [str(c) for c in date_like_columns],
}
if TARGET is not None:
    integrity_report["target"] = str(TARGET)
    integrity_report["target_missing"] = int(_df[TARGET].isna().sum())
for _key, _value in integrity_report.items():
    print(f"{_key}: {_value}")
"""
    + INTEGRITY_RESULT
)


def integrity_checks(ctx: RecipeContext) -> Pairs:
    target = f" and the target `{ctx.target}`" if ctx.target else ""
    if ctx.variant:
        return [
            (
                "Check data integrity with simple, per-column guarded tests: missing values, "
                f"duplicates, constant and ID-like columns, numbers or dates stored as text{target}.",
                INTEGRITY_V1,
            )
        ]
    return [
        (
            "Check the integrity of `raw_dataset` before touching it: missing values per column, "
            "exact duplicate rows, constant columns, ID-like columns (unique keys that carry no "
            "signal), text columns that actually hold numbers (currency, percent, thousands "
            f"separators) or dates{target}. The findings go into `integrity_report`.",
            INTEGRITY_V0,
        )
    ]


# Closing result line of the cleaning cell (both variants): column changes are read off
# ``raw_dataset`` versus ``clean_dataset``; each variant lists its other actions in
# ``_bcc_notes``.
CLEAN_RESULT = r"""
try:
    _bcc_kept = [c for c in clean_dataset.columns if c in raw_dataset.columns]
    _bcc_to_num = [
        c for c in _bcc_kept
        if pd.api.types.is_numeric_dtype(clean_dataset[c]) and not pd.api.types.is_numeric_dtype(raw_dataset[c])
    ]
    _bcc_to_date = [
        c for c in _bcc_kept
        if pd.api.types.is_datetime64_any_dtype(clean_dataset[c]) and not pd.api.types.is_datetime64_any_dtype(raw_dataset[c])
    ]
    _bcc_dropped = [c for c in raw_dataset.columns if c not in clean_dataset.columns]
    _bcc_actions = []
    if _bcc_to_num:
        _bcc_actions.append(f"converted {_bcc_count(len(_bcc_to_num), 'text column')} to numbers: {_bcc_names(_bcc_to_num, 3)}")
    if _bcc_to_date:
        _bcc_actions.append(f"parsed {_bcc_count(len(_bcc_to_date), 'date column')}: {_bcc_names(_bcc_to_date, 3)}")
    if _bcc_dropped:
        _bcc_actions.append(f"dropped {_bcc_count(len(_bcc_dropped), 'constant or empty column')}: {_bcc_names(_bcc_dropped, 3)}")
    _bcc_actions += _bcc_notes
    _bcc_text = f"clean_dataset has {clean_dataset.shape[0]} rows and {clean_dataset.shape[1]} columns"
    if _bcc_actions:
        _bcc_text += f" after {_bcc_count(len(_bcc_actions), 'cleaning action')} ({'; '.join(_bcc_actions)})"
    else:
        _bcc_text += "; no cleaning was needed"
except Exception as exc:
    _bcc_text = f"clean_dataset has {clean_dataset.shape[0]} rows and {clean_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""


# ---------------------------------------------------------------------------- clean_data

CLEAN_V0 = (
    r"""
clean_dataset = raw_dataset.copy()
cleaning_log = []
_start_shape = clean_dataset.shape


def _bcc_strip(value):
    if isinstance(value, str):
        value = value.strip()
        return value if value else np.nan
    return value


_changed = 0
for _c in _bcc_text_columns(clean_dataset):
    _before = clean_dataset[_c]
    _after = _before.map(_bcc_strip)
    _changed += int((_before.notna() & (_before.astype("string") != _after.astype("string"))).fillna(True).sum())
    clean_dataset[_c] = _after
if _changed:
    cleaning_log.append(f"stripped surrounding whitespace / blanked empty strings in {_changed} cells")

_empty_rows = clean_dataset.isna().all(axis=1)
if _empty_rows.any():
    clean_dataset = clean_dataset.loc[~_empty_rows]
    cleaning_log.append(f"dropped {int(_empty_rows.sum())} fully empty rows")

_converted, _lost = [], 0
for _c in integrity_report.get("numeric_text_columns", []):
    if _c in clean_dataset.columns:
        _numbers = _bcc_to_number(clean_dataset[_c])
        _lost += int(clean_dataset[_c].notna().sum() - _numbers.notna().sum())
        clean_dataset[_c] = _numbers
        _converted.append(_c)
if _converted:
    cleaning_log.append(
        f"converted {len(_converted)} text columns to numbers ({_lost} unparseable values set to NaN): {_converted}"
    )

for _c in integrity_report.get("date_like_columns", []):
    if _c in clean_dataset.columns and not pd.api.types.is_datetime64_any_dtype(clean_dataset[_c]):
        _parsed = _bcc_parse_dates(clean_dataset[_c])
        if _parsed is not None and _parsed.notna().sum() >= 0.9 * clean_dataset[_c].notna().sum():
            clean_dataset[_c] = _parsed
            cleaning_log.append(f"parsed {_c!r} as datetime ({int(_parsed.isna().sum())} missing)")

_numeric = [c for c in clean_dataset.columns if pd.api.types.is_float_dtype(clean_dataset[c])]
_inf = int(np.isinf(clean_dataset[_numeric].to_numpy(dtype=float)).sum()) if _numeric else 0
if _inf:
    clean_dataset[_numeric] = clean_dataset[_numeric].replace([np.inf, -np.inf], np.nan)
    cleaning_log.append(f"replaced {_inf} infinite values with NaN")

_drop = [c for c in clean_dataset.columns if c != TARGET and clean_dataset[c].nunique(dropna=False) <= 1]
if _drop:
    clean_dataset = clean_dataset.drop(columns=_drop)
    cleaning_log.append(f"dropped empty/constant columns: {_drop}")

_dups = int(clean_dataset.duplicated().sum())
if _dups:
    clean_dataset = clean_dataset.drop_duplicates()
    cleaning_log.append(f"dropped {_dups} exact duplicate rows")

if TARGET is not None:
    if TASK == "regression" and not pd.api.types.is_numeric_dtype(clean_dataset[TARGET]):
        clean_dataset[TARGET] = _bcc_to_number(clean_dataset[TARGET])
        cleaning_log.append(f"coerced target {TARGET!r} to numbers")
    _no_target = clean_dataset[TARGET].isna()
    if _no_target.any():
        clean_dataset = clean_dataset.loc[~_no_target]
        cleaning_log.append(f"dropped {int(_no_target.sum())} rows with missing target {TARGET!r}")

clean_dataset = clean_dataset.reset_index(drop=True)
if not cleaning_log:
    cleaning_log.append("no cleaning needed")
print(f"shape {_start_shape} -> {clean_dataset.shape}")
print(" - " + "\n - ".join(cleaning_log))
print("dtype counts:", clean_dataset.dtypes.astype(str).value_counts().to_dict())

_bcc_notes = []
if _changed:
    _bcc_notes.append(f"stripped whitespace or blanked empty strings in {_bcc_count(_changed, 'cell')}")
if _lost:
    _bcc_notes.append(f"set {_bcc_count(_lost, 'unparseable number')} to NaN")
if _inf:
    _bcc_notes.append(f"replaced {_bcc_count(_inf, 'infinite value')} with NaN")
if _empty_rows.any():
    _bcc_notes.append(f"dropped {_bcc_count(int(_empty_rows.sum()), 'fully empty row')}")
if _dups:
    _bcc_notes.append(f"dropped {_bcc_count(_dups, 'duplicate row')}")
if TARGET is not None and _no_target.any():
    _bcc_notes.append(f"dropped {_bcc_count(int(_no_target.sum()), 'row')} without a target")
"""
    + CLEAN_RESULT
)

CLEAN_V1 = (
    TARGET_SNIPPET.replace("FRAME", "raw_dataset")
    + r"""
clean_dataset = raw_dataset.copy()
cleaning_log = []
for _c in integrity_report.get("numeric_text_columns", []):
    try:
        _cleaned = clean_dataset[_c].astype(str).str.replace(r"[^0-9eE+\-.]", "", regex=True)
        clean_dataset[_c] = pd.to_numeric(_cleaned, errors="coerce")
        cleaning_log.append(f"converted {_c!r} to numbers")
    except Exception as exc:
        cleaning_log.append(f"left {_c!r} as text ({exc})")
for _c in integrity_report.get("date_like_columns", []):
    try:
        clean_dataset[_c] = pd.to_datetime(clean_dataset[_c], errors="coerce", format="mixed")
        cleaning_log.append(f"parsed {_c!r} as datetime")
    except Exception as exc:
        cleaning_log.append(f"left {_c!r} unparsed ({exc})")
_drop = [c for c in clean_dataset.columns if c != TARGET and clean_dataset[c].astype(str).nunique() <= 1]
clean_dataset = clean_dataset.drop(columns=_drop)
if _drop:
    cleaning_log.append(f"dropped constant/empty columns {_drop}")
_n = len(clean_dataset)
clean_dataset = clean_dataset.drop_duplicates()
_bcc_dups = _n - len(clean_dataset)
cleaning_log.append(f"dropped {_bcc_dups} duplicate rows")
_bcc_no_target = 0
if TARGET is not None:
    if TASK == "regression":
        clean_dataset[TARGET] = pd.to_numeric(clean_dataset[TARGET], errors="coerce")
    _n = len(clean_dataset)
    clean_dataset = clean_dataset.dropna(subset=[TARGET])
    _bcc_no_target = _n - len(clean_dataset)
    cleaning_log.append(f"dropped {_bcc_no_target} rows without target")
clean_dataset = clean_dataset.reset_index(drop=True)
print(clean_dataset.shape)
print("\n".join(cleaning_log))

_bcc_notes = []
if _bcc_dups:
    _bcc_notes.append(f"dropped {_bcc_count(_bcc_dups, 'duplicate row')}")
if _bcc_no_target:
    _bcc_notes.append(f"dropped {_bcc_count(_bcc_no_target, 'row')} without a target")
"""
    + CLEAN_RESULT
)


def clean_data(ctx: RecipeContext) -> Pairs:
    target = (
        f" Rows whose target `{ctx.target}` is missing are dropped; the target is never dropped."
        if ctx.target
        else ""
    )
    if ctx.variant:
        return [
            (
                "Clean the data with simple guarded conversions: numbers stored as text, dates, "
                "constant columns and duplicate rows." + target,
                CLEAN_V1,
            )
        ]
    return [
        (
            "Clean `raw_dataset` into `clean_dataset`, acting on the integrity findings: strip "
            "stray whitespace, convert text columns holding numbers (currency and percent signs, "
            "thousands separators; a percentage keeps its number), parse date columns, drop empty "
            "or constant columns and exact duplicate rows." + target + " Every action is recorded "
            "in `cleaning_log`.",
            CLEAN_V0,
        )
    ]
