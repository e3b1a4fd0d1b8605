
# Answer what the table and the fitted model answer directly, computed in the kernel:
# "which <group> has the most / least <measure>" (or which rows, when each is one of a name) and
# the correlation of two named columns from clean_dataset; "what determines <target>"
# from the model's permutation importance; "report the cross-validated / held-out score" from
# final_metrics. Any other question is listed as not answered, with the reason, never guessed.
_BCC_MAX = r"\b(most|largest|highest|biggest|greatest|top|maximum|more)\b"
_BCC_MIN = r"\b(least|lowest|smallest|fewest|minimum|less)\b"
_BCC_SUM = r"\b(total|sum|spends?|spent|spending|revenue|sales|sells|sold|pays?|paid|earns?|earned|overall|altogether)\b"
_BCC_MEAN = r"\b(average|mean|typical|typically|per)\b"
_BCC_COUNT = r"\b(common|frequent|often|many|count|number|records|rows)\b"
_BCC_AMOUNTS = ("amount", "total", "spend", "revenue", "sales", "price", "cost", "value", "paid", "payment")
_BCC_ID_WORDS = r"(^| )(id|key|code|uuid)( |$)"
_BCC_SUFFIX = r" (id|name|code|mm|cm|m|km|g|kg|lb|lbs|usd|eur|pct|percent)$"
_BCC_DRIVERS = r" (what|which) .*(determin\w*|drives?|driv\w+|explains?|influenc\w*|affects?|matters?|important|importance|separat\w*|predicts?) "
_BCC_METRIC = r" (accuracy|r2|r²|rmse|mae|auc|f1|cross validated|cross validation|held out|hold out|test set) "
# a clause that keeps only some rows ("among hotels with at least 100 reviews"): not applied here
_BCC_RESTRICTED = r" (among|only|excluding|except|without|at least|at most|more than|fewer than|less than|whose|where|between|after|before|above|below|under|during|within|in \d{4}) "
_BCC_OWN_PROCEDURE = r"random.state|train.test|\d+ ?%|\bsplit\b|linear regression|logistic|random forest|svm|support vector|decision tree|neighbo|naive bayes|xgboost|lightgbm"


def _bcc_words(text):
    return " " + re.sub(r"[^a-z0-9²]+", " ", str(text).lower()).strip() + " "


def _bcc_plurals(name):
    return (name + "s", name + "es") + ((name[:-1] + "ies",) if re.search(r"[^aeiou]y$", name) else ())


def _bcc_named_at(question, column):
    # where the question names the column (its words, singular or plural), or None
    name = _bcc_words(column).strip()
    if len(name) < 2:
        return None
    # "customer_id" is the customer, "flipper_length_mm" the flipper length
    bare = re.sub(_BCC_SUFFIX, "", name)
    for form in (name, *_bcc_plurals(name), name[:-1] if name.endswith("s") else name, bare):
        at = question.find(" " + form + " ")
        if at >= 0:
            return at
    return None


def _bcc_id_like(column, id_cols):
    return column in id_cols or re.search(_BCC_ID_WORDS, _bcc_words(column).strip()) is not None


def _bcc_restricted(q):
    # why a question with a clause that keeps only some rows is not answered, or None
    restricted = re.search(_BCC_RESTRICTED, q)
    if restricted is None:
        return None
    return (f"the question keeps only some rows ('{restricted.group(1)} …'), which the "
            "offline analyst does not apply: its answer over every row could be wrong")


def _bcc_named_numbers(q, frame, id_cols):
    # (the numeric columns that are no IDs, those the question names); "urban population" names
    # `Urban_population`, not `Population` as well
    numeric = [c for c in frame.select_dtypes("number").columns if not _bcc_id_like(c, id_cols)]
    named = [c for c in numeric if _bcc_named_at(q, c) is not None]
    named = [c for c in named if not any(d != c and f" {_bcc_words(c).strip()} " in _bcc_words(d) for d in named)]
    return numeric, named


