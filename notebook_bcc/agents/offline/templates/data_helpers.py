
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


def _bcc_columns(names, columns):
    # the columns the problem's names refer to (letter case, spaces and punctuation aside)
    def key(name):
        return re.sub(r"[^0-9a-z]", "", str(name).lower())

    wanted = {key(n) for n in names}
    return [c for c in columns if key(c) in wanted]


def _bcc_single_feature_scores(X, y, task, seed):
    # each feature alone in a depth-2 tree: 3-fold CV accuracy (classification) or R² (regression)
    from sklearn.model_selection import cross_val_score
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    if task == "classification":
        model, scoring = DecisionTreeClassifier(max_depth=2, random_state=seed), "accuracy"
    else:
        model, scoring = DecisionTreeRegressor(max_depth=2, random_state=seed), "r2"
    scores = {}
    for name in X.columns:
        column = X[name]
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            values = column.astype("float64")
            values = values.fillna(values.median()).to_frame()
        else:
            values = column.astype(str).astype("category").cat.codes.to_frame()
        try:
            scores[name] = round(float(cross_val_score(model, values, y, cv=3, scoring=scoring).mean()), 4)
        except ValueError:
            continue
    return scores
