"""EDA code recipes (univariate and relationship views) and the final summary.

Builders return ``(markdown, code template)`` pairs; :mod:`recipes` fills the ``__TARGET__``,
``__TASK__`` and ``__SEED__`` placeholders and wraps them into cells. Pure text: nothing here
touches the data.
"""

from __future__ import annotations

from notebook_bcc.agents.offline.context import RecipeContext
from notebook_bcc.agents.offline.recipes_data import TARGET_SNIPPET

Pairs = list[tuple[str, str]]

# Column groups used by the EDA cells (variant 0); the helper is defined in the setup cell.
COLUMN_GROUPS = r"""
numeric_cols, date_cols, category_cols = _bcc_column_groups(clean_dataset)
_id_cols = set((globals().get("integrity_report") or {}).get("id_like_columns", []))
"""

# --------------------------------------------------------------------------- univariate


# Closing result line of the univariate cell (both variants), computed from ``clean_dataset``.
UNIVARIATE_RESULT = r"""
try:
    _bcc_num, _bcc_dates, _bcc_cats = _bcc_column_groups(clean_dataset)
    if _bcc_num:
        _bcc_text = _bcc_count(len(_bcc_num), "numeric column")
        _bcc_skew = clean_dataset[_bcc_num].astype("float64").skew().dropna()
        if len(_bcc_skew):
            _bcc_top = _bcc_skew.abs().idxmax()
            _bcc_k = int((_bcc_skew.abs() > 1).sum())
            _bcc_text += (
                f", {_bcc_k if _bcc_k else 'none'} strongly skewed (|skew| > 1); "
                f"the most skewed is {_bcc_top} (skew {_bcc_skew[_bcc_top]:+.2f})"
            )
    else:
        _bcc_text = "no numeric columns"
    _bcc_missing = clean_dataset.isna().mean()
    if len(_bcc_missing) and _bcc_missing.max() > 0:
        _bcc_top = _bcc_missing.idxmax()
        _bcc_text += f"; the most incomplete is {_bcc_top} ({100 * _bcc_missing[_bcc_top]:.1f}% missing)"
    else:
        _bcc_text += "; no missing values"
    _bcc_small = []
    for _c in _bcc_cats:
        try:
            if clean_dataset[_c].nunique() <= 30:
                _bcc_small.append(_c)
        except TypeError:
            pass
    _bcc_text += f"; {_bcc_count(len(_bcc_cats), 'categorical column')}"
    if _bcc_cats:
        _bcc_text += f" ({len(_bcc_small)} with at most 30 levels)"
    if _bcc_dates:
        _bcc_text += f"; {_bcc_count(len(_bcc_dates), 'date column')}"
except Exception as exc:
    _bcc_text = f"summarised {clean_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""

UNIVARIATE_V0 = (
    r"""
import math
"""
    + COLUMN_GROUPS
    + r"""
if numeric_cols:
    numeric_summary = clean_dataset[numeric_cols].describe().T
    numeric_summary["missing"] = clean_dataset[numeric_cols].isna().sum()
    numeric_summary["skew"] = clean_dataset[numeric_cols].skew()
    print(f"Numeric summary ({len(numeric_cols)} columns):")
    display(numeric_summary.round(3).head(40))
else:
    numeric_summary = pd.DataFrame()
    print("No numeric columns.")

_plot_cols = [c for c in numeric_cols if c not in _id_cols and clean_dataset[c].nunique() > 1]
if TARGET in _plot_cols:
    _plot_cols = [TARGET] + [c for c in _plot_cols if c != TARGET]
_plot_cols = _plot_cols[:12]
if _plot_cols:
    _ncols = min(4, len(_plot_cols))
    _nrows = math.ceil(len(_plot_cols) / _ncols)
    _fig, _axes = plt.subplots(_nrows, _ncols, figsize=(3.6 * _ncols, 2.8 * _nrows), squeeze=False)
    for _ax, _c in zip(_axes.flat, _plot_cols):
        _values = clean_dataset[_c].dropna().astype(float)
        _ax.hist(_values, bins=int(min(30, max(5, _values.nunique()))), color="#4C72B0", edgecolor="white")
        _ax.set_title(str(_c)[:32], fontsize=9)
        _ax.tick_params(labelsize=7)
    for _ax in list(_axes.flat)[len(_plot_cols):]:
        _ax.set_visible(False)
    _fig.suptitle("Distributions of numeric columns", y=1.01)
    _fig.tight_layout()
    _fig.savefig("outputs/distributions.png", dpi=100, bbox_inches="tight")
    plt.show()
    plt.close(_fig)

