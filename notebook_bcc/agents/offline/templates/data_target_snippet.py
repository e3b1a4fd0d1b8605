
TARGET = __TARGET__
TASK = __TASK__
SEED = __SEED__
if TARGET is not None and TARGET not in FRAME.columns:
    _key = re.sub(r"[^0-9a-z]", "", str(TARGET).lower())
    TARGET = next((c for c in FRAME.columns if re.sub(r"[^0-9a-z]", "", str(c).lower()) == _key), TARGET)
