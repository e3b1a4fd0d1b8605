"""Cell templates of the offline analyst: Python that runs in the kernel (see recipes.py)."""