_skewed = [c for c in _plot_cols if abs(float(numeric_summary.loc[c, "skew"] or 0)) > 1]
if _skewed:
    print("Strongly skewed (|skew| > 1):", _skewed)
_sparse = {c: round(100 * float(v) / max(len(clean_dataset), 1), 1) for c, v in clean_dataset.isna().sum().items() if v > 0.2 * len(clean_dataset)}
if _sparse:
    print("Columns with > 20% missing (%):", _sparse)

_cat_show = [c for c in category_cols if 2 <= clean_dataset[c].nunique() <= 30]
if TARGET in _cat_show:
    _cat_show = [TARGET] + [c for c in _cat_show if c != TARGET]
for _c in _cat_show[:6]:
    _counts = clean_dataset[_c].value_counts(dropna=False)
    print(f"{_c} ({clean_dataset[_c].nunique()} levels):")
    display(pd.DataFrame({"count": _counts, "%": (100 * _counts / _counts.sum()).round(1)}).head(8))
"""
    + UNIVARIATE_RESULT
)

UNIVARIATE_V1 = (
    r"""
_num = clean_dataset.select_dtypes(include="number")
numeric_summary = _num.describe().T if _num.shape[1] else pd.DataFrame()
print(numeric_summary.round(3).head(40).to_string() if len(numeric_summary) else "No numeric columns.")
_fig = plt.figure(figsize=(12, 8))
try:
    _cols = [c for c in _num.columns if _num[c].nunique() > 1][:12]
    if not _cols:
        raise ValueError("no non-constant numeric columns")
    for _i, _c in enumerate(_cols, start=1):
        _ax = _fig.add_subplot(3, 4, _i)
        _ax.hist(_num[_c].dropna().to_numpy(dtype=float), bins=20)
        _ax.set_title(str(_c)[:30], fontsize=8)
    _fig.tight_layout()
except Exception as exc:
    _fig.clf()
    _fig.text(0.1, 0.5, f"Histograms unavailable: {exc}")
    print(f"Histograms unavailable: {exc}")
_fig.savefig("outputs/distributions.png", dpi=100, bbox_inches="tight")
plt.show()
plt.close(_fig)
for _c in [c for c in clean_dataset.columns if c not in _num.columns][:6]:
    try:
        if clean_dataset[_c].nunique() <= 30:
            print(f"\n{_c}:\n{clean_dataset[_c].astype(str).value_counts().head(8).to_string()}")
    except Exception as exc:
        print(f"{_c}: {exc}")
