
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
    _bcc_draw_distributions(clean_dataset, _plot_cols, "outputs/distributions.png")


def _bcc_draw_distributions(frame, columns, path):
    # one small chart per column: bars for a few whole-number values (years, counts, ratings),
    # else a histogram; the y axis counts rows
    ncols = min(4, len(columns))
    nrows = math.ceil(len(columns) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.8 * nrows), squeeze=False)
    for ax, column in zip(axes.flat, columns):
        values = frame[column].dropna().astype(float)
        if values.nunique() <= 12 and bool((values % 1 == 0).all()):
            counts = values.astype(int).value_counts().sort_index()
            ax.bar([str(v) for v in counts.index], counts.to_numpy(), color="#4C72B0")
        else:
            ax.hist(values, bins=int(min(30, max(5, values.nunique()))), color="#4C72B0", edgecolor="white")
            ax.xaxis.set_major_locator(plt.MaxNLocator(5))
        ax.set_title(str(column)[:32], fontsize=9)
        ax.set_ylabel("rows", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(columns):]:
        ax.set_visible(False)
    fig.suptitle("Distributions of numeric columns", y=1.01)
    fig.tight_layout()
    _bcc_show(fig, path)


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