def _bcc_heads(question, frame):
    # the columns the phrase after "which" / "what" names, read as its head noun: in "which
    # customer segment" the group is `segment`, not `customer_id`; several when they tie
    q = _bcc_words(question)
    which = re.search(r" (which|what) ", q)
    words = q[which.end() - 1 :].split()[:4]
    spans = []  # (last word index, words matched, column)
    for c in frame.columns:
        if pd.api.types.is_float_dtype(frame[c]):
            continue
        name = _bcc_words(c).strip()
        for form in dict.fromkeys((name, re.sub(_BCC_SUFFIX, "", name))):
            size = len(form.split())
            for i in range(len(words) - size + 1):
                said = " ".join(words[i : i + size])  # the form itself, or its plural
                if said in (form, *_bcc_plurals(form)) or (form.endswith("s") and said == form[:-1]):
                    spans.append((i + size - 1, size, c))
    if not spans:
        return []
    first = min(s[0] - s[1] + 1 for s in spans)
    run_end = first  # the contiguous run of named words the phrase starts with
    while any(s[0] - s[1] + 1 <= run_end + 1 and s[0] > run_end for s in spans):
        run_end = max(s[0] for s in spans if s[0] - s[1] + 1 <= run_end + 1)
    heads = [s for s in spans if s[0] == run_end]
    longest = max(s[1] for s in heads)
    return list(dict.fromkeys(c for end, size, c in heads if size == longest))


def _bcc_number(value):
    value = float(value)
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.2f}" if abs(value) >= 1 else f"{value:.4g}"


def _bcc_rank(question, frame, id_cols, group):
    q = _bcc_words(question)
    high, low = re.search(_BCC_MAX, q), re.search(_BCC_MIN, q)
    numeric = [c for c in frame.select_dtypes("number").columns
               if c != group and not _bcc_id_like(c, id_cols)]
    named = sorted((at, c) for c in numeric if (at := _bcc_named_at(q, c)) is not None)
    if named:
        measure = named[0][1]
    elif re.search(_BCC_SUM, q):
        amounts = [c for c in numeric if any(a in str(c).lower() for a in _BCC_AMOUNTS)]
        measure = amounts[0] if len(amounts) == 1 else (numeric[0] if len(numeric) == 1 else None)
    else:
        measure = None
    counted = re.search(_BCC_COUNT, q) or re.search(r" (most|fewest|more|fewer) \w+", q)
    if measure is None and not counted:
        return None, f"the question does not say which number to compare across `{group}`"
    how = "count" if measure is None else ("mean" if re.search(_BCC_MEAN, q) or not re.search(_BCC_SUM, q) else "sum")
    rows = frame.dropna(subset=[group] + ([measure] if measure else []))
    scores = rows.groupby(group).size() if measure is None else rows.groupby(group)[measure].agg(how)
    scores = scores.sort_values(ascending=bool(low and not high))
    if len(scores) < 2:
        return None, f"`{group}` has fewer than two values"
    best, runner = scores.index[0], scores.index[1]
    best = best.item() if hasattr(best, "item") else best
    what = "number of rows" if measure is None else f"{'total' if how == 'sum' else how} `{measure}`"
    text = (f"`{group}` {best} has the {'largest' if high else 'smallest'} {what}: {_bcc_number(scores.iloc[0])} "
            f"(next: {runner}, {_bcc_number(scores.iloc[1])}), over {len(rows):,} rows of clean_dataset")
    return best, text


def _bcc_rank_answer(question, frame, id_cols):
    q = _bcc_words(question)
    if not re.search(r" (which|what) ", q) or not (re.search(_BCC_MAX, q) or re.search(_BCC_MIN, q)):
        return None
    restricted = _bcc_restricted(q)
    if restricted:
        return None, restricted
    heads = _bcc_heads(question, frame)
    groups = [c for c in heads if not _bcc_id_like(c, id_cols)]
    entities = [c for c in heads if c not in groups and frame[c].dropna().is_unique]
    if not groups and len(entities) == 1:
        return _bcc_top_rows(question, frame, id_cols, entities[0])
    if not groups:
        return None, ("no column of the table is the group the question asks about (an ID column is "
                      "read only as one row each, when each of its values is one row)")
    readings = [(g, *_bcc_rank(question, frame, id_cols, g)) for g in groups]
    values = {str(v) for _, v, _ in readings if v is not None}
    if len(readings) == 1 or len(values) == 1:
        return readings[0][1:]
    both = "; ".join(f"`{g}`: {v if v is not None else t}" for g, v, t in readings)
    return None, f"the question has {len(readings)} readings, which answer differently ({both})"