"""
    + UNIVARIATE_RESULT
)


def univariate_eda(ctx: RecipeContext) -> Pairs:
    """Summary statistics, histograms and category counts."""
    if ctx.variant:
        return [
            (
                "Summarise each numeric column and draw histograms with a simple, guarded "
                "plotting loop (the figure file is written even if plotting fails).",
                UNIVARIATE_V1,
            )
        ]
    return [
        (
            "Look at each variable on its own: `numeric_summary` holds `describe()` statistics "
            "plus missing counts and skewness; histograms of up to 12 numeric columns are saved "
            "to `outputs/distributions.png`; categorical columns with at most 30 levels show "
            "their most frequent values.",
            UNIVARIATE_V0,
        )
    ]


# ------------------------------------------------------------------------- relationships


# Closing result line of the relationship cell (both variants). Each variant defines
# ``_bcc_labels`` (association measure per feature) and ``_bcc_extra`` (its own findings).
RELATIONSHIP_RESULT = r"""
try:
    if strongest_correlations:
        _a, _b, _r = strongest_correlations[0]
        _bcc_text = f"the strongest correlation is {_a} ~ {_b} (r = {_bcc_fmt(_r, '+.2f')})"
    elif correlation_matrix.empty:
        _bcc_text = "fewer than two usable numeric columns, so no correlations"
    else:
        _bcc_text = "no correlation between the numeric columns could be measured"
    if TARGET is not None:
        if len(target_associations):
            _c = target_associations.index[0]
            _bcc_text += (
                f"; the feature most associated with {TARGET} is {_c} "
                f"({_bcc_labels.get(_c, '|r|')} {_bcc_fmt(target_associations.iloc[0], '.2f')})"
            )
        else:
            _bcc_text += f"; no feature association with {TARGET} was measured"
        if TASK == "classification" and TARGET in clean_dataset.columns:
            _shares = clean_dataset[TARGET].dropna().astype(str).value_counts(normalize=True)
            if len(_shares) >= 2:
                _bcc_text += (
                    f"; {TARGET} has {len(_shares)} classes, from {_shares.index[-1]} ({100 * _shares.iloc[-1]:.1f}%) "
                    f"to {_shares.index[0]} ({100 * _shares.iloc[0]:.1f}%)"
                )
    _bcc_text += "".join(f"; {x}" for x in _bcc_extra)
    _bcc_dates = [c for c in clean_dataset.columns if pd.api.types.is_datetime64_any_dtype(clean_dataset[c])]
    if _bcc_dates:
        _d = max(_bcc_dates, key=lambda c: clean_dataset[c].nunique())
        if clean_dataset[_d].notna().any():
            _bcc_text += f"; {_d} spans {clean_dataset[_d].min().date()} to {clean_dataset[_d].max().date()}"
except Exception as exc:
    _bcc_text = f"relationships computed for {clean_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""

RELATIONSHIP_CORR_V0 = (
    COLUMN_GROUPS
    + r"""
_corr_cols = [c for c in numeric_cols if c not in _id_cols and clean_dataset[c].nunique() > 1]
correlation_matrix = clean_dataset[_corr_cols].corr() if len(_corr_cols) >= 2 else pd.DataFrame()
strongest_correlations = []
if not correlation_matrix.empty:
    _show = list(correlation_matrix.columns)
    if len(_show) > 15:
        if TARGET in _show:
            _order = correlation_matrix[TARGET].drop(TARGET).abs().sort_values(ascending=False)
            _show = [TARGET] + list(_order.index[:14])
        else:
            _show = list(correlation_matrix.abs().mean().sort_values(ascending=False).index[:15])
    _sub = correlation_matrix.loc[_show, _show]
    _fig, _ax = plt.subplots(figsize=(0.55 * len(_show) + 3, 0.55 * len(_show) + 2))
    _im = _ax.imshow(_sub.to_numpy(dtype=float), cmap="coolwarm", vmin=-1, vmax=1)
    _ax.set_xticks(range(len(_show)), [str(c)[:22] for c in _show], rotation=90, fontsize=8)
    _ax.set_yticks(range(len(_show)), [str(c)[:22] for c in _show], fontsize=8)
    if len(_show) <= 12:
        for _i in range(len(_show)):
            for _j in range(len(_show)):
                _v = _sub.iat[_i, _j]
                _ax.text(_j, _i, "" if pd.isna(_v) else f"{_v:.2f}", ha="center", va="center", fontsize=7)
    _fig.colorbar(_im, ax=_ax, shrink=0.8)
    _ax.set_title("Pearson correlations")
    _fig.savefig("outputs/correlations.png", dpi=100, bbox_inches="tight")
    plt.show()
    plt.close(_fig)
    _mask = np.triu(np.ones(correlation_matrix.shape, dtype=bool), k=1)
    _pairs = correlation_matrix.where(_mask).stack().dropna()
    _pairs = _pairs.reindex(_pairs.abs().sort_values(ascending=False).index).head(8)
    strongest_correlations = [(str(a), str(b), round(float(r), 3)) for (a, b), r in _pairs.items()]
    print("Strongest correlations:")
    display(pd.DataFrame(strongest_correlations, columns=["column", "other column", "r"]))
else:
    print("Fewer than two numeric columns: no correlation matrix.")
"""
)

