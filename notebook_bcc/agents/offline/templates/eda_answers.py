# The questions a fitted model answers; then each question of the problem, in turn, into
# final_answers.
def _bcc_drivers_answer(question, target):
    q = _bcc_words(question)
    if not re.search(_BCC_DRIVERS, q):
        return None
    asks_target = target is not None and _bcc_named_at(q, target) is not None
    if not (asks_target or re.search(r" (factors|features|variables|measurements|columns|predictors) ", q)):
        return None
    importance = globals().get("feature_importance")
    if importance is None or not len(importance):
        return None, "no fitted model's permutation importance is in the kernel"
    best = float(importance["importance_mean"].max())
    top = importance[importance["importance_mean"] > max(0.0, 0.05 * best)].head(3)
    if not len(top):
        return None, "no feature's permutation importance is above zero: nothing the model uses determines it"
    scores = ", ".join(f"{f} {v:.3f}" for f, v in top["importance_mean"].items())
    text = (f"permutation importance of {final_metrics['model']} on the hold-out rows "
            f"({final_metrics['metric']} lost when a feature is shuffled): {scores}")
    return [str(f) for f in top.index], text


def _bcc_metrics_answer(question):
    q = _bcc_words(question)
    metrics = globals().get("final_metrics")
    if not isinstance(metrics, dict) or not re.search(_BCC_METRIC, q):
        return None
    if re.search(_BCC_OWN_PROCEDURE, question, re.IGNORECASE):
        return None, "the question fixes its own procedure (a split, a seed or a model), which the offline analyst does not follow"
    values = {k: metrics[k] for k in ("cv_mean", "cv_std", "test_score", "baseline_score") if k in metrics}
    text = (f"{metrics['model']}: {metrics['metric']} {_bcc_fmt(metrics['test_score'])} on the held-out rows, "
            f"{_bcc_fmt(metrics['cv_mean'])} ± {_bcc_fmt(metrics['cv_std'])} in cross-validation, against "
            f"{_bcc_fmt(metrics['baseline_score'])} for the baseline")
    stable = globals().get("stability_report") or {}
    if stable.get("bootstrap_p05") is not None:
        values.update({k: stable[k] for k in ("bootstrap_p05", "bootstrap_p95", "cv_seed_spread")})
        text += (f"; over {stable['bootstrap_resamples']} bootstrap resamples of the held-out rows it lies "
                 f"between {_bcc_fmt(stable['bootstrap_p05'])} and {_bcc_fmt(stable['bootstrap_p95'])} "
                 f"(5th to 95th percentile), and the CV mean moves by {_bcc_fmt(stable['cv_seed_spread'])} across seeds")
    # cv_std is numpy's .std() (ddof=0), as the results contract says; the sample standard
    # deviation of the same fold scores is the other reading a reader may expect
    folds = (globals().get("_bcc_fold_scores") or {}).get(metrics.get("model"))
    readings = []
    if folds is not None and len(folds) > 1 and "cv_std" in values:
        readings.append({"reading": "cv_std as the sample standard deviation of the fold scores (ddof=1); "
                                    "the headline's is the population one (numpy .std(), ddof=0)",
                         "values": {"cv_std": round(float(folds.std(ddof=1)), 4)}})
    # the bootstrap percentiles interpolate between resample scores (numpy's default,
    # 'linear'); the nearest resample score is the other reading
    boot = globals().get("_bcc_bootstrap_scores")
    if boot is not None and len(boot) > 1 and "bootstrap_p05" in values:
        readings.append({"reading": "bootstrap_p05 and bootstrap_p95 as the nearest resample scores (numpy "
                                    "percentile, method='nearest'); the headline's interpolate between "
                                    "them (method='linear', numpy's default)",
                         "values": {k: round(float(np.percentile(boot, q, method="nearest")), 4)
                                    for k, q in (("bootstrap_p05", 5), ("bootstrap_p95", 95))}})
    return metrics["test_score"], text, values, readings


def _bcc_answer(question, frame, id_cols):
    # (value, text, values) of the first reading that answers, else not answered with the
    # first reason ("which factors matter most" is no ranking of groups, but it is answered)
    why = None
    for found in (_bcc_contrast_answer(question, frame, id_cols),
                  _bcc_correlation_answer(question, frame, id_cols),
                  _bcc_count_answer(question, frame, id_cols),
                  _bcc_rank_answer(question, frame, id_cols),
                  _bcc_drivers_answer(question, globals().get("TARGET")),
                  _bcc_metrics_answer(question)):
        if found is not None and found[0] is not None:
            return (*found, {}, [])[:4]
        why = why or (found[1] if found is not None else None)
    return None, why or ("the offline analyst answers only 'which ... most / least', 'which ... differs most "
                         "between <a> and <b>', the correlation of two columns, 'which column is most "
                         "correlated with <a>', 'how many ... above <number>', 'what determines <target>' "
                         "and score questions"), {}, []


_bcc_ids = set((globals().get("integrity_report") or {}).get("id_like_columns", []))
final_answers = {}
for _bcc_q, _bcc_names in __QUESTIONS__:
    try:
        _bcc_value, _bcc_text, _bcc_values, _bcc_readings = _bcc_answer(_bcc_q, clean_dataset, _bcc_ids)
    except Exception as exc:
        _bcc_value, _bcc_text, _bcc_values, _bcc_readings = None, f"the computation failed ({type(exc).__name__}: {exc})", {}, []
    if _bcc_value is not None and len(_bcc_names) == 1 and not _bcc_values:
        _bcc_values = {_bcc_names[0]: _bcc_value}  # the one value the question names
    _bcc_lacking = [n for n in _bcc_names if n not in _bcc_values]
    if _bcc_value is not None and _bcc_lacking:  # never a value in place of another
        _bcc_value, _bcc_values = None, {}
        _bcc_text = f"the question names values the offline analyst does not compute ({', '.join(_bcc_lacking)})"
    if _bcc_value is None:
        _bcc_text = f"not answered: {_bcc_text}"
    _bcc_values = {**{n: None for n in _bcc_names}, **_bcc_values}
    final_answers[_bcc_q] = {"value": _bcc_value, "text": _bcc_text, "values": _bcc_values}
    if _bcc_readings and _bcc_value is not None:
        final_answers[_bcc_q]["readings"] = _bcc_readings
    print(f"- {_bcc_q} -> {_bcc_value if _bcc_value is not None else 'not answered'}: {_bcc_text}")
_bcc_n = sum(a["value"] is not None for a in final_answers.values())
_bcc_result(f"{_bcc_count(len(final_answers), 'question')} listed in final_answers; {_bcc_n} answered from the data.")
