
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
_bcc_show(_fig, "outputs/distributions.png")
for _c in [c for c in clean_dataset.columns if c not in _num.columns][:6]:
    try:
        if clean_dataset[_c].nunique() <= 30:
            print(f"\n{_c}:\n{clean_dataset[_c].astype(str).value_counts().head(8).to_string()}")
    except Exception as exc:
        print(f"{_c}: {exc}")