RELATIONSHIP_TARGET_V0 = r"""
def _bcc_eta(values, groups):
    # correlation ratio: share of the variance of `values` explained by `groups`
    frame = pd.DataFrame({"v": pd.to_numeric(values, errors="coerce"), "g": groups}).dropna()
    if frame["g"].nunique() < 2 or frame["v"].var() == 0 or len(frame) < 3:
        return np.nan
    frame["g"] = frame["g"].astype(str)
    means = frame.groupby("g")["v"].transform("mean")
    total = ((frame["v"] - frame["v"].mean()) ** 2).sum()
    return float(np.sqrt(((means - frame["v"].mean()) ** 2).sum() / total))


def _bcc_cramers_v(a, b):
    table = pd.crosstab(a, b)
    if table.shape[0] < 2 or table.shape[1] < 2:
        return np.nan
    n = table.to_numpy().sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = ((table.to_numpy() - expected) ** 2 / expected).sum()
    return float(np.sqrt(chi2 / (n * (min(table.shape) - 1))))

target_associations = pd.Series(dtype=float)
_methods, _assoc = {}, {}
if TARGET is not None and TARGET in clean_dataset.columns:
    _y = clean_dataset[TARGET]
    _fig, _ax = plt.subplots(figsize=(7, 3.5))
    if TASK == "classification":
        _counts = _y.astype(str).value_counts()
        _ax.bar([str(k)[:20] for k in _counts.index], _counts.to_numpy(), color="#4C72B0")
        _ax.tick_params(axis="x", rotation=45)
        _ax.set_title(f"Class counts of {TARGET}")
        print(f"\nClass balance of {TARGET!r} (%):", (100 * _counts / _counts.sum()).round(1).to_dict())
    else:
        _yn = pd.to_numeric(_y, errors="coerce").dropna()
        _ax.hist(_yn, bins=30, color="#4C72B0", edgecolor="white")
        _ax.set_title(f"Distribution of {TARGET}")
        print(f"\n{TARGET!r}: mean {_yn.mean():.4g}, median {_yn.median():.4g}, skew {_yn.skew():.2f}")
    _fig.savefig("outputs/target.png", dpi=100, bbox_inches="tight")
    plt.show()
    plt.close(_fig)
    _scores, _methods = {}, {}
    for _c in clean_dataset.columns:
        if _c == TARGET or _c in _id_cols or _c in date_cols:
            continue
        _x = clean_dataset[_c]
        if _c in numeric_cols:
            if TASK == "regression":
                _scores[_c], _methods[_c] = abs(_x.corr(pd.to_numeric(_y, errors="coerce"))), "|pearson r|"
            else:
                _scores[_c], _methods[_c] = _bcc_eta(_x, _y), "eta (class means)"
        elif 2 <= _x.nunique() <= 50:
            if TASK == "regression":
                _scores[_c], _methods[_c] = _bcc_eta(_y, _x), "eta (group means)"
            else:
                _scores[_c], _methods[_c] = _bcc_cramers_v(_x, _y), "cramers V"
    target_associations = pd.Series(_scores, dtype=float).dropna().sort_values(ascending=False)
    print(f"Features most associated with {TARGET!r}:")
    display(pd.DataFrame({
        "association": target_associations.head(10).round(3),
        "measure": [_methods[_c] for _c in target_associations.index[:10]],
    }))
elif len(category_cols) >= 2:
    _cats = [c for c in category_cols if c not in _id_cols and 2 <= clean_dataset[c].nunique() <= 30][:8]
    _assoc = {
        (a, b): _bcc_cramers_v(clean_dataset[a], clean_dataset[b])
        for i, a in enumerate(_cats) for b in _cats[i + 1:]
    }
    _assoc = {k: v for k, v in _assoc.items() if pd.notna(v)}
    if _assoc:
        print("\nStrongest associations between categorical columns (Cramer's V):")
        for (_a, _b), _v in sorted(_assoc.items(), key=lambda kv: -kv[1])[:6]:
            print(f"  {_a} ~ {_b}: {_v:.3f}")

# Without a target: how numeric columns differ between the groups of low-cardinality categories.
group_differences = {}
if TARGET is None and _corr_cols:
    _groupers = [c for c in category_cols if c not in _id_cols and 2 <= clean_dataset[c].nunique() <= 10][:3]
    for _g in _groupers:
        _etas = pd.Series({c: _bcc_eta(clean_dataset[c], clean_dataset[_g]) for c in _corr_cols}).dropna()
        _etas = _etas.sort_values(ascending=False).head(5)
        if _etas.empty:
            continue
        group_differences[str(_g)] = {str(c): round(float(v), 3) for c, v in _etas.items()}
        print(f"Numeric columns that differ most between the levels of {_g!r} (correlation ratio):")
        _means = clean_dataset.groupby(clean_dataset[_g].astype(str))[list(_etas.index)].mean()
        display(_means.T.assign(eta=_etas.round(3)).round(3))
"""

