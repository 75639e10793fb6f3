"""What the stand-in evaluator needs: an .npy reader without NumPy and each site's held-out share."""

import ast
import struct

from evalsizes import HELD_OUT_PENALTY, SIZES


def read_npy(path):
    with open(path, "rb") as handle:
        data = handle.read()
    length = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10 : 10 + length].decode("latin1"))
    count = header["shape"][0]
    return list(struct.unpack(f"<{count}d", data[10 + length : 10 + length + 8 * count]))


def site_size(site):
    return SIZES.get(site, 100)


def held_out_value(weights, site):
    """The model's value on the site's held-out share: a little below the model's own worth, per site."""
    index = int(site.rsplit("-", 1)[-1]) if site.rsplit("-", 1)[-1].isdigit() else 1
    return round(weights[0] - HELD_OUT_PENALTY * index, 6)