_BCC_HOW_MANY = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def _bcc_top_rows(question, frame, id_cols, entity):
    # "which five countries have the highest life expectancy": each value of `entity` is one
    # row, so the answer is the rows with the highest (lowest) value of the column the question
    # names, as many as it asks for (one unless it says a number); a tie at the cut is stated
    q = _bcc_words(question)
    high = bool(re.search(_BCC_MAX, q))
    numeric = [c for c in frame.select_dtypes("number").columns if not _bcc_id_like(c, id_cols)]
    named = sorted((at, c) for c in numeric if (at := _bcc_named_at(q, c)) is not None)
    if not named:
        return None, f"the question does not say which number ranks the rows of `{entity}`"
    measure = named[0][1]
    said = re.search(r" (?:which|what|the) (?:top )?(\d+|" + "|".join(_BCC_HOW_MANY) + ") ", q)
    k = 1 if said is None else int(_BCC_HOW_MANY.get(said.group(1), said.group(1)))
    rows = frame.dropna(subset=[entity, measure]).sort_values(measure, ascending=not high, kind="stable")
    if not 0 < k < len(rows):
        return None, f"it asks for {k} of {len(rows)} rows that have `{measure}`"
    cut, after = rows[measure].iloc[k - 1], rows[measure].iloc[k]
    if cut == after:
        tied = ", ".join(str(e) for e in rows.loc[rows[measure] == cut, entity])
        return None, f"`{measure}` ties at the cut: {tied} all have {_bcc_number(cut)}"
    top = rows.head(k)
    names = [v.item() if hasattr(v, "item") else v for v in top[entity]]
    listed = ", ".join(f"{e} {_bcc_number(v)}" for e, v in zip(names, top[measure]))
    text = (f"the {'row' if k == 1 else f'{k} rows'} of `{entity}` with the {'highest' if high else 'lowest'} "
            f"`{measure}`: {listed} (next: {rows[entity].iloc[k]}, {_bcc_number(after)}), "
            f"over {len(rows):,} rows of clean_dataset")
    return (names[0] if k == 1 else names), text


def _bcc_correlation_answer(question, frame, id_cols):
    # "is A correlated with B", "the correlation between A and B": the two numeric columns the
    # question names, over the rows that have both; Pearson's r, with Spearman's rho as the other
    # reading unless the question names its coefficient
    q = _bcc_words(question)
    if not re.search(r" correlat\w* ", q):
        return None
    restricted = _bcc_restricted(q.replace(" between ", " "))
    if restricted:
        return None, restricted
    numeric, named = _bcc_named_numbers(q, frame, id_cols)
    ranks = re.search(r" (which|what) ", q) and (re.search(_BCC_MAX, q) or re.search(r" strong\w* ", q))
    if len(named) == 1 and ranks:
        return _bcc_most_correlated(q, frame, numeric, named[0])
    if len(named) != 2:
        return None, f"the question names {len(named)} numeric columns of the table ({', '.join(map(str, named)) or 'none'}), not two"
    a, b = sorted(named, key=lambda c: _bcc_named_at(q, c))
    rows = frame[[a, b]].dropna()
    if len(rows) < 3:
        return None, f"fewer than three rows have both `{a}` and `{b}`"
    pearson, spearman = (round(float(rows[a].corr(rows[b], method=m)), 4) for m in ("pearson", "spearman"))
    first, other = ((("Spearman's rho", spearman), ("Pearson's r", pearson)) if " spearman " in q
                    else (("Pearson's r", pearson), ("Spearman's rho", spearman)))
    text = f"{first[0]} of `{a}` and `{b}`: {first[1]:.4f}, over {len(rows):,} rows of clean_dataset that have both"
    readings = []
    if not re.search(r" (pearson|spearman) ", q):
        text += f" (the other reading, {other[0]}: {other[1]:.4f})"
        readings.append({"reading": other[0], "values": {"correlation": other[1]}})
    return first[1], text, {}, readings


