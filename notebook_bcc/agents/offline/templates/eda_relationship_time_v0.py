
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