RELATIONSHIP_TIME_V0 = (
    r"""
timeseries_summary = {}
_ts_cols = [c for c in _corr_cols if c != TARGET]
if TARGET in _corr_cols:
    _ts_cols = [TARGET] + _ts_cols
_ts_cols = _ts_cols[:4]
if date_cols and _ts_cols:
    _dcol = max(date_cols, key=lambda c: clean_dataset[c].nunique())
    _series = clean_dataset[[_dcol] + _ts_cols].dropna(subset=[_dcol]).sort_values(_dcol)
    _fig, _axes = plt.subplots(len(_ts_cols), 1, figsize=(10, 2.3 * len(_ts_cols)), sharex=True, squeeze=False)
    for _ax, c in zip(_axes[:, 0], _ts_cols):
        _ax.plot(_series[_dcol], _series[c], lw=0.8)
        _ax.set_ylabel(str(c)[:20], fontsize=8)
    _axes[0, 0].set_title(f"Over time ({_dcol})")
    _fig.savefig("outputs/timeseries.png", dpi=100, bbox_inches="tight")
    plt.show()
    plt.close(_fig)
    _years = _series[_dcol].dt.year
    _months = _series[_dcol].dt.month
    _span_years = (_series[_dcol].max() - _series[_dcol].min()).days / 365.25
    print(f"\nTime span of {_dcol!r}: {_series[_dcol].min()} to {_series[_dcol].max()} ({_span_years:.1f} years)")
    # trend and seasonality only for a genuine series (mostly one row per time stamp)
    _is_series = _series[_dcol].nunique() >= 0.5 * len(_series)
    for _c in _ts_cols if _is_series else []:
        _yearly = _series.groupby(_years)[_c].mean().dropna()
        _info = {}
        if len(_yearly) >= 3 and _span_years >= 2:
            _info["trend_per_year"] = round(float(np.polyfit(_yearly.index.to_numpy(dtype=float), _yearly.to_numpy(dtype=float), 1)[0]), 4)
            _info["first_year_mean"] = round(float(_yearly.iloc[0]), 4)
            _info["last_year_mean"] = round(float(_yearly.iloc[-1]), 4)
        _detrended = _series[_c] - _series.groupby(_years)[_c].transform("mean")
        _monthly = _detrended.groupby(_months).mean().dropna()
        if len(_monthly) >= 6 and _span_years >= 2:
            _info["seasonal_amplitude"] = round(float(_monthly.max() - _monthly.min()), 4)
            _info["peak_month"] = int(_monthly.idxmax())
        if _info:
            timeseries_summary[str(_c)] = _info
            print(f"  {_c}: {_info}")

_bcc_labels = {
    c: {"|pearson r|": "|r|", "cramers V": "Cramér's V"}.get(m, m.split(" (")[0]) for c, m in _methods.items()
}
_bcc_extra = []
if _assoc:
    (_a, _b), _v = max(_assoc.items(), key=lambda kv: kv[1])
    _bcc_extra.append(f"the strongest association between categories is {_a} ~ {_b} (Cramér's V {_v:.2f})")
for _g, _etas in list(group_differences.items())[:1]:
    _c, _v = next(iter(_etas.items()))
    _bcc_extra.append(f"between the levels of {_g}, {_c} differs most (eta {_v:.2f})")
for _c, _info in list(timeseries_summary.items())[:1]:
    if "trend_per_year" in _info:
        _bcc_extra.append(f"{_c} changes by {_info['trend_per_year']:+.4g} per year")
    if "seasonal_amplitude" in _info:
        _bcc_extra.append(f"{_c} has a seasonal swing of {_info['seasonal_amplitude']:.3g} (peak in month {_info['peak_month']})")
"""
    + RELATIONSHIP_RESULT
)