def _bcc_most_correlated(q, frame, numeric, target):
    # "which variable is most correlated with price": the other numeric column with the largest
    # |r| (the most positive or the most negative when the question says which); answered when
    # Pearson's r and Spearman's rho pick the same column, else not answered, both stated
    others = [c for c in numeric if c != target]
    sign = 1 if re.search(r" positiv\w* ", q) else -1 if re.search(r" negativ\w* ", q) else 0
    picks = {}
    for method in ("pearson", "spearman"):
        r = frame[others].corrwith(frame[target], method=method).dropna()
        if len(r) < 2:
            return None, f"fewer than two other numeric columns correlate with `{target}`"
        picks[method] = (r, (sign * r if sign else r.abs()).sort_values(ascending=False).index)
    (pr, porder), (sr, sorder) = picks["pearson"], picks["spearman"]
    best, runner = porder[0], porder[1]
    which = "most positive" if sign > 0 else "most negative" if sign < 0 else "largest (either sign)"
    if best != sorder[0]:
        return None, (f"Pearson's r and Spearman's rho pick different columns for the {which} correlation "
                      f"with `{target}`: `{best}` (r {pr[best]:.4f}) and `{sorder[0]}` (rho {sr[sorder[0]]:.4f})")
    text = (f"`{best}`: the {which} correlation with `{target}`, Pearson's r {pr[best]:.4f} (Spearman's rho "
            f"{sr[best]:.4f}; next `{runner}`, r {pr[runner]:.4f}), each over the rows of clean_dataset that "
            "have both")
    return best, text


_BCC_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_BCC_SIDES = (("at least", ">="), ("at most", "<="), ("more than", ">"), ("greater than", ">"),
              ("higher than", ">"), ("less than", "<"), ("fewer than", "<"), ("lower than", "<"),
              ("above", ">"), ("over", ">"), ("exceeding", ">"), ("below", "<"), ("under", "<"))


def _bcc_count_answer(question, frame, id_cols):
    # "how many countries have a GDP above 1 trillion US dollars, and what share of all
    # countries is that": the rows whose one named numeric column passes the one threshold the
    # question states (a number with its scale word: thousand ... trillion; a percent only on
    # a column in percent), counted among the rows that have the column; the share too when asked
    q = _bcc_words(question)
    if not re.search(r" how many | number of ", q):
        return None
    said = " " + " ".join(str(question).lower().replace(",", "").split()) + " "
    sides = "|".join(re.escape(w) for w, _ in _BCC_SIDES)
    found = re.findall(rf" ({sides}) (?:\$|usd )?(-?\d+(?:\.\d+)?) ?(%|percent|thousand|million|billion|trillion)?", said)
    if not found:
        return None
    named = _bcc_named_numbers(q, frame, id_cols)[1]
    if len(found) != 1 or len(named) != 1:
        return None, (f"the question states {len(found)} thresholds and names {len(named)} numeric columns; "
                      "the offline analyst counts rows past one threshold of one column")
    (word, number, unit), column = found[0], named[0]
    values = frame[column].dropna()
    if unit in ("%", "percent") and values.max() <= 1:
        return None, f"the threshold is a percent and `{column}` runs from {values.min():.4g} to {values.max():.4g}"
    threshold = float(number) * _BCC_SCALES.get(unit, 1.0)
    op = dict(_BCC_SIDES)[word]
    passed = {">": values > threshold, ">=": values >= threshold, "<": values < threshold, "<=": values <= threshold}[op]
    count = int(passed.sum())
    text = (f"{count:,} of the {len(values):,} rows of clean_dataset that have `{column}` have `{column}` {op} "
            f"{_bcc_number(threshold)}")
    if not re.search(r" (share|percentage|proportion|fraction|percent) ", q):
        return count, text, {}, []
    # of every row ("of all countries") or of the rows that have the column: the other one is a
    # reading when some rows lack it
    of_all, of_known = round(count / len(frame), 4), round(count / len(values), 4)
    shares = {f"the share of all {len(frame):,} rows, some without `{column}`": of_all,
              f"the share of the {len(values):,} rows that have `{column}`": of_known}
    first = of_all if " all " in q else of_known
    text += f"; a share of {first:.2%}"
    readings = [{"reading": r, "values": {"count": count, "share": v}} for r, v in shares.items() if v != first]
    if readings:
        text += f" (the other reading, {readings[0]['reading']}: {readings[0]['values']['share']:.2%})"
    return count, text, {"count": count, "share": first}, readings


