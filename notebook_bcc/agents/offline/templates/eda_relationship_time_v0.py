
timeseries_summary = {}
_ts_cols = [c for c in _corr_cols if c != TARGET]
if TARGET in _corr_cols:
    _ts_cols = [TARGET] + _ts_cols
_ts_cols = _ts_cols[:4]
if date_cols and _ts_cols:
    timeseries_summary = _bcc_over_time(clean_dataset, date_cols, _ts_cols, "outputs/timeseries.png")


def _bcc_over_time(frame, date_cols, columns, path):
    # plot the columns against the date column with the most distinct values, and for a
    # genuine series (mostly one row per time stamp) report each column's yearly trend and
    # seasonal swing
    dcol = max(date_cols, key=lambda c: frame[c].nunique())
    series = frame[[dcol] + columns].dropna(subset=[dcol]).sort_values(dcol)
    fig, axes = plt.subplots(len(columns), 1, figsize=(10, 2.3 * len(columns)), sharex=True, squeeze=False)
    for ax, c in zip(axes[:, 0], columns):
        ax.plot(series[dcol], series[c], lw=0.8)
        ax.set_ylabel(str(c)[:20], fontsize=8)
    axes[0, 0].set_title(f"Over time ({dcol})")
    axes[-1, 0].set_xlabel(str(dcol))
    _bcc_show(fig, path)
    years, months = series[dcol].dt.year, series[dcol].dt.month
    span_years = (series[dcol].max() - series[dcol].min()).days / 365.25
    print(f"\nTime span of {dcol!r}: {series[dcol].min()} to {series[dcol].max()} ({span_years:.1f} years)")
    summary = {}
    is_series = series[dcol].nunique() >= 0.5 * len(series)
    for c in columns if is_series else []:
        yearly = series.groupby(years)[c].mean().dropna()
        info = {}
        if len(yearly) >= 3 and span_years >= 2:
            info["trend_per_year"] = round(float(np.polyfit(yearly.index.to_numpy(dtype=float), yearly.to_numpy(dtype=float), 1)[0]), 4)
            info["first_year_mean"] = round(float(yearly.iloc[0]), 4)
            info["last_year_mean"] = round(float(yearly.iloc[-1]), 4)
        detrended = series[c] - series.groupby(years)[c].transform("mean")
        monthly = detrended.groupby(months).mean().dropna()
        if len(monthly) >= 6 and span_years >= 2:
            info["seasonal_amplitude"] = round(float(monthly.max() - monthly.min()), 4)
            info["peak_month"] = int(monthly.idxmax())
        if info:
            summary[str(c)] = info
            print(f"  {c}: {info}")
    return summary


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