RELATIONSHIP_V1 = (
    r"""
import re
"""
    + TARGET_SNIPPET.replace("FRAME", "clean_dataset")
    + r"""
_num = clean_dataset.select_dtypes(include="number")
_num = _num.loc[:, _num.nunique() > 1]
correlation_matrix = _num.corr() if _num.shape[1] >= 2 else pd.DataFrame()
strongest_correlations = []
target_associations = pd.Series(dtype=float)
timeseries_summary = {}
group_differences = {}
if not correlation_matrix.empty:
    _fig, _ax = plt.subplots(figsize=(9, 7))
    try:
        _sub = correlation_matrix.iloc[:15, :15]
        _ax.imshow(_sub.to_numpy(dtype=float), cmap="coolwarm", vmin=-1, vmax=1)
        _ax.set_xticks(range(len(_sub)), [str(c)[:20] for c in _sub.columns], rotation=90, fontsize=7)
        _ax.set_yticks(range(len(_sub)), [str(c)[:20] for c in _sub.columns], fontsize=7)
    except Exception as exc:
        _ax.text(0.1, 0.5, f"heatmap failed: {exc}")
        print(f"heatmap failed: {exc}")
    _fig.savefig("outputs/correlations.png", dpi=100, bbox_inches="tight")
    plt.show()
    plt.close(_fig)
    _pairs = correlation_matrix.where(np.triu(np.ones(correlation_matrix.shape, dtype=bool), k=1)).stack().dropna()
    for (_a, _b), _r in _pairs.abs().sort_values(ascending=False).head(5).items():
        strongest_correlations.append((str(_a), str(_b), round(float(correlation_matrix.loc[_a, _b]), 3)))
    print("Strongest correlations:", strongest_correlations)
if TARGET is not None:
    _fig, _ax = plt.subplots(figsize=(7, 3.5))
    try:
        if TASK == "classification":
            clean_dataset[TARGET].astype(str).value_counts().plot.bar(ax=_ax)
        else:
            _ax.hist(pd.to_numeric(clean_dataset[TARGET], errors="coerce").dropna(), bins=30)
    except Exception as exc:
        print(f"target plot failed: {exc}")
    _fig.savefig("outputs/target.png", dpi=100, bbox_inches="tight")
    plt.show()
    plt.close(_fig)
    if TARGET in _num.columns and TARGET in correlation_matrix.columns:
        target_associations = correlation_matrix[TARGET].drop(TARGET).abs().sort_values(ascending=False)
        print("Correlation with target:", target_associations.head(10).round(3).to_dict())
_dates = [c for c in clean_dataset.columns if pd.api.types.is_datetime64_any_dtype(clean_dataset[c])]
if _dates and _num.shape[1]:
    try:
        _s = clean_dataset.sort_values(_dates[0])
        _s.plot(x=_dates[0], y=list(_num.columns[:4]), subplots=True, figsize=(10, 8), legend=True)
        plt.savefig("outputs/timeseries.png", dpi=100, bbox_inches="tight")
        plt.show()
    except Exception as exc:
        print(f"time-series plot failed: {exc}")
_bcc_labels, _bcc_extra = {}, []
"""
    + RELATIONSHIP_RESULT
)