def _bcc_contrast_answer(question, frame, id_cols):
    # "which measurement differs most between malignant and benign samples": the two groups are
    # two values of one non-numeric column, both named after "between"; the answer is the
    # numeric column whose means are the most pooled standard deviations apart (Cohen's d)
    q = _bcc_words(question)
    if not re.search(r" (which|what) ", q) or not re.search(r" (differ\w*|separat\w*|distinguish\w*) ", q):
        return None
    if " between " not in q or not re.search(_BCC_MAX, q):
        return None
    after = " " + q.split(" between ", 1)[1]
    found = []
    for c in frame.columns:
        if pd.api.types.is_numeric_dtype(frame[c]) or _bcc_id_like(c, id_cols):
            continue
        values = frame[c].dropna().unique()
        if len(values) > 50:
            continue
        named = [v for v in values if len(_bcc_words(v).strip()) > 1 and _bcc_words(v) in after]
        if len(named) == 2:  # in the question's order
            found.append((c, sorted(named, key=lambda v: after.index(_bcc_words(v)))))
    if len(found) != 1:
        return None
    group, (first, second) = found[0]
    a, b = frame[frame[group] == first], frame[frame[group] == second]
    effects = {}
    for c in frame.select_dtypes("number").columns:
        if _bcc_id_like(c, id_cols):
            continue
        x, y = a[c].dropna(), b[c].dropna()
        if len(x) < 2 or len(y) < 2:
            continue
        pooled = (((len(x) - 1) * x.var() + (len(y) - 1) * y.var()) / (len(x) + len(y) - 2)) ** 0.5
        if pooled > 0:
            gap = abs(x.mean() - y.mean())
            effects[c] = (gap / pooled, gap, x.mean(), y.mean())
    if len(effects) < 2:
        return None, f"fewer than two numeric columns to compare between {first} and {second}"
    ranked = sorted(effects, key=lambda c: -effects[c][0])
    best, runner = ranked[0], ranked[1]
    d, _, mean_a, mean_b = effects[best]
    # the other reading, where the columns share a scale (their ranges within a factor of 2):
    # the largest difference of means in their own units
    spans = [float(frame[c].max() - frame[c].min()) for c in effects]
    same_scale = min(spans) > 0 and max(spans) <= 2 * min(spans)
    raw = max(effects, key=lambda c: effects[c][1]) if same_scale else best
    if raw != best:
        return None, (f"two readings answer differently: `{best}` differs most in pooled standard deviations "
                      f"({d:.2f}), `{raw}` in its own units ({_bcc_number(effects[raw][1])})")
    text = (f"`{best}`: mean {_bcc_number(mean_a)} for {first} and {_bcc_number(mean_b)} for {second} "
            f"(`{group}`), {d:.2f} pooled standard deviations apart (next: `{runner}`, "
            f"{effects[runner][0]:.2f})" + ("; the largest difference in the columns' shared units too"
            if same_scale else "") + f", over {len(a) + len(b):,} rows of clean_dataset")
    return best, text


