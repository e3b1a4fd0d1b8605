
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