def relationship_eda(ctx: RecipeContext) -> Pairs:
    """Correlations, target associations and time-series views."""
    if ctx.variant:
        return [
            (
                "Relationships with a simpler, guarded approach: numeric correlations, a target "
                "plot and a time plot, each wrapped so one failure does not stop the others.",
                RELATIONSHIP_V1,
            )
        ]
    target = (
        f"For the target `{ctx.target}`, plot the "
        + ("class counts" if ctx.task == "classification" else "distribution")
        + " (`outputs/target.png`) and rank the features by their association with it "
        "(`target_associations`: |r| or the correlation ratio for numbers, Cramér's V for "
        "categories)."
        if ctx.target
        else "Without a target, look for associations between categorical columns and for "
        "the numeric columns that differ most between category levels (`group_differences`)."
    )
    return [
        (
            "Study how variables relate, starting with the Pearson `correlation_matrix` of the "
            "numeric columns (heatmap in `outputs/correlations.png`) and its strongest pairs "
            "(`strongest_correlations`).",
            RELATIONSHIP_CORR_V0,
        ),
        (target.strip(), RELATIONSHIP_TARGET_V0),
        (
            "If the table has a date column, numeric series are plotted over time "
            "(`outputs/timeseries.png`) with their yearly trend and seasonal amplitude "
            "(`timeseries_summary`). The step's findings close with one summary line.",
            RELATIONSHIP_TIME_V0,
        ),
    ]


# ------------------------------------------------------------------------------ summary


# Closing result line of the summary cell (both variants), read off ``analysis_summary``.
SUMMARY_RESULT = r"""
try:
    _bcc_sections = re.findall(r"^- \*\*([^*]+)\*\*", analysis_summary, re.M)
    if _bcc_sections:
        _bcc_text = f"the summary above covers {_bcc_count(len(_bcc_sections), 'section')} ({_bcc_names(_bcc_sections, 8)})"
    else:
        _bcc_text = f"the summary above lists {_bcc_count(len(re.findall(r'^- ', analysis_summary, re.M)), 'point')}"
    _bcc_text += f"; {clean_dataset.shape[0]} rows x {clean_dataset.shape[1]} columns after cleaning"
    _fm = globals().get("final_metrics")
    if isinstance(_fm, dict) and str(_fm["model"]).startswith("dummy"):
        _bcc_text += f"; no model beat the baseline {_fm['model']} (hold-out {_bcc_fmt(_fm['test_score'])})"
    elif isinstance(_fm, dict):
        _bcc_text += (
            f"; the final model {_fm['model']} scores hold-out {'accuracy' if _fm['metric'] == 'accuracy' else 'R²'} "
            f"{_bcc_fmt(_fm['test_score'])} against {_bcc_fmt(_fm['baseline_score'])} for the baseline"
        )
except Exception as exc:
    _bcc_text = f"the summary above has {len(analysis_summary.splitlines())} lines (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""

SUMMARY_V0 = (
    r"""
from IPython.display import Markdown

_g = globals()
_lines = ["## Analysis summary", ""]
_profile = _g.get("data_profile") or {}
_lines.append(f"- **Data**: `{_g.get('data_path', 'input')}` with {_profile.get('n_rows', '?')} rows x "
              f"{_profile.get('n_cols', '?')} columns; after cleaning {clean_dataset.shape[0]} rows x {clean_dataset.shape[1]} columns.")
_actions = [a for a in (_g.get("cleaning_log") or []) if a != "no cleaning needed"]
if _actions:
    _lines.append("- **Cleaning**: " + "; ".join(_actions[:6]) + ("; ..." if len(_actions) > 6 else "") + ".")
_report = _g.get("integrity_report") or {}
_missing = sorted((_report.get("missing") or {}).items(), key=lambda kv: -kv[1])[:3]
if _missing:
    _lines.append("- **Missing values** (most affected): " + ", ".join(f"`{c}` {n}" for c, n in _missing) + ".")
if _report.get("id_like_columns"):
    _lines.append("- **ID-like columns** (not used as signal): " + ", ".join(f"`{c}`" for c in _report["id_like_columns"][:5]) + ".")
_findings = []
for _a, _b, _r in (_g.get("strongest_correlations") or [])[:3]:
    _findings.append(f"`{_a}` and `{_b}` are {'positively' if _r > 0 else 'negatively'} correlated (r = {_r:+.2f})")
_assoc = _g.get("target_associations")
if isinstance(_assoc, pd.Series) and len(_assoc):
    _findings.append("features most associated with the target: " + ", ".join(f"`{c}` ({v:.2f})" for c, v in _assoc.head(3).items()))
