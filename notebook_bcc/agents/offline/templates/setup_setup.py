
import csv
import io
import json
import os
import re
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

warnings.simplefilter(__WARNINGS__)
pd.set_option("display.width", 120)
pd.set_option("display.max_columns", 30)
os.makedirs("outputs", exist_ok=True)
