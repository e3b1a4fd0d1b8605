
# Answer what the table answers directly: "which <group> has the most / least <measure>",
# computed from clean_dataset; any other question is listed as not answered, with the reason.
_BCC_MAX = r"\b(most|largest|highest|biggest|greatest|top|maximum|more)\b"
_BCC_MIN = r"\b(least|lowest|smallest|fewest|minimum|less)\b"
_BCC_SUM = r"\b(total|sum|spends?|spent|spending|revenue|sales|sells|sold|pays?|paid|earns?|earned|overall|altogether)\b"
_BCC_MEAN = r"\b(average|mean|typical|typically|per)\b"
_BCC_COUNT = r"\b(common|frequent|often|many|count|number|records|rows)\b"
_BCC_AMOUNTS = ("amount", "total", "spend", "revenue", "sales", "price", "cost", "value", "paid", "payment")


def _bcc_words(text):
    return " " + re.sub(r"[^a-z0-9]+", " ", str(text).lower()).strip() + " "


def _bcc_named_at(question, column):
    # where the question names the column (its words, singular or plural), or None
    name = _bcc_words(column).strip()
    if len(name) < 2:
        return None
    # "customer_id" is the customer, "flipper_length_mm" the flipper length
    bare = re.sub(r" (id|name|code|mm|cm|m|km|g|kg|lb|lbs|usd|eur|pct|percent)$", "", name)
    for form in (name, name + "s", name + "es", name[:-1] if name.endswith("s") else name, bare):
        at = question.find(" " + form + " ")
        if at >= 0:
            return at
    return None


def _bcc_number(value):
    value = float(value)
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.2f}" if abs(value) >= 1 else f"{value:.4g}"


def _bcc_rank_answer(question, frame, id_cols):
    q = _bcc_words(question)
    which = re.search(r" (which|what) ", q)
    high, low = re.search(_BCC_MAX, q), re.search(_BCC_MIN, q)
    if not which or not (high or low):
        return None, "the offline analyst answers only 'which ... most / least' questions from the table"
    window = q[which.end() - 1 :]
    window = " " + " ".join(window.split()[:3]) + " "
    groups = [c for c in frame.columns if not pd.api.types.is_float_dtype(frame[c]) and _bcc_named_at(window, c) is not None]
    if not groups:
        return None, "no column of the table is the group the question asks about"
    group = groups[0]
    numeric = [c for c in frame.select_dtypes("number").columns
               if c != group and c not in id_cols and not re.search(r"(^| )(id|key|code)( |$)", _bcc_words(c).strip())]
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


_bcc_ids = set((globals().get("integrity_report") or {}).get("id_like_columns", []))
final_answers = {}
for _bcc_q in __QUESTIONS__:
    try:
        _bcc_value, _bcc_text = _bcc_rank_answer(_bcc_q, clean_dataset, _bcc_ids)
    except Exception as exc:
        _bcc_value, _bcc_text = None, f"the computation failed ({type(exc).__name__}: {exc})"
    if _bcc_value is None:
        _bcc_text = f"not answered: {_bcc_text}"
    final_answers[_bcc_q] = {"value": _bcc_value, "text": _bcc_text}
    print(f"- {_bcc_q} -> {_bcc_value if _bcc_value is not None else 'not answered'}: {_bcc_text}")
_bcc_n = sum(a["value"] is not None for a in final_answers.values())
_bcc_result(f"{_bcc_count(len(final_answers), 'question')} listed in final_answers; {_bcc_n} answered from the data.")