for _grp, _etas in list((_g.get("group_differences") or {}).items())[:2]:
    _findings.append(f"between the levels of `{_grp}`, " + ", ".join(f"`{c}` (eta {v:.2f})" for c, v in list(_etas.items())[:3]) + " differ most")
for _c, _info in list((_g.get("timeseries_summary") or {}).items())[:3]:
    if "trend_per_year" in _info:
        _findings.append(f"`{_c}` changes by {_info['trend_per_year']:+.4g} per year on average")
    if "seasonal_amplitude" in _info:
        _findings.append(f"`{_c}` has a seasonal swing of {_info['seasonal_amplitude']:.3g} (peak in month {_info['peak_month']})")
if _findings:
    _lines.append("- **Findings**:")
    _lines.extend(f"  - {f}" for f in _findings)
_fm = _g.get("final_metrics")
if isinstance(_fm, dict):
    _lines.append(f"- **Model**: `{_fm['model']}` for {_fm['task']}; cross-validated {_fm['metric']} "
                  f"{_fm['cv_mean']} (+/- {_fm['cv_std']}), hold-out {_fm['test_score']} vs baseline {_fm['baseline_score']}.")
    _imp = _g.get("feature_importance")
    if isinstance(_imp, pd.DataFrame) and len(_imp):
        _lines.append("- **Most important features** (permutation): " + ", ".join(f"`{c}`" for c in _imp.index[:3]) + ".")
_st = _g.get("stability_report")
if isinstance(_st, dict) and _st.get("bootstrap_mean") is not None:
    _lines.append(f"- **Stability**: bootstrap hold-out {_st['metric']} {_st['bootstrap_p05']} to {_st['bootstrap_p95']} "
                  f"(5th-95th percentile); CV across seeds {_st['cv_mean_by_seed']}.")
analysis_summary = "\n".join(_lines)
display(Markdown(analysis_summary))
"""
    + SUMMARY_RESULT
)

SUMMARY_V1 = (
    r"""
_g = globals()
_parts = ["## Analysis summary", "", f"- Rows after cleaning: {len(clean_dataset)}; columns: {clean_dataset.shape[1]}."]
_parts += [f"- {a}" for a in (_g.get("cleaning_log") or [])[:5]]
if isinstance(_g.get("final_metrics"), dict):
    _parts.append(f"- Final metrics: {_g['final_metrics']}")
if isinstance(_g.get("stability_report"), dict):
    _parts.append(f"- Stability: {_g['stability_report']}")
analysis_summary = "\n".join(_parts)
try:
    from IPython.display import Markdown, display

    display(Markdown(analysis_summary))
except Exception:
    print(analysis_summary)
"""
    + SUMMARY_RESULT
)


def final_summary(ctx: RecipeContext) -> Pairs:
    """A markdown summary built from the variables that exist in the kernel."""
    answers = [(UNANSWERED_TEXT, UNANSWERED)] if ctx.questions else []
    if ctx.variant:
        return [("Write a plain summary of what was done and measured.", SUMMARY_V1), *answers]
    return [
        (
            "Summarise the analysis from the live results (not from memory): data size, "
            "cleaning actions, data-quality issues, the main findings and, when a model was "
            "fitted, its cross-validated and hold-out scores and their stability. The text is "
            "kept in `analysis_summary`.",
            SUMMARY_V0,
        ),
        *answers,
    ]


UNANSWERED_TEXT = (
    "The problem asks specific questions. The offline analyst does not compute answers to "
    "free-form questions, so `final_answers` lists each question as **not answered** rather "
    "than guessing; the analysis above holds the material to answer them, and a model "
    "(`--model`) can compute them."
)

UNANSWERED = r"""
final_answers = {
    question: {"value": None, "text": "not answered: the offline analyst does not compute answers to free-form questions"}
    for question in __QUESTIONS__
}
for _bcc_q in final_answers:
    print(f"- {_bcc_q} -> not answered")
_bcc_result(f"{_bcc_count(len(final_answers), 'question')} listed in final_answers; the offline analyst answered none of them.")
"""
