"""Robust feature scaling (median and interquartile range per column) with a merge sort of the column values."""


def merge(a, b):
    if not a:
        return b
    if not b:
        return a
    if a[0] <= b[0]:
        return [a[0]] + merge(a[1:], b)
    return [b[0]] + merge(a, b[1:])


def merge_sort(values):
    if len(values) <= 1:
        return list(values)
    mid = len(values) // 2
    return merge(merge_sort(values[:mid]), merge_sort(values[mid:]))


def quantile(sorted_values, q):
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def robust_scale(columns):
    """Scale each column (a list of floats) to (value - median) / IQR."""
    scaled = []
    for column in columns:
        ordered = merge_sort(column)
        median = quantile(ordered, 0.5)
        iqr = quantile(ordered, 0.75) - quantile(ordered, 0.25) or 1.0
        scaled.append([(v - median) / iqr for v in column])
    return scaled
