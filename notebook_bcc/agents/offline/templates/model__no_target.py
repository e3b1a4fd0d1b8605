
feature_columns, model_comparison, best_model_name = [], {}, None
final_model, final_metrics, stability_report = None, None, None
print("Result: no target column was given, so modelling is skipped (EDA-only problem).")
